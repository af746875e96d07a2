"""Input checks shared by the trajectory modules (scalars, windows, vectors, steps, curves).

Part of `lalr_core.methods.trajectory` (its docstring states the conventions).
"""

from __future__ import annotations

import numpy as np
import torch


# ----------------------------------------------------------------------------- validation
def check_scalar(x, name: str, *, low: float = -np.inf, low_open: bool = False,
            high: float = np.inf, high_open: bool = False) -> float:
    """``float(x)`` after checking it is a finite real scalar in the given interval."""
    if isinstance(x, bool) or np.ndim(x) != 0 or not np.isfinite(x):
        raise ValueError(f"{name} must be a finite scalar, got {x!r}")
    x = float(x)
    if x < low or (low_open and x == low) or x > high or (high_open and x == high):
        lb, rb = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {x!r}")
    return x


def check_alpha(alpha) -> float:
    return check_scalar(alpha, "alpha", low=0.0, high=1.0, high_open=True)


def check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    return int(window)


def check_vector(theta, name: str) -> torch.Tensor:
    if not isinstance(theta, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(theta).__name__}")
    if theta.ndim != 1 or theta.numel() == 0 or not theta.is_floating_point():
        raise ValueError(f"{name} must be a non-empty 1-D float tensor, got shape "
                         f"{tuple(theta.shape)} and dtype {theta.dtype}")
    return theta


def check_steps(t, *, integer: bool = False) -> np.ndarray:
    """Step indices ``t >= 1`` as a float64 (or int64) array."""
    arr = np.asarray(t, dtype=np.float64)
    if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 1):
        raise ValueError(f"steps t must be finite and >= 1, got min {np.nanmin(arr)!r}")
    if integer:
        if np.any(arr != np.round(arr)):
            raise ValueError("steps t must be integers here")
        return arr.astype(np.int64)
    return arr


def check_curves(ds, dt, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Measured ``D_s``, ``D_t`` (1-D, equal length) and their steps (default ``1..T``)."""
    ds, dt = np.asarray(ds, dtype=np.float64), np.asarray(dt, dtype=np.float64)
    if ds.ndim != 1 or ds.shape != dt.shape or ds.size == 0:
        raise ValueError(f"ds and dt must be non-empty 1-D arrays of equal length, got shapes "
                         f"{ds.shape} and {dt.shape}")
    if not (np.all(np.isfinite(ds)) and np.all(np.isfinite(dt))):
        raise ValueError("ds and dt must be finite")
    t = np.arange(1, ds.size + 1) if t is None else check_steps(t, integer=True)
    if t.shape != ds.shape:
        raise ValueError(f"t must have the shape of ds {ds.shape}, got {t.shape}")
    return ds, dt, t
