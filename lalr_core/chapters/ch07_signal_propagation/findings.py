"""Chapter 07's verdicts: one function per experiment (E1-E8), from its computed numbers to
its `Finding`\\ s.

Each function takes what the notebook computed with `lalr_core.methods.signal` (plain numbers
and arrays, so the unit tests can build synthetic ones) and returns an `ItemFindings`: the
numbers behind the verdicts and one `Finding` per claim id of `claims.CLAIMS`. The thresholds
are the module constants of `claims`.

Every claim test is judged per replicate (one random network, one self-attention stack, one
draw of Q, K, V, one timing run: `claims.Claim.replicate`): one statistic per replicate, a t
interval over the replicates against the claim's tolerance, so that fewer than
`MIN_REPLICATES` of them leave it INCONCLUSIVE and more seeds narrow the interval without
moving the statistic. A claim on several parts holds when every part does (`every`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lalr_core.chapters.ch07_signal_propagation import claims as cl
from lalr_core.core.results.claims import Finding, ItemFindings
from lalr_core.core.results.evidence import Evidence, every, mean_interval, texts
from lalr_core.methods.signal import rank_collapse

CLAIMS = cl.CLAIMS


def _r(x, digits: int = 4):
    return None if x is None or not math.isfinite(float(x)) else round(float(x), digits)


def _per_seed(x) -> np.ndarray:
    """``x`` as a ``(seeds, ...)`` float array (a 1-D curve is one seed)."""
    a = np.asarray(x, dtype=float)
    return a[None] if a.ndim == 1 else a


def _judged(threshold: float, side: str, x, unit: str = "seed") -> Evidence:
    return mean_interval(x, unit=unit).judged(threshold, side)


# ----------------------------------------------------------------------------- E1
def e1_critical_line(critical: Mapping[float, float]) -> ItemFindings:
    """E1's sanity checks: ``critical`` (sigma_b^2 -> our critical sigma_w^2) against
    [Schoenholz2017]'s 1.76 at 0.05 and 1 at 0, and against our reference table.

    Raises:
        ValueError: ``critical`` lacks sigma_b^2 = 0 or 0.05.
    """
    if not {0.0, 0.05} <= set(critical):
        raise ValueError(f"need the critical sigma_w^2 at sigma_b^2 = 0 and 0.05, got "
                         f"{sorted(critical)}")
    at05, at0 = float(critical[0.05]), float(critical[0.0])
    schoenholz = abs(at05 - cl.CRIT_SCHOENHOLZ) <= cl.CRIT_TOL and abs(at0 - 1.0) < 1e-6
    table = {b: (float(critical[b]), w) for b, w in cl.CRITICAL_TABLE.items() if b in critical}
    worst = max(abs(a - w) for a, w in table.values())
    return ItemFindings(
        {"E1-critical": Finding(bool(schoenholz), {"σ_b²=0.05": _r(at05), "σ_b²=0": _r(at0, 6)}),
         "E1-table": Finding(bool(worst <= cl.TABLE_TOL),
                             {str(b): f"{a:.4f} vs {w:.4f}" for b, (a, w) in table.items()},
                             f"largest difference {worst:.1e} (tolerance {cl.TABLE_TOL:g})")},
        {"critical": {str(b): _r(a) for b, (a, _) in table.items()}, "table_worst": worst})


def e1_self_averaging(lengths: Mapping[str, tuple[Sequence[float], float]]) -> ItemFindings:
    """E1's claim test: per setting ``(empirical q per net, theory q*)``, the empirical q one
    value per random net (``(seeds,)``, the same seeds in every setting); per net its largest
    relative error ``|q / q* - 1|`` over the settings, a t interval over nets below
    `claims.Q_REL_TOL`."""
    err = {k: np.abs(np.atleast_1d(np.asarray(e, dtype=float)) / t - 1)
           for k, (e, t) in lengths.items()}
    worst = np.max(np.stack(list(err.values())), axis=0)           # (seeds,)
    ev = CLAIMS["E1-self-averaging"].judge(mean_interval(worst))
    return ItemFindings({"E1-self-averaging": Finding(
        ev, {**{k: f"{float(np.mean(e)):.4f} (mean of {np.size(e)} nets) vs {t:.4f}"
                for k, (e, t) in lengths.items()}, "judged": ev.text(4)},
        f"each net's largest relative error over {len(err)} settings, t over {worst.size} "
        f"nets (tolerance {cl.Q_REL_TOL:g})")},
        {"rel_error": {k: v.tolist() for k, v in err.items()}, "worst_per_net": worst.tolist()})


# ----------------------------------------------------------------------------- E2
def e2_maps(q_emp: Mapping[str, Any], q_th: Mapping[str, Sequence[float]],
            c_emp: Mapping[str, Any], c_th: Mapping[str, Sequence[float]]) -> ItemFindings:
    """E2's claim test, per random net: its largest relative error of ``q^l`` and its largest
    absolute error of ``c^l`` over the layers and the settings; a t interval over nets of
    each, below `claims.Q_REL_TOL` and `claims.C_ABS_TOL` (both must hold).

    Args:
        q_emp, c_emp: per setting ``(seeds, L)``, one row per net (the same seeds in every
            setting); a 1-D curve is one net.
        q_th, c_th: per setting ``(L,)``, the iterated maps.
    """
    q = {k: np.abs(_per_seed(q_emp[k]) / np.asarray(q_th[k]) - 1) for k in q_emp}
    c = {k: np.abs(_per_seed(c_emp[k]) - np.asarray(c_th[k])) for k in q_emp}
    q_net = np.max(np.stack([v.max(axis=1) for v in q.values()]), axis=0)   # (seeds,)
    c_net = np.max(np.stack([v.max(axis=1) for v in c.values()]), axis=0)
    parts = {"q rel. err": _judged(cl.Q_REL_TOL, "less", q_net),
             "c abs. err": _judged(cl.C_ABS_TOL, "less", c_net)}
    err = {k: {"q rel. err (max, mean over nets)": float(q[k].max(axis=1).mean()),
               "c abs. err (max, mean over nets)": float(c[k].max(axis=1).mean()),
               "seed-averaged curve: q rel. err (max)":
                   float(np.max(np.abs(_per_seed(q_emp[k]).mean(0) / np.asarray(q_th[k]) - 1))),
               "seed-averaged curve: c abs. err (max)":
                   float(np.max(np.abs(_per_seed(c_emp[k]).mean(0) - np.asarray(c_th[k]))))}
           for k in q_emp}
    return ItemFindings({"E2": Finding(
        every(parts), {**{k: {kk: _r(vv) for kk, vv in v.items()} for k, v in err.items()},
                       "judged (each net's worst layer and setting)": texts(parts, 4)},
        f"t over {q_net.size} nets; the seed-averaged curve (shown, not judged) shrinks its "
        f"error with the seed count")}, {"errors": err, "q_per_net": q_net.tolist(),
                                         "c_per_net": c_net.tolist()})


# ----------------------------------------------------------------------------- E3
def e3_depth_scales(sigma_w2: Sequence[float], xi_c: Sequence[float], critical: float,
                    table: Mapping[float, Sequence[float]]) -> ItemFindings:
    """E3's sanity checks: ``xi_c`` over ``sigma_w2`` peaks at ``critical`` (within the grid
    step), and ``table`` (sigma_w^2 -> our (q*, chi_1, c*, xi_c, xi_q)) equals
    `claims.DEPTH_TABLE` to its precision."""
    sw, xi = np.asarray(sigma_w2, dtype=float), np.asarray(xi_c, dtype=float)
    step = float(sw[1] - sw[0])
    peak = float(sw[np.nanargmax(xi)])
    diffs = {s2: [abs(float(a) - b) for a, b in zip(table[s2], ref)]
             for s2, ref in cl.DEPTH_TABLE.items() if s2 in table}
    ok = bool(diffs) and all(d < t for row in diffs.values() for d, t in zip(row, cl.DEPTH_TOL))
    return ItemFindings({
        "E3-peak": Finding(bool(abs(peak - critical) <= step),
                           f"peak at {peak:.3f}, critical {critical:.4f} (grid step {step:.3f})"),
        "E3-table": Finding(ok, {s2: [_r(v, 3) for v in table[s2]] for s2 in diffs})}, {"peak": peak, "step": step})


def e3_contrast_depths(depths: Sequence[int], xi_c: Sequence[float],
                       factor: float = cl.TRAIN_DEPTH_FACTOR) -> list[int]:
    """The depths at which some cells lie within ``factor * xi_c`` and some beyond: the only
    depths where E3's comparison at equal depth is defined."""
    inside = np.asarray(depths)[:, None] <= factor * np.asarray(xi_c, dtype=float)[None, :]
    return [int(d) for d, row in zip(depths, inside) if row.any() and not row.all()]


