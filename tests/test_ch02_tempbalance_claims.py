"""Every claim test of chapter 02 can PASS, FAIL and (on an interval) be INCONCLUSIVE: small
synthetic run tables and alpha vectors, no training (harness: tests/claim_cases.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters.ch02_tempbalance import ALLOCATIONS, SAMPLING, findings
from lalr_core.chapters.ch02_tempbalance.claims import CLAIMS, SOURCE_POWERS

CHAPTER = "ch02_tempbalance"
SEEDS = 5
# per-seed offsets (points) of a scheme over its reference: clearly above, clearly below, noise
UP = np.array([3.0, 3.4, 2.6, 3.2, 2.8])
DOWN = -UP
NOISE = np.array([4.0, -3.0, 1.0, -4.5, 2.0])
ZERO = np.zeros(SEEDS)


def _table(cells) -> pd.DataFrame:
    """A run table: ``cells`` = [(labels, test offsets, train offsets)], one run per seed; the
    offsets are added to a per-seed base accuracy shared by every cell (so cells pair by seed)."""
    base_test = 80 + np.array([1.0, -2.0, 0.5, 2.5, -1.0])
    base_train = 95 + np.array([0.5, -1.0, 0.0, 1.0, -0.5])
    rows = []
    for labels, d_test, d_train in cells:
        for k in range(SEEDS):
            rows.append({"model": "r18", "width": 1.0, "lr": 0.2, "allocation": "baseline",
                         **labels, "seed": k, "test_acc": base_test[k] + d_test[k],
                         "train_acc": base_train[k] + d_train[k], "n_test": 450,
                         "test_correct": None})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- fig 1.3
INIT_ALPHAS = [4.0, 4.2, 3.8, 4.1, 3.9]     # the null: five networks at initialisation


def _fig13(trained_alphas, init_alphas=INIT_ALPHAS):
    """One alpha per trained seed (both rules alike) against the initial networks."""
    alphas = {(w, r): a for r in ("median", "ks")
              for w, a in (("init", init_alphas), ("trained", trained_alphas))}
    lam = np.linspace(0.1, 1.0, 50)
    return findings.fig13(alphas, lam, 3 * lam, (0.1, 1.0)).findings["fig1.3-alpha"]


# ----------------------------------------------------------------------------- fig 2.1
def _grid(deep, shallow, deep_train=UP, shallow_train=DOWN, deep_wide=None):
    """Fig 2.1's runs at lr 0.2: r18 (shallower), r34 (deeper) at widths 0.5 and 1; ``deep``:
    r34's eq. 2.13 test offsets at width 0.5 (``deep_wide`` at width 1, default the same)."""
    cells = []
    for m, d_test, d_train in (("r18", shallow, shallow_train), ("r34", deep, deep_train)):
        for w in (0.5, 1.0):
            dt = deep_wide if (m == "r34" and w == 1.0 and deep_wide is not None) else d_test
            cells += [({"model": m, "width": w}, ZERO, ZERO),
                      ({"model": m, "width": w, "allocation": "alpha"}, dt, d_train)]
    return _table(cells)


def _fig21(cid, grid):
    return findings.fig21(grid, ["r18", "r34"], [0.5, 1.0], 0.2).findings[cid]


# ----------------------------------------------------------------------------- fig 2.2
def _cka(diff):
    rows = []
    for k in range(SEEDS):
        rows += [{"allocation": "baseline", "unit": "seed", "id": k, "adjacent": 0.9,
                  "first_last": 0.5 + 0.01 * k},
                 {"allocation": "alpha", "unit": "seed", "id": k, "adjacent": 0.9,
                  "first_last": 0.5 + 0.01 * k + diff[k] / 30}]
    return findings.fig22(pd.DataFrame(rows)).findings["fig2.2-first-last"]


# ----------------------------------------------------------------------------- fig 2.3
def _maps(name, d):
    other = "log2" if name == "sqrt" else "sqrt"
    table = _table([({}, ZERO, ZERO), ({"allocation": name}, d, ZERO),
                    ({"allocation": other}, ZERO, ZERO)])
    alphas = {"r18": np.linspace(2, 6, 8), "r34": np.linspace(2, 7, 14)}
    return findings.fig23(alphas, table, ALLOCATIONS).findings[f"fig2.3-{name}"]


