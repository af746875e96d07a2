"""Chapter 05's verdicts: one function per source item, from the runs' results (or the numbers
the notebook computed from them) to a frozen dataclass of its numbers and `Finding`\\ s, one per
claim of `lalr_core.chapters.ch05_quasi_newton.claims.CLAIMS`.

Paired differences are paired by seed (same initialisation and batch order) and judged on 95 %
t intervals (`lalr_core.core.results.evidence`). Every function here has synthetic PASS, FAIL
and INCONCLUSIVE cases in ``tests/test_ch05_quasi_newton_claims.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.chapters.ch05_quasi_newton.claims import CLAIMS, TABLE_E1
from lalr_core.chapters.ch05_quasi_newton.numbers import (
    crossover_epoch,
    diverged,
    final_accuracy,
    final_loss,
    held_out_loss,
    loss_after_steps,
    mean_curve,
)
from lalr_core.chapters.ch05_quasi_newton.settings import QN
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import (
    CONFIDENCE,
    Evidence,
    every,
    mean_interval,
    paired_difference,
    per_seed,
    texts,
)


def _judged(claim_id: str, ev: Evidence) -> Evidence:
    return CLAIMS[claim_id].judge(ev)


# ----------------------------------------------------------------------------- fig 4.6
def mean_held_out_loss(res: dict) -> float:
    """The held-out loss averaged over the epochs (the area under fig 4.6's curve per epoch:
    lower is faster improvement; NaN once a run diverged)."""
    return float("nan") if res["diverged"] else float(np.mean(held_out_loss(res)))


def detrended_volatility(res: dict) -> float:
    """RMS of the second differences of the log held-out loss over the epochs.

    The spread of the first differences (`numbers.volatility`) grows with the speed of descent:
    a fast, smooth exponential decay has large, varying steps. The second difference of the log
    loss is zero for any exponential decay (and near zero for a power law), so what remains is
    the epoch-to-epoch wobble around the trend. NaN once a run diverged or with < 3 epochs.
    """
    loss = held_out_loss(res)
    if res["diverged"] or len(loss) < 3 or not np.all(loss > 0):
        return float("nan")
    return float(np.sqrt(np.mean(np.diff(np.log(loss), n=2) ** 2)))


@dataclass(frozen=True)
class Fig46:
    """Fig 4.6's findings (claims ``fig4.6-*``) and the per-arm numbers behind them."""

    accuracy: Finding
    slower: Finding
    volatile: Finding
    diverge: Finding
    numbers: pd.DataFrame = field(repr=False)


