"""Second-order toys for chapter 05b (our experiments E9, E10, E11, E12, E15).

Source: *Advanced Topics in Deep Learning*, lecture notes (author and date not given; no public
link known; `[ATDL-notes]` in REFERENCES.md), secs. 2.1-2.3, 3.1, 3.2 and appendices A2-A4,
after R. Grosse, *CSC2541: Neural Net Training Dynamics*, University of Toronto, 2021,
<https://www.cs.toronto.edu/~rgrosse/courses/csc2541_2021/>. The experiments need a few pieces
the library does not have; everything else comes from `curvature` (operators, dense matrices,
eigenpairs), `top_eigen` (power iteration) and `test_functions` (Rosenbrock, GD paths).

* E9: Newton, damped Newton ``-(H + lam I)^-1 g`` and Gauss-Newton on Rosenbrock written as least
  squares, ``r = (a - x, sqrt(b) (y - x^2))``, ``f = ||r||^2`` (the notes' sec. 2.3 names
  output-space descent on Rosenbrock without writing it out; these residuals are the usual
  least-squares form of Rosenbrock's function).
* E10: ``||H - G||_F / ||H||_F`` of a small MLP, with ``H`` from `curvature.dense_hessian` and
  ``G`` the densified GGN operator of `curvature.curvature_operator`.
* E11: natural gradient with the true Fisher ``E[p (1 - p) x x^T]`` (+ damping) against GD and
  the empirical-Fisher NG on logistic regression (numpy, float64).
* E12: the damping path ``-(H + lam I)^-1 g`` and the toy saddle ``x^2 - y^2 + y^4 / 4`` (Morse
  index 1 at the origin, minima at ``(0, +-sqrt 2)``): Newton, GD and saddle-free ``-|H|^-1 g``
  (Dauphin et al., *Identifying and attacking the saddle point problem in high-dimensional
  non-convex optimization*, NeurIPS 2014, <https://arxiv.org/abs/1406.2572>).
* E15: a small MLP trained with a small or a large batch, and ``lambda_max`` of its training-loss
  Hessian by `top_eigen.power_iteration` on the curvlinops Hessian operator.

Conventions: every second-order step is ``x <- x + step`` with the full step (no line search);
iteration counts are the first ``t`` at which ``f(x_t) < tol`` (``None``: not within the budget).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from lalr_core.methods.curvature import operators as cv
from lalr_core.methods.curvature import top_eigen
from lalr_core.methods.curvature.test_functions import rosenbrock, rosenbrock_grad

ROSENBROCK_START = (-1.2, 1.0)   # the usual start of Rosenbrock tests, across the valley
TOL = 1e-10                      # "converged": f below this (f = 0 at the minimum)


# ----------------------------------------------------------------------------- generic steps
def damped_step(H, g, lam: float = 0.0) -> np.ndarray:
    """``-(H + lam I)^-1 g`` (notes eq. 2.1.4 with ``G = I``); ``lam = 0`` is Newton's step."""
    H, g = np.asarray(H, dtype=np.float64), np.asarray(g, dtype=np.float64)
    return -np.linalg.solve(H + lam * np.eye(len(g)), g)


def saddle_free_step(H, g) -> np.ndarray:
    """``-|H|^-1 g`` (Dauphin et al. 2014): Newton with the absolute values of H's eigenvalues."""
    w, V = np.linalg.eigh(np.asarray(H, dtype=np.float64))
    return -V @ ((V.T @ np.asarray(g, dtype=np.float64)) / np.abs(w))


def morse_index(H) -> int:
    """Number of negative eigenvalues of the symmetric ``H`` (the Morse index; notes app. A4)."""
    return int((np.linalg.eigvalsh(np.asarray(H, dtype=np.float64)) < 0).sum())


def first_below(values, tol: float) -> int | None:
    """The first index ``t`` with ``values[t] < tol`` (None if never)."""
    hit = np.flatnonzero(np.asarray(values) < tol)
    return int(hit[0]) if hit.size else None


@dataclass(frozen=True)
class Path:
    """Iterates ``(T + 1, n)`` with their ``f`` values and the count to the tolerance."""

    points: np.ndarray
    f: np.ndarray
    iters: int | None


def second_order_path(f: Callable, grad: Callable, hess: Callable, x0, *, lam: float = 0.0,
                      mode: str = "damped", steps: int = 200, tol: float = TOL,
                      lr: float = 1.0) -> Path:
    """Iterate ``x <- x + lr * step`` with ``step`` the damped Newton (``mode="damped"``,
    ``lam = 0``: Newton) or saddle-free (``mode="saddle_free"``) step; stops at ``f < tol``."""
    if mode not in ("damped", "saddle_free"):
        raise ValueError(f"mode must be 'damped' or 'saddle_free', got {mode!r}")
    x = np.asarray(x0, dtype=np.float64).copy()
    pts, fs = [x.copy()], [float(f(x))]
    for _ in range(steps):
        if fs[-1] < tol or not np.isfinite(fs[-1]):
            break
        H, g = hess(x), grad(x)
        x = x + lr * (damped_step(H, g, lam) if mode == "damped" else saddle_free_step(H, g))
        pts.append(x.copy())
        fs.append(float(f(x)))
    fs = np.array(fs)
    return Path(np.array(pts), fs, first_below(fs, tol))


