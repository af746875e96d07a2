"""Layer weights as matrices and their ESDs (seed 001, Ch. 1.4, eq. 1.5):
``layer_matrices``, ``esd``, ``esds`` and the helpers they share with the metrics.

Part of `lalr_core.methods.spectra` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from itertools import pairwise

import numpy as np
import torch
from threadpoolctl import threadpool_limits
from torch import nn

from lalr_core.core.models.layers import weight_layers
from lalr_core.core.torch_compat import torch_threads

CONV_MODES = ("flatten", "slices")
ESD_METHODS = ("batched", "threads")


# ----------------------------------------------------------------------------- matrices


def layer_matrices(model: nn.Module, conv: str = "slices",
                   conv_norm: float = 1.0) -> dict[str, torch.Tensor]:
    """Every conv / linear weight of ``model`` as a matrix (seed 001, Ch. 1.4).

    The source analyses "only the weight matrices for each layer" (biases and BN excluded) but
    never says how a conv kernel becomes a matrix. Two readings:

    * ``"slices"`` (default): TempBalance / WeightWatcher style, ``[prod(k), c_out, c_in]`` --
      one ``c_out x c_in`` matrix per kernel position, whose eigenvalues `esd` pools. It is what
      users of an HT-SR library expect: YefanZhou/TempBalance tempbalance.py
      ``net_esd_estimator`` (``flatten(start_dim=2)`` then transposes to ``[k, c_out, c_in]``)
      and CalculatedContent/WeightWatcher ``WWLayer.conv2D_Wmats`` (one ``W[:, :, i, j]`` per
      kernel position). TempBalance also multiplies by ``sqrt(0.5)`` (pass
      ``conv_norm=0.5``); so does WeightWatcher 0.7.7's ``analyze`` (weightwatcher.py
      ``apply_normalize_Wmats``: ``sqrt(conv2d_count / 2)`` with ``conv2d_count = 1`` when
      slices are pooled). Alpha is scale invariant, the norm metrics are not. Our choice
      for the TempBalance chapter is slices with 0.5.
    * ``"flatten"``: ``[c_out, c_in, *k] -> [c_out, c_in * prod(k)]``, one matrix per layer
      (the convention of chapter 02b's metric tables).

    Args:
        model: any module; ``nn.Linear`` and ``nn.Conv1d/2d/3d`` weights are taken.
        conv: ``"flatten"`` or ``"slices"`` (see above); linear weights are unaffected.
        conv_norm: conv slices (only) are multiplied by ``sqrt(conv_norm)``; > 0.

    Returns:
        ``{module name: weight}``, detached, in ``named_modules`` order; linear ``[out, in]``,
        conv ``[c_out, c_in k]`` or ``[k, c_out, c_in]``.

    Raises:
        ValueError: unknown ``conv`` or non-positive ``conv_norm``.
    """
    if conv not in CONV_MODES:
        raise ValueError(f"conv must be one of {CONV_MODES}, got {conv!r}")
    if not conv_norm > 0:
        raise ValueError(f"conv_norm must be > 0, got {conv_norm}")
    mats = {}
    for name, mod in weight_layers(model).items():
        if isinstance(mod, nn.Linear):
            mats[name] = mod.weight.detach()
        else:
            W = mod.weight.detach()
            c_out, c_in = W.shape[:2]
            if conv == "flatten":
                mats[name] = W.reshape(c_out, -1)                      # (c_out, c_in k)
            else:
                W = W.reshape(c_out, c_in, -1).permute(2, 0, 1)        # (k, c_out, c_in)
                mats[name] = W * math.sqrt(conv_norm)
    return mats


# ----------------------------------------------------------------------------- ESD


def check_weight(W) -> torch.Tensor:
    _check_shape(W)
    W = W.detach().double()
    if not torch.isfinite(W).all():
        raise ValueError("weight contains non-finite entries")
    return W


def _check_shape(W) -> None:
    if not isinstance(W, torch.Tensor) or W.ndim < 2 or W.shape[-1] * W.shape[-2] == 0:
        raise ValueError(f"expected a weight matrix [..., n, m] with n, m >= 1, got "
                         f"{getattr(W, 'shape', type(W).__name__)}")


def gram_eigvals(W: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of the smaller Gram side of ``W [..., n, m]``: ``[..., min(n, m)]``.

    ``W W^T`` and ``W^T W`` share their non-zero eigenvalues; the smaller one is ~50x faster
    than ``eigvalsh(W^T W)`` on resnet18 (our measurement on a 2-core CPU).
    """
    n, m = W.shape[-2:]
    G = W @ W.mT if n <= m else W.mT @ W                               # (..., min, min)
    return _zero_rounding(torch.linalg.eigvalsh(G), n, m)


def _zero_rounding(lam: torch.Tensor, n: int, m: int) -> torch.Tensor:
    # Eigenvalues within eigvalsh's rounding of 0 (<= max(n, m) eps lambda_max) are set to 0,
    # so a pruned (zero-row) layer gives exact zeros, which the alpha fit drops (its default
    # eig_floor; `fit_alpha` says how eig_floor=None counts them), instead of ~1e-17 noise.
    # (A Gram cannot resolve singular values below ~sqrt(eps) sigma_max anyway.)
    tol = lam[..., -1:].clamp_min(0.0) * max(n, m) * torch.finfo(lam.dtype).eps
    return torch.where(lam > tol, lam, torch.zeros_like(lam))


@contextmanager
def worker_pool() -> Iterator[ThreadPoolExecutor]:
    """A pool of ``torch.get_num_threads()`` threads, inside which torch and BLAS use 1 each.

    For many small independent solves (`esds` and `alphas` with ``method="threads"``): a
    team of 2 BLAS / OpenMP threads waits at every barrier for whichever thread the OS has
    descheduled, which on a 2-core machine shared with other jobs made ResNet-18's ESD take
    4-9 s (torch / MKL and numpy / OpenBLAS alike) against 0.6-0.9 s with one thread per
    solve; on the idle machine, 0.69 s (``"batched"``) against 0.31 s. Both thread counts are
    process-wide while the pool is open and are restored on exit.
    """
    workers = torch.get_num_threads()
    with torch_threads(1), threadpool_limits(1, user_api="blas"), \
            ThreadPoolExecutor(workers) as pool:
        yield pool


def _chunk_eigvals(W: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
    # slices lo:hi of W [..., n, m] -> their `gram_eigvals`, flat: float64 Gram of the smaller
    # side, numpy's eigvalsh (LAPACK syevd; OpenBLAS here, as WeightWatcher's SciPy SVDs)
    n, m = W.shape[-2:]
    X = W.detach().reshape(-1, n, m)[lo:hi].double()
    X = (X if n <= m else X.mT).contiguous().numpy()   # numpy's matmul needs it for BLAS
    G = X @ X.transpose(0, 2, 1)                                        # (hi - lo, min, min)
    # a nan / inf entry makes its row's squared norm, a diagonal entry of G, nan / inf
    if not np.isfinite(np.diagonal(G, axis1=1, axis2=2)).all():
        raise ValueError("weight contains non-finite entries")
    lam = torch.from_numpy(np.linalg.eigvalsh(G))
    return _zero_rounding(lam, n, m).reshape(-1)


def _threaded_esds(mats: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`gram_eigvals` of every CPU matrix, pooled per layer and sorted, on `worker_pool`.

    A layer's slices split into chunks of about a quarter of a worker's share of the
    ``S n m min(n, m)`` flops; the largest chunks go first, so the workers finish together.
    """
    cost = {k: math.prod(W.shape[:-2]) * W.shape[-2] * W.shape[-1] * min(W.shape[-2:])
            for k, W in mats.items()}
    share = sum(cost.values()) / (4 * torch.get_num_threads())
    jobs = []                                                   # (cost, name, lo, hi)
    for name, W in mats.items():
        S = math.prod(W.shape[:-2])
        cuts = np.linspace(0, S, min(S, math.ceil(cost[name] / share)) + 1).round().astype(int)
        jobs += [(cost[name] * (hi - lo) / S, name, int(lo), int(hi))
                 for lo, hi in pairwise(cuts)]
    jobs.sort(key=lambda job: -job[0])
    with worker_pool() as pool:
        parts = list(pool.map(lambda job: _chunk_eigvals(mats[job[1]], *job[2:]), jobs))
    out = defaultdict(list)
    for (_, name, _, _), lam in zip(jobs, parts):
        out[name].append(lam)
    return {name: torch.sort(torch.cat(out[name])).values for name in mats}  # pooled


def _n_norm(W: torch.Tensor, normalize: bool) -> float:
    # Source N is undefined (eq. after 1.6); Martin-Mahoney's N is the larger dimension, which
    # puts a Gaussian W's ESD on eq. 1.6's support with y = min / max <= 1.
    return float(max(W.shape[-2:])) if normalize else 1.0


def esd(W: torch.Tensor, normalize: bool = False) -> torch.Tensor:
    """Eigenvalues of the correlation matrix ``X = W^T W / N`` of one layer (eq. 1.5 steps 1-2).

    Source text: "X_i = (1/N) W_i^T W_i" with N undefined. Default ``normalize=False`` drops the
    1/N, as TempBalance does (our choice): alpha is scale invariant but the
    norm metrics are not, so keep one convention. ``normalize=True`` divides by
    ``N = max(n, m)`` (needed for the Marchenko-Pastur comparison, eq. 1.6).

    Args:
        W: ``[n, m]`` matrix, or ``[S, n, m]`` stack of conv slices whose eigenvalues are pooled.
        normalize: divide by ``N = max(n, m)``.

    Returns:
        ``[S * min(n, m)]`` float64 eigenvalues, ascending: the non-zero part of the spectrum of
        ``W^T W / N`` (plus the rank-deficient zeros of the smaller side).

    Raises:
        ValueError: ``W`` has fewer than 2 dims, an empty dim, or non-finite entries.
    """
    W = check_weight(W)
    lam = gram_eigvals(W).reshape(-1) / _n_norm(W, normalize)
    return torch.sort(lam).values


def esds(model_or_mats, conv: str = "slices", normalize: bool = False,
         method: str = "batched") -> dict[str, torch.Tensor]:
    """`esd` of every layer, in one of two ways (same eigenvalues up to ~1e-15 lambda_max).

    * ``"batched"`` (default): the matrices of one shape (a layer's conv slices, same-shaped
      layers) are one stack and one ``torch.linalg.eigvalsh`` of their Grams (any device;
      MKL's LAPACK on CPU).
    * ``"threads"`` (CPU; other devices fall back to ``"batched"``): chunks of each layer's
      slices on a `worker_pool`, each one float64 Gram and one stacked ``numpy.linalg.eigvalsh``
      (OpenBLAS's LAPACK syevd, as WeightWatcher's SciPy SVDs) with one thread. Less work
      (OpenBLAS's dgemm / syevd took 0.55 s of CPU for ResNet-18's slices, MKL's 0.83 s, AMD
      EPYC) and no barriers (`worker_pool`): 0.31 s against 0.69 s on 2 idle cores. Holds a
      float64 copy of one chunk per worker, not of the model.

    Args:
        model_or_mats: an ``nn.Module`` (passed to `layer_matrices` with ``conv``) or a dict
            ``{name: [.., n, m]}``.
        conv: conv handling when a module is given (`layer_matrices`; default slices).
        normalize: as in `esd`.
        method: ``"batched"`` or ``"threads"`` (above).

    Returns:
        ``{name: ascending float64 eigenvalues}`` in input order.

    Raises:
        ValueError: unknown ``method``, or as `esd` / `as_mats`.
    """
    if method not in ESD_METHODS:
        raise ValueError(f"method must be one of {ESD_METHODS}, got {method!r}")
    mats = as_mats(model_or_mats, conv)
    for W in mats.values():
        _check_shape(W)
    if method == "threads" and all(W.device.type == "cpu" for W in mats.values()):
        return {name: lam / _n_norm(mats[name], normalize)
                for name, lam in _threaded_esds(mats).items()}
    groups = defaultdict(list)
    for name, W in mats.items():
        groups[tuple(W.shape)].append(name)
    out = {}
    for names in groups.values():
        stack = torch.stack([check_weight(mats[k]) for k in names])      # (B, [S,] n, m)
        lam = gram_eigvals(stack).reshape(len(names), -1) / _n_norm(stack, normalize)
        out.update(zip(names, torch.sort(lam, dim=1).values))
    return {name: out[name] for name in mats}


def as_mats(model_or_mats, conv: str) -> dict[str, torch.Tensor]:
    if isinstance(model_or_mats, nn.Module):
        return layer_matrices(model_or_mats, conv=conv)
    if isinstance(model_or_mats, dict):
        return model_or_mats
    raise ValueError(f"expected an nn.Module or a dict of matrices, got "
                     f"{type(model_or_mats).__name__}")
