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

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.ntk.theory import kernel_ridge
from lalr_core.methods.pretrained.proximal import proximal_gd_step


@dataclass
class Problem:
    """``f``: flat parameters (P,) -> outputs (n,); ``theta0`` (P,); targets ``y`` (n,)."""

    f: Callable[[torch.Tensor], torch.Tensor]
    theta0: torch.Tensor
    y: torch.Tensor
    jac: Callable[[torch.Tensor], torch.Tensor] | None = None  # theta -> J (n, P), if cheaper

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
        """``J(theta)``, (n, P) (``jac`` where given: one per-sample pass, not n)."""
        if self.jac is not None:
            return self.jac(theta.detach())
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

    def f(theta: torch.Tensor, x: torch.Tensor = tokens) -> torch.Tensor:
        parts = dict(zip(names, (p.reshape(s) for p, s in
                                 zip(torch.split(theta, sizes), shapes, strict=True))))
        logits = functional_call(model, {**state, **parts}, (x,))
        return logits[:, 1] - logits[:, 0]

    per_sample = vmap(jacrev(lambda th, x: f(th, x[None])[0]), in_dims=(None, 0))
    return Problem(f, theta0, y.double(), jac=lambda th: per_sample(th, tokens))


def toy_problem(x: torch.Tensor, y: torch.Tensor, theta0: tuple[float, float]) -> Problem:
    """Our two-parameter model ``f_theta(x) = theta_2 tanh(theta_1 x)`` for the slides'
    image-only "Additional Slides" (E-002-FA / FB)."""
    return Problem(lambda th: th[1] * torch.tanh(th[0] * x.double()),
                   torch.tensor(theta0, dtype=torch.float64), y.double())


@dataclass
class Flow:
    """One discretised flow: per logged step ``t`` (flow time), ``loss`` (R~), ``distance``
    (||theta - theta_0||), ``outputs`` (n,), ``thetas`` (P,) and whether the pull applied;
    ``increases``: steps whose loss rose by more than ``rtol`` relative; ``pulls``: steps
    (logged or not) where the pull applied."""

    t: np.ndarray
    loss: np.ndarray
    distance: np.ndarray
    outputs: np.ndarray
    thetas: np.ndarray
    pulled: np.ndarray
    increases: int
    pulls: int = 0


def gradient_flow(problem: Problem, lam: float, lr: float, steps: int, *,
                  mode: str = "selective", condition: str = "exact", log_every: int = 1,
                  rtol: float = 1e-9, start: torch.Tensor | None = None) -> Flow:
    """``steps`` split steps (``mode`` ``"none"`` = plain GD, ``"always"`` or
    ``"selective"``; `proximal_gd_step`), logging every ``log_every`` steps (and the last).

    ``start``: where the flow starts (default ``theta_0``); the pull is always toward
    ``problem.theta0``. From ``theta_0`` itself, full-batch descent with a small step moves
    down the gradient, so ``theta~ - theta_0`` and the gradient point apart and the selective
    pull rarely applies; from a perturbed start (``perturbed_start``) it does."""
    if mode not in ("none", "always", "selective"):
        raise ValueError(f"mode must be 'none', 'always' or 'selective', got {mode!r}")
    if steps < 1 or log_every < 1:
        raise ValueError(f"steps and log_every must be >= 1, got {steps}, {log_every}")
    theta0 = problem.theta0
    if start is None:
        theta = theta0.clone()
    else:
        theta = torch.as_tensor(start, dtype=theta0.dtype).detach().clone()
        if theta.shape != theta0.shape:
            raise ValueError(f"start must have theta_0's shape {tuple(theta0.shape)}, got "
                             f"{tuple(theta.shape)}")
    rows, increases, pulls = [], 0, 0
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
            pulls += pulled
        loss, g = problem.loss_and_grad(theta)     # this step's loss, the next step's gradient
        increases += loss > prev * (1 + rtol)
        prev = loss
        if step % log_every == 0 or step == steps:
            log(step, pulled)
    t, L, D, out, th, pulled = (np.array(c) for c in zip(*rows))
    return Flow(t, L, D, np.stack(out), np.stack(th), pulled.astype(bool), int(increases),
                int(pulls))


