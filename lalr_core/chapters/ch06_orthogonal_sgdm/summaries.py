"""Chapter 06's summaries: run tables, mean +- standard error, epochs to a mark, running means,
and the source's tables beside ours."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from lalr_core.chapters.ch06_orthogonal_sgdm.runs import VARIANTS
from lalr_core.core.results import tables
from lalr_core.core.loop.config import RunConfig


def variant_of(cfg: RunConfig) -> str:
    """The ``VARIANTS`` name of an SGDM-family config (``"sgdm"``, ``"orth_sgdm"``, ...)."""
    for name, changes in VARIANTS.items():
        if cfg.methods == changes.get("methods", ()):
            return name
    gt = cfg.method("grad_transform")
    return "none/svd/all" if gt is None else f"{gt.transform}/{gt.method}/{gt.layers}"


def run_table(configs: list[RunConfig], results: list[dict], **labels) -> pd.DataFrame:
    """One row per run: model, variant, optimizer, lr, seed, batch size, ``labels`` (extra
    constant columns), every final train/val/test loss and accuracy (fractions), diverged,
    wall time.

    A diverged run's accuracies are recorded as 0 (which reproduces the source's "0.00 +- 0.00" cells).
    """
    df = tables.run_table(configs, results, lambda cfg: {
        "model": cfg.model, "variant": variant_of(cfg), "optimizer": cfg.optimizer,
        "lr": cfg.lr, "seed": cfg.seed, "batch_size": cfg.batch_size, **labels},
        metrics=tables.METRICS)
    df.loc[df["diverged"], ["test_acc", "val_acc"]] = 0.0
    df.loc[df["diverged"], ["test_loss", "val_loss"]] = np.nan
    return df


def mean_se(df: pd.DataFrame, by: list[str], cols=("test_loss", "test_acc")) -> pd.DataFrame:
    """Mean and standard error (sample std / sqrt(n), our reading of the source's SE) of ``cols`` per group;
    accuracies in percent."""
    out = []
    for key, g in df.groupby(by, sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for c in cols:
            x = g[c].to_numpy(float) * (100 if c.endswith("acc") else 1)
            x = x[np.isfinite(x)]
            row[f"{c}_mean"] = x.mean() if len(x) else np.nan
            row[f"{c}_se"] = x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0
        row["runs"], row["diverged"] = len(g), int(g["diverged"].sum())
        out.append(row)
    return pd.DataFrame(out)


def epochs_to_reach(history: pd.DataFrame, threshold_pct: float) -> float:
    """First epoch (1-indexed) whose validation accuracy is >= ``threshold_pct`` percent, or
    NaN if never (table 5.2's "--")."""
    hit = history.loc[history["val_acc"] * 100 >= threshold_pct, "epoch"]
    return float(hit.iloc[0]) if len(hit) else np.nan


def running_mean(x, n: int) -> np.ndarray:
    """Trailing mean over the last ``n`` values (fewer at the start), fig 5.13's N = 50."""
    x = np.asarray(x, dtype=float)
    c = np.concatenate([[0.0], np.cumsum(x)])
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(idx - n, 0)
    return (c[idx] - c[lo]) / (idx - lo)


# ----------------------------------------------------------------------------- source numbers
def read_source(table: str, root=None) -> pd.DataFrame:
    """The source's table ``"5.1"`` ... ``"5.6"`` from ``data/reference/ch06_table<N>.csv``,
    with ``opt`` renamed ``variant`` and table 5.6's long form pivoted to ``<metric>_mean/_se``."""
    from lalr_core.core.results.provenance import repo_root

    path = (root or repo_root() / "data" / "reference") / f"ch06_table{table}.csv"
    if not path.is_file():
        raise ValueError(f"no source table {table!r} at {path}")
    df = pd.read_csv(path).rename(columns={"opt": "variant"})
    if table == "5.6":
        df = df.pivot_table(index=["model", "variant"], columns="metric", values=["mean", "se"],
                            sort=False)
        df.columns = [f"{metric}_{stat}" for stat, metric in df.columns]
        df = df.reset_index()
    return df


def beside_source(ours: pd.DataFrame, source: pd.DataFrame, on: list[str],
                  analogue: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Our rows with the source's numbers for the same keys as ``source_*`` columns.

    ``analogue`` maps a reduced model to the source model it stands for (quick profile:
    ResNet-8-FM for ResNet-20); models without a counterpart get empty source cells.
    """
    left = ours.copy()
    if "model" in on:
        left["source_model"] = left["model"].map(lambda m: (analogue or {}).get(m, m))
    keys = ["source_model" if k == "model" else k for k in on]
    right = source.rename(columns={"model": "source_model"}) if "model" in on else source
    right = right.rename(columns={c: f"source_{c}" for c in right.columns if c not in keys})
    return left.merge(right, on=keys, how="left")