@dataclass(frozen=True)
class Trainability(ItemFindings):
    """E3's trainability contrast.

    Attributes:
        depths: the depths compared (`e3_contrast_depths`).
        per_seed: ``(seeds,)`` mean over those depths of (mean accuracy of the cells within
            ``6 xi_c``) minus (mean accuracy of the cells beyond), one seed each.
        pooled: the former, depth-confounded statistic (all cells within minus all beyond,
            seed 0), for comparison.
    """

    depths: tuple[int, ...] = ()
    per_seed: tuple[float, ...] = ()
    pooled: float = math.nan


def e3_trainability(acc, depths: Sequence[int], xi_c: Sequence[float], *,
                    chance: float = 0.1, factor: float = cl.TRAIN_DEPTH_FACTOR
                    ) -> Trainability:
    """E3's claim test: at equal depth, do the cells within ``factor * xi_c`` train better
    than those beyond? ([Schoenholz2017]: trainable up to ``~6 xi_c``.)

    Per seed and per depth where both kinds of cell exist, the mean training accuracy within
    minus the mean beyond; averaged over those depths; t interval over seeds against 0. Cells
    deeper than ``6 xi_c`` are deeper *relative to* their own depth scale, so comparing at the
    same depth removes the confound of a pooled comparison (where the cells within are also
    the shallower ones). A diverged run (NaN) counts as ``chance``: it did not train.

    Args:
        acc: ``(seeds, len(depths), len(xi_c))`` training accuracies (rows: depths, columns:
            the sigma_w^2 whose depth scales are ``xi_c``); a 2-D array is one seed.
        depths: the depths of ``acc``'s rows.
        xi_c: ``xi_c`` of each column.
        chance: the accuracy of an untrained net, for diverged cells.
        factor: the claim's multiple of ``xi_c``.

    Raises:
        ValueError: shapes that do not match.
    """
    a = np.asarray(acc, dtype=float)
    a = a[None] if a.ndim == 2 else a
    xi = np.asarray(xi_c, dtype=float)
    if a.ndim != 3 or a.shape[1:] != (len(depths), xi.size):
        raise ValueError(f"acc must be (seeds, {len(depths)}, {xi.size}), got {a.shape}")
    a = np.where(np.isnan(a), chance, a)
    inside = np.asarray(depths)[:, None] <= factor * xi[None, :]
    pooled = (float(a[0][inside].mean() - a[0][~inside].mean())
              if inside.any() and (~inside).any() else math.nan)
    rows = [i for i in range(len(depths)) if inside[i].any() and not inside[i].all()]
    if not rows:
        return Trainability({"E3-6xi": Finding(
            None, detail=f"every depth lies on one side of {factor:g} ξ_c at this profile: no "
                         "comparison at equal depth")}, {"pooled": pooled}, (), (), pooled)
    per_seed = np.array([np.mean([a[s, i, inside[i]].mean() - a[s, i, ~inside[i]].mean()
                                  for i in rows]) for s in range(a.shape[0])])
    ev = CLAIMS["E3-6xi"].judge(mean_interval(per_seed))
    used = tuple(int(depths[i]) for i in rows)
    by_depth = {int(depths[i]): _r(np.mean(a[:, i, inside[i]]) - np.mean(a[:, i, ~inside[i]]), 3)
                for i in rows}
    return Trainability(
        {"E3-6xi": Finding(ev, {"within − beyond, by depth (mean over seeds)": by_depth,
                                "pooled over depths (seed 0, confounded)": _r(pooled, 3)},
                           f"compared at equal depth (depths {list(used)}), "
                           f"{a.shape[0]} seed(s); short runs: where training starts quickly, "
                           "not final trainability")},
        {"by_depth": by_depth, "pooled": pooled},
        used, tuple(float(v) for v in per_seed), pooled)