def fig46(runs: Mapping[tuple[str, int], dict], diverge_runs: Mapping[tuple[str, int], dict],
          seeds: Sequence[int], diverge_lr: float) -> Fig46:
    """Fig 4.6 from the runs ``(arm, seed) -> result`` (arms ``"sgd"`` and QN) at the figure's
    lr and at ``diverge_lr``: SGD − QN final accuracy, QN − SGD mean held-out loss and QN − SGD
    `detrended_volatility`, each paired by seed; and whether every run at ``diverge_lr``
    diverged (`numbers.diverged`)."""
    sgd = [runs[("sgd", s)] for s in seeds]
    qn = [runs[(QN, s)] for s in seeds]
    acc = _judged("fig4.6-accuracy", paired_difference(per_seed(sgd, final_accuracy),
                                                       per_seed(qn, final_accuracy)))
    slow = _judged("fig4.6-slower", paired_difference(per_seed(qn, mean_held_out_loss),
                                                      per_seed(sgd, mean_held_out_loss)))
    vol = _judged("fig4.6-volatile", paired_difference(per_seed(qn, detrended_volatility),
                                                       per_seed(sgd, detrended_volatility)))
    loss = paired_difference(per_seed(qn, final_loss), per_seed(sgd, final_loss))
    counts = {arm: sum(diverged(diverge_runs[(arm, s)]) for s in seeds) for arm in ("sgd", QN)}
    numbers = pd.DataFrame({arm: {
        "final acc (%)": np.nanmean(per_seed(rs, final_accuracy)),
        "final loss": np.nanmean(per_seed(rs, final_loss)),
        "mean held-out loss": np.nanmean(per_seed(rs, mean_held_out_loss)),
        "detrended volatility": np.nanmean(per_seed(rs, detrended_volatility)),
        f"diverged at lr {diverge_lr:g}": counts[arm]} for arm, rs in (("sgd", sgd), (QN, qn))})
    return Fig46(
        accuracy=Finding(acc, f"SGD − QN final accuracy: {acc.text(2)} points; QN − SGD final "
                              f"loss: {loss.text(3)}", "paired by seed"),
        slower=Finding(slow, f"QN − SGD mean held-out loss over the epochs: {slow.text(3)}",
                       "paired by seed"),
        volatile=Finding(vol, f"QN − SGD RMS of Δ² log loss: {vol.text(4)}",
                         "paired by seed; the second difference of log loss removes the trend "
                         "of a smooth descent"),
        diverge=Finding(all(n == len(seeds) for n in counts.values()),
                        {arm: f"{n} of {len(seeds)} runs diverged" for arm, n in counts.items()},
                        f"diverged: NaN, or a final loss above the initial ln 10, at lr "
                        f"{diverge_lr:g}; in every seed", replicates=len(seeds)),
        numbers=numbers)


# ----------------------------------------------------------------------------- tables E.1 / E.2
@dataclass(frozen=True)
class TableE:
    """Tables E.1 / E.2's findings (claims ``tableE.1``, ``tableE.2``)."""

    accuracy: Finding
    degrades: Finding


def table_e_findings(runs: Mapping[tuple[str, float, int], dict], lrs: Sequence[float],
                     seeds: Sequence[int]) -> TableE:
    """From the runs ``(arm, lr, seed) -> result`` (arms ``"sgdm"`` and QN, ``lrs`` largest
    first): SGDM − QN final accuracy > 0 at every lr (the least favourable lr decides), and
    (QN(low) − QN(high)) − (SGDM(low) − SGDM(high)) final held-out loss > 0."""
    def seeds_of(arm, lr, fn):
        return per_seed([runs[(arm, lr, s)] for s in seeds], fn)

    parts = {f"lr {lr:g}": _judged("tableE.1", paired_difference(
        seeds_of("sgdm", lr, final_accuracy), seeds_of(QN, lr, final_accuracy))) for lr in lrs}
    hi, lo = lrs[0], lrs[-1]
    drop = {arm: seeds_of(arm, lo, final_loss) - seeds_of(arm, hi, final_loss)
            for arm in ("sgdm", QN)}
    ev2 = _judged("tableE.2", paired_difference(drop[QN], drop["sgdm"]))
    source = {f"lr {lr:g}": f"SGDM {s} vs QN {q}" for lr, (s, q) in TABLE_E1.items()}
    return TableE(
        accuracy=Finding(every(parts), {"SGDM − QN, points": texts(parts), "source": source},
                         "paired by seed; every learning rate must hold"),
        degrades=Finding(ev2, f"(QN({lo:g}) − QN({hi:g})) − (SGDM({lo:g}) − SGDM({hi:g})): "
                              f"{ev2.text(3)}", "paired by seed"))


# ----------------------------------------------------------------------------- figs 4.7-4.9
@dataclass(frozen=True)
class Fig47To49:
    """Figs 4.7-4.9's findings on one probed run (claims ``fig4.7-*``, ``fig4.8-*``,
    ``fig4.9-*``)."""

    lc_small: Finding
    lc_start: Finding
    sl_high: Finding
    sl_relaxes: Finding
    gc_overlap: Finding
    gc_contrast: Finding


