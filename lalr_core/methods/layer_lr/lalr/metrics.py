"""The three raw LALR metrics of every layer, from the weights only (seed 000 §2.1-2.3).

Definitions: the source's §2.1-2.3 and App. B.1.4, resolved as in chapter 01's executable
specification (our choices where the source is ambiguous). ``weights`` are the layers' weight matrices in layer order (`grouping`
gives them); every function reads them under ``torch.no_grad`` and returns one float64 value
per layer, **before** normalisation (`schedule` normalises and maps them to scales):

* SVD: the mean of a layer's singular values (``svd_variant``);
* CE: the mean cross-entropy of the layer's weight distribution to every other layer's;
* CS: the mean cosine similarity of the layer's flattened weights to the other layers'.

The pairwise CE and CS terms are one matrix product for all layer pairs (``-P @ log(P).T`` and
the Gram matrix of unit rows), not a loop over pairs (the benchmark compares the two).
Computation runs in the weights' dtype, at least float32 (float64 weights stay float64); the
per-layer results are float64.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

SVD_VARIANTS = ("rank_mean", "top_Lminus1", "all_mean")
CE_VARIANTS = ("hist", "softmax_trunc", "absnorm_trunc")
CS_VARIANTS = ("same_numel_else_trunc", "trunc_all")
CE_BINS = 64    # bins of the shared weight histogram (our choice; the source gives none)
CE_EPS = 1e-8   # added to every bin / entry before the log, then renormalised (bug 12)


def check_ce_choices(bins, eps) -> None:
    """The CE distributions' open choices: ``bins`` an int >= 2, ``eps`` a number in (0, 1).

    Raises:
        ValueError: anything else.
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise ValueError(f"ce_bins must be an int >= 2, got {bins!r}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"ce_eps must be a number in (0, 1), got {eps!r}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _check_weights(weights) -> list[torch.Tensor]:
    weights = list(weights)
    if not weights:
        raise ValueError("need at least one layer weight, got none")
    for k, w in enumerate(weights):
        if not isinstance(w, torch.Tensor) or w.ndim != 2 or w.numel() == 0:
            raise ValueError(f"layer {k}: expected a non-empty [out, in] matrix, got "
                             f"{getattr(w, 'shape', type(w).__name__)}")
    return weights


def working_dtype(w: torch.Tensor) -> torch.dtype:
    """float32 for float32 / bf16 / half weights, float64 for float64 ones."""
    return torch.promote_types(w.dtype, torch.float32)


def mean_off_diagonal(C: torch.Tensor) -> torch.Tensor:
    """Row means of ``C [L, L]`` over the other columns, ``(1/(L-1)) sum_{j != i} C[i, j]``.

    A single layer has no partner: its value is NaN (the guarded normaliser still gives it 0.5).
    """
    L = C.shape[0]
    if L == 1:
        return torch.full((1,), float("nan"), dtype=C.dtype, device=C.device)
    return (C.sum(dim=1) - C.diagonal()) / (L - 1)


# ----------------------------------------------------------------------------- SVD
def singular_values(weights) -> list[torch.Tensor]:
    """Singular values of every matrix, descending (``torch.linalg.svdvals``, accurate to
    ~eps sigma_max); one batched call per shape.

    A wide matrix is passed transposed (same singular values): LAPACK takes ~2.7x longer on
    768 x 3072 than on 3072 x 768 (one CPU thread).

    Args:
        weights: matrices `[m_l, n_l]`.

    Returns:
        `[min(m_l, n_l)]` tensors in the working dtype.
    """
    weights = _check_weights(weights)
    by_shape: dict[tuple, list[int]] = defaultdict(list)
    for k, w in enumerate(weights):
        by_shape[tuple(w.shape)].append(k)
    out: list[torch.Tensor | None] = [None] * len(weights)
    for (m, n), idx in by_shape.items():
        stack = torch.stack([weights[k].detach() for k in idx])            # (B, m, n)
        stack = stack if m >= n else stack.mT                               # (B, max, min)
        for k, row in zip(idx, torch.linalg.svdvals(stack.to(working_dtype(stack)))):
            out[k] = row
    return out


def numerical_rank(s: torch.Tensor, shape: tuple[int, int], dtype: torch.dtype) -> int:
    """Number of singular values ``s`` (descending) above ``max(m, n) * sigma_max * eps``, eps
    of the working ``dtype`` (numpy's ``matrix_rank`` rule)."""
    tol = max(shape) * float(s[0]) * torch.finfo(dtype).eps
    return int((s > tol).sum())


def svd_metric(weights, variant: str = "rank_mean") -> np.ndarray:
    """Raw SVD metric per layer (§2.1): a mean of the singular values.

    * ``rank_mean`` (default, App. B.1.4.1): mean of the ``r`` non-zero ones, ``r`` the
      numerical rank (`numerical_rank`); an all-zero matrix gives 0;
    * ``top_Lminus1`` (§2.1 as printed): mean of the ``L - 1`` largest of the ``L``, i.e. the
      smallest dropped; undefined for a matrix with one singular value (bug 5);
    * ``all_mean``: mean of all ``min(m, n)``.

    Args:
        weights: `[m_l, n_l]` matrices.
        variant: one of ``SVD_VARIANTS``.

    Returns:
        `[L]` float64.

    Raises:
        ValueError: unknown variant, a non-matrix, or ``top_Lminus1`` on a layer
            with a single singular value.

    Example:
        >>> W = torch.diag(torch.tensor([3.0, 2.0, 0.0]))
        >>> svd_metric([W]).tolist(), svd_metric([W], "all_mean").tolist()
        ([2.5], [1.6666666666666667])
    """
    _check_choice("svd_variant", variant, SVD_VARIANTS)
    weights = _check_weights(weights)
    if variant == "top_Lminus1" and (bad := [k for k, w in enumerate(weights)
                                             if min(w.shape) < 2]):
        raise ValueError(f"svd_variant='top_Lminus1' needs >= 2 singular values; layer(s) "
                         f"{bad} have one (§2.1's 1/(L−1) divides by zero; bug 5 in "
                         "chapter 01's list of the source's issues)")
    values = []
    with torch.no_grad():
        for w, s in zip(weights, singular_values(weights)):
            s = s.double()
            if variant == "all_mean":
                values.append(float(s.mean()))
            elif variant == "top_Lminus1":
                values.append(float(s[:-1].mean()))
            else:
                r = numerical_rank(s, tuple(w.shape), working_dtype(w))
                values.append(float(s[:r].mean()) if r else 0.0)
    return np.asarray(values, dtype=np.float64)


# ----------------------------------------------------------------------------- distributions
def _flat_rows(weights, length: int | None = None) -> torch.Tensor:
    """`[L, length]` flattened weights truncated to their first ``length`` entries (row-major);
    ``length=None``: the common minimum length."""
    n = min(w.numel() for w in weights) if length is None else length
    dtype = working_dtype(weights[0])
    return torch.stack([w.detach().reshape(-1)[:n].to(dtype) for w in weights])


def _renormalise(P: torch.Tensor, eps: float) -> torch.Tensor:
    P = P + eps                          # bug 12: the constant goes in before the log
    return P / P.sum(dim=1, keepdim=True)


def weight_distributions(weights, variant: str = "hist", bins: int = CE_BINS,
                         eps: float = CE_EPS) -> torch.Tensor:
    """One probability distribution per layer (§2.2; the source does not define it), `[L, K]`, rows summing to 1.

    * ``hist`` (default): histogram of the layer's weight values on ``bins`` equal bins over
      ``[global min, global max]`` of all given layers (so every layer uses the same bins),
      as fractions, ``+ eps`` per bin, renormalised; `K = bins`, float64;
    * ``softmax_trunc``: softmax of the flattened weights truncated to the common minimum
      length `K` (closest to the literal "flatten and normalise"), ``+ eps``, renormalised;
    * ``absnorm_trunc``: ``|w| / sum |w|`` of the truncated weights, ``+ eps``, renormalised.
    """
    _check_choice("ce_variant", variant, CE_VARIANTS)
    weights = _check_weights(weights)
    with torch.no_grad():
        if variant == "hist":
            lo = min(float(w.min()) for w in weights)
            hi = max(float(w.max()) for w in weights)
            hi = hi if hi > lo else lo + 1.0          # every weight equal: one bin holds all
            counts = torch.stack([torch.histc(w.detach().double().reshape(-1), bins, lo, hi)
                                  for w in weights])                          # (L, bins)
            return _renormalise(counts / counts.sum(dim=1, keepdim=True), eps)
        X = _flat_rows(weights)                                               # (L, K)
        P = torch.softmax(X, dim=1) if variant == "softmax_trunc" else \
            X.abs() / X.abs().sum(dim=1, keepdim=True).clamp_min(torch.finfo(X.dtype).tiny)
        return _renormalise(P, eps)


def cross_entropy_matrix(P: torch.Tensor) -> torch.Tensor:
    """``C[i, j] = CE(p_i, p_j) = -sum_k p_i(k) log p_j(k)``, natural log: ``-P @ log(P).T``.

    Args:
        P: `[L, K]` distributions with positive entries.

    Returns:
        `[L, L]`; its diagonal holds the entropies ``H(p_i)``.
    """
    return -(P @ torch.log(P).T)                                              # (L, L)


def ce_metric(weights, variant: str = "hist", bins: int = CE_BINS,
              eps: float = CE_EPS) -> np.ndarray:
    """Raw CE metric per layer, ``M'_CE(i) = mean_{j != i} CE(p_i, p_j)`` (§2.2).

    ``bins`` (``hist`` only) and ``eps`` are the choices the source leaves open
    (`weight_distributions`).

    Returns:
        `[L]` float64 (NaN for a single layer).
    """
    check_ce_choices(bins, eps)
    with torch.no_grad():
        C = cross_entropy_matrix(weight_distributions(weights, variant, bins, eps))
        return mean_off_diagonal(C).double().cpu().numpy()


# ----------------------------------------------------------------------------- cosine
def cosine_matrix(X: torch.Tensor) -> torch.Tensor:
    """``C[i, j] = cos(x_i, x_j)`` of the rows of ``X [L, n]``: the Gram matrix of unit rows.

    A zero row has no direction; its cosines are 0.
    """
    norms = torch.linalg.vector_norm(X, dim=1, keepdim=True)
    U = X / norms.clamp_min(torch.finfo(X.dtype).tiny)
    return U @ U.T                                                            # (L, L)


def cs_metric(weights, variant: str = "same_numel_else_trunc") -> np.ndarray:
    """Raw CS metric per layer, ``M_CS(i) = mean_j cos(w_i, w_j)`` (§2.3), flattened weights.

    * ``same_numel_else_trunc`` (default, our choice): the mean over the partners
      with the same number of weights (whole vectors: q / k / v / o, or FFN up / down, of a
      transformer); a layer with no such partner averages over all others, every vector
      truncated to the common minimum length;
    * ``trunc_all``: every layer against all others, truncated to the common minimum length.

    Truncated cosines of unrelated layers are noise of order ``1 / sqrt(length)``.

    Returns:
        `[L]` float64 (NaN for a single layer).
    """
    _check_choice("cs_variant", variant, CS_VARIANTS)
    weights = _check_weights(weights)
    L = len(weights)
    out = torch.full((L,), float("nan"), dtype=torch.float64)
    with torch.no_grad():
        todo = list(range(L))
        if variant == "same_numel_else_trunc":
            by_numel: dict[int, list[int]] = defaultdict(list)
            for k, w in enumerate(weights):
                by_numel[w.numel()].append(k)
            for idx in (ix for ix in by_numel.values() if len(ix) > 1):
                C = cosine_matrix(_flat_rows([weights[k] for k in idx]))     # whole vectors
                out[idx] = mean_off_diagonal(C).double().cpu()
            todo = [ix[0] for ix in by_numel.values() if len(ix) == 1]
        if todo and L > 1:
            C = cosine_matrix(_flat_rows(weights))                            # truncated
            out[todo] = mean_off_diagonal(C).double().cpu()[todo]
    return out.numpy()


# ----------------------------------------------------------------------------- all three
def layer_metrics(weights, svd_variant: str = "rank_mean", ce_variant: str = "hist",
                  cs_variant: str = "same_numel_else_trunc", ce_bins: int = CE_BINS,
                  ce_eps: float = CE_EPS) -> dict[str, np.ndarray]:
    """The three raw metrics of every layer, ``{"svd", "ce", "cs"}: [L] float64``.

    Weights only, under ``torch.no_grad`` (no gradient is read or built; claim L-C6).
    ``ce_bins`` and ``ce_eps``: the CE distributions' histogram bins and constant
    (`weight_distributions`; our defaults `CE_BINS`, `CE_EPS`).
    """
    for name, value, choices in (("svd_variant", svd_variant, SVD_VARIANTS),
                                 ("ce_variant", ce_variant, CE_VARIANTS),
                                 ("cs_variant", cs_variant, CS_VARIANTS)):
        _check_choice(name, value, choices)
    weights = _check_weights(weights)
    with torch.no_grad():
        return {"svd": svd_metric(weights, svd_variant),
                "ce": ce_metric(weights, ce_variant, ce_bins, ce_eps),
                "cs": cs_metric(weights, cs_variant)}