# ----------------------------------------------------------------------------- E4, E5
def gradient_slopes(delta_sq) -> np.ndarray:
    """Per seed, the least-squares slope of ``log q~^l`` over the inner layers ``3 .. L-2``
    (the first two and last two left out: the input and the read-out are not at ``q*``).

    Args:
        delta_sq: ``(seeds, L, examples)`` ``q~^l`` (`random_nets.GradientNorms.delta_sq`);
            each example is divided by its last layer's value, then averaged over examples.
    """
    t = np.asarray(delta_sq, dtype=float)
    prof = (t / t[:, -1:]).mean(axis=2)                       # (seeds, L)
    layers = np.arange(1, prof.shape[1] + 1)[2:-2]
    return np.array([np.polyfit(layers, np.log(p[2:-2]), 1)[0] for p in prof])


def e4_gradients(delta_sq: Mapping[str, Any], chi1: Mapping[str, float]) -> ItemFindings:
    """E4's claim tests: per seed the fitted slope of ``log q~^l`` over ``l``
    (`gradient_slopes`) against ``-log chi_1``: its relative error for ``"ordered"`` and
    ``"chaotic"``, the slope itself for ``"critical"``, each ``within`` its tolerance on a t
    interval over seeds."""
    slopes = {n: gradient_slopes(v) for n, v in delta_sq.items()}
    ours = {n: {"slope (mean over seeds)": _r(s.mean()), "−log χ₁": _r(-math.log(chi1[n])),
                "χ₁": _r(chi1[n])} for n, s in slopes.items()}
    found = {}
    for n in ("ordered", "chaotic", "critical"):
        x = slopes[n] if n == "critical" else slopes[n] / -math.log(chi1[n]) - 1
        ev = CLAIMS[f"E4-{n}"].judge(mean_interval(x))
        found[f"E4-{n}"] = Finding(ev, {**ours[n], "judged": ev.text(4)},
                                   f"t over {x.size} seeds")
    return ItemFindings(found, {"slopes": {n: s.tolist() for n, s in slopes.items()}})


