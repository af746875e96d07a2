"""Chapter 04's per-seed quantities (`lalr_core.chapters.ch04_directedness`): each against a
hand-computed value on a constructed trajectory, and the bookkeeping of seeds and divergence."""

import math

import numpy as np
import pytest

from lalr_core.chapters import ch04_directedness as ch4
from lalr_core.chapters import chapter_settings
from lalr_core.core.results.evidence import per_seed
from lalr_core.methods import trajectory as tj


def run(diverged=False, step=None, **traj):
    return {"diverged": diverged, "diverged_step": step, "callbacks": {"trajectory": traj}}


# ------------------------------------------------------------------ seeds and divergence
def test_by_optimiser_groups_the_seeds_in_order():
    s = chapter_settings("04", "smoke", {"seeds": 3})
    keys = ch4.run_keys(s)
    assert keys == [(n, k) for k in range(3) for n in ("sgdm", "adam")]
    runs = ch4.by_optimiser(s, [{"key": key} for key in keys])
    assert [r["key"] for r in runs["sgdm"]] == [("sgdm", 0), ("sgdm", 1), ("sgdm", 2)]
    assert [r["key"] for r in runs["adam"]] == [("adam", 0), ("adam", 1), ("adam", 2)]
    with pytest.raises(ValueError):
        ch4.by_optimiser(s, [{}] * 5)


def test_seed_notes_na_only_when_every_seed_diverged():
    runs = {"sgdm": [run(True, 3), run(True, 2)], "adam": [run(), run(True, 40), run()]}
    why_na, left_out = ch4.seed_notes(runs)
    assert why_na == {"sgdm": "the SGDM run diverged at step 3 (seed 0), at step 2 (seed 1)"}
    assert left_out == {"adam": "left out of the interval: the ADAM run diverged at step 40 "
                                "(seed 1)"}
    assert ch4.seed_notes({"sgdm": [run()], "adam": [run()]}) == ({}, {})


def test_per_seed_is_nan_where_a_run_diverged():
    vals = per_seed([run(x=1.0), run(True, 5, x=9.0), run(x=3.0)],
                    lambda r: r["callbacks"]["trajectory"]["x"], nan_if_diverged=True)
    np.testing.assert_array_equal(np.isnan(vals), [False, True, False])
    assert vals[0] == 1.0 and vals[2] == 3.0


# ------------------------------------------------------------------------- one run's numbers
def test_early_decay_margin_is_the_smallest_of_its_three_gaps():
    psi = np.full(40, 0.3)
    psi[ch4.EARLY_STEP - 1] = 0.95   # psi(5)
    psi[9] = 0.6                     # psi(N), N = 10
    psi[29] = 0.4                    # psi_N just before the drop after step 30
    # gaps: 0.95 - 0.8 = 0.15, 0.95 - 0.6 = 0.35, 0.6 - 0.4 = 0.2
    assert ch4.early_decay_margin(psi, drop=30, window=10) == pytest.approx(0.15)
    psi[29] = 0.7                    # no decay from N to the drop: negative
    assert ch4.early_decay_margin(psi, drop=30, window=10) == pytest.approx(-0.1)
    with pytest.raises(ValueError, match="window < drop"):
        ch4.early_decay_margin(psi, drop=10, window=10)
    with pytest.raises(ValueError):
        ch4.early_decay_margin(psi, drop=30, window=3)


def test_spike_gains_and_rises_after_each_drop():
    psi = np.full(60, 0.2)
    psi[20:25] = 0.3      # after the drop at step 20: +50 %, +0.1
    psi[40:45] = 0.25     # after the drop at step 40: +25 %, +0.05
    np.testing.assert_allclose(ch4.spike_gains(psi, [20, 40], 10), [0.5, 0.25])
    np.testing.assert_allclose(ch4.spike_rises(psi, [20, 40], 10), [0.1, 0.05])


def test_min_rw_ratio_of_a_scaled_baseline():
    N = 16
    t = np.arange(1, 101)
    psi = 2.5 * tj.rw_expected_psi_window(t, N)
    psi[50] *= 0.8        # the smallest ratio, 2.0
    psi[5] = 0.0          # before the window fills: not read
    assert ch4.min_rw_ratio(psi, N) == pytest.approx(2.0)


