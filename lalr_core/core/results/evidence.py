"""Verdicts from intervals: a comparison is PASS or FAIL only when its 95% interval decides it.

A check compares a quantity (a difference of accuracies between two methods, paired by seed; a
mean over seeds) with the source's threshold. `Evidence` holds the estimate, its interval and
where the interval came from (the number of seeds, the test set's size); ``verdict`` is

* ``PASS``: the whole interval lies on the claim's side of the threshold;
* ``FAIL``: the whole interval lies on the other side;
* ``INCONCLUSIVE``: the interval covers the threshold, so the data cannot tell.

A claim test's verdict (``claim_verdict``, what REPORT.md counts) is also INCONCLUSIVE when the
interval is refused (``refusal``): it rests on fewer than `MIN_REPLICATES` independent
  replicates of the claim's unit (one trained network's test examples, layers or sizes are one
  replicate, not many), or it has zero width (a capped or degenerate statistic).

``replicates`` counts the independent replicates behind the interval: by default ``n`` when
``n`` counts seeds or runs (`REPLICATE_UNITS`), else 1 (the pairs, layers or examples of one
run). A caller whose seeds share a stage the claim is about (one pretraining behind several
fine-tunings) passes the number of independent pipelines instead. `replicates_needed` sizes
the replicates that would decide an effect from the spread measured over the replicates.

Intervals (two-sided 95%, so each one-sided verdict errs at most 2.5% of the time):

* ``paired_difference``: several seeds, each run of method A paired with B's run of the same
  seed: Student's t interval of the mean paired difference (``n - 1`` degrees of freedom).
  Seeds differ in initialisation and data order, so this covers both; it does not cover a
  different test set.
* one seed with a test set of ``n_test`` examples: the normal interval of a difference of two
  accuracies, ``sqrt(p_a (1 - p_a) / n + p_b (1 - p_b) / n)``. The two runs see the same test
  examples, so their errors are positively correlated and the true standard error is smaller:
  this interval is conservative (an honest INCONCLUSIVE rather than a false PASS).
* ``bootstrap_difference``: runs that recorded their test predictions. One seed: the paired
  bootstrap over test examples (one replicate: refused as evidence on a method); several
  seeds: seeds and examples as crossed random effects, t interval over seeds.
* ``mean_interval``: a quantity measured once per seed, against a threshold.

FigureWriter.check takes an `Evidence` in place of a bool and stores the interval with the
verdict; REPORT.md prints it beside the number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "N/A")
SIDES = ("greater", "less", "within")
MIN_REPLICATES = 3  # fewer independent replicates of the claim's unit decide nothing
REPLICATE_UNITS = ("seed", "run", "replicate", "network")  # units whose n counts replicates
_COUNT_UNITS = ("part",)  # a count of parts' verdicts: a zero-width interval is exact there


@dataclass(frozen=True)
class Evidence:
    """An estimate with its interval, and the claim it is judged against.

    Attributes:
        estimate: the point estimate (e.g. mean paired difference of accuracies, points).
        low, high: the two-sided ``CONFIDENCE`` interval.
        threshold: the claim's threshold (``within``: the tolerance, > 0).
        side: ``"greater"`` (claim: estimate > threshold), ``"less"`` (estimate < threshold)
            or ``"within"`` (|estimate| <= threshold: "about equal").
        n: seeds (pairs) behind the interval.
        n_test: test examples behind each accuracy, if the interval uses them.
        method: how the interval was computed, one phrase.
        unit: what ``n`` counts (``"seed"``; ``"pair"`` for a correlation, ``"run"``).
        replicates: independent replicates of the claim's unit behind the interval (module
            docstring); ``None``: ``n`` for a unit in `REPLICATE_UNITS`, else 1.
    """

    estimate: float
    low: float
    high: float
    threshold: float = 0.0
    side: str = "greater"
    n: int = 1
    n_test: int | None = None
    method: str = ""
    unit: str = "seed"
    replicates: int | None = None

    def __post_init__(self):
        if self.replicates is None:
            object.__setattr__(self, "replicates",
                               int(self.n) if self.unit in REPLICATE_UNITS else 1)
        if isinstance(self.replicates, bool) or not isinstance(self.replicates, int) or \
                self.replicates < 0:
            raise ValueError(f"replicates must be an int >= 0, got {self.replicates!r}")
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        if self.side == "within" and not self.threshold > 0:
            raise ValueError(f"a 'within' claim needs a tolerance > 0, got {self.threshold}")
        if not (self.low <= self.estimate <= self.high) and all(
                map(math.isfinite, (self.low, self.estimate, self.high))):
            raise ValueError(f"estimate {self.estimate} outside its interval "
                             f"[{self.low}, {self.high}]")

    @property
    def half_width(self) -> float:
        """Half the interval's width: the smallest effect (distance of the estimate from the
        threshold) this interval can decide; ``inf`` without an interval."""
        if not all(map(math.isfinite, (self.low, self.high))):
            return math.inf
        return (self.high - self.low) / 2

    @property
    def refusal(self) -> str:
        """Why this interval may not decide a verdict (``""``: it may): fewer than
        `MIN_REPLICATES` independent replicates, or zero width (a capped or degenerate
        statistic: a t interval of identical values, a clipped log of a zero count)."""
        if self.replicates < MIN_REPLICATES:
            return (f"{self.replicates} independent replicate"
                    f"{'s' if self.replicates != 1 else ''}: a verdict needs "
                    f">= {MIN_REPLICATES}")
        if self._zero_width:
            return "zero-width interval (a capped or degenerate statistic)"
        return ""

    @property
    def _zero_width(self) -> bool:
        return self.low == self.high and math.isfinite(self.low) and \
            self.unit not in _COUNT_UNITS

    @property
    def claim_verdict(self) -> str:
        """The verdict of a claim test on this evidence: `verdict`, INCONCLUSIVE when the
        interval is refused (`refusal`). ``FigureWriter.check`` records it for every claim
        test."""
        v = self.verdict
        return "INCONCLUSIVE" if v != "INCONCLUSIVE" and self.refusal else v

    @property
    def verdict(self) -> str:
        """What the interval says: ``PASS``, ``FAIL`` or ``INCONCLUSIVE`` (NaN anywhere:
        ``INCONCLUSIVE``); a claim test records `claim_verdict`, which also weighs the
        replicates behind it."""
        lo, hi, t = self.low, self.high, self.threshold
        if not all(map(math.isfinite, (lo, hi))):
            return "INCONCLUSIVE"
        if self.side == "greater":
            return "PASS" if lo > t else "FAIL" if hi <= t else "INCONCLUSIVE"
        if self.side == "less":
            return "PASS" if hi < t else "FAIL" if lo >= t else "INCONCLUSIVE"
        if -t <= lo and hi <= t:
            return "PASS"
        return "FAIL" if lo > t or hi < -t else "INCONCLUSIVE"

    def judged(self, threshold: float, side: str = "greater") -> Evidence:
        """The same interval judged against another claim."""
        return Evidence(**{**asdict(self), "threshold": threshold, "side": side})

    def text(self, digits: int = 2) -> str:
        """``"+1.23 [-0.40, +2.86], 5 seeds"`` (and the test set size when used)."""
        f = f"{{:+.{digits}f}}"
        out = f"{f.format(self.estimate)} [{f.format(self.low)}, {f.format(self.high)}]"
        out += f", {self.n} {self.unit}{'s' if self.n != 1 else ''}"
        if self.replicates != self.n:
            out += f" ({self.replicates} independent)"
        if self.n_test:
            out += f", {self.n_test} test examples"
        return out

    @classmethod
    def from_record(cls, record: Mapping) -> Evidence:
        """The `Evidence` of a stored record (`as_record`; a field an older record lacks
        takes its default)."""
        names = [f for f in cls.__dataclass_fields__ if f in record]
        return cls(**{f: record[f] for f in names})

    def as_record(self) -> dict:
        """JSON-ready fields, as stored in ``checks.json``."""
        return {**asdict(self), "confidence": CONFIDENCE}


def replicates_needed(ev: Evidence, effect: float | None = None, *,
                      most: int = 10_000) -> int | None:
    """Independent replicates that would decide an effect of size ``effect`` (the distance
    from the threshold that the source reports; default: the estimate's own), from the spread
    measured over ``ev``'s replicates: the smallest ``m`` with ``t_{m-1} s / sqrt(m) <
    |effect - threshold|``, ``s`` the replicates' standard deviation behind the interval
    (its half-width is ``t_{n-1} s / sqrt(n)``). ``None`` where no spread over replicates was
    measured (fewer than 2), the effect sits on the threshold, or more than ``most`` would be
    needed.

    Example:
        >>> ev = Evidence(1.0, 1.0 - 2.776, 1.0 + 2.776, n=5)   # s = 2.776 * sqrt(5) / 2.776
        >>> replicates_needed(ev, 3.0)
        5
    """
    hw = ev.half_width
    if ev.replicates < 2 or ev.n < 2 or not math.isfinite(hw) or hw == 0:
        return None
    target = ev.estimate if effect is None else effect
    distance = abs(target - ev.threshold) if ev.side != "within" else \
        ev.threshold - abs(target)
    if not math.isfinite(distance) or distance <= 0:
        return None
    q = 0.5 + CONFIDENCE / 2
    s = hw * math.sqrt(ev.n) / float(stats.t.ppf(q, ev.n - 1))
    for m in range(2, most + 1):
        if float(stats.t.ppf(q, m - 1)) * s / math.sqrt(m) < distance:
            return max(m, MIN_REPLICATES)
    return None


def per_seed(results: Sequence[Mapping], fn, *, nan_if_diverged: bool = False) -> np.ndarray:
    """``fn(result)`` for each run's result (one per seed, in order), as floats: the samples a
    paired interval compares. ``nan_if_diverged``: NaN for a run flagged ``diverged``, without
    calling ``fn`` (its history may end early).

    Example:
        >>> per_seed([{"a": 1, "diverged": False}, {"a": 2, "diverged": True}], lambda r: r["a"],
        ...          nan_if_diverged=True)
        array([ 1., nan])
    """
    return np.array([np.nan if nan_if_diverged and r["diverged"] else float(fn(r))
                     for r in results], dtype=float)


def margin(ev: Evidence) -> float:
    """How far the interval lies on the claim's side of the threshold (< 0: it does not)."""
    if ev.side == "greater":
        return ev.low - ev.threshold
    if ev.side == "less":
        return ev.threshold - ev.high
    return ev.threshold - max(abs(ev.low), abs(ev.high))


_WEAKEST_FIRST = {"FAIL": 0, "INCONCLUSIVE": 1, "PASS": 2}


def least_favourable(parts: Mapping[str, Evidence]) -> tuple[str, Evidence]:
    """The part that decides a claim "every part holds": its verdict is the conjunction's
    (the first FAIL, else an INCONCLUSIVE part, else the PASS with the narrowest margin).

    Raises:
        ValueError: no parts.
    """
    if not parts:
        raise ValueError("a claim on every part needs at least one part")

    def rank(item):
        m = margin(item[1])
        return _WEAKEST_FIRST[item[1].verdict], m if math.isfinite(m) else -math.inf

    return min(parts.items(), key=rank)


def every(parts: Mapping[str, Evidence]) -> Evidence:
    """A claim that holds for every part: the least favourable part's verdict and interval
    (`least_favourable`); its ``method`` names the deciding part."""
    name, ev = least_favourable(parts)
    return replace(ev, method=f"{ev.method}; deciding part: {name} (of {len(parts)}, all "
                              f"must hold)")


def at_least(parts: Mapping[str, Evidence], k: int) -> Evidence:
    """A claim that holds for at least ``k`` of the parts ("on >= 2 of 3 shifts", "at most
    evaluation points"), as a count: the interval is ``[parts that PASS, PASS +
    INCONCLUSIVE]`` judged against ``k - 1/2``, so PASS when ``k`` parts are decided for the
    claim and FAIL when fewer than ``k`` could hold even counting every undecided part; the
    estimate counts the parts whose point estimate lies on the claim's side, clipped to the
    interval."""
    if not parts or not 1 <= k <= len(parts):
        raise ValueError(f"need 1 <= k <= {len(parts)} parts, got k = {k}")
    verdicts = [ev.verdict for ev in parts.values()]
    n_pass, n_open = verdicts.count("PASS"), verdicts.count("INCONCLUSIVE")
    decided = [ev.replicates for ev in parts.values() if ev.verdict != "INCONCLUSIVE"]
    leaning = sum(_leans_for(ev) for ev in parts.values())
    estimate = min(max(leaning, n_pass), n_pass + n_open)
    return Evidence(float(estimate), float(n_pass), float(n_pass + n_open), k - 0.5, "greater",
                    len(parts), None,
                    f"count of {len(parts)} parts (each on {min(ev.n for ev in parts.values())}+ "
                    f"seeds): low = decided for the claim, high = decided + undecided; at least "
                    f"{k} must hold", unit="part",
                    replicates=min(decided or [ev.replicates for ev in parts.values()]))


def _leans_for(ev: Evidence) -> bool:
    """The point estimate lies on the claim's side."""
    if ev.side == "greater":
        return ev.estimate > ev.threshold
    if ev.side == "less":
        return ev.estimate < ev.threshold
    return abs(ev.estimate) <= ev.threshold


def texts(parts: Mapping[str, Evidence], digits: int = 2) -> dict[str, str]:
    """``{part: "+1.23 [-0.40, +2.86], 5 seeds (PASS)"}`` for a check's ``ours``."""
    return {str(k): f"{ev.text(digits)} ({ev.verdict})" for k, ev in parts.items()}


def _t_interval(x: np.ndarray) -> tuple[float, float, float]:
    mean = float(x.mean())
    if len(x) < 2:
        return mean, -math.inf, math.inf
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def _values(name: str, x) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    return arr


def paired_difference(a: Sequence[float], b: Sequence[float], *, threshold: float = 0.0,
                      side: str = "greater", n_test: int | None = None,
                      scale: float = 1.0) -> Evidence:
    """Evidence on ``mean(a - b)``, ``a[i]`` and ``b[i]`` being the same seed's runs.

    With one pair, the interval needs ``n_test`` and treats ``a``, ``b`` as accuracies in
    [0, 1] (see the module docstring); without ``n_test`` it is infinite (INCONCLUSIVE).

    Args:
        a, b: one value per seed, in the same seed order.
        threshold, side: the claim (see `Evidence`).
        n_test: test examples behind each accuracy (used only for one pair).
        scale: multiply estimate and interval (e.g. 100 for percentage points); the
            threshold is in the scaled unit.

    Raises:
        ValueError: empty input or unequal lengths.
    """
    a, b = _values("a", a), _values("b", b)
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {a.size} and {b.size}")
    d = a - b
    mask = np.isfinite(d)
    d = d[mask]
    if d.size == 0:
        return Evidence(math.nan, math.nan, math.nan, threshold, side, 0, n_test,
                        "no finite pair (diverged runs?)")
    if d.size == 1 and n_test:
        pa, pb = float(a[mask][0]), float(b[mask][0])
        if not (0 <= pa <= 1 and 0 <= pb <= 1):
            raise ValueError(f"one pair with n_test needs accuracies in [0, 1], got {pa}, {pb}")
        se = math.sqrt(pa * (1 - pa) / n_test + pb * (1 - pb) / n_test)
        z = float(stats.norm.ppf(0.5 + CONFIDENCE / 2))
        mean, low, high = float(d[0]), float(d[0]) - z * se, float(d[0]) + z * se
        method = "one seed: normal interval of two accuracies on the test set"
    else:
        mean, low, high = _t_interval(d)
        method = f"paired t over {d.size} seeds" if d.size > 1 else "one seed, no test size"
    return Evidence(scale * mean, scale * low, scale * high, threshold, side, int(d.size),
                    n_test, method)


def mean_interval(x: Sequence[float], *, threshold: float = 0.0, side: str = "greater",
                  scale: float = 1.0, unit: str = "seed") -> Evidence:
    """Evidence on the mean of a quantity measured once per seed (t interval); ``unit``
    names what one value is (``"run"`` when runs of several tasks are pooled)."""
    v = _values("x", x)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Evidence(math.nan, math.nan, math.nan, threshold, side, 0, None,
                        "no finite value", unit=unit)
    mean, low, high = _t_interval(v)
    return Evidence(scale * mean, scale * low, scale * high, threshold, side, int(v.size), None,
                    f"t over {v.size} {unit}s" if v.size > 1 else f"one {unit}: no interval",
                    unit=unit)


BOOTSTRAP_RESAMPLES = 2000


def bootstrap_difference(correct_a, correct_b, *, threshold: float = 0.0,
                         side: str = "greater", scale: float = 1.0,
                         resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> Evidence:
    """Evidence on ``acc_a - acc_b`` of runs on the same test set, from per-example
    correctness: the paired bootstrap over examples (percentile interval, seeded).

    With one run per side (1-D inputs) it resamples the test examples (an interval for that
    one trained pair: one replicate, so it decides no claim about a method). With ``k > 1``
    seeds (2-D inputs ``[k, n_test]``, row ``i`` of both sides the same seed) seeds and test
    examples are crossed random effects: the variance of the mean difference is
    ``(MS_seed + MS_example - MS_residual) / (k n)`` from the two-way analysis of variance
    (at least ``MS_seed / (k n)`` and ``MS_example / (k n)``, each a variance of its own), with Student's t on ``k - 1`` degrees of
    freedom. It covers the spread over training seeds and the test set's sampling. (It
    replaced a two-level percentile bootstrap, which covered 86 % at 3 seeds when the seeds'
    spread dominates: `tests/test_interval_calibration.py`.)

    Args:
        correct_a, correct_b: one score per test example, same example order: a bool or
            0/1, or a fraction (e.g. one example's mean correctness over several runs);
            ``[k, n_test]`` for ``k`` seeds paired by row.
        threshold, side, scale: as in `paired_difference`.
        resamples: bootstrap resamples.
        seed: of the resampling (the interval is deterministic for a given seed).
    """
    a, b = (np.asarray(x, dtype=np.float64) for x in (correct_a, correct_b))
    if a.ndim > 2 or b.ndim > 2:
        raise ValueError(f"correctness must be [n_test] or [seeds, n_test], got shapes "
                         f"{a.shape} and {b.shape}")
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"paired values need equal, non-empty shapes, got {a.shape} and "
                         f"{b.shape}")
    d = a - b                                  # [seeds, examples]
    k, n = d.shape
    if k > 1:
        return _crossed_t(d, threshold, side, scale)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, 256):    # blocks keep memory at k x 256 x n values
        stop = min(start + 256, resamples)
        rows = d[:, rng.integers(0, n, size=(stop - start, n))].mean(axis=2)  # [k, block]
        if k > 1:
            picks = rng.integers(0, k, size=(stop - start, k))
            means[start:stop] = np.take_along_axis(rows.T, picks, axis=1).mean(axis=1)
        else:
            means[start:stop] = rows[0]
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    est = float(d.mean())
    low, high = min(float(low), est), max(float(high), est)
    how = (f"one seed: paired bootstrap over {n} test examples" if k == 1 else
           f"{k} seeds: two-level paired bootstrap over seeds and {n} test examples")
    return Evidence(scale * est, scale * low, scale * high, threshold, side, k, n, how)


