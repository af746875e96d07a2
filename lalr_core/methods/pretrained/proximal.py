"""Regularised fine-tuning toward theta_0: the split (proximal) step, selective or always on.

Chapter 03 (the slides ``[KimKim-slides]``, presenting ``[RahimiAfzal2025]``; keys: REFERENCES.md:
the split optimisation step of their sec. 2, the selective regularisation of Lemma 3 and
Theorem 1). The objective is
``R~(theta) + (lambda / 2) ||theta - theta_0||^2``, minimised by a split step:

    theta~_t = inner step from theta_{t-1}          (GD on R~ in the theory; any optimiser here)
    theta_t  = theta~_t - eta lambda (theta~_t - theta_0)          if the pull applies,
    theta_t  = theta~_t                                            otherwise,

i.e. ``theta_t = theta_0 + (1 - lambda_t eta)(theta~_t - theta_0)`` with ``lambda_t`` in
``{0, lambda}``. ``mode="always"`` pulls at every step; ``mode="selective"`` (Theorem 1:
the pull keeps the squared loss non-increasing under gradient flow when the inner product is
>= 0) pulls only when ``c >= 0``, where the source's ``grad R~(theta_t) . (theta_t - theta_0)``
refers to the ``theta_t`` it is deciding (circular in discrete time), so:

* ``condition="previous_gradient"`` (our choice, the only one in a training run): ``c =
  g_t . (theta~_t - theta_0)`` with ``g_t`` the minibatch gradient already in ``p.grad`` (taken
  at ``theta_{t-1}``): no extra backward pass;
* ``condition="exact"`` (our variant, full-batch experiments only, `proximal_gd_step`): ``c =
  grad R~(theta~_t) . (theta~_t - theta_0)``, one extra gradient evaluation.

With AdamW and cross-entropy (the paper's practice, per the slides; how the pull combines with
AdamW is not said, so this is our choice) the pull is decoupled, after the
optimiser's step, with ``eta`` the group's current lr and ``eta lambda`` clamped to <= 1 (at
1 the step lands on theta_0; beyond it would overshoot to the other side). Chapter 03 pairs it
with AdamW ``weight_decay = 0``; that is the run's ``wd``, not checked here.

* `ProximalPull` (``"proximal_pull"``): the `MethodConfig` a `RunConfig` carries; its
  ``wrap_optimizer`` returns a `ProximalPullOptimizer` around any torch optimiser.
* `proximal_gd_step`: one full-batch GD split step on plain tensors (E-002-Th1, E-002-FA).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from lalr_core.core.loop.config import METHODS, MethodConfig
from lalr_core.core.loop.optim import OptimizerWrapper

__all__ = ["CONDITIONS", "GD_CONDITIONS", "MODES", "ProximalPull", "ProximalPullOptimizer",
           "ProximalStep", "proximal_gd_step", "pull_factor"]

MODES = ("selective", "always")
CONDITIONS = ("previous_gradient",)            # in a training run: no extra backward
GD_CONDITIONS = ("exact", "previous_gradient")  # full-batch GD: also the exact variant


def _check_lam(lam) -> float:
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam) \
            or lam < 0:
        raise ValueError(f"lam (the regularisation strength lambda) must be a finite number "
                         f">= 0, got {lam!r}")
    return float(lam)


def _check_choice(name: str, value, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {choices}")
    return value


def pull_factor(lr: float, lam: float) -> float:
    """``min(lr * lam, 1)``: the fraction of ``theta~ - theta_0`` the pull removes."""
    return min(float(lr) * lam, 1.0)


# ----------------------------------------------------------------------------- full-batch GD
class ProximalStep(NamedTuple):
    """One `proximal_gd_step`: the new parameters, whether the pull applied, and ``c`` (the
    condition's inner product; None where it was not computed)."""

    params: list[torch.Tensor] | torch.Tensor
    pulled: bool
    c: float | None


def _dot(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> float:
    return float(sum((x * y).sum() for x, y in zip(a, b)))


@torch.no_grad()
def proximal_gd_step(params, grads, theta0, lr: float, lam: float, mode: str = "selective",
                     condition: str = "exact",
                     grad_fn: Callable[[list[torch.Tensor]], Sequence[torch.Tensor]] | None = None
                     ) -> ProximalStep:
    """One split step of gradient descent on ``R~ + (lam / 2) ||theta - theta_0||^2``.

    ``theta~ = theta - lr * grad``; then ``theta~ - pull_factor(lr, lam) * (theta~ - theta_0)``
    if ``mode == "always"`` or ``c >= 0``, else exactly ``theta~`` (module docstring).

    Args:
        params: ``theta_{t-1}``: a tensor or a sequence of tensors (not changed).
        grads: ``grad R~(theta_{t-1})``, shaped like ``params``.
        theta0: ``theta_0``, shaped like ``params``.
        lr: the step ``eta > 0``.
        lam: ``lambda >= 0``.
        mode: ``"selective"`` or ``"always"``.
        condition: ``"exact"`` (``c = grad R~(theta~) . (theta~ - theta_0)``, needs
            ``grad_fn``) or ``"previous_gradient"`` (``c = grads . (theta~ - theta_0)``).
        grad_fn: ``theta -> grad R~(theta)`` on a list of tensors (only for ``"exact"``; with
            ``mode="always"`` it is optional and only fills ``c``).

    Returns:
        `ProximalStep` ``(params, pulled, c)``; ``params`` new tensors, a tensor if a tensor
        was given.

    Raises:
        ValueError: bad ``lr`` / ``lam`` / ``mode`` / ``condition``, ``"exact"`` selective
            without ``grad_fn``, or shapes that differ.
    """
    lam = _check_lam(lam)
    _check_choice("mode", mode, MODES)
    _check_choice("condition", condition, GD_CONDITIONS)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) \
            or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    single = isinstance(params, torch.Tensor)
    params, grads, theta0 = ([t] if single else list(t) for t in (params, grads, theta0))
    if not ([tuple(t.shape) for t in params] == [tuple(t.shape) for t in grads]
            == [tuple(t.shape) for t in theta0]):
        raise ValueError("params, grads and theta0 must hold tensors of the same shapes")
    if condition == "exact" and mode == "selective" and grad_fn is None:
        raise ValueError("condition 'exact' needs grad_fn (the gradient at theta~)")
    tilde = [p - lr * g for p, g in zip(params, grads)]
    diff = [t - t0 for t, t0 in zip(tilde, theta0)]
    c = None
    if condition == "previous_gradient":
        c = _dot(grads, diff)
    elif grad_fn is not None:
        with torch.enable_grad():  # grad_fn may use autograd
            c = _dot(list(grad_fn([t.clone() for t in tilde])), diff)
    pulled = lam > 0 and (mode == "always" or c >= 0)
    k = pull_factor(lr, lam)
    out = [t - k * d for t, d in zip(tilde, diff)] if pulled else tilde
    return ProximalStep(out[0] if single else out, pulled, c)


# ----------------------------------------------------------------------------- the wrapper
class ProximalPullOptimizer(OptimizerWrapper):
    """Wrap a torch optimiser so each ``step()`` is followed by the pull toward ``theta_0``.

    ``theta_0`` is the value of every parameter the optimiser holds with ``requires_grad``
    when the wrapper is built (the training loop builds it right after the model, so: the
    start of training) and is part of ``state_dict``, so a resumed run keeps it. At each
    step: the inner step gives ``theta~``; with ``mode="selective"``, ``c = sum_p <g_p,
    theta~_p - theta0_p>`` over the parameters that have a gradient (``g`` the ``p.grad`` the
    inner step used, copied before it so an inner optimiser that edits gradients does not
    change ``c``); if ``mode == "always"`` or ``c >= 0`` each such parameter becomes
    ``theta~ - pull_factor(group lr, lam) * (theta~ - theta0)``; otherwise it stays
    ``theta~`` exactly. Parameters without a gradient (frozen ones) are never touched. The
    decision stays on the device (no host sync per step).

    It follows the optimiser contract of the loop (``step``, ``zero_grad``, ``param_groups``,
    ``state``, ``state_dict``, ``load_state_dict``); any other attribute is the inner
    optimiser's. ``stats`` (the loop's ``optimizer_stats``) is the inner optimiser's plus
    ``proximal_steps`` and ``proximal_pulls`` (steps where the pull applied).

    Args:
        optimizer: any torch optimiser (or another wrapper).
        lam: ``lambda >= 0``; 0 gives exactly the inner optimiser's steps.
        mode: ``"selective"`` or ``"always"``.
        condition: ``"previous_gradient"`` (the discrete-time condition above).

    Raises:
        ValueError: bad ``lam`` / ``mode`` / ``condition``, or no trainable parameter.
    """

    def __init__(self, optimizer, *, lam: float, mode: str = "selective",
                 condition: str = "previous_gradient"):
        self.lam = _check_lam(lam)
        self.mode = _check_choice("mode", mode, MODES)
        self.condition = _check_choice("condition", condition, CONDITIONS)
        self.optimizer = optimizer
        self.params = [p for g in optimizer.param_groups for p in g["params"]
                       if p.requires_grad]
        if not self.params:
            raise ValueError("the optimiser holds no trainable parameter (requires_grad)")
        self._index = {id(p): i for i, p in enumerate(self.params)}
        self.theta0 = [p.detach().clone() for p in self.params]
        self._steps = 0
        self._pulls = torch.zeros((), dtype=torch.long, device=self.params[0].device)

    # torch.optim contract: param_groups, state, zero_grad from OptimizerWrapper -------------
    @property
    def stats(self) -> dict:
        return {**dict(getattr(self.optimizer, "stats", {})),
                "proximal_steps": self._steps, "proximal_pulls": int(self._pulls)}

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(),
                "proximal": {"theta0": list(self.theta0), "steps": self._steps,
                             "pulls": int(self._pulls)}}

    def load_state_dict(self, state: dict) -> None:
        """Restore the inner optimiser, ``theta_0`` and the counters.

        Raises:
            ValueError: not a `ProximalPullOptimizer` state, or its ``theta_0`` does not fit
                these parameters (count or shapes).
        """
        mine = state.get("proximal") if isinstance(state, dict) else None
        if mine is None:
            raise ValueError("not a ProximalPullOptimizer state: no 'proximal' entry")
        saved = mine["theta0"]
        if [tuple(t.shape) for t in saved] != [tuple(t.shape) for t in self.theta0]:
            raise ValueError(f"the state's theta_0 has {len(saved)} tensors of other shapes "
                             f"than this optimiser's {len(self.theta0)} trainable parameters")
        self.optimizer.load_state_dict(state["optimizer"])
        for t, s in zip(self.theta0, saved):
            t.copy_(s)  # to this run's device and dtype
        self._steps = int(mine["steps"])
        self._pulls.fill_(int(mine["pulls"]))

    def __getattr__(self, attr: str):
        if attr.startswith("__") or attr == "optimizer":  # copy / pickle probe these first
            raise AttributeError(attr)
        return getattr(self.optimizer, attr)

    def __repr__(self) -> str:
        return (f"ProximalPullOptimizer({type(self.optimizer).__name__}, lam={self.lam:g}, "
                f"mode={self.mode!r}, tensors={len(self.params)})")

    # the step ------------------------------------------------------------------------------
    @torch.no_grad()
    def step(self, closure=None):
        """The inner step, then the pull (class docstring)."""
        loss = None
        if closure is not None:  # evaluate first, so the gradients we read are the step's
            with torch.enable_grad():
                loss = closure()
        live = [p for p in self.params if p.grad is not None]
        pull = self.lam > 0 and bool(live)
        selective = pull and self.mode == "selective"
        grads = [p.grad.clone() for p in live] if selective else None
        self.optimizer.step()
        self._steps += 1
        if not pull:
            return loss
        theta0 = [self.theta0[self._index[id(p)]] for p in live]
        apply = None
        if selective:
            dev = live[0].device
            dt = torch.promote_types(live[0].dtype, torch.float32)  # bf16 sums in float32
            c = sum((g.to(dt) * (p.to(dt) - t0.to(dt))).sum().to(dev)
                    for g, p, t0 in zip(grads, live, theta0))
            apply = c >= 0  # a 0-dim bool tensor: decided on the device
        pulled = {id(p) for p in live}
        for group in self.param_groups:
            k = pull_factor(group["lr"], self.lam)
            for p in group["params"]:
                if id(p) not in pulled:
                    continue
                t0 = self.theta0[self._index[id(p)]]
                new = torch.lerp(p, t0, k)  # theta~ + k (theta0 - theta~)
                p.copy_(new if apply is None else torch.where(apply, new, p))
        self._pulls += 1 if apply is None else apply.long()
        return loss


