"""Checks of scalar arguments shared by the library's numerical modules, so bad input stops
with one kind of message (``ValueError`` naming the argument) before any compute."""

from __future__ import annotations

import numpy as np


def check_int(x, name: str, low: int = 1) -> int:
    """``int(x)`` after checking it is an integer (not a bool) ``>= low``."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {x!r}")
    return int(x)


def check_nonnegative(x, name: str, *, positive: bool = False) -> float:
    """``float(x)`` after checking it is a finite real scalar ``>= 0`` (``> 0`` if
    ``positive``)."""
    if isinstance(x, bool) or np.ndim(x) != 0 or not np.isfinite(x):
        raise ValueError(f"{name} must be a finite scalar, got {x!r}")
    if x < 0 or (positive and x == 0):
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'}, got {x!r}")
    return float(x)
