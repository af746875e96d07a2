"""Input checks, weighted probabilities, rank assignment and the deterministic schemes.

The schemes: ``uniform``, ``tb_linear``, ``power``, ``root``, ``log``, ``softmax`` and
``neg_pow2``; ``check_alphas``, ``weighted`` and ``by_rank`` serve the sampling schemes too.

Part of `lalr_core.methods.layer_lr.tempbalance` (its docstring states the conventions).
"""

from __future__ import annotations

import numpy as np
import torch


# ----------------------------------------------------------------------------- checks / helpers
def check_alphas(alphas, lr_t: float,
                 min_alpha: float | None = None) -> tuple[np.ndarray, float]:
    """Return alphas as float64 `[n]` and lr_t as float, or raise ValueError."""
    if isinstance(alphas, torch.Tensor):
        alphas = alphas.detach().cpu().numpy()
    a = np.asarray(alphas, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"alphas must be finite, got {a}")
    if min_alpha is not None and np.any(a <= min_alpha):
        raise ValueError(f"this scheme needs every alpha > {min_alpha}, got {a}")
    if not (np.isfinite(lr_t) and lr_t >= 0):
        raise ValueError(f"lr_t must be finite and >= 0, got {lr_t}")
    return a, float(lr_t)


def weighted(g: np.ndarray, lr_t: float) -> np.ndarray:
    """Weighted-probability allocation ``lr_t * n * g_i / sum_j g_j`` (form of eq. 2.13).

    Args:
        g: `[n]` non-negative weights with a positive sum.
        lr_t: global learning rate at step t.

    Returns:
        `[n]` float64 lrs with ``sum = n * lr_t`` (mean lr equals the schedule's lr_t).

    Raises:
        ValueError: if ``g`` has a negative or non-finite entry or sums to 0.
    """
    g = np.asarray(g, dtype=np.float64)
    if not np.all(np.isfinite(g)) or np.any(g < 0) or g.sum() <= 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {g}")
    return lr_t * g.size * g / g.sum()


def by_rank(a: np.ndarray, probs: np.ndarray, lr_t: float) -> np.ndarray:
    """The layer with the j-th smallest alpha gets the j-th smallest prob (eqs. 2.22, 2.29)."""
    lrs = np.empty_like(a)
    lrs[np.argsort(a, kind="stable")] = lr_t * a.size * np.sort(probs)  # ties: layer order
    return lrs



# ----------------------------------------------------------------------------- schemes
def uniform(alphas, lr_t: float) -> np.ndarray:
    """Baseline: every layer gets ``lr_t`` (the source's uniform, max-entropy allocation)."""
    a, lr_t = check_alphas(alphas, lr_t)
    return np.full_like(a, lr_t)


def tb_linear(alphas, lr_t: float, lr_min_ratio: float = 0.5,
              lr_max_ratio: float = 1.5) -> np.ndarray:
    """TempBalance's linear map from alpha to lr (YefanZhou/TempBalance, ``tb_linear_map``).

    ``lr_i = lr_t * (r_min + (r_max - r_min) * (alpha_i - min alpha) / (max alpha - min alpha))``,
    i.e. ``np.interp(alpha, [min, max], [r_min * lr_t, r_max * lr_t])``: the smallest alpha gets
    ``r_min * lr_t`` and the largest ``r_max * lr_t``. Not sum-preserving (the mean lr is
    ``lr_t`` only if the alphas are symmetric about their mid-range). Pitfall (TempBalance issue
    #2): a single outlier alpha (e.g. from a layer with 1-2 eigenvalues) squeezes every other
    layer to one end; drop such layers before computing alphas.

    Args:
        alphas: `[n]` per-layer alphas.
        lr_t: global lr at step t.
        lr_min_ratio: lr of the smallest-alpha layer, in units of lr_t (TempBalance: 0.5).
        lr_max_ratio: lr of the largest-alpha layer, in units of lr_t (TempBalance: 1.5).

    Returns:
        `[n]` float64 lrs. If all alphas are equal, every layer gets the mid ratio
        ``(r_min + r_max) / 2 * lr_t`` (``np.interp`` would return ``r_max * lr_t``; ours is
        symmetric and, for the defaults, equals lr_t).

    Raises:
        ValueError: bad alphas / lr_t, or ratios not ``0 <= lr_min_ratio <= lr_max_ratio``.
    """
    a, lr_t = check_alphas(alphas, lr_t)
    if not 0 <= lr_min_ratio <= lr_max_ratio:
        raise ValueError(f"need 0 <= lr_min_ratio <= lr_max_ratio, got {lr_min_ratio}, "
                         f"{lr_max_ratio}")
    span = a.max() - a.min()
    u = (a - a.min()) / span if span > 0 else np.full_like(a, 0.5)  # position in [0, 1]
    return lr_t * (lr_min_ratio + (lr_max_ratio - lr_min_ratio) * u)


