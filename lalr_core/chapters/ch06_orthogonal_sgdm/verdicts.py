"""Chapter 06's verdicts: intervals for comparisons of runs, and how a claim about several
models (cells, checkpoints) combines their intervals.

Every comparison of accuracies or losses between runs is an `Evidence`
(`lalr_core.core.results.evidence`): over seeds, a paired t interval (runs of the same seed share the
initialisation and the data order); with one seed, the paired bootstrap over the test
examples when the runs recorded ``test_correct``, else the conservative normal interval of
two accuracies. A claim over several parts combines their verdicts:

* ``every`` ("on every model"): PASS only if every part PASSes, FAIL if any part FAILs, else
  INCONCLUSIVE. The combined record carries the interval of the part that decides it (the
  worst FAIL, else the least certain INCONCLUSIVE, else the narrowest PASS margin).
* ``most`` ("in most cells", "at most checkpoints"): a count. PASS if more than half of the
  parts PASS; FAIL if even counting every INCONCLUSIVE part for the claim, no more than half
  could hold; else INCONCLUSIVE. Its interval is ``[parts decided for, decided for +
  undecided]`` (in parts), judged against half of them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from lalr_core.core.results.evidence import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    Evidence,
    at_least,
    bootstrap_difference,
    every,  # noqa: F401  (re-exported: the chapter's "on every part" rule)
    paired_difference,
    texts,  # noqa: F401
)
from lalr_core.core.models.networks import build_model

IMAGENET_VAL_IMAGES = 50_000  # ImageNet's validation split, behind fig 5.7's accuracies
LOG2_RATIO_CAP = 10.0         # |log2 ratio| cap when one count is 0 (fig 5.13)


# ----------------------------------------------------------------------------- one comparison
def run_value(res: Mapping, value: str | Callable = "test_acc") -> float:
    """A run's number: ``res["final"][value]`` (a diverged run's accuracy is 0, its loss
    NaN, as the source's "0.00 +- 0.00" cells suggest), or ``value(res)`` when ``value`` is a function."""
    if callable(value):
        return float(value(res))
    if res["diverged"]:
        return 0.0 if value.endswith("_acc") else math.nan
    return float(res["final"].get(value, math.nan))


def correct_or_wrong(res: Mapping, n: int) -> np.ndarray:
    """A run's per-example test correctness; a diverged run (None) got every example wrong."""
    hits = res.get("test_correct")
    return np.zeros(n, dtype=bool) if hits is None else np.asarray(hits, dtype=bool)


def run_difference(runs_a: Sequence[Mapping], runs_b: Sequence[Mapping],
                   value: str | Callable = "test_acc", *, threshold: float = 0.0,
                   side: str = "greater", scale: float = 100.0,
                   n_test: int | None = None) -> Evidence:
    """Evidence on ``mean(value(a) - value(b))``, ``runs_a[i]`` and ``runs_b[i]`` being the
    same seed's runs.

    Two or more seeds: paired t over seeds. One seed and ``value == "test_acc"`` with the
    per-example hits recorded: paired bootstrap over the test examples. One seed otherwise:
    the normal interval of two accuracies on ``n_test`` examples (values must be fractions),
    or no interval (INCONCLUSIVE) without ``n_test``.

    Args:
        runs_a, runs_b: results (`train_runs`), in the same seed order.
        value: a ``final`` metric name or a function of a result.
        threshold, side: the claim (`Evidence`), in scaled units.
        scale: e.g. 100 for accuracies in percentage points, 1 for losses and epochs.
        n_test: examples behind a one-seed accuracy (validation or test).

    Raises:
        ValueError: unequal or empty run lists.
    """
    if len(runs_a) != len(runs_b) or not runs_a:
        raise ValueError(f"need the same seeds on both sides, got {len(runs_a)} and "
                         f"{len(runs_b)} runs")
    if len(runs_a) == 1 and value == "test_acc":
        a, b = runs_a[0], runs_b[0]
        n = next((len(r["test_correct"]) for r in (a, b) if r.get("test_correct") is not None),
                 0)
        if n:
            return bootstrap_difference(correct_or_wrong(a, n), correct_or_wrong(b, n),
                                        threshold=threshold, side=side, scale=scale)
    va = [run_value(r, value) for r in runs_a]
    vb = [run_value(r, value) for r in runs_b]
    return paired_difference(va, vb, threshold=threshold, side=side, n_test=n_test, scale=scale)


