"""Random-walk and AR(1) baselines: App. A helpers, closed forms, simulators.

``G`` (eq. A.1), ``norm_variance`` (A.8), the decayed sums (A.14-A.15), ``cos_threshold``
(A.18-A.20), the random-walk expectations (eqs. 3.6-3.8, 3.14), the Jensen bounds of the
AR(1) process (sec. 3.2.6) and the simulators ``simulate_rw`` / ``simulate_ar`` (eq. 3.16).

Part of `lalr_core.methods.trajectory` (its docstring states the conventions).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from lalr_core.methods.trajectory.validation import (
    check_alpha,
    check_scalar,
    check_steps,
    check_window,
)

# ----------------------------------------------------------------------------- constants
SERIES_MIN_N = 100.0  # n >= this: log G(n) from its asymptotic series (lgamma differences lose
#                       digits: at n = 3e5 they give n - 2 G(n)^2 with a 3e-4 relative error)


# ----------------------------------------------------------------------------- App. A helpers
def _log_g_tail(x: np.ndarray) -> np.ndarray:
    """Return ``log G(2x) - log(x)/2`` for large ``x``.

    Asymptotic series of ``log Gamma(x+1/2) - log Gamma(x)`` (Bernoulli polynomials,
    DLMF 5.11.8); the next term is O(x^-9).
    """
    return -1 / (8 * x) + 1 / (192 * x**3) - 1 / (640 * x**5) + 17 / (14336 * x**7)


def _positive_n(n) -> np.ndarray:
    arr = np.asarray(n, dtype=np.float64)
    if not np.all(arr > 0):  # also rejects nan
        raise ValueError(f"n must be > 0, got {n!r}")
    return arr


def G(n):
    """``G(n) = Gamma((n+1)/2) / Gamma(n/2)`` in float64 log space (eq. A.1).

    ``sqrt(2) G(n)`` is the mean of a chi_n variable (Lemma A.3). Below ``SERIES_MIN_N`` it is
    ``exp(lgamma((n+1)/2) - lgamma(n/2))``; above, ``log G`` comes from its asymptotic series,
    which keeps full precision where the lgamma difference cancels (relative error < 1e-15).
    Note the recurrence is ``G(n) = (n-1)/(n-2) G(n-2)``; the thesis's ``G(n-1)`` is a typo.

    Args:
        n: dimension(s) ``> 0``, float or array.

    Returns:
        float for scalar ``n``, else a float64 array of ``n``'s shape.

    Raises:
        ValueError: if any ``n <= 0``.
    """
    arr = _positive_n(n)
    x = arr / 2
    big = arr >= SERIES_MIN_N
    x_small = np.where(big, 1.0, x)  # keep the unused branch cheap and finite
    small = np.exp(special.gammaln(x_small + 0.5) - special.gammaln(x_small))
    out = np.where(big, np.sqrt(x) * np.exp(_log_g_tail(np.where(big, x, SERIES_MIN_N))), small)
    return float(out) if out.ndim == 0 else out


def norm_variance(sigma, n):
    """``Var ||eps|| = sigma^2 (n - 2 G(n)^2)`` for ``eps ~ N(0, sigma^2 I_n)`` (eq. A.8).

    Also ``Var[D_s(t)] = Var[D_t(t)] = t * norm_variance`` for a random walk (A.22, A.24).
    For large ``n`` the difference is formed as ``-n expm1(2 tail)``: the naive form loses
    all digits by ``n ~ 1e7`` (``2 G^2`` and ``n`` agree to 16 digits).

    Args:
        sigma: noise std ``> 0``.
        n: dimension(s) ``> 0``.

    Returns:
        float or float64 array of ``n``'s shape.
    """
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    arr = _positive_n(n)
    x = np.where(arr >= SERIES_MIN_N, arr / 2, SERIES_MIN_N)
    series = -arr * np.expm1(2 * _log_g_tail(x))
    out = sigma**2 * np.where(arr >= SERIES_MIN_N, series, arr - 2 * np.asarray(G(arr)) ** 2)
    return float(out) if out.ndim == 0 else out


def _geometric(lam2, k):
    """``sum_{i=0}^{k-1} lam2^i = (1 - lam2^k) / (1 - lam2)`` (A.13), ``k`` when ``lam2 = 1``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (1 - lam2**k) / (1 - lam2)
    return np.where(lam2 == 1, k, ratio)


