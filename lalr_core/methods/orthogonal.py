"""Gradient self-orthogonalisation (seed 004, ch. 5): Orthogonal-SGDM/Adam/AdamW/LARS.

Chapter 06. Each chosen weight gradient is viewed as a matrix ``G = grad.flatten(1)`` of shape
``(c_out, c_in*kh*kw)`` (one row per filter or unit, eq. 5.4) and replaced by its orthogonal
polar factor ``O = U V^T`` (eqs. 5.5-5.7) before *any* first-order optimiser steps (Algorithm 6).
Because the gradient is replaced in place before ``step()``:

* torch's coupled weight decay is added after orthogonalisation (``d_p = O + wd*theta``) and
  momentum accumulates ``O`` ("orth-then-momentum"; Muon is the reverse: it orthogonalises the
  momentum buffer);
* gradient clipping in the training loop acts on the raw gradients (digest G11).

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

import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from lalr_core.core.config import METHODS as RUN_METHODS
from lalr_core.core.config import OPTIMIZERS, MethodConfig
from lalr_core.core.layers import weight_layers
from lalr_core.core.optim import OptimizerWrapper

METHODS = ("svd", "newton_schulz")
NULL_RULES = ("complete", "drop")  # the null space of a rank-deficient gradient (module docstring)
TRANSFORMS = ("none", "orth", "norm", "cnorm")
LAYER_RULES = ("all", "conv")
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


def _check_rtol(rtol: float | None) -> None:
    if rtol is not None and (isinstance(rtol, bool) or not isinstance(rtol, (int, float))
                             or not 0 < rtol < 1):
        raise ValueError(f"null_rtol must be None or a number in (0, 1), got {rtol!r}")


def null_tolerance(M: torch.Tensor, rtol: float | None = None) -> float:
    """Relative tolerance below which a singular value of ``M`` counts as zero: ``rtol``, or
    ``max(m, n) * eps(M.dtype)`` (the ``matrix_rank`` convention). The classifier's exact zero
    comes out of a float32 SVD near ``1e-7 * s_max`` (ResNet-8's 10 x 32: tolerance 3.8e-6);
    a gradient computed under bf16 autocast needs ``rtol`` near 1e-2."""
    _check_rtol(rtol)
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
    _check_rtol(null_rtol)
    _check_matrix_batch(G)
    M = G.flatten(1)                                                # (c_out, fan_in)
    O = svd_polar(M, null, null_rtol) if method == "svd" else newton_schulz(M, ns_steps)
    return O.reshape(G.shape)


def _unit_matrices(M: torch.Tensor) -> torch.Tensor:
    """Each matrix of ``[..., m, n]`` divided by its Frobenius norm."""
    return M / torch.linalg.vector_norm(M, dim=(-2, -1), keepdim=True)


def _unit_rows(M: torch.Tensor) -> torch.Tensor:
    """Each row of ``[..., m, n]`` divided by its norm (no epsilon)."""
    return M / torch.linalg.vector_norm(M, dim=-1, keepdim=True)


def normalise(G: torch.Tensor) -> torch.Tensor:
    """N-SGDM's transform (sec. 5.5.3): the gradient divided by its Frobenius norm."""
    _check_matrix_batch(G)
    return _unit_matrices(G.flatten(1)).reshape(G.shape)


def component_normalise(G: torch.Tensor) -> torch.Tensor:
    """CN-SGDM's transform (sec. 5.5.3): every filter's gradient (row of ``flatten(1)``) to unit
    norm. No epsilon, as the source's code: a filter with zero gradient gives NaN (table 5.5's
    "0.00 +- 0.00" diverged runs)."""
    _check_matrix_batch(G)
    return _unit_rows(G.flatten(1)).reshape(G.shape)


# ----------------------------------------------------------------------------- parameter choice
def select_params(model: nn.Module, layers: str = "all", prefix: str = "") -> list[str]:
    """Names of the weights to transform: conv and linear weights (``ndim > 1``).

    Args:
        model: the network.
        layers: ``"all"`` (every conv and linear weight, the source's default, classifier
            included) or ``"conv"`` (conv weights only: table 5.6 "Conv Orthogonal-SGDM").
        prefix: keep only parameters whose name starts with it (``"encoder."`` for the P-VAE,
            fig 5.9; ``"trunk."`` for Barlow Twins, fig 5.8).

    Raises:
        ValueError: unknown ``layers`` rule, or nothing selected.
    """
    if layers not in LAYER_RULES:
        raise ValueError(f"unknown layer rule {layers!r}; choose one of {LAYER_RULES}")
    kinds = ("conv", "linear") if layers == "all" else ("conv",)
    names = [f"{mod_name}.weight" if mod_name else "weight"
             for mod_name in weight_layers(model, kinds)]
    names = [n for n in names if n.startswith(prefix)]
    if not names:
        raise ValueError(f"no {layers!r} weights with prefix {prefix!r} in {type(model).__name__}")
    return names


# ----------------------------------------------------------------------------- the wrapper
class GradientTransform(OptimizerWrapper):
    """Wrap a torch optimiser so chosen gradients are transformed before each ``step()``.

    Algorithm 6 of seed 004: ``transform="orth"`` replaces each chosen gradient ``g`` by
    ``orthogonalise(g, method)``; ``"norm"``/``"cnorm"`` are N-SGDM/CN-SGDM; ``"none"`` is the
    plain optimiser (bit-identical steps). Same-shaped gradients are stacked and decomposed in
    one batched call (ResNet-20 has 20 weights but only 7 distinct shapes).

    The wrapper follows the optimiser contract the training loop uses (``step``,
    ``zero_grad``, ``param_groups``, ``state_dict``, ``load_state_dict``), so schedules that
    set ``group["lr"]`` keep working. ``stats`` counts SVD fallbacks and skipped tensors.

    Args:
        optimizer: any torch optimiser (SGD, Adam, AdamW, `LARS`, ...).
        params: the parameters whose gradients are transformed (each must be >= 2-D and held
            by ``optimizer``); usually from `select_params`.
        transform: one of ``TRANSFORMS``.
        method: ``"svd"`` or ``"newton_schulz"`` (only for ``"orth"``).
        ns_steps: Newton-Schulz iterations.
        null: ``"complete"`` | ``"drop"`` | None (the method's own), see `orthogonalise`.
        null_rtol: relative tolerance of a zero singular value (`null_tolerance`).

    Raises:
        ValueError: unknown transform/method/null rule, a 1-D (bias, BN) parameter, or a
            parameter the optimiser does not hold.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, params: Iterable[torch.Tensor], *,
                 transform: str = "orth", method: str = "svd", ns_steps: int = NS_STEPS,
                 null: str | None = None, null_rtol: float | None = None):
        if transform not in TRANSFORMS:
            raise ValueError(f"unknown gradient transform {transform!r}; choose one of {TRANSFORMS}")
        self.null = null_rule(method, null)
        _check_rtol(null_rtol)
        if isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 1:
            raise ValueError(f"ns_steps must be an int >= 1, got {ns_steps!r}")
        self.optimizer, self.transform, self.method, self.ns_steps = optimizer, transform, method, ns_steps
        self.null_rtol = null_rtol
        self.params = list(params)
        held = {id(p) for g in optimizer.param_groups for p in g["params"]}
        for p in self.params:
            if p.ndim < 2:
                raise ValueError(f"only matrix-like weights (ndim >= 2) can be transformed, got a "
                                 f"parameter of shape {tuple(p.shape)}")
            if id(p) not in held:
                raise ValueError(f"parameter of shape {tuple(p.shape)} is not held by the optimiser")
        self.groups: dict[tuple, list[torch.Tensor]] = defaultdict(list)
        for p in self.params:  # same flattened shape, dtype and device -> one batched call
            self.groups[(p.shape[0], p[0].numel(), p.dtype, p.device)].append(p)
        self.stats = {"steps": 0, "svd_fallbacks": 0, "skipped_tensors": 0}

    # torch.optim contract: param_groups, state, zero_grad from OptimizerWrapper -------------
    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "stats": dict(self.stats)}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.stats.update(state.get("stats", {}))

    def __repr__(self) -> str:
        return (f"GradientTransform({type(self.optimizer).__name__}, transform={self.transform!r}, "
                f"method={self.method!r}, null={self.null!r}, tensors={len(self.params)})")

    # the transform -------------------------------------------------------------------------
    @torch.no_grad()
    def transform_grads(self) -> None:
        """Replace the chosen ``p.grad`` in place (parameters without a gradient are skipped)."""
        if self.transform == "none":
            return
        for params in self.groups.values():
            params = [p for p in params if p.grad is not None]
            if not params:
                continue
            G = torch.stack([p.grad.flatten(1) for p in params])   # (L, c_out, fan_in)
            out = self._apply(G)
            for p, o in zip(params, out):
                p.grad.copy_(o.reshape(p.shape))

    def _apply(self, G: torch.Tensor) -> torch.Tensor:
        if self.transform == "norm":
            return _unit_matrices(G)
        if self.transform == "cnorm":
            return _unit_rows(G)
        if self.method == "newton_schulz":
            return newton_schulz(G, self.ns_steps)
        try:
            return svd_polar(G, self.null, self.null_rtol)
        except torch.linalg.LinAlgError:
            return self._per_tensor_fallback(G)

    def _per_tensor_fallback(self, G: torch.Tensor) -> torch.Tensor:
        """Batched SVD failed: retry each tensor alone; one that still fails gets the
        Newton-Schulz factor (same singular vectors) and is counted, never silently dropped,
        and the remaining tensors are still orthogonalised."""
        out = torch.empty_like(G)
        for i, M in enumerate(G):
            try:
                out[i] = svd_polar(M, self.null, self.null_rtol)
            except torch.linalg.LinAlgError:
                self.stats["svd_fallbacks"] += 1
                if not torch.isfinite(M).all():
                    self.stats["skipped_tensors"] += 1  # NaN/inf: leave it, the run diverges
                    out[i] = M
                    continue
                warnings.warn(f"SVD failed on a {tuple(M.shape)} gradient; using Newton-Schulz "
                              "for this tensor", RuntimeWarning, stacklevel=4)
                out[i] = newton_schulz(M, self.ns_steps)
        return out

    @torch.no_grad()
    def step(self, closure=None):
        """Transform the chosen gradients, then take the wrapped optimiser's step."""
        if closure is not None:
            with torch.enable_grad():
                closure()
        self.transform_grads()
        self.stats["steps"] += 1
        return self.optimizer.step()


# ----------------------------------------------------------------------------- LARS
class LARS(torch.optim.Optimizer):
    """Layer-wise Adaptive Rate Scaling (You et al. 2017) as used by Barlow Twins (fig 5.8).

    Per parameter: ``d = g + wd*theta``; if the group is adapted, ``d *= eta * ||theta|| / ||d||``
    (when both norms are positive); ``buf = momentum*buf + d``; ``theta -= lr*buf``. Barlow
    Twins excludes biases and BN parameters from both weight decay and adaptation: put them in
    a group with ``exclude=True``. Units: ``lr`` per step; ``eta`` is the trust coefficient.
    """

    def __init__(self, params, lr: float = 0.2, momentum: float = 0.9, wd: float = 1.5e-6,
                 eta: float = 1e-3, exclude: bool = False):
        if lr <= 0 or not 0 <= momentum < 1 or wd < 0 or eta <= 0:
            raise ValueError(f"invalid LARS settings lr={lr}, momentum={momentum}, wd={wd}, eta={eta}")
        super().__init__(params, dict(lr=lr, momentum=momentum, wd=wd, eta=eta, exclude=exclude))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if not group["exclude"]:
                    d = d.add(p, alpha=group["wd"])
                    p_norm, d_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(d)
                    trust = torch.where((p_norm > 0) & (d_norm > 0),
                                        group["eta"] * p_norm / d_norm, torch.ones_like(p_norm))
                    d = d * trust
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                p.add_(buf, alpha=-group["lr"])
        return loss


def lars_param_groups(model_or_params: nn.Module | Iterable[torch.Tensor]) -> list[dict]:
    """Barlow Twins' split: >= 2-D weights adapted and decayed; biases and BN excluded."""
    params = list(model_or_params.parameters() if isinstance(model_or_params, nn.Module)
                  else model_or_params)
    adapted = [p for p in params if p.ndim > 1]
    excluded = [p for p in params if p.ndim <= 1]
    return [{"params": adapted}, {"params": excluded, "exclude": True}]


# ----------------------------------------------------------------------------- in a RunConfig
@RUN_METHODS.register("grad_transform")
@dataclass(frozen=True)
class GradTransform(MethodConfig):
    """A run's gradient transform: ``RunConfig(methods=(GradTransform("orth"),))``.

    Args:
        transform: ``"orth"`` | ``"norm"`` | ``"cnorm"`` (seed 004 sec. 5.3, 5.5.3).
        method: ``"svd"`` (exact U V^T, the source) | ``"newton_schulz"`` (5 steps).
        layers: ``"all"`` conv + linear weights | ``"conv"`` only (table 5.6).
        prefix: only parameters whose name starts with it (``"trunk."``: Barlow Twins' trunk,
            fig 5.8; ``"encoder."``: the VAE's encoder, fig 5.9).
        null: the null space of a rank-deficient gradient (the classifier's under
            cross-entropy, module docstring): ``"complete"`` (the source's) | ``"drop"``.
            None is resolved to the method's own (`null_rule`: ``"complete"`` for SVD, the
            default because the source's code and results use it; ``"drop"`` for
            Newton-Schulz), so the cache key names the rule in force. Only for ``"orth"``.
        null_rtol: relative tolerance of a zero singular value; None = ``max(m, n) * eps``
            (`null_tolerance`).
    """

    name = "grad_transform"
    transform: str = "orth"
    method: str = "svd"
    layers: str = "all"
    prefix: str = ""
    null: str | None = None
    null_rtol: float | None = None

    def __post_init__(self):
        if self.transform not in TRANSFORMS[1:]:
            raise ValueError(f"unknown grad_transform {self.transform!r}; "
                             f"choose one of {TRANSFORMS[1:]}")
        if self.method not in METHODS:
            raise ValueError(f"unknown orth method {self.method!r}; choose one of {METHODS}")
        if self.transform != "orth":
            if self.null is not None or self.null_rtol is not None:
                raise ValueError(f"null / null_rtol apply to transform 'orth' only, got "
                                 f"transform {self.transform!r}")
        else:
            object.__setattr__(self, "null", null_rule(self.method, self.null))
            _check_rtol(self.null_rtol)
        if self.layers not in LAYER_RULES:
            raise ValueError(f"unknown transform layers {self.layers!r}; "
                             f"choose one of {LAYER_RULES}")

    def wrap_optimizer(self, optimizer, model: nn.Module) -> GradientTransform:
        named = dict(model.named_parameters())
        chosen = select_params(model, self.layers, self.prefix)
        return GradientTransform(optimizer, [named[n] for n in chosen],
                                 transform=self.transform, method=self.method, null=self.null,
                                 null_rtol=self.null_rtol)


@OPTIMIZERS.register("lars")
def lars(params, cfg, eta: float = 1e-3) -> LARS:
    """`LARS` from a run's lr, momentum and wd, ``eta`` from ``cfg.optimizer_params``, with
    Barlow Twins' exclusions (`lars_param_groups`)."""
    params = list(params)
    if params and isinstance(params[0], dict):
        raise ValueError("LARS builds its own groups; a per-layer lr policy cannot be combined")
    return LARS(lars_param_groups(params), lr=cfg.lr, momentum=cfg.momentum, wd=cfg.wd, eta=eta)