def results_by(configs, results, key: Callable) -> dict:
    """``key(config) -> [result, ...]`` in seed order (the pairing `run_difference` needs)."""
    out: dict = {}
    for cfg, res in sorted(zip(configs, results), key=lambda cr: cr[0].seed):
        out.setdefault(key(cfg), []).append(res)
    return out


def epochs_to_mark(res: Mapping, mark_pct: float) -> float:
    """First epoch (1-indexed) whose validation accuracy is >= ``mark_pct`` percent; a run
    that never gets there counts as its epochs + 1 (a lower bound, so "SGDM never got there"
    understates Orth's lead, never overstates it). Table 5.2, fig 5.3."""
    h = res["history"]
    hit = h.loc[h["val_acc"] * 100 >= mark_pct, "epoch"]
    return float(hit.iloc[0]) if len(hit) else float(len(h) + 1)


def slope(x, y, per: float = 1.0) -> float:
    """Least-squares slope of ``y`` against ``x``, per ``per`` units of ``x``."""
    return float(np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)[0] * per)


def log2_ratio(a: float, b: float) -> float:
    """``log2(a / b)`` of two counts, capped at +-``LOG2_RATIO_CAP`` when one is 0."""
    if a <= 0 and b <= 0:
        return 0.0
    if a <= 0 or b <= 0:
        return LOG2_RATIO_CAP if a > 0 else -LOG2_RATIO_CAP
    return float(np.clip(np.log2(a / b), -LOG2_RATIO_CAP, LOG2_RATIO_CAP))


