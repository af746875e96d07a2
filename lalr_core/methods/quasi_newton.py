"""Quasi-Newton's method in the class-gradient subspace (seed 004, chapter 4.3; appendix E).

Chapter 05 (issue 14). Source: M. Tuddenham's thesis, sec. 4.3.3-4.3.6 and appendix E.3/E.4
(arXiv:2012.01938); digest ``shared/spec/seed004_ch4_quasi_newton.md`` sec. 2.2-2.5.
I compared the digest with the source for everything used here and found no disagreement.
Where the source leaves a choice open, the comment marked *[choice]* says what this module
does.

Definitions (source numbering):

* class gradient (4.25), per mini-batch (4.34): ``c_k^B = 1/|B_k| sum_{mu in B_k} grad z_k^mu``.
  It is the mean gradient of class k's own **logit** over the class-k examples of the batch,
  not the gradient of a per-class loss. So the class gradients do not sum to the batch
  gradient. The exact relation, from (4.22)-(4.23), is
  ``g^B = grad (1/|B|) sum_mu logsumexp(z^mu) - sum_k (|B_k|/|B|) c_k^B``
  (`tests/test_quasi_newton.py` checks it).
* eigenvalue of the rank-C Hessian (4.29), per batch (4.35):
  ``lambda_k^B = mean_{mu in B} p_k^mu (1 - p_k^mu) * ||c_k^B||^2``. The mean runs over the
  whole batch; the class gradient uses only class-k examples.
* update (4.33): ``theta' = theta - eta g - sum_k (1/lambda_k - eta) (v_k^T g) v_k`` with
  ``v_k = c_k / ||c_k||``. The ``v_k`` are not orthogonalised, as in the source: assumption
  4.3 says they are orthogonal, and sec. 4.3.6 finds they are not.
* smoothing (4.34)/(4.35): bias-corrected EMA of ``c_k^B``, and the root of a bias-corrected
  EMA of ``(lambda_k^B)^2``, with rate `GAMMA`. Start values ``c_k = 0`` and ``lambda_k = 1``.

How the optimiser gets the class gradients with no change to the shared loop
(`lalr_core.core.train`). The loop runs ``loss = task.loss(model, batch)``, then
``loss.backward()`` and ``optimizer.step()``, with no closure. A registered optimiser factory
receives only parameters and the config. So `QuasiNewtonClassSubspace` works as follows:

1. **Model.** It finds the model itself. Until `attach` is called, a process-wide module
   forward hook looks for the first outermost, grad-enabled, training-mode forward of a module
   that holds all of the optimiser's parameters. That module is attached, and the global
   hooks are removed. A notebook can instead call ``attach(model)`` directly.
2. **Logits.** The attached model's forward hook keeps the output logits ``z`` (``B x C``) of
   every training forward that has autograd enabled. It also registers a tensor hook on
   ``z``.
3. **Labels.** During the loop's ``loss.backward()`` the tensor hook receives
   ``dL/dz = (softmax(z) - Y) / B``, which is exact for mean cross-entropy (4.23). From it
   the hook recovers the one-hot labels as ``Y = softmax(z) - B dL/dz``. It checks that ``Y``
   is one-hot. A gradient that fails the check is ignored (it may be another backward through
   the same logits); if no valid one arrives before ``step()``, the step raises a
   `ValueError`, so a task whose loss is not a mean cross-entropy is refused.
4. **Class gradients.** The hook then computes the C class gradients inside the backward pass
   that is already running. While the hook runs, the graph below ``z`` has not been freed
   yet. Each present class takes one vector-Jacobian product
   ``autograd.grad(z, params, S_k, retain_graph=True)``, where ``S_k`` has
   ``1/|B_k|`` at ``(mu, k)`` for each ``mu`` in ``B_k``.
5. **Step.** ``step()`` then uses the stored class gradients and ``p.grad``.

The C backward passes are the source's own cost (appendix E.2: "it requires C backward
passes"). I chose one VJP per present class over torch.func per-example gradients plus a
segment sum for three reasons:

* It is exact for the training forward as it ran. With BatchNorm in train mode, a logit
  depends on the whole batch, so per-example functional gradients of single examples would
  compute a different quantity.
* It reuses the loop's graph: no second forward, no second dropout draw, no second update of
  the BN running statistics.
* It needs C x P memory instead of B x P.

Limits of this design:

* One training forward per step. If several forwards are backpropagated before a step, the
  last one's class gradients are used.
* The VJPs run re-entrantly inside the loop's backward. A flag makes the logits' own hook
  ignore them. Other tensor hooks on activations (a probe's, say) fire once per VJP.
* Under bf16 autocast the labels are still exact, because the one-hot check's tolerance
  follows ``dL/dz``'s dtype. The class gradients are then bf16 backward passes.
"""

