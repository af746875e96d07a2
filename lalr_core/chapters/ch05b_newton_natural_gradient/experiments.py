"""Chapter 05b's experiments E9-E12 and E15: each function runs one toy and returns the numbers
its check judges (the plots read the same results).

The toys are `lalr_core.methods.curvature.second_order_toys` (Newton, damped Newton,
Gauss-Newton, natural gradient, the saddle, the sharpness runs) and
`lalr_core.methods.curvature.test_functions` (Rosenbrock's function). Every second-order step is
the full step (no line search); an iteration count is the first ``t`` at which the tracked value
falls below the tolerance (``None``: not within the budget).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from scipy.special import log_ndtr, ndtr
from scipy.stats import norm, spearmanr

from lalr_core.methods.curvature import second_order_toys as toys
from lalr_core.methods.curvature import test_functions

# ----------------------------------------------------------------------------- E9: Rosenbrock
E9_GD_LR = 2e-3          # below 2 / lambda_max of the Hessian along the valley; converges
E9_DAMPING = (1.0, 10.0, 100.0)
# Iteration counts to f < 1e-10 from (-1.2, 1) that we expect of each method: the order of
# magnitude of a first run of these same methods (the notes give no numbers; sec. 2.3 says only
# that parameter-space GD "has difficulty" and output-space GD finds the minimum "easily").
E9_EXPECTED = {"GD (lr 2e-3)": 13_255, "Newton": 5, "Gauss–Newton": 2, "damped λ=1": 40}
E9_FACTOR = 3.0          # each count within this factor of the expected one
E9_TOL = toys.TOL        # iterations are counted to f < 1e-10


def e9_paths(start=toys.ROSENBROCK_START) -> dict[str, toys.Path]:
    """Rosenbrock (a = 1, b = 100) from ``start`` by GD (lr `E9_GD_LR`, up to 40 000 steps),
    Newton, Gauss-Newton on the residuals ``(1 - x, 10 (y - x^2))`` (the pullback of GD in the
    output space, notes sec. 2.3) and damped Newton ``-(H + lam I)^-1 g`` for each
    ``lam`` of `E9_DAMPING` (up to 5000 steps): ``{label: Path}``."""
    paths = {
        "GD (lr 2e-3)": toys.gd_path(toys.rosen_f_np, toys.rosen_grad_np, start, lr=E9_GD_LR,
                                     steps=40_000),
        "Newton": toys.second_order_path(toys.rosen_f, toys.rosen_grad, toys.rosen_hess, start),
        "Gauss–Newton": toys.gauss_newton_path(toys.rosen_residuals,
                                               toys.rosen_residual_jacobian, start)}
    for lam in E9_DAMPING:
        paths[f"damped λ={lam:g}"] = toys.second_order_path(
            toys.rosen_f, toys.rosen_grad, toys.rosen_hess, start, lam=lam, steps=5000)
    return paths


def within_factor(iters: Mapping[str, int | None], expected: Mapping[str, int],
                  factor: float = E9_FACTOR) -> bool:
    """Every ``expected`` count is matched by ``iters`` within ``factor`` either way (a count
    of ``None``, not reached, fails)."""
    return all(iters[k] is not None and v / factor <= iters[k] <= factor * v
               for k, v in expected.items())


def rosenbrock_hessian_eigenvalues(point=(0.0, 1.0)) -> np.ndarray:
    """Ascending eigenvalues of Rosenbrock's Hessian at ``point`` (at (0, 1): -398 and 200,
    indefinite)."""
    return np.linalg.eigvalsh(toys.rosen_hess(point))


def rosenbrock_grid(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rosenbrock's function (a = 1, b = 100; `test_functions.rosenbrock`) on a grid."""
    return test_functions.rosenbrock(torch.as_tensor(np.stack([x, y], -1))).numpy()


