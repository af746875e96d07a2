"""Chapter 02b's verdicts: accuracy comparisons between finetuning runs on 95% intervals.

Every run of the chapter is tested on the same test examples, so two groups of runs are
compared example by example. A group's *per-example correctness* is the mean, over its runs, of
each run's ``test_correct`` (one number in [0, 1] per test example), and a comparison is the
paired bootstrap over test examples (`lalr_core.core.results.evidence.bootstrap_difference`) of a
difference of such vectors. The interval covers the test set's sampling, not the spread over
training seeds where the chapter runs one seed; the TempBalance-vs-global-lr comparisons
(`contrast`) pair several finetuning seeds by seed and resample them too (two-level bootstrap).

Comparisons (all in percentage points):

Replicates. With several seeds (a ``seed`` column; the uniform curve has the same seeds) a
comparison pairs them by seed, seeds x test examples crossed (``bootstrap_difference`` on
``[k, n_test]``); with one seed it is the paired bootstrap over the test examples, one replicate.
A claim about the pipeline (metric budgets from the pretrained weights: figs 3.3, T-001-e)
counts one replicate per *pretraining* (`pipelines`: the ``pretrain_seed`` column), so
finetuning seeds of one pretraining count once; a claim about the finetuning step given the
pretraining (TempBalance vs the global lr, `contrast`) counts the finetuning seeds.

* `versus_uniform`: metric-budget runs against uniform pruning *at the same measured size*.
  Fig 3.3's x axis is the fraction of parameters remaining, and a metric budget under-prunes
  by its own amount, so a metric run is compared with the uniform curve interpolated (per
  example, linearly in the remaining fraction) at that run's remaining fraction; outside the
  uniform curve it is clamped to the nearest uniform run (counted in ``clamped``).
* `gain_contrast`: one gain over uniform minus another (e.g. AugMix vs traditional
  pretraining, MobileNetV2 vs DenseNet), same test examples, so still paired.
* `contrast`: mean of some groups' correctness minus the mean of others' (TempBalance vs
  the global lr at one pruning: same masks, same size).

A claim about "the metrics" is judged on a group fixed before looking (e.g. the shape metrics
with the direct rule, as the source's sentence names them), pooled; the best single run is
reported beside it but never judged, because picking the best of k runs on the test set
inflates its gain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.chapters.ch02b_htsr_pruning.settings import HYBRID, SCALE, SHAPE, UNIFORM
from lalr_core.core.results.evidence import CONFIDENCE, Evidence, bootstrap_difference

TOL = 1e-9  # remaining fractions closer than this are the same size
GROUPS = {"shape": SHAPE, "scale": SCALE, "hybrid": HYBRID}  # the source's metric families


# ----------------------------------------------------------------------------- selection
def runs_of(table: pd.DataFrame, *, metrics: Sequence[str] | None = None,
            rule: str | None = None, P: float | None = None, **labels) -> pd.DataFrame:
    """The rows of a `run_table` with ``metric`` in ``metrics``, ``rule``, target ``P`` and
    every ``column == value`` of ``labels`` (None: any)."""
    keep = np.ones(len(table), dtype=bool)
    if metrics is not None:
        keep &= table["metric"].isin(list(metrics)).to_numpy()
    if rule is not None:
        keep &= (table["rule"] == rule).to_numpy()
    if P is not None:
        keep &= np.isclose(table["P"].to_numpy(dtype=float), P)
    for column, value in labels.items():
        keep &= (table[column] == value).to_numpy()
    return table[keep]


def uniform_curve(table: pd.DataFrame, **labels) -> pd.DataFrame:
    """The uniform-pruning runs (every target P) of ``table`` matching ``labels``."""
    return runs_of(table, metrics=(UNIFORM,), **labels)


# ----------------------------------------------------------------------------- correctness
def example_correct(rows: pd.DataFrame) -> np.ndarray | None:
    """``(n_test,)`` mean correctness over the runs of ``rows`` (a `run_table` with
    ``test_correct``); None when a run has none (diverged) or ``rows`` is empty."""
    hits = list(rows["test_correct"])
    if not hits or any(h is None or (isinstance(h, float) and math.isnan(h)) for h in hits):
        return None
    return np.mean(np.stack([np.asarray(h, dtype=float) for h in hits]), axis=0)


def seed_correct(rows: pd.DataFrame) -> tuple[tuple[int, ...], np.ndarray] | None:
    """``(seeds, [k, n_test])``: per seed (sorted), the mean correctness over the runs of
    ``rows`` with that seed (a table without a ``seed`` column is one seed, 0); None as
    `example_correct`."""
    if rows.empty:
        return None
    seeds = rows["seed"] if "seed" in rows else pd.Series(0, index=rows.index)
    parts = [(int(k), example_correct(g)) for k, g in rows.groupby(seeds, sort=True)]
    if any(x is None for _, x in parts):
        return None
    return tuple(k for k, _ in parts), np.stack([x for _, x in parts])


def _paired_by_seed(*sides: Sequence[pd.DataFrame]) -> list[np.ndarray] | None:
    """Per side, the ``[k, n_test]`` mean over its groups (equal weights) of `seed_correct`;
    every group of every side must have the same seeds. None when a run has no
    ``test_correct``."""
    parts = [[seed_correct(g) for g in groups] for groups in sides]
    if any(x is None for side in parts for x in side):
        return None
    if len(seeds := {k for side in parts for k, _ in side}) != 1:
        raise ValueError(f"runs compared by seed need the same seeds, got {sorted(seeds)}")
    return [np.mean([x for _, x in side], axis=0) for side in parts]


def uniform_at(curve: pd.DataFrame, remaining: float) -> tuple[np.ndarray, bool]:
    """Per-example correctness of the uniform curve at ``remaining`` and whether it was clamped.

    Linear interpolation between the two uniform sizes around ``remaining`` (x = the runs'
    ``remaining``; runs of one size, e.g. seeds or targets that mask the same channels, are
    averaged); outside the curve, the nearest end (clamped = True).

    Raises:
        ValueError: empty curve or a run without ``test_correct``.
    """
    if curve.empty:
        raise ValueError("the uniform curve has no runs")
    sizes = list(curve.groupby("remaining", sort=True))
    x = np.array([r for r, _ in sizes], dtype=float)
    ys = [example_correct(g) for _, g in sizes]
    if any(y is None for y in ys):
        raise ValueError("a uniform run has no test_correct (diverged?)")
    if remaining <= x[0] + TOL:
        return ys[0], bool(remaining < x[0] - TOL)
    if remaining >= x[-1] - TOL:
        return ys[-1], bool(remaining > x[-1] + TOL)
    j = int(np.searchsorted(x, remaining))            # x[j-1] < remaining <= x[j]
    w = (remaining - x[j - 1]) / (x[j] - x[j - 1])
    return (1 - w) * ys[j - 1] + w * ys[j], False


def matched_uniform(runs: pd.DataFrame,
                    curve: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """``(a, b, clamped)``: a = the runs' mean per-example correctness, b = the mean of the
    uniform curve at each run's remaining fraction, clamped = how many runs lay outside it.
    With several seeds (`seeds_of`) a and b are ``[k, n_test]``, row i seed i's runs against
    seed i's uniform curve; with one seed ``(n_test,)`` over every run (as before)."""
    seeds = seeds_of(runs)
    if len(seeds) > 1:
        parts = [matched_uniform(_seed(runs, k), _seed(curve, k)) for k in seeds]
        return (np.stack([a for a, _, _ in parts]), np.stack([b for _, b, _ in parts]),
                sum(c for _, _, c in parts))
    a = example_correct(runs)
    if a is None:
        raise ValueError("a metric run has no test_correct (diverged?)")
    at = [uniform_at(curve, float(r)) for r in runs["remaining"]]
    return a, np.mean([y for y, _ in at], axis=0), sum(c for _, c in at)


