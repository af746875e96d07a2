"""Chapter 04's verdicts: from the runs' per-seed curves to each claim's `Finding`.

Each function takes plain per-seed data (one entry per seed, ``None`` for a seed whose run
diverged), reduces every seed to one number with the package's functions, and judges the numbers'
95 % interval over seeds against the claim's threshold (`claims.CLAIMS`). It returns a
`SeedFinding`: the per-seed numbers and the finding. Where every seed diverged the finding is
N/A. The unit tests build synthetic curves on which each gives PASS, FAIL and INCONCLUSIVE.

The seeds are independently trained runs (own initialisation and batch order; SGDM and Adam of
one seed share both, so they are paired): each is one replicate. A claim that a trajectory is
directed is judged against the filtered-noise null (``null``: iid Gaussian gradients of the run's
dimension through the same optimiser's update rule, lr schedule and step count, averaged over
its seeds; `ch04_directedness.noise_null`), not against the memoryless random walk, which
momentum alone beats about 2.8-fold at N = 16.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lalr_core.chapters import ch04_directedness as ch4
from lalr_core.chapters.ch04_directedness.claims import (
    CLAIMS,
    RW_MEAN_TOL,
    RW_TRACK_SHARE,
    RW_TRACK_TOL,
)
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import Evidence, mean_interval, paired_difference
from lalr_core.methods import trajectory as tj


@dataclass(frozen=True)
class SeedFinding:
    """One claim's per-seed numbers and its finding.

    Attributes:
        claim_id: the key of `claims.CLAIMS`.
        values: one number per seed (NaN: the seed diverged); for a paired claim, the
            per-seed differences.
        finding: the `Finding` (its evidence judged against the claim).
        ours: the numbers shown beside the verdict.
    """

    claim_id: str
    values: tuple[float, ...]
    finding: Finding
    ours: Any = None


def _per_seed(items: Sequence, fn: Callable) -> np.ndarray:
    return np.array([np.nan if x is None else float(fn(x)) for x in items], dtype=float)


def _judge(claim_id: str, values: np.ndarray, evidence: Evidence, ours, detail: str
           ) -> SeedFinding:
    if not np.isfinite(values).any():
        return SeedFinding(claim_id, tuple(values), Finding(
            None, ours, detail or "every seed diverged: nothing to judge"), ours)
    finding = Finding(CLAIMS[claim_id].judge(evidence), ours, detail)
    return SeedFinding(claim_id, tuple(float(v) for v in values), finding, ours)


def _mean(claim_id, values, ours=None, detail="", scale=1.0) -> SeedFinding:
    values = np.asarray(values, dtype=float)
    ev = mean_interval(values, scale=scale)
    return _judge(claim_id, values, ev, ours if ours is not None else ev.text(3), detail)


def _paired(claim_id, a, b, ours=None, detail="", scale=1.0) -> SeedFinding:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ev = paired_difference(a, b, scale=scale)
    return _judge(claim_id, a - b, ev, ours if ours is not None else ev.text(3), detail)


def _panel(name: str) -> str:
    return {"sgdm": "A", "adam": "B"}[name]


# --------------------------------------------------------------- figs 3.7 and 3.19 (psi_N)
def _rows(null) -> np.ndarray:
    """A null's curves as ``(null seeds, T)`` (a 1-D curve is one seed)."""
    return np.atleast_2d(np.asarray(null, dtype=np.float64))


def early_phase(name: str, psi_windows: Sequence, drop: int, window: int, *,
                null_psi_window=None, detail: str = "") -> SeedFinding:
    """Fig 3.7's early phase per seed (`early_decay_margin`), against 0; the filtered-noise
    null's margin (``null_psi_window``, its seeds' mean) is shown beside it."""
    m = _per_seed(psi_windows, lambda p: ch4.early_decay_margin(p, drop, window))
    at = {k: np.nanmean(_per_seed(psi_windows, lambda p, k=k: p[k - 1]))
          for k in (ch4.EARLY_STEP, window, drop)} if np.isfinite(m).any() else {}
    ours = (f"psi(5) = {at[ch4.EARLY_STEP]:.2f}, psi(N) = {at[window]:.2f}, psi before drop "
            f"= {at[drop]:.2f} (seed means); margin {mean_interval(m).text()}") if at else None
    if ours and null_psi_window is not None:
        nm = [ch4.early_decay_margin(r, drop, window) for r in _rows(null_psi_window)]
        ours += (f"; filtered-noise null: psi(5) = {_rows(null_psi_window)[:, 4].mean():.2f}, "
                 f"margin {np.mean(nm):+.3f}")
    return _mean(f"fig3.7{_panel(name)}-early", m, ours, detail)


