"""Class gradients of a classifier's logits (thesis eqs. 4.25, 4.34), from a batch or captured
inside the training loop's own backward pass (`ClassGradientTap`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

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
        ValueError: ``Y`` is finite but not one-hot within `LABEL_ATOL` (or 8 unit roundoffs
            of ``dz.dtype``), so the loss was not a mean cross-entropy on hard labels. Examples
            are a sum reduction, label smoothing, mixup, or a penalty on the logits. (Non-finite
            logits or gradients, a diverged run, are let through: the loop records divergence.)
    """
    _check_logits(z)
    if dz.shape != z.shape:
        raise ValueError(f"dL/dz has shape {tuple(dz.shape)}, the logits {tuple(z.shape)}")
    p = torch.softmax(z.detach().float(), dim=1)
    Y = p - z.shape[0] * dz.detach().float()
    y = Y.argmax(1)
    tol = max(LABEL_ATOL, 8 * torch.finfo(dz.dtype).eps)
    err = (Y - F.one_hot(y, z.shape[1]).float()).abs().max()
    # non-finite logits: the run has diverged, which the training loop records from its loss
    # (a result, e.g. the source's diverging lr), so this step must not fail on the check
    if not err <= tol and bool(torch.isfinite(Y).all()):
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
    `lalr_core.methods.class_subspace.probe`.

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