def test_phase_means_split_at_the_window_and_the_drops():
    psi = np.arange(1.0, 13.0)            # psi_N(t) = t, T = 12
    # phases: steps 3..6, 7..9, 10..12 (window 2, drops after 6 and 9)
    np.testing.assert_allclose(ch4.phase_means(psi, [6, 9], 2), [4.5, 8.0, 11.0])
    with pytest.raises(ValueError, match="window < drops"):
        ch4.phase_means(psi, [6, 9], 6)


def test_layer_spike_share_counts_weight_tensors_only():
    T = 60
    flat, spiky = np.full(T, 0.2), np.full(T, 0.2)
    spiky[20:25] = 0.3
    spiky[40:45] = 0.3
    half = np.full(T, 0.2)
    half[20:25] = 0.3     # spikes after the first drop only
    traj = {"layer_names": ["a.weight", "a.bias", "b.weight", "c.weight"],
            "layer_psi_window": np.stack([spiky, spiky, half, flat], axis=1)}
    share, n = ch4.layer_spike_share(traj, [20, 40], 10)
    assert (share, n) == (pytest.approx(1 / 3), 3)
    with pytest.raises(ValueError, match="per-layer"):
        ch4.layer_spike_share({"layer_names": ["a.bias"], "layer_psi_window": flat[:, None]},
                              [20, 40], 10)


# ------------------------------------------------------------------------------------ fits
def test_scaled_sse_ignores_scale():
    curve = np.array([1.0, 2.0, 3.0])
    assert ch4.scaled_sse(curve, 5 * curve) == pytest.approx(0.0)
    # model [1, 1, 1]: best scale 2, residuals -1, 0, 1
    assert ch4.scaled_sse(curve, np.ones(3)) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        ch4.scaled_sse(curve, np.zeros(3))


def test_shape_log_ratio_compares_the_two_shape_errors():
    dt = np.array([1.0, 2.0, 3.0])
    fits = {"rw0": {"dt_fit": np.ones(3)},                     # error 2
            "ar": {"dt_fit": np.array([1.0, 1.0, 2.0])}}       # error from its best scale
    ar_err = ch4.scaled_sse(dt, fits["ar"]["dt_fit"])
    assert ch4.shape_log_ratio(dt, fits) == pytest.approx(math.log(2.0 / ar_err))
    fits["rw0"]["dt_fit"] = 0.5 * dt + np.array([0, 1e-3, 0])  # nearly the exact shape
    assert ch4.shape_log_ratio(dt, fits) < 0


def test_fit_run_recovers_a_random_walk():
    n, sigma = 200, 0.01
    m = tj.path_metrics(tj.simulate_rw(n, 300, sigma=sigma, seed=0))
    f = ch4.fit_run(m["ds"], m["dt"], n)
    assert set(f) == {"n", "gamma", "rw", "ar", "rw0", "ar0"} and 0 < f["gamma"] < 1
    # one walk: D_t is off its mean by ~1/sqrt(2n) = 5% (Lemma A.15), D_s by much less
    assert f["rw"]["sigma"] == pytest.approx(sigma, rel=0.05)
    assert f["rw0"]["objective"] >= f["ar0"]["objective"] - 1e-9 * f["rw0"]["objective"]


# -------------------------------------------------------------------- ours beside the source
def test_versus_source_reports_the_difference_and_judges_only_when_asked():
    values = [0.20, 0.22, 0.18, np.nan]   # a diverged seed is left out
    text = ch4.versus_source(values, 0.15, judge=False)
    assert text == "ours 0.200 (3 seeds), source 0.15: difference +0.050"
    judged = ch4.versus_source(values, 0.15, judge=True)
    assert judged.startswith(text) and "outside our 95% interval" in judged
    assert "inside" in ch4.versus_source(values, 0.21, judge=True)
    assert ch4.versus_source([np.nan], 0.15, judge=True) == "no finite value (source 0.15)"


def test_drops_are_the_steps_at_the_milestones():
    s = chapter_settings("04", "quick")
    assert s.steps_per_epoch == 16 and s.drops() == [96, 144]
    paper = chapter_settings("04", "paper")
    assert paper.steps_per_epoch == 40 and paper.drops() == [4000, 6000]  # 40000 / 1024, ceil
