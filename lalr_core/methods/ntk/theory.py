"""Kernel ridge regression on an NTK and the bounds of the fine-tuning theory (seed 002,
Theorems 2-7), on kernels from `lalr_core.methods.ntk.empirical`.

With our corrections of the slides (``[KimKim-slides]``, presenting ``[RahimiAfzal2025]``; keys:
REFERENCES.md): the sum loss, so ``sigma = lambda / 2``, and residual targets
``y_tilde = y* - f_theta0(x*)`` throughout (the slides mix the sum and the mean loss and drop the
offset on one slide); the ``1/n`` of Theorem 5 (its proof has it, its statement drops it); the
initial residual and ``sqrt(R(theta0))`` in Theorems 2 and 4; the spectral norm and a jitter for
``eta`` (the slides' bars name no norm); and Theorem 7 reported as vacuous for ``eta >= 1``. Linear algebra is float64
with ``torch.linalg.eigh``; eigenvalues ascend.

One module (over 400 lines) on purpose: kernel ridge and the bounds of Theorems 2-7 use the same
corrected quantities (``sigma``, residual targets), defined once here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from lalr_core.core.validation import check_nonnegative

PSD_RTOL = 1e-6       # negative eigenvalues allowed in a "PSD" kernel, relative to the largest


# ----------------------------------------------------------------------------- validation
def _as_matrix(K, name: str = "K") -> torch.Tensor:
    """``K`` as a float64 symmetric PSD matrix (symmetrised), or a ValueError naming the flaw."""
    K = torch.as_tensor(K)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {tuple(K.shape)}")
    if not (K.is_floating_point() and bool(torch.isfinite(K).all())):
        raise ValueError(f"{name} must hold finite floats, got dtype {K.dtype}")
    K = K.detach().to(torch.float64)
    scale = float(K.abs().max())
    if float((K - K.T).abs().max()) > PSD_RTOL * scale:
        raise ValueError(f"{name} must be symmetric")
    K = (K + K.T) / 2
    lam = torch.linalg.eigvalsh(K)
    if float(lam[0]) < -PSD_RTOL * max(float(lam.abs().max()), 1e-300):
        raise ValueError(f"{name} must be positive semi-definite, got smallest eigenvalue "
                         f"{float(lam[0]):.3g} (largest {float(lam[-1]):.3g})")
    return K


def _as_targets(y, n: int, device) -> torch.Tensor:
    y = torch.as_tensor(y).detach().to(device=device, dtype=torch.float64)
    if y.ndim not in (1, 2) or y.shape[0] != n or not bool(torch.isfinite(y).all()):
        raise ValueError(f"y_tilde must be finite of shape [n] or [n, k] with n = {n}, got shape "
                         f"{tuple(y.shape)}")
    return y


# ----------------------------------------------------------------------------- functional model


# ----------------------------------------------------------------------------- kernel ridge
@dataclass(frozen=True)
class KernelRidge:
    """Kernel ridge regression on residual targets (the slides' sec. 4, with the sum loss).

    Attributes:
        alpha: `[n]` or `[n, k]`, ``(K + sigma I)^{-1} y_tilde``.
        fit: ``K alpha``, the predicted ``f - f_theta0`` on the training inputs.
        residual: ``y_tilde - fit = sigma alpha``.
        risk: ``(1/n) ||residual||^2``, the train risk ``R`` of Theorem 5's proof.
        eigenvalues: `[n]` of ``K``, ascending.
        sigma: the ridge constant (``lambda / 2`` for the sum loss).
    """

    alpha: torch.Tensor
    fit: torch.Tensor
    residual: torch.Tensor
    risk: float
    eigenvalues: torch.Tensor
    sigma: float

    def predict(self, K_cross) -> torch.Tensor:
        """``K(x, x*) alpha`` for new inputs: `[m, n]` cross kernel -> predicted ``f - f_theta0``."""
        K_cross = torch.as_tensor(K_cross).detach().to(torch.float64)
        if K_cross.ndim != 2 or K_cross.shape[1] != self.alpha.shape[0]:
            raise ValueError(f"K_cross must be [m, {self.alpha.shape[0]}], got "
                             f"{tuple(K_cross.shape)}")
        return K_cross @ self.alpha


def kernel_ridge(K, y_tilde, sigma: float) -> KernelRidge:
    """Regularised fine-tuning in the linearised regime, solved in closed form.

    With the sum loss ``||f(x*) - y*||^2 + (lambda/2) ||theta - theta0||^2`` of the source's
    problem formulation, the linearised minimiser is ``f = f_theta0 + K(., x*) (K + sigma I)^{-1}
    y_tilde`` with ``sigma = lambda / 2`` and ``y_tilde = y* - f_theta0(x*)`` exactly (the
    slides' ridge form, with the sum loss). Float64 via ``eigh``: ``alpha = U (Lambda + sigma)^{-1} U^T
    y_tilde``.

    Args:
        K: `[n, n]` symmetric PSD NTK at ``theta0``.
        y_tilde: `[n]` or `[n, k]` residual targets.
        sigma: ridge constant ``>= 0`` (0 only for a positive definite ``K``).

    Returns:
        A `KernelRidge`.

    Raises:
        ValueError: for a non-square, asymmetric, non-PSD or non-finite ``K``, mismatched
            targets, a negative ``sigma``, or a singular ``K + sigma I``.
    """
    K = _as_matrix(K)
    sigma = check_nonnegative(sigma, "sigma")
    y = _as_targets(y_tilde, K.shape[0], K.device)
    lam, U = torch.linalg.eigh(K)
    shifted = lam + sigma
    if float(shifted.min()) <= 1e-12 * max(float(lam[-1]), 1e-300):
        raise ValueError(f"K + sigma I is singular (sigma = {sigma}, smallest eigenvalue of K "
                         f"{float(lam[0]):.3g}); use sigma > 0")
    coef = U.T @ y
    inv = 1 / shifted if y.ndim == 1 else (1 / shifted)[:, None]
    alpha = U @ (inv * coef)
    residual = U @ (sigma * inv * coef)               # (I - K (K + sigma I)^{-1}) y_tilde
    return KernelRidge(alpha=alpha, fit=y - residual, residual=residual,
                       risk=float(residual.pow(2).sum()) / K.shape[0], eigenvalues=lam,
                       sigma=sigma)


def krr_risk(K, y_tilde, sigma: float) -> float:
    """``R = (1/n) ||(I - K (K + sigma I)^{-1}) y_tilde||^2`` (Theorem 5's proof, with its ``1/n``)."""
    return kernel_ridge(K, y_tilde, sigma).risk


def regularised_condition_number(K, sigma: float) -> float:
    """``kappa(K + sigma I) = (lambda_max + sigma) / (lambda_min + sigma)`` (the slides' Theorem 7).

    Raises:
        ValueError: for a bad ``K`` or ``sigma``, or ``lambda_min + sigma <= 0``.
    """
    K = _as_matrix(K)
    sigma = check_nonnegative(sigma, "sigma")
    lam = torch.linalg.eigvalsh(K)
    low = float(lam[0]) + sigma
    if low <= 0:
        raise ValueError(f"K + sigma I is singular (lambda_min + sigma = {low:.3g})")
    return (float(lam[-1]) + sigma) / low


def risk_bounds(K, y_tilde, sigma: float) -> tuple[float, float]:
    """Theorem 5 with the proof's ``1/n`` and residual targets (the statement drops both).

    ``(1/n) (sigma ||y_tilde|| / (sigma + lambda_max))^2 <= R <= (1/n) (sigma ||y_tilde|| /
    (sigma + lambda_min))^2``; `krr_risk` is ``R``. The source's statement drops ``1/n`` and
    uses ``y*``.

    Returns:
        ``(lower, upper)``.
    """
    K = _as_matrix(K)
    sigma = check_nonnegative(sigma, "sigma")
    y = _as_targets(y_tilde, K.shape[0], K.device)
    lam = torch.linalg.eigvalsh(K)
    n, norm = K.shape[0], float(y.norm())
    return ((sigma * norm / (sigma + float(lam[-1]))) ** 2 / n,
            (sigma * norm / (sigma + max(float(lam[0]), 0.0))) ** 2 / n)


# ----------------------------------------------------------------------------- Theorems 6, 7
def _inverse_sqrt(K: torch.Tensor, jitter: float) -> tuple[torch.Tensor, float]:
    """``(K + eps I)^{-1/2}`` by ``eigh``, ``eps = jitter * tr(K) / n`` (our jitter)."""
    if float(torch.trace(K)) <= 0:
        raise ValueError("K is zero: eta needs a kernel with a positive trace")
    eps = jitter * float(torch.trace(K)) / K.shape[0]
    lam, U = torch.linalg.eigh(K)
    lam = (lam + eps).clamp_min(1e-300)
    return (U / lam.sqrt()) @ U.T, eps


def _check_pair(K, S) -> tuple[torch.Tensor, torch.Tensor]:
    K, S = _as_matrix(K, "K"), _as_matrix(S, "S")
    if K.shape != S.shape:
        raise ValueError(f"K and S must have the same shape, got {tuple(K.shape)} and "
                         f"{tuple(S.shape)}")
    return K, S


def eta(K, S, *, jitter: float = 1e-10) -> float:
    """``eta = ||K^{-1/2} S K^{-1/2}||_2`` (Theorem 6; spectral norm and jitter: our reading).

    Args:
        K: `[n, n]` NTK of the selected parameters.
        S: `[n, n]` kernel of the candidate parameters (`empirical_ntk` on that subset).
        jitter: ``K^{-1/2}`` is taken of ``K + jitter * tr(K) / n * I``.

    Returns:
        ``eta >= 0``; large where ``S`` reaches directions ``K`` barely spans.
    """
    K, S = _check_pair(K, S)
    root, _ = _inverse_sqrt(K, check_nonnegative(jitter, "jitter"))
    M = root @ S @ root
    return float(torch.linalg.eigvalsh((M + M.T) / 2).abs().max())


@dataclass(frozen=True)
class Sandwich:
    """Theorem 6's check ``(1 - eta) lambda_i(K) <= lambda_i(K + S) <= (1 + eta) lambda_i(K)``.

    Attributes:
        eta: as in `eta`.
        eig_K, eig_KS: `[n]` ascending eigenvalues of ``K`` and ``K + S``.
        lower, upper: `[n]` the two sides, ``(1 -/+ eta) lambda_i(K)``.
        holds: every inequality holds within ``tol``.
        tol: ``rtol * lambda_max(K + S) + (1 + eta) eps``; ``eps``, the jitter of ``eta``,
            enters because ``eta`` bounds ``S`` against ``K + eps I`` (matters for singular K).
    """

    eta: float
    eig_K: torch.Tensor
    eig_KS: torch.Tensor
    lower: torch.Tensor
    upper: torch.Tensor
    holds: bool
    tol: float


def eigenvalue_sandwich(K, S, *, jitter: float = 1e-10, rtol: float = 1e-8) -> Sandwich:
    """Theorem 6 evaluated: ``eta`` and both sides for every eigenvalue (the lower
    side is trivial for ``S >= 0``, and the upper follows from ``K + S <= (1 + eta) K``).

    The lower side is trivial for PSD ``S``; the upper follows from ``K + S <= (1 + eta) K``.
    """
    K, S = _check_pair(K, S)
    root, eps = _inverse_sqrt(K, check_nonnegative(jitter, "jitter"))
    M = root @ S @ root
    e = float(torch.linalg.eigvalsh((M + M.T) / 2).abs().max())
    eig_K, eig_KS = torch.linalg.eigvalsh(K), torch.linalg.eigvalsh(K + S)
    lower, upper = (1 - e) * eig_K, (1 + e) * eig_K
    tol = check_nonnegative(rtol, "rtol") * float(eig_KS.abs().max()) + (1 + e) * eps
    holds = bool(((lower <= eig_KS + tol) & (eig_KS <= upper + tol)).all())
    return Sandwich(eta=e, eig_K=eig_K, eig_KS=eig_KS, lower=lower, upper=upper, holds=holds,
                    tol=tol)


@dataclass(frozen=True)
class RiskRatio:
    """Theorem 7: ``lower <= sqrt(R(theta + theta_hat) / R(theta)) <= upper`` if ``eta < 1``.

    Attributes:
        ratio: ``sqrt(R(K + S) / R(K))`` by kernel ridge regression.
        eta, c: Theorem 6's ``eta`` and the bound ``c >= kappa(K + sigma I)``.
        a: ``c / (1 - eta)^2`` (``inf`` when vacuous).
        lower, upper: the two bounds (``nan`` when vacuous).
        vacuous: ``eta >= 1``, where the theorem says nothing.
        holds: both inequalities hold (``None`` when vacuous).
    """

    ratio: float
    eta: float
    c: float
    a: float
    lower: float
    upper: float
    vacuous: bool
    holds: bool | None


def risk_ratio_bounds(K, S, y_tilde, sigma: float, *, c: float | None = None,
                      jitter: float = 1e-10, rtol: float = 1e-10) -> RiskRatio:
    """Theorem 7's two inequalities, with ``R`` from `krr_risk` (``1/n`` cancels in the ratio).

    ``lambda_max(K+S+sigma I) / (a lambda_max(K+sigma I)) <= sqrt(R(K+S) / R(K)) <= a
    lambda_max(K+S+sigma I) / lambda_max(K+sigma I)``, ``a = c / (1 - eta)^2``. The upper
    bound is always ``>= 1``: it can never certify a lower risk.

    Args:
        K, S: NTK of the selected parameters and kernel of the added ones.
        y_tilde: residual targets `[n]`.
        sigma: ridge constant ``> 0``.
        c: the hypothesis' bound on ``kappa(K + sigma I)`` (default: ``kappa`` itself).
        jitter: for ``eta``.
        rtol: relative slack of ``holds``.

    Raises:
        ValueError: for bad matrices, ``sigma <= 0`` or ``c < kappa(K + sigma I)``.
    """
    K, S = _check_pair(K, S)
    sigma = check_nonnegative(sigma, "sigma", positive=True)
    kappa = regularised_condition_number(K, sigma)
    c = kappa if c is None else check_nonnegative(c, "c")
    if c < kappa * (1 - 1e-12):
        raise ValueError(f"c must bound kappa(K + sigma I) = {kappa:.6g}, got {c}")
    ratio = math.sqrt(krr_risk(K + S, y_tilde, sigma) / krr_risk(K, y_tilde, sigma))
    e = eta(K, S, jitter=jitter)
    if e >= 1:
        return RiskRatio(ratio, e, c, math.inf, math.nan, math.nan, True, None)
    a = c / (1 - e) ** 2
    top = (float(torch.linalg.eigvalsh(K + S)[-1]) + sigma) / (
        float(torch.linalg.eigvalsh(K)[-1]) + sigma)
    lower, upper = top / a, a * top
    holds = lower * (1 - rtol) <= ratio <= upper * (1 + rtol)
    return RiskRatio(ratio, e, c, a, lower, upper, False, holds)


def rank_layer_candidates(K, candidates: Mapping[str, object], sigma: float, *,
                          eta_small: float = 0.1, jitter: float = 1e-10) -> list[dict]:
    """The slides' layer-selection idea, evaluated per candidate (slides' sec. 5, Theorem 6).

    "Small eta: adding the layer doesn't affect the empirical risk much; if eta is large enough
    and doesn't mess up the condition number, it is worth tuning." The source gives no
    threshold: ``eta_small`` is ours.

    Args:
        K: NTK of the selected parameters.
        candidates: name -> kernel ``S`` of that candidate's parameters.
        sigma: ridge constant of ``kappa`` (``> 0``).
        eta_small: below it a candidate is "not worth adding".
        jitter: for ``eta``.

    Returns:
        One dict per candidate, ``{"name", "eta", "kappa", "kappa_with", "kappa_ratio",
        "verdict"}`` with verdict ``"worth tuning"`` (``eta >= eta_small`` and
        ``kappa_with <= kappa``), ``"worsens conditioning"`` or ``"not worth adding"``; sorted
        by verdict in that order, then by ``eta`` descending.
    """
    if not isinstance(candidates, Mapping) or not candidates:
        raise ValueError("candidates must be a non-empty mapping name -> kernel S")
    sigma = check_nonnegative(sigma, "sigma", positive=True)
    eta_small = check_nonnegative(eta_small, "eta_small")
    K = _as_matrix(K)
    kappa = regularised_condition_number(K, sigma)
    order = {"worth tuning": 0, "worsens conditioning": 1, "not worth adding": 2}
    rows = []
    for name, S in candidates.items():
        K_, S_ = _check_pair(K, S)
        e = eta(K_, S_, jitter=jitter)
        kappa_with = regularised_condition_number(K_ + S_, sigma)
        verdict = ("not worth adding" if e < eta_small else
                   "worth tuning" if kappa_with <= kappa else "worsens conditioning")
        rows.append({"name": name, "eta": e, "kappa": kappa, "kappa_with": kappa_with,
                     "kappa_ratio": kappa_with / kappa, "verdict": verdict})
    return sorted(rows, key=lambda r: (order[r["verdict"]], -r["eta"]))


# ----------------------------------------------------------------------------- Theorems 2-4
def _times(t) -> np.ndarray:
    t = np.asarray(t, dtype=float)
    if not (np.all(np.isfinite(t)) and np.all(t >= 0)):
        raise ValueError(f"t must be finite and >= 0, got {t!r}")
    return t


def _out(x: np.ndarray):
    return float(x) if x.ndim == 0 else x


def distance_bound(lip_f: float, residual0: float, lam: float, t):
    """Theorem 2: ``||theta_t - theta0|| <= 2 Lip(f) ||y(0) - y*|| (1 - e^{-lam t}) / lam``.

    With the initial residual (our correction of the slides); ``lam = 0`` gives the limit ``2 Lip(f) r0 t``.

    Args:
        lip_f: Lipschitz constant of ``theta -> f_theta(x*)`` (e.g. `jacobian_norm`).
        residual0: ``||f_theta0(x*) - y*||_2`` (``sqrt`` of the sum loss at ``theta0``).
        lam: regularisation strength ``lambda >= 0`` (constant ``lambda_t``).
        t: time(s) ``>= 0`` (gradient-flow time: steps x step size).

    Returns:
        The bound, a float or an array shaped like ``t``.
    """
    L, r0 = check_nonnegative(lip_f, "lip_f"), check_nonnegative(residual0, "residual0")
    lam, t = check_nonnegative(lam, "lam"), _times(t)
    growth = t if lam == 0 else -np.expm1(-lam * t) / lam
    return _out(2 * L * r0 * growth)


def linearisation_bound(lip_f: float, lip_grad_f: float, residual0: float, lam: float, t):
    """Theorem 3: ``||f_theta_t(x*) - fbar_theta_bar_t(x*)|| <= b (t - (1 - e^{-lam t}) / lam)``.

    ``b = 2 Lip(f)^2 r0 ((4 / lam) Lip(grad f) r0 + 1)``, ``r0 = ||f_theta0(x*) - y*||``, taken
    as stated (its proof in the slides has a sign slip; the bound is used as printed). ``lam -> 0`` has the finite limit ``4 Lip(f)^2 Lip(grad f) r0^2 t^2``
    (plus the vanishing ``b`` term), returned for ``lam = 0``.

    Args:
        lip_f, lip_grad_f: Lipschitz constants of ``f`` and ``grad f`` in the ball.
        residual0: initial residual norm.
        lam: ``lambda >= 0``.
        t: time(s) ``>= 0``.
    """
    L, Lg = check_nonnegative(lip_f, "lip_f"), check_nonnegative(lip_grad_f, "lip_grad_f")
    r0, lam, t = check_nonnegative(residual0, "residual0"), check_nonnegative(lam, "lam"), _times(t)
    if lam == 0:
        return _out(4 * L ** 2 * Lg * r0 ** 2 * t ** 2)
    x = lam * t
    # g = t - (1 - e^{-x}) / lam; its series avoids cancellation for small x
    g = np.where(x < 1e-4, t * (x / 2 - x ** 2 / 6 + x ** 3 / 24), t + np.expm1(-x) / lam)
    b = 2 * L ** 2 * r0 * (4 / lam * Lg * r0 + 1)
    return _out(b * g)


def lambda_threshold(lip_f: float, residual0: float, r: float) -> float:
    """Theorem 4: ``lambda_o = 2 ||f_theta0(x*) - y*|| Lip(f) / r``; for ``lambda >= lambda_o``
    the iterates never leave the ``r``-ball (Theorem 2's limit is ``<= r``)."""
    r = check_nonnegative(r, "r", positive=True)
    return 2 * check_nonnegative(residual0, "residual0") * check_nonnegative(lip_f, "lip_f") / r


def exit_time_bound(lam: float, lam_o: float) -> float:
    """Theorem 4: for ``lambda < lambda_o`` the iterates stay in the ball at least until
    ``(1/lambda) ln(1 / (1 - lambda / lambda_o))``; ``inf`` for ``lambda >= lambda_o``;
    ``1 / lambda_o`` for ``lambda = 0`` (the limit, Theorem 2's ``2 Lip(f) r0 t = r``)."""
    lam, lam_o = check_nonnegative(lam, "lam"), check_nonnegative(lam_o, "lam_o", positive=True)
    if lam >= lam_o:
        return math.inf
    return 1 / lam_o if lam == 0 else -math.log1p(-lam / lam_o) / lam


def linearisation_bound_in_ball(lip_f: float, lip_grad_f: float, residual0: float, r: float, t):
    """Theorem 4's simplified bound for ``lambda >= lambda_o``, with ``sqrt(R(theta0))`` = the
    residual norm (our correction of the slides): ``2 Lip(f) r0 (2 r Lip(grad f) + Lip(f)) t``."""
    L, Lg = check_nonnegative(lip_f, "lip_f"), check_nonnegative(lip_grad_f, "lip_grad_f")
    r0, r, t = check_nonnegative(residual0, "residual0"), check_nonnegative(r, "r"), _times(t)
    return _out(2 * L * r0 * (2 * r * Lg + L) * t)