def perturbed_start(problem: Problem, radius: float) -> torch.Tensor:
    """A start uphill of the anchor, where the selective pull of Theorem 1 acts:
    ``theta_0 + r g / ||g||`` with ``g = grad R~(theta_0)`` and ``r`` the largest of ``radius,
    radius / 2, radius / 4, ...`` (at most 30 halvings) at which the loss still rises away from
    theta_0 (``grad R~(start) . (start - theta_0) > 0``; past a ridge it would fall again).
    There moving toward theta_0 lowers the loss, so the pull applies on the first steps; from
    theta_0 itself a small-step descent moves down the gradient and it rarely does. Our
    construction (E-002-Th1, E-002-FA).

    Raises:
        ValueError: ``radius <= 0``, or a zero gradient at theta_0 (no uphill direction).
    """
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius!r}")
    g = problem.grad(problem.theta0)
    norm = torch.linalg.vector_norm(g)
    if not norm > 0:
        raise ValueError("the gradient at theta_0 is zero: no uphill direction")
    r = float(radius)
    for _ in range(30):
        start = problem.theta0 + r * g / norm
        if float(problem.grad(start) @ (start - problem.theta0)) > 0:
            break
        r /= 2
    return start


@dataclass(frozen=True)
class Minimiser:
    """The minimiser of ``R~(theta) + (lam / 2) ||theta - theta_0||^2`` that
    `regularised_minimiser` found: ``theta`` (P,), its outputs ``f`` (n,), ``loss`` (R~ there), ``grad_ratio`` (the
    objective's gradient norm at the end over its norm at theta_0: the convergence achieved),
    ``iterations``."""

    theta: np.ndarray
    f: np.ndarray
    loss: float
    grad_ratio: float
    iterations: int


def regularised_minimiser(problem: Problem, lam: float, *, max_iter: int = 150,
                          tol: float = 5e-4) -> Minimiser:
    """Minimise the full-batch regularised objective ``R~(theta) + (lam/2)||theta - theta_0||^2``
    from ``theta_0`` by Levenberg-Marquardt (float64): the end point of the regularised flow,
    to compare with kernel ridge regression at convergence rather than after a fixed number
    of steps (Slide C; E-002-Th5's comparison).

    With ``mu = lam / 2``, ``r = f(theta) - y``, ``d = theta - theta_0`` and ``J`` the (n, P)
    Jacobian, the damped Gauss-Newton step solves ``(J^T J + (mu + nu) I) s = -(J^T r + mu d)``
    through the n x n system (Woodbury; n is small): ``s = -(b - J^T (J J^T + (mu + nu) I)^{-1}
    J b) / (mu + nu)``, ``b = J^T r + mu d``. A step that lowers the objective is taken and
    ``nu`` shrinks; otherwise ``nu`` grows. Stops when the objective's gradient norm is ``tol``
    times its norm at theta_0, or after ``max_iter`` Jacobians. For the linearised problem the
    first step lands on kernel ridge regression with ``sigma = lam / 2`` (tests)."""
    if not lam > 0:
        raise ValueError(f"lam must be > 0 (the objective needs the pull), got {lam!r}")
    mu, theta0 = 0.5 * lam, problem.theta0.detach()
    theta, nu = theta0.clone(), 0.0

    def objective(th):
        with torch.no_grad():
            return float(((problem.f(th) - problem.y) ** 2).sum()
                         + mu * ((th - theta0) ** 2).sum())

    value, g0, grad_norm, it = objective(theta), None, math.inf, 0
    for it in range(1, max_iter + 1):
        J = problem.jacobian(theta)
        with torch.no_grad():
            r = problem.f(theta) - problem.y
        b = J.T @ r + mu * (theta - theta0)           # half the objective's gradient
        grad_norm = 2 * float(torch.linalg.vector_norm(b))
        g0 = grad_norm if g0 is None else g0
        if grad_norm <= tol * g0:
            break
        K = J @ J.T
        eye = torch.eye(len(K), dtype=K.dtype)
        while True:
            damp = mu + nu
            step = -(b - J.T @ torch.linalg.solve(K + damp * eye, J @ b)) / damp
            cand = objective(theta + step)
            if cand < value:
                theta, value, nu = theta + step, cand, nu / 3
                break
            nu = max(4 * nu, 1e-3 * mu)
            if nu > 1e12 * mu:                          # no descent step left: converged
                break
        if nu > 1e12 * mu:
            break
    with torch.no_grad():
        f = problem.f(theta)
        loss = float(((f - problem.y) ** 2).sum())
    return Minimiser(theta.numpy().copy(), f.numpy().copy(), loss,
                     grad_norm / g0 if g0 else 0.0, it)


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


