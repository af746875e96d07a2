r"""Implicit learning-rate decay of a scale-invariant layer (``[ATDL-notes]`` sec. 3.5, item E14).

Chapter 01's experiment E14 (ours): every normalised layer already carries its own implicit,
decaying lr, which any layer-wise lr scheme only multiplies. A layer followed by a normaliser (BN,
WN, LN) computes the same function for ``w`` and ``gamma * w``. The source,
the lecture notes ``[ATDL-notes]`` (sec. 3.5, "Learning rate"; keys: REFERENCES.md): "With
homogeneous normalizers such as BN,
WN, and LN, there is **implicit learning rate decay**", "the norm of the weights
$\|w^{(k)}\|^2$ increase like $\sqrt{k}$ over $k$-GD steps", "the learning rate decays
implicitly like $k^{-1/2}$". The derivation, for plain SGD without weight decay:

    scale invariance  =>  w . grad L(w) = 0                         (Euler, degree 0)
    w_{k+1} = w_k - eta g_k  =>  ||w_{k+1}||^2 = ||w_k||^2 + eta^2 ||g_k||^2     (exact)
    ||g_k|| = c_k^{1/2} / ||w_k||  =>  ||w_k||^4 ~ ||w_0||^4 + 2 eta^2 c k

with ``c_k = ||grad of L at the unit vector u_k||^2`` (the gradient noise keeps it > 0). So
``||w_k||^2 ~ sqrt(2 c k) eta`` and the effective lr ``eta / ||w_k||^2`` falls as ``k^{-1/2}``;
asymptotically it is ``1 / sqrt(2 c k)``, whatever eta (measured here: 0.0162 at eta 0.1 and
0.0165 at eta 1, mean over steps 10k-20k): the explicit lr only sets the transient, as the
notes say ("explicit learning rate only have transient effect", sec. 3.5).

The model: logistic regression on ``x . w / ||w||`` (scale invariant by construction) for
Gaussian inputs with labels drawn from a logistic teacher, SGD with i.i.d. batches of 32 (drawn
with replacement), numpy float64 (20k steps in ~0.3 s). Our first prototype of this
experiment measured a log-log slope of 0.489 (eta 0.1) and 0.483 (eta 1) against the theory's
0.5; we fit it over the last decade of
steps, ``k in [num_steps / 10, num_steps]`` (`FIT_WINDOW`), where ``||w_0||^4`` is negligible.

With weight decay ``lambda`` (L2 added to the gradient) the cross term still vanishes:
``||w_{k+1}||^2 = (1 - eta lambda)^2 ||w_k||^2 + eta^2 c_k / ||w_k||^2``, whose fixed point is

    ||w||^4 = eta c / (lambda (2 - eta lambda))       (`equilibrium_norm_sq`)

(our derivation; the small-``eta lambda`` form ``||w||^2 = sqrt(eta c / (2 lambda))`` is the
equilibrium of van Laarhoven 2017, arXiv:1706.05350, and of the "spherical motion dynamics" of
Wan et al. 2021, arXiv:2006.08419). The norm, and with it the effective lr, then stops moving:
the explicit lr and wd set one effective lr ``sqrt(eta lambda (2 - eta lambda) / c)`` together.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

FIT_WINDOW = (0.1, 1.0)  # fraction of num_steps: the log-log fit uses the last decade


def _check_positive(name: str, value, integer: bool = False) -> None:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if integer:
        ok = ok and float(value).is_integer()
    if not ok or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive {'int' if integer else 'number'}, "
                         f"got {value!r}")


# ----------------------------------------------------------------------------- the model
def teacher_data(n: int = 2000, d: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``X [n, d]`` ~ N(0, I) and labels ``y [n]`` in {-1, +1} with
    ``P(y = 1 | x) = sigmoid(x . u*)``, ``u*`` a random unit vector (not separable, so the
    per-batch gradient never vanishes)."""
    _check_positive("n", n, integer=True)
    _check_positive("d", d, integer=True)
    rng = np.random.default_rng(seed)
    u_star = rng.standard_normal(d)
    u_star /= np.linalg.norm(u_star)
    X = rng.standard_normal((n, d))
    p = 1.0 / (1.0 + np.exp(-X @ u_star))
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    return X, y


