"""Chapter 01's verdicts: each run reduced to one number, comparisons paired by seed, the
rules that combine parts of a claim, and the final verdict table.

Every comparison of runs is an `Evidence` (`lalr_core.core.results.evidence.paired_difference`): two
arms' runs of the same seed share the initial head, the data order and the pretrained
encoder, so the paired t interval over seeds covers both; an accuracy difference is in
percentage points (``scale=100``), a loss difference in nats. A verdict is PASS only when the
whole 95% interval lies on the claim's side of its threshold, FAIL when it lies on the other
side, INCONCLUSIVE when it covers the threshold. A claim with several parts:

* ``every`` (on both tasks, against U and U-match, ...): the least favourable part decides
  (any FAIL: FAIL; else any INCONCLUSIVE: INCONCLUSIVE; else PASS);
* ``at_least(parts, k)`` ("on >= 2 of 3 shifts"): PASS if at least ``k`` parts PASS, FAIL if
  fewer than ``k`` could hold even counting every INCONCLUSIVE part, else INCONCLUSIVE
  (both rules, and ``texts``, are `lalr_core.core.results.evidence`'s, re-exported here);
* ``requirement``: a deterministic condition (equal parameter counts) that must hold too.

A diverged run counts 0 accuracy and NaN loss (a NaN pair is left out of the interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from lalr_core.core.results.evidence import (  # noqa: F401  (every, at_least, texts: re-exported)
    Evidence,
    at_least,
    every,
    mean_interval,
    paired_difference,
    per_seed,
    texts,
)

PENDING = "pending"   # verdict-table entry of a claim whose experiment is integrated later


# ----------------------------------------------------------------------------- one run
def final(res: Mapping, key: str = "val_acc") -> float:
    """A run's final ``key`` (an accuracy of a diverged run is 0, any other value NaN)."""
    if res["diverged"]:
        return 0.0 if key.endswith("_acc") else math.nan
    return float(res["final"][key])


def curve(res: Mapping, column: str = "val_acc") -> np.ndarray:
    """``history[column]`` per epoch (1..E); a diverged run's accuracies after divergence 0."""
    values = res["history"][column].to_numpy(dtype=float)
    if column.endswith("_acc"):
        values = np.where(np.isnan(values), 0.0, values)
    return values


SPLIT_PROBES = ("text_splits", "transfer_splits")   # the callbacks that record extra splits


def split_history(res: Mapping, split: str) -> pd.DataFrame:
    """The ``"text_splits"`` (or, for an image run, ``"transfer_splits"``) records of
    ``split``: ``epoch`` (0 = before training), ``loss``, ``acc``.

    Raises:
        ValueError: the run was trained without that split.
    """
    for name in SPLIT_PROBES:
        probe = res["callbacks"].get(name)
        h = None if probe is None else probe["history"]
        if h is not None and (h["split"] == split).any():
            return h[h["split"] == split].sort_values("epoch").reset_index(drop=True)
    raise ValueError(f"the run has no {' or '.join(SPLIT_PROBES)} record of {split!r}")


def forgetting(res: Mapping, split: str = "mlm") -> float:
    """X-L3: the loss on the pretraining task's held-out split after fine-tuning minus
    before (nats; > 0 = forgotten): the MLM loss (``"mlm"``), or the pretraining classes'
    cross-entropy with the pretrained head (``"pretrain"``, the vision setting)."""
    h = split_history(res, split)
    return math.nan if res["diverged"] else float(h["loss"].iloc[-1] - h["loss"].iloc[0])


def split_accuracy(res: Mapping, split: str) -> float:
    """Accuracy on a ``"text_splits"`` split after the last epoch (diverged: 0)."""
    return 0.0 if res["diverged"] else float(split_history(res, split)["acc"].iloc[-1])


def generalisation_gap(res: Mapping) -> float:
    """X-L4: accuracy on the training set after the last epoch (eval mode, the ``"train"``
    split) minus the final validation accuracy."""
    return split_accuracy(res, "train") - final(res, "val_acc")


# ----------------------------------------------------------------------------- comparisons
def paired(runs_a: Sequence[Mapping], runs_b: Sequence[Mapping],
           fn: Callable[[Mapping], float] = final, *, threshold: float = 0.0,
           side: str = "greater", scale: float = 100.0) -> Evidence:
    """Evidence on ``mean(fn(a) - fn(b))`` over seeds (``runs_a[i]``, ``runs_b[i]``: seed
    ``i``), paired t; ``scale`` 100 for accuracies (points), 1 for losses (nats).

    Raises:
        ValueError: unequal or empty run lists.
    """
    if len(runs_a) != len(runs_b) or not runs_a:
        raise ValueError(f"need the same seeds on both sides, got {len(runs_a)} and "
                         f"{len(runs_b)} runs")
    return paired_difference(per_seed(runs_a, fn), per_seed(runs_b, fn), threshold=threshold,
                             side=side, scale=scale)


