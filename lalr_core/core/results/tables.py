"""Tables of finished runs: one row per run, the scaffold every chapter's summaries start from.

Kept out of `lalr_core.core.runs.units` on purpose: a training unit's cache key covers the code of
its module closure, and a change to how results are tabulated must not invalidate any run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

METRICS = ("train_loss", "train_acc", "val_loss", "val_acc", "test_loss", "test_acc")


def run_table(configs: Sequence[Any], results: Sequence[Mapping],
              describe: Callable[[Any], Mapping[str, Any]], *,
              metrics: Sequence[str] = ("train_acc", "test_acc"),
              percent: bool = False) -> pd.DataFrame:
    """One row per run: ``describe(config)``'s columns, the final ``metrics``, ``diverged``
    and ``wall_time_s``, in that order.

    Args:
        configs: what each run was (``RunConfig``s, or a chapter's own run specs).
        results: `lalr_core.core.runs.units.train_runs`'s results, one per config.
        describe: config -> its label columns (model, seed, the chapter's variant, ...).
        metrics: keys of ``result["final"]``; a metric a run did not record is NaN.
        percent: accuracies (``*_acc``) in percent rather than as fractions.

    Raises:
        ValueError: if there are not as many results as configs.
    """
    if len(configs) != len(results):
        raise ValueError(f"{len(results)} results for {len(configs)} configs")
    rows = []
    for cfg, res in zip(configs, results):
        final = res["final"]
        row = dict(describe(cfg))
        for m in metrics:
            scale = 100 if percent and m.endswith("_acc") else 1
            row[m] = scale * final.get(m, np.nan)
        row["diverged"] = bool(res["diverged"])
        row["wall_time_s"] = res["wall_time_s"]
        rows.append(row)
    return pd.DataFrame(rows)