# ----------------------------------------------------------------------------- E9: Rosenbrock
def rosen_f(p) -> float:
    return float(rosenbrock(torch.as_tensor(np.asarray(p, dtype=np.float64))))


def rosen_grad(p) -> np.ndarray:
    return rosenbrock_grad(torch.as_tensor(np.asarray(p, dtype=np.float64))).numpy()


def rosen_hess(p, a: float = 1.0, b: float = 100.0) -> np.ndarray:
    """Hessian of ``(a - x)^2 + b (y - x^2)^2`` (``a`` does not enter it)."""
    x, y = float(p[0]), float(p[1])
    return np.array([[2 - 4 * b * y + 12 * b * x * x, -4 * b * x], [-4 * b * x, 2 * b]])


def rosen_residuals(p, a: float = 1.0, b: float = 100.0) -> np.ndarray:
    """``r = (a - x, sqrt(b) (y - x^2))`` with ``||r||^2`` the Rosenbrock function."""
    x, y = float(p[0]), float(p[1])
    return np.array([a - x, np.sqrt(b) * (y - x * x)])


def rosen_residual_jacobian(p, b: float = 100.0) -> np.ndarray:
    x = float(p[0])
    return np.array([[-1.0, 0.0], [-2 * np.sqrt(b) * x, np.sqrt(b)]])


def gauss_newton_path(residuals: Callable, jacobian: Callable, x0, *, steps: int = 100,
                      tol: float = TOL) -> Path:
    """Gauss-Newton ``x <- x - (J^T J)^-1 J^T r``, the pullback of output-space GD on
    ``||z||^2`` (notes sec. 2.3); ``f = ||r||^2``."""
    x = np.asarray(x0, dtype=np.float64).copy()
    r = residuals(x)
    pts, fs = [x.copy()], [float(r @ r)]
    for _ in range(steps):
        if fs[-1] < tol:
            break
        J = jacobian(x)
        x = x - np.linalg.lstsq(J, r, rcond=None)[0]
        r = residuals(x)
        pts.append(x.copy())
        fs.append(float(r @ r))
    fs = np.array(fs)
    return Path(np.array(pts), fs, first_below(fs, tol))


def gd_path(f: Callable, grad: Callable, x0, *, lr: float, steps: int,
            tol: float = TOL) -> Path:
    """Plain gradient descent (numpy; the chapter's torch SGDM is `test_functions.sgdm_path`)."""
    x = np.asarray(x0, dtype=np.float64).copy()
    pts = np.empty((steps + 1, x.size))
    fs = np.empty(steps + 1)
    pts[0], fs[0] = x, f(x)
    T = steps
    for t in range(1, steps + 1):
        x = x - lr * grad(x)
        pts[t], fs[t] = x, f(x)
        if fs[t] < tol or not np.isfinite(fs[t]):
            T = t
            break
    return Path(pts[:T + 1], fs[:T + 1], first_below(fs[:T + 1], tol))


def rosen_f_np(p, a: float = 1.0, b: float = 100.0) -> float:
    """Rosenbrock in plain numpy (the long GD runs; equals `test_functions.rosenbrock`)."""
    return float((a - p[0]) ** 2 + b * (p[1] - p[0] ** 2) ** 2)


def rosen_grad_np(p, a: float = 1.0, b: float = 100.0) -> np.ndarray:
    r = p[1] - p[0] ** 2
    return np.array([-2 * (a - p[0]) - 4 * b * p[0] * r, 2 * b * r])


# ----------------------------------------------------------------------------- E10: GGN vs H
def mlp(widths=(2, 16, 16, 1), act: str = "tanh", seed: int = 0) -> nn.Sequential:
    """A float64 MLP with ``act`` ("tanh" or "relu") between its linear layers, initialised
    from ``seed`` (the global torch RNG is left as it was)."""
    Act = {"tanh": nn.Tanh, "relu": nn.ReLU}[act]
    layers: list[nn.Module] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for i, (a, b) in enumerate(pairwise(widths)):
            layers.append(nn.Linear(a, b))
            if i < len(widths) - 2:
                layers.append(Act())
    return nn.Sequential(*layers).double()