from __future__ import annotations

import contextlib
import functools
import math
import weakref
from collections.abc import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as _module_hooks

from lalr_core.core.config import OPTIMIZERS

__all__ = [
    "C_INIT",
    "ClassGradientTap",
    "GAMMA",
    "LAMBDA_INIT",
    "RANK_RTOL",
    "QuasiNewtonClassSubspace",
    "assignment_cosine",
    "batch_eigenvalues",
    "class_gradients",
    "class_gradients_from_logits",
    "labels_from_logit_grad",
    "own_logit_gradients",
    "principal_angles",
    "q_gc",
    "q_lc",
    "q_sl",
    "qn_class_subspace",
    "qn_direction",
    "subspace_rank",
]

# ----------------------------------------------------------------------------- constants
# EMA rate of eqs. 4.34/4.35. Appendix E.4: "a gamma 0.9 for the quasi-Newton's method".
# Sec. 4.3.4 only says "close to one".
GAMMA = 0.9
# Start values, sec. 4.3.4: "We initialise c_k^(0) = 0 but lambda_k^(0) = 1 since we use
# 1/lambda_k in our update". While c_k = 0 the direction v_k is undefined, so class k adds
# nothing to (4.33) until it has been seen.
C_INIT = 0.0
LAMBDA_INIT = 1.0
# E.3 rank test, [v_1..v_C, e_1..e_C] (eq. E.1). The source gives no tolerance and blames
# "precision error in calculating the rank". Digest sec. 5 item 12 [suggest]: count the
# singular values of the unit-normalised stack above 0.1 * sigma_max.
RANK_RTOL = 0.1
# Label recovery (module docstring, step 3): the entries of softmax(z) - B dL/dz may differ
# from 0/1 by at most this much, or by 8 unit roundoffs of dL/dz's dtype if that is larger
# (bf16 autocast: 0.06). Above that the loss is not a mean cross-entropy on hard labels.
LABEL_ATOL = 1e-3


# ----------------------------------------------------------------------------- class gradients
def _check_logits(z: torch.Tensor) -> None:
    if not isinstance(z, torch.Tensor) or z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"logits must be a (batch, classes) tensor with >= 2 classes, got "
                         f"{getattr(z, 'shape', type(z).__name__)}")


def _check_labels(y: torch.Tensor, n: int, num_classes: int) -> None:
    if not isinstance(y, torch.Tensor) or y.ndim != 1 or len(y) != n or y.dtype.is_floating_point:
        raise ValueError(f"labels must be {n} integer class indices, got "
                         f"{getattr(y, 'shape', type(y).__name__)}")
    if n and (int(y.min()) < 0 or int(y.max()) >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}), got range "
                         f"[{int(y.min())}, {int(y.max())}]")


