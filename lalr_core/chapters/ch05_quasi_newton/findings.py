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
                        f"{diverge_lr:g}"),
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


def fig47_49(lc: pd.DataFrame, sl: pd.DataFrame, gc: pd.DataFrame, random_scale: float,
             lc_bound: float = 0.1) -> Fig47To49:
    """From one run's records: ``lc`` (column ``q_lc`` per checkpoint, the start first), ``sl``
    (``q_sl`` per record), ``gc`` (``q_gc`` as printed and ``q_gc_pairs`` per batch) and the
    random-vector scale ``10 / sqrt(P)``."""
    q_lc, q_sl = lc.q_lc.to_numpy(float), sl.q_sl.to_numpy(float)
    valid = gc.q_gc.dropna().to_numpy(float)
    ev = _judged("fig4.9-overlap", share_interval(int((valid > 0).sum()), len(valid)))
    return Fig47To49(
        lc_small=Finding(bool((q_lc < lc_bound).all()),
                         {f"checkpoint {i}": f"{v:.3g}" for i, v in enumerate(q_lc)},
                         f"our bound {lc_bound:g}; q^LC = u/f² scales as 1/logit; one run"),
        lc_start=Finding(bool(q_lc[0] > q_lc[1:].max()),
                         {"start": f"{q_lc[0]:.3g}", "largest later": f"{q_lc[1:].max():.3g}"},
                         "one run"),
        sl_high=Finding(bool((q_sl > random_scale).all()),
                        {"min q^SL": round(float(q_sl.min()), 4),
                         "10/√P": round(float(random_scale), 4)}, "one run"),
        sl_relaxes=Finding(bool(q_sl[-1] < q_sl[0]), {"start": round(float(q_sl[0]), 4),
                                                      "end": round(float(q_sl[-1]), 4)},
                           "one run"),
        gc_overlap=Finding(ev, {"share of batches with q^GC > 0": ev.text(3),
                                "median q^GC (printed)": round(float(np.median(valid)), 4),
                                "median over pairs": round(float(gc.q_gc_pairs.median()), 4),
                                "batches whose pair mean > 10/√P": round(float(
                                    (gc.q_gc_pairs > random_scale).mean()), 4)},
                           "one run; successive batches are not independent, so the interval "
                           "is narrower than it should be"),
        gc_contrast=Finding(bool(q_sl.mean() > gc.q_gc_pairs.mean()),
                            {"mean q^SL": round(float(q_sl.mean()), 4),
                             "mean q^GC over pairs": round(float(gc.q_gc_pairs.mean()), 4)},
                            "one run; the mean over pairs is twice eq. 4.41 as printed"))


# ----------------------------------------------------------------------------- fig E.1
@dataclass(frozen=True)
class FigE1:
    """Fig E.1's findings (claims ``figE.1-cosine``, ``figE.1-rank``)."""

    cosine: Finding
    rank: Finding
    null_q99: float


def fige1(alignment: Mapping, null: Sequence[float], classes: int, rtol: float) -> FigE1:
    """From `hessian.class_subspace_alignment`'s ``alignment`` (``hungarian`` per stored batch,
    the ``late`` mask, ``median_early`` / ``median_late`` per tolerance, ``ranks``) and the
    assignment's mean |cos| of random directions against the same eigenvectors (``null``,
    `hessian.random_assignment_null`): the late batches' excess over the null's 99th
    percentile (t interval over the batches), and whether the median rank at ``rtol`` falls to
    at most ``C + 2`` and below its early median."""
    q99 = float(np.quantile(np.asarray(null, dtype=float), 0.99))
    late = np.asarray(alignment["hungarian"], dtype=float)[np.asarray(alignment["late"])]
    ev = _judged("figE.1-cosine", mean_interval(late[np.isfinite(late)] - q99, unit="step"))
    early_med, late_med = alignment["median_early"][rtol], alignment["median_late"][rtol]
    ranks = np.asarray(alignment["ranks"][rtol], dtype=float)
    return FigE1(
        cosine=Finding(ev, {"late batches' mean |cos| − null q99": ev.text(4),
                            "null (random directions) q99": round(q99, 4),
                            "null median": round(float(np.median(null)), 4)},
                       "one run; successive batches are not independent"),
        rank=Finding(bool(late_med <= classes + 2 and late_med < early_med),
                     {"median, first 10 %": early_med, "median, last 20 %": late_med,
                      "C": classes,
                      "steps at rank C (%)": round(100 * float(np.mean(ranks == classes)), 1)},
                     f"one run; numerical rank at τ = {rtol:g}"),
        null_q99=q99)


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
    order = crossover_order(cross)
    missing = [bs for bs, c in cross.items() if c is None]
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
        order=Finding(order, {f"batch {bs}": c for bs, c in cross.items()},
                      "crossover epoch of the seed-mean curves, non-increasing as the batch "
                      "shrinks" if order is not None else
                      f"not judged: no crossover at batch {missing} (the overtaking claim "
                      "carries it)"),
        source_lr=Finding(every(src), {**texts(src, 3), "crossover epochs": src_cross},
                          f"at lr {source_lr:g}, the caption's; paired by seed"),
        crossovers=cross, overtake_parts=over, source_parts=src)


# ----------------------------------------------------------------------------- fig 4.11
@dataclass(frozen=True)
class Fig411:
    """Fig 4.11's findings (claims ``fig4.11-*``)."""

    large: Finding
    zero: Finding