def share_interval(k: int, n: int, *, threshold: float = 0.5, side: str = "greater",
                   unit: str = "step") -> Evidence:
    """Evidence on a share ``k / n`` with its Clopper-Pearson interval (exact binomial,
    ``CONFIDENCE``), e.g. the share of batches with a positive cosine against the 1/2 of a
    sign-symmetric null. It treats the ``n`` trials as independent."""
    if n <= 0:
        return Evidence(np.nan, -np.inf, np.inf, threshold, side, 0, None, "no trials",
                        unit=unit)
    tail = (1 - CONFIDENCE) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return Evidence(k / n, low, high, threshold, side, n, None,
                    f"Clopper-Pearson interval of a share of {n} {unit}s", unit=unit)


def _runs(x) -> list:
    """One run's record as a list of one, or the list of independent runs' records."""
    return [x] if isinstance(x, (pd.DataFrame, Mapping)) else list(x)


def fig47_49(lc, sl, gc, random_scale: float, lc_bound: float = 0.1) -> Fig47To49:
    """From one run's records, or a list of independent runs' (each bool then holds in every
    run, and fig 4.9's share is a t interval over the runs): ``lc`` (column ``q_lc`` per
    checkpoint, the start first), ``sl`` (``q_sl`` per record), ``gc`` (``q_gc`` as printed and
    ``q_gc_pairs`` per batch) and the random-vector scale ``10 / sqrt(P)``. One run is one
    replicate: its verdicts are recorded INCONCLUSIVE."""
    lcs, sls, gcs = _runs(lc), _runs(sl), _runs(gc)
    k = len(lcs)
    q_lc = [x.q_lc.to_numpy(float) for x in lcs]
    q_sl = [x.q_sl.to_numpy(float) for x in sls]
    valid = [g.q_gc.dropna().to_numpy(float) for g in gcs]
    if k == 1:
        ev = share_interval(int((valid[0] > 0).sum()), len(valid[0]))
    else:
        ev = mean_interval([float(np.mean(v > 0)) for v in valid], unit="run")
    ev = _judged("fig4.9-overlap", ev)
    how = "one run" if k == 1 else f"in every one of {k} runs"
    first = 0
    return Fig47To49(
        lc_small=Finding(bool(all((q < lc_bound).all() for q in q_lc)),
                         {f"checkpoint {i}": f"{v:.3g}" for i, v in enumerate(q_lc[first])},
                         f"our bound {lc_bound:g}; q^LC = u/f² scales as 1/logit; {how}",
                         replicates=k),
        lc_start=Finding(bool(all(q[0] > q[1:].max() for q in q_lc)),
                         {"start": f"{q_lc[first][0]:.3g}",
                          "largest later": f"{q_lc[first][1:].max():.3g}"}, how, replicates=k),
        sl_high=Finding(bool(all((q > random_scale).all() for q in q_sl)),
                        {"min q^SL": round(float(min(q.min() for q in q_sl)), 4),
                         "10/√P": round(float(random_scale), 4)}, how, replicates=k),
        sl_relaxes=Finding(bool(all(q[-1] < q[0] for q in q_sl)),
                           {"start": round(float(q_sl[first][0]), 4),
                            "end": round(float(q_sl[first][-1]), 4)}, how, replicates=k),
        gc_overlap=Finding(ev, {"share of batches with q^GC > 0": ev.text(3),
                                "median q^GC (printed)": round(float(np.median(valid[first])), 4),
                                "median over pairs": round(float(gcs[first].q_gc_pairs.median()),
                                                           4),
                                "batches whose pair mean > 10/√P": round(float(
                                    (gcs[first].q_gc_pairs > random_scale).mean()), 4)},
                           "one run (1 replicate): successive batches are not independent, so "
                           "the interval is narrower than it should be" if k == 1 else
                           f"t interval over {k} runs' shares"),
        gc_contrast=Finding(bool(all(q.mean() > g.q_gc_pairs.mean() for q, g in zip(
            q_sl, gcs, strict=True))),
                            {"mean q^SL": round(float(q_sl[first].mean()), 4),
                             "mean q^GC over pairs": round(float(gcs[first].q_gc_pairs.mean()),
                                                           4)},
                            f"{how}; the mean over pairs is twice eq. 4.41 as printed",
                            replicates=k))