# ----------------------------------------------------------------------------- in a RunConfig
@METHODS.register("proximal_pull")
@dataclass(frozen=True)
class ProximalPull(MethodConfig):
    """A run's pull toward ``theta_0``: ``RunConfig(methods=(ProximalPull(lam=10.0),))``.

    Args:
        lam: ``lambda >= 0`` (the source's table: 0 ... 50); stored as a float, so ``10``
            and ``10.0`` are one cache key.
        mode: ``"selective"`` (Theorem 1, the source's) or ``"always"``.
        condition: ``"previous_gradient"`` (the exact variant needs an extra backward
            the loop does not do, see `proximal_gd_step`).

    Raises:
        ValueError: a negative or non-finite ``lam``, an unknown ``mode`` or ``condition``.
    """

    name = "proximal_pull"
    lam: float = 1.0
    mode: str = "selective"
    condition: str = "previous_gradient"

    def __post_init__(self):
        object.__setattr__(self, "lam", _check_lam(self.lam))
        _check_choice("mode", self.mode, MODES)
        _check_choice("condition", self.condition, CONDITIONS)

    def wrap_optimizer(self, optimizer, model) -> ProximalPullOptimizer:
        return ProximalPullOptimizer(optimizer, lam=self.lam, mode=self.mode,
                                     condition=self.condition)