def flow_problem(cfg: RunConfig, n: int, offset: int = 0) -> Problem:
    """The margin problem of run ``cfg`` at its theta_0 on its training examples ``offset`` ..
    ``offset + n - 1``, targets +-1 (E-002-Th1; ``offset = n``: held-out inputs of the same
    split for the kernel-ridge comparison)."""
    X, y = cfg.task.load(cfg, torch.device("cpu")).split("train")
    return margin_problem(initial_model(cfg), X[offset:offset + n], 2.0 * y[offset:offset + n] - 1)


def krr_comparison(problem: Problem, held: Problem, lam: float) -> dict:
    """The regularised minimiser of ``problem`` at ``lam`` against kernel ridge regression with
    ``sigma = lam / 2`` (the linearised problem's exact minimiser), on the training inputs and
    on ``held`` (other inputs, same theta_0): the minimiser's outputs there (``f``, ``f_held``),
    kernel ridge's (``f_krr``, ``f_krr_held``: ``f_theta0 + K(., x*)(K + sigma I)^{-1}
    y_tilde``), theta_0's (``f0``, ``f0_held``), and the minimiser's convergence."""
    m = regularised_minimiser(problem, lam)
    J0, Jh = problem.jacobian(problem.theta0), held.jacobian(held.theta0)
    with torch.no_grad():
        f0, f0h = problem.f(problem.theta0), held.f(held.theta0)
        alpha = kernel_ridge(J0 @ J0.T, problem.y - f0, lam / 2).alpha
        f_held = held.f(torch.as_tensor(m.theta))
    return {**vars(m), "f0": f0.numpy(), "f_krr": (f0 + J0 @ (J0.T @ alpha)).numpy(),
            "f0_held": f0h.numpy(), "f_krr_held": (f0h + Jh @ (J0.T @ alpha)).numpy(),
            "f_held": f_held.numpy(), "y": problem.y.numpy()}


def flow_unit(params: dict) -> dict:
    """One cached unit (`lalr_core.core.runs.sweep`): the flow of ``params`` = ``{"run": the
    fine-tuning's key, "n", "lam", "mode", "lr", "steps", "log_every", "linearised"}``, with
    the Lipschitz estimates over its logged parameters (nonlinear flows from theta_0).
    Optional: ``"perturb"`` (a radius > 0: start at `perturbed_start`, no Lipschitz
    estimates); ``"minimise"`` (True: instead of a flow, the `regularised_minimiser`
    of the objective at ``lam``)."""
    cfg = RunConfig(**params["run"])
    problem = flow_problem(cfg, params["n"])
    if params.get("minimise"):
        return krr_comparison(problem, flow_problem(cfg, params["n"], offset=params["n"]),
                              params["lam"])
    if params["linearised"]:
        problem = problem.linearised()
    radius = params.get("perturb", 0.0)
    start = perturbed_start(problem, radius) if radius else None
    flow = gradient_flow(problem, params["lam"], params["lr"], params["steps"],
                         mode=params["mode"], log_every=params["log_every"], start=start)
    out = dict(vars(flow))
    if not params["linearised"] and not radius:
        out["lip_f"], out["lip_grad_f"] = lipschitz_estimates(problem, flow.thetas)
    out["y"], out["f0"] = problem.y.numpy(), problem.f(problem.theta0).detach().numpy()
    return out


flow_unit.code_modules = lambda params: [  # type: ignore[attr-defined]
    "lalr_core.methods.ntk.empirical", "lalr_core.methods.ntk.theory",
    "lalr_core.methods.pretrained.proximal", "lalr_core.methods.pretrained.lora",
    "lalr_core.methods.pretrained.transforms", "lalr_core.methods.pretrained.text.tasks"]