# ----------------------------------------------------------------------------- fig E.1
@dataclass(frozen=True)
class FigE1:
    """Fig E.1's findings (claims ``figE.1-cosine``, ``figE.1-rank``)."""

    cosine: Finding
    rank: Finding
    null_q99: float


def fige1(alignment, null, classes: int, rtol: float) -> FigE1:
    """From `hessian.class_subspace_alignment`'s ``alignment`` (``hungarian`` per stored batch,
    the ``late`` mask, ``median_early`` / ``median_late`` per tolerance, ``ranks``) and the
    assignment's mean |cos| of random directions against the same eigenvectors (``null``,
    `hessian.random_assignment_null`), of one run or lists over independent runs: the late
    batches' excess over the null's 99th percentile (one run: t interval over its batches, 1
    replicate; several: t interval over the runs' mean excess), and whether the median rank
    at ``rtol`` falls to at most ``C + 2`` and below its early median (in every run)."""
    als = _runs(alignment)
    nulls = [null] if len(als) == 1 else list(null)
    k = len(als)
    q99s = [float(np.quantile(np.asarray(n_, dtype=float), 0.99)) for n_ in nulls]
    excess = []
    for al, q in zip(als, q99s, strict=True):
        late = np.asarray(al["hungarian"], dtype=float)[np.asarray(al["late"])]
        excess.append(late[np.isfinite(late)] - q)
    ev = mean_interval(excess[0], unit="step") if k == 1 else \
        mean_interval([float(e.mean()) for e in excess], unit="run")
    ev = _judged("figE.1-cosine", ev)
    al = als[0]
    early_med, late_med = al["median_early"][rtol], al["median_late"][rtol]
    ranks = np.asarray(al["ranks"][rtol], dtype=float)
    holds = all(a["median_late"][rtol] <= classes + 2 and
                a["median_late"][rtol] < a["median_early"][rtol] for a in als)
    how = "one run" if k == 1 else f"in every one of {k} runs"
    return FigE1(
        cosine=Finding(ev, {"late batches' mean |cos| − null q99": ev.text(4),
                            "null (random directions) q99": round(q99s[0], 4),
                            "null median": round(float(np.median(nulls[0])), 4)},
                       "one run (1 replicate); successive batches are not independent"
                       if k == 1 else f"t interval over {k} runs"),
        rank=Finding(bool(holds),
                     {"median, first 10 %": early_med, "median, last 20 %": late_med,
                      "C": classes,
                      "steps at rank C (%)": round(100 * float(np.mean(ranks == classes)), 1)},
                     f"{how}; numerical rank at τ = {rtol:g}", replicates=k),
        null_q99=q99s[0])


# ----------------------------------------------------------------------------- fig 4.10
@dataclass(frozen=True)
class Fig410:
    """Fig 4.10's findings (claims ``fig4.10-*``), the crossover epochs of the seed-mean curves
    per batch size (None: SGD not below QN at the end), and the per-size evidence."""

    early: Finding
    overtakes: Finding
    order: Finding
    source_lr: Finding
    crossovers: dict
    overtake_parts: dict
    source_parts: dict


def _overtake_parts(runs: Mapping[tuple[str, int], Sequence[dict]], sizes: Sequence[int],
                    claim_id: str) -> dict[str, Evidence]:
    return {f"batch {bs}": _judged(claim_id, paired_difference(
        per_seed(runs[(QN, bs)], final_loss), per_seed(runs[("sgd", bs)], final_loss)))
        for bs in sizes}


