"""Layer weights as matrices and their ESDs (seed 001, Ch. 1.4, eq. 1.5):
``layer_matrices``, ``esd``, ``esds`` and the helpers they share with the metrics.

Part of `lalr_core.methods.spectral` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
from torch import nn

from lalr_core.core.layers import weight_layers

CONV_MODES = ("flatten", "slices")


# ----------------------------------------------------------------------------- matrices


def layer_matrices(model: nn.Module, conv: str = "slices",
                   conv_norm: float = 1.0) -> dict[str, torch.Tensor]:
    """Every conv / linear weight of ``model`` as a matrix (seed 001, Ch. 1.4).

    The source analyses "only the weight matrices for each layer" (biases and BN excluded) but
    never says how a conv kernel becomes a matrix (digest A-3). Two readings:

    * ``"slices"`` (default): TempBalance / WeightWatcher style, ``[prod(k), c_out, c_in]`` --
      one ``c_out x c_in`` matrix per kernel position, whose eigenvalues `esd` pools. It is what
      users of an HT-SR library expect: YefanZhou/TempBalance tempbalance.py
      ``net_esd_estimator`` (``flatten(start_dim=2)`` then transposes to ``[k, c_out, c_in]``)
      and CalculatedContent/WeightWatcher ``get_conv2D_Wmats`` (one ``W[:, :, i, j]`` per
      kernel position). TempBalance also multiplies by ``sqrt(0.5)`` (pass
      ``conv_norm=0.5``); WeightWatcher by ``sqrt(rf / 2)``. Alpha is scale invariant, the
      norm metrics are not. The digest's [REC] for the TempBalance chapter is slices with 0.5.
    * ``"flatten"``: ``[c_out, c_in, *k] -> [c_out, c_in * prod(k)]``, one matrix per layer
      (the convention of `machine_measurements.md` sec. 4; chapter 02b's metric tables).

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
    if not isinstance(W, torch.Tensor) or W.ndim < 2 or W.shape[-1] * W.shape[-2] == 0:
        raise ValueError(f"expected a weight matrix [..., n, m] with n, m >= 1, got "
                         f"{getattr(W, 'shape', type(W).__name__)}")
    W = W.detach().double()
    if not torch.isfinite(W).all():
        raise ValueError("weight contains non-finite entries")
    return W


def gram_eigvals(W: torch.Tensor) -> torch.Tensor:
    """Eigenvalues of the smaller Gram side of ``W [..., n, m]``: ``[..., min(n, m)]``.

    ``W W^T`` and ``W^T W`` share their non-zero eigenvalues; the smaller one is ~50x faster
    than ``eigvalsh(W^T W)`` on resnet18 (machine_measurements.md sec. 4).
    """
    n, m = W.shape[-2:]
    G = W @ W.mT if n <= m else W.mT @ W                               # (..., min, min)
    lam = torch.linalg.eigvalsh(G)
    # Eigenvalues within eigvalsh's rounding of 0 (<= max(n, m) eps lambda_max) are set to 0,
    # so a pruned (zero-row) layer gives exact zeros, which the alpha fit drops (its default
    # eig_floor; `fit_alpha` says how eig_floor=None counts them), instead of ~1e-17 noise.
    # (A Gram cannot resolve singular values below ~sqrt(eps) sigma_max anyway.)
    tol = lam[..., -1:].clamp_min(0.0) * max(n, m) * torch.finfo(lam.dtype).eps
    return torch.where(lam > tol, lam, torch.zeros_like(lam))


def _n_norm(W: torch.Tensor, normalize: bool) -> float:
    # Source N is undefined (eq. after 1.6); Martin-Mahoney's N is the larger dimension, which
    # puts a Gaussian W's ESD on eq. 1.6's support with y = min / max <= 1.
    return float(max(W.shape[-2:])) if normalize else 1.0


def esd(W: torch.Tensor, normalize: bool = False) -> torch.Tensor:
    """Eigenvalues of the correlation matrix ``X = W^T W / N`` of one layer (eq. 1.5 steps 1-2).

    Source text: "X_i = (1/N) W_i^T W_i" with N undefined. Default ``normalize=False`` drops the
    1/N, as TempBalance does and the digest recommends (A-3): alpha is scale invariant but the
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


def esds(model_or_mats, conv: str = "slices",
         normalize: bool = False) -> dict[str, torch.Tensor]:
    """`esd` of every layer, one batched ``eigvalsh`` per group of same-shaped matrices.

    Args:
        model_or_mats: an ``nn.Module`` (passed to `layer_matrices` with ``conv``) or a dict
            ``{name: [.., n, m]}``.
        conv: conv handling when a module is given (`layer_matrices`; default slices).
        normalize: as in `esd`.

    Returns:
        ``{name: ascending float64 eigenvalues}`` in input order.
    """
    mats = as_mats(model_or_mats, conv)
    groups = defaultdict(list)
    for name, W in mats.items():
        groups[tuple(check_weight(W).shape)].append(name)
    out = {}
    for names in groups.values():
        stack = torch.stack([mats[k].detach().double() for k in names])   # (B, [S,] n, m)
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