def labels_from_logit_grad(z: torch.Tensor, dz: torch.Tensor) -> torch.Tensor:
    """The labels of a batch whose loss was the mean cross-entropy of the logits ``z``.

    For ``L = mean_mu CE(z^mu, y^mu)`` the gradient is ``dL/dz = (softmax(z) - Y) / B``
    (eq. 4.23). So ``Y = softmax(z) - B dL/dz`` is one-hot, and its argmax is the label.

    Raises:
        ValueError: ``Y`` is not one-hot within `LABEL_ATOL` (or 8 unit roundoffs of
            ``dz.dtype``), so the loss was not a mean cross-entropy on hard labels. Examples
            are a sum reduction, label smoothing, mixup, or a penalty on the logits.
    """
    _check_logits(z)
    if dz.shape != z.shape:
        raise ValueError(f"dL/dz has shape {tuple(dz.shape)}, the logits {tuple(z.shape)}")
    p = torch.softmax(z.detach().float(), dim=1)
    Y = p - z.shape[0] * dz.detach().float()
    y = Y.argmax(1)
    tol = max(LABEL_ATOL, 8 * torch.finfo(dz.dtype).eps)
    err = (Y - F.one_hot(y, z.shape[1]).float()).abs().max()
    if not err <= tol:
        raise ValueError(
            f"qn_class_subspace needs the task's loss to be the mean cross-entropy of the "
            f"model's output on hard labels (eq. 4.22); softmax(z) - B*dL/dz is off one-hot by "
            f"{float(err):.3g} > {tol:.3g}")
    return y


