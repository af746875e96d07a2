"""The assumptions behind the class-subspace step, measured (`[Tuddenham2026]`: M. Tuddenham,
PhD thesis, University of Southampton, 2026, sec. 4.3.6 and appendix E.3; see REFERENCES.md).

``q_lc`` (logit curvature), ``q_sl`` (same-class similarity) and ``q_gc`` (gradient
correlation) score assumptions 4.1-4.3 from per-example own-logit gradients; ``principal_angles``,
``subspace_rank`` and ``assignment_cosine`` compare the class-gradient span with the top
Hessian eigenvectors (fig E.1). `lalr_core.methods.class_subspace.probe` records them along a
training run.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from torch import nn

# E.3 rank test, [v_1..v_C, e_1..e_C] (eq. E.1). The source gives no tolerance and blames
# "precision error in calculating the rank". Any 2C generic vectors are numerically of full
# rank, so we count the singular values of the unit-normalised stack above 0.1 * sigma_max
# (chapter 05 also shows 0.05 and 0.2).
RANK_RTOL = 0.1


# ----------------------------------------------------------------------------- metrics (4.3.6)
def _cos_matrix(A: torch.Tensor) -> torch.Tensor:
    U = A / torch.linalg.vector_norm(A, dim=1, keepdim=True)
    return U @ U.T


def _check_per_example(grads: torch.Tensor, labels: torch.Tensor) -> None:
    if grads.ndim != 2 or labels.ndim != 1 or len(labels) != len(grads):
        raise ValueError(f"need per-example gradients (N, P) and labels (N,), got "
                         f"{tuple(grads.shape)} and {tuple(labels.shape)}")


def q_lc(logit_grads: torch.Tensor, logit_hessians: torch.Tensor,
         labels: torch.Tensor) -> float:
    """Logit curvature vs logit gradient, q^LC (eqs. 4.36-4.39), for assumption 4.1.

    For each example mu, with k its class:

    * ``f = ||dz_k/dtheta||_1 / P``;
    * ``u = 2/(P(P-1)) ||triu(d^2 z_k/dtheta^2)||_1``, the mean absolute entry of the
      **strict** upper triangle. The normalisation P(P-1)/2 counts exactly those entries.
    * ``q_k = mean_{mu in k} u/f^2``, and ``q^LC = mean_k q_k`` over the classes present.

    Args:
        logit_grads: ``(N, P)``, the gradient of each example's own-class logit.
        logit_hessians: ``(N, P, P)``, the Hessian of that logit.
        labels: ``(N,)``.
    """
    _check_per_example(logit_grads, labels)
    N, P = logit_grads.shape
    if logit_hessians.shape != (N, P, P) or P < 2:
        raise ValueError(f"need Hessians (N, P, P) = ({N}, {P}, {P}) with P >= 2, got "
                         f"{tuple(logit_hessians.shape)}")
    f = logit_grads.abs().sum(1) / P
    u = torch.triu(logit_hessians, diagonal=1).abs().sum((1, 2)) * 2 / (P * (P - 1))
    ratio = u / f**2
    per_class = [ratio[labels == k].mean() for k in labels.unique()]
    return float(torch.stack(per_class).mean())


def q_sl(logit_grads: torch.Tensor, labels: torch.Tensor) -> float:
    """Same-class logit-gradient similarity, q^SL (eq. 4.40), for assumption 4.2.

    ``q^SL = mean_k 1/(N_k(N_k - 1)) sum_{mu != nu in k} cos(dz_k^mu/dtheta, dz_k^nu/dtheta)``.
    The source prints ``N``; *[choice]* it is read as N_k, so that the inner term is a mean
    (over the N_k(N_k - 1) ordered pairs of the class). Classes with fewer than 2 examples are left out.

    Args:
        logit_grads: ``(N, P)``, each example's own-class logit gradient.
        labels: ``(N,)``.

    Raises:
        ValueError: no class has 2 examples.
    """
    _check_per_example(logit_grads, labels)
    per_class = []
    for k in labels.unique():
        A = logit_grads[labels == k]
        n = len(A)
        if n >= 2:
            S = _cos_matrix(A)
            per_class.append((S.sum() - S.diagonal().sum()) / (n * (n - 1)))
    if not per_class:
        raise ValueError("q_sl needs at least one class with >= 2 examples")
    return float(torch.stack(per_class).mean())


def q_gc(G: torch.Tensor, printed: bool = True) -> float:
    """Inter-class class-gradient cosine, q^GC (eq. 4.41, named q^CG there), for assumption
    4.3.

    ``printed=True`` gives the source's ``1/(C(C-1)) sum_k sum_{l<k} cos(c_k, c_l)``. That
    sum covers the C(C-1)/2 unordered pairs, so the value is **half** the mean pairwise cosine
    (identical class gradients give 0.5). ``printed=False`` gives the mean over pairs; chapter
    05 reports both, since the two readings differ by a factor of 2.

    Args:
        G: class gradients ``(C, P)``, all rows non-zero.
    """
    if G.ndim != 2 or G.shape[0] < 2:
        raise ValueError(f"need class gradients (C, P) with C >= 2, got {tuple(G.shape)}")
    if not bool((torch.linalg.vector_norm(G, dim=1) > 0).all()):
        raise ValueError("every class gradient must be non-zero (cosine of a zero vector)")
    C = G.shape[0]
    lower = torch.tril(_cos_matrix(G), diagonal=-1).sum()
    return float(lower / (C * (C - 1)) if printed else lower / (C * (C - 1) / 2))


def own_logit_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        params: Iterable[torch.Tensor] | None = None) -> torch.Tensor:
    """Per-example gradients of each example's own-class logit, ``(N, P)``: the input of
    `q_sl` and `q_lc`. One forward and backward per example, so keep it to probe sets. The
    model runs one example at a time in its current mode, so BatchNorm needs eval mode."""
    params = [p for p in model.parameters() if p.requires_grad] if params is None else list(params)
    rows = []
    with torch.enable_grad():
        for xi, yi in zip(x, y):
            z = model(xi.unsqueeze(0))[0, int(yi)]
            gs = torch.autograd.grad(z, params, allow_unused=True)
            rows.append(torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1)
                                   for g, p in zip(gs, params)]))
    return torch.stack(rows)


# ----------------------------------------------------------------------------- E.3
def _unit_rows(A: torch.Tensor) -> torch.Tensor:
    if A.ndim != 2:
        raise ValueError(f"need a matrix of row vectors (k, P), got {tuple(A.shape)}")
    n = torch.linalg.vector_norm(A, dim=1, keepdim=True)
    if not bool((n > 0).all()):
        raise ValueError("every vector must be non-zero")
    return A / n


def principal_angles(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Principal angles (radians, ascending) between the row spans of ``A`` (a x P) and ``B``
    (b x P), whose rows must be linearly independent. There are ``min(a, b)`` angles: the
    arccos of the singular values of ``Q_A^T Q_B``, where the Q are orthonormal bases from
    QR. Angles near 0 lose accuracy this way. `scipy.linalg.subspace_angles` (columns,
    descending) refines small angles with sines. The test compares the two on an example
    whose smallest angle is about 4e-3 rad."""
    QA = torch.linalg.qr(_unit_rows(A).T.double()).Q
    QB = torch.linalg.qr(_unit_rows(B).T.double()).Q
    s = torch.linalg.svdvals(QA.T @ QB).clamp(-1, 1)
    return torch.arccos(s).sort().values


