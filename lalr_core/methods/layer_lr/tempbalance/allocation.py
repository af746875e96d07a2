"""The scheme registry ``SCHEMES`` (name -> scheme), ``SUM_PRESERVING`` and ``allocate``.

Part of `lalr_core.methods.layer_lr.tempbalance` (its docstring states the conventions).
"""

from __future__ import annotations

import inspect

import numpy as np

from lalr_core.methods.layer_lr.tempbalance.deterministic import (
    log,
    neg_pow2,
    power,
    root,
    softmax,
    tb_linear,
    uniform,
)
from lalr_core.methods.layer_lr.tempbalance.sampling import emg, exp, gauss_alpha, gauss_lr

SCHEMES = {  # "eq2.13" is `power` with p = 1 (no parameters accepted)
    "uniform": uniform, "tb_linear": tb_linear, "eq2.13": power, "power": power, "root": root,
    "log": log, "softmax": softmax, "neg_pow2": neg_pow2, "gauss_alpha": gauss_alpha,
    "gauss_lr": gauss_lr, "exp": exp, "emg": emg,
}
SUM_PRESERVING = tuple(s for s in SCHEMES if s != "tb_linear")  # sum of lrs = n * lr_t


def allocate(alphas, lr_t: float, scheme: str = "eq2.13", **params) -> np.ndarray:
    """Per-layer lrs from per-layer alphas with the named scheme of ``SCHEMES``.

    Args:
        alphas: `[n]` per-layer alphas (numpy, list or tensor), layer order.
        lr_t: the schedule's global lr at step t (e.g. eq. 2.12), >= 0.
        scheme: a key of ``SCHEMES``; ``"eq2.13"`` is ``power`` with ``p=1``.
        **params: the scheme's keyword arguments (``p``, ``k``, ``base``, ``lr_min_ratio``,
            ``lr_max_ratio``, ``rng``, ``std``, ...).

    Returns:
        `[n]` float64 lrs, in the units of ``lr_t``.

    Raises:
        ValueError: unknown scheme or parameter, or bad values.

    Example:
        >>> allocate([2.0, 3.0, 5.0], 0.1, "eq2.13").round(4).tolist()
        [0.06, 0.09, 0.15]
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    fn = SCHEMES[scheme]
    allowed = set(inspect.signature(fn).parameters) - {"alphas", "lr_t"}
    if scheme == "eq2.13":
        allowed = set()
    if unknown := set(params) - allowed:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for scheme {scheme!r}; "
                         f"allowed: {sorted(allowed)}")
    return fn(alphas, lr_t, **params)