# ----------------------------------------------------------------------------- fig 2.5 / T-001-b
def _neg(cid, d):
    scheme, metric = {"T-001-b-train": ("neg_pow2", "train"), "T-001-b-test": ("neg_pow2", "test"),
                      "fig2.5-softmax-test": ("softmax", "test")}[cid]
    d_test, d_train = (d, ZERO) if metric == "test" else (ZERO, d)
    cells = [({}, ZERO, ZERO), ({"allocation": scheme}, d_test, d_train)]
    cells.append(({"allocation": "softmax" if scheme == "neg_pow2" else "neg_pow2"}, ZERO, ZERO))
    return findings.fig25_training(_table(cells)).findings[cid]


# ----------------------------------------------------------------------------- fig 2.6 / T-001-c
RNG = np.random.default_rng(3)
LAYERS = 40      # alphas per run (one seed)


def _runs(draw, seeds=3, stream=100):
    """seed -> one run's layer alphas, ``draw(rng)`` per seed (independent runs)."""
    return {k: draw(np.random.default_rng(stream + k)) for k in range(seeds)}


def EXPONENTIAL(seeds=3, stream=100):
    return _runs(lambda g: 2 + g.exponential(1.5, LAYERS), seeds, stream)


def LEFT_SKEWED(seeds=3):
    return _runs(lambda g: 10 - g.exponential(1.5, LAYERS), seeds)


def NORMAL(seeds=3):
    return _runs(lambda g: g.normal(4, 0.5, LAYERS), seeds)


def _fig26(cid, final, init=NORMAL):
    """Both models: ``final`` seeds' final-epoch alphas, ``init`` their epoch-0 alphas."""
    f = final()
    i = init(len(f))
    return findings.fig26({"r18": f, "r34": f}, {"r18": i, "r34": i}).findings[cid]


def _t001c(last_share, seeds=3, init_share=0.9):
    """Per-seed shares: every seed ends at ``last_share`` on the median rule (a list: one per
    seed), at ``init_share`` at epoch 0; the KS rule at 0.9 throughout."""
    last = np.broadcast_to(last_share, seeds)
    rows = [{"model": m, "seed": k, "rule": r, "epoch": e,
             "share_2_6": (init_share if e == 0 else last[k]) if r == "median" else 0.9}
            for m in ("r18", "r34") for k in range(seeds) for r in ("median", "ks")
            for e in (0, 12)]
    return findings.t001c(pd.DataFrame(rows)).findings["T-001-c"]


# ----------------------------------------------------------------------------- T-001-a
def _powers(cid, d):
    metric, scheme, ref, _ = findings.POWER_CLAIMS[cid]
    cells = []
    for lr in (0.15, 0.2):
        offsets = {"baseline": ZERO, "alpha^2": ZERO, "alpha^3": ZERO}
        offsets[scheme] = offsets[ref] + d
        for alloc, off in offsets.items():
            t, tr = (off, ZERO) if metric == "test_acc" else (ZERO, off)
            cells.append(({"lr": lr, "allocation": alloc}, t, tr))
    return findings.t001a(_table(cells), [0.15, 0.2]).findings[cid]


# ----------------------------------------------------------------------------- T-001-d
def _sampling(cid, shallow_test, shallow_train, deep_test, deep_train):
    cells = []
    for m, dt, dtr in (("r18", shallow_test, shallow_train), ("r34", deep_test, deep_train)):
        cells.append(({"model": m}, ZERO, ZERO))
        cells += [({"model": m, "allocation": a}, dt, dtr) for a in SAMPLING]
    return findings.t001d(_table(cells), ["r18"], ["r34"], SAMPLING).findings[cid]


def _cases(make, up, down, noise=None):
    out = {"PASS": lambda: make(up), "FAIL": lambda: make(down)}
    if noise is not None:
        out["INCONCLUSIVE"] = lambda: make(noise)
    return out


