"""Chapter 01's verdicts and mechanics on constructed data (lalr_core.chapters.ch01_lalr).

Oracles: scipy's t quantile for the paired interval, Friedman's chi^2 (scipy) for Kendall's W,
hand-counted tercile falls, frozen layers and App. A's zip on a two-layer model, explicit
result dicts for forgetting and the train - validation gap; verdicts that PASS, FAIL and are
INCONCLUSIVE by construction.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from torch import nn

from lalr_core.chapters import ch01_lalr as cl
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.results.evidence import Evidence
from lalr_core.methods.layer_lr.lalr import LALR

pytestmark = pytest.mark.usefixtures("one_thread")


def _res(val_acc, *, curve=None, splits=None, diverged=False, test_acc=0.5):
    """A result dict as `train` returns it, with the fields the verdicts read."""
    curve = [val_acc] if curve is None else curve
    hist = pd.DataFrame({"epoch": np.arange(1, len(curve) + 1), "val_acc": curve})
    probe = None if splits is None else {"history": pd.DataFrame(
        [(e, sp, loss, acc) for sp, rows in splits.items() for e, (loss, acc) in enumerate(rows)],
        columns=["epoch", "split", "loss", "acc"]), "correct": {}}
    return {"final": {"val_acc": val_acc, "test_acc": test_acc}, "history": hist,
            "diverged": diverged, "callbacks": {"text_splits": probe}}


def _ev(low, high, threshold=0.0, side="greater"):
    return Evidence((low + high) / 2, low, high, threshold, side, 5)


# ----------------------------------------------------------------------------- comparisons
def test_paired_is_the_t_interval_of_the_per_seed_differences():
    a = [0.90, 0.85, 0.88, 0.91, 0.80]
    b = [0.86, 0.82, 0.85, 0.88, 0.77]
    ev = cl.paired([_res(x) for x in a], [_res(x) for x in b])
    d = 100 * (np.array(a) - np.array(b))
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert (ev.estimate, ev.low, ev.high) == pytest.approx((d.mean(), d.mean() - half, d.mean() + half))
    assert ev.verdict == "PASS" and ev.n == 5
    # a diverged run counts 0 accuracy
    assert cl.final(_res(0.9, diverged=True)) == 0.0
    with pytest.raises(ValueError, match="same seeds"):
        cl.paired([_res(0.9)], [_res(0.9), _res(0.8)])


def test_paired_verdicts_fail_and_inconclusive_on_constructed_runs():
    lower = cl.paired([_res(x) for x in (0.50, 0.52, 0.49)], [_res(x) for x in (0.90, 0.91, 0.92)])
    assert lower.verdict == "FAIL" and lower.high < 0
    noisy = cl.paired([_res(x) for x in (0.60, 0.95, 0.70)], [_res(x) for x in (0.80, 0.70, 0.65)])
    assert noisy.verdict == "INCONCLUSIVE" and noisy.low < 0 < noisy.high
    # non-inferiority (L-C17): 0.3 points below, claim > -1 point: PASS
    near = cl.paired([_res(x) for x in (0.897, 0.797, 0.697)], [_res(x) for x in (0.90, 0.80, 0.70)],
                     threshold=-1)
    assert near.verdict == "PASS"


def test_paired_curve_judges_every_epoch():
    a = [_res(0.8, curve=[0.5, 0.7, 0.8]), _res(0.8, curve=[0.6, 0.7, 0.8]), _res(0.8, curve=[0.5, 0.6, 0.8])]
    b = [_res(0.8, curve=[0.5, 0.8, 0.8]), _res(0.8, curve=[0.6, 0.85, 0.8]), _res(0.8, curve=[0.5, 0.75, 0.8])]
    ev = cl.paired_curve(a, b, threshold=-1)
    assert sorted(ev) == [1, 2, 3]
    assert ev[2].verdict == "FAIL" and ev[2].estimate == pytest.approx(-100 * 0.4 / 3)


def test_every_and_at_least():
    ok, bad, open_ = _ev(1, 2), _ev(-2, -1), _ev(-1, 1)
    assert cl.every({"a": ok, "b": ok}).verdict == "PASS"
    assert cl.every({"a": ok, "b": open_}).verdict == "INCONCLUSIVE"
    fail = cl.every({"a": ok, "b": open_, "c": bad})
    assert fail.verdict == "FAIL" and "deciding part: c" in fail.method
    assert cl.at_least({"a": ok, "b": ok, "c": bad}, 2).verdict == "PASS"
    assert cl.at_least({"a": ok, "b": open_, "c": bad}, 2).verdict == "INCONCLUSIVE"
    assert cl.at_least({"a": open_, "b": bad, "c": bad}, 2).verdict == "FAIL"
    with pytest.raises(ValueError):
        cl.at_least({"a": ok}, 2)
    assert cl.requirement(ok, True) is ok and cl.requirement(ok, False) is False


def test_versus_best_other_restates_rank_first_and_beat_the_runner_up():
    vals = {"svd>ce>cs": [0.90, 0.91, 0.92, 0.90], "cs>ce>svd": [0.80, 0.82, 0.81, 0.80],
            "svd-only": [0.70, 0.70, 0.71, 0.72]}
    ev, other = cl.versus_best_other(vals, "svd>ce>cs")
    assert other == "cs>ce>svd" and ev.verdict == "PASS"              # first, beats runner-up
    vals["ce-only"] = [0.95, 0.96, 0.95, 0.97]
    ev, other = cl.versus_best_other(vals, "svd>ce>cs")
    assert other == "ce-only" and ev.verdict == "FAIL"                # another ranks first
    vals["ce-only"] = [0.95, 0.85, 0.97, 0.84]
    ev, other = cl.versus_best_other(vals, "svd>ce>cs")
    assert other == "ce-only" and ev.verdict == "INCONCLUSIVE"
    rk = cl.ranking(vals)
    assert list(rk["arm"][:2]) == ["svd>ce>cs", "ce-only"] and list(rk["rank"]) == [1, 2, 3, 4]


def test_kendall_w_equals_friedmans_chi2_over_m_n_minus_1():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=(5, 9)) + np.arange(9) * 0.5, 1)  # ties from rounding
    scores[0, :2] = scores[0, 3]                                          # a three-way tie
    m, n = scores.shape
    chi2 = stats.friedmanchisquare(*scores.T).statistic
    assert cl.kendall_w(scores) == pytest.approx(chi2 / (m * (n - 1)))
    assert cl.kendall_w(np.tile(np.arange(6.0), (4, 1))) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        cl.kendall_w(np.ones((1, 5)))


# ----------------------------------------------------------------------------- per-run numbers
def test_forgetting_gap_and_split_accuracy_read_the_probe():
    r = _res(0.80, splits={"mlm": [(2.0, 0.4), (2.1, 0.4), (2.35, 0.3)],
                           "train": [(0.7, 0.5), (0.3, 0.9), (0.1, 0.97)]})
    assert cl.forgetting(r) == pytest.approx(0.35)
    assert cl.generalisation_gap(r) == pytest.approx(0.17)
    assert cl.split_accuracy(r, "train") == pytest.approx(0.97)
    assert list(cl.split_history(r, "mlm")["epoch"]) == [0, 1, 2]
    with pytest.raises(ValueError, match="test_noise"):
        cl.split_accuracy(r, "test_noise")
    assert math.isnan(cl.forgetting({**r, "diverged": True}))


def _lalr_table():
    """3 layers, epochs 0-3 (+ the unused row 4): phases svd, ce, cs, svd."""
    rows = []
    raw = {"svd": [3.0, 1.0, 2.0], "ce": [1.0, 2.0, 3.0], "cs": [0.1, 0.3, 0.2]}
    scale = {0: [0.0, 1.0, 0.5], 1: [1.0, 0.5, 0.0], 2: [0.0, 1.0, 0.5], 3: [0.2, 0.9, 0.0], 4: [1, 1, 1]}
    for e, s in scale.items():
        for k, layer in enumerate(("a", "b", "c")):
            rows.append((e, layer, raw["svd"][k], raw["ce"][k], raw["cs"][k], s[k]))
    return pd.DataFrame(rows, columns=["epoch", "layer", "svd", "ce", "cs", "lr_scale"])


def test_tables_frozen_tercile_and_mechanism():
    t = _lalr_table()
    assert cl.frozen_per_epoch(t, 4).tolist() == [1, 1, 1, 1]
    # top third at epoch 0 (ceil(3/3) = 1 layer): "b" at 1.0, 0.9 at epoch 3 -> fell
    assert cl.top_tercile_fall(t) == 1.0
    assert not cl.unchanged_scales(t)
    assert cl.unchanged_scales(_copy_epoch(t, 0, 3))        # metrics once: epoch 3 = epoch 0
    assert cl.scales_follow_metrics(t.iloc[:9], 3)         # epochs 0-2: follow svd, ce, cs
    assert not cl.scales_follow_metrics(t, 4)              # epoch 3's scales break the svd order
    grid = cl.metric_grid(t, "lr_scale", 4)
    assert grid.shape == (3, 4) and list(grid.index) == ["a", "b", "c"] and grid.loc["b", 3] == 0.9
    assert cl.fraction_interval([0.6, 0.8, 0.7, 0.9]).verdict == "PASS"
    assert cl.fraction_interval([0.2, 0.8, 0.5, 0.6]).verdict == "INCONCLUSIVE"


def _copy_epoch(t, src, dst):
    t = t.copy()
    t.loc[t.epoch == dst, "lr_scale"] = t.loc[t.epoch == src, "lr_scale"].to_numpy()
    return t


# ----------------------------------------------------------------------------- mechanics
def test_literal_normaliser_nan_and_app_a_zip_counts():
    cases = cl.normaliser_cases()
    assert cl.literal_gives_nan(cases) and set(cases["case"]) == {"identical", "single"}
    # Linear(2, 3) -> Linear(3, 1): groups [0.weight, 0.bias, 1.weight, 1.bias], metrics of
    # [0.weight, 1.weight]: 0.weight gets its own, 0.bias consumes 1.weight's, 1.weight none
    mis = cl.misalignment_summary(nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)))
    assert mis == {"params": 4, "weights": 2, "own": 1, "other": 0, "none": 1, "wasted": 1}


def test_lr_integration_on_a_small_run():
    cfg = RunConfig(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
                    model="mlp", optimizer="adamw", lr=1e-3, wd=0.01, batch_size=16, epochs=3,
                    device="cpu", methods=(LALR(),))
    out = cl.lr_integration(cfg)
    assert out["max_abs_error"] <= 1e-12 and out["state_kept"] == out["epochs"] == 2
    assert out["groups"] == 3 * 3                                # 3 layers x 3 epochs
    with pytest.raises(ValueError, match="LALR"):
        cl.lr_integration(RunConfig(model="mlp"))


# ----------------------------------------------------------------------------- the table
def test_verdict_table_marks_pending_and_states_the_interval():
    ev = Evidence(-2.0, -3.0, -1.0, 0.0, "greater", 5, None, "paired t over 5 seeds")
    records = [{"item_id": "L-C15", "verdict": "FAIL", "ours": {"sent": "-2.00"},
                "interval": ev.as_record(), "detail": ""},
               {"item_id": "L-C30", "verdict": "N/A", "ours": None, "interval": None,
                "detail": "untestable"}]
    t = cl.verdict_table(records, cl.CLAIMS).set_index("claim")
    assert len(t) == 30
    assert t.loc["L-C15", "verdict"] == "FAIL" and "claim > 0" in t.loc["L-C15", "paired statistic"]
    assert t.loc["L-C15", "our numbers"] == "sent: -2.00"
    assert t.loc["L-C30", "verdict"] == "N/A" and t.loc["L-C30", "paired statistic"] == "untestable"
    assert t.loc["L-C6", "verdict"] == cl.PENDING
    assert t.loc["L-C6", "kind"] == "sanity" and t.loc["L-C15", "kind"] == "claim"
    assert "L-C15.vision" not in t.index and "E14" not in t.index     # the source's claims only
