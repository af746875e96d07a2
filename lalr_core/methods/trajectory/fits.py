"""Fits of the random-walk and AR(1) baselines to measured curves by eq. 3.15 (sec. 3.2.5,
3.2.7): ``balanced_gamma``, ``fit_objective``, ``fit_rw``, ``fit_ar``.

Part of `lalr_core.methods.trajectory` (its docstring states the conventions).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from scipy import optimize

from lalr_core.methods.trajectory.baselines import (
    ar_expected_ds,
    ar_expected_dt,
    check_ar,
    rw_expected_ds,
    rw_expected_dt,
)
from lalr_core.methods.trajectory.validation import check_curves, check_scalar

ALPHA_MAX = 1.0 - 1e-5  # upper bound of alpha in the AR fit (ours; the thesis gives no bounds)
SIGMA_MIN = 1e-12  # lower bound of sigma in the AR fit (ours)
D_MIN_REL = 1e-9  # lower bound of d in the AR fit, relative to max D_t (ours, for d >= 0)


# ----------------------------------------------------------------------------- fits (eq. 3.15)
def balanced_gamma(ds, dt) -> float:
    """Weight ``gamma = sum D_t^2 / (sum D_s^2 + sum D_t^2)`` of eq. 3.15 (our choice).

    Both terms of eq. 3.15 then weigh the same at ``sigma = 0``; the thesis gives no value.
    """
    ds, dt, _ = check_curves(ds, dt, None)
    total = np.sum(ds**2) + np.sum(dt**2)
    if total == 0:
        raise ValueError("ds and dt are all zero")
    return float(np.sum(dt**2) / total)


def fit_objective(ds, dt, ds_model, dt_model, gamma) -> float:
    """Eq. 3.15: ``sum_i gamma (D_s - D_s^model)^2 + (1 - gamma)(D_t - D_t^model)^2``.

    ``ds_model`` and ``dt_model`` broadcast to the measured curves' shape ``(T,)``.
    """
    ds, dt, _ = check_curves(ds, dt, None)
    gamma = check_scalar(gamma, "gamma", low=0.0, high=1.0)
    ds_model, dt_model = np.broadcast_to(ds_model, ds.shape), np.broadcast_to(dt_model, dt.shape)
    return float(gamma * np.sum((ds - ds_model) ** 2) + (1 - gamma) * np.sum((dt - dt_model) ** 2))


def fit_rw(ds, dt, n, gamma, t=None) -> dict[str, Any]:
    """Fit the random-walk ``sigma`` to measured ``D_s``, ``D_t`` by eq. 3.15 (sec. 3.2.5).

    Nelder-Mead (the source's method) on ``log sigma``, objective divided by its value at
    ``sigma = 0``. Both expectations are linear in ``sigma``, so the least-squares optimum is
    also returned in closed form (``sigma_lstsq``) as a check.

    Args:
        ds: ``(T,)`` measured path length.
        dt: ``(T,)`` measured displacement.
        n: dimension, the number of parameters ("in same dimension").
        gamma: weight of the ``D_s`` term in ``[0, 1]`` (0 fits ``D_t`` only, Fig 3.18).
        t: integer steps of the curves (default ``1..T``; pass them for subsampled curves).

    Returns:
        dict ``sigma``, ``objective`` (eq. 3.15 value), ``sigma_lstsq``, ``success``,
        ``ds_fit``, ``dt_fit`` (the fitted expectations).
    """
    ds, dt, t = check_curves(ds, dt, t)
    gamma = check_scalar(gamma, "gamma", low=0.0, high=1.0)
    a, b = rw_expected_ds(t, 1.0, n), rw_expected_dt(t, 1.0, n)  # curves per unit sigma
    scale = fit_objective(ds, dt, 0.0, 0.0, gamma)
    sigma_ls = (gamma * a @ ds + (1 - gamma) * b @ dt) / (gamma * a @ a + (1 - gamma) * b @ b)
    if scale == 0 or not sigma_ls > 0:
        raise ValueError("cannot fit a random walk: the weighted curves are zero or negative")
    moment = (ds[-1] + dt[-1]) / (a[-1] + b[-1])  # a start near, but not at, the optimum
    x0 = np.log(moment if moment > 0 else sigma_ls)

    def loss(x):
        return fit_objective(ds, dt, np.exp(x[0]) * a, np.exp(x[0]) * b, gamma) / scale

    res = optimize.minimize(loss, [x0], method="Nelder-Mead",
                            options=dict(xatol=1e-12, fatol=1e-16, maxiter=4000))
    sigma = float(np.exp(res.x[0]))
    return {"sigma": sigma, "objective": float(res.fun * scale), "sigma_lstsq": float(sigma_ls),
            "success": bool(res.success), "ds_fit": sigma * a, "dt_fit": sigma * b}


def _ar_start(ds, dt, n, gamma, t, init) -> dict[str, float]:
    """Our start ``alpha = 0.99``, ``sigma`` = RW fit, ``d`` = final ``D_t``; ``init`` overrides."""
    unknown = set(init or {}) - {"alpha", "sigma", "d"}
    if unknown:
        raise ValueError(f"unknown init keys {sorted(unknown)}; allowed: alpha, sigma, d")
    start = {"alpha": 0.99, "d": float(dt[-1])}
    if "sigma" not in (init or {}):
        start["sigma"] = fit_rw(ds, dt, n, gamma, t)["sigma"]
    start.update(init or {})
    check_ar(start["alpha"], start["sigma"], n, start["d"])
    return start


def fit_ar(ds, dt, n, gamma, init: Mapping[str, float] | None = None, t=None,
           multi_start: bool = True) -> dict[str, Any]:
    """Fit the AR(1) bounds ``(alpha, sigma, d)`` to measured curves by eq. 3.15 (sec. 3.2.7).

    L-BFGS-B (the source's method) over ``(alpha, log sigma, log d)`` with bounds ``alpha in
    [0, ALPHA_MAX]``, ``sigma >= SIGMA_MIN``, ``d >= D_MIN_REL max D_t`` (for ``d >= 0``:
    fitting ``d`` itself, ``d = 0`` is a stationary point that traps the search, as ``d``
    enters only as ``d^2``); the objective is divided by its value at zero, and generous upper
    bounds on ``sigma`` and ``d`` keep line searches finite. The objective has local minima
    with small ``d`` and ``alpha`` near 1, so besides our start (``alpha = 0.99``, ``sigma``
    = RW fit, ``d`` = final ``D_t``; ``init`` overrides any of them) ``multi_start`` also
    starts from ``alpha in {0.5, 0.9, 0.999}`` with ``d = 2 max D_t`` and keeps the best.

    Args:
        ds: ``(T,)`` measured path length.
        dt: ``(T,)`` measured displacement.
        n: dimension, the number of parameters.
        gamma: weight of the ``D_s`` term in ``[0, 1]``.
        init: optional start values for any of ``alpha``, ``sigma``, ``d``.
        t: integer steps of the curves (default ``1..T``).
        multi_start: also try the three extra starts (4 L-BFGS-B runs instead of 1).

    Returns:
        dict ``alpha``, ``sigma``, ``d``, ``objective`` (eq. 3.15 value), ``success``,
        ``ds_fit``, ``dt_fit``.
    """
    ds, dt, t = check_curves(ds, dt, t)
    gamma = check_scalar(gamma, "gamma", low=0.0, high=1.0)
    n = check_scalar(n, "n", low=0.0, low_open=True)
    start = _ar_start(ds, dt, n, gamma, t, init)
    scale, d_unit = fit_objective(ds, dt, 0.0, 0.0, gamma), max(float(dt.max()), 1e-300)

    def params(x):  # clipped: finite-difference probes may step just outside the bounds
        return min(max(x[0], 0.0), ALPHA_MAX), np.exp(x[1]), d_unit * np.exp(x[2])

    def curves(x):
        alpha, sigma, d = params(x)
        return ar_expected_ds(t, alpha, sigma, n, d), ar_expected_dt(t, alpha, sigma, n, d)

    lo, log_s = np.log(D_MIN_REL), np.log(max(start["sigma"], SIGMA_MIN))
    # finite upper bounds only keep line searches from overflowing: one step of noise longer
    # than 1e3 x the whole path, or a mean 1e6 x farther than the largest D_t, cannot fit
    bounds = [(0.0, ALPHA_MAX), (np.log(SIGMA_MIN), max(np.log(1e3 * max(ds.max(), dt.max())
                                                              / np.sqrt(n)), log_s)),
              (lo, np.log(1e6))]
    log_d = max(np.log(max(start["d"], 1e-300) / d_unit), lo)
    x0s = [[min(start["alpha"], ALPHA_MAX), log_s, log_d]]
    x0s += [[a, log_s, np.log(2.0)] for a in (0.5, 0.9, 0.999)] if multi_start else []
    runs = [optimize.minimize(lambda x: fit_objective(ds, dt, *curves(x), gamma) / scale, x0,
                              method="L-BFGS-B", bounds=bounds,
                              options=dict(ftol=1e-15, gtol=1e-12, maxiter=2000))
            for x0 in x0s]
    res = min(runs, key=lambda r: r.fun)
    (ds_fit, dt_fit), (alpha, sigma, d) = curves(res.x), params(res.x)
    return {"alpha": float(alpha), "sigma": float(sigma), "d": float(d),
            "objective": float(res.fun * scale), "success": bool(res.success),
            "ds_fit": ds_fit, "dt_fit": dt_fit}
