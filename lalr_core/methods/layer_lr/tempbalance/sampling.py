"""The sampling schemes (eqs. 2.26-2.31): ``gauss_alpha``, ``gauss_lr``, ``emg`` and ``exp``.

Each draws from an explicit ``rng`` (``np.random.Generator`` or ``torch.Generator``).

Part of `lalr_core.methods.layer_lr.tempbalance` (its docstring states the conventions).
"""

from __future__ import annotations

import numpy as np
import torch

from lalr_core.methods.layer_lr.tempbalance.deterministic import by_rank, check_alphas, weighted

SAMPLE_FLOOR = 1e-3  # our floor: sampled weights are clipped here before normalising


def _draw(rng, kind: str, size: int, scale: float = 1.0) -> np.ndarray:
    """`[size]` float64 draws, ``kind`` in {"normal" (N(0, scale^2)), "exp" (mean scale)}."""
    if isinstance(rng, np.random.Generator):
        if kind == "normal":
            return rng.normal(0.0, scale, size)
        return rng.exponential(scale, size)
    if isinstance(rng, torch.Generator):
        if kind == "normal":
            return scale * torch.randn(size, generator=rng, dtype=torch.float64).numpy()
        x = torch.empty(size, dtype=torch.float64).exponential_(1.0, generator=rng)
        return scale * x.numpy()
    raise ValueError(f"rng must be a numpy Generator or a torch.Generator (no global RNG), "
                     f"got {type(rng).__name__}")



def gauss_alpha(alphas, lr_t: float, *, rng, std: float = 1.0,
                floor: float = SAMPLE_FLOOR) -> np.ndarray:
    """Gaussians around each alpha (eqs. 2.26-2.27): ``y_i ~ N(alpha_i, std^2)``, then weighted.

    ``lr_i = lr_t * n * y_i / sum_j y_j`` with ``y`` clipped at ``floor`` first. The printed
    eq. 2.27 (``lr_t * n * y_i``) omits the normalisation that the source's text asks for ("we
    normalize by the weighted average of the y_i's"); the text wins. The floor is ours: without it a negative draw would give a negative lr. Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring.
        std: standard deviation of each Gaussian (source: 1, kept as printed).
        floor: positive lower clip of the draws.
    """
    a, lr_t = check_alphas(alphas, lr_t)
    if not (std >= 0 and floor > 0):
        raise ValueError(f"need std >= 0 and floor > 0, got std={std}, floor={floor}")
    y = a + _draw(rng, "normal", a.size, std)   # eq. 2.26
    return weighted(np.maximum(y, floor), lr_t)  # eq. 2.27 (normalised)


def gauss_lr(alphas, lr_t: float, *, rng, std: float = 1.0,
             positive: str = "softplus") -> np.ndarray:
    """One Gaussian around lr_t, permuted by alpha ranks (eqs. 2.28-2.29).

    Draw ``x_i ~ N(lr_t, std^2)``, i = 1..n (eq. 2.28); turn them into probabilities ``x_hat``;
    the layer with the j-th largest alpha gets the j-th largest ``x_hat`` (eq. 2.29):
    ``lr = lr_t * n * x_hat``. The source does not say how to normalise draws that are ~45 %
    negative for lr_t <= 0.2; ``positive="softplus"`` uses ``softplus(x) / sum softplus(x)`` and
    ``"shift"`` uses ``x - min(x) + 1e-3`` (both our choice). Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring; only the ranks of alphas matter.
        std: standard deviation (source: 1).
        positive: ``"softplus"`` or ``"shift"``.
    """
    a, lr_t = check_alphas(alphas, lr_t)
    if positive not in ("softplus", "shift") or not std >= 0:
        raise ValueError(f"need positive in ('softplus', 'shift') and std >= 0, got "
                         f"{positive!r}, {std}")
    x = lr_t + _draw(rng, "normal", a.size, std)  # eq. 2.28
    w = np.logaddexp(0.0, x) if positive == "softplus" else x - x.min() + SAMPLE_FLOOR
    return by_rank(a, w / w.sum(), lr_t)         # eq. 2.29


def emg(alphas, lr_t: float, *, rng, noise_std: float = 1.0) -> np.ndarray:
    """Exponential / EMG model of alpha (eqs. 2.30-2.31), assigned by rank like eq. 2.29.

    The source models alpha as ``Z ~ Exp(nu)`` (eq. 2.30) plus ``N(0, 1)`` noise (the EMG,
    eq. 2.31) but gives no allocation rule; ours: fit ``nu = 1 / mean(alpha -
    1)`` on the excess over 1, draw ``a_i = 1 + Z_i + eps_i`` with ``eps ~ N(0, noise_std^2)``,
    clip at 1e-3, and give the j-th largest ``a / sum a`` to the layer with the j-th largest
    alpha. ``noise_std=0`` is the pure exponential model (scheme ``"exp"``). Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring; needs ``mean(alpha) > 1``.
        noise_std: std of the Gaussian noise eps (source: 1).
    """
    a, lr_t = check_alphas(alphas, lr_t)
    excess = float(np.mean(a - 1.0))  # = 1 / nu, E[Z] of eq. 2.30
    if excess <= 0 or not noise_std >= 0:
        raise ValueError(f"need mean(alpha) > 1 and noise_std >= 0, got mean(alpha)="
                         f"{excess + 1}, noise_std={noise_std}")
    z = _draw(rng, "exp", a.size, excess)  # eq. 2.30, Exp(nu) with 1/nu = excess
    eps = _draw(rng, "normal", a.size, noise_std) if noise_std > 0 else 0.0  # eq. 2.31
    w = np.maximum(1.0 + z + eps, SAMPLE_FLOOR)
    return by_rank(a, w / w.sum(), lr_t)


def exp(alphas, lr_t: float, *, rng) -> np.ndarray:
    """Pure exponential model of alpha (eq. 2.30): `emg` without the noise term."""
    return emg(alphas, lr_t, rng=rng, noise_std=0.0)

