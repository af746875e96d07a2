"""Quasi-Newton's method in the class-gradient subspace (chapter 05).

Source: Mark Tuddenham, *Advancing differentiable program optimisation via novel first and
second-order metrics, and adaptive optimisation strategies*, PhD thesis, University of
Southampton, 2026 (`[Tuddenham2026]` in REFERENCES.md), sec. 4.3.3-4.3.6 and appendix E.3/E.4;
first published as Tuddenham, Prügel-Bennett and Hare, *Quasi-Newton's method in the class
gradient defined high-curvature subspace*, arXiv:2012.01938, 2020,
<https://arxiv.org/abs/2012.01938> (`[Tuddenham2020]`). Where the source leaves a choice open,
the comment marked *[choice]* says what this module does and why.

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
(`lalr_core.core.loop.train`). The loop runs ``loss = task.loss(model, batch)``, then
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

One module (over 400 lines) on purpose: the model finder, the tap and the step are one mechanism
(the five steps above), and much of the length is this explanation.
"""

from __future__ import annotations

import math
import weakref

import torch
from torch import nn
from torch.nn.modules import module as _module_hooks

from lalr_core.core.loop.config import OPTIMIZERS
from lalr_core.methods.class_subspace.gradients import ClassGradientTap

# ----------------------------------------------------------------------------- constants
# EMA rate of eqs. 4.34/4.35. Appendix E.4: "a gamma 0.9 for the quasi-Newton's method".
# Sec. 4.3.4 only says "close to one".
GAMMA = 0.9


# Start values, sec. 4.3.4: "We initialise c_k^(0) = 0 but lambda_k^(0) = 1 since we use
# 1/lambda_k in our update". While c_k = 0 the direction v_k is undefined, so class k adds
# nothing to (4.33) until it has been seen.
C_INIT = 0.0


LAMBDA_INIT = 1.0


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

    Choices where the source is open (sec. 4.3.4 and app. E.4 say nothing of them):

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
