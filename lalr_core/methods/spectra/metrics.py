"""The chapter-3 HT-SR metrics (seed 001, Ch. 3.2, eqs. 3.2-3.4): ``matrix_entropy``,
``rand_distance`` and ``htsr_metrics``.

Part of `lalr_core.methods.spectra` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from lalr_core.methods.spectra.matrices import as_mats, check_weight, esds, gram_eigvals
from lalr_core.methods.spectra.power_law import fit_alpha

# ----------------------------------------------------------------------------- HT-SR metrics


def matrix_entropy(lam: torch.Tensor, shape: tuple[int, int]) -> float:
    """Eq. 3.2: ``S = -1 / log R * sum_i p_i log p_i``, ``p_i = nu_i^2 / sum nu^2 = lam_i / sum``.

    ``R`` = numerical rank: #``nu_i > max(n, m) * nu_max * eps`` (numpy's ``matrix_rank``
    tolerance). ``S = 0`` when ``R <= 1`` (the limit of a rank-one spectrum; 0/0 otherwise).
    """
    lam = lam.double()
    tol = (max(shape) * torch.finfo(torch.float64).eps) ** 2 * lam.max()
    lam = lam[lam > tol]
    R = lam.numel()
    if R <= 1:
        return 0.0
    p = lam / lam.sum()
    return float(-(p * p.log()).sum() / math.log(R))


def _hist(lam: torch.Tensor, edges: np.ndarray) -> np.ndarray:
    h = np.histogram(lam.numpy(), bins=edges)[0].astype(np.float64) + 1e-12
    return h / h.sum()


def _js(p: np.ndarray, q: np.ndarray) -> float:
    """Eq. 3.3: Jensen-Shannon divergence of two discrete distributions (natural log).

    We label it 3.3; the source prints this display without a number (between its 3.2 and
    3.4). Log base unstated there; natural log, so JS <= ln 2.
    """
    m = 0.5 * (p + q)
    return float(0.5 * (p * np.log(p / m)).sum() + 0.5 * (q * np.log(q / m)).sum())


def rand_distance(W: torch.Tensor, seed: int = 0, bins: int = 100) -> float:
    """Random distance, ``(1/n) sum_i JS(p_i, p_rand,i)`` (Ch. 3.2, JS of eq. 3.3).

    The source leaves ``W_rand`` and the discretisation open. Our choices: ``W_rand`` = element-wise random permutation of ``W`` (WeightWatcher's
    randomisation), p = histograms of the two ESDs on ``bins`` common log-spaced bins
    (+1e-12, renormalised); the mean runs over the ``n`` conv slices (1 for a matrix).
    Histogram noise dominates for small spectra: a 64-eigenvalue iid matrix already gives
    ~0.27, and 3-eigenvalue slices (e.g. an RGB stem in ``"slices"`` mode) give ~ln 2.

    Args:
        W: ``[n, m]`` or ``[S, n, m]``.
        seed: seed of the permutation.
        bins: number of log-spaced bins.

    Returns:
        Mean JS divergence in nats, in ``[0, ln 2]``.
    """
    W = check_weight(W)
    g = torch.Generator().manual_seed(seed)
    W_rand = W.reshape(-1)[torch.randperm(W.numel(), generator=g)].reshape(W.shape)
    lam = gram_eigvals(W).reshape(-1, min(W.shape[-2:]))              # (S, min(n, m))
    lam_r = gram_eigvals(W_rand).reshape(-1, min(W.shape[-2:]))
    js = []
    for a, b in zip(lam, lam_r):
        both = torch.cat([a, b])
        pos = both[both > 0]
        if pos.numel() == 0:
            js.append(0.0)
            continue
        lo, hi = math.log10(pos.min()), math.log10(pos.max())
        edges = np.logspace(lo, max(hi, lo + 1e-12), bins + 1)
        js.append(_js(_hist(a, edges), _hist(b, edges)))
    return float(np.mean(js))


def _spectral_metrics(lam: torch.Tensor, shape: tuple[int, int], fit: dict) -> dict:
    """Metrics of one ESD ``lam`` (eigenvalues of ``W^T W``) given its power-law ``fit``."""
    lam_max, total = float(lam.max()), float(lam.sum())
    a = fit["alpha"]
    return {
        "alpha": a,                                                    # eq. 1.9
        "stable_rank": total / lam_max,                                # eq. 3.4
        "entropy": matrix_entropy(lam, shape),                         # eq. 3.2
        "norm": total,                                                 # ||W||_F^2 (WW)
        "log_norm": math.log10(total),                                 # log10 ||W||_F^2 (WW)
        "log_frobenius_norm": 0.5 * math.log10(total),                 # log10 ||W||_F
        "spectral_norm": lam_max,                                      # lambda_max = nu_max^2
        "log_spectral_norm": math.log10(lam_max),
        "alpha_weighted": a * math.log10(lam_max),                     # alpha-hat, Ch. 3.2
        "log_alpha_norm": math.log10(float((lam ** a).sum())),         # log10 sum lam^alpha
    }


def htsr_metrics(model_or_mats, xmin="ks", conv: str = "slices", normalize: bool = False,
                 seed: int = 0, bins: int = 100, **fit_kw) -> pd.DataFrame:
    """The chapter-3 HT-SR metrics of every layer (seed 001 ``[Ye2023]``, Ch. 3.2).

    Shape: ``alpha`` (eq. 1.9), ``rand_distance`` (eq. 3.3), ``stable_rank`` (eq. 3.4),
    ``entropy`` (eq. 3.2). Scale: ``norm`` = sum lambda = ||W||_F^2, ``log_norm`` = log10 of it,
    ``log_frobenius_norm`` = log10 ||W||_F (= log_norm / 2; the source lists "(log)-norm" and
    "log Frobenius norm" separately yet counts 10 metrics; we count them as one),
    ``spectral_norm`` = lambda_max, ``log_spectral_norm`` = log10 lambda_max. Hybrid:
    ``alpha_weighted`` = alpha log10 lambda_max (per layer; the source's alpha-hat is the sum over
    layers, log base unstated -- log10 as WeightWatcher), ``log_alpha_norm`` =
    log10 sum_k lambda_k^alpha (WeightWatcher). Eigenvalues are those of `esd` (pooled over
    conv slices); the scale metrics depend on ``normalize`` and ``conv`` / ``conv_norm``.

    Args:
        model_or_mats: ``nn.Module`` or ``{name: [n, m] or [S, n, m]}``.
        xmin: x_min rule of `fit_alpha`; ``"ks"`` is our choice for Ch. 3 (the source names no rule).
        conv: conv handling when a module is given (`layer_matrices`; default slices).
        normalize: divide eigenvalues by ``N = max(n, m)`` (see `esd`).
        seed: permutation seed of `rand_distance`.
        bins: histogram bins of `rand_distance`.
        **fit_kw: passed to `fit_alpha`.

    Returns:
        DataFrame indexed by layer name, one column per metric plus ``xmin, n_tail,
        ks_distance, n_eigs``.
    """
    mats = as_mats(model_or_mats, conv)
    rows = {}
    for name, lam in esds(mats, normalize=normalize).items():
        fit = fit_alpha(lam, xmin=xmin, **fit_kw)
        shape = tuple(mats[name].shape[-2:])
        rows[name] = {**_spectral_metrics(lam, shape, fit),
                      "rand_distance": rand_distance(mats[name], seed=seed, bins=bins),
                      "xmin": fit["xmin"], "n_tail": fit["n_tail"],
                      "ks_distance": fit["ks_distance"], "n_eigs": lam.numel()}
    return pd.DataFrame.from_dict(rows, orient="index")