def regression_data(n: int = 32, seed: int = 0, noise: float = 0.0):
    """``X ~ N(0, I_2)``, ``y = sin(x1) + 0.5 x2^2 / 2 (+ noise)``, float64, y of shape (n, 1)."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 2, generator=g, dtype=torch.float64)
    y = torch.sin(X[:, :1]) + 0.25 * X[:, 1:] ** 2
    return X, y + noise * torch.randn(n, 1, generator=g, dtype=torch.float64)


def hessian_and_ggn(model: nn.Module, X, y, loss_fn: nn.Module | None = None):
    """Dense ``(H, G)`` of the loss over ``(X, y)``: ``H`` by `curvature.dense_hessian`
    (torch.func, ~100x faster here than densifying the curvlinops Hessian operator column by
    column; the tests check they agree), ``G`` by densifying `curvature.curvature_operator`'s
    GGN."""
    loss_fn = loss_fn or nn.MSELoss()
    data = [(X, y)]
    H = cv.dense_hessian(model, loss_fn, X, y)
    G = cv.dense_matrix(cv.curvature_operator(model, loss_fn, data, "ggn",
                                              check_deterministic=False))
    return 0.5 * (H + H.T), 0.5 * (G + G.T)


def relative_difference(H: torch.Tensor, G: torch.Tensor) -> float:
    """``||H - G||_F / ||H||_F``."""
    return float(torch.linalg.norm(H - G) / torch.linalg.norm(H))


def ggn_vs_hessian_along_training(act: str = "tanh", *, n: int = 32, steps: int = 1500,
                                  checkpoints=(0, 30, 100, 300, 700, 1500), lr: float = 1e-2,
                                  seed: int = 0, widths=(2, 16, 16, 1)) -> dict:
    """Train an MLP by full-batch Adam on `regression_data`; at each checkpoint record the
    loss, ``||H - G||_F / ||H||_F`` and the extreme eigenvalues of ``H`` and ``G``."""
    X, y = regression_data(n, seed)
    model = mlp(widths, act, seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    rec = {k: [] for k in ("step", "loss", "rel", "h_min", "h_max", "g_min", "g_max")}
    eig = {}
    for t in range(steps + 1):
        if t in checkpoints:
            H, G = hessian_and_ggn(model, X, y, loss_fn)
            eh, eg = torch.linalg.eigvalsh(H), torch.linalg.eigvalsh(G)
            with torch.no_grad():
                rec["loss"].append(float(loss_fn(model(X), y)))
            rec["step"].append(t)
            rec["rel"].append(relative_difference(H, G))
            rec["h_min"].append(float(eh[0]))
            rec["h_max"].append(float(eh[-1]))
            rec["g_min"].append(float(eg[0]))
            rec["g_max"].append(float(eg[-1]))
            eig[t] = (eh.numpy(), eg.numpy())
        if t == steps:
            break
        opt.zero_grad()
        loss_fn(model(X), y).backward()
        opt.step()
    return {**{k: np.array(v) for k, v in rec.items()}, "eig": eig,
            "params": sum(p.numel() for p in model.parameters())}


# ----------------------------------------------------------------------------- E11: NG
def logistic_data(n: int = 400, scales=(1.0, 10.0, 100.0), seed: int = 0):
    """Anisotropic features ``X = Z diag(scales)``, ``Z ~ N(0, I)``, labels ``~ Bernoulli(
    sigmoid(Z w*))`` with ``w* = (1.5, -1, 0.5, ...)`` (non-separable, finite optimum)."""
    rng = np.random.default_rng(seed)
    d = len(scales)
    Z = rng.standard_normal((n, d))
    w_true = np.array([1.5, -1.0, 0.5, 0.8, -0.3][:d] + [0.5] * max(0, d - 5))
    y = (rng.random(n) < 1 / (1 + np.exp(-Z @ w_true))).astype(np.float64)
    return Z * np.asarray(scales, dtype=np.float64), y


def logistic_loss(w, X, y) -> float:
    z = X @ w
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


def logistic_grad(w, X, y) -> np.ndarray:
    return X.T @ (1 / (1 + np.exp(-(X @ w))) - y) / len(y)


def true_fisher(w, X) -> np.ndarray:
    """``E_x[p (1 - p) x x^T]`` (labels drawn from the model; here also the Hessian)."""
    p = 1 / (1 + np.exp(-(X @ w)))
    return (X * (p * (1 - p))[:, None]).T @ X / len(X)


def empirical_fisher(w, X, y) -> np.ndarray:
    """``mean_i g_i g_i^T`` with the data labels."""
    gi = X * (1 / (1 + np.exp(-(X @ w))) - y)[:, None]
    return gi.T @ gi / len(X)


def fit_logistic(X, y, method: str, *, steps: int, lr: float = 1.0, damping: float = 0.0,
                 w0=None) -> tuple[np.ndarray, np.ndarray]:
    """``(losses (steps + 1,), final w)`` of ``"gd"``, ``"ng"`` (true Fisher + damping I) or
    ``"efng"`` (empirical Fisher + damping I), with the step ``lr`` times the direction."""
    if method not in ("gd", "ng", "efng"):
        raise ValueError(f"method must be 'gd', 'ng' or 'efng', got {method!r}")
    w = np.zeros(X.shape[1]) if w0 is None else np.asarray(w0, dtype=np.float64).copy()
    losses = np.empty(steps + 1)
    losses[0] = logistic_loss(w, X, y)
    for t in range(1, steps + 1):
        g = logistic_grad(w, X, y)
        if method == "gd":
            d = g
        else:
            F = true_fisher(w, X) if method == "ng" else empirical_fisher(w, X, y)
            d = np.linalg.solve(F + damping * np.eye(len(w)), g)
        w = w - lr * d
        losses[t] = logistic_loss(w, X, y)
    return losses, w


def gd_lr(X) -> float:
    """``1 / L`` with ``L = lambda_max(X^T X) / (4 n)``, the logistic loss's smoothness."""
    return 4 * len(X) / float(np.linalg.eigvalsh(X.T @ X)[-1])


