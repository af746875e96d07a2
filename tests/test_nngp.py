"""Tests of lalr_core.methods.signal.nngp (``[ATDL-notes]`` sec. 1.2, E16): the NNGP kernel recursion, the
q-/c-maps and chi_1 of random deep nets, and the empirical kernel of finite random nets.

Oracles: scipy ``dblquad`` on the exact integration region (ReLU) or the whole plane (tanh),
Gauss-Hermite quadrature against the closed forms, Monte Carlo with stated standard errors,
the closed-form ReLU/linear length maps, our reference tanh critical-line table, and the
exact unbiasedness of the empirical kernel where it holds at any width."""

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from lalr_core.methods.signal import nngp as ng


def inputs(n=8, d=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def cov_cases():
    """(q1, q2, c): unequal lengths, negative/zero/strong correlations."""
    return [(1.0, 1.0, 0.5), (0.3, 2.5, -0.9), (2.0, 0.7, 0.0), (1.3, 0.4, 0.95),
            (0.05, 3.0, -0.3)]


def relu_product_by_quad(q1, q2, c):
    """``E[relu(u) relu(v)]`` by adaptive 1-D quadrature over ``z1 > 0`` (where ``u > 0``) of
    ``u`` times the exact inner mean ``E[relu(m + sd z2)] = m Phi(m/sd) + sd pdf(m/sd)``,
    ``m = sqrt(q2) c z1``, ``sd = sqrt(q2 (1 - c^2))`` (independent of the arc-cosine form)."""
    s1, sd = np.sqrt(q1), np.sqrt(q2 * (1 - c * c))

    def f(z1):
        m = np.sqrt(q2) * c * z1
        inner = m * stats.norm.cdf(m / sd) + sd * stats.norm.pdf(m / sd)
        return s1 * z1 * inner * stats.norm.pdf(z1)

    return integrate.quad(f, 0, np.inf, epsabs=1e-14, epsrel=1e-12, limit=200)[0]


def legendre_product(phi, q1, q2, c, nodes=300, half_width=9.0):
    """``E[phi(u) phi(v)]`` by tensor Gauss-Legendre on ``[-9, 9]^2`` in ``(z1, z2)``: a rule
    independent of Gauss-Hermite (the Gaussian tail beyond 9 is ~1e-18)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    z, w = half_width * x, half_width * w * stats.norm.pdf(half_width * x)
    u = np.sqrt(q1) * z[:, None]
    v = np.sqrt(q2) * (c * z[:, None] + np.sqrt(1 - c * c) * z[None, :])
    return w @ (phi(u) * phi(v)) @ w


# ----------------------------------------------------------------------------- E[phi phi]
def test_relu_arc_cosine_equals_quadrature():
    """Cho & Saul's arc-cosine kernel equals adaptive quadrature to 1e-8 relative."""
    for q1, q2, c in cov_cases():
        closed = ng.gaussian_product_expectation(q1, q2, c * np.sqrt(q1 * q2), "relu")
        quad = relu_product_by_quad(q1, q2, c)
        assert closed == pytest.approx(quad, rel=1e-8), (q1, q2, c)
    # c = +-1: q/2 on the diagonal, 0 for perfectly anti-correlated inputs
    assert ng.gaussian_product_expectation(2.0, 2.0, 2.0, "relu") == pytest.approx(1.0)
    assert abs(ng.gaussian_product_expectation(2.0, 0.5, -1.0, "relu")) < 1e-15


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh"])
def test_closed_forms_and_quadrature_match_monte_carlo(activation):
    """4e5 Gaussian pairs: the sample mean of ``phi(u) phi(v)`` is within 5 standard errors of
    the closed form (ReLU, erf) or the 101-node quadrature (tanh)."""
    rng = np.random.default_rng(1)
    phi = ng._phi(activation)
    for q1, q2, c in cov_cases()[:3]:
        L = np.linalg.cholesky([[q1, c * np.sqrt(q1 * q2)], [c * np.sqrt(q1 * q2), q2]])
        u, v = L @ rng.standard_normal((2, 400_000))
        prod = phi(u) * phi(v)
        se = prod.std() / np.sqrt(prod.size)
        want = ng.gaussian_product_expectation(q1, q2, c * np.sqrt(q1 * q2), activation)
        assert abs(prod.mean() - want) < 5 * se, (activation, q1, q2, c)


def test_erf_closed_form_equals_quadrature():
    """Williams' erf kernel equals 201-node Gauss-Hermite (erf is entire: exponential
    convergence) to 1e-10, on single pairs and through a 3-layer recursion."""
    for q1, q2, c in cov_cases():
        q12 = c * np.sqrt(q1 * q2)
        closed = ng.gaussian_product_expectation(q1, q2, q12, "erf")
        quad = ng.gaussian_product_expectation(q1, q2, q12, "erf", nodes=201, closed_form=False)
        assert closed == pytest.approx(quad, rel=1e-10, abs=1e-14)
    X = inputs()
    np.testing.assert_allclose(
        ng.nngp_kernel(X, 3, "erf", 2.0, 0.1),
        ng.nngp_kernel(X, 3, "erf", 2.0, 0.1, nodes=201, closed_form=False), rtol=1e-10)


def test_gauss_hermite_quadrature_path():
    """The quadrature path itself: tanh's Gauss-Hermite value equals Gauss-Legendre to 1e-7 at
    101 nodes and 1e-9 at 201 for variances <= 3 (101 nodes degrade as tanh(sqrt(q) z) nears a
    step), and a swapped pair gives the same value; for the kinked ReLU it converges only
    algebraically (error ~ 1/nodes)."""
    for q1, q2, c in cov_cases():
        want = legendre_product(np.tanh, q1, q2, c)
        gh = ng.gaussian_product_expectation(q1, q2, c * np.sqrt(q1 * q2), "tanh")
        assert gh == pytest.approx(want, rel=1e-7)
        assert ng.gaussian_product_expectation(q1, q2, c * np.sqrt(q1 * q2), "tanh", nodes=201
                                               ) == pytest.approx(want, rel=1e-9)
        assert gh == ng.gaussian_product_expectation(q2, q1, c * np.sqrt(q1 * q2), "tanh")
    X = inputs()
    K = ng.nngp_kernel(X, 2, "relu", 2.0, 0.1)
    err = [np.abs(ng.nngp_kernel(X, 2, "relu", 2.0, 0.1, nodes=m, closed_form=False) / K - 1)
           .max() for m in (51, 201)]
    assert err[1] < 0.02 and 3 < err[0] / err[1] < 5, err


# ----------------------------------------------------------------------------- recursion
def test_relu_diagonal_follows_the_qmap():
    """sigma_b = 0: ``q^(l+1) = sigma_w2 q^l / 2``, so ``diag K^l = (sigma_w2/2)^l diag K^0``;
    in general every layer's diagonal is `qmap` of the previous one (tanh: 2-D quadrature at
    c = 1 vs the 1-D map with the same rule; the 1-D map's default rule, chosen from q, is
    finer, and both agree to the 2-D rule's error)."""
    X = inputs()
    K = ng.nngp_kernel(X, 4, "relu", 1.6, 0.0)
    d0 = np.sum(X ** 2, axis=1) * 1.6 / X.shape[1]
    for l in range(5):
        np.testing.assert_allclose(np.diag(K[l]), 0.8 ** l * d0, rtol=1e-13)
    np.testing.assert_allclose(ng.qmap(np.diag(K[2]), "relu", 1.6, 0.0), np.diag(K[3]),
                               rtol=1e-13)
    Kt = ng.nngp_kernel(X, 3, "tanh", 1.5, 0.05)
    for l in range(3):
        np.testing.assert_allclose(np.diag(Kt[l + 1]), ng.qmap(np.diag(Kt[l]), "tanh", 1.5, 0.05,
                                                               nodes=ng.QUAD_NODES), rtol=1e-12)
        np.testing.assert_allclose(np.diag(Kt[l + 1]), ng.qmap(np.diag(Kt[l]), "tanh", 1.5, 0.05),
                                   rtol=1e-6)


def test_linear_recursion_and_input_layer():
    """Linear phi: ``K^l = sigma_b2 + sigma_w2 K^(l-1)`` from ``K^0 = sigma_b2 + sigma_w2 X X^T
    / d_in`` (the input-layer convention)."""
    X = inputs(6, 4)
    K = ng.nngp_kernel(X, 3, "linear", 1.7, 0.3)
    want = 0.3 + 1.7 * X @ X.T / 4
    np.testing.assert_allclose(K[0], want, rtol=1e-14)
    for l in range(1, 4):
        want = 0.3 + 1.7 * want
        np.testing.assert_allclose(K[l], want, rtol=1e-13)


@pytest.mark.parametrize("activation", ["relu", "erf", "tanh", np.sin])
def test_kernel_is_symmetric_psd(activation):
    """Every layer's kernel is exactly symmetric and PSD (eigenvalues >= -1e-12 max), also with
    a repeated input (a singular Gram matrix) and a callable activation."""
    X = inputs(10, 3)
    X[9] = X[2]
    K = ng.nngp_kernel(X, 3, activation, 1.8, 0.2)
    assert K.shape == (4, 10, 10) and K.dtype == np.float64
    for Kl in K:
        np.testing.assert_array_equal(Kl, Kl.T)
        lam = np.linalg.eigvalsh(Kl)
        assert lam.min() >= -1e-12 * lam.max(), lam.min()
        np.testing.assert_allclose(Kl[9], Kl[2], rtol=1e-12)


# ----------------------------------------------------------------------------- c-map, chi_1
def test_cmap_fixed_point_and_chi1_is_its_slope():
    """At ``q*``: ``c* = 1`` is a fixed point of the c-map and chi_1 (Poole eq. 7) equals the
    c-map's finite-difference slope at ``c = 1`` (tanh, erf); ReLU's chi_1 is ``sigma_w2/2``."""
    for act, sw, sb in (("tanh", 1.5, 0.05), ("erf", 2.5, 0.1)):
        qs = ng.q_fixed_point(act, sw, sb)
        assert ng.qmap(qs, act, sw, sb) == pytest.approx(qs, rel=1e-10)
        assert ng.cmap(1.0, qs, act, sw, sb) == pytest.approx(1.0, rel=1e-12)
        h = 1e-5
        slope = (1 - ng.cmap(1 - h, qs, act, sw, sb)) / h
        assert slope == pytest.approx(float(ng.chi1(qs, act, sw)), rel=1e-4), act
    assert float(ng.chi1(0.7, "relu", 2.0)) == pytest.approx(1.0, rel=1e-12)
    # tanh by quadrature agrees with a callable + derivative
    np.testing.assert_allclose(ng.chi1([0.2, 1.0], np.tanh, 1.3,
                                       derivative=lambda x: 1 - np.tanh(x) ** 2),
                               ng.chi1([0.2, 1.0], "tanh", 1.3), rtol=1e-13)


@pytest.mark.parametrize("sb2,sw2_crit,q_star", [(0.05, 1.7610, 0.5700), (0.5, 2.8432, 1.9710),
                                                 (2.0, 4.2664, 4.8306)])
def test_tanh_critical_line_matches_our_reference_values(sb2, sw2_crit, q_star):
    """Our reference table (adaptive quadrature and 301-node Gauss-Hermite agree to 1e-6): the
    chi_1 = 1 root in sigma_w2 and its ``q*``, to the table's last digit."""
    def excess(sw):
        return float(ng.chi1(ng.q_fixed_point("tanh", sw, sb2), "tanh", sw)) - 1

    sw = optimize.brentq(excess, 1.2, 5.0, xtol=1e-8)
    assert sw == pytest.approx(sw2_crit, abs=6e-5)
    assert ng.q_fixed_point("tanh", sw, sb2) == pytest.approx(q_star, abs=6e-5)


# ----------------------------------------------------------------------------- empirical
def zscores(emp: ng.EmpiricalKernel, K):
    """Entrywise (mean - K) / standard error over seeds, layers >= 1."""
    se = emp.std[1:] / np.sqrt(emp.per_seed.shape[0])
    return np.abs(emp.mean[1:] - K[1:]) / se


@pytest.mark.parametrize("sampler", ng.SAMPLERS)
def test_empirical_kernel_is_unbiased_where_exact(sampler):
    """At any width the empirical kernel is unbiased at layer 1 (its rows are exactly
    N(0, K^0)) and, for a linear activation, at every layer: 400 nets of width 16-32, every
    entry within 5 standard errors. A wrong fan-in scaling or an off-by-one layer fails."""
    X = inputs(6, 4)
    emp = ng.empirical_nngp_kernel(X, 1, "relu", 2.0, 0.1, 32, 400, seed=2, sampler=sampler)
    K = ng.nngp_kernel(X, 1, "relu", 2.0, 0.1)
    np.testing.assert_array_equal(emp.per_seed[:, 0], np.broadcast_to(K[0], (400, 6, 6)))
    assert zscores(emp, K).max() < 5
    emp = ng.empirical_nngp_kernel(X, 3, "linear", 1.2, 0.2, 16, 400, seed=3, sampler=sampler)
    assert zscores(emp, ng.nngp_kernel(X, 3, "linear", 1.2, 0.2)).max() < 5


def test_samplers_have_the_same_law():
    """Running the net and drawing pre-activations from their conditional Gaussian give the
    same mean kernel (5 combined standard errors) and mean relative error (within 15%)."""
    X = inputs(6, 4)
    K = ng.nngp_kernel(X, 3, "tanh", 1.5, 0.1)
    a, b = (ng.empirical_nngp_kernel(X, 3, "tanh", 1.5, 0.1, 64, 300, seed=4, sampler=s)
            for s in ng.SAMPLERS)
    se = np.sqrt(a.std ** 2 + b.std ** 2)[1:] / np.sqrt(300)
    assert (np.abs(a.mean - b.mean)[1:] / se).max() < 5
    ra, rb = a.relative_errors(K).mean(), b.relative_errors(K).mean()
    assert ra == pytest.approx(rb, rel=0.15)


@pytest.mark.parametrize("sampler,seeds,band", [("conditional", 300, (3.2, 5.0)),
                                                ("weights", 16, (2.5, 6.5))])
def test_empirical_error_shrinks_like_inverse_sqrt_width(sampler, seeds, band):
    """Widths 128 and 2048 (16x): the mean per-net relative Frobenius error drops by ~4
    (``1/sqrt(N)``); the band is wide for the 16 full nets (per-net errors vary ~40%)."""
    X = inputs()
    K = ng.nngp_kernel(X, 2, "relu", 2.0, 0.1)
    err = [ng.empirical_nngp_kernel(X, 2, "relu", 2.0, 0.1, N, seeds, seed=5, sampler=sampler)
           .relative_errors(K).mean() for N in (128, 2048)]
    assert band[0] < err[0] / err[1] < band[1], err
    assert err[1] < 0.1


def test_seed_reproducibility_and_relative_errors():
    """An int seed reproduces; a Generator is advanced; relative errors take one layer."""
    X = inputs(4, 3)
    a = ng.empirical_nngp_kernel(X, 2, "erf", 1.0, 0.1, 8, 3, seed=7)
    b = ng.empirical_nngp_kernel(X, 2, "erf", 1.0, 0.1, 8, 3, seed=7)
    np.testing.assert_array_equal(a.per_seed, b.per_seed)
    g = np.random.default_rng(7)
    c = ng.empirical_nngp_kernel(X, 2, "erf", 1.0, 0.1, 8, 3, seed=g)
    d = ng.empirical_nngp_kernel(X, 2, "erf", 1.0, 0.1, 8, 3, seed=g)
    np.testing.assert_array_equal(a.per_seed, c.per_seed)
    assert not np.array_equal(c.per_seed, d.per_seed)
    K = ng.nngp_kernel(X, 2, "erf", 1.0, 0.1)
    assert a.relative_errors(K).shape == (3,)
    np.testing.assert_array_equal(a.relative_errors(K, layer=1), a.relative_errors(K[1], 1))
    assert np.all(a.relative_errors(K, layer=0) == 0)
    with pytest.raises(ValueError, match="shape"):
        a.relative_errors(np.eye(5))


# ----------------------------------------------------------------------------- bad input
GOOD = {"X": np.ones((3, 2)), "depth": 2, "activation": "relu", "sigma_w2": 1.0,
        "sigma_b2": 0.1}


@pytest.mark.parametrize("bad,match", [
    ({"depth": 0}, "depth"), ({"depth": 1.5}, "depth"), ({"depth": True}, "depth"),
    ({"sigma_w2": -1.0}, "sigma_w2"), ({"sigma_b2": -0.1}, "sigma_b2"),
    ({"sigma_w2": np.nan}, "sigma_w2"), ({"activation": "gelu"}, "activation"),
    ({"activation": 3}, "activation"), ({"X": np.ones(3)}, "2-D"),
    ({"X": np.ones((2, 2, 2))}, "2-D"), ({"X": np.ones((0, 2))}, "2-D"),
    ({"X": np.array([[1.0, np.inf]])}, "2-D")])
def test_bad_inputs_raise(bad, match):
    args = {**GOOD, **bad}
    with pytest.raises(ValueError, match=match):
        ng.nngp_kernel(**args)
    with pytest.raises(ValueError, match=match):
        ng.empirical_nngp_kernel(**args, width=4, seeds=2)


@pytest.mark.parametrize("kw,match", [({"width": 0}, "width"), ({"seeds": 0}, "seeds"),
                                      ({"sampler": "exact"}, "sampler"),
                                      ({"seed": "a"}, "seed")])
def test_bad_empirical_arguments_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        ng.empirical_nngp_kernel(**{**GOOD, "width": 4, "seeds": 2, **kw})


def test_bad_map_arguments_raise():
    with pytest.raises(ValueError, match="nodes"):
        ng.nngp_kernel(**GOOD, nodes=1)
    with pytest.raises(ValueError, match="q"):
        ng.qmap(-1.0, "tanh", 1.0, 0.0)
    with pytest.raises(ValueError, match="c must"):
        ng.cmap(1.5, 1.0, "tanh", 1.0, 0.0)
    with pytest.raises(ValueError, match="q must be > 0"):
        ng.cmap(0.5, 0.0, "tanh", 1.0, 0.0)
    with pytest.raises(ValueError, match="derivative"):
        ng.chi1(1.0, np.sin, 1.0)
    with pytest.raises(RuntimeError, match="converge"):
        ng.q_fixed_point("relu", 3.0, 0.1, max_iter=50)
