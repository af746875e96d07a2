"""Chapter 06's claim tests can PASS, FAIL and (on an interval) be INCONCLUSIVE: each case builds
small synthetic results (no training), calls the chapter's function for the claim and returns
its `Finding` (harness: ``tests/claim_cases.py``, run by ``tests/test_claim_cases.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from claim_cases import verdict_of

from lalr_core.chapters.ch06_orthogonal_sgdm import findings as fx
from lalr_core.chapters.ch06_orthogonal_sgdm.claims import CLAIMS, svd_increase_pct

CHAPTER = "ch06_orthogonal_sgdm"

# Three seeds' paired offsets around a mean difference: tight (decides) or wide (cannot).
TIGHT, WIDE = (-0.002, 0.0, 0.002), (-0.3, 0.0, 0.3)


def run(test_acc=0.8, val_acc=None, *, history=None, diverged=False, **final):
    """A synthetic `train_runs` result."""
    if history is None:
        history = pd.DataFrame({"epoch": [1, 2], "val_acc": [0.5, val_acc or test_acc],
                                "val_loss": [1.0, 0.5], "train_acc": [0.5, 0.8],
                                "train_loss": [1.0, 0.5]})
    return {"final": {"test_acc": test_acc, "val_acc": val_acc or test_acc, **final},
            "diverged": diverged, "history": history}


def pair(diff, spread=TIGHT, base=0.7):
    """Three seeds of (a, b) runs whose test accuracies differ by ``diff`` (fraction) +- spread."""
    return [run(base + diff + s) for s in spread], [run(base) for _ in spread]


def cells(diffs, spread=TIGHT, names=("orth_sgdm", "sgdm"), models=("m1", "m2")):
    """``{(model, variant): runs}`` with ``variant[0] - variant[1] = diff`` per model."""
    out = {}
    for m in models:
        a, b = pair(diffs, spread)
        out[(m, names[0])], out[(m, names[1])] = a, b
    return out


# ----------------------------------------------------------------------------- table 5.3, 5.6
def _table53(diff, spread=TIGHT):
    return fx.table53(cells(diff, spread), ["m1", "m2"]).finding


def _curves(delta_acc1, delta_loss1, spread=TIGHT, claim="fig51"):
    """Suite runs whose epoch-1 validation accuracy (loss) differ by the deltas, Orth - SGDM."""
    runs = {}
    for m in ("m1", "m2"):
        for v, sign in (("orth_sgdm", 1), ("sgdm", 0)):
            runs[(m, v)] = [run(0.8 + sign * delta_acc1 + sign * s, history=pd.DataFrame({
                "epoch": [1, 2, 3], "val_acc": [0.5 + sign * (delta_acc1 + s), 0.7 + sign * (
                    delta_acc1 + s), 0.8 + sign * (delta_acc1 + s)],
                "val_loss": [1.0 + sign * (delta_loss1 + s), 0.6, 0.5],
                "train_acc": [0.5 + sign * (delta_acc1 + s), 0.7, 0.8],
                "train_loss": [1.0 + sign * (delta_loss1 + s), 0.6, 0.5]}))
                for s in spread]
    lc = fx.learning_curves(runs, ["m1", "m2"], ["m1", "m2"], "m1", mark=60, n_val=500,
                            epochs=3)
    return getattr(lc, claim)


def _table56(conv_minus_all, orth_minus_sgdm, claim, spread=TIGHT):
    runs = {}
    for m in ("m1", "m2"):
        runs[(m, "sgdm")] = [run(0.7) for _ in spread]
        runs[(m, "orth_sgdm")] = [run(0.7 + orth_minus_sgdm + s) for s in spread]
        runs[(m, "conv_orth_sgdm")] = [run(0.7 + orth_minus_sgdm + conv_minus_all + 2 * s)
                                       for s in spread]
    return getattr(fx.table56(runs, ["m1", "m2"]), claim)


def _table55(n_minus_s, orth_minus_n, cn_minus_n, claim, spread=TIGHT, cn_diverges=False):
    runs = {}
    for m in ("m1", "m2"):
        runs[(m, "sgdm")] = [run(0.7) for _ in spread]
        runs[(m, "n_sgdm")] = [run(0.7 + n_minus_s + s) for s in spread]
        runs[(m, "cn_sgdm")] = [run(0.7 + n_minus_s + cn_minus_n + 2 * s,
                                    diverged=cn_diverges and m == "m2") for s in spread]
        runs[(m, "orth_sgdm")] = [run(0.7 + n_minus_s + orth_minus_n + 3 * s) for s in spread]
    return getattr(fx.table55(runs, ["m1", "m2"]), claim)


# ----------------------------------------------------------------------------- table 5.1
def _reach(sgdm_hits, orth_hits, epochs=5):
    """Suite runs (3 seeds per model) whose validation accuracy first reaches fig 5.3's mark
    (60 %) at the given epochs (1-indexed; SGDM's, Orth's), per seed."""
    def one(hit):
        e = np.arange(1, epochs + 1)
        acc = np.where(e >= hit, 0.65, 0.5)
        return run(0.8, history=pd.DataFrame({
            "epoch": e, "val_acc": acc, "val_loss": 1.0 - acc / 2, "train_acc": acc,
            "train_loss": 1.0 - acc / 2}))
    runs = {}
    for m in ("m1", "m2"):
        runs[(m, "sgdm")] = [one(h) for h in sgdm_hits]
        runs[(m, "orth_sgdm")] = [one(h) for h in orth_hits]
    return fx.learning_curves(runs, ["m1", "m2"], ["m1", "m2"], "m1", mark=60, n_val=500,
                              epochs=epochs).reach


def _table51(diff, spread=TIGHT):
    t51 = {}
    for base in ("sgdm", "adam"):
        a, b = pair(diff, spread)
        t51[base], t51[f"orth_{base}"] = b, a
    return fx.table51(t51)


def _epoch_runs(first_hits, epochs=5):
    """Runs whose validation accuracy reaches 0.9 first at the given epochs (1-indexed)."""
    return [run(0.9, history=pd.DataFrame({
        "epoch": range(1, epochs + 1),
        "val_acc": [0.95 if e >= hit else 0.5 for e in range(1, epochs + 1)]}))
        for hit in first_hits]


def _table52(base_hits, orth_hits):
    t51 = {"sgdm": _epoch_runs(base_hits), "orth_sgdm": _epoch_runs(orth_hits),
           "adam": _epoch_runs(base_hits), "orth_adam": _epoch_runs(orth_hits)}
    return fx.table52(t51, [90], epochs=5)


# ----------------------------------------------------------------------------- table 5.4
def _table54(orth_gain, range_shrink, spread=TIGHT):
    """Two cells per base: originals at 0.5 and 0.8, orthogonal ones ``orth_gain`` above
    the first and ``orth_gain - range_shrink`` above the second (so their range is narrower by
    ``range_shrink``; fractions)."""
    grid = {}
    cells_ = [(0.1, 0.9), (0.01, 0.9)]
    for b in ("sgdm", "adam"):
        for i, (lr, mom) in enumerate(cells_):
            base = 0.5 + 0.3 * i
            orth = base + orth_gain - range_shrink * i
            grid[(lr, mom, b, False)] = [run(base + s) for s in spread]
            grid[(lr, mom, b, True)] = [run(orth + s * (1.5 + i)) for s in spread]  # a spread: no zero-width interval
    return fx.table54(grid, cells_)


# ----------------------------------------------------------------------------- figs 5.7-5.9
def _fig57(diff, n_val, spread=TIGHT):
    """Fig 5.7's curves, one row per seed (``spread``: per-seed offsets of Orth's curve);
    ``spread=None``: one run each (the quick profile's case: one replicate)."""
    x = np.arange(5)
    if spread is None:
        return fx.fig57({"none": (x, np.full(5, 0.6)), "orth": (x, np.full(5, 0.6 + diff))},
                        n_val, "step")
    none = np.full((len(spread), 5), 0.6)
    orth = none + diff + np.asarray(spread)[:, None]
    return fx.fig57({"none": (x, none), "orth": (x, orth)}, n_val, "step")


def _fig58(diff, spread=TIGHT):
    base = [np.linspace(40, 10, 30) for _ in spread]
    return fx.fig58({False: base, True: [b + diff + 50 * s for b, s in zip(base, spread)]}, 10)


def _fig59(diff, spread=TIGHT):
    steps = [0, 10, 20, 30]
    base = np.array([[5.0, 4.0, 3.0, 2.0] for _ in spread])
    orth = base + np.array([[0.0] + [diff + 10 * s] * 3 for s in spread])
    return fx.fig59({False: base, True: orth}, steps)


# ----------------------------------------------------------------------------- figs 5.10, 5.11
def _cos_records(median):
    return pd.DataFrame({"step": [0, 10, 0, 10], "layer": ["conv2", "conv2", "conv3", "conv3"],
                         "median": [median] * 4})


def _filter_cos(gap, claim_id, spread=TIGHT):
    """SGDM - Orth median |cos| = gap (+ spread over seeds)."""
    sgdm = [_cos_records(0.2 + gap + s / 10) for s in spread]
    orth = [_cos_records(0.2) for _ in spread]
    return fx.filter_cos_gap(sgdm, orth, "conv2", claim_id)


# ----------------------------------------------------------------------------- fig 5.12
def _rep_records(level, slope_per_step):
    steps = np.arange(0, 100, 10)
    rows = [(int(t), layer, i, level + slope_per_step * t + 0.001 * i)
            for t in steps for layer in ("bn1", "bn2") for i in range(3)]
    return pd.DataFrame(rows, columns=["step", "layer", "sample", "similarity"])


def _fig512(orth_level, orth_slope, sgdm_slope, claim, spread=TIGHT):
    rep = {"sgdm": [_rep_records(0.5, sgdm_slope + s / 1000) for s in spread],
           "orth_sgdm": [_rep_records(orth_level, orth_slope + 2 * s / 1000) for s in spread]}
    return getattr(fx.fig512(rep, ["bn1", "bn2"]), claim)


# ----------------------------------------------------------------------------- fig 5.13
def _zero_records(count):
    return pd.DataFrame({"step": np.arange(1, 21), "zero": np.full(20, count),
                         "below_eps": np.full(20, count)})


def _fig513(ratios, claim, has_bn=False, sgdm=(9, 10, 11)):
    """Three seeds: SGDM's counts ``sgdm``, Orth's = SGDM's times each seed's ratio."""
    recs = {"sgdm": [_zero_records(b) for b in sgdm],
            "orth_sgdm": [_zero_records(b * r) for b, r in zip(sgdm, ratios)]}
    return getattr(fx.fig513(recs, recs, 5, exact_has_batch_norm=has_bn, exact_where="m conv2",
                             eps_where="m conv2"), claim)


# ----------------------------------------------------------------------------- fig 5.14
def _fig514(small_diff, large_diff, spread=TIGHT, claim="small"):
    runs = {}
    for b, d in ((4, small_diff), (32, large_diff), (256, large_diff)):
        runs[(b, "sgdm")] = [run(0.7) for _ in spread]
        runs[(b, "orth_sgdm")] = [run(0.7 + d + s) for s in spread]
    return getattr(fx.fig514(runs, [4, 32, 256], 32, 500), claim)


# ----------------------------------------------------------------------------- app. I
def _sym(centre_ahead, centre_perm, shift, seed):
    """A `SymmetryProbe` result: phi_ahead around ``centre_ahead``, the permuted probe around
    ``centre_perm``, phi(pi) with per-batch centres shifting by ``shift``."""
    rng = np.random.default_rng(seed)
    batches, filters = 8, 32
    drift = shift * np.sin(np.arange(batches))[:, None]
    return {"steps": np.arange(batches), "phi": rng.normal(-0.3, 0.05, (batches, filters)),
            "phi_perm": rng.normal(0, 0.05, (batches, filters)) + drift,
            "skip": 2, "steps_ahead": np.arange(batches - 2),
            "phi_ahead": rng.normal(centre_ahead, 0.05, (batches - 2, filters)),
            "phi_perm_ahead": rng.normal(centre_perm, 0.05, (batches - 2, filters)),
            "fan_in": 288}


def _symmetry(plain, skip, claim, seeds=3):
    """``plain``/``skip`` = (centre_ahead, centre_perm, shift) per model; ``seeds`` runs each."""
    records = {"plain": [_sym(*plain, seed=k) for k in range(seeds)],
               "skip": [_sym(*skip, seed=10 + k) for k in range(seeds)]}
    found = fx.symmetry(records, "plain", "skip")
    return found.skip if claim == "skip" else found.phi["plain"]


def _symmetry_noisy_centre():
    """Seeds disagree on the sign of phi_ahead's median: undecided."""
    records = {"plain": [_sym(c, 0.0, 0.0, seed=k) for k, c in enumerate((-0.2, 0.15, 0.05))],
               "skip": [_sym(-0.2, 0.0, 0.0, seed=10 + k) for k in range(3)]}
    return fx.symmetry(records, "plain", "skip").phi["plain"]


def _skip_mixed():
    """Skip lowers the shift on one seed, raises it on another: undecided."""
    records = {"plain": [_sym(-0.2, 0.0, s, seed=k) for k, s in enumerate((0.1, 0.0, 0.05))],
               "skip": [_sym(-0.2, 0.0, s, seed=10 + k) for k, s in enumerate((0.0, 0.1, 0.05))]}
    return fx.symmetry(records, "plain", "skip").skip


CASES = {
    "table5.3": {"PASS": lambda: _table53(0.03), "FAIL": lambda: _table53(-0.03),
                 "INCONCLUSIVE": lambda: _table53(0.03, WIDE)},
    "fig5.1": {"PASS": lambda: _curves(0.05, -0.1), "FAIL": lambda: _curves(-0.05, 0.1),
               "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE)},
    "fig5.3-reach": {"PASS": lambda: _reach((3, 4, 4), (1, 1, 2)),
                     "FAIL": lambda: _reach((1, 1, 2), (3, 4, 4)),
                     "INCONCLUSIVE": lambda: _curves(0.0, 0.0, (-0.15, 0.0, 0.15),
                                                     claim="reach")},
    "fig5.3-epoch1": {"PASS": lambda: _curves(0.05, -0.1, claim="epoch1"),
                      "FAIL": lambda: _curves(-0.05, 0.1, claim="epoch1"),
                      "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="epoch1")},
    "fig5.3-final": {"PASS": lambda: _curves(0.05, -0.1, claim="final"),
                     "FAIL": lambda: _curves(-0.05, 0.1, claim="final"),
                     "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="final")},
    "fig5.4": {"PASS": lambda: _curves(0.05, -0.1, claim="fig54"),
               "FAIL": lambda: _curves(-0.05, 0.1, claim="fig54"),
               "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="fig54")},
    "fig5.5": {"PASS": lambda: _curves(0.05, -0.1, claim="fig55"),
               "FAIL": lambda: _curves(-0.05, 0.1, claim="fig55"),
               "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="fig55")},
    "fig5.6": {"PASS": lambda: _curves(0.05, -0.1, claim="fig56"),
               "FAIL": lambda: _curves(-0.05, 0.1, claim="fig56"),
               "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="fig56")},
    "figG.1A": {"PASS": lambda: _curves(0.05, -0.1, claim="figG1A"),
                "FAIL": lambda: _curves(-0.05, 0.1, claim="figG1A"),
                "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="figG1A")},
    "figG.1B": {"PASS": lambda: _curves(0.05, -0.1, claim="figG1B"),
                "FAIL": lambda: _curves(-0.05, 0.1, claim="figG1B"),
                "INCONCLUSIVE": lambda: _curves(0.05, -0.1, WIDE, claim="figG1B")},
    "table5.1": {"PASS": lambda: _table51(0.0), "FAIL": lambda: _table51(-0.03),
                 "INCONCLUSIVE": lambda: _table51(0.0, WIDE)},
    "table5.2": {"PASS": lambda: _table52((4, 5, 5), (2, 3, 2)),
                 "FAIL": lambda: _table52((2, 3, 2), (4, 5, 5)),
                 "INCONCLUSIVE": lambda: _table52((2, 4, 3), (4, 2, 3))},
    "table5.4-cells": {"PASS": lambda: _table54(0.15, 0.1).cells,
                       "FAIL": lambda: _table54(-0.15, 0.1).cells,
                       "INCONCLUSIVE": lambda: _table54(0.15, 0.1, WIDE).cells},
    "table5.4-range": {"PASS": lambda: _table54(0.15, 0.1).ranges,
                       "FAIL": lambda: _table54(0.15, -0.1).ranges,
                       "INCONCLUSIVE": lambda: _table54(0.15, 0.1, WIDE).ranges},
    "fig5.7": {"PASS": lambda: _fig57(0.05, 5000), "FAIL": lambda: _fig57(-0.05, 5000),
               "INCONCLUSIVE": lambda: _fig57(0.05, 5000, None)},   # one run: 1 replicate
    "fig5.8": {"PASS": lambda: _fig58(-2.0), "FAIL": lambda: _fig58(2.0),
               "INCONCLUSIVE": lambda: _fig58(-2.0, WIDE)},
    "fig5.9": {"PASS": lambda: _fig59(-0.5), "FAIL": lambda: _fig59(0.5),
               "INCONCLUSIVE": lambda: _fig59(-0.5, WIDE)},
    **{f"fig5.10{p}": {"PASS": lambda p=p: _filter_cos(0.1, f"fig5.10{p}"),
                       "FAIL": lambda p=p: _filter_cos(-0.1, f"fig5.10{p}"),
                       "INCONCLUSIVE": lambda p=p: _filter_cos(0.01, f"fig5.10{p}", WIDE)}
       for p in "AB"},
    **{f"fig5.11{p}": {"PASS": lambda p=p: _filter_cos(-0.1, f"fig5.11{p}"),
                       "FAIL": lambda p=p: _filter_cos(0.1, f"fig5.11{p}"),
                       "INCONCLUSIVE": lambda p=p: _filter_cos(-0.01, f"fig5.11{p}", WIDE)}
       for p in "AB"},
    "fig5.12-layers": {"PASS": lambda: _fig512(0.3, 0, 0, "layers"),
                       "FAIL": lambda: _fig512(0.7, 0, 0, "layers"),
                       "INCONCLUSIVE": lambda: _fig512(0.5, 0, 0, "layers", (-0.3, 0, 0.3))},
    "fig5.12-orth-declines": {"PASS": lambda: _fig512(0.3, -1e-3, 0, "orth_declines"),
                              "FAIL": lambda: _fig512(0.3, 1e-3, 0, "orth_declines"),
                              "INCONCLUSIVE": lambda: _fig512(0.3, 0, 0, "orth_declines",
                                                              (-1, 0, 1))},
    "fig5.12-sgdm-flat": {"PASS": lambda: _fig512(0.3, -1e-3, 1e-3, "sgdm_flat"),
                          "FAIL": lambda: _fig512(0.3, -1e-3, -1e-3, "sgdm_flat"),
                          "INCONCLUSIVE": lambda: _fig512(0.3, -1e-3, 0, "sgdm_flat",
                                                          (-1, 0, 1))},
    "fig5.12-contrast": {"PASS": lambda: _fig512(0.3, -1e-3, 0, "contrast"),
                         "FAIL": lambda: _fig512(0.3, 1e-3, 0, "contrast"),
                         "INCONCLUSIVE": lambda: _fig512(0.3, 0, 0, "contrast", (-1, 0, 1))},
    "table5.5-n": {"PASS": lambda: _table55(0.03, 0.03, 0.0, "n_over_sgdm"),
                   "FAIL": lambda: _table55(-0.03, 0.03, 0.0, "n_over_sgdm"),
                   "INCONCLUSIVE": lambda: _table55(0.03, 0.03, 0.0, "n_over_sgdm", WIDE)},
    "table5.5-orth": {"PASS": lambda: _table55(0.03, 0.03, 0.0, "orth_best"),
                      "FAIL": lambda: _table55(0.03, -0.03, 0.0, "orth_best"),
                      "INCONCLUSIVE": lambda: _table55(0.03, 0.03, 0.0, "orth_best", WIDE)},
    "table5.5-cn": {"PASS": lambda: _table55(0.03, 0.05, 0.01, "cn_over_n"),
                    "FAIL": lambda: _table55(0.03, 0.05, -0.01, "cn_over_n"),
                    "INCONCLUSIVE": lambda: _table55(0.03, 0.05, 0.01, "cn_over_n", WIDE),
                    "N/A": lambda: fx.table55(_all_cn_diverged(), ["m1"]).cn_over_n},
    "fig5.13A": {"PASS": lambda: _fig513((8, 10, 12), "exact"),
                 "FAIL": lambda: _fig513((0.9, 1, 1.1), "exact"),
                 "INCONCLUSIVE": lambda: _fig513((0.5, 4, 16), "exact"),
                 "N/A": lambda: _fig513((8, 10, 12), "exact", has_bn=True)},
    "fig5.13B": {"PASS": lambda: _fig513((8, 10, 12), "eps"),
                 "FAIL": lambda: _fig513((0.9, 1, 1.1), "eps"),
                 "INCONCLUSIVE": lambda: _fig513((0.5, 4, 16), "eps")},
    "table5.6-conv": {"PASS": lambda: _table56(0.0, 0.03, "conv_only"),
                      "FAIL": lambda: _table56(-0.03, 0.03, "conv_only"),
                      "INCONCLUSIVE": lambda: _table56(0.0, 0.03, "conv_only", WIDE)},
    "table5.6-vs-sgdm": {"PASS": lambda: _table56(0.0, 0.03, "vs_sgdm"),
                         "FAIL": lambda: _table56(0.0, -0.03, "vs_sgdm"),
                         "INCONCLUSIVE": lambda: _table56(0.0, 0.03, "vs_sgdm", WIDE)},
    "fig5.14-small": {"PASS": lambda: _fig514(-0.03, 0.03),
                      "FAIL": lambda: _fig514(0.03, 0.03),
                      "INCONCLUSIVE": lambda: _fig514(-0.03, 0.03, WIDE)},
    "fig5.14-large": {"PASS": lambda: _fig514(-0.03, 0.03, claim="large"),
                      "FAIL": lambda: _fig514(-0.03, -0.03, claim="large"),
                      "INCONCLUSIVE": lambda: _fig514(-0.03, 0.03, WIDE, claim="large")},
    **{f"{item}-phi": {"PASS": lambda: _symmetry((-0.2, 0.0, 0.0), (-0.2, 0.0, 0.0), "phi"),
                       "FAIL": lambda: _symmetry((0.2, 0.0, 0.0), (-0.2, 0.0, 0.0), "phi"),
                       "INCONCLUSIVE": _symmetry_noisy_centre}
       for item in ("figI.1", "figI.2")},
    "figI.2-skip": {"PASS": lambda: _symmetry((-0.2, 0.0, 0.1), (-0.2, 0.0, 0.0), "skip"),
                    "FAIL": lambda: _symmetry((-0.2, 0.0, 0.0), (-0.2, 0.0, 0.1), "skip"),
                    "INCONCLUSIVE": _skip_mixed},
}


def _all_cn_diverged():
    runs = {("m1", "sgdm"): [run(0.7)] * 3, ("m1", "n_sgdm"): [run(0.72)] * 3,
            ("m1", "orth_sgdm"): [run(0.75)] * 3,
            ("m1", "cn_sgdm"): [run(0.0, diverged=True)] * 3}
    return runs


# ----------------------------------------------------------------------------- beyond the cases
def test_every_claim_of_the_chapter_has_its_cases_or_is_a_sanity_check():
    claims = {cid for cid, c in CLAIMS.items() if c.kind == "claim"}
    assert claims == set(CASES)
    assert {cid for cid, c in CLAIMS.items() if c.kind == "sanity"} == {"ns_vs_svd"}


def test_a_claim_over_models_fails_when_one_model_fails():
    runs = cells(0.03)
    runs[("m2", "orth_sgdm")] = [run(0.65 + s) for s in TIGHT]   # m2: Orth below SGDM
    found = fx.table53(runs, ["m1", "m2"]).finding
    assert found.verdict == "FAIL" and "m2" in found.evidence.method


def test_non_inferiority_margin_is_the_claims():
    """Table 5.1 passes a 0.5-point loss (within one point) and fails a 2-point loss."""
    assert verdict_of(_table51(-0.005), CLAIMS["table5.1"]) == "PASS"
    assert verdict_of(_table51(-0.02), CLAIMS["table5.1"]) == "FAIL"
    assert CLAIMS["table5.1"].threshold == -1.0 and CLAIMS["table5.6-conv"].threshold == -1.0


def test_cn_where_it_trains_leaves_out_diverged_models():
    found = _table55(0.03, 0.05, 0.01, "cn_over_n", cn_diverges=True)
    assert found.verdict == "PASS" and found.ours["m2"] == "diverged"
    na = fx.table55(_all_cn_diverged(), ["m1"]).cn_over_n
    assert na.verdict == "N/A" and "diverged on every model" in na.detail


def test_filter_cos_with_one_seed_is_the_sign_as_measured():
    one = fx.filter_cos_gap([_cos_records(0.3)], [_cos_records(0.2)], "conv2", "fig5.10A")
    assert one.evidence is True
    rev = fx.filter_cos_gap([_cos_records(0.3)], [_cos_records(0.2)], "conv2", "fig5.11A")
    assert rev.evidence is False


def test_the_symmetry_claim_reads_phi_from_theta_t_plus_k():
    """phi from theta_t (own update in) is strongly negative in `_sym`; the verdict ignores it
    and judges phi_ahead, which is centred at +0.2 here."""
    found = _symmetry((0.2, 0.0, 0.0), (-0.2, 0.0, 0.0), "phi")
    assert found.verdict == "FAIL"
    assert found.ours["median phi from theta_t (own update in)"] < -0.2


def test_svd_cost_is_the_share_not_the_increase():
    from lalr_core.chapters.ch06_orthogonal_sgdm import claims as cx

    assert round(100 * cx.SVD_S / cx.SVD_RUN_S, 1) == cx.SVD_STATED_INCREASE_PCT
    assert round(svd_increase_pct(), 1) == 13.9


def test_ns_band_is_the_documented_one():
    lo, hi = fx.ns_band()
    assert lo == pytest.approx(0.681, abs=2e-3) and hi == pytest.approx(1.135, abs=2e-3)


def test_fig57_of_one_run_is_one_replicate():
    """One run per optimiser (every profile's fig 5.7) cannot decide, however clear the gap;
    three seeds with the same gap can."""
    c = CLAIMS["fig5.7"]
    assert verdict_of(_fig57(0.05, 5000, None), c) == "INCONCLUSIVE"
    assert _fig57(0.05, 5000, None).evidence.verdict == "PASS"   # the interval alone would
    assert verdict_of(_fig57(0.05, 5000), c) == "PASS"


def test_fig513_needs_no_cap_where_orth_ends_at_zero():
    """Quick's exact-zero case: Orth ends at 0 on every seed. The log2 ratio would be capped at
    -10 on each (a zero-width [-10, -10], refused); Orth - 2 x SGDM is a measurement there, so
    its interval has the width of SGDM's spread over seeds and decides when that is small."""
    c = CLAIMS["fig5.13A"]
    quick = _fig513((0, 0, 0), "exact", sgdm=(7.48, 15.78, 3.2))   # quick's SGDM counts
    ev = quick.evidence
    assert ev.low < ev.estimate < ev.high and ev.estimate == pytest.approx(-2 * 26.46 / 3)
    assert not ev.refusal and verdict_of(quick, c) == "INCONCLUSIVE"   # 3 seeds, wide spread
    assert quick.ours["log2_ratio_per_seed (display only)"] == [-10.0, -10.0, -10.0]
    assert "capped" in quick.detail and "orth_sgdm ends at 0 on 3 of 3 seeds" in quick.detail
    assert verdict_of(_fig513((0, 0, 0), "exact", sgdm=(10, 12, 14)), c) == "FAIL"
    assert "capped" not in _fig513((8, 10, 12), "exact").detail


def test_fig513_with_no_disabled_weights_on_either_side_is_refused():
    """Both counts 0 in every seed: nothing to compare; the zero-width interval is refused."""
    found = _fig513((1, 1, 1), "exact", sgdm=(0, 0, 0))
    assert found.evidence.low == found.evidence.high == 0
    assert "zero-width" in found.evidence.refusal
    assert verdict_of(found, CLAIMS["fig5.13A"]) == "INCONCLUSIVE"


def test_a_conjunction_rests_on_its_weakest_parts_replicates():
    """Every model PASSes on its interval, one of them on one seed: not a PASS of the claim;
    a FAIL from a three-seed part still decides."""
    runs = cells(0.03)
    hits = np.arange(2000) % 20          # one seed's per-example hits: 75 % and 70 %
    runs[("m3", "orth_sgdm")] = [{**run(0.75), "test_correct": hits < 15}]
    runs[("m3", "sgdm")] = [{**run(0.70), "test_correct": hits < 14}]
    found = fx.table53(runs, ["m1", "m2", "m3"]).finding
    assert found.evidence.verdict == "PASS" and found.evidence.replicates == 1
    assert "m3" in found.evidence.method and verdict_of(found, CLAIMS["table5.3"]) == \
        "INCONCLUSIVE"
    runs[("m2", "orth_sgdm")] = [run(0.65 + s) for s in TIGHT]
    assert verdict_of(fx.table53(runs, ["m1", "m2", "m3"]).finding, CLAIMS["table5.3"]) == "FAIL"


def test_most_counts_a_zero_width_part_as_undecided():
    """Table 5.2's parts in whole epochs: equal in every seed is no spread, not a decision."""
    from lalr_core.chapters.ch06_orthogonal_sgdm.verdicts import most, undecided
    from lalr_core.core.results.evidence import Evidence

    flat, real = Evidence(2.0, 2.0, 2.0, n=3), Evidence(2.0, 1.0, 3.0, n=3)
    assert undecided(flat).verdict == "INCONCLUSIVE" and undecided(real) is real
    ev = most({"a": flat, "b": flat, "c": real})
    assert (ev.low, ev.high) == (1.0, 3.0) and ev.claim_verdict == "INCONCLUSIVE"
    assert verdict_of(_table52((4, 4, 4), (2, 2, 2)), CLAIMS["table5.2"]) == "INCONCLUSIVE"


def test_filter_cos_with_one_seed_is_one_replicate():
    one = fx.filter_cos_gap([_cos_records(0.3)], [_cos_records(0.2)], "conv2", "fig5.10A")
    assert one.replicates == 1 and verdict_of(one, CLAIMS["fig5.10A"]) == "INCONCLUSIVE"