# ----------------------------------------------------------------------------- E12: saddle
def saddle_f(p, c: float = 0.25) -> float:
    """``x^2 - y^2 + c y^4``: index-1 saddle at 0, minima at ``(0, +-1/sqrt(2c))``."""
    return float(p[0] ** 2 - p[1] ** 2 + c * p[1] ** 4)


def saddle_grad(p, c: float = 0.25) -> np.ndarray:
    return np.array([2 * p[0], -2 * p[1] + 4 * c * p[1] ** 3])


def saddle_hess(p, c: float = 0.25) -> np.ndarray:
    return np.array([[2.0, 0.0], [0.0, -2 + 12 * c * p[1] ** 2]])


def run_saddle(method: str, x0=(1.0, 1e-3), *, steps: int = 60, lr: float = 0.1,
               lam: float = 1.0) -> np.ndarray:
    """Iterates ``(steps + 1, 2)`` on `saddle_f` of ``"gd"`` (lr), ``"newton"``, ``"damped"``
    (``-(H + lam I)^-1 g``; for ``lam`` below 2 it is not positive definite near 0) or
    ``"saddle_free"``; no early stop, so all paths have the same length."""
    x = np.asarray(x0, dtype=np.float64).copy()
    pts = [x.copy()]
    for _ in range(steps):
        g, H = saddle_grad(x), saddle_hess(x)
        if method == "gd":
            x = x - lr * g
        elif method == "newton":
            x = x + damped_step(H, g)
        elif method == "damped":
            x = x + damped_step(H, g, lam)
        elif method == "saddle_free":
            x = x + saddle_free_step(H, g)
        else:
            raise ValueError(f"unknown method {method!r}")
        pts.append(x.copy())
    return np.array(pts)


# ----------------------------------------------------------------------------- E15: sharpness
def batch_size_sharpness(batch: int, *, steps: int, seed: int, n: int = 1024,
                         lr: float = 0.05, widths=(2, 32, 32, 1), n_test: int = 1024,
                         power_iters: int = 100) -> dict:
    """Train an MLP (tanh) by SGD with ``batch`` for ``steps`` steps (epochs reshuffled from
    ``seed``) on noisy `regression_data`, then ``lambda_max`` of the full training-loss Hessian
    by `top_eigen.power_iteration` (Rayleigh estimate, rtol 1e-4) on the curvlinops operator."""
    X, y = regression_data(n, seed=1000 + seed, noise=0.1)
    Xt, yt = regression_data(n_test, seed=5000 + seed, noise=0.1)
    model = mlp(widths, "tanh", seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    g = torch.Generator().manual_seed(seed)
    perm, pos = torch.randperm(n, generator=g), 0
    for _ in range(steps):
        if pos + batch > n:
            perm, pos = torch.randperm(n, generator=g), 0
        idx = perm[pos:pos + batch]
        pos += batch
        opt.zero_grad()
        loss_fn(model(X[idx]), y[idx]).backward()
        opt.step()
    op = cv.curvature_operator(model, loss_fn, [(X, y)], "hessian", check_deterministic=False)
    res = top_eigen.power_iteration(op, iters=power_iters, tol=None, rtol=1e-4, estimate="rayleigh",
                             seed=seed)
    with torch.no_grad():
        train, test = float(loss_fn(model(X), y)), float(loss_fn(model(Xt), yt))
    return {"batch": batch, "steps": steps, "seed": seed, "lambda_max": float(res.value),
            "power_iters": res.iters, "train_loss": train, "test_loss": test,
            "gap": test - train}
