"""Chapter 07's settings: every profile validates; bad values stop before any compute."""

import pytest

from lalr_core.chapters import ch07_signal_propagation as ch
from lalr_core.chapters import chapter_settings


@pytest.mark.parametrize("bad, name", [
    ({"phases": (1.76, 1.0, 4.0)}, "phases"), ({"phases": (1.0, 4.0)}, "phases"),
    ({"sigma_b2": -0.1}, "sigma_b2"), ({"e1_grid": (3, 80)}, "e1_grid"),
    ({"e7_dim": 30, "e7_heads": 4}, "e7_dim"), ({"e8_ks": (16, 1024)}, "e8_ks"),
    ({"e2_width": 0}, "e2_width"), ({"e3_depths": (5, -1)}, "e3_depths"),
    ({"e3_seeds": 0}, "e3_seeds"),
])
def test_bad_settings_stop_before_any_compute_naming_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        chapter_settings("07", "smoke", bad)


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_every_profile_validates_and_reads_only_the_digits(profile):
    s = ch.CHAPTER.settings(profile)
    assert s.datasets == ("digits",) and s.phases[0] < 1.76 < s.phases[2]
    with pytest.raises(ValueError, match="no sections"):
        ch.CHAPTER.all_runs(s)