def loss_and_grad(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean logistic loss of the logits ``X w / ||w||`` and its gradient in ``w``.

    ``dL/dw = (I - u u^T) dL/du / ||w||`` with ``u = w / ||w||``: orthogonal to ``w`` and
    ``1 / ||w||`` times the gradient at the unit vector.

    Args:
        w: `[d]` weights (non-zero).
        X: `[B, d]` inputs.
        y: `[B]` labels in {-1, +1}.

    Returns:
        ``(loss, grad [d])``.
    """
    norm = np.linalg.norm(w)
    u = w / norm
    margins = y * (X @ u)                                   # (B,)
    loss = float(np.logaddexp(0.0, -margins).mean())
    weights = -y / (1.0 + np.exp(margins))                  # d softplus(-m) / dz, (B,)
    grad_u = X.T @ weights / len(y)                         # (d,)
    return loss, (grad_u - (grad_u @ u) * u) / norm


# ----------------------------------------------------------------------------- training
def sgd_norms(lr: float, *, wd: float = 0.0, num_steps: int = 20_000, batch_size: int = 32,
              n: int = 2000, d: int = 20, w0_norm: float = 1.0, seed: int = 0) -> pd.DataFrame:
    """SGD on the scale-invariant model; the squared norms along the way.

    ``w_{k+1} = w_k - lr (g_k + wd w_k)``, ``g_k`` the batch gradient of the loss.

    Returns:
        One row per step ``k = 0..num_steps``: ``step``, ``norm_sq`` (``||w_k||^2``),
        ``grad_sq`` (``||g_k||^2``, NaN on the last row), ``c`` (``||g_k||^2 ||w_k||^2``: the
        squared gradient at the unit vector), ``eff_lr`` (``lr / ||w_k||^2``).
    """
    _check_positive("lr", lr)
    _check_positive("num_steps", num_steps, integer=True)
    _check_positive("batch_size", batch_size, integer=True)
    _check_positive("w0_norm", w0_norm)
    if not np.isfinite(wd) or wd < 0:
        raise ValueError(f"wd must be a number >= 0, got {wd!r}")
    X, y = teacher_data(n, d, seed)
    rng = np.random.default_rng(seed + 1)
    w = rng.standard_normal(d)
    w *= w0_norm / np.linalg.norm(w)
    batches = rng.integers(0, n, size=(num_steps, batch_size))  # i.i.d. batches
    norm_sq = np.empty(num_steps + 1)
    grad_sq = np.full(num_steps + 1, np.nan)
    for k, idx in enumerate(batches):
        norm_sq[k] = w @ w
        _, g = loss_and_grad(w, X[idx], y[idx])
        grad_sq[k] = g @ g
        w = w - lr * (g + wd * w)
    norm_sq[num_steps] = w @ w
    return pd.DataFrame({"step": np.arange(num_steps + 1), "norm_sq": norm_sq,
                         "grad_sq": grad_sq, "c": grad_sq * norm_sq, "eff_lr": lr / norm_sq})


def loglog_slope(steps, values, window: tuple[float, float] = FIT_WINDOW) -> dict[str, float]:
    """Least-squares slope of ``log values`` on ``log steps`` over
    ``steps in [window[0] * max(steps), window[1] * max(steps)]`` (steps >= 1).

    Returns:
        ``{"slope", "stderr", "k_lo", "k_hi"}``.
    """
    steps, values = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    k_max = steps.max()
    keep = (steps >= max(1.0, window[0] * k_max)) & (steps <= window[1] * k_max)
    if keep.sum() < 3:
        raise ValueError(f"the fit window {window} holds {keep.sum()} steps; need >= 3")
    fit = stats.linregress(np.log(steps[keep]), np.log(values[keep]))
    return {"slope": float(fit.slope), "stderr": float(fit.stderr),
            "k_lo": float(steps[keep].min()), "k_hi": float(steps[keep].max())}


def equilibrium_norm_sq(lr: float, wd: float, c: float) -> float:
    """Fixed point of ``s -> (1 - lr wd)^2 s + lr^2 c / s``: ``sqrt(lr c / (wd (2 - lr wd)))``
    (module docstring; needs ``0 < lr wd < 2``)."""
    if not 0 < lr * wd < 2 or c <= 0:
        raise ValueError(f"need 0 < lr * wd < 2 and c > 0, got lr={lr}, wd={wd}, c={c}")
    return float(np.sqrt(lr * c / (wd * (2.0 - lr * wd))))


def implicit_decay(lrs=(0.1, 1.0), wds=(0.0, 1e-3), **kwargs) -> pd.DataFrame:
    """E14's summary: one row per ``(lr, wd)``; ``kwargs`` go to `sgd_norms`.

    Columns, fits over `FIT_WINDOW` (``k_lo``..``k_hi``):

    * ``slope`` (``slope_stderr``): log-log slope of ``||w_k||^2``, E14's first statistic
      (theory 0.5 once ``2 eta^2 c k >> ||w_0||^4``); ``eff_lr_slope``: of ``eta / ||w_k||^2``
      (theory -0.5);
    * ``slope_corrected``: of ``sqrt(||w_k||^4 - ||w_0||^4)``, the growth with the initial
      norm taken out (theory 0.5 from the first steps on, for a constant ``c``): at eta 0.1
      and ``||w_0|| = 1`` the raw fit still sees ``||w_0||^4`` (15 % of ``||w_k||^4`` at
      ``k_lo``); an init so small that ``eta / ||w_0||^2 >> 1`` makes instead a jump in
      the first steps, which no subtraction of ``||w_0||`` removes;
    * ``eff_lr_end``: mean ``eta / ||w_k||^2`` over the last half of the steps;
    * with wd: ``equilibrium`` (mean ``||w_k||^2`` over the last half) and
      ``equilibrium_theory`` (`equilibrium_norm_sq` at the mean ``c`` of that half).
    """
    rows = []
    for lr in lrs:
        for wd in wds:
            traj = sgd_norms(lr, wd=wd, **kwargs)
            steps, norm_sq = traj["step"].to_numpy()[1:], traj["norm_sq"].to_numpy()
            fit = loglog_slope(steps, norm_sq[1:])
            grown = np.sqrt(np.clip(norm_sq[1:] ** 2 - norm_sq[0] ** 2, 1e-300, None))
            late = traj.iloc[len(traj) // 2:-1]
            row = {"lr": lr, "wd": wd, "norm_sq_end": float(norm_sq[-1]),
                   "slope": fit["slope"], "slope_stderr": fit["stderr"],
                   "slope_corrected": loglog_slope(steps, grown)["slope"],
                   "eff_lr_slope": loglog_slope(steps, traj["eff_lr"].to_numpy()[1:])["slope"],
                   "k_lo": fit["k_lo"], "k_hi": fit["k_hi"],
                   "eff_lr_end": float(late["eff_lr"].mean())}
            if wd > 0:
                row.update(equilibrium=float(late["norm_sq"].mean()),
                           equilibrium_theory=equilibrium_norm_sq(lr, wd, late["c"].mean()))
            rows.append(row)
    return pd.DataFrame(rows)
