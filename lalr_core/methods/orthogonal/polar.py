"""Gradient self-orthogonalisation (seed 004, ch. 5): Orthogonal-SGDM/Adam/AdamW/LARS.

Chapter 06. Each chosen weight gradient is viewed as a matrix ``G = grad.flatten(1)`` of shape
``(c_out, c_in*kh*kw)`` (one row per filter or unit, eq. 5.4) and replaced by its orthogonal
polar factor ``O = U V^T`` (eqs. 5.5-5.7) before *any* first-order optimiser steps (Algorithm 6).
Because the gradient is replaced in place before ``step()``:

* torch's coupled weight decay is added after orthogonalisation (``d_p = O + wd*theta``) and
  momentum accumulates ``O`` ("orth-then-momentum"; Muon is the reverse: it orthogonalises the
  momentum buffer);
* gradient clipping in the training loop acts on the raw gradients (our reading of the thesis's
  "max gradient of 1.0": clipping happens before ``step()``).

*Rank-deficient gradients.* ``U V^T`` from the thin SVD has ``min(m, n)`` unit singular values
even when ``G`` has lower rank; the singular vectors of the zero singular values are then
arbitrary (any orthonormal completion is an SVD), so the LAPACK/cuSOLVER routine decides them.
This always happens in the classifier under softmax cross-entropy: its gradient
``(P - Y)^T H / B`` has rows summing to zero (each softmax-minus-one-hot row sums to zero), so its
rank is at most ``C - 1`` and ``U V^T`` holds one unit-size direction ``(1/sqrt(C)) 1 v^T`` with
an arbitrary ``v``. ``null="complete"`` keeps that completion, as the source's code does
(``orth_optim``: ``u, s, vt = torch.linalg.svd(G, full_matrices=False); u @ vt`` on
``G = grad.flatten(1)`` as laid out, one tensor at a time), and computes it with that same call so
the arbitrary direction is the source's on the same device and library; ``null="drop"`` is the
pseudo-polar factor ``U_r V_r^T`` over the singular values above a relative tolerance, which is
what Newton-Schulz gives: its polynomial maps 0 to 0, and the float "zero" (1e-7 relative in
float32, 1e-16 in float64) is multiplied by only ``p'(0)`` = 3.44 per quintic step (1.5 per
cubic step), so 5 steps leave it near zero (an unbounded iteration would lift it to 1 along a
direction made of rounding noise). Under SGD(M) with coupled weight decay the completed
direction adds the same value to every logit, so it changes neither the softmax nor any other
gradient: the trained function is the same in exact arithmetic. Under Adam the per-coordinate
scaling mixes it into the rest, so there it changes the network (chapter 06,
``classifier_null``, measures both).

``orthogonalise(G, method)`` is the pure maths; ``GradientTransform`` wraps any torch optimiser;
``LARS`` is the layer-wise adaptive optimiser of the Barlow Twins experiment (fig 5.8).
The normalised variants of sec. 5.5.3 are the transforms ``norm`` (N-SGDM: divide a tensor's
gradient by its Frobenius norm) and ``cnorm`` (CN-SGDM: each filter's gradient to unit norm,
without an epsilon, so a dead filter gives NaN and the run diverges as in table 5.5).
"""

from __future__ import annotations

from typing import Literal

import torch

METHODS = ("svd", "newton_schulz")


NULL_RULES = ("complete", "drop")  # the null space of a rank-deficient gradient (module docstring)


# Quintic Newton-Schulz coefficients of Jordan et al. (Muon, 2024): chosen to maximise the
# slope at 0, so small singular values grow fast; the iteration then maps every singular value
# of the Frobenius-normalised matrix into a band around 1 instead of exactly 1 (see
# `ns_singular_value_map`), which Muon reports does not hurt training.
NS_COEFFS = (3.4445, -4.7750, 2.0315)


NS_STEPS = 5


NS_EPS = 1e-7  # guards the Frobenius normalisation of an all-zero gradient


# ----------------------------------------------------------------------------- pure maths
def _check_matrix_batch(G: torch.Tensor) -> None:
    if not isinstance(G, torch.Tensor) or G.ndim < 2:
        raise ValueError(f"G must be a tensor with >= 2 dims (out, ...), got "
                         f"{getattr(G, 'shape', type(G).__name__)}")


def null_rule(method: str, null: str | None) -> str:
    """The null-space rule in force: ``null``, or the method's own when ``None`` (``"complete"``
    for ``"svd"``, the source's; ``"drop"`` for ``"newton_schulz"``, whose polynomial maps a
    zero singular value to 0 and so cannot complete).

    Raises:
        ValueError: unknown ``method`` or ``null``, or ``"complete"`` with Newton-Schulz.
    """
    if method not in METHODS:
        raise ValueError(f"unknown orthogonalisation method {method!r}; choose one of {METHODS}")
    if null is None:
        return "complete" if method == "svd" else "drop"
    if null not in NULL_RULES:
        raise ValueError(f"unknown null-space rule {null!r}; choose one of {NULL_RULES}")
    if method == "newton_schulz" and null == "complete":
        raise ValueError("Newton-Schulz maps a zero singular value to 0: it cannot complete the "
                         "null space; use method='svd' for null='complete'")
    return null