def decayed_sum_norm_mean(k, lam, sigma, n):
    """``E||sum_{i=1}^k lam^(i-1) eps_i|| = sigma sqrt(2 (1-lam^2k)/(1-lam^2)) G(n)`` (A.14).

    Args:
        k: number of terms ``>= 1`` (int or int array).
        lam: decay in ``[0, 1]`` (``lam = 1`` is the plain sum of Lemma A.9).
        sigma: noise std ``> 0``.
        n: dimension ``> 0``.

    Returns:
        float64 array of ``k``'s shape.
    """
    k = check_steps(k, integer=True)
    lam = check_scalar(lam, "lam", low=0.0, high=1.0)
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    return (sigma * np.sqrt(2 * _geometric(lam**2, k))
            * G(check_scalar(n, "n", low=0, low_open=True)))


def decayed_sum_sq_norm_mean(k, lam, sigma, n):
    """``E||sum_{i=1}^k lam^(i-1) eps_i||^2 = sigma^2 n (1-lam^2k)/(1-lam^2)`` (A.15)."""
    k = check_steps(k, integer=True)
    lam = check_scalar(lam, "lam", low=0.0, high=1.0)
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    return sigma**2 * check_scalar(n, "n", low=0, low_open=True) * _geometric(lam**2, k)


def cos_threshold(n, p: float = 0.01):
    """Chebyshev threshold ``k = 1/sqrt(n p)`` of the cosine of random vectors (A.18-A.19).

    ``P[|S_cos| >= k] <= p``; ``p = 0.01`` gives ``10/sqrt(n)`` (A.20).
    """
    p = check_scalar(p, "p", low=0.0, low_open=True, high=1.0)
    return 1 / np.sqrt(_positive_n(n) * p)


# ----------------------------------------------------------------------------- closed forms
def rw_expected_ds(t, sigma, n):
    """Random walk ``E[D_s(t)] = t sigma sqrt(2) G(n)`` (eq. 3.6), ``t`` a step array."""
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    return check_steps(t) * sigma * np.sqrt(2) * G(check_scalar(n, "n", low=0, low_open=True))


def rw_expected_dt(t, sigma, n):
    """Random walk ``E[D_t(t)] = sigma sqrt(2t) G(n)`` (eqs. 3.7-3.8)."""
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    return sigma * np.sqrt(2 * check_steps(t)) * G(check_scalar(n, "n", low=0, low_open=True))


def rw_expected_psi_window(t, window):
    """Random-walk baseline of ``psi_N``: ``1/sqrt(t)`` for ``t < N``, then ``1/sqrt(N)``.

    Eq. 3.14 applied to the window (our reading of fig 3.19's baseline); it is the ratio of expectations, which the
    mean of the ratio exceeds by ``O(1/n)`` (eq. 3.12).
    """
    return 1 / np.sqrt(np.minimum(check_steps(t), check_window(window)))


def check_ar(alpha, sigma, n, d) -> tuple[float, float, float, float]:
    return (check_alpha(alpha), check_scalar(sigma, "sigma", low=0.0, low_open=True),
            check_scalar(n, "n", low=0.0, low_open=True), check_scalar(d, "d", low=0.0))


def ar_expected_ds(t, alpha, sigma, n, d):
    """Jensen upper bound on the AR(1) ``E[D_s(t)]`` (sec. 3.2.6, via eq. 3.19, A.4, A.10).

    ``sum_{k=1}^t sqrt((1-a)^2 a^(2k-2) d^2 + sigma^2 n ((1-a)(1-a^(2k-2))/(1+a) + 1))``.

    Args:
        t: integer steps ``>= 1``, any order.
        alpha: AR coefficient in ``[0, 1)``; ``alpha = 0`` gives the limit (``0**0 = 1``).
        sigma: noise std ``> 0``.
        n: dimension ``> 0``.
        d: ``||theta_0 - mu|| >= 0`` (the bounds depend on ``theta_0, mu`` only through it).

    Returns:
        float64 array of ``t``'s shape.
    """
    t = check_steps(t, integer=True)
    alpha, sigma, n, d = check_ar(alpha, sigma, n, d)
    if t.size == 0:
        return np.zeros(t.shape)
    a2k = alpha ** (2 * np.arange(t.max(), dtype=np.float64))  # alpha^(2k-2), k = 1..max t
    var = sigma**2 * n * ((1 - alpha) * (1 - a2k) / (1 + alpha) + 1)  # E||b_k + eps_k||^2
    return np.cumsum(np.sqrt((1 - alpha) ** 2 * a2k * d**2 + var))[t - 1]