def crossover_order(crossovers: Mapping[int, int | None]) -> bool | None:
    """Fig 4.10's order on the crossover epochs ``{batch size: epoch}``: no later for a
    smaller batch (non-increasing as the batch shrinks). None (not judged) when a batch size
    has no crossover: "no crossover" is not a late one, and the overtaking claim reports it."""
    if any(c is None for c in crossovers.values()):
        return None
    order = [crossovers[bs] for bs in sorted(crossovers, reverse=True)]
    return bool(all(a >= b for a, b in pairwise(order)))


def fig410(runs: Mapping[tuple[str, int], Sequence[dict]], sizes: Sequence[int],
           early_steps: int, source_runs: Mapping[tuple[str, int], Sequence[dict]],
           source_lr: float) -> Fig410:
    """From the runs ``(arm, batch size) -> [result per seed]`` at the chapter's lr and at the
    thesis's ``source_lr`` (``source_runs``): SGD − QN held-out loss after ``early_steps``
    steps > 0 at every size; QN − SGD final held-out loss > 0 at every size (at both lrs); the
    crossover order (`crossover_order`)."""
    early = {f"batch {bs}": _judged("fig4.10-early", paired_difference(
        per_seed(runs[("sgd", bs)], lambda r: loss_after_steps(r, early_steps)),
        per_seed(runs[(QN, bs)], lambda r: loss_after_steps(r, early_steps)))) for bs in sizes}
    over = _overtake_parts(runs, sizes, "fig4.10-overtakes")
    src = _overtake_parts(source_runs, sizes, "fig4.10-source-lr")
    cross = {bs: crossover_epoch(mean_curve(runs[("sgd", bs)]), mean_curve(runs[(QN, bs)]))
             for bs in sizes}
    n_seeds = len(runs[("sgd", sizes[0])])
    per_seed_cross = [{bs: crossover_epoch(held_out_loss(runs[("sgd", bs)][i]),
                                           held_out_loss(runs[(QN, bs)][i])) for bs in sizes}
                      for i in range(n_seeds)]
    orders = [crossover_order(c) for c in per_seed_cross]
    order = None if any(o is None for o in orders) else all(orders)
    missing = sorted({bs for c in per_seed_cross for bs, e in c.items() if e is None})
    src_cross = {f"batch {bs}": crossover_epoch(mean_curve(source_runs[("sgd", bs)]),
                                                mean_curve(source_runs[(QN, bs)]))
                 for bs in sizes}
    return Fig410(
        early=Finding(every(early), texts(early, 3),
                      f"SGD − QN held-out loss at the first epoch ending at ≥ {early_steps} "
                      "steps, paired by seed; every batch size must hold"),
        overtakes=Finding(every(over), texts(over, 3),
                          "QN − SGD final held-out loss, paired by seed; every batch size, the "
                          "full batch included, must hold"),
        order=Finding(order, {"per seed": [{f"batch {bs}": e for bs, e in c.items()}
                                           for c in per_seed_cross],
                              "seed-mean curves": {f"batch {bs}": c for bs, c in cross.items()}},
                      f"crossover epoch per seed, non-increasing as the batch shrinks, in "
                      f"every one of {n_seeds} seeds" if order is not None else
                      f"not judged: no crossover at batch {missing} in some seed (the "
                      "overtaking claim carries it)", replicates=n_seeds),
        source_lr=Finding(every(src), {**texts(src, 3), "crossover epochs": src_cross},
                          f"at lr {source_lr:g}, the caption's; paired by seed"),
        crossovers=cross, overtake_parts=over, source_parts=src)


# ----------------------------------------------------------------------------- fig 4.11
@dataclass(frozen=True)
class Fig411:
    """Fig 4.11's findings (claims ``fig4.11-*``)."""

    large: Finding
    zero: Finding