def check_rtol(rtol: float | None) -> None:
    if rtol is not None and (isinstance(rtol, bool) or not isinstance(rtol, (int, float))
                             or not 0 < rtol < 1):
        raise ValueError(f"null_rtol must be None or a number in (0, 1), got {rtol!r}")


def null_tolerance(M: torch.Tensor, rtol: float | None = None) -> float:
    """Relative tolerance below which a singular value of ``M`` counts as zero: ``rtol``, or
    ``max(m, n) * eps(M.dtype)`` (the ``matrix_rank`` convention). The classifier's exact zero
    comes out of a float32 SVD near ``1e-7 * s_max`` (ResNet-8's 10 x 32: tolerance 3.8e-6);
    a gradient computed under bf16 autocast needs ``rtol`` near 1e-2."""
    check_rtol(rtol)
    return max(M.shape[-2:]) * torch.finfo(M.dtype).eps if rtol is None else float(rtol)


def _svd(M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Thin SVD; a float32 failure to converge (rank-deficient gradients, the reason the thesis
    prefers SVD to QR, sec. 5.5.5) is retried in float64."""
    try:
        return torch.linalg.svd(M, full_matrices=False)
    except torch.linalg.LinAlgError:
        return torch.linalg.svd(M.double(), full_matrices=False)


def svd_polar(M: torch.Tensor, null: str = "complete",
              rtol: float | None = None) -> torch.Tensor:
    """Orthogonal polar factor ``U V^T`` of ``M`` (``[..., m, n]``) by the thin SVD (eq. 5.7).

    A wide matrix is decomposed as its transpose (``polar(M) = polar(M^T)^T``): CPU LAPACK is
    2-3x faster on the tall side (`make bench`; 8x on BasicCNN's weights, one thread). Exact for a
    full-rank matrix, whose ``U V^T`` is unique. A rank-deficient one (smallest singular value
    at most `null_tolerance` times the largest) is handled by ``null``:

    * ``"complete"`` (the source's): each such matrix is decomposed again alone, as laid out,
      by the source's own call ``torch.linalg.svd(M, full_matrices=False)`` and ``U @ Vh``
      returned, so its arbitrary null directions are the ones ``orth_optim`` gets for the same
      matrix on the same device, dtype and torch (float64 on CPU: bit-identical,
      `tests/test_orthogonal.py`). They are a function of ``M``'s rounding: in a float64
      ResNet-20, classifier gradients 2e-16 apart (the conv layers' SVDs taken on the other
      side) got completions up to 0.26 apart per entry, so over training no implementation
      follows the source's direction step by step, only its size and its common-row form.
    * ``"drop"``: ``U_r V_r^T`` over the singular values above the tolerance (an all-zero
      matrix gives zeros); unique, so it keeps the fast orientation.

    Args:
        M: matrices ``[..., m, n]``.
        null: ``"complete"`` or ``"drop"``.
        rtol: relative tolerance (`null_tolerance`; None = ``max(m, n) * eps``).

    Raises:
        ValueError: unknown ``null`` or bad ``rtol``.
        torch.linalg.LinAlgError: the float32 SVD and its float64 retry both failed.
    """
    if null not in NULL_RULES:
        raise ValueError(f"unknown null-space rule {null!r}; choose one of {NULL_RULES}")
    tol = null_tolerance(M, rtol)
    wide = M.shape[-2] < M.shape[-1]
    U, S, Vh = _svd(M.mT if wide else M)                            # (.., large, small) side
    small = S <= tol * S[..., :1]                                   # (.., k) numerically zero
    if null == "drop":
        U = U * (~small).unsqueeze(-2).to(U.dtype)                  # zero the null columns
    O = U @ Vh
    O = (O.mT if wide else O).to(M.dtype)
    if null == "complete" and small.any():
        O = O.contiguous()                                          # fresh memory: written below
        flat_M, flat_O = M.reshape(-1, *M.shape[-2:]), O.view(-1, *O.shape[-2:])
        for i in small.reshape(-1, S.shape[-1]).any(-1).nonzero().flatten().tolist():
            Ui, _, Vhi = _svd(flat_M[i])                            # the source's call, as laid out
            flat_O[i] = (Ui @ Vhi).to(M.dtype)
    return O


def ns_singular_value_map(s: torch.Tensor, steps: int = NS_STEPS) -> torch.Tensor:
    """What ``steps`` quintic Newton-Schulz iterations do to singular values ``s`` in [0, 1].

    ``p(x) = a x + b x^3 + c x^5`` applied ``steps`` times; the oracle of the NS tests and the
    documented band: for ``s`` in [0.01, 1], 5 steps give values in [0.681, 1.135]; inputs
    below 0.003 are not lifted that far (0.47 at 0.001).
    """
    a, b, c = NS_COEFFS
    for _ in range(steps):
        s = a * s + b * s**3 + c * s**5
    return s


def newton_schulz(M: torch.Tensor, steps: int = NS_STEPS) -> torch.Tensor:
    """Approximate polar factor of ``M`` (``[..., m, n]``) by quintic Newton-Schulz iterations.

    Returns ``U p(S/||M||_F) V^T`` with ``p`` = `ns_singular_value_map`: the singular vectors
    are exact, the singular values land in a band around 1, not on it (a user of Muon-style
    updates should expect that, MoonshotAI/Moonlight#22). Costs ``steps`` times three matrix
    products on the smaller Gram side, no decomposition, so it runs well on GPUs and in bf16.
    Computed in float32 (float64 inputs stay float64).
    """
    X = M.float() if M.dtype not in (torch.float32, torch.float64) else M
    tall = X.shape[-2] > X.shape[-1]
    if tall:
        X = X.mT                                                    # (.., small, large)
    X = X / (torch.linalg.matrix_norm(X, keepdim=True) + NS_EPS)    # spectral norm <= 1
    a, b, c = NS_COEFFS
    for _ in range(steps):
        A = X @ X.mT                                                # (.., small, small)
        X = a * X + (b * A + c * A @ A) @ X
    return (X.mT if tall else X).to(M.dtype)


def orthogonalise(G: torch.Tensor, method: Literal["svd", "newton_schulz"] = "svd",
                  ns_steps: int = NS_STEPS, null: Literal["complete", "drop"] | None = None,
                  null_rtol: float | None = None) -> torch.Tensor:
    """Nearest (semi-)orthogonal matrix to a gradient, per layer (seed 004 eqs. 5.5-5.7).

    Args:
        G: gradient of one weight ``[c_out, ...]`` (conv ``[c_out, c_in, kh, kw]`` or linear
            ``[out, in]``), flattened from dim 1, so the rows are the filters/units (the
            components of eq. 5.3). `GradientTransform` stacks same-shaped layers and calls
            `svd_polar`/`newton_schulz` on the stack, which work on batches ``[L, m, n]``.
        method: ``"svd"`` (exact ``U V^T``, the source's method) or ``"newton_schulz"`` (5
            quintic steps; singular values in a band around 1, see `ns_singular_value_map`).
        ns_steps: Newton-Schulz iterations.
        null: the null space of a rank-deficient ``G`` (module docstring, `svd_polar`):
            ``"complete"`` (unit singular values there too, directions as the source's SVD
            call picks them) or ``"drop"`` (``U_r V_r^T``). None = the method's own
            (`null_rule`): ``"complete"`` for SVD, the source's default, kept as the default
            because it is what the source's results were trained with; ``"drop"`` for
            Newton-Schulz.
        null_rtol: relative tolerance of a zero singular value (`null_tolerance`).

    Returns:
        ``O`` with ``G``'s shape and dtype. With more filters than fan-in (e.g. a first conv
        with 32 filters of 1*3*3) the columns, not the rows, are orthonormal.

    Raises:
        ValueError: unknown ``method`` or ``null``, ``null="complete"`` with Newton-Schulz,
            or ``G`` with fewer than 2 dims.

    >>> O = orthogonalise(torch.tensor([[3.0, 0.0], [0.0, 0.5]]))
    >>> torch.allclose(O, torch.eye(2))
    True
    """
    null = null_rule(method, null)
    check_rtol(null_rtol)
    _check_matrix_batch(G)
    M = G.flatten(1)                                                # (c_out, fan_in)
    O = svd_polar(M, null, null_rtol) if method == "svd" else newton_schulz(M, ns_steps)
    return O.reshape(G.shape)


def unit_matrices(M: torch.Tensor) -> torch.Tensor:
    """Each matrix of ``[..., m, n]`` divided by its Frobenius norm."""
    return M / torch.linalg.vector_norm(M, dim=(-2, -1), keepdim=True)


def unit_rows(M: torch.Tensor) -> torch.Tensor:
    """Each row of ``[..., m, n]`` divided by its norm (no epsilon)."""
    return M / torch.linalg.vector_norm(M, dim=-1, keepdim=True)


def normalise(G: torch.Tensor) -> torch.Tensor:
    """N-SGDM's transform (sec. 5.5.3): the gradient divided by its Frobenius norm."""
    _check_matrix_batch(G)
    return unit_matrices(G.flatten(1)).reshape(G.shape)


def component_normalise(G: torch.Tensor) -> torch.Tensor:
    """CN-SGDM's transform (sec. 5.5.3): every filter's gradient (row of ``flatten(1)``) to unit
    norm. No epsilon, as the source's code: a filter with zero gradient gives NaN (table 5.5's
    "0.00 +- 0.00" diverged runs)."""
    _check_matrix_batch(G)
    return unit_rows(G.flatten(1)).reshape(G.shape)