def _crossed_t(d: np.ndarray, threshold: float, side: str, scale: float) -> Evidence:
    """`bootstrap_difference`'s interval over ``k > 1`` seeds: seeds x examples crossed."""
    k, n = d.shape
    rows, cols, mean = d.mean(1, keepdims=True), d.mean(0, keepdims=True), float(d.mean())
    ms_seed = n * float(((rows - mean) ** 2).sum()) / (k - 1)
    ms_example = k * float(((cols - mean) ** 2).sum()) / (n - 1) if n > 1 else 0.0
    ms_res = float(((d - rows - cols + mean) ** 2).sum()) / ((k - 1) * (n - 1)) if n > 1 \
        else 0.0
    var = max(ms_seed + ms_example - ms_res, ms_seed) / (k * n)  # the seed part is a floor
    if var == 0:  # every seed and example the same difference: no spread, no interval
        return Evidence(scale * mean, -math.inf, math.inf, threshold, side, k, n,
                        f"{k} seeds x {n} test examples: no spread, no interval")
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, k - 1)) * math.sqrt(var)
    return Evidence(scale * mean, scale * (mean - half), scale * (mean + half), threshold, side,
                    k, n, f"{k} seeds x {n} test examples: t interval of crossed random "
                          "effects (two-way ANOVA)")