def subspace_rank(V: torch.Tensor, E: torch.Tensor, rtol: float = RANK_RTOL) -> int:
    """Numerical rank of ``[v_1..v_C, e_1..e_C]`` (eq. E.1). Each vector is scaled to unit
    norm, and the count is the singular values above ``rtol * sigma_max``. The rank is C when
    the two spans coincide and 2C when they meet only at 0.

    The source prints ``e_0, ..., e_C`` (C + 1 vectors) but says the rank is C when the spans
    coincide, which holds for C eigenvectors. So *[choice]* the caller passes the top-C
    eigenvectors e_1..e_C.
    """
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and 0 < rtol < 1):
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    M = torch.cat([_unit_rows(V), _unit_rows(E)]).double()
    s = torch.linalg.svdvals(M)
    return int((s > rtol * s[0]).sum())


def assignment_cosine(V: torch.Tensor, E: torch.Tensor) -> tuple[float, np.ndarray]:
    """Cosine-maximised linear assignment of class-gradient directions to eigenvectors (E.3:
    "≈ 0.36"). It is the Hungarian assignment (`scipy.optimize.linear_sum_assignment`) on
    ``|cos|``, since an eigenvector's sign is arbitrary.

    Returns:
        ``(mean |cos| over the assigned pairs, the |cos| matrix (len V x len E))``.
    """
    from scipy.optimize import linear_sum_assignment

    S = (_unit_rows(V).double() @ _unit_rows(E).double().T).abs().cpu().numpy()
    rows, cols = linear_sum_assignment(S, maximize=True)
    return float(S[rows, cols].mean()), S