def ar_expected_dt(t, alpha, sigma, n, d):
    """Jensen upper bound on the AR(1) ``E[D_t(t)] = E||theta_t - theta_0||`` (sec. 3.2.6).

    ``sqrt((1 - a^t)^2 d^2 + sigma^2 n (1 - a^2t)/(1 - a^2))``; arguments as
    ``ar_expected_ds`` (``t`` need not be integer here).
    """
    t = check_steps(t)
    alpha, sigma, n, d = check_ar(alpha, sigma, n, d)
    return np.sqrt((1 - alpha**t) ** 2 * d**2 + sigma**2 * n * _geometric(alpha**2, t))


def ar_limit_ds(t, sigma, n, d):
    """``alpha -> 0`` limit of ``ar_expected_ds``: ``sqrt(d^2 + s^2 n) + (t-1) s sqrt(2n)``."""
    _, sigma, n, d = check_ar(0.0, sigma, n, d)
    return np.sqrt(d**2 + sigma**2 * n) + (check_steps(t) - 1) * sigma * np.sqrt(2 * n)


def ar_limit_dt(t, sigma, n, d):
    """``alpha -> 0`` limit of ``ar_expected_dt``: ``sqrt(d^2 + sigma^2 n)`` for every ``t``."""
    _, sigma, n, d = check_ar(0.0, sigma, n, d)
    return np.full(check_steps(t).shape, np.sqrt(d**2 + sigma**2 * n))


# ----------------------------------------------------------------------------- simulators
def _start(value, n: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)) if np.ndim(value) == 0 \
        else np.asarray(value, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or shape ({n},), got {arr.shape}")
    return arr


def _sim_args(n, T) -> tuple[int, int]:
    for name, v, lo in (("n", n, 1), ("T", T, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(n), int(T)


def simulate_rw(n: int, T: int, sigma: float, theta0=0.0,
                seed: int | np.random.Generator = 0) -> np.ndarray:
    """Gaussian random walk ``theta_t = theta_{t-1} + s_t``, ``s_t ~ N(0, sigma^2 I_n)``.

    Sec. 3.2.4, float64.

    Args:
        n: dimension.
        T: number of steps.
        sigma: step std ``> 0``.
        theta0: start, scalar or ``(n,)``.
        seed: int or numpy ``Generator``.

    Returns:
        ``(T+1, n)`` path, row 0 = ``theta0``.
    """
    n, T = _sim_args(n, T)
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    path = np.empty((T + 1, n))
    path[0] = _start(theta0, n, "theta0")
    steps = sigma * np.random.default_rng(seed).standard_normal((T, n))
    path[1:] = path[0] + np.cumsum(steps, axis=0)
    return path


def simulate_ar(n: int, T: int, alpha: float, sigma: float, theta0, mu,
                seed: int | np.random.Generator = 0) -> np.ndarray:
    """AR(1) ``theta_t = (1-alpha) mu + alpha theta_{t-1} + eps_t`` (eq. 3.16).

    Args:
        n: dimension.
        T: number of steps.
        alpha: AR coefficient in ``[0, 1)`` (the thesis allows ``(-1, 1)``; the fits and
            plots use ``[0, 1)``).
        sigma: noise std ``> 0``.
        theta0: start, scalar or ``(n,)``.
        mu: mean, scalar or ``(n,)``.
        seed: int or numpy ``Generator``.

    Returns:
        ``(T+1, n)`` float64 path, row 0 = ``theta0``.
    """
    n, T = _sim_args(n, T)
    alpha = check_alpha(alpha)
    sigma = check_scalar(sigma, "sigma", low=0.0, low_open=True)
    mu = _start(mu, n, "mu")
    eps = sigma * np.random.default_rng(seed).standard_normal((T, n))
    path = np.empty((T + 1, n))
    path[0] = _start(theta0, n, "theta0")
    for t in range(1, T + 1):
        path[t] = (1 - alpha) * mu + alpha * path[t - 1] + eps[t - 1]  # eq. 3.16
    return path
