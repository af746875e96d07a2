"""Chapter 07's verdicts: one function per experiment (E1-E8), from its computed numbers to
its `Finding`\\ s.

Each function takes what the notebook computed with `lalr_core.methods.signal` (plain numbers
and arrays, so the unit tests can build synthetic ones) and returns an `ItemFindings`: the
numbers behind the verdicts and one `Finding` per claim id of `claims.CLAIMS`. The thresholds
are the module constants of `claims`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lalr_core.chapters.ch07_signal_propagation import claims as cl
from lalr_core.core.results.claims import Finding, ItemFindings
from lalr_core.core.results.evidence import mean_interval

CLAIMS = cl.CLAIMS


def _r(x, digits: int = 4):
    return None if x is None or not math.isfinite(float(x)) else round(float(x), digits)


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


def e1_self_averaging(lengths: Mapping[str, tuple[float, float]]) -> ItemFindings:
    """E1's claim test: per setting ``(empirical q, theory q*)``; every relative error below
    `claims.Q_REL_TOL`."""
    err = {k: abs(e / t - 1) for k, (e, t) in lengths.items()}
    return ItemFindings({"E1-self-averaging": Finding(
        bool(all(v < cl.Q_REL_TOL for v in err.values())),
        {k: f"{e:.4f} vs {t:.4f}" for k, (e, t) in lengths.items()},
        f"largest relative error {max(err.values()):.3f} (tolerance {cl.Q_REL_TOL:g})")}, {"rel_error": err})


# ----------------------------------------------------------------------------- E2
def e2_maps(q_emp: Mapping[str, Sequence[float]], q_th: Mapping[str, Sequence[float]],
            c_emp: Mapping[str, Sequence[float]], c_th: Mapping[str, Sequence[float]]
            ) -> ItemFindings:
    """E2's claim test: per setting, the largest relative error of q^l and absolute error of
    c^l over the layers, each below its tolerance."""
    err = {k: {"q rel. err (max)": float(np.max(np.abs(np.asarray(q_emp[k]) / q_th[k] - 1))),
               "c abs. err (max)": float(np.max(np.abs(np.asarray(c_emp[k]) - c_th[k])))}
           for k in q_emp}
    ok = all(v["q rel. err (max)"] < cl.Q_REL_TOL and v["c abs. err (max)"] < cl.C_ABS_TOL
             for v in err.values())
    return ItemFindings({"E2": Finding(
        bool(ok), {k: {kk: _r(vv) for kk, vv in v.items()} for k, v in err.items()})}, {"errors": err})


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


def e5_curve_length(chaotic_slope: float, chaotic_chi1: float,
                    ordered_final_ratio: float) -> ItemFindings:
    """E5's claim test: the chaotic log-length slope within `claims.LENGTH_REL_TOL` of
    ``1/2 log chi_1``, and the ordered curve ending shorter than it started."""
    half = 0.5 * math.log(chaotic_chi1)
    ok = abs(chaotic_slope / half - 1) < cl.LENGTH_REL_TOL and ordered_final_ratio < 1
    return ItemFindings({"E5": Finding(bool(ok), {
        "chaotic": {"slope": _r(chaotic_slope), "½ log χ₁": _r(half)},
        "ordered": {"final / initial": _r(ordered_final_ratio)}})}, {})


# ----------------------------------------------------------------------------- E6
def e6_jacobian(var: Mapping[tuple[str, str], float], theory_var: Mapping[tuple[str, str], float],
                mean: Mapping[tuple[str, str], float], *, linear: str, small_q: str,
                critical: Sequence[str]) -> ItemFindings:
    """E6: the orthogonal linear isometry (sanity), the orthogonal tanh net near ``q* -> 0``
    against the Gaussian one and the theory (claim), and the mean squared singular value at
    criticality (claim). Keys are ``(case, init)``; ``linear``, ``small_q`` and ``critical``
    name the cases."""
    o, g, t = var[(small_q, "orthogonal")], var[(small_q, "gaussian")], \
        theory_var[(small_q, "orthogonal")]
    crit = {f"{c} / {i}": float(mean[(c, i)]) for c in critical
            for i in ("gaussian", "orthogonal")}
    lo, hi = cl.MEAN_LAMBDA
    return ItemFindings({
        "E6-linear": Finding(bool(var[(linear, "orthogonal")] < cl.ISOMETRY_VAR),
                             float(var[(linear, "orthogonal")])),
        "E6-orthogonal": Finding(bool(o < cl.ORTH_GAIN * g and abs(o / t - 1) < cl.ORTH_THEORY_TOL),
                                 {"orthogonal": _r(o), "gaussian": _r(g, 2),
                                  "theory (orthogonal)": _r(t)}),
        "E6-mean": Finding(bool(all(lo <= v <= hi for v in crit.values())),
                           {k: _r(v, 3) for k, v in crit.items()})}, {"mean_at_criticality": crit})


# ----------------------------------------------------------------------------- E7, E8
def e7_rank_collapse(res: Mapping[str, Sequence[Sequence[float]]], slope: float,
                     exponent: float, fit_layers: Sequence[int] = ()) -> ItemFindings:
    """E7's claim tests from the per-seed residual curves ``res[variant]`` (``[seeds, L + 1]``,
    column = layer; ``"pure"``, ``"skip_scaled"``, ``"ln"``), each judged on a t interval over
    seeds (a residual that underflowed to 0 counts as `claims.RES_FLOOR`), and the doubly
    exponential fit of the pure stack's geometric mean (``slope``, ``exponent``)."""
    r = {k: np.maximum(np.atleast_2d(np.asarray(v, dtype=float)), cl.RES_FLOOR)
         for k, v in res.items()}
    pure = np.log10(r["pure"][:, cl.PURE_LAYER])
    skip = r["skip_scaled"].min(axis=1)
    ln = np.log10(r["ln"][:, -1])
    fit_note = (f"fitted on layers {[int(v) for v in fit_layers]} before float64's floor; "
                "log 3 is a limit")

    def judged(cid, x, digits=2):
        ev = CLAIMS[cid].judge(mean_interval(x))
        return Finding(ev, ev.text(digits), f"t over {x.size} seeds")

    return ItemFindings({
        "E7-pure": judged("E7-pure", pure),
        "E7-skip": judged("E7-skip", skip, 4),
        "E7-ln": judged("E7-ln", ln),
        "E7-slope": Finding(bool(abs(slope - math.log(3)) <= cl.SLOPE_TOL),
                            {"slope": _r(slope, 3), "log 3": _r(math.log(3), 3)}, fit_note),
        "E7-cubic": Finding(bool(abs(exponent - cl.CUBIC) <= cl.CUBIC_TOL), _r(exponent, 3))}, {})


def e8_linformer(ks: Sequence[int], error_at_t1: Sequence[float],
                 growth: Sequence[float]) -> ItemFindings:
    """E8's claim tests: the relative error at temperature 1 at the largest ``k`` below the
    smallest ``k``'s; the log-log growth of wall time with ``n`` (``(exact, Linformer)``)
    smaller for Linformer."""
    err = [float(e) for e in error_at_t1]
    return ItemFindings({
        "E8-error": Finding(bool(err[-1] < err[0]), dict(zip(map(int, ks), (_r(e, 3) for e in err)))),
        "E8-time": Finding(bool(growth[1] < growth[0]),
                           {"exact": _r(growth[0], 2), "Linformer": _r(growth[1], 2)},
                           "log-log slope of time against n (2 = quadratic, 1 = linear); wall "
                           "clock on this machine")}, {})
