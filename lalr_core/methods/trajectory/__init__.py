"""Directedness of optimisation trajectories (seed 004, sec. 3.2; Appendices A and C).

Chapter 04 (figs 3.7-3.19, A.1). Path metrics of a parameter trajectory ``theta_0, ..., theta_T``:
displacement ``D_t`` (eq. 3.1), path length ``D_s`` (eq. 3.2), directedness ``psi = D_t/D_s``
and its rolling-window form ``psi_N`` (eqs. 3.3-3.5). ``PathMetrics`` is the one streaming
implementation, used both for simulated paths (``path_metrics``) and inside training
(``TrajectoryCallback``). Then the random-walk / AR(1) baselines (simulators and closed forms,
App. A) and the fits of eq. 3.15.

Conventions:
    * Steps are ``t = 1..T`` from the start point ``theta_0``: ``D_t(t) = ||theta_t - theta_0||``
      and ``D_s(t)`` sums ``t`` step norms. The thesis writes eq. 3.1 from ``theta_1`` with
      ``s_1 = 0`` but derives eqs. 3.6-3.8 and the AR bounds with ``t`` real steps from
      ``theta_0``; this package follows the derivations, so the closed forms apply unshifted.
    * Window: ``D_s(t-N)`` sums ``i = t-N+1..t`` (eq. 3.4 prints ``i = N``), and for
      ``t < N`` the window is truncated at ``theta_0``, so ``psi_N(t) = psi(t)`` there.
    * ``0/0`` (no movement at all) gives ``nan``, never 1: an unmoved segment has no direction.
The package: ``path`` (``PathMetrics``, ``path_metrics``, ``TrajectoryCallback``,
``spike_gain``), ``baselines`` (App. A helpers, the random-walk / AR(1) closed forms and
simulators), ``fits`` (eq. 3.15) and ``validation`` (the input checks they share); this module
re-exports their public names, and importing it registers ``TrajectoryCallback`` as the
``"trajectory"`` callback.
"""

from __future__ import annotations

from lalr_core.methods.trajectory.baselines import (
    SERIES_MIN_N,
    G,
    ar_expected_ds,
    ar_expected_dt,
    ar_limit_ds,
    ar_limit_dt,
    check_ar,
    cos_threshold,
    decayed_sum_norm_mean,
    decayed_sum_sq_norm_mean,
    norm_variance,
    rw_expected_ds,
    rw_expected_dt,
    rw_expected_psi_window,
    simulate_ar,
    simulate_rw,
)
from lalr_core.methods.trajectory.fits import (
    ALPHA_MAX,
    D_MIN_REL,
    SIGMA_MIN,
    balanced_gamma,
    fit_ar,
    fit_objective,
    fit_rw,
)
from lalr_core.methods.trajectory.path import (
    PathMetrics,
    TrajectoryCallback,
    path_metrics,
    spike_gain,
)
from lalr_core.methods.trajectory.validation import (
    check_alpha,
    check_curves,
    check_scalar,
    check_steps,
    check_vector,
    check_window,
)

__all__ = [
    "ALPHA_MAX",
    "D_MIN_REL",
    "SERIES_MIN_N",
    "SIGMA_MIN",
    "G",
    "PathMetrics",
    "TrajectoryCallback",
    "ar_expected_ds",
    "ar_expected_dt",
    "ar_limit_ds",
    "ar_limit_dt",
    "balanced_gamma",
    "check_alpha",
    "check_ar",
    "check_curves",
    "check_scalar",
    "check_steps",
    "check_vector",
    "check_window",
    "cos_threshold",
    "decayed_sum_norm_mean",
    "decayed_sum_sq_norm_mean",
    "fit_ar",
    "fit_objective",
    "fit_rw",
    "norm_variance",
    "path_metrics",
    "rw_expected_ds",
    "rw_expected_dt",
    "rw_expected_psi_window",
    "simulate_ar",
    "simulate_rw",
    "spike_gain",
]
