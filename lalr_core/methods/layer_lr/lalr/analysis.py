"""Analyses of LALR runs from their tables (chapter 01: X-L6, X-L7, X-L10, X-L11, X-L13).

Pure functions of two tables a run records:

* ``diag``: the ``"layers"`` table of the ``"layer_diagnostics"`` callback (`diagnostics`):
  ``epoch, position, layer, fro_norm, update_norm, rel_update, eff_rank, mean_sv,
  hist_entropy, mean_cs, grad_norm``, row ``epoch = e`` = the state after ``e`` epochs;
* ``lalr``: LALR's table (``result["callbacks"]["lalr"]``): ``epoch, layer, phase, ...,
  lr_scale``, row ``epoch = e`` = the scales used in 0-based epoch ``e`` (its last row,
  ``epoch = E``, was never used: dropped by the join).

So 0-based epoch ``e`` (phase ``lalr[e].phase``) took the weights from ``diag[e]`` to
``diag[e + 1]``: `epoch_changes` puts ``lr_scale`` of row ``e`` beside the changes
``diag[e + 1] - diag[e]`` and beside ``rel_update`` / ``update_norm`` / ``grad_norm`` of
``diag[e + 1]``. Every function returns a DataFrame or a number; the chapter applies the pass
rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from lalr_core.methods.layer_lr.lalr.schedule import scales

CHANGED = ("eff_rank", "hist_entropy", "mean_cs", "mean_sv", "fro_norm")  # Delta per epoch
CARRIED = ("rel_update", "update_norm", "grad_norm")                      # of the epoch itself


def _need(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"{what} must be a DataFrame, got {type(df).__name__}")
    if missing := [c for c in columns if c not in df.columns]:
        raise ValueError(f"{what} lacks columns {missing}; it has {list(df.columns)}")


def epoch_changes(diag: pd.DataFrame, lalr: pd.DataFrame) -> pd.DataFrame:
    """One row per (0-based epoch ``e``, layer): its phase and scale, and what the epoch did.

    Returns:
        ``epoch, layer, position, phase, lr_scale, d_<c>`` (``diag[e + 1] - diag[e]`` for ``c``
        in ``CHANGED``) and ``rel_update, update_norm, grad_norm`` of ``diag[e + 1]``; only
        the layers both tables have (LALR's ``exclude`` leaves some out of its table).
    """
    _need(diag, ("epoch", "layer", "position", *CHANGED, *CARRIED), "diag")
    _need(lalr, ("epoch", "layer", "phase", "lr_scale"), "lalr")
    before = diag.set_index(["epoch", "layer"])
    after = diag.assign(epoch=diag["epoch"] - 1).set_index(["epoch", "layer"])
    after = after[after.index.get_level_values("epoch") >= 0]
    both = before.index.intersection(after.index)
    out = pd.DataFrame({"position": before.loc[both, "position"]})
    for c in CHANGED:
        out[f"d_{c}"] = after.loc[both, c] - before.loc[both, c]
    for c in CARRIED:
        out[c] = after.loc[both, c]
    scales = lalr.set_index(["epoch", "layer"])[["phase", "lr_scale"]]
    out = scales.join(out, how="inner").reset_index()
    return out.sort_values(["epoch", "position"], kind="stable").reset_index(drop=True)


def tercile_deltas(diag: pd.DataFrame, lalr: pd.DataFrame,
                   metrics: Sequence[str] = ("eff_rank", "hist_entropy", "mean_cs")
                   ) -> pd.DataFrame:
    """X-L7: per epoch, the mean metric change of the top vs the bottom scale tercile.

    The layers of an epoch are ordered by ``lr_scale`` (ties by position); the bottom tercile
    is the first ``k = max(1, L // 3)``, the top the last ``k``.

    Returns:
        ``epoch, phase, k, <m>_top, <m>_bottom, <m>_diff`` (top - bottom of ``d_<m>``) for each
        ``m`` in ``metrics``. The claims read ``eff_rank`` in svd epochs, ``hist_entropy`` in
        ce epochs.
    """
    changes = epoch_changes(diag, lalr)
    rows = []
    for epoch, at in changes.groupby("epoch", sort=True):
        L = len(at)
        if L < 2:
            raise ValueError(f"epoch {epoch}: terciles need >= 2 layers, got {L}")
        k = max(1, L // 3)
        ranked = at.sort_values(["lr_scale", "position"], kind="stable")
        low, high = ranked.iloc[:k], ranked.iloc[-k:]
        row = {"epoch": int(epoch), "phase": at["phase"].iloc[0], "k": k}
        for m in metrics:
            row[f"{m}_top"] = float(high[f"d_{m}"].mean())
            row[f"{m}_bottom"] = float(low[f"d_{m}"].mean())
            row[f"{m}_diff"] = row[f"{m}_top"] - row[f"{m}_bottom"]
        rows.append(row)
    return pd.DataFrame(rows)


def mean_changes(diag: pd.DataFrame,
                 metrics: Sequence[str] = ("eff_rank", "hist_entropy", "mean_cs")
                 ) -> pd.DataFrame:
    """Per 0-based epoch ``e``, the change of the layer-mean of each metric over the epoch
    (``mean_l diag[e + 1] - mean_l diag[e]``): e.g. X-L7's "mean pairwise CS decreases more
    than under U" compares two runs' ``mean_cs`` column at the cs epochs.

    Returns:
        ``epoch`` and one column per metric.
    """
    _need(diag, ("epoch", *metrics), "diag")
    means = diag.groupby("epoch", sort=True)[list(metrics)].mean()
    out = means.diff().shift(-1).iloc[:-1]
    out.index = out.index.astype(int)
    return out.reset_index()


def update_scale_spearman(diag: pd.DataFrame, lalr: pd.DataFrame,
                          column: str = "rel_update") -> pd.DataFrame:
    """X-L11: Spearman's rho between ``||dW||_F / ||W||_F`` and ``lr_scale``, per epoch.

    Returns:
        ``epoch, phase, rho, p, n``; ``rho`` is NaN where the scales (or the updates) are all
        equal, e.g. a uniform run.
    """
    changes = epoch_changes(diag, lalr)
    rows = []
    for epoch, at in changes.groupby("epoch", sort=True):
        x, y = at[column].to_numpy(float), at["lr_scale"].to_numpy(float)
        if np.ptp(x) == 0 or np.ptp(y) == 0 or not np.isfinite([x, y]).all():
            rho = p = np.nan
        else:
            res = spearmanr(x, y)
            rho, p = float(res.statistic), float(res.pvalue)
        rows.append({"epoch": int(epoch), "phase": at["phase"].iloc[0], "rho": rho, "p": p,
                     "n": len(at)})
    return pd.DataFrame(rows)


def _matching(layers: Sequence[str], patterns: Sequence[str], what: str) -> list[str]:
    if isinstance(patterns, str):
        raise ValueError(f"{what} must be a list of layer-name patterns, got {patterns!r}")
    chosen = [n for n in layers if any(fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise ValueError(f"{what} patterns {list(patterns)} match no layer of {list(layers)}")
    return chosen


def tinytf_early_late(n_blocks: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """X-L13's layer groups in a TinyTF classifier: early = the embeddings and block 0, late =
    the last block (shell patterns for `early_late_ratio`)."""
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int) or n_blocks < 2:
        raise ValueError(f"n_blocks must be an int >= 2 (early and late differ), got {n_blocks!r}")
    return (("encoder.tok_emb", "encoder.pos_emb", "encoder.blocks.0.*"),
            (f"encoder.blocks.{n_blocks - 1}.*",))


def early_late_ratio(diag: pd.DataFrame, early: Sequence[str], late: Sequence[str],
                     column: str = "update_norm") -> float:
    """``mean(column over early layers) / mean(column over late layers)``, epochs >= 1.

    Means over every (epoch, layer) of the group; ``column`` ``"update_norm"`` (X-L13's update
    norm per epoch) or ``"grad_norm"``.
    """
    _need(diag, ("epoch", "layer", column), "diag")
    trained = diag[diag["epoch"] >= 1]
    layers = list(dict.fromkeys(trained["layer"]))
    groups = [trained[trained["layer"].isin(_matching(layers, pats, what))][column].mean()
              for pats, what in ((early, "early"), (late, "late"))]
    return float(groups[0] / groups[1])


def ratio_of_ratios(diag_lalr: pd.DataFrame, diag_uniform: pd.DataFrame,
                    early: Sequence[str], late: Sequence[str],
                    column: str = "update_norm") -> float:
    """X-L13: ``early_late_ratio(LALR run) / early_late_ratio(uniform run)`` (> 1: LALR moves
    the early layers relatively more)."""
    return early_late_ratio(diag_lalr, early, late, column) / \
        early_late_ratio(diag_uniform, early, late, column)


def scale_above_median(lalr: pd.DataFrame, layers: Sequence[str]) -> float:
    """X-L13's condition "early layers had above-median scales": the mean over the trained
    epochs of (mean ``lr_scale`` of the matched layers - median ``lr_scale`` of all layers);
    > 0 means above the median. LALR's extra last row (never used) is left out."""
    _need(lalr, ("epoch", "layer", "lr_scale"), "lalr")
    used = lalr[lalr["epoch"] < lalr["epoch"].max()] if lalr["epoch"].nunique() > 1 else lalr
    chosen = _matching(list(dict.fromkeys(used["layer"])), layers, "layers")
    excess = [at[at["layer"].isin(chosen)]["lr_scale"].mean() - at["lr_scale"].median()
              for _, at in used.groupby("epoch", sort=True)]
    return float(np.mean(excess))


def probe_gap_slope(epochs: pd.DataFrame, column: str = "probe_gap") -> float:
    """X-L10: least-squares slope of ``G(t)`` (or ``probe_min``) against the epoch, per epoch."""
    _need(epochs, ("epoch", column), "epochs")
    ok = epochs[np.isfinite(epochs[column])]
    if len(ok) < 2:
        raise ValueError(f"need >= 2 finite {column} values for a slope, got {len(ok)}")
    return float(np.polyfit(ok["epoch"].to_numpy(float), ok[column].to_numpy(float), 1)[0])


def metric_spread(lalr: pd.DataFrame) -> pd.DataFrame:
    """X-L10's ``G_M(t)`` and X-L7's L-C28: per row epoch ``e`` of LALR's table, the spread
    (max - min over layers) of each raw metric, and of the metric of ``e``'s phase.

    Returns:
        ``epoch, phase, spread_svd, spread_ce, spread_cs, spread_phase``.
    """
    _need(lalr, ("epoch", "phase", "svd", "ce", "cs"), "lalr")
    g = lalr.groupby("epoch", sort=True)
    out = pd.DataFrame({f"spread_{m}": g[m].max() - g[m].min() for m in ("svd", "ce", "cs")})
    out.insert(0, "phase", g["phase"].first())
    out["spread_phase"] = [out.loc[e, f"spread_{p}"] for e, p in out["phase"].items()]
    return out.reset_index()


def spread_loss_changes(lalr: pd.DataFrame, epochs: pd.DataFrame) -> pd.DataFrame:
    """L-C28's pairs: per 0-based epoch ``e`` (phase ``p``), the change of the spread of metric
    ``p`` over the epoch and the decrease of the full train loss ``J(e) - J(e + 1)``.

    Args:
        lalr: LALR's table (every metric is recomputed each epoch: ``recompute="every_epoch"``).
        epochs: the diagnostics' ``"epochs"`` table (``full_train_loss``).

    Returns:
        ``epoch, phase, spread_change, loss_decrease`` (pool runs, then `scipy.stats.spearmanr`).
    """
    _need(epochs, ("epoch", "full_train_loss"), "epochs")
    spread = metric_spread(lalr).set_index("epoch")
    J = epochs.set_index("epoch")["full_train_loss"]
    rows = []
    for e, p in spread["phase"].items():
        if e + 1 in spread.index and e in J.index and e + 1 in J.index:
            col = f"spread_{p}"
            rows.append({"epoch": int(e), "phase": p,
                         "spread_change": spread.loc[e + 1, col] - spread.loc[e, col],
                         "loss_decrease": J[e] - J[e + 1]})
    return pd.DataFrame(rows, columns=["epoch", "phase", "spread_change", "loss_decrease"])


def loss_decreases(epochs: pd.DataFrame) -> pd.DataFrame:
    """X-L6: ``Delta J`` of each 0-based epoch ``e``, ``J(e) - J(e + 1)`` of the full train loss.

    Returns:
        ``epoch, loss_before, loss_after, decrease``.
    """
    _need(epochs, ("epoch", "full_train_loss"), "epochs")
    J = epochs.sort_values("epoch").set_index("epoch")["full_train_loss"]
    rows = [{"epoch": int(e), "loss_before": J[e], "loss_after": J[e + 1],
             "decrease": J[e] - J[e + 1]} for e in J.index if e + 1 in J.index]
    return pd.DataFrame(rows, columns=["epoch", "loss_before", "loss_after", "decrease"])


RAW_COLUMNS = {"svd": "raw_svd", "ce": "raw_ce", "cs": "mean_cs"}   # diag column of each metric


def uniform_table(diag: pd.DataFrame, order: Sequence[str] = ("svd", "ce", "cs"),
                  cs_direction: str = "code", s_min: float = 0.0) -> pd.DataFrame:
    """The scales LALR *would* have set in a run trained without it (a uniform-lr run, U),
    from that run's own weights: chapter 01's null for X-L7 (L-C10, L-C11) and X-L12 (L-C22).

    Row ``epoch = e`` of ``diag`` is the state after ``e`` epochs; LALR's rule
    (`schedule.scales`, phase ``order[e % len(order)]``) applied to its raw metrics
    (``raw_svd``, ``raw_ce``, ``mean_cs``) gives the scales of 0-based epoch ``e``, exactly
    as LALR's callback table would, but the run trained every layer at the same lr. A claim
    that LALR's top-scale layers change more than its bottom ones must beat this table's
    terciles, whose layers differ only in where LALR's metrics rank them.

    Returns:
        LALR's table layout: ``epoch, layer, phase, svd, ce, cs, u, lr_scale``.
    """
    _need(diag, ("epoch", "layer", "position", *RAW_COLUMNS.values()), "diag")
    rows = []
    for epoch, at in diag.sort_values(["epoch", "position"]).groupby("epoch", sort=True):
        phase = order[int(epoch) % len(order)]
        raw = {m: at[c].to_numpy(float) for m, c in RAW_COLUMNS.items()}
        u, s = scales(raw, phase, cs_direction, s_min)
        rows.append(pd.DataFrame({"epoch": int(epoch), "layer": at["layer"].to_numpy(),
                                  "phase": phase, **raw, "u": u, "lr_scale": s}))
    return pd.concat(rows, ignore_index=True)
