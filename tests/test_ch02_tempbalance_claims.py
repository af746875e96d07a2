"""Every claim test of chapter 02 can PASS, FAIL and (on an interval) be INCONCLUSIVE: small
synthetic run tables and alpha vectors, no training (harness: tests/claim_cases.py)."""

from __future__ import annotations

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
def _fig13(trained_alpha):
    fits = {(w, r): {"alpha": a} for r in ("median", "ks")
            for w, a in (("init", 4.0), ("trained", trained_alpha))}
    lam = np.linspace(0.1, 1.0, 50)
    return findings.fig13(fits, lam, 3 * lam, (0.1, 1.0)).findings["fig1.3-alpha"]


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
EXPONENTIAL = 2 + RNG.exponential(1.5, 150)
LEFT_SKEWED = 10 - RNG.exponential(1.5, 150)
SYMMETRIC = np.linspace(2, 5, 9)
NORMAL = RNG.normal(4, 0.5, 300)


def _fig26(cid, alphas):
    return findings.fig26({"r18": alphas, "r34": alphas}).findings[cid]


def _t001c(share):
    s = pd.Series({("r18", "median"): share, ("r18", "ks"): 0.9, ("r34", "median"): share,
                   ("r34", "ks"): 0.9}).rename_axis(["model", "rule"])
    return findings.t001c(s).findings["T-001-c"]


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
    "fig1.3-alpha": {"PASS": lambda: _fig13(2.5), "FAIL": lambda: _fig13(5.0)},
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
                          SYMMETRIC),
    "fig2.6-loglik": _cases(lambda a: _fig26("fig2.6-loglik", a), EXPONENTIAL, NORMAL,
                            SYMMETRIC),
    "T-001-c": {"PASS": lambda: _t001c(0.2), "FAIL": lambda: _t001c(0.8)},
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
    one = findings.fig26({"r18": EXPONENTIAL, "r34": LEFT_SKEWED})
    assert one.findings["fig2.6-skew"].verdict == "FAIL"


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
