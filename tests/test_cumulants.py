"""Tests of lalr_core.methods.curvature.cumulants (seed 004 appendix H): the cumulants of the squared
gradient norm ``s = ||H eps||^2`` at ``theta* + eps``, ``eps ~ N(0, I)``, on a quadratic with a
symmetric PSD Hessian (the source's assumptions), and the cubic eigenvalue profile."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate

from lalr_core.methods.curvature import cumulants as cu


def known_spectrum_matrix(lam, seed=0):
    """``Q diag(lam) Q^T`` with a random orthogonal ``Q`` (a symmetric PSD Hessian)."""
    gen = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(len(lam), len(lam), generator=gen, dtype=torch.float64))
    return Q @ torch.diag(torch.tensor(lam, dtype=torch.float64)) @ Q.T


def test_cumulants_on_a_known_spectrum(one_thread):
    """Sample k-statistics of ``s`` match ``2^(n-1)(n-1)! sum lambda^(2n)`` within 4 standard
    errors; the standard errors are the k-statistics' large-sample variances (Kendall & Stuart:
    ``Var k1 = k2/N``, ``Var k2 ~ (k4 + 2 k2^2)/N``,
    ``Var k3 ~ (k6 + 9 k2 k4 + 9 k3^2 + 6 k2^3)/N``) from the exact cumulants. Zero eigenvalues
    contribute nothing (the spectrum with three zeros has the cumulants of the five others)."""
    lam = [3.0, 2.0, 1.5, 1.0, 0.5, 0.0, 0.0, 0.0]
    H = known_spectrum_matrix(lam)
    N = 200_000
    s = cu.squared_gradient_norms(H, N, seed=1, batch=50_000)
    assert s.shape == (N,) and torch.all(s >= 0)
    k = cu.cumulants_from_spectrum(lam, orders=range(1, 7))
    np.testing.assert_allclose(k, cu.cumulants_from_spectrum(lam[:5], orders=range(1, 7)))
    lam2 = np.square(lam)
    np.testing.assert_allclose(k[:3], [lam2.sum(), 2 * (lam2 ** 2).sum(), 8 * (lam2 ** 3).sum()])
    var = np.array([k[1], k[3] + 2 * k[1] ** 2,
                    k[5] + 9 * k[1] * k[3] + 9 * k[2] ** 2 + 6 * k[1] ** 3]) / N
    est = cu.sample_cumulants(s)
    assert np.all(np.abs(est - k[:3]) < 4 * np.sqrt(var)), (est, k[:3], np.sqrt(var))


def test_one_eigenvalue_is_a_scaled_chi_square():
    """With one eigenvalue ``s = lambda^2 x^2``, a scaled chi-square(1): kappa_n =
    ``lambda^(2n) 2^(n-1) (n-1)!`` (mean ``lambda^2``, variance ``2 lambda^4``)."""
    k = cu.cumulants_from_spectrum([2.0, 0.0], orders=(1, 2, 3, 4))
    np.testing.assert_allclose(k, [4.0, 2 * 16.0, 8 * 64.0, 48 * 256.0])


def test_thesis_matrix_h1_h2(one_thread):
    """Figs H.1/H.2 at the source's setting (X 500 x 400 N(0, 1)): the cubic a t + b t^3 fits
    the ascending eigenvalues (R^2 > 0.95); 20 000 draws give kappa_1..3 within 2%, 5%, 15%
    (our tolerances); the magnitudes are the thesis's (1e8, 1e14, 1e21); the draws are
    right-skewed (kappa_3 > 0)."""
    H = cu.thesis_matrix(seed=0)
    assert H.shape == (cu.X_COLS, cu.X_COLS)
    w = torch.linalg.eigvalsh(H).numpy()
    fit = cu.fit_cubic_profile(w)
    assert fit.n_star == cu.X_COLS and fit.r2 > 0.95 and fit.a > 0 and fit.b > 0
    np.testing.assert_allclose(fit(fit.t), fit.a * fit.t + fit.b * fit.t ** 3)
    exact = cu.cumulants_from_spectrum(w)
    est = cu.sample_cumulants(cu.squared_gradient_norms(H, 20_000, seed=1))
    assert np.all(np.abs(est / exact - 1) < [0.02, 0.05, 0.15])
    assert np.all(np.abs(np.log10(exact / np.array(cu.THESIS_EXACT_KAPPAS))) < 0.5)
    assert est[2] > 0
    # the profile's K_k land near the exact cumulants (the continuum approximation of H.8)
    K = cu.profile_cumulants(fit.n_star, fit.a, fit.b)
    assert np.all(np.abs(K / exact - 1) < [0.02, 0.08, 0.20])


def test_profile_cumulants_are_the_corrected_closed_forms():
    """``K_1..K_3`` of app. H.2 with the printed typos corrected (``2ab/5``, ``2 b^4 / 13``),
    and the integral itself by quadrature."""
    n, a, b = 37.0, 1.3, -0.7
    K1 = n * (a ** 2 / 3 + 2 * a * b / 5 + b ** 2 / 7)
    K2 = n * (4 * a ** 2 * b ** 2 / 3 + 8 * a ** 3 * b / 7 + 2 * a ** 4 / 5 + 8 * a * b ** 3 / 11
              + 2 * b ** 4 / 13)
    K3 = n * (120 * a ** 4 * b ** 2 / 11 + 160 * a ** 3 * b ** 3 / 13 + 8 * a ** 2 * b ** 4
              + 16 * a ** 5 * b / 3 + 8 * a ** 6 / 7 + 48 * a * b ** 5 / 17 + 8 * b ** 6 / 19)
    np.testing.assert_allclose(cu.profile_cumulants(n, a, b), [K1, K2, K3], rtol=1e-13)
    for k, Kk in zip((4, 5), cu.profile_cumulants(n, a, b, orders=(4, 5)), strict=True):
        quad, _ = integrate.quad(lambda t, m=2 * k: (a * t + b * t ** 3) ** m, 0, 1)
        assert Kk == pytest.approx(2 ** (k - 1) * math.factorial(k - 1) * n * quad, rel=1e-10)
    # a spectrum that is exactly the profile: the sum over i = 1..n* approaches n* int (H.8)
    t = np.arange(1, 2001) / 2000
    np.testing.assert_allclose(cu.cumulants_from_spectrum(a * t + b * t ** 3),
                               cu.profile_cumulants(2000, a, b), rtol=5e-3)
    # H.10's likelihood is largest at the parameters that produced the kappas
    kap = cu.profile_cumulants(n, a, b)
    best = cu.cumulant_log_likelihood(kap, 0.01 * np.abs(kap), n, a, b)
    assert best > cu.cumulant_log_likelihood(kap, 0.01 * np.abs(kap), n, a * 1.1, b)


def test_nonzero_eigvals_and_fit_drop_the_zeros():
    lam = np.r_[np.zeros(10), 2.0 * np.arange(1, 21) / 20 + 5.0 * (np.arange(1, 21) / 20) ** 3]
    lam[:10] += 1e-15  # rounding noise of eigvalsh
    fit = cu.fit_cubic_profile(np.random.default_rng(0).permutation(lam))
    assert fit.n_star == 20
    assert fit.a == pytest.approx(2.0, rel=1e-10) and fit.b == pytest.approx(5.0, rel=1e-10)
    assert fit.r2 == pytest.approx(1.0)


@pytest.mark.parametrize("call", [
    lambda: cu.squared_gradient_norms(torch.tensor([[1.0, 2.0], [0.0, 1.0]]), 10),
    lambda: cu.squared_gradient_norms(torch.ones(2, 3), 10),
    lambda: cu.squared_gradient_norms(torch.eye(2), 0),
    lambda: cu.cumulants_from_spectrum([]),
    lambda: cu.cumulants_from_spectrum([1.0], orders=(0,)),
    lambda: cu.sample_cumulants(np.ones(100), orders=(5,)),
    lambda: cu.sample_cumulants(np.ones(2)),
    lambda: cu.nonzero_eigvals(np.zeros(4)),
    lambda: cu.fit_cubic_profile([0.0, 3.0]),
    lambda: cu.profile_cumulants(0, 1.0, 1.0),
    lambda: cu.cumulant_log_likelihood([1.0, 2.0], [1.0], 10, 1.0, 1.0),
    lambda: cu.cumulant_log_likelihood([1.0], [0.0], 10, 1.0, 1.0),
])
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()