def lr_drop_spikes(name: str, psi_windows: Sequence, drops: Sequence[int], window: int, *,
                   null_psi_window, detail: str = "") -> SeedFinding:
    """Fig 3.7's spikes per seed: the smaller over the drops of `controlled_spike_gains` (the
    rise after the drop beyond the rise at a step without a drop) minus the filtered-noise
    null's at the same drop (`null_spike_gains`: an lr drop alone makes noise through momentum
    rise), in %-points, against ``SPIKE_GAIN``."""
    null = ch4.null_spike_gains(null_psi_window, drops, window)
    g = _per_seed(psi_windows,
                  lambda p: (ch4.controlled_spike_gains(p, drops, window) - null).min())
    raw = [ch4.spike_gains(p, drops, window) for p in psi_windows if p is not None]
    ours = None
    if raw:
        ours = ("mean rise per drop " + ", ".join(f"+{100 * v:.0f} %" for v in np.mean(raw, 0))
                + "; the filtered-noise null's rise beyond its control step "
                + ", ".join(f"{100 * v:+.0f}" for v in null)
                + " %-points; beyond the control step and the null (smaller of the drops, "
                  "%-points): " + mean_interval(g, scale=100).text(1))
    return _mean(f"fig3.7{_panel(name)}-spikes", g, ours, detail, scale=100)


def above_random_walk(name: str, psi_windows: Sequence, window: int, *, null_psi_window,
                      detail: str = "") -> SeedFinding:
    """Fig 3.19: per seed the smallest ``psi_N / psi_N^null`` over ``t > N``
    (`min_null_ratio`; the null: noise through the same optimiser's filters), against
    ``RW_MARGIN``; the ratio to the random walk's ``1/sqrt N`` (`min_rw_ratio`) is shown
    beside it."""
    r = _per_seed(psi_windows, lambda p: ch4.min_null_ratio(p, null_psi_window, window))
    rw = _per_seed(psi_windows, lambda p: ch4.min_rw_ratio(p, window))
    level = float(_rows(null_psi_window)[:, window:].mean())
    ours = (f"smallest psi_N / filtered-noise null's {mean_interval(r).text()}; null psi_N "
            f"{level:.3f} ({len(_rows(null_psi_window))} null seeds, "
            f"{level * math.sqrt(window):.2f}x the random walk's 1/sqrt(N)); smallest ratio "
            f"to the random walk {mean_interval(rw).text()}")
    cid = f"fig3.19{_panel(name)}-rw"
    most = 1 / float(_rows(null_psi_window).mean(0)[window:].max())  # psi_N <= 1
    if CLAIMS[cid].threshold >= most:
        why = (f"psi_N <= 1, so the ratio to the null is at most {most:.2f} here, not above "
               f"{CLAIMS[cid].threshold:g}: this window (N = {window}) cannot show the claim; "
               f"{detail}").rstrip("; ")
        return SeedFinding(cid, tuple(float(v) for v in r), Finding(None, ours, why), ours)
    return _mean(cid, r, ours, detail)


def sgdm_above_adam(sgdm: Sequence, adam: Sequence, drops: Sequence[int], window: int, *,
                    nulls: Mapping[str, Any] | None = None, detail: str = "") -> SeedFinding:
    """Fig 3.19: per seed the smallest over the lr phases of SGDM's mean ``psi_N`` minus
    Adam's (`phase_means`), against 0 (seeds where either run diverged are left out). With
    ``nulls`` (optimiser -> null ``psi_N``) the same gap of the filtered-noise nulls is shown
    beside it (noise through Adam's filters is the more directed, so the claim does not hold
    on the null)."""
    pairs = [None if a is None or b is None else (a, b) for a, b in zip(sgdm, adam)]
    gaps = [ch4.phase_means(a, drops, window) - ch4.phase_means(b, drops, window)
            for a, b in (p for p in pairs if p is not None)]
    d = _per_seed(pairs, lambda p: np.min(ch4.phase_means(p[0], drops, window)
                                          - ch4.phase_means(p[1], drops, window)))
    ours = (f"SGDM - Adam per phase {', '.join(f'{g:+.3f}' for g in np.mean(gaps, 0))}; "
            f"smallest {mean_interval(d).text(3)}") if gaps else None
    if ours and nulls:
        ng = np.min(ch4.phase_means(_rows(nulls["sgdm"]).mean(0), drops, window)
                    - ch4.phase_means(_rows(nulls["adam"]).mean(0), drops, window))
        ours += f"; filtered-noise nulls' smallest gap {ng:+.3f}"
    return _mean("fig3.19-order", d, ours, detail)