def paired_curve(runs_a: Sequence[Mapping], runs_b: Sequence[Mapping],
                 column: str = "val_acc", *, threshold: float = 0.0, side: str = "greater",
                 scale: float = 100.0) -> dict[int, Evidence]:
    """Per epoch (1..E): Evidence on ``a - b`` of ``history[column]`` (learning curves,
    X-L2's "at any epoch")."""
    a = np.stack([curve(r, column) for r in runs_a])        # (seeds, epochs)
    b = np.stack([curve(r, column) for r in runs_b])
    if a.shape != b.shape:
        raise ValueError(f"need the same seeds and epochs on both sides, got {a.shape}, "
                         f"{b.shape}")
    return {e + 1: paired_difference(a[:, e], b[:, e], threshold=threshold, side=side,
                                     scale=scale) for e in range(a.shape[1])}


def versus_best_other(values: Mapping[str, Sequence[float]], arm: str, *,
                      scale: float = 100.0) -> tuple[Evidence, str]:
    """X-L5's rule: ``arm`` minus the best other arm (highest mean), paired over seeds.

    "Ranks first and beats the runner-up" restated on one interval: if ``arm`` has the
    highest mean, the other is the runner-up (PASS needs the interval above 0); if not, the
    other is the top arm (the difference is negative: FAIL if the interval lies below 0).

    Returns:
        ``(evidence, name of the other arm)``.
    """
    others = {k: np.asarray(v, float) for k, v in values.items() if k != arm}
    if arm not in values or not others:
        raise ValueError(f"need {arm!r} and at least one other arm, got {sorted(values)}")
    best = max(others, key=lambda k: np.nanmean(others[k]))
    return paired_difference(values[arm], others[best], scale=scale), best


def ranking(values: Mapping[str, Sequence[float]], scale: float = 100.0) -> pd.DataFrame:
    """Arms by mean (highest first): ``arm, mean, sd, seeds, rank``."""
    rows = [(k, scale * np.nanmean(v), scale * np.nanstd(v, ddof=1) if len(v) > 1 else np.nan,
             len(v)) for k, v in values.items()]
    df = pd.DataFrame(rows, columns=["arm", "mean", "sd", "seeds"])
    df = df.sort_values("mean", ascending=False, kind="stable").reset_index(drop=True)
    df["rank"] = np.arange(1, len(df) + 1)
    return df


