r"""The Hessian's eigenspectrum from the cumulants of squared gradients (chapter 05, figs H.1
and H.2).

Source: `[Tuddenham2026]` (M. Tuddenham, PhD thesis, University of Southampton, 2026; see
REFERENCES.md), appendix H. On the quadratic ``L(theta) = 1/2 (theta - theta*)^T H (theta - theta*)`` (H.1), ``H``
symmetric PSD with eigenvalues ``lambda_i``, the gradient at ``theta = theta* + eps``,
``eps ~ N(0, I)``, is ``H eps`` (H.2) and its squared norm is

    s = ||H eps||^2 = eps^T H^2 eps                                               (H.3)

Rotating to ``H``'s eigenbasis, ``s = sum_i lambda_i^2 x_i^2`` with ``x ~ N(0, I)``, whose
cumulant generating function is ``K(w) = -1/2 sum_i log(1 - 2 i w lambda_i^2)``, so

    kappa_n = 2^(n-1) (n-1)! sum_i lambda_i^(2n)       (kappa_1..3 = S2, 2 S4, 8 S6)

Only the non-zero eigenvalues contribute. The source writes these three; the general ``n`` is
the same expansion (``-1/2 log(1 - x) = sum_n x^n / (2n)``). Measuring the cumulants of the
squared gradient norm therefore measures the even spectral moments ``sum lambda^(2n)`` without
a single Hessian-vector product.

Where the printed equations disagree with the source's own derivation, we follow the
derivation (none of these changes a result):

* sign: (H.4) has ``(I - 2 i w H^2)``, (H.5)-(H.6) switch to ``(I + 2 i w Lambda^2)``; the
  source's own series ``i w S2 - w^2 S4 - (4/3) i w^3 S6`` (and ``kappa_1 = S2 > 0``) needs
  the minus sign, which we use;
* the source's moment-to-cumulant line ``mu_3 - 2 mu_2 - mu_1 + 2 mu_1^3`` is a typo for
  ``mu_3 - 3 mu_2 mu_1 + 2 mu_1^3``; we estimate cumulants by k-statistics (unbiased);
* (H.8) sums to ``n`` on the left; it is ``n*``, the number of non-zero eigenvalues (H.7);
* ``K_1``'s printed ``2ab/5 a^2`` is ``2ab/5`` and ``K_2``'s ``2 b^4 / 12`` is ``2 b^4 / 13``
  (both follow from integrating (H.9)); ``K_3`` is printed correctly. `profile_cumulants`
  integrates exactly, so it needs neither correction.

Approximating the spectrum (H.7-H.9): with ``lambda(t) = lambda_{n* t}`` (eigenvalues
ascending, ``t = i / n*``), ``sum_i lambda_i^(2k) ~ n* int_0^1 lambda(t)^(2k) dt`` and the
profile is modelled as the cubic ``lambda(t) = a t + b t^3`` (no constant or ``t^2`` term).
Matching ``K_k(n*, a, b)`` to measured ``kappa_k`` is the source's future work (H.10: a
Gaussian likelihood per cumulant and a prior on ``n*, a, b``); it reports no fit, so we provide
the pieces (`profile_cumulants`, `cumulant_log_likelihood`) and no fitting routine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from lalr_core.methods.curvature.top_eigen import random_gram
from lalr_core.methods.trajectory import check_scalar

# ----------------------------------------------------------------------------- constants
X_ROWS, X_COLS = 500, 400  # app. H / figs H.1-H.2: "H = X^T X where X is a 500x400 random
#                            matrix"; entries N(0, 1), the distribution is not stated, but
#                            N(0, 1) gives the thesis's magnitudes), so H is 400 x 400
# App. H.1's printed numbers, (kappa_1, kappa_2, kappa_3): the sample cumulants and the exact
# 2^(n-1)(n-1)! sum lambda^(2n) of its one random H (unseeded; only the magnitudes reproduce)
THESIS_SAMPLE_KAPPAS = (1.7799e8, 4.9891e14, 3.3612e21)
THESIS_EXACT_KAPPAS = (1.7842e8, 4.9788e14, 3.7424e21)
KSTAT_MAX_ORDER = 4        # scipy.stats.kstat: unbiased cumulant estimators for n = 1..4


def _orders(orders) -> tuple[int, ...]:
    out = tuple(orders)
    if not out or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1
                      for n in out):
        raise ValueError(f"orders must be a non-empty sequence of integers >= 1, got {orders!r}")
    return tuple(int(n) for n in out)


def _eigvals(eigvals) -> np.ndarray:
    lam = np.asarray(eigvals, dtype=np.float64).ravel()
    if lam.size == 0 or not np.all(np.isfinite(lam)):
        raise ValueError(f"eigvals must be a non-empty finite array, got {eigvals!r}")
    return lam


def _cumulant_factor(n: int) -> float:
    """``2^(n-1) (n-1)!``: the cumulants of ``x^2``, ``x ~ N(0, 1)`` (a chi-square(1))."""
    return 2.0 ** (n - 1) * math.factorial(n - 1)


# ----------------------------------------------------------------------------- H.1
def squared_gradient_norms(H, samples: int, *, seed: int | torch.Generator = 0,
                           batch: int = 8192) -> torch.Tensor:
    """``samples`` draws of ``s = ||H eps||^2``, ``eps ~ N(0, I)`` (eq. H.3, fig H.2), float64.

    Drawn ``batch`` at a time as ``((E @ H)^2).sum(1)`` (``H`` symmetric, so the rows of
    ``E @ H`` are ``(H eps)^T``). The source assumes ``H`` symmetric PSD (a Hessian at a
    minimum); the cumulant formula needs only symmetry (the ``lambda_i^2`` are >= 0 anyway), so
    symmetry is all that is checked.

    Raises:
        ValueError: ``H`` not a finite symmetric square matrix, or bad ``samples``/``batch``.
    """
    H = torch.as_tensor(H).to(torch.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] == 0 or not torch.isfinite(H).all():
        raise ValueError(f"H must be a finite non-empty square matrix, got shape "
                         f"{tuple(H.shape)}")
    if (H - H.T).abs().max() > 1e-10 * max(float(H.abs().max()), 1e-300):
        raise ValueError("H must be symmetric (a Hessian)")
    for name, x in (("samples", samples), ("batch", batch)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {x!r}")
    gen = seed if isinstance(seed, torch.Generator) else torch.Generator().manual_seed(int(seed))
    out = torch.empty(int(samples), dtype=torch.float64)
    for start in range(0, int(samples), int(batch)):
        m = min(int(batch), int(samples) - start)
        E = torch.randn(m, H.shape[0], generator=gen, dtype=torch.float64)
        out[start:start + m] = (E @ H).square().sum(1)
    return out


def cumulants_from_spectrum(eigvals, orders=(1, 2, 3)) -> np.ndarray:
    """Exact ``kappa_n = 2^(n-1) (n-1)! sum_i lambda_i^(2n)`` of ``s`` (app. H.1).

    Args:
        eigvals: the eigenvalues of ``H`` (zeros contribute nothing).
        orders: the ``n`` wanted (the source: 1, 2, 3).

    Returns:
        float64 array, one per order.

    Raises:
        ValueError: empty/non-finite eigenvalues or bad orders.
    """
    lam2 = _eigvals(eigvals) ** 2
    return np.array([_cumulant_factor(n) * np.sum(lam2 ** n) for n in _orders(orders)])


def sample_cumulants(s, orders=(1, 2, 3)) -> np.ndarray:
    """Unbiased sample cumulants (k-statistics, ``scipy.stats.kstat``) of draws ``s``.

    The estimates of ``kappa_n`` that app. H.1 compares with ``cumulants_from_spectrum``;
    their relative error grows with ``n`` (the thesis: 0.2%, 0.2%, 10% for ``n = 1, 2, 3``).

    Raises:
        ValueError: fewer draws than the highest order, non-finite draws, or an order outside
            ``1..4`` (kstat's range).
    """
    x = np.asarray(s.numpy() if isinstance(s, torch.Tensor) else s, dtype=np.float64).ravel()
    orders = _orders(orders)
    if max(orders) > KSTAT_MAX_ORDER:
        raise ValueError(f"orders must be <= {KSTAT_MAX_ORDER} (k-statistics), got {orders}")
    if x.size <= max(orders) or not np.all(np.isfinite(x)):
        raise ValueError(f"need more than {max(orders)} finite draws, got {x.size}")
    return np.array([stats.kstat(x, n) for n in orders])


# ----------------------------------------------------------------------------- H.2
@dataclass(frozen=True)
class CubicProfile:
    """The fit ``lambda(t) = a t + b t^3`` of eq. H.9 (fig H.1's red line).

    Attributes:
        a, b: the coefficients. n_star: the number of non-zero eigenvalues (H.7).
        t: ``(n*,)`` the grid ``i / n*``, ``i = 1..n*``. eigvals: ``(n*,)`` the non-zero
        eigenvalues ascending. r2: coefficient of determination of the fit.
    """

    a: float
    b: float
    n_star: int
    t: np.ndarray
    eigvals: np.ndarray
    r2: float

    def __call__(self, t) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return self.a * t + self.b * t ** 3


def nonzero_eigvals(eigvals, rtol: float | None = None) -> np.ndarray:
    """The eigenvalues with ``|lambda| > rtol max|lambda|``, ascending (H.7's ``n*`` of them).

    ``rtol`` defaults to ``n * machine eps`` (numpy's ``matrix_rank`` convention): exact zeros
    come out of ``eigvalsh`` as rounding noise of that size.
    """
    lam = np.sort(_eigvals(eigvals))
    tol = lam.size * np.finfo(np.float64).eps if rtol is None else check_scalar(
        rtol, "rtol", low=0.0, high=1.0, high_open=True)
    keep = lam[np.abs(lam) > tol * np.abs(lam).max()]
    if keep.size == 0:
        raise ValueError("every eigenvalue is zero: no spectrum to describe")
    return keep


def fit_cubic_profile(eigvals, rtol: float | None = None) -> CubicProfile:
    """Least-squares ``lambda_i ~ a t_i + b t_i^3`` on ``t_i = i / n*``, ``i = 1..n*`` (eq. H.9).

    The source fits "a cubic" to fig H.1's ascending eigenvalues with no more detail; the form
    is H.9's (two parameters, through the origin) and the grid is ``lambda(t) = lambda_{n* t}``
    of H.8 (the same t the cumulant integrals use). The fit is over the non-zero eigenvalues.

    Raises:
        ValueError: fewer than 2 non-zero eigenvalues, or as `nonzero_eigvals`.
    """
    lam = nonzero_eigvals(eigvals, rtol)
    n_star = lam.size
    if n_star < 2:
        raise ValueError(f"need >= 2 non-zero eigenvalues to fit a and b, got {n_star}")
    t = np.arange(1, n_star + 1) / n_star
    A = np.stack([t, t ** 3], axis=1)
    (a, b), *_ = np.linalg.lstsq(A, lam, rcond=None)
    resid = lam - A @ np.array([a, b])
    ss_tot = np.sum((lam - lam.mean()) ** 2)
    r2 = 1.0 - np.sum(resid ** 2) / ss_tot if ss_tot > 0 else float("nan")
    return CubicProfile(float(a), float(b), n_star, t, lam, float(r2))


def profile_cumulants(n_star: float, a: float, b: float, orders=(1, 2, 3)) -> np.ndarray:
    """``K_k = 2^(k-1) (k-1)! n* int_0^1 (a t + b t^3)^(2k) dt`` (app. H.2).

    The integral is the exact binomial sum ``sum_j C(2k, j) a^(2k-j) b^j / (2k + 2j + 1)``;
    for ``k = 1, 2, 3`` it gives the source's ``K_1..K_3`` with its two typos corrected
    (module docstring).

    Raises:
        ValueError: ``n_star <= 0``, non-finite ``a``/``b`` or bad orders.
    """
    n_star = check_scalar(n_star, "n_star", low=0.0, low_open=True)
    a, b = check_scalar(a, "a"), check_scalar(b, "b")
    out = []
    for k in _orders(orders):
        m = 2 * k
        integral = sum(math.comb(m, j) * a ** (m - j) * b ** j / (m + 2 * j + 1)
                       for j in range(m + 1))
        out.append(_cumulant_factor(k) * n_star * integral)
    return np.array(out)


def cumulant_log_likelihood(kappas, sigmas, n_star: float, a: float, b: float) -> float:
    """``sum_n log N(kappa_n | K_n(n*, a, b), sigma_n^2)``, the likelihood of eq. H.10.

    H.10 is the source's future work ("put a prior on n*, a, b or use maximum likelihood"):
    this is its likelihood for orders ``1..m`` (``m = len(kappas)``), for a caller's prior or
    optimiser; the source gives no ``sigma_n`` (the k-statistics' standard errors are a choice).

    Raises:
        ValueError: mismatched lengths, non-positive ``sigmas`` or bad profile parameters.
    """
    k = np.asarray(kappas, dtype=np.float64).ravel()
    sd = np.asarray(sigmas, dtype=np.float64).ravel()
    if k.size == 0 or k.shape != sd.shape or not np.all(np.isfinite(k)):
        raise ValueError(f"kappas and sigmas must be finite and of one non-zero length, got "
                         f"{k.size} and {sd.size}")
    if not np.all(sd > 0) or not np.all(np.isfinite(sd)):
        raise ValueError(f"sigmas must be finite and > 0, got {sigmas!r}")
    K = profile_cumulants(n_star, a, b, range(1, k.size + 1))
    return float(np.sum(stats.norm.logpdf(k, loc=K, scale=sd)))


def thesis_matrix(seed: int | torch.Generator = 0) -> torch.Tensor:
    """App. H's ``H = X^T X`` with ``X`` ``500 x 400`` ``N(0, 1)`` (a 400 x 400 PSD matrix)."""
    return random_gram(X_ROWS, X_COLS, seed=seed)