CASES = {
    "fig1.3-alpha": {"PASS": lambda: _fig13([2.5, 2.6, 2.4]),
                     "FAIL": lambda: _fig13([5.0, 5.1, 4.9]),
                     "INCONCLUSIVE": lambda: _fig13([2.5])},     # one trained seed
    "fig2.1-deep-gain": _cases(lambda d: _fig21("fig2.1-deep-gain", _grid(d, ZERO)),
                               UP, DOWN, NOISE),
    "fig2.1-deep-vs-shallow": _cases(
        lambda d: _fig21("fig2.1-deep-vs-shallow", _grid(d, -d, d, -d)), UP, DOWN, NOISE),
    "fig2.1-smallest-width": _cases(
        lambda d: _fig21("fig2.1-smallest-width", _grid(d, ZERO, deep_wide=d / 3)),
        UP, DOWN, NOISE),
    "fig2.2-first-last": _cases(_cka, DOWN, UP, NOISE),
    "fig2.3-sqrt": _cases(lambda d: _maps("sqrt", d), UP, DOWN, NOISE),
    "fig2.3-log2": _cases(lambda d: _maps("log2", d), UP, DOWN, NOISE),
    "T-001-b-train": _cases(lambda d: _neg("T-001-b-train", d), DOWN, UP, NOISE),
    "T-001-b-test": _cases(lambda d: _neg("T-001-b-test", d), DOWN, UP, NOISE),
    "fig2.5-softmax-test": _cases(lambda d: _neg("fig2.5-softmax-test", d), DOWN, UP, NOISE),
    "fig2.6-skew": _cases(lambda a: _fig26("fig2.6-skew", a), EXPONENTIAL, LEFT_SKEWED,
                          lambda: EXPONENTIAL(1)),                 # one seed: 1 replicate
    "fig2.6-loglik": _cases(lambda a: _fig26("fig2.6-loglik", a), EXPONENTIAL, NORMAL,
                            lambda: EXPONENTIAL(1)),
    "T-001-c": {"PASS": lambda: _t001c(0.2), "FAIL": lambda: _t001c([0.2, 0.8, 0.2]),
                "INCONCLUSIVE": lambda: _t001c(0.2, seeds=1)},
    **{cid: _cases(lambda d, cid=cid: _powers(cid, d),
                   UP if findings.POWER_CLAIMS[cid][3] == "greater" else DOWN,
                   DOWN if findings.POWER_CLAIMS[cid][3] == "greater" else UP, NOISE)
       for cid in findings.POWER_CLAIMS},
    "T-001-d-shallow": _cases(lambda d: _sampling("T-001-d-shallow", d, -d, ZERO, ZERO),
                              UP, DOWN, NOISE),
    "T-001-d-depth": _cases(lambda d: _sampling("T-001-d-depth", d, -d, ZERO, ZERO),
                            UP, DOWN, NOISE),
}


# ----------------------------------------------------------------------------- beyond the cases
def test_every_claim_of_the_chapter_has_cases_or_is_a_sanity_check():
    for cid, claim in CLAIMS.items():
        assert (cid in CASES) == (claim.kind == "claim"), cid


def test_the_source_effect_of_t001a_is_the_smaller_of_the_sources_two_gains():
    gains = [a - b for a, b in SOURCE_POWERS.values()]
    assert CLAIMS["T-001-a-squared-test"].source_effect == pytest.approx(min(gains), abs=0.005)


def test_fig26_evidence_is_judged_on_both_models():
    init = NORMAL()
    one = findings.fig26({"r18": EXPONENTIAL(), "r34": LEFT_SKEWED()},
                         {"r18": init, "r34": init})
    assert one.findings["fig2.6-skew"].verdict == "FAIL"


