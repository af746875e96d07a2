"""Chapter 02's verdicts: accuracy contrasts between runs judged on 95% intervals
(`lalr_core.core.results.evidence`), claims made of several contrasts, and our numbers beside the
source's.

A *contrast* is ``weight * (mean over the plus runs - mean over the minus runs)`` of one final
accuracy, in percentage points, computed within each seed. Each run is named by a selector, a
dict of run-table columns (``{"model": ..., "width": ..., "allocation": "alpha"}``) that
matches one run per seed. Examples (fig 2.1, at one lr0):

* Delta test of R34m, mean over widths: plus = its eq. 2.13 runs at every width, minus = its
  baselines at every width, weight 1;
* Delta test(R34m) - Delta test(R18m): plus = {R34m eq. 2.13, R18m baseline}, minus =
  {R34m baseline, R18m eq. 2.13} (each at every width), weight 2.

Intervals (the seeds of one chapter share their index across models: seed k of R18m and of
R34m are independent runs, and pairing them by index is harmless):

* two or more seeds: the paired t interval over seeds (`paired_difference`);
* one seed, test accuracy: the paired bootstrap over test examples of the per-example contrast
  (`bootstrap_difference` on the runs' ``test_correct``);
* one seed, train accuracy: the conservative normal interval of two accuracies on ``n_train``
  examples (`paired_difference` with ``n_test=n_train``). The train accuracy is the running
  accuracy over the last epoch's augmented batches, so this interval is an approximation.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.core.results.evidence import (
    CONFIDENCE,
    Evidence,
    bootstrap_difference,
    least_favourable,
    mean_interval,
    paired_difference,
)

METRICS = ("test_acc", "train_acc")   # run-table columns, in percent


# ----------------------------------------------------------------------------- contrasts
def select(table: pd.DataFrame, where: Mapping) -> pd.DataFrame:
    """The runs of ``table`` matching every ``column == value`` of ``where``, indexed by seed.

    Raises:
        ValueError: no run matches, or two runs of one seed do.
    """
    rows = table
    for column, value in where.items():
        rows = rows[rows[column] == value]
    if rows.empty:
        raise ValueError(f"no run matches {dict(where)}")
    if rows.seed.duplicated().any():
        raise ValueError(f"{dict(where)} matches several runs of one seed; name more columns")
    return rows.set_index("seed")


def seed_means(table: pd.DataFrame, metric: str, runs: Sequence[Mapping]) -> pd.Series:
    """Per seed: the mean of ``metric`` (as a fraction) over the runs named by ``runs``.

    Seeds some selector lacks are left out; a seed with a diverged run (NaN) is NaN.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    columns = [select(table, w)[metric].rename(i) / 100 for i, w in enumerate(runs)]
    return pd.concat(columns, axis=1, join="inner").mean(axis=1, skipna=False)


def _example_means(table: pd.DataFrame, runs: Sequence[Mapping], seed) -> np.ndarray | None:
    """Per test example: the mean correctness over ``runs`` of one seed (None: one diverged)."""
    hits = [select(table, w).loc[seed, "test_correct"] for w in runs]
    if any(h is None or (isinstance(h, float) and math.isnan(h)) for h in hits):
        return None
    return np.mean(np.stack([np.asarray(h, dtype=float) for h in hits]), axis=0)


def contrast(table: pd.DataFrame, metric: str, plus: Sequence[Mapping],
             minus: Sequence[Mapping], *, weight: float = 1.0, threshold: float = 0.0,
             side: str = "greater", n_train: int | None = None) -> Evidence:
    """Evidence on ``weight * (mean(plus) - mean(minus))`` of ``metric``, points, by seed.

    Args:
        table: `run_table` rows (``seed``, the metric, ``test_correct``, ``n_test``).
        metric: ``"test_acc"`` or ``"train_acc"``.
        plus, minus: selectors (see `select`), each matching one run per seed.
        weight: multiplies the difference of the two means (see the module docstring).
        threshold, side: the claim, in points (see `Evidence`).
        n_train: training examples, for the one-seed interval of a train accuracy.

    Raises:
        ValueError: unknown metric, or a selector matching no run or several of one seed.
    """
    a, b = seed_means(table, metric, plus), seed_means(table, metric, minus)
    a, b = a.align(b, join="inner")
    scale = 100 * weight
    if len(a) == 1 and metric == "test_acc":
        ca = _example_means(table, plus, a.index[0])
        cb = _example_means(table, minus, a.index[0])
        if ca is not None and cb is not None:
            return bootstrap_difference(ca, cb, threshold=threshold, side=side, scale=scale)
    n_test = table["n_test"].max() if "n_test" in table else math.nan
    n = int(n_test) if np.isfinite(n_test) else None
    if metric == "train_acc":           # n_train only matters for one pair
        n = n_train if len(a) == 1 else None
    e = paired_difference(a.to_numpy(), b.to_numpy(), threshold=threshold, side=side,
                          n_test=n, scale=scale)
    if metric == "train_acc" and e.n == 1 and n:          # say that n counts training examples
        e = dataclasses.replace(e, n_test=None, method=f"one seed: normal interval of two "
                                f"accuracies on {n} training examples (approximate)")
    return e


