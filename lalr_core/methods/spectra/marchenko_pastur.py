"""The Marchenko-Pastur law (eq. 1.6): ``mp_edges`` and ``marchenko_pastur_pdf``.

Part of `lalr_core.methods.spectra` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math

import torch

# ----------------------------------------------------------------------------- Marchenko-Pastur


def mp_edges(ratio: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Support ``[a, b]`` of the Marchenko-Pastur law (eq. 1.6), scaled by ``sigma2``.

    ``a = sigma2 (1 - sqrt(y))^2``, ``b = sigma2 (1 + sqrt(y))^2``, ``y = ratio``.

    Args:
        ratio: ``y = min(n, m) / max(n, m)`` in (0, 1] (eq. 1.6's ``n / m -> y``).
        sigma2: entry variance of ``W``; eigenvalues are those of ``W^T W / max(n, m)``.

    Returns:
        ``(a, b)``.

    Raises:
        ValueError: ratio outside (0, 1] or sigma2 <= 0.
    """
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}")
    r = math.sqrt(ratio)
    return sigma2 * (1 - r) ** 2, sigma2 * (1 + r) ** 2


def marchenko_pastur_pdf(x, ratio: float, sigma2: float = 1.0) -> torch.Tensor:
    """Marchenko-Pastur density (eq. 1.6): ``sqrt((b - x)(x - a)) / (2 pi sigma2 x y)`` on [a, b].

    Args:
        x: points (scalar, array or tensor), same units as `esd(..., normalize=True)`.
        ratio: ``y`` in (0, 1].
        sigma2: entry variance (eq. 1.6 is ``sigma2 = 1``).

    Returns:
        float64 tensor of ``x``'s shape; 0 outside ``[a, b]``. Integrates to 1 for y in (0, 1].
    """
    a, b = mp_edges(ratio, sigma2)
    x = torch.as_tensor(x, dtype=torch.float64)
    inside = (x >= a) & (x <= b) & (x > 0)
    root = torch.sqrt(((b - x) * (x - a)).clamp_min(0.0))
    dens = root / (2 * math.pi * sigma2 * ratio * torch.where(inside, x, torch.ones_like(x)))
    return torch.where(inside, dens, torch.zeros_like(x))