@pytest.mark.parametrize("cid", ["fig2.6-skew", "fig2.6-loglik"])
def test_fig26_does_not_pass_on_its_null_the_same_runs_at_initialisation(cid):
    """Exponential-like alphas already at epoch 0 (as the median-rule alphas of an initial
    ResNet are): the shape did not emerge with training, so the claim does not PASS."""
    f = _fig26(cid, EXPONENTIAL, init=lambda n: EXPONENTIAL(n, stream=200))
    assert f.evidence.claim_verdict != "PASS"
    stat = findings.skewness if cid == "fig2.6-skew" else findings.mean_loglik_ratio
    parts = findings.per_seed_evidence(EXPONENTIAL(), EXPONENTIAL(stream=200), stat)
    assert parts["final"].claim_verdict == "PASS"        # the normal null alone would pass it
    assert parts["final - init"].claim_verdict == "INCONCLUSIVE"
    assert parts["final"].replicates == 3 and parts["final"].unit == "seed"


def test_fig26_statistics_are_one_value_per_seed():
    runs = EXPONENTIAL()
    from scipy import stats
    parts = findings.per_seed_evidence(runs, NORMAL(), findings.skewness)
    want = [stats.skew(a) for a in runs.values()]
    assert parts["final"].estimate == pytest.approx(np.mean(want)) and parts["final"].n == 3
    assert math.isnan(findings.skewness([1.0, 1.0, 1.0]))
    assert math.isnan(findings.mean_loglik_ratio([2.0, 3.0]))
    # an exponential sample fits an exponential better than a normal; a normal one does not
    assert findings.mean_loglik_ratio(2 + RNG.exponential(1.0, 400)) > 0
    assert findings.mean_loglik_ratio(RNG.normal(4, 0.5, 400)) < 0


def test_init_null_difference_is_welch_over_trained_seeds():
    from scipy import stats
    t, i = np.array([2.5, 2.7, 2.3]), np.array(INIT_ALPHAS)
    e = findings.init_null_difference(t, i)
    vt, vi = t.var(ddof=1) / 3, i.var(ddof=1) / 5
    df = (vt + vi) ** 2 / (vt ** 2 / 2 + vi ** 2 / 4)
    half = stats.t.ppf(0.975, df) * math.sqrt(vt + vi)
    assert (e.estimate, e.high - e.estimate) == pytest.approx((t.mean() - i.mean(), half))
    assert e.side == "less" and e.unit == "seed" and e.replicates == 3
    assert e.claim_verdict == "PASS"
    one = findings.init_null_difference([2.5], i)        # one trained seed: a prediction interval
    half1 = stats.t.ppf(0.975, 4) * i.std(ddof=1) * math.sqrt(1 + 1 / 5)
    assert one.high - one.estimate == pytest.approx(half1)
    assert one.verdict == "PASS" and one.replicates == 1 and one.claim_verdict == "INCONCLUSIVE"
    assert findings.init_null_difference([2.5], [4.0]).verdict == "INCONCLUSIVE"   # no spread
    assert findings.init_null_difference([np.nan], i).n == 0


def test_fig13_claim_counts_the_trained_seeds_not_the_initial_networks():
    f = _fig13([2.5])
    assert f.evidence.replicates == 1 and f.evidence.n == 1
    assert "median rule" in f.detail and "ks rule" in f.detail


def test_t001c_holds_per_seed_and_reports_initialisation():
    f = _t001c([0.2, 0.3, 0.1], init_share=1.0)
    assert f.evidence is True and f.replicates == 3
    assert f.ours["epoch 0"]["r18/median"] == {"0": 1.0, "1": 1.0, "2": 1.0}
    assert f.ours["last epoch"]["r34/median"]["1"] == 0.3
    assert "3 of 3 seeds" in f.detail
    assert _t001c([0.2, 0.6, 0.2]).evidence is False      # one seed with most layers inside


def test_sanity_findings_hold_on_their_own_inputs():
    a = np.linspace(1.5, 6, 12)
    lrs = {n: np.asarray(findings.allocate(a, 1.0, ALLOCATIONS[n][0], **dict(ALLOCATIONS[n][1])))
           for n in findings.POWERS_P}
    r = findings.fig24(a, lrs)
    assert all(f.verdict == "PASS" for f in r.findings.values())
    syn = 1 + np.random.default_rng(0).exponential(2.0, 19)
    r = findings.fig25_maps({"ours": a, "syn": syn}, syn, a)
    assert r.findings["fig2.5-negpow2-19"].verdict == "PASS"
    assert r.findings["fig2.5-closed-form"].verdict == "PASS"