def seeds_of(rows: pd.DataFrame) -> tuple[int, ...]:
    """The sorted seeds of ``rows`` (a table without a ``seed`` column: one seed, ``(0,)``)."""
    if "seed" not in rows or rows.empty:
        return (0,)
    return tuple(sorted(int(k) for k in rows["seed"].unique()))


def _seed(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    if "seed" not in rows:
        return rows
    out = rows[rows["seed"] == seed]
    if out.empty:
        raise ValueError(f"no runs of seed {seed}: runs compared by seed need the same seeds")
    return out


def pipelines(*tables: pd.DataFrame) -> int:
    """Independent pretrainings behind ``tables`` (the fewest of them): distinct
    ``pretrain_seed`` values where that column is filled (`summaries.run_table`), else
    distinct ``seed`` values (each seed its own pretraining). Finetuning seeds of one
    pretraining count once: 1 replicate of a claim about the pipeline."""
    def count(t):
        if "pretrain_seed" in t and t["pretrain_seed"].notna().any():
            return int(t["pretrain_seed"].dropna().nunique())
        return len(seeds_of(t))
    return min(count(t) for t in tables)


# ----------------------------------------------------------------------------- evidence
def versus_uniform(runs: pd.DataFrame, curve: pd.DataFrame, *, threshold: float = 0.0,
                   side: str = "greater") -> tuple[Evidence, int]:
    """Evidence on accuracy(runs) - accuracy(uniform curve at their sizes), points, and the
    number of runs clamped to the curve's ends (see `matched_uniform`)."""
    a, b, clamped = matched_uniform(runs, curve)
    e = bootstrap_difference(a, b, threshold=threshold, side=side, scale=100)
    return _as_pipelines(e, runs, curve), clamped


def _as_pipelines(e: Evidence, *tables: pd.DataFrame) -> Evidence:
    """``e`` counting the independent pretrainings behind ``tables`` as its replicates."""
    return replace(e, replicates=min(e.replicates, pipelines(*tables)))


def gain_contrast(first: tuple[pd.DataFrame, pd.DataFrame],
                  second: tuple[pd.DataFrame, pd.DataFrame], *, threshold: float = 0.0,
                  side: str = "greater") -> Evidence:
    """Evidence on gain(first) - gain(second), each ``(runs, uniform curve)`` a gain over
    uniform as in `versus_uniform`; paired over the shared test examples."""
    a1, b1, _ = matched_uniform(*first)
    a2, b2, _ = matched_uniform(*second)
    if np.shape(a1) != np.shape(a2):
        raise ValueError("gains compared by seed need the same seeds on both sides")
    e = bootstrap_difference(a1 - b1, a2 - b2, threshold=threshold, side=side, scale=100)
    return _as_pipelines(e, *first, *second)


def contrast(plus: Sequence[pd.DataFrame], minus: Sequence[pd.DataFrame], *,
             threshold: float = 0.0, side: str = "greater") -> Evidence:
    """Evidence on mean accuracy over the groups ``plus`` minus the mean over ``minus``
    (each group weighted equally; points), paired by seed: with several finetuning seeds
    (the same in every group) the two-level bootstrap over seeds and test examples. A group
    with a diverged run gives NaN (INCONCLUSIVE)."""
    pair = _paired_by_seed(plus, minus)
    if pair is None:
        return Evidence(math.nan, math.nan, math.nan, threshold, side, 1, None,
                        "a run without test_correct (diverged?)")
    return bootstrap_difference(*pair, threshold=threshold, side=side, scale=100)


def gain_table(table: pd.DataFrame, by: Sequence[str] = ("aug",)) -> pd.DataFrame:
    """Per curve (``by``), target P, metric family (`GROUPS`) and rule: the pooled runs'
    gain over the uniform curve at their sizes (`versus_uniform`, points, 95 % interval,
    runs clamped), their mean ``remaining``, and beside it the gain against the uniform run
    of the same target P (``gain_same_P``, the comparison first planned; sizes differ)."""
    rows = []
    for key, g in table.groupby(list(by), sort=True):
        labels = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        curve = uniform_curve(g)
        for P in sorted(g.loc[g.metric != UNIFORM, "P"].unique()):
            same = runs_of(curve, P=P)
            for family, names in GROUPS.items():
                for rule in sorted(runs_of(g, P=P, metrics=names)["rule"].unique()):
                    runs = runs_of(g, P=P, metrics=names, rule=rule)
                    e, clamped = versus_uniform(runs, curve)
                    rows.append(labels | dict(
                        P=P, family=family, rule=rule, runs=len(runs),
                        remaining=float(runs.remaining.mean()), gain=e.estimate, low=e.low,
                        high=e.high, clamped=clamped,
                        uniform_remaining_same_P=float(same.remaining.mean()),
                        gain_same_P=float(runs.test_acc.mean() - same.test_acc.mean())))
    return pd.DataFrame(rows)


def _lr_pair(table: pd.DataFrame, P: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """TempBalance's and the global lr's runs of target ``P`` (same masks)."""
    at = runs_of(table, P=P)
    tb, base = at[at.layer_lr == "eq2.13"], at[at.layer_lr == "none"]
    if tb.empty or base.empty:
        raise ValueError(f"target P={P}: needs runs with layer_lr 'eq2.13' and 'none'")
    return tb, base


def lr_evidence(table: pd.DataFrame, Ps: Sequence[float], *, threshold: float = 0.0,
                side: str = "greater") -> Evidence:
    """Evidence on TempBalance minus the global lr, mean over the targets ``Ps`` (each the
    same pruning with both lrs; points)."""
    pairs = [_lr_pair(table, P) for P in Ps]
    return contrast([tb for tb, _ in pairs], [base for _, base in pairs],
                    threshold=threshold, side=side)


def lr_gains(table: pd.DataFrame) -> pd.DataFrame:
    """Per target P: TempBalance minus the global lr of the same pruning (`lr_evidence`),
    its interval (points) and the size ``remaining``."""
    rows = []
    for P in sorted(table["P"].unique()):
        e = lr_evidence(table, [P])
        rows.append({"P": P, "remaining": float(_lr_pair(table, P)[1]["remaining"].mean()),
                     "gain": e.estimate, "low": e.low, "high": e.high})
    return pd.DataFrame(rows)


def lr_range_contrast(table: pd.DataFrame, low: float, high: float, *,
                      threshold: float = 0.0) -> tuple[Evidence | None, list[float]]:
    """Evidence that TempBalance's gain over the global lr is larger at the sizes with a
    remaining fraction in ``[low, high]`` than at the other sizes (mean gain inside minus
    mean gain outside, points), and the targets P inside. None when no size lies inside, or
    none outside (the setting cannot show where the gain peaks)."""
    sizes = lr_gains(table)
    inside = sizes[(sizes.remaining >= low) & (sizes.remaining <= high)]["P"].tolist()
    outside = [P for P in sizes["P"] if P not in inside]
    if not inside or not outside:
        return None, inside

    def gain(Ps):
        parts = [_paired_by_seed(*([g] for g in _lr_pair(table, P))) for P in Ps]
        if any(x is None for x in parts):
            return None
        return np.mean([a - b for a, b in parts], axis=0)

    a, b = gain(inside), gain(outside)
    if a is None or b is None:
        return Evidence(math.nan, math.nan, math.nan, threshold, "greater", 1, None,
                        "a run without test_correct (diverged?)"), inside
    return bootstrap_difference(a, b, threshold=threshold, side="greater", scale=100), inside


# ----------------------------------------------------------------------------- source numbers
def versus_range(ours: float, low: float, high: float, profile: str) -> dict:
    """Ours beside a range the source gives: the distance to it (0 inside) and, at the paper
    profile only, whether ours lies inside (at a reduced profile the numbers are not the
    source's, so only the difference is reported)."""
    diff = 0.0 if low <= ours <= high else (ours - low if ours < low else ours - high)
    out = {"ours": round(float(ours), 3), "source": [low, high], "difference": round(diff, 3)}
    if profile == "paper":
        out["within_source_range"] = bool(diff == 0.0)
    return out


def best_run(runs: pd.DataFrame) -> Mapping:
    """The single best run of ``runs`` by test accuracy (reported, never judged)."""
    b = runs.sort_values("test_acc", ascending=False).iloc[0]
    return {"metric": b.metric, "rule": b.rule, "test_acc": round(float(b.test_acc), 2),
            "remaining": round(float(b.remaining), 3)}


def all_of(evidence: Sequence[Evidence]) -> Evidence:
    """One verdict for "the claim holds for every one of these comparisons" (same threshold
    and side): the weakest interval decides. PASS iff every interval passes; FAIL iff some
    interval fails (k intervals give up to k x 2.5 % chance of a false FAIL; each ``method``
    names k). Built as (weakest estimate, weakest low, weakest high), which is exactly that
    rule for ``greater`` (minimum) and ``less`` (maximum); its replicates are the fewest of
    the parts'."""
    if not evidence:
        raise ValueError("all_of needs at least one Evidence")
    sides = {(e.side, e.threshold) for e in evidence}
    if len(sides) != 1 or evidence[0].side == "within":
        raise ValueError(f"all_of needs one 'greater' or 'less' claim, got {sorted(sides)}")
    pick = min if evidence[0].side == "greater" else max
    e0 = evidence[0]
    vals = [(e.estimate, e.low, e.high) for e in evidence]
    if any(not all(map(math.isfinite, v)) for v in vals):
        return Evidence(math.nan, math.nan, math.nan, e0.threshold, e0.side, e0.n, e0.n_test,
                        f"weakest of {len(vals)}: one is undefined", unit=e0.unit,
                        replicates=min(e.replicates for e in evidence))
    est, low, high = (pick(v[i] for v in vals) for i in range(3))
    return Evidence(est, low, high, e0.threshold, e0.side, min(e.n for e in evidence),
                    e0.n_test, f"weakest of {len(vals)} ({e0.method}); PASS needs all "
                               f"{len(vals)}", unit=e0.unit,
                    replicates=min(e.replicates for e in evidence))


# ----------------------------------------------------------------------------- shares
def _wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson's 95 % score interval of a share ``hits / n``."""
    z = float(stats.norm.ppf(0.5 + CONFIDENCE / 2))
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share_difference(hits: int, n: int, null_hits: int, null_n: int, *,
                     unit: str = "network") -> Evidence:
    """Evidence that a property is more frequent in ``n`` networks (``hits`` have it) than in
    ``null_n`` networks of the null (``null_hits``): the difference of the two shares with
    Newcombe's (1998) hybrid score interval (Wilson's interval of each share); claim > 0.
    ``n`` counts the replicates (``unit``); no null network: an undefined interval."""
    if n < 1 or not 0 <= hits <= n or not 0 <= null_hits <= max(null_n, 0):
        raise ValueError(f"need 0 <= hits <= n, n >= 1, 0 <= null_hits <= null_n; got "
                         f"{hits}/{n}, {null_hits}/{null_n}")
    if null_n < 1:
        return Evidence(math.nan, -math.inf, math.inf, 0.0, "greater", n, None,
                        "no null network: nothing to judge against", unit=unit)
    p, q = hits / n, null_hits / null_n
    (l1, u1), (l2, u2) = _wilson(hits, n), _wilson(null_hits, null_n)
    d = p - q
    low = d - math.sqrt((p - l1) ** 2 + (u2 - q) ** 2)
    high = d + math.sqrt((u1 - p) ** 2 + (q - l2) ** 2)
    return Evidence(d, min(low, d), max(high, d), 0.0, "greater", n, None,
                    f"{hits}/{n} {unit}s minus {null_hits}/{null_n} of the null, Newcombe's "
                    "score interval of a difference of shares", unit=unit)