def rank_correlation(x: Sequence[float], y: Sequence[float], *, threshold: float = 0.0,
                     side: str = "greater") -> Evidence:
    """Evidence on Spearman's rho of paired observations ``(x[i], y[i])``.

    The interval is Fisher's z transform with Bonett & Wright's (2000) standard error for
    Spearman's rho, ``sqrt((1 + rho^2 / 2) / (n - 3))``; pairs with a non-finite value are left
    out. It treats the pairs as independent: pooled epochs of the same run are not, so the
    interval is then narrower than it should be (the caller says so).
    """
    a, b = _values("x", x), _values("y", y)
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {a.size} and {b.size}")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = int(a.size)
    if n < 4 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Evidence(math.nan, -math.inf, math.inf, threshold, side, n, None,
                        f"Spearman over {n} pairs: too few or constant", unit="pair")
    rho = float(stats.spearmanr(a, b).statistic)
    z = math.atanh(min(max(rho, -0.999999), 0.999999))
    half = float(stats.norm.ppf(0.5 + CONFIDENCE / 2)) * math.sqrt((1 + rho ** 2 / 2) / (n - 3))
    low, high = math.tanh(z - half), math.tanh(z + half)    # tanh(atanh(rho)) may round off rho
    return Evidence(rho, min(low, rho), max(high, rho), threshold, side, n, None,
                    f"Spearman over {n} pairs, Fisher-z interval (Bonett-Wright)", unit="pair")