def adam_spikes_larger(sgdm: Sequence, adam: Sequence, drops: Sequence[int], window: int, *,
                       nulls: Mapping[str, Any] | None = None, detail: str = "") -> SeedFinding:
    """Fig 3.19: Adam's mean controlled spike minus SGDM's, paired by seed (%-points). With
    ``nulls`` the filtered-noise nulls' difference is shown beside it (noise through SGDM's
    momentum spikes more than through Adam's, so the claim does not hold on the null)."""
    def gain(p):
        return ch4.controlled_spike_gains(p, drops, window).mean()

    both = [a is not None and b is not None for a, b in zip(sgdm, adam)]
    ga = _per_seed([b if ok else None for b, ok in zip(adam, both)], gain)
    gs = _per_seed([a if ok else None for a, ok in zip(sgdm, both)], gain)
    ours = (f"mean controlled rise Adam {100 * np.nanmean(ga):+.0f} vs SGDM "
            f"{100 * np.nanmean(gs):+.0f} %-points") if any(both) else None
    if ours and nulls:
        na, ns = (ch4.null_spike_gains(nulls[k], drops, window).mean() for k in ("adam", "sgdm"))
        ours += f"; filtered-noise nulls: Adam {100 * na:+.0f} vs SGDM {100 * ns:+.0f}"
    return _paired("fig3.19-spikes", ga, gs, ours, detail, scale=100)


def layer_spikes(trajectories: Sequence, drops: Sequence[int], window: int, *,
                 null_psi_window, detail: str = "") -> SeedFinding:
    """Per seed the share of weight tensors that spike after every drop beyond the
    filtered-noise null's rise there (`layer_spike_share` with `null_spike_gains`), against
    ``LAYER_SHARE``."""
    null = ch4.null_spike_gains(null_psi_window, drops, window)
    s = _per_seed(trajectories, lambda t: ch4.layer_spike_share(t, drops, window, null)[0])
    return _mean("extra_layer_psi", s, None, detail)


# --------------------------------------------------------------- figs 3.12, 3.17, 3.18 (fits)
def far_above_random_walk(name: str, dss: Sequence, dts: Sequence, fits: Sequence, *,
                          null: Mapping[str, Any], detail: str = "") -> SeedFinding:
    """Fig 3.12: per seed the final ``D_t`` over the fitted filtered-noise null's (`null_fit`:
    the null's ``D_s``, ``D_t`` scaled to the run's by eq. 3.15 with the run's gamma, as the
    random walk's sigma is fitted), against ``FAR_ABOVE``; the ratio to the fitted random
    walk's ``E[D_t]`` is shown beside it. ``null``: the null's ``ds`` and ``dt``."""
    trip = [None if d is None or s is None or f is None else (s, d, f)
            for s, d, f in zip(dss, dts, fits)]

    def ratio(p):
        fit = ch4.null_fit(p[0], p[1], null["ds"], null["dt"], p[2]["gamma"])
        return p[1][-1] / fit["dt_fit"][-1]

    r = _per_seed(trip, ratio)
    rw = _per_seed(trip, lambda p: p[1][-1] / tj.rw_expected_dt(len(p[1]),
                                                                p[2]["rw"]["sigma"], p[2]["n"]))
    return _mean(f"fig3.12{_panel(name)}", r, f"final D_t / fitted filtered-noise null's: "
                 f"{mean_interval(r).text()}; / fitted random walk's: "
                 f"{mean_interval(rw).text()}", detail)


def adam_directed_at_start(sgdm_psi: Sequence, adam_psi: Sequence, *,
                           nulls: Mapping[str, Any], detail: str = "") -> SeedFinding:
    """Fig 3.12B: ``psi`` at batch ``START_STEP``, Adam minus SGDM, paired by seed, minus the
    same gap of the filtered-noise nulls (``nulls``: optimiser -> null ``psi``; noise through
    Adam's filters is a little more directed there than through SGDM's), against 0."""
    k = ch4.START_STEP - 1
    null_gap = float(_rows(nulls["adam"])[:, k].mean() - _rows(nulls["sgdm"])[:, k].mean())
    a = _per_seed(adam_psi, lambda p: p[k]) - null_gap
    s = _per_seed(sgdm_psi, lambda p: p[k])
    ours = (f"Adam {np.nanmean(a) + null_gap:.2f} vs SGDM {np.nanmean(s):.2f} (seed means); "
            f"filtered-noise nulls' gap {null_gap:+.3f} (subtracted)"
            if np.isfinite(a - s).any() else None)
    return _paired("fig3.12B-start", a, s, ours, detail)


