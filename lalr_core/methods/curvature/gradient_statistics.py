"""Statistics of mini-batch gradients along training (`[Tuddenham2026]` sec. 4.4.3; see REFERENCES.md):
temporal consistency ``phi_t`` (eq. 4.56, fig 4.15) with the share of significant values, and
gradient cohesion ``C`` with the per-gradient ``cos psi_i`` (eq. 4.58, fig 4.16). The callbacks
that record their inputs during a run are `lalr_core.methods.curvature.gradient_probes`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.similarity.cosine_sets import rowwise_cos
from lalr_core.methods.trajectory import cos_threshold

COHESION_D = 10            # fig 4.16: d = 10 mini-batch gradients per probe


# ----------------------------------------------------------------------------- consistency
def temporal_consistency(weights: torch.Tensor, grads: torch.Tensor, final: torch.Tensor, *,
                         per_filter: bool = False) -> torch.Tensor:
    """``phi_t = S_cos(theta_tau - theta_t, grad_t)`` (eq. 4.56, fig 4.15).

    ``phi_t < 0`` means the gradient points towards the solution (the update is ``-grad``).
    Straight-line motion from ``theta_0`` to ``theta_tau`` gives ``phi_t = -1``; for plain SGD
    the last step gives ``phi_{tau-1} = -1`` by construction (the thesis's artefact). The
    cosine is `lalr_core.methods.similarity.cosine_sets.rowwise_cos` (the same probe as chapter 06's); a
    zero row (``theta_t = theta_tau``, e.g. ``t = tau``, or a zero gradient) has no
    direction and gives ``nan`` here, never a cosine.

    Args:
        weights: ``(T, ...)`` the parameters ``theta_t`` at which ``grads`` were taken.
        grads: ``(T, ...)`` the mini-batch gradients at ``theta_t``, same shape.
        final: ``weights.shape[1:]``, the final parameters ``theta_tau``.
        per_filter: one cosine per filter (the thesis: per output channel of the second conv
            layer): dim 1 indexes the filters, the rest is flattened.

    Returns:
        float64 ``(T,)``, or ``(T, F)`` per filter. Random vectors fall within
        ``+-10/sqrt(n)`` (app. A.1.4, `significant_fraction`).

    Raises:
        ValueError: mismatched shapes, or ``per_filter`` without a filter dimension.
    """
    W, G, F = (torch.as_tensor(x).detach().double() for x in (weights, grads, final))
    if W.ndim < 2 or W.shape != G.shape or W.shape[1:] != F.shape:
        raise ValueError(f"need weights and grads of one shape (T, ...) and final of shape "
                         f"(...), got {tuple(W.shape)}, {tuple(G.shape)}, {tuple(F.shape)}")
    if per_filter and W.ndim < 3:
        raise ValueError(f"per_filter needs (T, filters, ...) tensors, got {tuple(W.shape)}")
    lead = W.shape[:2] if per_filter else W.shape[:1]
    D = (F.unsqueeze(0) - W).reshape(-1, int(np.prod(W.shape[len(lead):])))
    R = G.reshape(D.shape)
    phi = rowwise_cos(D, R)
    phi[(D.norm(dim=1) == 0) | (R.norm(dim=1) == 0)] = float("nan")
    return phi.reshape(lead)


def significant_fraction(phi, n: int, p: float = 0.01) -> float:
    """Fraction of the finite ``phi`` with ``|phi| >= 1/sqrt(n p)`` (``10/sqrt(n)`` at
    ``p = 0.01``), the random-vector threshold of app. A.1.4 (`trajectory.cos_threshold`);
    ``n`` is the dimension of each cosine's vectors (a filter: in_channels x k x k)."""
    x = np.asarray(phi, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("phi has no finite value")
    return float(np.mean(np.abs(x) >= cos_threshold(check_int(n, "n"), p)))


class Cohesion(NamedTuple):
    """Eq. 4.58 over ``d`` gradients: ``value`` = ``C``, ``cos`` = ``cos psi_i`` (fig 4.16's
    points), ``norms`` = ``||g_i||`` (fig 4.16's colour)."""

    value: torch.Tensor
    cos: torch.Tensor
    norms: torch.Tensor


def gradient_cohesion(grads: torch.Tensor) -> Cohesion:
    """Batch consistency ``C = (1/d) sum_i cos(g_i, mu)``, ``mu = (1/d) sum_i g_i`` (eq. 4.58).

    Eq. 4.58 prints ``C = (1/d) < mu^T G / (||mu|| ||G||_2) . 1 >`` with
    ``mu = (1/n) sum_{i=1}^n g_i``, where ``n`` is the number of parameters: an index clash.
    We read it as the mean over the ``d`` sampled gradients and ``||G||_2`` column-wise (the
    only reading in which eq. 4.58 is a mean of cosines); the scale of ``mu`` cancels in a
    cosine. A zero mean (or a zero
    gradient) has no direction: ``nan``.

    Args:
        grads: ``(..., d, n)``: ``d >= 2`` flattened gradients at fixed weights (fig 4.16:
            ``d = 10``), any leading batch dims (e.g. one per probe).

    Returns:
        `Cohesion` with ``value`` ``(...)``, ``cos`` and ``norms`` ``(..., d)``, float64.

    Raises:
        ValueError: fewer than 2 gradients or non-finite entries.
    """
    G = torch.as_tensor(grads).detach().double()
    if G.ndim < 2 or G.shape[-2] < 2 or G.shape[-1] < 1:
        raise ValueError(f"grads must be (..., d, n) with d >= 2, got {tuple(G.shape)}")
    if not torch.isfinite(G).all():
        raise ValueError("grads have non-finite entries")
    mu = G.mean(dim=-2, keepdim=True)
    norms = G.norm(dim=-1)
    den = norms * mu.norm(dim=-1)
    cos = (G * mu).sum(-1) / den
    cos = torch.where(den > 0, cos, torch.full_like(cos, float("nan")))
    return Cohesion(cos.mean(dim=-1), cos, norms)