def bootstrap_range_difference(correct_base: np.ndarray, correct_orth: np.ndarray, *,
                               scale: float = 100.0, resamples: int = BOOTSTRAP_RESAMPLES,
                               seed: int = 0) -> Evidence:
    """Evidence that the accuracy range (max - min) over a grid of runs is narrower with
    orthogonalisation: ``range(base) - range(orth) > 0``, one seed per cell (table 5.4).

    Paired bootstrap over the test examples (the runs share them): resample examples, recompute
    every cell's accuracy and both ranges; percentile interval.

    Args:
        correct_base, correct_orth: `[cells, n_test]` per-example hits, same cell order.
    """
    base, orth = np.asarray(correct_base, float), np.asarray(correct_orth, float)
    if base.shape != orth.shape or base.ndim != 2:
        raise ValueError(f"need two [cells, n_test] arrays of one shape, got {base.shape} "
                         f"and {orth.shape}")
    both = np.concatenate([base, orth])          # (2 cells, n)
    cells, n = base.shape[0], base.shape[1]
    rng = np.random.default_rng(seed)
    diffs = np.empty(resamples)
    for start in range(0, resamples, 64):
        stop = min(start + 64, resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        acc = both[:, idx].mean(axis=2)          # (2 cells, B)
        diffs[start:stop] = np.ptp(acc[:cells], axis=0) - np.ptp(acc[cells:], axis=0)
    est = float(np.ptp(base.mean(1)) - np.ptp(orth.mean(1)))
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    return Evidence(scale * est, scale * min(float(low), est), scale * max(float(high), est),
                    0.0, "greater", 1, n, f"one seed: paired bootstrap over {n} test examples")


# ----------------------------------------------------------------------------- combining
def most(parts: Mapping[str, Evidence]) -> Evidence:
    """The claim holds for more than half of the parts (`evidence.at_least`; its replicates:
    the fewest of the decided parts'). A part with a zero-width interval (a degenerate
    statistic, e.g. whole epochs equal in every seed) counts as undecided (`undecided`)."""
    if not parts:
        raise ValueError("most() needs at least one part")
    return at_least({k: undecided(ev) for k, ev in parts.items()}, len(parts) // 2 + 1)


def undecided(ev: Evidence) -> Evidence:
    """``ev``, or, where its interval has zero width (finite, ``low == high``: no spread
    measured, which `Evidence.refusal` refuses), the same estimate without an interval
    (INCONCLUSIVE), so that a count of parts does not count it as decided."""
    if not (ev.low == ev.high and math.isfinite(ev.low)) or ev.unit == "part":
        return ev
    return dataclasses.replace(ev, low=-math.inf, high=math.inf,
                               method=f"{ev.method}; zero-width interval (no spread): undecided")


# ----------------------------------------------------------------------------- source beside ours
def vs_source(table: pd.DataFrame, ours: str, source: str, profile: str) -> pd.DataFrame:
    """Add ``<ours>_minus_source`` and, at the paper profile only, ``<ours>_within_source_se``:
    whether our mean lies in the source's reported spread, ``source mean +- source SE``.

    At the reduced profiles the models, data and epochs differ, so only the difference is
    shown (a spread test would compare different experiments).

    Args:
        table: with columns ``ours`` and ``source`` (and ``source``'s ``_mean`` -> ``_se``
            partner when it is a mean, e.g. ``source_test_acc_mean`` / ``source_test_acc_se``).
        ours, source: column names.
        profile: the notebook's profile.
    """
    out = table.copy()
    out[f"{ours}_minus_source"] = out[ours] - out[source]
    if profile == "paper":
        se_col = source[:-len("_mean")] + "_se" if source.endswith("_mean") else None
        se = out[se_col].fillna(0.0) if se_col in out else 0.0
        inside = (out[ours] - out[source]).abs() <= se
        out[f"{ours}_within_source_se"] = inside.where(out[source].notna())
    return out


# ----------------------------------------------------------------------------- models
@functools.cache
def has_batch_norm(model: str) -> bool:
    """Whether ``model`` has batch norm: then a conv's weight gradient is almost never exactly
    zero (BN re-centres every channel over the batch), so fig 5.13's exact-zero count cannot
    show temporarily disabled parameters. Built on the meta device (no memory)."""
    with torch.device("meta"):
        return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                   for m in build_model(model).modules())


def grid_range_difference(base_cells: Sequence[Sequence[Mapping]],
                          orth_cells: Sequence[Sequence[Mapping]], *,
                          scale: float = 100.0) -> Evidence:
    """Evidence that the test-accuracy range (max - min over a grid's cells) is narrower with
    orthogonalisation: ``range(base) - range(orth) > 0`` (table 5.4, "survive a wider range of
    hyper-parameter values"). A diverged run counts 0 %.

    Two or more seeds per cell: each seed's two ranges, paired t over seeds. One seed: the
    paired bootstrap over the test examples (`bootstrap_range_difference`).

    Args:
        base_cells, orth_cells: per grid cell (same order), the results of each seed.
    """
    if len(base_cells) != len(orth_cells) or not base_cells:
        raise ValueError(f"need the same non-empty grid on both sides, got {len(base_cells)} "
                         f"and {len(orth_cells)} cells")
    seeds = min(len(c) for c in (*base_cells, *orth_cells))
    if seeds >= 2:
        rng = [[np.ptp([run_value(cell[k]) for cell in cells]) for k in range(seeds)]
               for cells in (base_cells, orth_cells)]
        return paired_difference(rng[0], rng[1], scale=scale)
    n = next((len(r["test_correct"]) for cells in (base_cells, orth_cells) for c in cells
              for r in c if r.get("test_correct") is not None), 0)
    if not n:
        return Evidence(math.nan, math.nan, math.nan, method="no per-example test hits")
    hits = [np.stack([correct_or_wrong(c[0], n) for c in cells])
            for cells in (base_cells, orth_cells)]
    return bootstrap_range_difference(hits[0], hits[1], scale=scale)


def centre_shift(values) -> float:
    """How far the per-batch centre of a per-filter cosine drifts from 0, in units of its own
    sampling noise: ``sqrt(mean_t z_t**2)`` with ``z_t = mean_t / (sd_t / sqrt(N))`` over the
    ``N`` filters of batch ``t``. About 1 when the values are zero-mean noise; larger when the
    distribution shifts (appendix I's "distributional shifts" of phi(pi)).

    Args:
        values: `[batches, filters]`.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] < 2:
        raise ValueError(f"need [batches, filters >= 2] values, got shape {v.shape}")
    sd = v.std(axis=1, ddof=1)
    z = v.mean(axis=1) / np.where(sd > 0, sd / np.sqrt(v.shape[1]), np.inf)
    return float(np.sqrt(np.mean(z ** 2)))
