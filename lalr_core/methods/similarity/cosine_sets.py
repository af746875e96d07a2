"""Cosine-similarity sets between the components of a layer (seed 004, sec. 5.5, app. A, I).

Chapter 06 (figs 5.10-5.12, I.1, I.2). Pure functions on tensors:

* `pairwise_abs_cos` -- eq. 5.10's set ``{|S_cos(theta_i, theta_j)| : i < j}`` over the filters
  (rows of ``W.flatten(1)``) of one layer;
* `channel_similarity` -- ``E[R_l]`` of eqs. 5.11-5.12: mean |cos| between the channels of an
  intermediate representation, per sample;
* `rowwise_cos` -- the symmetry probe ``phi_t`` of eq. 4.56 / I.8, one cosine per filter;
* `random_abs_cos_mean` -- E|cos| of random vectors, beside the Chebyshev threshold of app. A.1.4
  (`lalr_core.methods.trajectory.cos_threshold`, ``10/sqrt(n)``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

FIVE_NUMBERS = ("min", "q1", "median", "q3", "max")


def _rows(W: torch.Tensor) -> torch.Tensor:
    if not isinstance(W, torch.Tensor) or W.ndim < 2:
        raise ValueError(f"expected a weight with >= 2 dims (filters, ...), got "
                         f"{getattr(W, 'shape', type(W).__name__)}")
    return W.detach().flatten(1).double()                       # (N_l, P_l)


def pairwise_abs_cos(W: torch.Tensor) -> torch.Tensor:
    """``|S_cos|`` of every distinct pair of filters of one layer (eq. 5.10's set).

    Args:
        W: a layer's weight (or gradient) ``[N_l, ...]``; row ``i`` of ``W.flatten(1)`` is
            filter ``i``'s parameter vector of dimension ``P_l``.

    Returns:
        ``[N_l (N_l - 1) / 2]`` float64 values in [0, 1], pairs ``i < j`` in row-major order.
        A zero filter has cosine 0 with every other.
    """
    R = _rows(W)
    U = R / R.norm(dim=1, keepdim=True).clamp_min(1e-300)
    i, j = torch.triu_indices(len(U), len(U), offset=1)
    return (U @ U.T)[i, j].abs()


def channel_similarity(h: torch.Tensor) -> torch.Tensor:
    """Mean |cos| between distinct channels of a representation, per sample (eq. 5.12).

    Args:
        h: a layer's output ``[B, C, H, W]`` (or ``[B, C]``); each channel's map is
            flattened to one vector (as the author's code does).

    Returns:
        ``[B]`` float64: ``E[R_l]`` of each sample. A channel that is all zero (a dead ReLU
        map) has cosine 0 with the others.
    """
    if h.ndim < 2 or h.shape[1] < 2:
        raise ValueError(f"need [B, C>=2, ...] activations, got {tuple(h.shape)}")
    X = h.detach().flatten(2).double() if h.ndim > 2 else h.detach().double()[..., None]
    U = X / X.norm(dim=2, keepdim=True).clamp_min(1e-300)      # (B, C, HW)
    C = U.shape[1]
    i, j = torch.triu_indices(C, C, offset=1)
    return (U @ U.mT)[:, i, j].abs().mean(dim=1)


def rowwise_cos(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Cosine between row ``i`` of ``A.flatten(1)`` and row ``i`` of ``B.flatten(1)``.

    Used for the symmetry probe ``phi_t = S_cos(theta_tau - theta_t, grad_t)`` per filter
    (eq. 4.56, app. I). Returns ``[N_l]`` float64; a zero row gives 0.
    """
    a, b = _rows(A), _rows(B)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {tuple(A.shape)} vs {tuple(B.shape)}")
    return (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1)).clamp_min(1e-300)


def five_numbers(values) -> dict[str, float]:
    """Min, quartiles and max (the Tufte box plot of listing B.1) plus the mean."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("five_numbers needs at least one value")
    q = np.percentile(x, [0, 25, 50, 75, 100])
    return {**dict(zip(FIVE_NUMBERS, map(float, q))), "mean": float(x.mean())}


def random_abs_cos_mean(n: int) -> float:
    """``E|cos|`` of two independent isotropic vectors in ``n`` dims (exact).

    ``cos = 2 beta - 1`` with ``beta ~ Beta((n-1)/2, (n-1)/2)``, so
    ``E|cos| = Gamma(n/2) / (sqrt(pi) Gamma((n+1)/2))`` (about ``sqrt(2/(pi n))`` for large n).
    """
    if n < 2:
        raise ValueError(f"need n >= 2, got {n}")
    return math.exp(math.lgamma(n / 2) - math.lgamma((n + 1) / 2)) / math.sqrt(math.pi)