def rank_correlation_by_seed(groups: Sequence[tuple[Sequence[float], Sequence[float]]], *,
                             threshold: float = 0.0, side: str = "greater") -> Evidence:
    """Evidence on Spearman's rho of pairs from several runs, with the run as the unit.

    Pairs from one run (its epochs, its layers, its sweep over a setting) are not independent,
    so `rank_correlation` over the pooled pairs would give too narrow an interval. Here each run
    (``groups[i] = (x_i, y_i)``, one seed each) gives its own rho, and the estimate is their
    mean with Student's t interval over runs (runs are independent; ``n - 1`` degrees of
    freedom), clipped to [-1, 1]. A run with fewer than 3 finite pairs, or a constant side, has
    no rho and is left out; fewer than 2 runs with a rho: an infinite interval.
    """
    rhos = []
    for x, y in groups:
        a, b = _values("x", x), _values("y", y)
        if a.shape != b.shape:
            raise ValueError(f"paired values need equal lengths, got {a.size} and {b.size}")
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok], b[ok]
        if a.size >= 3 and np.ptp(a) > 0 and np.ptp(b) > 0:
            rhos.append(float(stats.spearmanr(a, b).statistic))
    n_pairs = sum(np.isfinite(np.asarray(x, float)).sum() for x, _ in groups)
    method = (f"mean of {len(rhos)} runs' Spearman rho ({n_pairs} pairs in all), t interval "
              "over runs")
    if not rhos:
        return Evidence(math.nan, -math.inf, math.inf, threshold, side, 0, None,
                        method + ": no run with a rho", unit="run")
    mean, low, high = _t_interval(np.array(rhos))
    low, high = max(low, -1.0), min(high, 1.0)
    return Evidence(mean, min(low, mean), max(high, mean), threshold, side, len(rhos), None,
                    method, unit="run")