def fig411(spec, n_eigenvalues: int) -> Fig411:
    """From `hessian.spectrum_numbers` of one run, or a list over independent runs (each bool
    then holds in every run): λ_max > 10 × the median of the top 30, and > 90 % of the
    ``n_eigenvalues`` with |λ| < 0.01 λ_max (N/A when only the top is known). One run is one
    replicate: recorded INCONCLUSIVE."""
    specs = _runs(spec)
    k, sp = len(specs), specs[0]
    how = "one run" if k == 1 else f"in every one of {k} runs"
    return Fig411(
        large=Finding(bool(all(x["lam_max"] > 10 * x["median_top"] for x in specs)),
                      f"λ_max {sp['lam_max']:.4g}, median of top 30 {sp['median_top']:.4g}",
                      how, replicates=k),
        zero=Finding(None, detail=f"needs every eigenvalue; the Hessian of {n_eigenvalues} "
                     "parameters is too large to form, and Lanczos gave its top 30")
        if any(x["small"] is None for x in specs) else
        Finding(bool(all(x["small"] > 0.9 for x in specs)),
                f"{100 * sp['small']:.1f} % of {n_eigenvalues}", how, replicates=k))


# ----------------------------------------------------------------------------- fig 4.14
@dataclass(frozen=True)
class Fig414:
    """Fig 4.14's findings (claims ``fig4.14-*``)."""

    rastrigin: Finding
    rosenbrock: Finding


def fig414(runs: Mapping[str, Mapping]) -> Fig414:
    """From `known_matrix.fig414_run`'s two runs (``path``, ``numbers`` with ``"falls on (% of
    steps)"``): Rastrigin's D_t falls on < 10 % of the steps and its path ends at (0, 0);
    Rosenbrock's falls on > 20 % and its path ends at (1, 1) (both to 1e-3)."""
    ras, ros = runs["rastrigin"], runs["rosenbrock"]
    key = "falls on (% of steps)"
    return Fig414(
        rastrigin=Finding(bool(ras["numbers"][key] < 10
                               and np.allclose(ras["path"][-1], 0, atol=1e-3)),
                          dict(ras["numbers"]), "deterministic gradients; our start and lr"),
        rosenbrock=Finding(bool(ros["numbers"][key] > 20
                                and np.allclose(ros["path"][-1], 1, atol=1e-3)),
                           dict(ros["numbers"]), "deterministic gradients; our start and lr"))


# ----------------------------------------------------------------------------- fig 4.15
@dataclass(frozen=True)
class Fig415:
    """Fig 4.15's findings (claims ``fig4.15-*``), from one row of numbers per seed."""

    toward: Finding
    few: Finding
    rises: Finding
    early: Finding
    spread: Finding