def kendall_w(scores) -> float:
    """Kendall's coefficient of concordance of ``scores [raters, items]`` (here: seeds rank
    the arms by accuracy), tie-corrected, in [0, 1]; 1 = every seed ranks the arms alike.

    ``W = 12 S / (m^2 (n^3 - n) - m sum_i T_i)`` with ``S`` the squared deviations of the
    items' rank sums from their mean, ``T_i = sum (t^3 - t)`` over rater ``i``'s ties (average
    ranks); equal to Friedman's chi^2 / (m (n - 1)).

    Raises:
        ValueError: fewer than 2 raters or 2 items, or a non-finite score.
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2 or not np.isfinite(x).all():
        raise ValueError(f"need finite scores [raters >= 2, items >= 2], got shape {x.shape}")
    m, n = x.shape
    ranks = np.stack([pd.Series(row).rank(method="average").to_numpy() for row in x])
    s = float(((ranks.sum(axis=0) - m * (n + 1) / 2) ** 2).sum())
    ties = sum(float((c ** 3 - c).sum()) for c in
               (np.unique(row, return_counts=True)[1] for row in x))
    denom = m ** 2 * (n ** 3 - n) - m * ties
    return 1.0 if denom == 0 else 12.0 * s / denom


# ----------------------------------------------------------------------------- combining
def requirement(evidence: Evidence, holds: bool) -> Evidence | bool:
    """``evidence`` when a deterministic condition ``holds``, else ``False`` (FAIL)."""
    return evidence if holds else False


# ----------------------------------------------------------------------------- LALR's tables
def metric_grid(table: pd.DataFrame, column: str, epochs: int) -> pd.DataFrame:
    """One column of an LALR callback table as ``layers x epochs`` (epochs ``0..epochs-1``,
    layers in the table's order): the heatmaps of raw metrics and scales."""
    t = table[table["epoch"] < epochs]
    layers = list(dict.fromkeys(t["layer"]))
    return t.pivot(index="layer", columns="epoch", values=column).loc[layers]


def frozen_per_epoch(table: pd.DataFrame, epochs: int) -> pd.Series:
    """Layers at scale exactly 0 (trained at lr 0) in each epoch ``0..epochs-1`` (bug 8)."""
    t = table[table["epoch"] < epochs]
    return (t["lr_scale"] == 0).groupby(t["epoch"]).sum().astype(int)


def scales_follow_metrics(table: pd.DataFrame, epochs: int, order=("svd", "ce", "cs"),
                          cs_direction: str = "code") -> bool:
    """L-C1's mechanism, per epoch: the scale falls with the raw SVD / CE metric and rises
    with raw CS (``code``; falls with ``text20``): both sorted the same way, ties allowed."""
    for epoch, t in table[table["epoch"] < epochs].groupby("epoch"):
        phase = order[int(epoch) % len(order)]
        raw, scale = t[phase].to_numpy(float), t["lr_scale"].to_numpy(float)
        sign = 1.0 if phase == "cs" and cs_direction == "code" else -1.0
        idx = np.argsort(sign * raw, kind="stable")
        if np.any(np.diff(scale[idx]) < -1e-12):
            return False
    return True


def top_tercile_fall(table: pd.DataFrame, first: int = 0, second: int = 3) -> float:
    """X-L12: of the layers in the top third of scales at epoch ``first`` (``ceil(L / 3)``
    largest), the fraction whose scale at epoch ``second`` (the next epoch of the same phase)
    is lower. B.4.7(3)'s self-correction predicts > 1/2."""
    a = table[table["epoch"] == first].set_index("layer")["lr_scale"]
    b = table[table["epoch"] == second].set_index("layer")["lr_scale"]
    if a.empty or b.empty:
        raise ValueError(f"the table lacks epoch {first} or {second}")
    top = a.sort_values(ascending=False, kind="stable").index[:math.ceil(len(a) / 3)]
    return float((b[top] < a[top]).mean())


def unchanged_scales(table: pd.DataFrame, first: int = 0, second: int = 3) -> bool:
    """Every layer's scale at ``second`` equals its scale at ``first`` (metrics once, bug 6)."""
    a = table[table["epoch"] == first].set_index("layer")["lr_scale"]
    b = table[table["epoch"] == second].set_index("layer")["lr_scale"]
    return bool(len(a) and a.index.equals(b.index) and np.array_equal(a.to_numpy(), b.to_numpy()))


def fraction_interval(values: Sequence[float], threshold: float = 0.5) -> Evidence:
    """A per-run fraction's mean over runs with its t interval, claim: > ``threshold``."""
    return mean_interval(values, threshold=threshold, side="greater", unit="run")


# ----------------------------------------------------------------------------- the table
def verdict_table(records: Sequence[Mapping], claims: Mapping) -> pd.DataFrame:
    """One row per source claim L-C1..L-C30 (``claims``: id -> `claims.Claim`; the other
    claims, e.g. ``"L-C15.vision"``, are left out): ``claim, kind, what we test,
    experiment, our numbers, paired statistic, verdict``. A claim with no check record is
    ``pending`` (its experiment is integrated later). The statistic is the interval the
    verdict rests on (``estimate [low, high], n seeds; claim > threshold``)."""
    by_item = {}
    for r in records:
        by_item.setdefault(r["item_id"], r)        # the first check of an item is its verdict
    rows = []
    for cid, c in claims.items():
        if not cid.startswith("L-C") or "." in cid:
            continue                                # the source's claims only
        r = by_item.get(cid)
        rows.append({"claim": cid, "kind": c.kind, "what we test": c.text,
                     "experiment": ", ".join(c.experiments) or "-",
                     "our numbers": _numbers(r), "paired statistic": _statistic(r),
                     "verdict": r["verdict"] if r else PENDING})
    return pd.DataFrame(rows)


def _numbers(record: Mapping | None) -> str:
    if record is None:
        return "-"
    ours = record.get("ours")
    if isinstance(ours, Mapping):
        return "; ".join(f"{k}: {v}" for k, v in ours.items())
    return "-" if ours is None else str(ours)


def _statistic(record: Mapping | None) -> str:
    if record is None or not record.get("interval"):
        return "-" if record is None else (record.get("detail") or "-")
    ev = Evidence.from_record(record["interval"])
    rel = {"greater": ">", "less": "<", "within": "within +-"}[ev.side]
    return f"{ev.text()}; claim {rel} {ev.threshold:g}"
