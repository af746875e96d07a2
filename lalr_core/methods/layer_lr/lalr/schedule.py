"""From raw metrics to per-layer lr scales: min-max normalisation, scale rules, floor, phases.

The source's §2.4 and §3, as chapter 01's executable specification reads them. In epoch ``e`` (0-based) the phase is ``order[e % len(order)]``
(the source's ``['svd', 'ce', 'cs'][e % 3]``); only that phase's metric sets the scales:

    u     = (m - min m) / (max m - min m)          across layers (§2.4)
    scale = 1 - u                                   svd, ce ("lower SVD / CE -> higher lr")
    scale = u (cs_direction="code") or 1 - u ("text20")      cs (bug 9: the source says both)
    scale = s_min + (1 - s_min) * scale             floor (s_min = 0: the source; one layer
                                                    per phase then trains at lr 0, bug 8)

The source divides by ``max - min`` unguarded (bug 7: NaN for identical layers or one layer);
``normalise="guarded"`` (default) gives ``u = 0.5`` everywhere when ``max - min < 1e-12``,
``"literal"`` keeps the NaN for the as-written demonstration.
"""

from __future__ import annotations

import numpy as np

PHASES = ("svd", "ce", "cs")
CS_DIRECTIONS = ("code", "text20")
NORMALISERS = ("guarded", "literal")
MINMAX_TOL = 1e-12   # our guard: a metric spread below this counts as "all equal"


def minmax(x, guarded: bool = True) -> np.ndarray:
    """Min-max normalise ``x [L]`` to [0, 1] (§2.4).

    Args:
        x: raw metric per layer.
        guarded: ``True``: ``0.5`` everywhere when ``max - min < MINMAX_TOL`` (one layer, or
            identical layers); ``False``: the literal division, NaN there.

    Example:
        >>> minmax([1.0, 3.0, 2.0]).tolist(), minmax([2.0, 2.0]).tolist()
        ([0.0, 1.0, 0.5], [0.5, 0.5])
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"expected a non-empty 1-D array of metrics, got shape {x.shape}")
    lo, hi = x.min(), x.max()
    if guarded and (hi - lo < MINMAX_TOL or x.size == 1):
        return np.full_like(x, 0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x - lo) / (hi - lo)


def phase_of(epoch: int, order=PHASES) -> str:
    """The phase of 0-based ``epoch``: ``order[epoch % len(order)]``."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
        raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
    check_order(order)
    return order[epoch % len(order)]


def check_order(order) -> tuple[str, ...]:
    """``order`` as a tuple of known phases (any order, repeats and single-metric schedules
    allowed); ValueError if empty or unknown."""
    if isinstance(order, str) or not isinstance(order, (tuple, list)) or not order:
        raise ValueError(f"order must be a non-empty tuple of phases from {PHASES}, "
                         f"got {order!r}")
    if unknown := [p for p in order if p not in PHASES]:
        raise ValueError(f"unknown phase(s) {unknown} in order; choose from {PHASES}")
    return tuple(order)


def phase_scale(u, phase: str, cs_direction: str = "code") -> np.ndarray:
    """The scale rule of App. A: ``1 - u`` for svd and ce; for cs ``u`` (code) or ``1 - u``."""
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; choose from {PHASES}")
    if cs_direction not in CS_DIRECTIONS:
        raise ValueError(f"cs_direction must be one of {CS_DIRECTIONS}, got {cs_direction!r}")
    u = np.asarray(u, dtype=np.float64)
    return u.copy() if phase == "cs" and cs_direction == "code" else 1.0 - u


def floor_scale(scale, s_min: float = 0.0) -> np.ndarray:
    """``s_min + (1 - s_min) * scale``: maps [0, 1] onto [s_min, 1]."""
    if not 0.0 <= s_min <= 1.0:
        raise ValueError(f"s_min must lie in [0, 1], got {s_min!r}")
    return s_min + (1.0 - s_min) * np.asarray(scale, dtype=np.float64)


def scales(raw: dict[str, np.ndarray], phase: str, cs_direction: str = "code",
           s_min: float = 0.0, normalise: str = "guarded") -> tuple[np.ndarray, np.ndarray]:
    """The lr scales of one phase from the raw metrics (our executable specification, one epoch).

    Args:
        raw: ``{"svd", "ce", "cs"}: [L]`` raw metrics (`metrics.layer_metrics`).
        phase: ``"svd"``, ``"ce"`` or ``"cs"``.
        cs_direction: ``"code"`` (higher CS -> higher lr) or ``"text20"``.
        s_min: floor in [0, 1].
        normalise: ``"guarded"`` or ``"literal"`` (see `minmax`).

    Returns:
        ``(u, scale)``: `[L]` normalised metric of the phase and `[L]` lr multipliers.
    """
    if normalise not in NORMALISERS:
        raise ValueError(f"normalise must be one of {NORMALISERS}, got {normalise!r}")
    if phase not in raw:
        raise ValueError(f"no raw metric {phase!r}; got {sorted(raw)}")
    u = minmax(raw[phase], guarded=normalise == "guarded")
    return u, floor_scale(phase_scale(u, phase, cs_direction), s_min)