def fig415(numbers: pd.DataFrame, threshold: float, null: pd.DataFrame) -> Fig415:
    """From `numbers.phi_numbers` per seed (rows) and `numbers.random_walk_phi_numbers` of the
    same seeds (``null``: the same optimiser, steps and per-filter gradient norms, independent
    random directions): the claims judged against that null, paired by seed (the median φ_t
    with step t's own update left out, real − null < 0; D_t(T/4)/D_t(T), real − null > 0);
    the checks the null also passes (the share beyond 10/√n < 25 %, D_t rising on > 90 % of
    the steps, the log spread ratio > 0) as t intervals over seeds of the real run, the null's
    beside them."""
    null = null.loc[numbers.index]

    def vs_null(cid, col):
        return _judged(cid, paired_difference(numbers[col], null[col]))

    ev = {"fig4.15-toward": vs_null("fig4.15-toward", "median_phi_null"),
          "fig4.15-early": vs_null("fig4.15-early", "dt_quarter")}
    ev.update({cid: _judged(cid, mean_interval(numbers[col]))
               for cid, col in (("fig4.15-few", "significant"), ("fig4.15-rises", "dt_rises"),
                                ("fig4.15-spread", "log_spread"))})
    nul = {col: mean_interval(null[col]).text(3)
           for col in ("median_phi_null", "significant", "dt_rises", "dt_quarter", "log_spread")}
    raw = mean_interval(numbers["median_phi"], side="less")
    return Fig415(
        toward=Finding(ev["fig4.15-toward"], {
            "median φ_t, own update left out, real − null": ev["fig4.15-toward"].text(3),
            "the same, null alone": nul["median_phi_null"],
            "median φ_t as recorded (contains step t's own update)": raw.text(3)},
            "θ_τ − θ_t contains step t's own update, −lr g_t (1 − β^(τ−t+1)) / (1 − β) with "
            "momentum β, which points against g_t by construction; it is removed before the "
            "cosine. Median over steps and filters, one per seed, paired with its "
            "independent-gradient null"),
        few=Finding(ev["fig4.15-few"], {"share": ev["fig4.15-few"].text(4),
                                        "null's share": nul["significant"],
                                        "threshold 10/√n": round(float(threshold), 3)},
                    "10/√n of app. A.1.4; independent gradients pass it too"),
        rises=Finding(ev["fig4.15-rises"], {"share of steps": ev["fig4.15-rises"].text(4),
                                            "null's share": nul["dt_rises"]},
                      "D_t of the layer's weight (eq. 3.1); a random walk rises too"),
        early=Finding(ev["fig4.15-early"], {
            "D_t(T/4) / D_t(T), real − null": ev["fig4.15-early"].text(3),
            "null alone": nul["dt_quarter"]},
            "paired by seed with the null of the same gradient norms (a random walk of equal "
            "steps gives √(1/4) = 0.5; larger norms early raise it without any shared "
            "direction)"),
        spread=Finding(ev["fig4.15-spread"], {"log ratio": ev["fig4.15-spread"].text(3),
                                              "null's": nul["log_spread"]},
                       "the thesis's text; the null spreads at the end too (its own update "
                       "dominates the short remaining path)"))


# ----------------------------------------------------------------------------- fig 4.16
@dataclass(frozen=True)
class Fig416:
    """Fig 4.16's findings (claims ``fig4.16-*``)."""

    mean: Finding
    spread: Finding
    high: Finding
    largest: Finding
    degrades: Finding


def fig416(numbers: Mapping[int, pd.DataFrame], sizes: Sequence[int],
           null: Mapping[int, pd.DataFrame]) -> Fig416:
    """From `numbers.cohesion_numbers` per seed (``sizes`` smallest first) and
    `numbers.independent_cohesion_numbers` of the same seeds (``null``: each probe's gradient
    norms with independent random directions, which alone make cos ψ_i rise and spread less
    with the batch size): paired by seed, the rise of the mean cos ψ_i from each size to the
    next larger beyond the null's rise > 0, the fall of the within-probe sd beyond the null's
    fall > 0, and last − first epoch's C beyond the null's change < 0 at every size; at the
    smallest size, points with cos ψ_i > 0.9 in every seed, and the share of its probes whose
    most aligned gradient is the largest > 1/2 (both against equal norms, where neither
    happens; the independent-gradient null's numbers beside them)."""
    seeds = list(numbers)

    def col(name, b, source=numbers):
        return np.array([source[s].loc[b, name] for s in seeds], dtype=float)

    def step(name, b_from, b_to, source):
        return col(name, b_to, source) - col(name, b_from, source)

    pairs = list(pairwise(sizes))
    mean = {f"{b2} − {b1}": _judged("fig4.16-mean", paired_difference(
        step("mean_cos", b1, b2, numbers), step("mean_cos", b1, b2, null))) for b1, b2 in pairs}
    sd = {f"{b1} − {b2}": _judged("fig4.16-spread", paired_difference(
        step("within_sd", b2, b1, numbers), step("within_sd", b2, b1, null))) for b1, b2 in pairs}
    small = sizes[0]
    n_high = col("n_high", small)
    top = _judged("fig4.16-largest", mean_interval(col("top_is_largest", small)))
    time = {str(b): _judged("fig4.16-degrades", paired_difference(
        col("last_C", b) - col("first_C", b), col("last_C", b, null) - col("first_C", b, null)))
        for b in sizes}
    return Fig416(
        mean=Finding(every(mean), texts(mean, 3),
                     "larger size minus smaller, minus the same for the independent-gradient "
                     "null, paired by seed"),
        spread=Finding(every(sd), texts(sd, 3),
                       "sd of a probe's d values, mean over probes; smaller size minus larger, "
                       "minus the same for the null, paired by seed"),
        high=Finding(bool(np.all(n_high > 0)),
                     {"points with cos ψ_i > 0.9 per seed": n_high.astype(int).tolist(),
                      "the null's": col("n_high", small, null).astype(int).tolist()},
                     "'ψ_i ≈ 1' read as cos ψ_i ≈ 1; in every seed", replicates=len(seeds)),
        largest=Finding(top, {"share of probes": top.text(3),
                              "the null's share": mean_interval(
                                  col("top_is_largest", small, null)).text(3)},
                        "per seed: the share of probes whose largest cos ψ_i and largest ‖g_i‖ "
                        "are the same gradient (chance with equal norms: 1/d)"),
        degrades=Finding(every(time), texts(time, 3),
                         "last epoch's C minus the first's, minus the null's, paired by seed; "
                         "every size"))