def e5_curve_length(chaotic_slope: Sequence[float], chaotic_chi1: float,
                    ordered_final_ratio: Sequence[float]) -> ItemFindings:
    """E5's claim test, per random net (``(seeds,)`` arrays): the chaotic log-length slope's
    relative error ``slope / (1/2 log chi_1) - 1`` within `claims.LENGTH_REL_TOL`, and the
    ordered curve's ``log(final / initial)`` below 0 (it ends shorter than it started); a t
    interval over nets each, both must hold."""
    half = 0.5 * math.log(chaotic_chi1)
    slope = np.atleast_1d(np.asarray(chaotic_slope, dtype=float))
    ratio = np.atleast_1d(np.asarray(ordered_final_ratio, dtype=float))
    parts = {"chaotic: slope / (½ log χ₁) − 1": _judged(cl.LENGTH_REL_TOL, "within",
                                                         slope / half - 1),
             "ordered: log(final / initial)": _judged(0.0, "less", np.log(ratio))}
    return ItemFindings({"E5": Finding(every(parts), {
        "chaotic": {"slope (mean over nets)": _r(slope.mean()), "½ log χ₁": _r(half)},
        "ordered": {"final / initial (mean over nets)": _r(ratio.mean())},
        "judged": texts(parts, 4)}, f"t over {slope.size} and {ratio.size} nets")}, {})


