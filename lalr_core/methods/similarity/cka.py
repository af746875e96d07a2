"""Linear centred kernel alignment (CKA) between layer representations (seed 001, eqs. 2.14-2.15).

Chapter 02, fig 2.2 (CKA between the modules of one ResNet, baseline vs
alpha-weighted lrs). The source defines

    CKA(K, L) = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L))           (eq. 2.14)
    HSIC(K, L) = tr(K H L H) / (n - 1)^2,  H = I_n - 11^T / n        (eq. 2.15)

with unspecified kernels; we use the linear kernel ``K = X X^T`` (Kornblith et al. 2019, the
source's ref. [47]), which gives the feature-space form
``||Y_c^T X_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)`` with column-centred ``X_c, Y_c``
The ``(n - 1)^2`` cancels. Computations are in float64.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import torch
from torch import nn

__all__ = ["centred_gram", "cka", "cka_matrix", "collect_activations", "hsic"]


def _matrix(X, name: str) -> torch.Tensor:
    """`[n, ...]` array-like -> float64 `[n, p]` (one flattened row per sample)."""
    X = torch.as_tensor(X).detach()
    if X.ndim < 2:
        raise ValueError(f"{name} must be [n, p] (or [n, ...] to flatten), got shape "
                         f"{tuple(X.shape)}")
    if X.shape[0] < 2:
        raise ValueError(f"{name} needs n >= 2 samples, got {X.shape[0]}")
    return X.flatten(1).to(torch.float64)


def centred_gram(X) -> torch.Tensor:
    """``H K H`` for the linear kernel ``K = X X^T`` (eq. 2.15's centring).

    Args:
        X: `[n, p]` activations (or `[n, ...]`, flattened per sample).

    Returns:
        `[n, n]` float64 centred Gram matrix.
    """
    X = _matrix(X, "X")
    Xc = X - X.mean(0, keepdim=True)  # H X: centre each feature over samples
    return Xc @ Xc.T                  # H X X^T H, (n, n)


def hsic(K: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """Empirical HSIC ``tr(K H L H) / (n - 1)^2`` of two `[n, n]` kernel matrices (eq. 2.15).

    Raises:
        ValueError: if ``K`` and ``L`` are not square matrices of the same size.
    """
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape != L.shape:
        raise ValueError(f"K and L must be [n, n] of equal n, got {tuple(K.shape)}, "
                         f"{tuple(L.shape)}")
    n = K.shape[0]
    H = torch.eye(n, dtype=K.dtype) - torch.full((n, n), 1.0 / n, dtype=K.dtype)
    return torch.trace(K @ H @ L @ H) / (n - 1) ** 2


def _cka_from_grams(Kc: torch.Tensor, Lc: torch.Tensor) -> float:
    """CKA from centred Grams: ``tr(KHLH) = <HKH, HLH>_F`` (eq. 2.14); NaN if one is constant."""
    denom = torch.sqrt((Kc * Kc).sum() * (Lc * Lc).sum())
    return float((Kc * Lc).sum() / denom) if denom > 0 else float("nan")


def cka(X, Y, method: str = "auto") -> float:
    """Linear CKA between two representations of the same n samples (eqs. 2.14-2.15).

    Invariant to orthogonal transforms and isotropic scaling of either input, symmetric, and in
    [0, 1]; ``cka(X, X) == 1``.

    Args:
        X: `[n, p1]` activations (or `[n, ...]`, flattened per sample).
        Y: `[n, p2]` activations of the same samples.
        method: ``"gram"`` (centred `[n, n]` Grams, O(n^2 (p1 + p2))), ``"feature"``
            (``||Y_c^T X_c||_F^2``, O(n p1 p2)) or ``"auto"`` (the cheaper one).

    Returns:
        CKA in [0, 1]; NaN if X or Y is constant over samples (zero HSIC(K, K)).

    Raises:
        ValueError: inputs not [n, ...] with n >= 2, different n, or unknown method.

    Example:
        >>> X = torch.randn(20, 5, generator=torch.Generator().manual_seed(0))
        >>> round(cka(X, 3 * X), 12)
        1.0
    """
    X, Y = _matrix(X, "X"), _matrix(Y, "Y")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y need the same n, got {X.shape[0]} and {Y.shape[0]}")
    if method not in ("auto", "gram", "feature"):
        raise ValueError(f"method must be 'auto', 'gram' or 'feature', got {method!r}")
    n, p1, p2 = X.shape[0], X.shape[1], Y.shape[1]
    if method == "gram" or (method == "auto" and n * (p1 + p2) <= p1 * p2):
        return _cka_from_grams(centred_gram(X), centred_gram(Y))
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    denom = torch.linalg.norm(Xc.T @ Xc) * torch.linalg.norm(Yc.T @ Yc)
    return float(torch.linalg.norm(Yc.T @ Xc) ** 2 / denom) if denom > 0 else float("nan")


def cka_matrix(activations: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Linear CKA of every pair of layers (fig 2.2's heat map).

    Args:
        activations: name -> `[n, ...]` activations of the same n samples (e.g. from
            `collect_activations`); each is flattened per sample.

    Returns:
        Symmetric `[L, L]` DataFrame, index and columns = the names in the given order, unit
        diagonal (NaN row / column for a constant layer).

    Raises:
        ValueError: empty dict, or layers with different n.
    """
    if not activations:
        raise ValueError("activations is empty")
    names = list(activations)
    sizes = {k: torch.as_tensor(v).shape[0] if torch.as_tensor(v).ndim else 0
             for k, v in activations.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"all layers need the same number of samples, got {sizes}")
    # <HKH, HLH>_F / (|HKH|_F |HLH|_F) for all pairs at once: unit-norm flattened grams, one
    # matmul (the pairwise loop of `_cka_from_grams` took seconds for ~50 layers).
    flat = torch.stack([centred_gram(activations[k]).flatten() for k in names])  # (L, n^2)
    norms = torch.linalg.vector_norm(flat, dim=1, keepdim=True)
    unit = torch.where(norms > 0, flat / norms.clamp_min(torch.finfo(flat.dtype).tiny),
                       torch.full_like(flat, float("nan")))
    return pd.DataFrame((unit @ unit.T).numpy(), index=names, columns=names)


def collect_activations(model: nn.Module, X: torch.Tensor, names: Iterable[str] | None = None,
                        batch_size: int | None = None) -> dict[str, torch.Tensor]:
    """Outputs of named modules on a batch, via forward hooks, in eval mode and without grad.

    The model's train / eval mode is restored afterwards; hooks are always removed.

    Args:
        model: the network.
        X: `[n, ...]` inputs on the model's device.
        names: module names from ``model.named_modules()``; ``None`` = every module but the root,
            in registration order (our choice: every module's output).
        batch_size: forward in chunks of this many samples (``None`` = one pass).

    Returns:
        name -> detached `[n, ...]` output tensor (a tuple output keeps its first element).

    Raises:
        ValueError: unknown module name, non-positive batch_size, or a module called more
            than once per forward (its output would be ambiguous).
    """
    modules = dict(model.named_modules())
    names = [k for k in modules if k] if names is None else list(names)
    if unknown := [k for k in names if k not in modules]:
        raise ValueError(f"unknown module name(s) {unknown}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    chunks = [X] if batch_size is None else list(torch.split(X, batch_size))
    outs: dict[str, list[torch.Tensor]] = {k: [] for k in names}

    def hook_for(name):
        def hook(module, inputs, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            outs[name].append(out.detach())
        return hook

    handles = [modules[k].register_forward_hook(hook_for(k)) for k in names]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            for chunk in chunks:
                model(chunk)
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    if repeated := {k: len(v) for k, v in outs.items() if len(v) != len(chunks)}:
        raise ValueError(f"modules not called exactly once per forward: {repeated}")
    return {k: torch.cat(v) for k, v in outs.items()}
