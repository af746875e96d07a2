"""Gradient transforms before any torch optimiser's step (Algorithm 6): orthogonalise (``orth``),
normalise per tensor (``norm``) or per filter (``cnorm``), as a wrapper (`GradientTransform`)
and as a run's method config (`GradTransform`). The maths is in `lalr_core.methods.orthogonal.polar`.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn

from lalr_core.core.loop.config import METHODS as RUN_METHODS
from lalr_core.core.loop.config import MethodConfig
from lalr_core.core.loop.optim import OptimizerWrapper
from lalr_core.core.models.layers import weight_layers
from lalr_core.core.validation import check_int
from lalr_core.methods.orthogonal.polar import (
    METHODS,
    NS_STEPS,
    check_rtol,
    newton_schulz,
    null_rule,
    svd_polar,
    unit_matrices,
    unit_rows,
)

TRANSFORMS = ("none", "orth", "norm", "cnorm")


LAYER_RULES = ("all", "conv")


# ----------------------------------------------------------------------------- parameter choice
def transformed_params(model: nn.Module, layers: str = "all", prefix: str = "") -> list[str]:
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
            by ``optimizer``); usually from `transformed_params`.
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
        check_rtol(null_rtol)
        check_int(ns_steps, "ns_steps", 1)
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
            return unit_matrices(G)
        if self.transform == "cnorm":
            return unit_rows(G)
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
            check_rtol(self.null_rtol)
        if self.layers not in LAYER_RULES:
            raise ValueError(f"unknown transform layers {self.layers!r}; "
                             f"choose one of {LAYER_RULES}")

    def wrap_optimizer(self, optimizer, model: nn.Module) -> GradientTransform:
        named = dict(model.named_parameters())
        chosen = transformed_params(model, self.layers, self.prefix)
        return GradientTransform(optimizer, [named[n] for n in chosen],
                                 transform=self.transform, method=self.method, null=self.null,
                                 null_rtol=self.null_rtol)