# ----------------------------------------------------------------------------- E6
def e6_jacobian(var: Mapping[tuple[str, str], Sequence[float]],
                theory_var: Mapping[tuple[str, str], float],
                mean: Mapping[tuple[str, str], Sequence[float]], *, linear: str, small_q: str,
                critical: Sequence[str]) -> ItemFindings:
    """E6: the orthogonal linear isometry (sanity: every net's variance below
    `claims.ISOMETRY_VAR`), the orthogonal tanh net near ``q* -> 0`` against the Gaussian net
    of the same seed index and against the theory (claim), and the mean squared singular
    value at criticality (claim), each claim per net on a t interval over nets.

    Keys are ``(case, init)``; ``var`` and ``mean`` hold one value per net (``(seeds,)``: the
    variance and the mean of that net's ``lambda``); ``linear``, ``small_q`` and ``critical``
    name the cases."""
    v = {k: np.atleast_1d(np.asarray(x, dtype=float)) for k, x in var.items()}
    m = {k: np.atleast_1d(np.asarray(x, dtype=float)) for k, x in mean.items()}
    o, g, t = v[(small_q, "orthogonal")], v[(small_q, "gaussian")], \
        float(theory_var[(small_q, "orthogonal")])
    n = min(o.size, g.size)
    orth = {"log10(orthogonal / Gaussian var)": _judged(math.log10(cl.ORTH_GAIN), "less",
                                                        np.log10(o[:n] / g[:n])),
            "orthogonal var / theory − 1": _judged(cl.ORTH_THEORY_TOL, "within", o / t - 1)}
    lo, hi = cl.MEAN_LAMBDA
    cases = {f"{c} / {i}": m[(c, i)] for c in critical for i in ("gaussian", "orthogonal")}
    crit = {k: _judged((hi - lo) / 2, "within", x - (hi + lo) / 2) for k, x in cases.items()}
    means = {k: float(x.mean()) for k, x in cases.items()}
    lin = v[(linear, "orthogonal")]
    return ItemFindings({
        "E6-linear": Finding(bool(np.all(lin < cl.ISOMETRY_VAR)), float(lin.max())),
        "E6-orthogonal": Finding(every(orth), {
            "orthogonal (mean over nets)": _r(o.mean()),
            "gaussian (mean over nets)": _r(g.mean(), 2), "theory (orthogonal)": _r(t),
            "judged": texts(orth, 3)}, f"t over {n} nets"),
        "E6-mean": Finding(every(crit), {**{k: _r(x, 3) for k, x in means.items()},
                                         "judged (mean λ − 1)": texts(crit, 3)},
                           f"each net's mean λ, t over nets per case; [{lo:g}, {hi:g}] is the "
                           f"band")}, {"mean_at_criticality": means})


# ----------------------------------------------------------------------------- E7, E8
def seed_fits(res) -> list[rank_collapse.DoublyExpFit | None]:
    """The doubly exponential fit (`rank_collapse.doubly_exponential_fit` on the window
    `claims.FIT_FLOOR` < res < `claims.FIT_CEILING`) of each seed's residual curve
    (``[seeds, L + 1]``); ``None`` for a seed with fewer than 2 layers in the window."""
    out = []
    for row in np.atleast_2d(np.asarray(res, dtype=float)):
        try:
            with warnings.catch_warnings():   # a flat curve: a degenerate exponent fit
                warnings.simplefilter("ignore", np.exceptions.RankWarning)
                out.append(rank_collapse.doubly_exponential_fit(
                    np.maximum(row, 0.0), floor=cl.FIT_FLOOR, ceiling=cl.FIT_CEILING))
        except ValueError:
            out.append(None)
    return out