def delta_gap(table: pd.DataFrame, metric: str,
              first: tuple[Sequence[Mapping], Sequence[Mapping]],
              second: tuple[Sequence[Mapping], Sequence[Mapping]], **claim) -> Evidence:
    """Evidence on ``Delta_first - Delta_second``, each ``Delta`` a ``(plus, minus)`` pair of
    run lists whose means are subtracted (e.g. Delta test of R34m minus that of R18m).

    Written as one `contrast` with weight 2: plus = first's plus and second's minus, minus =
    first's minus and second's plus, each list repeated to a common length so that every
    ``Delta`` keeps its own equal-weight means. ``claim``: `contrast`'s keywords.
    """
    lists = (first[0], first[1], second[0], second[1])
    if not all(lists):
        raise ValueError("every run list of delta_gap must name at least one run")
    common = math.lcm(*map(len, lists))
    p1, m1, p2, m2 = (list(x) * (common // len(x)) for x in lists)
    return contrast(table, metric, p1 + m2, m1 + p2, weight=2.0, **claim)


def paired_deltas(table: pd.DataFrame, by: Sequence[str], reference: str = "baseline", *,
                  n_train: int | None = None) -> pd.DataFrame:
    """Allocation minus ``reference`` of test and train accuracy per ``by`` group (`contrast`).

    Returns one row per group and allocation other than ``reference``: the ``by`` columns,
    ``allocation``, ``d_test`` and ``d_train`` (points, mean over seeds of the paired
    differences), their 95% intervals ``d_test_low`` ... ``d_train_high`` and ``seeds``.
    """
    rows = []
    for key, group in table.groupby(list(by), sort=True):
        labels = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for alloc in group.allocation.unique():
            if alloc == reference:
                continue
            row = {**labels, "allocation": alloc}
            for metric, col in (("test_acc", "d_test"), ("train_acc", "d_train")):
                e = contrast(group, metric, [{"allocation": alloc}],
                             [{"allocation": reference}], n_train=n_train)
                row.update({col: e.estimate, f"{col}_low": e.low, f"{col}_high": e.high})
            rows.append({**row, "seeds": e.n})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- claims
def all_of(parts: Mapping[str, Evidence]) -> tuple[Evidence, str]:
    """The verdict of "every part holds": FAIL if a part fails, else INCONCLUSIVE if a part
    is, else PASS.

    Returns:
        The part that decides it (its verdict is the conjunction's: the first FAIL, else an
        INCONCLUSIVE part, else the PASS with the narrowest margin) and one line giving every
        part's interval and verdict, for the check's ``detail``.
    """
    _, deciding = least_favourable(parts)
    detail = "; ".join(f"{name}: {e.text()} -> {e.verdict}" for name, e in parts.items())
    return deciding, detail


def unit_evidence(values: pd.DataFrame, stat: str, allocation: str,
                  reference: str | None = None, *, threshold: float = 0.0,
                  side: str = "greater") -> Evidence:
    """Evidence on a per-run statistic (fig 2.2's CKA summaries) over seeds, or over random
    test batches of one seed when there is one seed only.

    Args:
        values: rows ``allocation``, ``unit`` (``"seed"`` or ``"batch"``), ``id`` (the seed,
            or the batch's index; a batch is the same images for every allocation) and the
            statistic's column.
        stat: the column judged.
        allocation: whose values; with ``reference``, paired ``allocation - reference``.
        threshold, side: the claim (see `Evidence`).
    """
    unit = "seed" if (values[(values.unit == "seed")
                             & (values.allocation == allocation)].id.nunique() > 1) else "batch"
    v = values[values.unit == unit].pivot(index="id", columns="allocation", values=stat)
    if reference is None:
        e = mean_interval(v[allocation].to_numpy(), threshold=threshold, side=side)
    else:
        e = paired_difference(v[allocation].to_numpy(), v[reference].to_numpy(),
                              threshold=threshold, side=side)
    if unit == "batch":
        e = dataclasses.replace(e, unit="batch", method=f"one seed: t over {e.n} random test "
                                "batches (seed-to-seed noise not covered)")
    return e


# ----------------------------------------------------------------------------- the source
def beside_source(table: pd.DataFrame, source: pd.DataFrame, *, judge: bool,
                  n_train: int | None = None) -> pd.DataFrame:
    """Our accuracies beside the source's numbers (rows of ``ch02_text_numbers.csv``).

    A source row with metric ``test_acc`` / ``train_acc`` is one run's number; a pair
    ``<metric>_low`` / ``<metric>_high`` is a range the source states ("65-70 %"). The row's
    ``lr`` and ``allocation``, where given, select our runs (our model and width are the
    profile's, which at quick are the reduced ones).

    Returns:
        One row per source number or range: ``lr``, ``allocation``, ``metric``, ``ours``
        (mean over seeds, %), ``ours_low`` / ``ours_high`` (t interval over seeds),
        ``seeds``, ``source`` (the number, or the range's middle), ``source_low`` /
        ``source_high``, ``difference`` (ours - source; for a range, how far ours lies
        outside it, 0 inside) and ``within``: None unless ``judge``; then, for a range,
        whether ours lies in it, and for one run's number, whether it lies in the 95%
        prediction interval of one run drawn like ours (``t sd sqrt(1 + 1/k)`` over our
        ``k`` seeds; one seed: ``z sqrt(2 p (1 - p) / n)``, two runs' binomial noise on
        ``n`` examples). A source number none of our runs matches gets NaN (``seeds`` 0).
    """
    src = source.assign(base=source.metric.str.replace(r"_(low|high)$", "", regex=True))
    rows = []
    for (lr, alloc, metric), g in src.groupby(["lr", "allocation", "base"], dropna=False,
                                              sort=False):
        where = {k: v for k, v in (("lr", lr), ("allocation", alloc)) if pd.notna(v)}
        try:
            ours = 100 * seed_means(table, metric, [where]).dropna()
        except ValueError:                 # the profile has no such run (e.g. smoke's one lr)
            ours = pd.Series(dtype=float)
        e = mean_interval(ours.to_numpy()) if len(ours) else Evidence(*[math.nan] * 3, n=0)
        values = dict(zip(g.metric, g.source_value))
        lo, hi = values.get(f"{metric}_low", values.get(metric)), \
            values.get(f"{metric}_high", values.get(metric))
        point = metric in values
        diff = e.estimate - (lo if point else float(np.clip(e.estimate, lo, hi)))
        rows.append({"lr": lr, "allocation": alloc, "metric": metric, "ours": e.estimate,
                     "ours_low": e.low, "ours_high": e.high, "seeds": e.n,
                     "source": lo if point else (lo + hi) / 2, "source_low": lo,
                     "source_high": hi, "difference": diff,
                     "within": _within(ours.to_numpy(), diff, point, metric, table, n_train)
                     if judge else None})
    return pd.DataFrame(rows)


def gap_beside_source(evidence: Evidence, source: float, *, judge: bool, **labels) -> dict:
    """One `beside_source` row for a difference (e.g. squared weighting minus the baseline):
    ours with its interval beside the source's one-run difference.

    ``within`` (only when ``judge``): the source's difference lies in the 95% prediction
    interval of one run's difference drawn like ours, ``half * sqrt(n + 1)`` around ours
    (``half``: our interval's half-width over ``n`` seeds; for one seed, two runs' noise).
    """
    half = (evidence.high - evidence.low) / 2
    diff = evidence.estimate - source
    within = None
    if judge and math.isfinite(half):
        within = bool(abs(diff) <= half * math.sqrt(evidence.n + 1))
    return {**labels, "ours": evidence.estimate, "ours_low": evidence.low,
            "ours_high": evidence.high, "seeds": evidence.n, "source": source,
            "source_low": source, "source_high": source, "difference": diff, "within": within}


def _within(ours: np.ndarray, diff: float, point: bool, metric: str, table: pd.DataFrame,
            n_train: int | None) -> bool | None:
    """Whether ours agrees with the source's number within its spread (see `beside_source`)."""
    if not point:
        return bool(diff == 0)
    k = len(ours)
    if k >= 2:
        half = stats.t.ppf(0.5 + CONFIDENCE / 2, k - 1) * ours.std(ddof=1) * math.sqrt(1 + 1 / k)
    else:
        n = n_train if metric == "train_acc" else table["n_test"].max()
        if k == 0 or not n or not np.isfinite(n):
            return None
        p = ours[0] / 100
        half = 100 * stats.norm.ppf(0.5 + CONFIDENCE / 2) * math.sqrt(2 * p * (1 - p) / n)
    return bool(abs(diff) <= half)
