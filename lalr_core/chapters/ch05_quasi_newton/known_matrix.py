"""Chapter 05's computations on known matrices and test functions: power iteration on
``H = X^T X`` (listing F.1; figs 4.12, 4.13, 4.17, 4.18), SGDM on Rastrigin and Rosenbrock with
chapter 04's total distance (fig 4.14), and the spectrum from cumulants of squared gradient
norms (appendix H; figs H.1, H.2). Each function returns the numbers a check judges."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from lalr_core.methods.curvature import cumulants, test_functions, top_eigen
from lalr_core.methods.trajectory import path_metrics

FIG413_TAIL = 50          # fig 4.13: the mean |cos| over the last 50 iterates
FIG417_TAIL = 10          # fig 4.17a: |cos| and the estimate over the last 10 iterates
ROLLING_TAIL = 1000       # figs 4.17b, 4.18: statistics over the last 1000 iterates (at most
                          # half the run)
CUMULANT_ORDERS = (1, 2, 3)
# The thesis's own sample and exact cumulants of fig H.2 (printed beside ours)
THESIS_SAMPLE_KAPPAS = cumulants.THESIS_SAMPLE_KAPPAS
THESIS_EXACT_KAPPAS = cumulants.THESIS_EXACT_KAPPAS


def fig417a_samples(size: int) -> int:
    """Gradients per iterate of fig 4.17a: 1000 (its caption), at most 10 per dimension."""
    return min(1000, 10 * size)


def power_iteration_runs(size: int) -> dict:
    """Listing F.1 blocks A-C on ``H = X^T X``, ``X`` a ``size x size`` N(0, 1) matrix (seed 0):
    ``H``, its top eigenpair ``lam``, ``v``, and the runs ``fig4.12`` (power iteration with
    ``H``), ``fig4.13`` (one gradient ``H r`` per iterate) and ``fig4.17a``
    (`fig417a_samples` gradients per iterate), each with ``cos phi`` against ``v``."""
    H = top_eigen.random_gram(size, seed=0)
    lam, v = top_eigen.top_eigenpair(H)
    return {"H": H, "lam": lam, "v": v,
            "fig4.12": top_eigen.power_iteration(H, seed=0, reference=v),
            "fig4.13": top_eigen.sampled_gradient_power_iteration(H, s=1, seed=0, reference=v),
            "fig4.17a": top_eigen.sampled_gradient_power_iteration(
                H, s=fig417a_samples(size), seed=0, reference=v)}


def stop_rule_share(size: int, seeds: int) -> float:
    """The share of ``seeds`` matrices (seeds 0, 1, ...) on which fig 4.12's power iteration
    stops with ``|cos phi| > 0.99`` (its stop rule is absolute, so a small eigen-gap can stop it
    early)."""
    runs = [top_eigen.power_iteration(top_eigen.random_gram(size, seed=k), seed=k,
                                      reference=top_eigen.top_eigenpair(
                                          top_eigen.random_gram(size, seed=k))[1])
            for k in range(seeds)]
    return np.mean([abs(r.cos[-1]) > 0.99 for r in runs])


def fig413_numbers(run) -> dict:
    """Fig 4.13: ``mean_cos``, the mean |cos phi| over the last `FIG413_TAIL` iterates, and
    ``cv``, the coefficient of variation of the eigenvalue estimates."""
    tail = run.cos[-min(FIG413_TAIL, run.iters):]
    return {"mean_cos": np.mean(np.abs(tail)),
            "cv": float(np.std(run.values) / np.mean(run.values))}


def fig417a_numbers(run) -> dict:
    """Fig 4.17a over the last `FIG417_TAIL` iterates: ``cos`` (|cos phi| values) and
    ``value`` (the mean eigenvalue estimate)."""
    return {"cos": run.cos[-FIG417_TAIL:], "value": np.mean(run.values[-FIG417_TAIL:])}


def rolling_runs(H, v, samples, steps: int) -> dict:
    """Listing F.1 block D: the rolling-window power iteration for each window length in
    ``samples`` (``steps`` iterates, seed 0, ``cos phi`` against ``H``'s top eigenvector
    ``v``)."""
    return {s: top_eigen.rolling_gradient_power_iteration(H, s=s, steps=steps, seed=0,
                                                          reference=v)
            for s in samples}


def rolling_tail(steps: int) -> int:
    """Iterates the rolling-window statistics cover: `ROLLING_TAIL`, at most half the run."""
    return min(ROLLING_TAIL, steps // 2)


def rolling_stats(runs: Mapping[int, object], last: int) -> pd.DataFrame:
    """Per window length (rows): the mean, standard deviation and minimum of |cos phi| over
    the last ``last`` iterates."""
    return pd.DataFrame({s: {"late mean |cos|": np.mean(np.abs(r.cos[-last:])),
                             "late sd |cos|": np.std(np.abs(r.cos[-last:])),
                             "late min |cos|": np.min(np.abs(r.cos[-last:]))}
                         for s, r in runs.items()}).T


def middle_window(samples) -> int:
    """Fig 4.17b's window: the middle of the window lengths (the largest if only two)."""
    return sorted(samples)[len(samples) // 2] if len(samples) > 2 else max(samples)


def steadier_with_window(stats: pd.DataFrame) -> bool:
    """Fig 4.18's claim: the late mean |cos phi| rises and its spread falls as the window
    grows (rows in increasing window length)."""
    means, sds = stats["late mean |cos|"].to_numpy(), stats["late sd |cos|"].to_numpy()
    return bool(np.all(np.diff(means) > 0) and np.all(np.diff(sds) < 0))


def fig414_run(name: str) -> dict:
    """Fig 4.14 on ``name`` (``"rastrigin"`` or ``"rosenbrock"``): the SGDM ``path``
    (`test_functions.fig_4_14_path`), its total distance from the start ``dt`` (chapter 04's
    D_t, eq. 3.1) and ``numbers``: the share of steps on which D_t falls, the end point,
    D_t's maximum and final value."""
    path = test_functions.fig_4_14_path(name).numpy()
    dt = path_metrics(path)["dt"]
    return {"path": path, "dt": dt,
            "numbers": {"falls on (% of steps)": 100 * float(np.mean(np.diff(dt) < 0)),
                        "end": path[-1].round(4).tolist(), "D_t max": float(dt.max()),
                        "D_t final": float(dt[-1])}}


def appendix_h(samples: int) -> dict:
    """Appendix H on the thesis's generated matrix (`cumulants.thesis_matrix`, seed 1): its
    ``eigvals``, the cubic profile ``profile`` (fig H.1), ``samples`` draws of ``||H eps||^2``
    (``draws``, seed 0; fig H.2) and the cumulants of orders 1-3: ``sample`` (k-statistics of
    the draws), ``exact`` (from the spectrum), ``cubic`` (from the profile) and ``rel``
    (``|sample / exact - 1|``)."""
    H = cumulants.thesis_matrix(seed=1)
    eigvals = torch.linalg.eigvalsh(H).numpy()
    profile = cumulants.fit_cubic_profile(eigvals)
    draws = cumulants.squared_gradient_norms(H, samples, seed=0).numpy()
    exact = cumulants.cumulants_from_spectrum(eigvals, CUMULANT_ORDERS)
    sample = cumulants.sample_cumulants(draws, CUMULANT_ORDERS)
    return {"eigvals": eigvals, "profile": profile, "draws": draws, "exact": exact,
            "sample": sample,
            "cubic": cumulants.profile_cumulants(profile.n_star, profile.a, profile.b,
                                                 CUMULANT_ORDERS),
            "rel": np.abs(sample / exact - 1)}


def cumulants_within(rel, bounds=(0.02, 0.05, 0.15)) -> bool:
    """Fig H.2's claim: each relative error of kappa_1..3 within its bound."""
    return bool(all(r <= b for r, b in zip(rel, bounds, strict=True)))