def power(alphas, lr_t: float, p: float = 1.0) -> np.ndarray:
    """``lr_i = lr_t * n * alpha_i^p / sum_j alpha_j^p``: eq. 2.13 (p=1), 2.16 (p=2), 2.17 (p=3).

    Roots (eq. 2.18) are ``p = 1/k``; see `root`. Sum-preserving. Needs every alpha > 0.
    """
    a, lr_t = check_alphas(alphas, lr_t, min_alpha=0.0)
    if not np.isfinite(p):
        raise ValueError(f"p must be finite, got {p}")
    return weighted(a**p, lr_t)


def root(alphas, lr_t: float, k: float = 2.0) -> np.ndarray:
    """``lr_i = lr_t * n * alpha_i^(1/k) / sum_j alpha_j^(1/k)`` (eq. 2.18; k = 2, 3, 4, ...).

    TempBalance's ``tb_sqrt`` is ``k = 2``. Sum-preserving. Needs every alpha > 0.
    """
    if not (np.isfinite(k) and k > 0):
        raise ValueError(f"k must be finite and > 0, got {k}")
    return power(alphas, lr_t, p=1.0 / k)


def log(alphas, lr_t: float, base: float = 2.0) -> np.ndarray:
    """``lr_i = lr_t * n * log(alpha_i) / sum_j log(alpha_j)`` (eq. 2.18 text; base 2 in fig 2.3).

    Sum-preserving; the base cancels (kept for fig 2.3's labels). Needs every alpha > 1
    (``log alpha <= 0`` otherwise; a power-law MLE alpha is > 1 by construction, eq. 1.9).
    TempBalance's ``tb_log2`` is the same map.
    """
    a, lr_t = check_alphas(alphas, lr_t, min_alpha=1.0)
    if not (np.isfinite(base) and base > 0 and base != 1):
        raise ValueError(f"base must be positive and != 1, got {base}")
    return weighted(np.log(a) / np.log(base), lr_t)


def softmax(alphas, lr_t: float) -> np.ndarray:
    """``lr_i = lr_t * n * exp(alpha_i) / sum_j exp(alpha_j)`` (eq. 2.19). Sum-preserving.

    Computed as ``exp(alpha - max alpha)`` (same ratios, no overflow). The source reports it fails
    because most layers get lr ~ 0.
    """
    a, lr_t = check_alphas(alphas, lr_t)
    return weighted(np.exp(a - a.max()), lr_t)


def neg_pow2_probs(n: int) -> np.ndarray:
    """NegPow2_n of eqs. 2.20-2.21: `[n]` ascending ``[2^-n, 2^-(n-1), ..., 2^-1]``, residue added.

    The source prints eq. 2.20 as ``[2^-n, 2^-n-1, 2^-n-2, ..., 2^-1]``, which cannot end at
    ``2^-1``; its own text ("add the residue to the largest probability", eq. 2.21 indexing
    ``[-1]`` as ``2^-1``) fixes the ascending reading used here (our reading). The last entry is
    ``2^-1 + (1 - sum) = 2^-1 + 2^-n`` (eq. 2.21), so the vector sums to 1.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive integer, got {n}")
    probs = 2.0 ** -np.arange(n, 0, -1, dtype=np.float64)  # eq. 2.20, ascending
    probs[-1] += 1.0 - probs.sum()                          # eq. 2.21
    return probs


def neg_pow2(alphas, lr_t: float) -> np.ndarray:
    """Layer with the j-th smallest alpha gets ``lr_t * n * NegPow2_n[j]`` (eq. 2.22).

    Sum-preserving. The largest-alpha layer gets ``(n/2 + 1/2^n) * lr_t`` (9.5 lr_t for n = 19;
    may diverge, which the source does not discuss; implemented literally). Ties keep layer order.
    """
    a, lr_t = check_alphas(alphas, lr_t)
    return by_rank(a, neg_pow2_probs(a.size), lr_t)