def class_gradients_from_logits(z: torch.Tensor, y: torch.Tensor,
                                params: Sequence[torch.Tensor], retain_graph: bool = True
                                ) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Per-batch class gradients (eq. 4.34, right) from logits that still have their graph.

    ``c_k^B = 1/|B_k| sum_{mu in B_k} dz_k^mu/dtheta``: one vector-Jacobian product per class
    present in the batch, ``autograd.grad(z, params, S_k)`` with
    ``S_k[mu, k] = 1/|B_k|`` for ``mu in B_k``. This is exact for any model, BatchNorm in train
    mode included, because it differentiates the batch's forward as it ran.

    Args:
        z: logits ``(B, C)`` produced from ``params``.
        y: labels ``(B,)``.
        params: the parameters to differentiate. A parameter the logits do not depend on
            gets zeros.
        retain_graph: keep the graph after the last VJP, for a later backward (the training
            loss's).

    Returns:
        ``(grads, counts)``. ``grads[j]`` has shape ``(C, *params[j].shape)``, and its row k
        is class k's part of ``c_k^B``. An absent class has a zero row. ``counts`` is
        ``|B_k|`` for each class, as a ``(C,)`` long tensor.
    """
    _check_logits(z)
    C = z.shape[1]
    _check_labels(y, z.shape[0], C)
    params = list(params)
    onehot = F.one_hot(y.to(z.device), C)
    counts = onehot.sum(0)
    grads = [torch.zeros((C, *p.shape), dtype=p.dtype, device=p.device) for p in params]
    present = counts.nonzero().flatten().tolist()
    for i, k in enumerate(present):
        S = torch.zeros_like(z)
        S[:, k] = onehot[:, k].to(z.dtype) / counts[k].to(z.dtype)
        keep = retain_graph or i + 1 < len(present)  # the last VJP may free the graph
        parts = torch.autograd.grad(z, params, S, retain_graph=keep, allow_unused=True)
        for out, part in zip(grads, parts):
            if part is not None:
                out[k] = part
    return grads, counts


def _flat_rows(grads: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-parameter ``(C, *shape)`` blocks as one ``(C, P)`` matrix (parameter order)."""
    return torch.cat([g.reshape(g.shape[0], -1) for g in grads], dim=1)


def class_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                    params: Iterable[torch.Tensor] | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """The class-gradient matrix ``G`` (``C x P``) of one batch (eqs. 4.25/4.34).

    Row k is ``c_k^B = 1/|B_k| sum_{mu in B_k} grad_theta z_k^mu``. It is flattened over
    ``params`` in their order (default: all of ``model``'s parameters that require grad). A
    class absent from the batch has a zero row and count 0. The model runs in its current
    mode.

    Returns:
        ``(G, counts)``: ``G`` is ``(C, P)`` and ``counts`` is ``(C,)``.
    """
    params = [p for p in model.parameters() if p.requires_grad] if params is None else list(params)
    if not params:
        raise ValueError("params is empty: nothing to differentiate")
    with torch.enable_grad():
        z = model(x)
        grads, counts = class_gradients_from_logits(z, y, params, retain_graph=False)
    return _flat_rows(grads), counts


def batch_eigenvalues(probs: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``lambda_k^B = mean_{mu in B} p_k^mu (1 - p_k^mu) ||c_k^B||^2`` (eqs. 4.29/4.35).

    Args:
        probs: softmax outputs ``(B, C)`` of the **whole** batch.
        G: class gradients ``(C, P)``.
    """
    if probs.ndim != 2 or G.ndim != 2 or probs.shape[1] != G.shape[0]:
        raise ValueError(f"probs (B, C) and G (C, P) must agree on C, got {tuple(probs.shape)} "
                         f"and {tuple(G.shape)}")
    return (probs * (1 - probs)).mean(0).to(G.dtype) * (G * G).sum(1)


def qn_direction(g: torch.Tensor, G: torch.Tensor, lam: torch.Tensor, lr: float) -> torch.Tensor:
    """The step ``d`` of eq. 4.33, ``theta' = theta - d``:

    ``d = eta g + sum_k (1/lambda_k - eta) (v_k^T g) v_k`` with ``v_k = c_k/||c_k||``.

    In exact terms this is ``d = eta P g + (H^LowRank)^dagger g``, with the projector P of
    (4.32) and the generalised inverse of (4.30), when the ``v_k`` are orthonormal. A zero row
    of ``G`` (a class not seen yet) adds nothing.

    Args:
        g: gradient ``(P,)``.
        G: class gradients ``(C, P)``. They are used only through their directions ``v_k``.
        lam: eigenvalues ``lambda_k`` ``(C,)``.
        lr: eta.
    """
    if g.ndim != 1 or G.ndim != 2 or G.shape[1] != g.shape[0] or lam.shape != (G.shape[0],):
        raise ValueError(f"need g (P,), G (C, P), lam (C,); got {tuple(g.shape)}, "
                         f"{tuple(G.shape)}, {tuple(lam.shape)}")
    norm2 = (G * G).sum(1)
    seen = norm2 > 0
    proj = torch.where(seen, (G @ g) / torch.where(seen, norm2, 1), 0)  # (v_k^T g)/||c_k||
    return lr * g + ((1 / lam - lr) * proj) @ G


# ----------------------------------------------------------------------------- the logit tap
def _tap_forward(ref: weakref.ref, module, args, out) -> None:
    """Forward hook on the tapped model. It holds the tap weakly, so a tap whose owner is
    dropped stops costing backward passes."""
    tap = ref()
    if tap is not None:
        tap.capture(module, args, out)


def _tap_grad(ref: weakref.ref, token: int, dz: torch.Tensor) -> None:
    """Tensor hook on captured logits; it keeps no strong reference to them."""
    tap = ref()
    if tap is not None:
        tap.on_grad(token, dz)


class ClassGradientTap:
    """The class gradients of each training batch, computed inside the loop's own backward
    (module docstring, steps 2-4): one implementation for the optimiser and for
    `lalr_core.methods.subspace_probe`.

    ``attach(model)`` puts a forward hook on the model. It keeps the ``(B, C)`` logits of every
    grad-enabled, training-mode forward and hooks their gradient. When the loop's backward
    reaches them, the labels are recovered from ``dL/dz`` (`labels_from_logit_grad`) and
    `class_gradients_from_logits` runs on the graph that is still alive; the owner's
    ``on_batch(z, params, grads, counts)`` receives the result. A gradient that is not a mean
    cross-entropy's is left alone, and ``refused`` says why (the owner decides whether that
    is an error).

    Args:
        on_batch: called with the logits, the parameters differentiated, their class
            gradients (one ``(C, *p.shape)`` tensor each) and the class counts.
        params: returns the parameters to differentiate, at each batch.
        strict: a training forward whose output is not ``(batch, classes)`` raises (with
            ``name`` in the message) instead of being skipped.
        name: who needs the logits, for that message.
    """

    def __init__(self, on_batch, params, *, strict: bool = False, name: str = "the tap"):
        self.on_batch, self.params, self.strict, self.name = on_batch, params, strict, name
        self.handle = None
        self.logits: torch.Tensor | None = None  # captured logits awaiting their backward
        self.token = 0                            # which capture the pending logits are
        self.busy = False                         # inside the owner's own passes
        self.refused: str | None = None           # why the last logit gradient was refused

    def attach(self, model: nn.Module) -> None:
        """Tap ``model``'s training forwards from now on (replaces any earlier model)."""
        self.detach()
        self.handle = model.register_forward_hook(functools.partial(_tap_forward,
                                                                    weakref.ref(self)))

    def detach(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    @contextlib.contextmanager
    def quiet(self):
        """The owner's own forwards and backward passes: not captured, not answered."""
        busy, self.busy = self.busy, True
        try:
            yield
        finally:
            self.busy = busy

    def capture(self, module: nn.Module, args, out) -> None:
        if self.busy or not torch.is_grad_enabled() or not module.training:
            return
        if not isinstance(out, torch.Tensor) or out.ndim != 2:
            if self.strict:
                raise ValueError(f"{self.name} needs a classifier whose output is (batch, "
                                 f"classes) logits, got "
                                 f"{getattr(out, 'shape', type(out).__name__)}")
            return
        if not out.requires_grad:
            return
        self.token += 1
        self.logits = out
        out.register_hook(functools.partial(_tap_grad, weakref.ref(self), self.token))

    def on_grad(self, token: int, dz: torch.Tensor) -> None:
        z = self.logits
        if self.busy or token != self.token or z is None:
            return  # our own VJPs re-enter this hook; or logits of an older forward
        try:
            y = labels_from_logit_grad(z, dz)
        except ValueError as err:  # another backward through these logits (a probe's VJP),
            self.refused = str(err)  # or a loss that is not a mean CE: wait for the training
            return                   # loss; the owner reports it if none came
        self.logits, self.refused = None, None
        params = self.params()
        with self.quiet():
            grads, counts = class_gradients_from_logits(z, y, params, retain_graph=True)
        self.on_batch(z, params, grads, counts)


# ----------------------------------------------------------------------------- the optimiser


class _ModelFinder:
    """Process-wide forward hooks that attach the optimiser to its model: the first outermost,
    grad-enabled, training-mode forward of a module holding all its parameters. They hold the
    optimiser weakly, and they remove themselves once the model is attached or the optimiser
    is gone."""

    def __init__(self, optimizer: QuasiNewtonClassSubspace):
        self.ref = weakref.ref(optimizer)
        self.depth = 0
        self.handles = [_module_hooks.register_module_forward_pre_hook(self.pre),
                        _module_hooks.register_module_forward_hook(self.post, always_call=True)]

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []

    def pre(self, module, args) -> None:
        self.depth += 1

    def post(self, module, args, out) -> None:
        self.depth -= 1
        if self.depth or not torch.is_grad_enabled() or not module.training:
            return
        opt = self.ref()
        if opt is None:
            self.remove()
            return
        mine = {id(p) for p in module.parameters()}
        if opt._held and opt._held <= mine:
            opt.attach(module)            # removes these hooks
            opt._tap.capture(module, args, out)  # it ran before the model hook existed


class QuasiNewtonClassSubspace(torch.optim.Optimizer):
    """Newton's method in the class-gradient subspace and SGD outside it (eq. 4.33).

    Each step:

    1. The class gradients ``c_k^B`` of the current batch and ``lambda_k^B`` (4.34/4.35,
       right-hand sides) come from the backward pass of the training loss. See the module
       docstring for how.
    2. The EMA ``m_k`` of ``c_k^B`` and the EMA ``r_k`` of ``(lambda_k^B)^2`` are updated with
       rate ``gamma``, for the classes present in the batch only.
    3. With ``v_k = m_k/||m_k||`` and ``lambda_k = sqrt(r_k/(1 - gamma^{t_k}))``, each
       parameter moves by ``d = eta g + sum_k (1/lambda_k - eta)(v_k^T g) v_k`` (`qn_direction`;
       the inner products run over all parameters). Here ``g = grad + weight_decay*theta``.
       The bias correction of ``c_k`` (4.34) scales ``m_k`` and so leaves ``v_k`` unchanged; it
       appears only in `class_gradient_estimates`.

    Choices where the source is open (digest sec. 2.3 and sec. 5):

    * *[choice]* A class absent from a batch keeps its state. Its bias correction counts only
      the batches that contained it (``t_k``), because ``c_k^B`` is 0/0 there and (4.34)
      would otherwise mix in undefined terms. With the source's batch of 1024 on CIFAR-10
      every class is present in practice, and the two readings then coincide.
    * *[choice]* Weight decay is coupled: ``wd*theta`` is added to ``g`` before (4.33), as in
      torch SGD. Fig. 4.6 trains "with the same hyper-parameters", weight decay 5e-4, and
      does not say how the decay was combined.
    * *[choice]* No momentum. Eq. 4.33 has none. Fig. 4.6 uses momentum 0, and appendix E.4's
      "basic momentum 0.9" is read as SGDM's. ``cfg.momentum`` is unused, as for ``sgd``.
    * Groups with different learning rates: each uses its own eta in (4.33), and the Newton
      part is shared.
    * ``lambda_k`` has no floor, as in the source. A saturated class (p_k(1 - p_k) = 0 in
      float) gives 1/0, and the loop records the divergence.

    ``stats`` counts ``steps`` and ``class_backward_passes``. The loop reports them as
    ``optimizer_stats``. The optimiser keeps C x P class-gradient state plus C x P for the
    batch in flight, the source's "C + 1 times as much space as SGD" (E.2) plus one more C.

    Args:
        params: parameters or param groups.
        lr: eta (> 0).
        gamma: EMA rate in (0, 1), `GAMMA` by default.
        weight_decay: coupled L2 (>= 0).
        model: attach now (else the model is found at its first training forward).

    Raises:
        ValueError: bad ``lr``, ``gamma`` or ``weight_decay`` (the message names it).
    """

    def __init__(self, params, lr: float, gamma: float = GAMMA, weight_decay: float = 0.0,
                 model: nn.Module | None = None):
        for name, value in (("lr", lr), ("gamma", gamma), ("weight_decay", weight_decay)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr!r}")
        if not 0 < gamma < 1:
            raise ValueError(f"gamma must lie in (0, 1) (EMA rate of eqs. 4.34/4.35), "
                             f"got {gamma!r}")
        if weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})
        self.gamma = float(gamma)
        self._held = {id(p) for g in self.param_groups for p in g["params"]}
        self._params = [p for g in self.param_groups for p in g["params"]]
        self._finder: _ModelFinder | None = None
        self._tap = ClassGradientTap(self._on_class_gradients,
                                     lambda: [p for p in self._params if p.requires_grad],
                                     strict=True, name="qn_class_subspace")
        self._batch: dict | None = None            # class gradients of the batch in flight
        self.stats = {"steps": 0, "class_backward_passes": 0}
        if model is not None:
            self.attach(model)
        else:
            self._finder = _ModelFinder(self)

    # -- the model -------------------------------------------------------------------------
    def attach(self, model: nn.Module) -> QuasiNewtonClassSubspace:
        """Capture ``model``'s training logits from now on (replaces any earlier model)."""
        mine = {id(p) for p in model.parameters()}
        if not self._held <= mine:
            raise ValueError("model does not hold all of the optimiser's parameters")
        self.detach()
        self._tap.attach(model)
        return self

    def detach(self) -> None:
        """Remove every hook this optimiser installed."""
        if self._finder is not None:
            self._finder.remove()
            self._finder = None
        self._tap.detach()

    def _on_class_gradients(self, z, params, grads, counts) -> None:
        self.stats["class_backward_passes"] += int((counts > 0).sum())
        dt = torch.promote_types(z.dtype, torch.float32)              # float64 stays float64
        probs = torch.softmax(z.detach().to(dt), dim=1)
        scale = (probs * (1 - probs)).mean(0)                         # (C,) whole batch
        norm2 = sum((g.reshape(g.shape[0], -1).to(dt) ** 2).sum(1) for g in grads)
        by_param = {id(p): g for p, g in zip(params, grads)}
        self._batch = {"grads": by_param, "counts": counts, "lam": scale * norm2}

    # -- state -----------------------------------------------------------------------------
    def _class_state(self, C: int, like: torch.Tensor) -> dict:
        st = self.state["class_subspace"]
        if not st:
            st["steps"] = torch.zeros(C, dtype=torch.long, device=like.device)
            st["lam_sq"] = torch.zeros(C, dtype=like.dtype, device=like.device)
        elif st["steps"].numel() != C:
            raise ValueError(f"the model's logits have {C} classes, the optimiser's state "
                             f"{st['steps'].numel()}")
        st["steps"] = st["steps"].to(like.device)
        st["lam_sq"] = st["lam_sq"].to(like.device)
        return st

    def eigenvalues(self) -> torch.Tensor | None:
        """The smoothed ``lambda_k`` (4.35). A class not seen yet has `LAMBDA_INIT`. Returns
        None before the first step."""
        st = self.state.get("class_subspace")
        if not st:
            return None
        t = st["steps"]
        seen = t > 0
        bias = 1 - self.gamma ** t.clamp(min=1).double()
        lam = torch.sqrt(st["lam_sq"].double() / bias).to(st["lam_sq"].dtype)
        return torch.where(seen, lam, torch.full_like(lam, LAMBDA_INIT))

    def class_gradient_estimates(self) -> torch.Tensor | None:
        """The smoothed class gradients ``c_k^(t)`` (4.34, bias-corrected) as a ``(C, P)``
        matrix over the optimiser's parameters. A class not seen yet has a zero row
        (`C_INIT`). Returns None before the first step."""
        st = self.state.get("class_subspace")
        if not st:
            return None
        t = st["steps"]
        bias = torch.where(t > 0, 1 - self.gamma ** t.double(), 1.0)
        rows = [self.state[p]["class_ema"].reshape(len(t), -1) if "class_ema" in self.state[p]
                else torch.full((len(t), p.numel()), C_INIT, dtype=p.dtype, device=p.device)
                for p in self._params]
        return torch.cat(rows, 1) / bias.to(rows[0]).unsqueeze(1)

    # -- the step --------------------------------------------------------------------------
    @torch.no_grad()
    def step(self, closure=None):
        """One step of eq. 4.33 with the class gradients of the batch just backpropagated.

        Raises:
            ValueError: the logits' gradient did not come from a mean cross-entropy (see
                `labels_from_logit_grad`), so the task does not fit this optimiser.
            RuntimeError: no class gradients arrived since the last step. This happens when no
                training forward of the model (grad enabled) was backpropagated, or when the
                optimiser could not find its model (call `attach`).
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        batch, self._batch, self._tap.logits = self._batch, None, None
        refused, self._tap.refused = self._tap.refused, None
        if batch is None:
            if refused is not None:
                raise ValueError(refused)
            raise RuntimeError(
                "qn_class_subspace received no class gradients for this step: backpropagate "
                "the mean cross-entropy of a training-mode forward of the attached model "
                "before step() (attach(model) if the optimiser did not find its model)")
        counts = batch["counts"]
        C = len(counts)
        st = self._class_state(C, batch["lam"])
        present = counts > 0
        gamma = self.gamma
        st["steps"] = st["steps"] + present.long()
        lam_b = batch["lam"].to(st["lam_sq"])
        st["lam_sq"] = torch.where(present, gamma * st["lam_sq"] + (1 - gamma) * lam_b ** 2,
                                   st["lam_sq"])
        one = torch.ones(C, dtype=torch.float64, device=counts.device)
        w_new = torch.where(present, (1 - gamma) * one, 0 * one)  # per-class EMA weights
        w_old = torch.where(present, gamma * one, one)
        lam = self.eigenvalues()

        # update the class EMAs, then the two global sums of (4.33): ||m_k||^2 and m_k^T g
        dots = torch.zeros(C, dtype=torch.float64, device=counts.device)
        norm2 = torch.zeros_like(dots)
        grads = {}
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "class_ema" not in state:
                    state["class_ema"] = torch.full((C, *p.shape), C_INIT, dtype=p.dtype,
                                                    device=p.device)
                m = state["class_ema"]
                cb = batch["grads"].get(id(p))
                shape = (C,) + (1,) * p.ndim
                if cb is not None:
                    m.mul_(w_old.to(m).view(shape)).add_(cb * w_new.to(m).view(shape))
                g = p.grad
                if g is not None and group["weight_decay"]:
                    g = g.add(p, alpha=group["weight_decay"])
                grads[p] = g
                mf = m.reshape(C, -1)                        # products in the param dtype,
                norm2 += (mf * mf).sum(1).double()           # sums over params in float64
                if g is not None:
                    dots += (mf @ g.reshape(-1).to(m.dtype)).double()
        seen = norm2 > 0
        proj = torch.where(seen, dots / torch.where(seen, norm2, 1.0), 0.0)  # (v^T g)/||m||
        inv_lam = 1 / lam.double().to(proj.device)
        for group in self.param_groups:
            eta = group["lr"]
            coef = (inv_lam - eta) * proj                                    # (C,)
            for p in group["params"]:
                m = self.state[p]["class_ema"]
                d = torch.tensordot(coef.to(m), m, dims=1)
                g = grads[p]
                if g is not None:
                    d.add_(g, alpha=eta)
                p.sub_(d)
        self.stats["steps"] += 1
        return loss

    def state_dict(self) -> dict:
        out = super().state_dict()
        out["stats"] = dict(self.stats)
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        stats = state_dict.pop("stats", {})
        super().load_state_dict(state_dict)
        if "class_subspace" in self.state:  # torch's load is shallow: own the class state
            self.state["class_subspace"] = {k: v.clone() for k, v in
                                            self.state["class_subspace"].items()}
        self.stats.update(stats)

    def __del__(self):
        try:
            self.detach()
        except Exception:  # noqa: BLE001, S110 - interpreter shutdown: modules may be gone
            pass


@OPTIMIZERS.register("qn_class_subspace")
def qn_class_subspace(params, cfg, gamma: float = GAMMA) -> QuasiNewtonClassSubspace:
    """`QuasiNewtonClassSubspace` from a run's ``lr`` and ``wd`` (coupled), with ``gamma``
    taken from ``cfg.optimizer_params`` (`GAMMA` by default). It finds its model at the loop's
    first training forward."""
    return QuasiNewtonClassSubspace(params, lr=cfg.lr, gamma=gamma, weight_decay=cfg.wd)


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
    The source prints ``N``; *[choice]* (digest sec. 5 item 9) it is read as N_k, so that the
    inner term is a mean. Classes with fewer than 2 examples are left out.

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
    (identical class gradients give 0.5). ``printed=False`` gives the mean over pairs (digest
    sec. 5 item 9: report both).

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
    coincide. So *[choice]* the caller passes the top-C eigenvectors e_1..e_C (digest sec. 2.5).
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