def e7_rank_collapse(res: Mapping[str, Sequence[Sequence[float]]]) -> ItemFindings:
    """E7's claim tests from the per-seed residual curves ``res[variant]`` (``[seeds, L + 1]``,
    column = layer; ``"pure"``, ``"skip_scaled"``, ``"ln"``), each judged on a t interval over
    seeds (a residual that underflowed to 0 counts as `claims.RES_FLOOR`); the doubly
    exponential signature from one fit per seed of the pure stack (`seed_fits`): its slope
    minus log 3 and its exponent minus 3 (a seed without a fit, or without an exponent: fewer
    than 2 consecutive layers in the window, is left out and counted)."""
    r = {k: np.maximum(np.atleast_2d(np.asarray(v, dtype=float)), cl.RES_FLOOR)
         for k, v in res.items()}
    pure = np.log10(r["pure"][:, cl.PURE_LAYER])
    skip = r["skip_scaled"].min(axis=1)
    ln = np.log10(r["ln"][:, -1])
    fits = seed_fits(res["pure"])
    slopes = np.array([f.slope if f else np.nan for f in fits])
    exps = np.array([f.exponent if f else np.nan for f in fits])
    layers = sorted({tuple(int(v) for v in f.layers) for f in fits if f})
    fit_note = (f"one fit per seed on layers {layers} before float64's floor "
                f"({int(np.isfinite(slopes).sum())} of {len(fits)} seeds with a slope, "
                f"{int(np.isfinite(exps).sum())} with an exponent); log 3 and 3 are limits")

    def judged(cid, x, digits=2, detail=""):
        ev = CLAIMS[cid].judge(mean_interval(x))
        return Finding(ev, ev.text(digits), detail or f"t over {ev.n} seeds")

    return ItemFindings({
        "E7-pure": judged("E7-pure", pure),
        "E7-skip": judged("E7-skip", skip, 4),
        "E7-ln": judged("E7-ln", ln),
        "E7-slope": judged("E7-slope", slopes - math.log(3), 3, fit_note),
        "E7-cubic": judged("E7-cubic", exps - cl.CUBIC, 3, fit_note)},
        {"slopes": slopes.tolist(), "exponents": exps.tolist()})


def e8_linformer(ks: Sequence[int], error_at_t1, growth) -> ItemFindings:
    """E8's claim tests. ``error_at_t1``: ``(draws, len(ks))`` relative errors at temperature
    1, one row per draw of Q, K, V: per draw the error at the largest ``k`` minus at the
    smallest, a t interval over draws below 0. ``growth``: ``(runs, 2)`` log-log growth of
    wall time with ``n`` (``(exact, Linformer)``), one row per timing run: exact minus
    Linformer, a t interval over runs above 0."""
    err = _per_seed(error_at_t1)
    g = _per_seed(growth)
    e_ev = CLAIMS["E8-error"].judge(mean_interval(err[:, -1] - err[:, 0]))
    t_ev = CLAIMS["E8-time"].judge(mean_interval(g[:, 0] - g[:, 1], unit="run"))
    return ItemFindings({
        "E8-error": Finding(e_ev, {**{f"k = {int(k)}": _r(e, 3) for k, e in zip(ks, err.mean(0))},
                                   "judged (largest k minus smallest)": e_ev.text(3)},
                            f"t over {err.shape[0]} draws"),
        "E8-time": Finding(t_ev, {"exact": _r(g[:, 0].mean(), 2),
                                  "Linformer": _r(g[:, 1].mean(), 2),
                                  "judged (exact minus Linformer)": t_ev.text(2)},
                           f"log-log slope of time against n (2 = quadratic, 1 = linear), mean "
                           f"over {g.shape[0]} timing runs; wall clock on this machine")}, {})
