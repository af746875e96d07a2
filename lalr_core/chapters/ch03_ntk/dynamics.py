"""Full-batch gradient descent on the squared loss of the theory (seed 002, Theorems 1-5 and the
toy slides): the nonlinear model, its linearisation at theta_0, and what the theorems bound.

The theorems are about gradient flow on ``R~(theta) = ||f_theta(x*) - y*||^2`` (a sum) with the
pull toward theta_0 (Lemma 3). Here it is discretised as the split step of the slides
(`lalr_core.methods.pretrained.proximal.proximal_gd_step`) with a small step ``lr``; ``t = step * lr`` is
the flow's time. A problem is a function ``f`` from one flat parameter vector to the ``n``
outputs (the logit margins of a LoRA TinyTF on ``n`` training sequences; or the
two-parameter toy ``theta_2 tanh(theta_1 x)``); the linearised problem replaces ``f`` by
``f(theta_0) + J_0 (theta - theta_0)`` with the explicit Jacobian ``J_0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, jacrev

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.pretrained.proximal import proximal_gd_step


@dataclass
class Problem:
    """``f``: flat parameters (P,) -> outputs (n,); ``theta0`` (P,); targets ``y`` (n,)."""

    f: Callable[[torch.Tensor], torch.Tensor]
    theta0: torch.Tensor
    y: torch.Tensor

    def loss(self, theta: torch.Tensor) -> torch.Tensor:
        """``R~(theta) = ||f(theta) - y||^2`` (the sum loss of the theory)."""
        return ((self.f(theta) - self.y) ** 2).sum()

    def loss_and_grad(self, theta: torch.Tensor) -> tuple[float, torch.Tensor]:
        """``R~(theta)`` and its gradient from one forward and one backward pass."""
        theta = theta.detach().requires_grad_(True)
        loss = self.loss(theta)
        return float(loss.detach()), torch.autograd.grad(loss, theta)[0]

    def grad(self, theta: torch.Tensor) -> torch.Tensor:
        return self.loss_and_grad(theta)[1]

    def jacobian(self, theta: torch.Tensor) -> torch.Tensor:
        """``J(theta)``, (n, P)."""
        return jacrev(self.f)(theta.detach())

    def linearised(self) -> Problem:
        """The problem of ``f(theta_0) + J_0 (theta - theta_0)`` (same theta_0 and y)."""
        f0, J0, theta0 = self.f(self.theta0).detach(), self.jacobian(self.theta0), self.theta0
        return Problem(lambda th: f0 + J0 @ (th - theta0), theta0, self.y)


def margin_problem(model: nn.Module, tokens: torch.Tensor, y: torch.Tensor,
                   params=None) -> Problem:
    """The logit margin ``z_1 - z_0`` of ``model`` on ``tokens`` as a function of its trainable
    parameters (flattened, float64; eval mode), with targets ``y`` in {-1, +1}."""
    names = ntk.ntk_params(model, params)
    model = model.eval().double()
    state = {k: v.detach() for k, v in {**dict(model.named_parameters()),
                                        **dict(model.named_buffers())}.items()}
    shapes = [state[n].shape for n in names]
    sizes = [int(np.prod(s)) for s in shapes]
    theta0 = torch.cat([state[n].reshape(-1) for n in names])

    def f(theta: torch.Tensor) -> torch.Tensor:
        parts = dict(zip(names, (p.reshape(s) for p, s in
                                 zip(torch.split(theta, sizes), shapes, strict=True))))
        logits = functional_call(model, {**state, **parts}, (tokens,))
        return logits[:, 1] - logits[:, 0]

    return Problem(f, theta0, y.double())


def toy_problem(x: torch.Tensor, y: torch.Tensor, theta0: tuple[float, float]) -> Problem:
    """Our two-parameter model ``f_theta(x) = theta_2 tanh(theta_1 x)`` for the slides'
    image-only "Additional Slides" (E-002-FA / FB)."""
    return Problem(lambda th: th[1] * torch.tanh(th[0] * x.double()),
                   torch.tensor(theta0, dtype=torch.float64), y.double())


@dataclass
class Flow:
    """One discretised flow: per logged step ``t`` (flow time), ``loss`` (R~), ``distance``
    (||theta - theta_0||), ``outputs`` (n,), ``thetas`` (P,) and whether the pull applied;
    ``increases``: steps whose loss rose by more than ``rtol`` relative."""

    t: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    outputs: np.ndarray
    thetas: np.ndarray
    pulled: np.ndarray
    increases: int


def gradient_flow(problem: Problem, lam: float, lr: float, steps: int, *,
                  mode: str = "selective", condition: str = "exact", log_every: int = 1,
                  rtol: float = 1e-9) -> Flow:
    """``steps`` split steps (``mode`` ``"none"`` = plain GD, ``"always"`` or
    ``"selective"``; `proximal_gd_step`), logging every ``log_every`` steps (and the last)."""
    if mode not in ("none", "always", "selective"):
        raise ValueError(f"mode must be 'none', 'always' or 'selective', got {mode!r}")
    if steps < 1 or log_every < 1:
        raise ValueError(f"steps and log_every must be >= 1, got {steps}, {log_every}")
    theta, theta0 = problem.theta0.clone(), problem.theta0
    rows, increases = [], 0
    prev, g = problem.loss_and_grad(theta)

    def log(step, pulled):
        with torch.no_grad():
            out = problem.f(theta)
        rows.append((step * lr, float(((out - problem.y) ** 2).sum()),
                     float(torch.linalg.vector_norm(theta - theta0)), out.numpy().copy(),
                     theta.numpy().copy(), pulled))

    log(0, False)
    for step in range(1, steps + 1):
        pulled = False
        if mode == "none":
            theta = theta - lr * g
        else:
            res = proximal_gd_step(theta, g, theta0, lr, lam, mode=mode, condition=condition,
                                   grad_fn=lambda ps: [problem.grad(ps[0])])
            theta, pulled = res.params, bool(res.pulled)
        loss, g = problem.loss_and_grad(theta)     # this step's loss, the next step's gradient
        increases += loss > prev * (1 + rtol)
        prev = loss
        if step % log_every == 0 or step == steps:
            log(step, pulled)
    t, L, D, out, th, pulled = (np.array(c) for c in zip(*rows))
    return Flow(t, L, D, np.stack(out), np.stack(th), pulled.astype(bool), int(increases))


def stable_lr(problem: Problem, lam: float, fraction: float = 0.5,
              default: float = 1e-3) -> float:
    """Our step for the flow (E-002-Th1): ``default``, or
    ``fraction / (2 lambda_max(K_0) + lam)`` with ``K_0 = J_0 J_0^T`` where that is smaller
    (the discrete step must be stable for the continuous-time statements to apply)."""
    J0 = problem.jacobian(problem.theta0)
    lam_max = float(torch.linalg.eigvalsh(J0 @ J0.T)[-1])
    return min(default, fraction / (2 * lam_max + lam))


def lipschitz_estimates(problem: Problem, thetas: np.ndarray) -> tuple[float, float]:
    """``Lip(f)``: the largest ``||J(theta)||_2`` over the visited ``thetas``; ``Lip(grad f)``:
    the largest ``||J(theta) - J(theta_0)||_2 / ||theta - theta_0||`` (E-002-Th2, Th34)."""
    J0 = problem.jacobian(problem.theta0)
    lip_f, lip_g = float(torch.linalg.matrix_norm(J0, 2)), 0.0
    for th in thetas:
        th = torch.as_tensor(th)
        J = problem.jacobian(th)
        lip_f = max(lip_f, float(torch.linalg.matrix_norm(J, 2)))
        d = float(torch.linalg.vector_norm(th - problem.theta0))
        if d > 0:
            lip_g = max(lip_g, float(torch.linalg.matrix_norm(J - J0, 2)) / d)
    return lip_f, lip_g


def flow_problem(cfg: RunConfig, n: int) -> Problem:
    """The margin problem of run ``cfg`` at its theta_0 on its first ``n`` training examples,
    targets +-1 (E-002-Th1)."""
    X, y = cfg.task.load(cfg, torch.device("cpu")).split("train")
    return margin_problem(initial_model(cfg), X[:n], 2.0 * y[:n] - 1)


def flow_unit(params: dict) -> dict:
    """One cached unit (`lalr_core.core.runs.sweep`): the flow of ``params`` = ``{"run": the
    fine-tuning's key, "n", "lam", "mode", "lr", "steps", "log_every", "linearised"}``, with
    the Lipschitz estimates over its logged parameters (nonlinear flows)."""
    problem = flow_problem(RunConfig(**params["run"]), params["n"])
    if params["linearised"]:
        problem = problem.linearised()
    flow = gradient_flow(problem, params["lam"], params["lr"], params["steps"],
                         mode=params["mode"], log_every=params["log_every"])
    out = dict(vars(flow))
    if not params["linearised"]:
        out["lip_f"], out["lip_grad_f"] = lipschitz_estimates(problem, flow.thetas)
    out["y"], out["f0"] = problem.y.numpy(), problem.f(problem.theta0).detach().numpy()
    return out


flow_unit.code_modules = lambda params: [  # type: ignore[attr-defined]
    "lalr_core.methods.ntk.empirical", "lalr_core.methods.pretrained.proximal", "lalr_core.methods.pretrained.lora",
    "lalr_core.methods.pretrained.transforms", "lalr_core.methods.pretrained.text.tasks"]
