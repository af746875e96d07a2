"""Chapter 01's mechanism claims, from the per-layer diagnostics of its runs: one number per
run (or per seed), then the interval a verdict rests on.

Experiments (ours) and what they read:

* X-L6 (L-C9, L-C26, L-C29): the full train loss ``J`` after every epoch
  (``layer_diagnostics`` ``"epochs"``) of U and of the phase-order runs of X-L5, which all
  start from the same pretrained state with the same head and data order (one seed);
* X-L7 (L-C10, L-C11, L-C12, L-C28), X-L11 (L-C21), X-L13 (L-C23): the per-layer weight
  statistics (``"layers"``) joined with LALR's table (`lalr_core.methods.layer_lr.lalr.analysis`);
* X-L10 (L-C19, L-C20, L-C25): the ridge probes of the deeper TinyTF (``"probes"``);
* X-L14 (L-C24): final validation accuracy of the perturbed starts.

Losses are in nats, accuracies in percentage points. Every function takes run results (the
dicts `lalr_core.core.runs.units.train_runs` returns) and returns numbers or `Evidence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lalr_core.chapters.ch01_lalr.verdicts import curve, final
from lalr_core.methods.layer_lr.lalr.analysis import (
    loss_decreases,
    mean_changes,
    ratio_of_ratios,
    scale_above_median,
    spread_loss_changes,
    tercile_deltas,
    update_scale_spearman,
)


def diagnostics(res: Mapping, table: str = "layers") -> pd.DataFrame:
    """One table of a run's ``layer_diagnostics`` record (``"layers"``, ``"epochs"``,
    ``"probes"``).

    Raises:
        ValueError: the run was trained without the callback.
    """
    rec = res["callbacks"].get("layer_diagnostics")
    if rec is None:
        raise ValueError("the run has no 'layer_diagnostics' record: train it with the callback")
    return rec[table]


def decreases(res: Mapping) -> np.ndarray:
    """``Delta J`` of each epoch (``J(e) - J(e + 1)``, full train loss, nats), epochs 0..E-1."""
    return loss_decreases(diagnostics(res, "epochs"))["decrease"].to_numpy(float)


# ----------------------------------------------------------------------------- X-L6
# (quantity, order run, 0-based epoch): the one-epoch decrease each term of B.3.2.4 reads
GAIN_TERMS = {
    "svd": ("svd>ce>cs", 0), "ce": ("ce>svd>cs", 0), "cs": ("cs>svd>ce", 0),
    "ce|svd": ("svd>ce>cs", 1), "cs|svd": ("svd>cs>ce", 1), "cs|svd,ce": ("svd>ce>cs", 2),
    "u": ("U", 0), "u|u": ("U", 1), "u|u,u": ("U", 2),
}
# B.3.2.4's three component inequalities: (left, right, the uniform control's left, right)
INEQUALITIES = {
    "ΔJ_CE(SVD) > ΔJ_CE": ("ce|svd", "ce", "u|u", "u"),
    "ΔJ_CS(SVD,CE) > ΔJ_CS(SVD)": ("cs|svd,ce", "cs|svd", "u|u,u", "u|u"),
    "ΔJ_CS(SVD) > ΔJ_CS": ("cs|svd", "cs", "u|u", "u"),
}


def one_epoch_gains(runs: Mapping[str, Sequence[Mapping]]) -> pd.DataFrame:
    """X-L6's terms per seed: ``runs`` maps ``"U"`` and the order labels (``"svd>ce>cs"``, ...)
    to their runs by seed. Columns `GAIN_TERMS` (nats), one row per seed."""
    n = min(len(runs[arm]) for arm, _ in GAIN_TERMS.values())
    return pd.DataFrame({term: [decreases(runs[arm][i])[epoch] for i in range(n)]
                         for term, (arm, epoch) in GAIN_TERMS.items()})


def interaction_margins(gains: pd.DataFrame, adjusted: bool = True) -> pd.DataFrame:
    """Per seed, left minus right of each B.3.2.4 inequality and of the sum inequality;
    ``adjusted``: minus the same difference of the uniform control (diminishing returns
    shrink a later epoch's decrease in any run; hence "relative to the uniform
    control")."""
    out = {}
    for name, (left, right, u_left, u_right) in INEQUALITIES.items():
        out[name] = gains[left] - gains[right]
        if adjusted:
            out[name] -= gains[u_left] - gains[u_right]
    total = gains["ce|svd"] + gains["cs|svd,ce"] - gains["ce"] - gains["cs"]
    if adjusted:
        total -= gains["u|u"] + gains["u|u,u"] - 2 * gains["u"]
    out["sequence > isolated sum"] = total
    return pd.DataFrame(out)


def phase_slowdown(rec_runs: Sequence[Mapping], period: int = 3) -> pd.DataFrame:
    """L-C26 per seed: each phase's one-epoch decrease in the first cycle minus the second
    (``Delta J(e) - Delta J(e + period)``, nats; > 0 = the phase gains less later)."""
    rows = []
    for res in rec_runs:
        d = decreases(res)
        rows.append({p: d[k] - d[k + period] for k, p in enumerate(("svd", "ce", "cs"))})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- X-L7, X-L11
def tercile_gain(rec_runs: Sequence[Mapping], phase: str, metric: str) -> np.ndarray:
    """Per run: mean over ``phase``'s epochs of (top minus bottom scale tercile) of the
    per-epoch change of ``metric`` (`analysis.tercile_deltas`)."""
    out = []
    for res in rec_runs:
        t = tercile_deltas(diagnostics(res), res["callbacks"]["lalr"], metrics=(metric,))
        out.append(float(t.loc[t["phase"] == phase, f"{metric}_diff"].mean()))
    return np.array(out)


def phase_mean_change(runs: Sequence[Mapping], epochs: Sequence[int],
                      metric: str = "mean_cs") -> np.ndarray:
    """Per run: the layer-mean change of ``metric`` summed over ``epochs`` (0-based)."""
    return np.array([float(mean_changes(diagnostics(r), (metric,)).set_index("epoch")
                           .loc[list(epochs), metric].sum()) for r in runs])


def spread_loss_pairs(rec_runs: Sequence[Mapping]) -> pd.DataFrame:
    """L-C28's pairs pooled over runs: change of the phase metric's spread over an epoch and
    that epoch's decrease of the full train loss."""
    return pd.concat([spread_loss_changes(r["callbacks"]["lalr"], diagnostics(r, "epochs"))
                      for r in rec_runs], ignore_index=True)


def update_scale_rho(rec_runs: Sequence[Mapping]) -> np.ndarray:
    """X-L11 per run: mean over epochs of Spearman(||dW||/||W||, scale) across layers."""
    return np.array([float(update_scale_spearman(diagnostics(r), r["callbacks"]["lalr"])
                           ["rho"].mean()) for r in rec_runs])


# ----------------------------------------------------------------------------- X-L13
def early_amplification(rec_runs: Sequence[Mapping], u_runs: Sequence[Mapping],
                        early: Sequence[str], late: Sequence[str]) -> pd.DataFrame:
    """Per seed: ``ratio``, (early / late update norm) of LALR-REC over U's, and
    ``scale_excess``, the early layers' mean scale minus the median scale (> 0: above)."""
    return pd.DataFrame([{
        "ratio": ratio_of_ratios(diagnostics(r), diagnostics(u), early, late),
        "grad_ratio": ratio_of_ratios(diagnostics(r), diagnostics(u), early, late, "grad_norm"),
        "scale_excess": scale_above_median(r["callbacks"]["lalr"], early)}
        for r, u in zip(rec_runs, u_runs, strict=True)])


# ----------------------------------------------------------------------------- X-L10
def block_probes(res: Mapping) -> pd.DataFrame:
    """Per epoch: ``gap`` (max - min probe accuracy over the blocks, points >= 1),
    ``worst`` (their min), ``gap_all`` (the gap G with point 0, the embedding, whose
    [CLS] state is the same for every sequence)."""
    p = diagnostics(res, "probes")
    blocks = p[p["point"] >= 1].groupby("epoch")["acc"]
    every = p.groupby("epoch")["acc"]
    return pd.DataFrame({"gap": blocks.max() - blocks.min(), "worst": blocks.min(),
                         "gap_all": every.max() - every.min()}).reset_index()


def probe_slope(res: Mapping, column: str) -> float:
    """Least-squares slope of `block_probes` ``column`` over the epochs (per epoch)."""
    t = block_probes(res)
    return float(np.polyfit(t["epoch"].to_numpy(float), t[column].to_numpy(float), 1)[0])


def gap_accuracy_pairs(runs: Sequence[Mapping]) -> pd.DataFrame:
    """L-C20's pairs pooled over runs: per epoch ``e >= 1``, the change of the block gap and
    of the validation accuracy from epoch ``e`` to ``e + 1``."""
    rows = []
    for res in runs:
        gap = block_probes(res).set_index("epoch")["gap"]
        acc = curve(res)                                   # epochs 1..E
        for e in range(1, len(acc)):
            rows.append({"d_gap": gap[e + 1] - gap[e], "d_val_acc": acc[e] - acc[e - 1]})
    return pd.DataFrame(rows, columns=["d_gap", "d_val_acc"])


# ----------------------------------------------------------------------------- X-L14
def perturbation_spread(runs: Mapping[str, Sequence[Mapping]]) -> np.ndarray:
    """Per seed: the standard deviation (ddof 1) over the perturbations (``runs``: kind ->
    runs by seed) of the final validation accuracy, in points."""
    acc = np.array([[final(r) for r in by_seed] for by_seed in runs.values()])  # kinds x seeds
    return 100 * acc.std(axis=0, ddof=1)