def rosenbrock_hessian_det(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``det`` of the Hessian of `test_functions.rosenbrock` on a grid, by automatic
    differentiation of the library's function (closed form: ``400 + 80000 (x^2 - y)``, negative,
    so the Hessian indefinite, above ``y = x^2 + 1/200``)."""
    pts = torch.as_tensor(np.stack([x, y], -1), dtype=torch.float64).reshape(-1, 2)
    hess = torch.func.vmap(torch.func.hessian(test_functions.rosenbrock))(pts)
    return torch.linalg.det(hess).reshape(np.shape(x)).numpy()


# ----------------------------------------------------------------------------- E10: GGN vs H
E10_ACTIVATIONS = ("tanh", "relu")


def e10_runs() -> dict[str, dict]:
    """``{activation: record}`` of `second_order_toys.ggn_vs_hessian_along_training` (a
    2-16-16-1 MLP, 32 points, full-batch Adam, six checkpoints) for tanh and ReLU."""
    return {act: toys.ggn_vs_hessian_along_training(act) for act in E10_ACTIVATIONS}


def e10_numbers(runs: Mapping[str, Mapping]) -> dict:
    """What E10's checks judge: ``rho`` (Spearman correlation of tanh's loss and
    ``||H - G||_F / ||H||_F`` over the checkpoints), ``g_psd`` (G has no eigenvalue below
    -1e-10 anywhere), ``h_indefinite`` (H has eigenvalues of both signs at the first
    checkpoint, for every activation), ``tanh_falls`` (tanh's final relative difference is below
    1/100 of its first), ``relu_differs`` (ReLU's stays above 1e-6 at every checkpoint),
    ``g_min`` (the smallest eigenvalue of G seen)."""
    tanh, relu = runs["tanh"], runs["relu"]
    rho = spearmanr(tanh["loss"], tanh["rel"]).statistic
    return {"rho": rho,
            "g_psd": all(r["g_min"].min() > -1e-10 for r in runs.values()),
            "h_indefinite": all(r["h_min"][0] < 0 < r["h_max"][0] for r in runs.values()),
            "tanh_falls": bool(tanh["rel"][-1] < tanh["rel"][0] / 100),
            "relu_differs": bool(relu["rel"].min() > 1e-6),
            "g_min": float(min(r["g_min"].min() for r in runs.values()))}


# ----------------------------------------------------------------------------- E11: NG
E11_SCALES = (1.0, 10.0, 100.0)
E11_GD_STEPS = 20_000
E11_TOL = 1e-6           # "reaches the optimum's loss": within this of the best loss seen


def e11_runs(n: int = 400, scales: Sequence[float] = E11_SCALES, seed: int = 0,
             gd_steps: int = E11_GD_STEPS) -> dict:
    """Logistic regression on ``n`` points with feature scales ``scales``
    (`second_order_toys.logistic_data`).

    Returns ``curves`` (loss per iteration of GD at 1/L, natural gradient with the true Fisher
    and with the empirical Fisher, both damped by 1e-8), the undamped NG run on the original
    and on the rescaled features ``x -> D x`` with ``D = 1 / scales`` (``ng_original``,
    ``w_original``, ``ng_rescaled``, ``w_rescaled``), GD on the rescaled features
    (``gd_rescaled``) and ``D``.
    """
    X, y = toys.logistic_data(n, scales=scales, seed=seed)
    curves = {"GD (1/L)": toys.fit_logistic(X, y, "gd", steps=gd_steps, lr=toys.gd_lr(X))[0],
              "NG (true Fisher)": toys.fit_logistic(X, y, "ng", steps=30, damping=1e-8)[0],
              "NG (empirical Fisher)": toys.fit_logistic(X, y, "efng", steps=300,
                                                         damping=1e-8)[0]}
    D = 1 / np.array(scales)
    ng_a, w_a = toys.fit_logistic(X, y, "ng", steps=30, damping=0.0)
    ng_b, w_b = toys.fit_logistic(X * D, y, "ng", steps=30, damping=0.0)
    gd_b = toys.fit_logistic(X * D, y, "gd", steps=gd_steps, lr=toys.gd_lr(X * D))[0]
    return {"curves": curves, "ng_original": ng_a, "w_original": w_a, "ng_rescaled": ng_b,
            "w_rescaled": w_b, "gd_rescaled": gd_b, "D": D, "gd_steps": gd_steps}


def e11_numbers(runs: Mapping, tol: float = E11_TOL) -> dict:
    """What E11's checks judge: ``best`` (the lowest loss of any run), ``iters`` (per curve,
    the first iteration within ``tol`` of it), ``invariance_gap`` (largest difference of the
    NG loss curves on the original and the rescaled features), ``w_gap`` (``max |w - D w'|``
    over ``max |w|``: the same classifier in the two parameterisations)."""
    curves = runs["curves"]
    best = min(v.min() for v in (*curves.values(), runs["ng_rescaled"], runs["gd_rescaled"]))
    w_a, w_b = runs["w_original"], runs["w_rescaled"]
    return {"best": best,
            "iters": {k: toys.first_below(v - best, tol) for k, v in curves.items()},
            "invariance_gap": float(np.abs(runs["ng_original"] - runs["ng_rescaled"]).max()),
            "w_gap": float(np.abs(w_a - runs["D"] * w_b).max() / np.abs(w_a).max())}


def ng_much_faster(iters: Mapping[str, int | None], factor: int = 100) -> bool:
    """NG (true Fisher) reached the tolerance, and GD did not or needed ``factor`` times as many
    iterations."""
    ng, gd = iters["NG (true Fisher)"], iters["GD (1/L)"]
    return bool(ng is not None and (gd is None or gd >= factor * ng))


# ----------------------------------------------------------------------------- E12: saddles
E12_GRADIENT = np.array([1.0, 1.0])
E12_QUADRATICS = {"ill-conditioned": np.diag([100.0, 1.0]),   # condition number 100
                  "indefinite": np.diag([10.0, -1.0])}
E12_METHODS = ("gd", "newton", "damped", "saddle_free")
E12_MINIMUM_Y = np.sqrt(2)   # the minima of x^2 - y^2 + y^4/4 are (0, +-sqrt 2)


def damping_path(H, g, lams: Sequence[float]) -> np.ndarray:
    """The damped step ``-(H + lam I)^-1 g`` for each ``lam`` (rows)."""
    return np.array([toys.damped_step(H, g, lam) for lam in lams])


def damping_limit_error(quadratics: Mapping[str, np.ndarray], g) -> float:
    """The largest relative error of the damped step's two limits over ``quadratics``: at
    ``lam = 1e-8`` against Newton's step (relative to its largest entry), and at
    ``lam = 1e10`` against ``-g / lam`` (times ``lam``)."""
    g = np.asarray(g, dtype=np.float64)
    return max(max(np.abs(toys.damped_step(H, g, 1e-8) - toys.damped_step(H, g)).max()
                   / np.abs(toys.damped_step(H, g)).max(),
                   np.abs(toys.damped_step(H, g, 1e10) * 1e10 + g).max())
               for H in quadratics.values())


def e12_saddle_runs(start=(1.0, 1e-3), steps: int = 60, lr: float = 0.1,
                    lam: float = 3.0) -> dict[str, np.ndarray]:
    """The paths of GD (``lr``), Newton, damped Newton (``lam`` above 2, the size of the
    negative curvature at the saddle) and saddle-free Newton on ``x^2 - y^2 + y^4/4`` from
    ``start`` (`second_order_toys.run_saddle`)."""
    return {m: toys.run_saddle(m, start, steps=steps, lr=lr, lam=lam) for m in E12_METHODS}


def e12_numbers(paths: Mapping[str, np.ndarray], limit_error: float) -> dict:
    """What E12's check judges: each path's ``ends``, the Morse ``index`` (negative Hessian
    eigenvalues) at its end, ``near_min`` (first step within 1e-3 of a minimum in ``|y|``) and
    ``passed``: the limits hold (error < 1e-6), Newton ends at the saddle (|x|, |y| < 1e-8,
    index 1), GD and saddle-free Newton end at a minimum (index 0), saddle-free first."""
    ends = {m: p[-1] for m, p in paths.items()}
    index = {m: toys.morse_index(toys.saddle_hess(e)) for m, e in ends.items()}
    near = {m: toys.first_below(np.abs(np.abs(p[:, 1]) - E12_MINIMUM_Y), 1e-3)
            for m, p in paths.items()}
    passed = (limit_error < 1e-6 and np.abs(ends["newton"]).max() < 1e-8 and index["newton"] == 1
              and index["saddle_free"] == 0 and index["gd"] == 0
              and near["saddle_free"] is not None and near["gd"] is not None
              and near["saddle_free"] < near["gd"])
    return {"ends": ends, "index": index, "near_min": near, "passed": bool(passed)}


# ----------------------------------------------------------------------------- E15: sharpness
E15_BATCHES = (16, 1024)     # small and large batch
E15_EPOCHS = 10
E15_EXAMPLES = 1024
E15_ARMS = ("B=16", "B=1024, equal epochs", "B=1024, equal steps")


def e15_runs(seeds: Sequence[int], epochs: int = E15_EPOCHS, n: int = E15_EXAMPLES,
             batches: tuple[int, int] = E15_BATCHES) -> pd.DataFrame:
    """One row per (seed, arm) of `second_order_toys.batch_size_sharpness`: the small batch for
    ``epochs`` epochs, the large batch for as many epochs (equal epochs: fewer steps) and for
    as many steps as the small batch took (equal steps)."""
    small, large = batches
    steps_small = epochs * n // small
    rows = []
    for s in seeds:
        rows.append({**toys.batch_size_sharpness(small, steps=steps_small, seed=s, n=n),
                     "arm": E15_ARMS[0]})
        rows.append({**toys.batch_size_sharpness(large, steps=epochs * n // large, seed=s, n=n),
                     "arm": E15_ARMS[1]})
        rows.append({**toys.batch_size_sharpness(large, steps=steps_small, seed=s, n=n),
                     "arm": E15_ARMS[2]})
    return pd.DataFrame(rows)


def e15_sharpness(runs: pd.DataFrame) -> pd.DataFrame:
    """``lambda_max`` per seed (rows) and arm (columns)."""
    return runs.pivot(index="seed", columns="arm", values="lambda_max")


# ----------------------------------------------------------------------------- E11: probit
# For logistic regression (the canonical link) the true Fisher equals the Hessian, so the
# natural gradient there is Newton's method. Probit regression, p = Phi(w . x), is the nearest
# model where the two differ: its Fisher weight phi(z)^2 / (Phi(z) Phi(-z)) is not the Hessian's
# (which depends on the labels), so NG is Fisher scoring, not Newton.
def probit_data(n: int = 400, scales: Sequence[float] = E11_SCALES, seed: int = 0):
    """Anisotropic features ``X = Z diag(scales)``, ``Z ~ N(0, I)``, labels ``~ Bernoulli(
    Phi(Z w*))`` with ``w* = (1.5, -1, 0.5)`` (non-separable, finite optimum)."""
    rng = np.random.default_rng(seed)
    d = len(scales)
    Z = rng.standard_normal((n, d))
    w_true = np.resize(np.array([1.5, -1.0, 0.5]), d)
    y = (rng.random(n) < ndtr(Z @ w_true)).astype(np.float64)
    return Z * np.asarray(scales, dtype=np.float64), y


def _mills(z):
    """``phi(z) / Phi(z)``, stable for large ``|z|``."""
    return np.exp(norm.logpdf(z) - log_ndtr(z))


def probit_loss(w, X, y) -> float:
    """Mean negative log-likelihood ``-[y log Phi(z) + (1 - y) log Phi(-z)]``, ``z = X w``."""
    z = X @ w
    return float(-np.mean(y * log_ndtr(z) + (1 - y) * log_ndtr(-z)))


def probit_grad(w, X, y) -> np.ndarray:
    z = X @ w
    dz = -y * _mills(z) + (1 - y) * _mills(-z)
    return X.T @ dz / len(y)


def probit_fisher(w, X) -> np.ndarray:
    """The true Fisher ``E_x[phi(z)^2 / (Phi(z) Phi(-z)) x x^T]`` (labels from the model)."""
    z = X @ w
    weight = np.exp(2 * norm.logpdf(z) - log_ndtr(z) - log_ndtr(-z))
    return (X * weight[:, None]).T @ X / len(X)


def probit_hessian(w, X, y) -> np.ndarray:
    """The Hessian of `probit_loss`: weight ``m(z) (z + m(z))`` for ``y = 1`` and
    ``m(-z) (m(-z) - z)`` for ``y = 0``, ``m`` the inverse Mills ratio."""
    z = X @ w
    m1, m0 = _mills(z), _mills(-z)
    weight = y * m1 * (z + m1) + (1 - y) * m0 * (m0 - z)
    return (X * weight[:, None]).T @ X / len(X)


def fit_probit(X, y, method: str, *, steps: int, lr: float = 1.0, damping: float = 0.0
               ) -> tuple[np.ndarray, np.ndarray]:
    """``(losses (steps + 1,), final w)`` of ``"gd"`` or ``"ng"`` (true Fisher + damping I,
    i.e. Fisher scoring), the step ``lr`` times the direction, from ``w = 0``."""
    if method not in ("gd", "ng"):
        raise ValueError(f"method must be 'gd' or 'ng', got {method!r}")
    w = np.zeros(X.shape[1])
    losses = np.empty(steps + 1)
    losses[0] = probit_loss(w, X, y)
    for t in range(1, steps + 1):
        g = probit_grad(w, X, y)
        d = g if method == "gd" else np.linalg.solve(
            probit_fisher(w, X) + damping * np.eye(len(w)), g)
        w = w - lr * d
        losses[t] = probit_loss(w, X, y)
    return losses, w


E11_PROBIT_GD_STEPS = 2000   # enough to see a 100-fold gap to NG's few iterations


def e11_probit_runs(n: int = 400, scales: Sequence[float] = E11_SCALES, seed: int = 0,
                    gd_steps: int = E11_PROBIT_GD_STEPS) -> dict:
    """Probit regression on ``n`` points with feature scales ``scales``: ``curves`` of GD at
    ``1 / L`` (``L = lambda_max(X^T X) / n``: the probit loss's second derivative in ``z`` is
    at most 1) and of NG with the true Fisher (damping 1e-8), and ``fisher_gap``, ``||F -
    H||_F / ||H||_F`` at NG's final weights (0 for logistic regression)."""
    X, y = probit_data(n, scales, seed)
    lr = len(X) / float(np.linalg.eigvalsh(X.T @ X)[-1])
    gd, _ = fit_probit(X, y, "gd", steps=gd_steps, lr=lr)
    ng, w = fit_probit(X, y, "ng", steps=60, damping=1e-8)
    H, F_ = probit_hessian(w, X, y), probit_fisher(w, X)
    return {"curves": {"GD (1/L)": gd, "NG (true Fisher)": ng}, "gd_steps": gd_steps,
            "fisher_gap": float(np.linalg.norm(F_ - H) / np.linalg.norm(H))}


def e11_probit_numbers(runs: Mapping, tol: float = E11_TOL) -> dict:
    """``best`` (the lowest loss of either run) and ``iters`` (per curve, the first iteration
    within ``tol`` of it; None: not reached)."""
    best = min(v.min() for v in runs["curves"].values())
    return {"best": best,
            "iters": {k: toys.first_below(v - best, tol) for k, v in runs["curves"].items()}}