# ----------------------------------------------------------------------------- fig 4.20
@dataclass(frozen=True)
class Fig420:
    """Fig 4.20's findings (claims ``fig4.20-*``)."""

    clip: Finding
    premise: Finding
    projection: Finding
    eigenvalue: Finding
    early: Finding
    end: Finding
    window: Finding


def fig420(final: Mapping[str, np.ndarray], epoch1: Mapping[str, np.ndarray],
           names: Sequence[str], projection_eta: np.ndarray,
           window_eta: Mapping[int, float]) -> Fig420:
    """From per-seed arrays by series ``names = (SGD at η′, SGD at the better lr, eigenvalue
    rule, projection rule)``: ``final`` and ``epoch1`` held-out loss, the projection rule's
    mean η per run, and the eigenvalue rule's largest η while the random window lasts, per
    seed."""
    sgd_hi, sgd_lo, eig, proj = names

    def diff(cid, a, b):
        return _judged(cid, paired_difference(a, b))

    clip = _judged("fig4.20-clip", mean_interval(projection_eta))
    premise = diff("fig4.20-premise", final[sgd_hi], final[sgd_lo])
    p = diff("fig4.20-projection", final[sgd_hi], final[proj])
    e = diff("fig4.20-eigenvalue", final[sgd_hi], final[eig])
    first = {n: diff("fig4.20-early", epoch1[n], epoch1[sgd_lo]) for n in (sgd_hi, eig, proj)}
    last = {n: diff("fig4.20-end", final[n], final[sgd_lo]) for n in (eig, proj)}
    return Fig420(
        clip=Finding(clip, f"mean η per run: {clip.text(3)}", "t interval over seeds"),
        premise=Finding(premise, f"{sgd_hi} − {sgd_lo} final held-out loss: {premise.text(3)}",
                        "paired by seed; where it fails, η′ = 1 is not a harmful step size here"),
        projection=Finding(p, f"{sgd_hi} − projection rule: {p.text(3)}", "paired by seed"),
        eigenvalue=Finding(e, f"{sgd_hi} − eigenvalue rule: {e.text(3)}", "paired by seed"),
        early=Finding(every(first), texts(first, 3),
                      f"held-out loss after epoch 1 minus {sgd_lo}'s, paired by seed"),
        end=Finding(every(last), texts(last, 3),
                    f"final held-out loss minus {sgd_lo}'s, paired by seed; both rules"),
        window=Finding(all(v < 1 for v in window_eta.values()),
                       {f"seed {s}: max η": round(float(v), 4) for s, v in window_eta.items()},
                       "the window starts as N(0, 1) columns (algorithm 5 as printed)"))
