"""Chapter 05's settings, run plan and per-run numbers (closed forms on constructed results)."""

import math

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch05_quasi_newton as qn
from lalr_core.chapters import chapter_settings
from lalr_core.core.config import OPTIMIZERS


@pytest.mark.parametrize("bad, name", [
    ({"dataset": "digitz"}, "dataset"), ({"model": "resnet9000"}, "model"),
    ({"seeds": 1}, "seeds"), ({"table_lrs": (0.01, 0.1)}, "table_lrs"),
    ({"table_lrs": (0.1,)}, "table_lrs"), ({"gamma": 1.0}, "gamma"),
    ({"known_size": 2}, "known_size"), ({"cumulant_samples": 10}, "cumulant_samples"),
    ({"rolling_samples": (100,)}, "rolling_samples"), ({"fig46_wd": -1.0}, "fig46_wd"),
    ({"hessian_examples": 0}, "hessian_examples"), ({"fig46_lr": 0}, "fig46_lr"),
])
def test_bad_settings_stop_before_any_compute_naming_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        chapter_settings("05", "smoke", bad)


def test_every_profile_plans_paired_runs():
    for profile in ("smoke", "quick", "paper"):
        s = qn.CHAPTER.settings(profile)
        f46 = qn.fig46_runs(s)
        assert len(f46) == 2 * s.seeds
        for seed in range(s.seeds):                     # pairs differ in the optimiser only
            a, b = f46[("sgd", seed)], f46[(qn.QN, seed)]
            assert (a.seed, a.lr, a.wd, a.momentum, b.momentum) == (seed, s.fig46_lr, s.fig46_wd, 0.0, 0.0)
            assert b.optimizer_params == (("gamma", s.gamma),) and a.optimizer_params == ()
        tab = qn.table_runs(s)
        assert len(tab) == 2 * len(s.table_lrs) * s.seeds
        assert all(c.momentum == (s.table_momentum if arm == "sgdm" else 0.0) and c.wd == 0.0
                   for (arm, lr, seed), c in tab.items())
        cfgs, cbs = qn.CHAPTER.all_runs(s)
        assert len(cfgs) == 4 * s.seeds + len(tab) + 1
        assert cbs[cfgs.index(qn.hessian_run(s))] == {"weights": {}}
    assert qn.QN in OPTIMIZERS.names()


def _result(losses, acc=0.9, diverged=False):
    hist = pd.DataFrame({"test_loss": losses, "test_acc": [acc] * len(losses)})
    return {"history": hist, "diverged": diverged,
            "final": {"test_loss": losses[-1], "test_acc": acc}}


def test_per_run_numbers():
    r = _result([2.0, 1.0, 1.5, 0.5])
    assert qn.final_loss(r) == 0.5 and qn.final_accuracy(r) == pytest.approx(90.0)
    assert qn.volatility(r) == pytest.approx(np.std([-1.0, 0.5, -1.0], ddof=1))
    assert not qn.diverged(r)
    assert qn.diverged(_result([2.0, 2.5]))                      # above ln 10? no: 2.5 > ln 10
    assert qn.diverged(_result([1.0], diverged=True)) and qn.final_accuracy(
        _result([1.0], diverged=True)) == 10.0
    assert math.isnan(qn.final_loss(_result([1.0], diverged=True)))
    assert qn.per_seed([r, r], qn.final_loss).tolist() == [0.5, 0.5]