def fig411(spec: Mapping, n_eigenvalues: int) -> Fig411:
    """From `hessian.spectrum_numbers`: λ_max > 10 × the median of the top 30, and > 90 % of
    the ``n_eigenvalues`` with |λ| < 0.01 λ_max (N/A when only the top is known)."""
    return Fig411(
        large=Finding(bool(spec["lam_max"] > 10 * spec["median_top"]),
                      f"λ_max {spec['lam_max']:.4g}, median of top 30 {spec['median_top']:.4g}",
                      "one run"),
        zero=Finding(None, detail=f"needs every eigenvalue; the Hessian of {n_eigenvalues} "
                     "parameters is too large to form, and Lanczos gave its top 30")
        if spec["small"] is None else
        Finding(bool(spec["small"] > 0.9), f"{100 * spec['small']:.1f} % of {n_eigenvalues}",
                "one run"))


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


def fig415(numbers: pd.DataFrame, threshold: float) -> Fig415:
    """From `numbers.phi_numbers` per seed (rows): the median φ_t with step t's own update left
    out (``median_phi_null``; the raw ``median_phi`` beside it), the share beyond the
    random-vector ``threshold`` 10/√n, D_t's share of rising steps and D_t(T/4)/D_t(T), and
    the log spread ratio; each a t interval over seeds."""
    ev = {cid: _judged(cid, mean_interval(numbers[col]))
          for cid, col in (("fig4.15-toward", "median_phi_null"), ("fig4.15-few", "significant"),
                           ("fig4.15-rises", "dt_rises"), ("fig4.15-early", "dt_quarter"),
                           ("fig4.15-spread", "log_spread"))}
    raw = mean_interval(numbers["median_phi"], side="less")
    return Fig415(
        toward=Finding(ev["fig4.15-toward"], {
            "median φ_t, own update left out": ev["fig4.15-toward"].text(3),
            "median φ_t as recorded (contains step t's own update)": raw.text(3)},
            "θ_τ − θ_t contains step t's own update, −lr g_t (1 − β^(τ−t+1)) / (1 − β) with "
            "momentum β, which points against g_t by construction; it is removed before the "
            "cosine. Median over steps and filters, one per seed"),
        few=Finding(ev["fig4.15-few"], f"share: {ev['fig4.15-few'].text(4)} (threshold "
                                       f"{threshold:.3f})", "10/√n of app. A.1.4"),
        rises=Finding(ev["fig4.15-rises"], f"share of steps: {ev['fig4.15-rises'].text(4)}",
                      "D_t of the layer's weight (eq. 3.1)"),
        early=Finding(ev["fig4.15-early"], f"D_t(T/4) / D_t(T): {ev['fig4.15-early'].text(3)}",
                      "a random walk gives √(1/4) = 0.5"),
        spread=Finding(ev["fig4.15-spread"], f"log ratio: {ev['fig4.15-spread'].text(3)}",
                       "the thesis's text"))


# ----------------------------------------------------------------------------- fig 4.16
@dataclass(frozen=True)
class Fig416:
    """Fig 4.16's findings (claims ``fig4.16-*``)."""

    mean: Finding
    spread: Finding
    high: Finding
    largest: Finding
    degrades: Finding


def fig416(numbers: Mapping[int, pd.DataFrame], sizes: Sequence[int]) -> Fig416:
    """From `numbers.cohesion_numbers` per seed (``sizes`` smallest first): the mean cos ψ_i
    of each larger size minus the next smaller > 0, the within-probe sd of each smaller minus
    the next larger > 0, points with cos ψ_i > 0.9 at the smallest size, the share of its
    probes whose most aligned gradient is the largest > 1/2, and last − first epoch's C < 0 at
    every size."""
    def col(name, b):
        return np.array([numbers[s].loc[b, name] for s in numbers], dtype=float)

    pairs = list(pairwise(sizes))
    mean = {f"{b2} − {b1}": _judged("fig4.16-mean", paired_difference(col("mean_cos", b2),
                                                                      col("mean_cos", b1)))
            for b1, b2 in pairs}
    sd = {f"{b1} − {b2}": _judged("fig4.16-spread", paired_difference(col("within_sd", b1),
                                                                     col("within_sd", b2)))
          for b1, b2 in pairs}
    small = sizes[0]
    n_high = int(np.nansum(col("n_high", small)))
    top = _judged("fig4.16-largest", mean_interval(col("top_is_largest", small)))
    time = {str(b): _judged("fig4.16-degrades", paired_difference(col("last_C", b),
                                                                  col("first_C", b)))
            for b in sizes}
    return Fig416(
        mean=Finding(every(mean), texts(mean, 3), "larger size minus smaller, paired by seed"),
        spread=Finding(every(sd), texts(sd, 3), "sd of a probe's d values, mean over probes; "
                                                "smaller size minus larger, paired by seed"),
        high=Finding(n_high > 0, f"{n_high} points with cos ψ_i > 0.9 over {len(numbers)} runs",
                     "'ψ_i ≈ 1' read as cos ψ_i ≈ 1"),
        largest=Finding(top, f"share of probes: {top.text(3)}",
                        "per seed: the share of probes whose largest cos ψ_i and largest ‖g_i‖ "
                        "are the same gradient"),
        degrades=Finding(every(time), texts(time, 3),
                         "last epoch's C minus the first's, paired by seed; every size"))


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
