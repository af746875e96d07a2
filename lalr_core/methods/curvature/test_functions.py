r"""Rastrigin's and Rosenbrock's functions and SGDM paths on them (chapter 05, fig 4.14).

Source: `[Tuddenham2026]` (M. Tuddenham, PhD thesis, University of Southampton, 2026; see
REFERENCES.md), sec. 4.4.3.1. Fig 4.14 contrasts an obstruction-dominated landscape (Rastrigin: a
nearly straight path, the total Euclidean distance ``D_t`` of eq. 3.1 rising steadily) with a
landscape dominated by one curved valley (Rosenbrock: a curved path, ``D_t`` fluctuating),
and reads fig 4.15's ``D_t`` of a ResNet against them. This module gives the functions, their
analytic gradients and the SGDM iterates; the chapter computes ``D_t`` with
`lalr_core.methods.trajectory.path_metrics` (row 0 of the path is ``theta_0``).

The source gives only the constants (Rastrigin ``a = 2``; Rosenbrock ``a = 1, b = 100``, fig
4.14's captions); the forms are the standard ones:

    Rastrigin   f(x) = a n + sum_i (x_i^2 - a cos(2 pi x_i)),   minimum f(0) = 0
    Rosenbrock  f(x, y) = (a - x)^2 + b (y - x^2)^2,             minimum f(a, a^2) = 0

It states no start point, learning rate, momentum, number of steps or dimension; the
``FIG_4_14`` settings are ours, tried on a first prototype run so that both paths reach their
minimum (2-D, deterministic gradients, heavy-ball momentum 0.9, the thesis's SGDM decay of app.
E.4).

SGDM is the thesis's (eqs. 2.25-2.26): ``v_{t+1} = gamma v_t + eta grad f(theta_t)``,
``theta_{t+1} = theta_t - v_{t+1}``, ``v_0 = 0`` -- PyTorch's SGD with momentum and dampening
0 at a constant learning rate. Eq. 2.26 prints ``theta_{t+1} = theta_t - v_t``; read
literally the first step would not move, so we take it as an index slip.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.trajectory import check_scalar

# ----------------------------------------------------------------------------- constants
RASTRIGIN_A = 2.0      # fig 4.14a caption: "Rastrigin's function, a = 2"
ROSENBROCK_A = 1.0     # fig 4.14b caption: "Rosenbrock's function, a = 1, b = 100"
ROSENBROCK_B = 100.0
MOMENTUM = 0.9         # app. E.4: "basic momentum ... with a decay parameter of 0.9"
# start, lr, steps: ours (the source gives none), chosen so that both paths reach the minimum
FIG_4_14 = {
    "rastrigin": {"start": (4.3, -4.6), "lr": 5e-3, "steps": 3000},
    "rosenbrock": {"start": (-1.5, -0.5), "lr": 2e-4, "steps": 20_000},
}


def _points(x, name: str = "x", last: int | None = None) -> torch.Tensor:
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.to(torch.float64)
    if x.ndim < 1 or x.shape[-1] < 1 or (last is not None and x.shape[-1] != last):
        want = f"(..., {last})" if last is not None else "(..., n)"
        raise ValueError(f"{name} must have shape {want}, got {tuple(x.shape)}")
    return x


# ----------------------------------------------------------------------------- functions
def rastrigin(x, a: float = RASTRIGIN_A) -> torch.Tensor:
    """``a n + sum_i (x_i^2 - a cos(2 pi x_i))`` over the last dim of ``x`` ``(..., n)``."""
    x = _points(x)
    a = check_scalar(a, "a", low=0.0, low_open=True)
    return a * x.shape[-1] + (x.square() - a * torch.cos(2 * math.pi * x)).sum(-1)


def rastrigin_grad(x, a: float = RASTRIGIN_A) -> torch.Tensor:
    """``2 x_i + 2 pi a sin(2 pi x_i)``, the gradient of `rastrigin`, shape of ``x``."""
    x = _points(x)
    a = check_scalar(a, "a", low=0.0, low_open=True)
    return 2 * x + 2 * math.pi * a * torch.sin(2 * math.pi * x)


def rosenbrock(x, a: float = ROSENBROCK_A, b: float = ROSENBROCK_B) -> torch.Tensor:
    """``(a - x)^2 + b (y - x^2)^2`` of points ``(..., 2)``."""
    x = _points(x, last=2)
    a, b = check_scalar(a, "a"), check_scalar(b, "b", low=0.0, low_open=True)
    u, v = x[..., 0], x[..., 1]
    return (a - u).square() + b * (v - u.square()).square()


def rosenbrock_grad(x, a: float = ROSENBROCK_A, b: float = ROSENBROCK_B) -> torch.Tensor:
    """``(-2(a - x) - 4 b x (y - x^2), 2 b (y - x^2))``, the gradient of `rosenbrock`."""
    x = _points(x, last=2)
    a, b = check_scalar(a, "a"), check_scalar(b, "b", low=0.0, low_open=True)
    u, v = x[..., 0], x[..., 1]
    r = v - u.square()
    return torch.stack([-2 * (a - u) - 4 * b * u * r, 2 * b * r], dim=-1)


FUNCTIONS: dict[str, tuple[Callable, Callable]] = {
    "rastrigin": (rastrigin, rastrigin_grad),
    "rosenbrock": (rosenbrock, rosenbrock_grad),
}


# ----------------------------------------------------------------------------- SGDM
def _autograd(f: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    def grad(x: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(f(x), x)
        return g
    return grad


@torch.no_grad()
def sgdm_path(f: Callable[[torch.Tensor], torch.Tensor] | None, x0, *, lr: float,
              steps: int, momentum: float = MOMENTUM,
              grad: Callable[[torch.Tensor], torch.Tensor] | None = None,
              noise: float = 0.0, seed: int = 0) -> torch.Tensor:
    """The iterates of SGDM (eqs. 2.25-2.26) on ``f`` from ``x0``: ``(steps + 1, n)`` float64.

    Row 0 is ``x0``, row ``t`` the point after ``t`` steps: the ``(T+1, n)`` path that
    `lalr_core.methods.trajectory.path_metrics` takes. A run that diverges keeps its
    non-finite rows (nothing is clipped or stopped).

    Args:
        f: scalar function of an ``(n,)`` tensor (differentiated by autograd when ``grad`` is
            ``None``); may be ``None`` when ``grad`` is given.
        x0: ``(n,)`` start point. lr: ``eta > 0``. steps: ``T >= 1``.
        momentum: ``gamma`` in ``[0, 1)`` (0 is plain gradient descent).
        grad: analytic gradient (e.g. `rastrigin_grad`), faster than autograd.
        noise: std of Gaussian noise added to each gradient (0: deterministic, as chapter 05
            draws fig 4.14); ``seed`` seeds it.

    Raises:
        ValueError: bad ``x0``, ``lr``, ``steps``, ``momentum`` or ``noise``, or neither ``f``
            nor ``grad``.
    """
    x = _points(x0, "x0").to(torch.float64).clone()
    if x.ndim != 1:
        raise ValueError(f"x0 must be 1-D, got shape {tuple(x.shape)}")
    lr = check_scalar(lr, "lr", low=0.0, low_open=True)
    gamma = check_scalar(momentum, "momentum", low=0.0, high=1.0, high_open=True)
    noise = check_scalar(noise, "noise", low=0.0)
    check_int(steps, "steps", 1)
    if grad is None:
        if f is None:
            raise ValueError("give f or grad")
        grad = _autograd(f)
    gen = torch.Generator().manual_seed(int(seed))
    path = torch.empty(int(steps) + 1, x.numel(), dtype=torch.float64)
    path[0] = x
    v = torch.zeros_like(x)
    for t in range(1, int(steps) + 1):
        g = grad(x)
        if noise > 0:
            g = g + noise * torch.randn(x.shape, generator=gen, dtype=torch.float64)
        v = gamma * v + lr * g
        x = x - v
        path[t] = x
    return path


def fig_4_14_path(name: str, **overrides) -> torch.Tensor:
    """SGDM path on ``name`` (``"rastrigin"`` or ``"rosenbrock"``) with ``FIG_4_14``'s
    settings (any of ``start``, ``lr``, ``steps``, ``momentum``, ``noise``, ``seed`` can be
    overridden); analytic gradients at the source's constants."""
    if name not in FIG_4_14:
        raise ValueError(f"name must be one of {tuple(FIG_4_14)}, got {name!r}")
    cfg = {**FIG_4_14[name], "momentum": MOMENTUM, **overrides}
    unknown = set(cfg) - {"start", "lr", "steps", "momentum", "noise", "seed"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)}")
    f, g = FUNCTIONS[name]
    start = cfg.pop("start")
    return sgdm_path(f, torch.tensor(start, dtype=torch.float64), grad=g, **cfg)