def ar_fits_better(name: str, fits: Sequence, *, detail: str = "") -> SeedFinding:
    """Fig 3.17: per seed ``log(AR objective / RW objective)``, against log 1/2."""
    r = _per_seed(fits, lambda f: math.log(f["ar"]["objective"] / f["rw"]["objective"]))
    return _mean(f"fig3.17{_panel(name)}", r, f"log(AR / RW objective) {mean_interval(r).text()}",
                 detail)


def rw_shape_better(dts: Sequence, fits: Sequence, *, detail: str = "") -> SeedFinding:
    """Fig 3.18: per SGDM seed `shape_log_ratio`, against 0."""
    pairs = [None if d is None or f is None else (d, f) for d, f in zip(dts, fits)]
    r = _per_seed(pairs, lambda p: ch4.shape_log_ratio(*p))
    return _mean("fig3.18", r, f"log(RW error / AR shape error) {mean_interval(r).text()}",
                 detail)


# --------------------------------------------------------------- fig 3.11 (simulated walks)
def rw_tracks_inverse_sqrt(psis) -> dict[str, SeedFinding]:
    """Fig 3.11: ``psis`` ``(walks, T)`` of simulated random walks against ``1/sqrt(t)``: the
    share of single walks whose mean relative error is below ``RW_TRACK_TOL``, and the
    seed-averaged curve's mean relative error (bools). Each walk is an independent simulated
    replicate (its own seed): both bools declare ``replicates`` = the number of walks."""
    psis = np.asarray(psis, dtype=float)
    t = np.arange(1, psis.shape[1] + 1)
    err_each = np.mean(np.abs(psis * np.sqrt(t) - 1), axis=1)
    err_mean = float(np.mean(np.abs(psis.mean(0) * np.sqrt(t) - 1)))
    share = float(np.mean(err_each < RW_TRACK_TOL))
    single = Finding(bool(share >= RW_TRACK_SHARE),
                     f"{100 * share:.0f} % of {len(psis)} walks (median error "
                     f"{100 * np.median(err_each):.1f} %, worst {100 * err_each.max():.1f} %)",
                     replicates=len(psis))
    mean = Finding(bool(err_mean < RW_MEAN_TOL), f"{100 * err_mean:.1f} % ({len(psis)} walks)",
                   replicates=len(psis))
    return {"fig3.11-single": SeedFinding("fig3.11-single", tuple(err_each), single),
            "fig3.11-mean": SeedFinding("fig3.11-mean", (err_mean,), mean)}


# --------------------------------------------------------------- E13 (batch size, [ATDL-notes])
def e13(slope_small, slope_large, adam_small, adam_large, psi_small, psi_large, steps_small,
        steps_large, *, detail: Mapping[str, str] | None = None) -> dict[str, SeedFinding]:
    """E13's four claim tests from per-seed numbers: the log-log slopes of steps-to-target on
    the smallest and largest batch sizes; Adam's mean ``|Δθ|/η`` at the largest against the
    smallest batch size (paired by seed); and ``psi`` at the target against the random walk.

    ``psi`` of any path falls with its number of steps (a random walk's as ``1/sqrt(t)``), and
    the large batch reaches the target in fewer steps, so ``psi`` at the target would rise
    with ``B`` even for a random walk. The null is the walk with the same number of steps:
    per seed ``log(psi_large sqrt(t_large)) - log(psi_small sqrt(t_small))`` (``psi`` in units
    of the random walk's ``1/sqrt(t)``), against 0.
    """
    detail = detail or {}
    small, large = np.asarray(slope_small, dtype=float), np.asarray(slope_large, dtype=float)
    ps, pl = np.asarray(psi_small, dtype=float), np.asarray(psi_large, dtype=float)
    rs = np.log(ps * np.sqrt(np.asarray(steps_small, dtype=float)))
    rl = np.log(pl * np.sqrt(np.asarray(steps_large, dtype=float)))
    raw = paired_difference(pl, ps)
    return {
        "E13-linear": _mean("E13-linear", small + 1, f"slope {mean_interval(small).text()}",
                            detail.get("E13-linear", "")),
        "E13-plateau": _mean("E13-plateau", large, f"slope {mean_interval(large).text()}",
                             detail.get("E13-plateau", "")),
        "E13-adam": _paired("E13-adam", adam_large, adam_small, None, detail.get("E13-adam", "")),
        "E13-psi": _paired("E13-psi", rl, rs,
                           f"log(psi sqrt(t)), large B - small B: "
                           f"{paired_difference(rl, rs).text(3)}; raw psi at the target, large "
                           f"B - small B: {raw.text(3)}", detail.get("E13-psi", "")),
    }
