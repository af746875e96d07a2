"""Tests of lalr_core.methods.signal.mean_field (``[ATDL-notes]`` secs. 1.2-1.4; chapter 07's E1-E6 theory).

Oracles: Monte Carlo with stated standard errors, adaptive scipy quadrature of the closed
forms the module does not use (Schoenholz et al.'s ``chi_1 + sigma_w2 E[phi'' phi]`` for ``chi_q``,
Schoenholz et al.'s ``sigma_w2 E[phi'(u) phi'(v)]`` for ``chi_c``), scalar
`nngp.q_fixed_point` against the vectorised grid, plain iteration of `nngp.cmap` against the
bisection, the exact ReLU/linear/erf special cases, and our reference tables, computed
independently while planning chapter 07 (critical line, depth scales, Jacobian variances; the
notes give none), at their printed precision."""

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from lalr_core.methods.signal import mean_field as mf
from lalr_core.methods.signal import nngp as ng


def sech2(x):
    return np.exp(-2 * np.logaddexp(x, -x) + 2 * np.log(2))      # 1/cosh^2 without overflow


def gauss_quad(f):
    """``E[f(z)]``, ``z ~ N(0, 1)``, by adaptive quadrature (independent of Gauss-Hermite)."""
    return integrate.quad(lambda z: f(z) * stats.norm.pdf(z), -np.inf, np.inf,
                          epsabs=1e-13, epsrel=1e-12, limit=200)[0]


# our reference values (not in the notes): critical sigma_w2 and q* there (tanh)
CRITICAL = [(0.01, 1.4242, 0.2733), (0.05, 1.7610, 0.5700), (0.1, 1.9861, 0.8058),
            (0.5, 2.8432, 1.9710), (1.0, 3.4432, 3.0364), (2.0, 4.2664, 4.8306)]
# our reference values: tanh, sigma_b2 = 0.05: sigma_w2, q*, chi_1, c*, xi_c, xi_q
DEPTH_TABLE = [(1.0, 0.194, 0.759, 1.0, 3.6, 1.75), (1.5, 0.418, 0.939, 1.0, 15.8, 1.68),
               (2.5, 1.064, 1.134, 0.447, 11.8, 1.18), (4.0, 2.196, 1.342, 0.165, 7.0, 0.87)]


# ----------------------------------------------------------------------------- quadrature
def test_slope_moments_match_monte_carlo_and_closed_forms():
    """``mu_1, mu_2`` of tanh by Gauss-Hermite equal Monte Carlo (2e6 draws) within 4 SE;
    the erf/ReLU/linear closed forms equal the quadrature of a callable ``phi'``."""
    z = np.random.default_rng(0).standard_normal(2_000_000)
    for q in (0.3, 1.5):
        for k in (1, 2):
            draws = sech2(np.sqrt(q) * z) ** (2 * k)
            se = draws.std() / np.sqrt(z.size)
            got = float(ng.derivative_moment(q, "tanh", k))
            assert abs(got - draws.mean()) < 4 * se, (q, k)

    def erf_d(x):
        return 2 / np.sqrt(np.pi) * np.exp(-x ** 2)

    for k in (1, 2, 3):
        np.testing.assert_allclose(ng.derivative_moment([0.1, 0.5], "erf", k),
                                   ng.derivative_moment([0.1, 0.5], np.tanh, k,
                                                        derivative=erf_d), rtol=1e-8)
    assert float(ng.derivative_moment(3.0, "relu", 2)) == pytest.approx(0.5, rel=1e-12)
    assert float(ng.derivative_moment(3.0, "linear", 4)) == pytest.approx(1.0, rel=1e-12)
    # chi_1 is sigma_w2 mu_1 (one implementation)
    assert float(ng.chi1(0.7, "tanh", 2.0)) == pytest.approx(
        2.0 * gauss_quad(lambda s: sech2(np.sqrt(0.7) * s) ** 2), rel=1e-10)


# ----------------------------------------------------------------------------- q*, chi_1 grid
def test_grid_fixed_points_match_scalar_iteration_and_table():
    """The vectorised grid's ``q*`` equals `nngp.q_fixed_point` point by point, and ``q*``,
    ``chi_1`` equal the depth-scale reference table to its last digit."""
    sw = np.array([row[0] for row in DEPTH_TABLE])
    grid = mf.chi1_grid("tanh", sw, [0.05, 0.7])
    assert grid.q_star.shape == grid.chi1.shape == (4, 2) and grid.converged.all()
    for i, s in enumerate(sw):
        for j, b in enumerate((0.05, 0.7)):
            assert grid.q_star[i, j] == pytest.approx(ng.q_fixed_point("tanh", s, b), rel=1e-9)
    np.testing.assert_allclose(grid.q_star[:, 0], [r[1] for r in DEPTH_TABLE], atol=6e-4)
    np.testing.assert_allclose(grid.chi1[:, 0], [r[2] for r in DEPTH_TABLE], atol=6e-4)
    np.testing.assert_array_equal(grid.chaotic[:, 0], [False, False, True, True])


def test_closed_form_fixed_points_and_divergence():
    """ReLU ``q* = sigma_b2 / (1 - sigma_w2/2)``, linear ``sigma_b2 / (1 - sigma_w2)``; past
    ``chi_1 = 1`` the length diverges (``inf``, unconverged); tanh at ``sigma_b2 = 0`` in the
    ordered phase has ``q* = 0``."""
    g = mf.chi1_grid("relu", [0.5, 1.5, 2.5], [0.2])
    np.testing.assert_allclose(g.q_star[:2, 0], 0.2 / (1 - np.array([0.5, 1.5]) / 2),
                               rtol=1e-10)
    assert np.isinf(g.q_star[2, 0]) and not g.converged[2, 0] and np.isnan(g.chi1[2, 0])
    np.testing.assert_allclose(g.chi1[:2, 0], [0.25, 0.75])
    g = mf.chi1_grid("linear", [0.5], [0.3])
    assert g.q_star[0, 0] == pytest.approx(0.6, rel=1e-10)
    g = mf.chi1_grid("tanh", [0.8], [0.0])
    assert g.converged[0, 0] and g.q_star[0, 0] < 1e-9 and g.chi1[0, 0] == pytest.approx(0.8)


def test_e1_grid_size_runs_and_matches_critical_line():
    """E1's 120 x 80 grid: every point converges, and each column's first chaotic
    ``sigma_w2`` is the first grid value above `critical_sigma_w2` (checked on 3 columns)."""
    sw, sb = np.linspace(0.5, 5, 120), np.linspace(0, 2, 80)
    grid = mf.chi1_grid("tanh", sw, sb)
    assert grid.converged.all()
    for j in (0, 20, 79):
        crit = mf.critical_sigma_w2("tanh", sb[j])
        np.testing.assert_array_equal(grid.chaotic[:, j], sw > crit)


# ----------------------------------------------------------------------------- critical line
@pytest.mark.parametrize("sb2,sw2_crit,q_star", CRITICAL)
def test_critical_line_matches_our_reference_values(sb2, sw2_crit, q_star):
    """The reference table to its 4 decimals, and ``chi_1 = 1`` there to 1e-8."""
    sw = mf.critical_sigma_w2("tanh", sb2)
    assert sw == pytest.approx(sw2_crit, abs=6e-5)
    grid = mf.chi1_grid("tanh", [sw], [sb2])
    assert grid.q_star[0, 0] == pytest.approx(q_star, abs=6e-5)
    assert grid.chi1[0, 0] == pytest.approx(1.0, abs=1e-8)


def adaptive_chi1_root(sb2: float) -> tuple[float, float]:
    """The critical ``sigma_w2`` and ``q*`` of tanh by adaptive quadrature only: ``q*`` by
    root finding on ``V(q) - q`` with `gauss_quad`, ``chi_1 - 1`` by brentq (no Gauss-Hermite)."""
    def q_star(sw):
        return optimize.brentq(lambda q: sb2 + sw * gauss_quad(
            lambda z: np.tanh(np.sqrt(q) * z) ** 2) - q, 1e-9, sw + sb2 + 1, xtol=1e-14)

    def excess(sw):
        q = q_star(sw)
        return sw * gauss_quad(lambda z: sech2(np.sqrt(q) * z) ** 2) - 1

    sw = optimize.brentq(excess, 1.2, 6.0, xtol=1e-10)
    return sw, q_star(sw)


@pytest.mark.parametrize("sb2", [0.05, 1.0, 2.0])
def test_critical_line_equals_adaptive_quadrature(sb2):
    """The oracle is scipy's adaptive quadrature: the critical ``sigma_w2`` and its ``q*``
    agree to 1e-7. A fixed 101-node Gauss-Hermite rule (the former default) misses the
    ``sigma_b2 = 2`` root by 5e-3 (4.2611 against 4.2664): it cannot resolve
    ``sech^4(sqrt(q*) z)`` at ``q* = 4.8``."""
    sw_ref, q_ref = adaptive_chi1_root(sb2)
    assert mf.critical_sigma_w2("tanh", sb2) == pytest.approx(sw_ref, abs=1e-7)
    assert mf.depth_scales("tanh", sw_ref, sb2).q_star == pytest.approx(q_ref, abs=1e-7)
    if sb2 == 2.0:
        assert abs(mf.critical_sigma_w2("tanh", sb2, nodes=101) - sw_ref) > 4e-3


@pytest.mark.parametrize("q", [0.2, 1.0, 3.0, 4.8, 6.0, 10.0])
def test_chi1_and_qmap_equal_adaptive_quadrature_at_large_lengths(q):
    """The default 1-D rule (`nngp.nodes_for`) against adaptive quadrature: ``mu_1`` (the
    ``sech^4`` integrand of ``chi_1``) and the q-map to 1e-10 up to ``q = 10``; ``mu_2``
    (``sech^8``, whose poles are of higher order, used only for E6's Jacobian variance) to
    1e-8."""
    s = np.sqrt(q)
    for k, tol in ((1, 1e-10), (2, 1e-8)):
        assert float(ng.derivative_moment(q, "tanh", k)) == pytest.approx(
            gauss_quad(lambda z, k=k: sech2(s * z) ** (2 * k)), abs=tol), k
    assert float(ng.qmap(q, "tanh", 1.0, 0.0)) == pytest.approx(
        gauss_quad(lambda z: np.tanh(s * z) ** 2), abs=1e-10)


def test_phase_grid_chi1_equals_adaptive_quadrature():
    """chi_1 on a coarse version of E1's range, at the grid's own ``q*``, equals
    ``sigma_w2 mu_1(q*)`` by adaptive quadrature to 1e-9 (the 101-node rule: off by > 1e-4)."""
    sw, sb = np.linspace(0.5, 5.0, 7), np.array([0.0, 1.0, 2.0])
    grid, coarse = mf.chi1_grid("tanh", sw, sb), mf.chi1_grid("tanh", sw, sb, nodes=101)
    ref = np.array([[w * gauss_quad(lambda z, q=q: sech2(np.sqrt(q) * z) ** 2) if np.isfinite(q)
                     else np.nan for w, q in zip(sw, col)] for col in grid.q_star.T]).T
    ok = np.isfinite(ref)
    np.testing.assert_allclose(grid.chi1[ok], ref[ok], atol=1e-9)
    assert np.nanmax(np.abs(coarse.chi1 - ref)) > 1e-4


def test_chi1_crosses_one_at_the_boundary():
    """``chi_1 < 1`` 2% below the critical ``sigma_w2`` and ``> 1`` 2% above, for tanh and
    erf; the special cases: tanh/erf at ``sigma_b2 = 0`` give ``1/phi'(0)^2`` (1, pi/4),
    ReLU 2 and linear 1 at any bias."""
    for act in ("tanh", "erf"):
        for sb in (0.02, 0.3):
            crit = mf.critical_sigma_w2(act, sb)
            g = mf.chi1_grid(act, [0.98 * crit, crit, 1.02 * crit], [sb])
            assert g.chi1[0, 0] < 1 < g.chi1[2, 0], (act, sb)
            assert g.chi1[1, 0] == pytest.approx(1.0, abs=1e-8)
    assert mf.critical_sigma_w2("tanh", 0.0) == pytest.approx(1.0, rel=1e-12)  # a root: to ~1 ulp
    assert mf.critical_sigma_w2("erf", 0.0) == pytest.approx(np.pi / 4, rel=1e-12)
    assert mf.critical_sigma_w2("relu", 0.4) == pytest.approx(2.0, rel=1e-12)
    assert mf.critical_sigma_w2("linear", 0.4) == pytest.approx(1.0, rel=1e-12)
    # tanh just above sigma_w2 = 1 at sigma_b2 = 0 is chaotic: the special case is the limit
    g = mf.chi1_grid("tanh", [1.2], [0.0])
    assert g.q_star[0, 0] > 0.05 and g.chi1[0, 0] > 1


# ----------------------------------------------------------------------------- c*
def test_c_star_is_the_stable_fixed_point():
    """Ordered: ``c* = 1``. Chaotic: the reference values (0.447, 0.165), a fixed point of
    `nngp.cmap` to 1e-9, what plain iteration of the c-map reaches, and ``c* = 0`` for tanh
    without bias (odd map); the vectorised call equals the scalar ones."""
    assert float(mf.c_star("tanh", 1.5, 0.05)) == pytest.approx(1.0, rel=1e-12)
    got = mf.c_star("tanh", np.array([2.5, 4.0]), 0.05)
    np.testing.assert_allclose(got, [0.447, 0.165], atol=6e-4)
    for sw, c in zip((2.5, 4.0), got):
        q = ng.q_fixed_point("tanh", sw, 0.05)
        assert float(ng.cmap(c, q, "tanh", sw, 0.05)) == pytest.approx(c, abs=1e-9)
        it = 0.9
        for _ in range(400):
            it = float(ng.cmap(it, q, "tanh", sw, 0.05))
        assert it == pytest.approx(c, abs=1e-8)
        assert float(mf.c_star("tanh", sw, 0.05)) == pytest.approx(c, abs=1e-12)
    assert float(mf.c_star("tanh", 3.0, 0.0)) == pytest.approx(0.0, abs=1e-9)
    # a supplied q* (a grid's) gives the same answer
    q = mf.chi1_grid("tanh", [2.5], [0.05]).q_star
    assert mf.c_star("tanh", 2.5, 0.05, q_star=q).item() == pytest.approx(got[0], abs=1e-12)


# ----------------------------------------------------------------------------- depth scales
@pytest.mark.parametrize("sw,q_star,chi1,c_star,xi_c,xi_q", DEPTH_TABLE)
def test_depth_scales_match_our_reference_values(sw, q_star, chi1, c_star, xi_c, xi_q):
    d = mf.depth_scales("tanh", sw, 0.05)
    assert d.q_star == pytest.approx(q_star, abs=6e-4)
    assert d.chi1 == pytest.approx(chi1, abs=6e-4)
    assert d.c_star == pytest.approx(c_star, abs=6e-4)
    assert d.xi_c == pytest.approx(xi_c, abs=0.06)
    assert d.xi_q == pytest.approx(xi_q, abs=0.006)
    assert mf.xi_q("tanh", sw, 0.05) == d.xi_q and mf.xi_c("tanh", sw, 0.05) == d.xi_c
    assert d.xi_grad == pytest.approx(-1 / np.log(d.chi1))


@pytest.mark.parametrize("sw", [1.5, 2.5, 4.0])
def test_map_slopes_equal_schoenholz_integrals(sw):
    """``chi_q = chi_1 + sigma_w2 E[phi'' phi]`` (Schoenholz et al. eq. 6) and
    ``chi_c = sigma_w2 E[phi'(u) phi'(v)]`` at ``c*`` (eq. 9), by independent quadrature;
    and the iterated maps approach their fixed points at these rates."""
    d = mf.depth_scales("tanh", sw, 0.05)
    s = np.sqrt(d.q_star)
    phi_pp_phi = gauss_quad(lambda z: -2 * np.tanh(s * z) ** 2 * sech2(s * z))
    # the 1-D rules are chosen from q (~1e-12); the 2-D c-map rule stays at 101 nodes
    rel = 1e-7 if d.q_star < 1.5 else 1e-4
    assert d.chi_q == pytest.approx(d.chi1 + sw * phi_pp_phi, rel=rel)
    e = ng.gaussian_product_expectation(d.q_star, d.q_star, d.c_star * d.q_star, sech2,
                                        closed_form=False)
    assert d.chi_c == pytest.approx(sw * float(e), rel=max(rel, 1e-6))
    # rate of |q^l - q*| under nngp.qmap iteration
    q, gaps = 3.0, []
    for _ in range(12):
        q = float(ng.qmap(q, "tanh", sw, 0.05))
        gaps.append(q - d.q_star)
    assert gaps[-1] / gaps[-2] == pytest.approx(d.chi_q, rel=1e-3)


def test_xi_c_diverges_only_at_the_boundary():
    """``xi_c`` is huge at the computed critical point (the reference table: "~1e3" at the rounded 1.76),
    finite 5% either side; ``xi_q`` stays finite across it."""
    crit = mf.critical_sigma_w2("tanh", 0.05)
    assert mf.xi_c("tanh", crit, 0.05) > 1e5
    assert mf.xi_c("tanh", 1.76, 0.05) > 1e3
    for sw in (0.95 * crit, 1.05 * crit):
        d = mf.depth_scales("tanh", sw, 0.05)
        assert 5 < d.xi_c < 100 and 1 < d.xi_q < 2, sw
    assert mf.depth_scales("tanh", crit, 0.05).xi_q == pytest.approx(1.52, abs=0.01)


# ----------------------------------------------------------------------------- gradients
def test_gradient_scaling_prediction():
    chi = mf.depth_scales("tanh", 2.5, 0.05).chi1
    pred = mf.gradient_scaling("tanh", 2.5, 0.05, 6)
    np.testing.assert_allclose(pred, chi ** np.array([5, 4, 3, 2, 1, 0]), rtol=1e-12)
    np.testing.assert_allclose(mf.gradient_scaling("relu", 1.0, 0.1, 3), [0.25, 0.5, 1.0])


# ----------------------------------------------------------------------------- Jacobian
def test_jacobian_moments_match_the_depth_32_theory_values():
    """Depth 32, the closed-form mean ``chi_1^L`` (our reference values): linear 32 / 0, ReLU 64 / 32, tanh at
    (1.761, 0.05) 43 / 11 (Gaussian / orthogonal)."""
    for act, sw, sb, gauss, orth in (("linear", 1.0, 0.0, 32, 0), ("relu", 2.0, 0.0, 64, 32),
                                     ("tanh", 1.761, 0.05, 43, 11)):
        mg, vg = mf.jacobian_spectrum_moments(act, sw, sb, 32, "gaussian")
        mo, vo = mf.jacobian_spectrum_moments(act, sw, sb, 32, "orthogonal")
        assert mg == mo == pytest.approx(1.0, abs=1e-3)
        assert vg == pytest.approx(gauss, abs=0.5) and vo == pytest.approx(orth, abs=0.5)
    mean, _ = mf.jacobian_spectrum_moments("linear", 1.1, 0.0, 7)
    assert mean == pytest.approx(1.1 ** 7)


def test_jacobian_variance_near_isometry_by_quadrature():
    """tanh with tiny ``q*`` and orthogonal weights: ``L (mu_2/mu_1^2 - 1)`` by adaptive
    quadrature (0.136 at depth 32; our planning table printed 0.15 for this setting)."""
    q = mf.chi1_grid("tanh", [1.05], [2e-5]).q_star[0, 0]
    s = np.sqrt(q)
    mu1, mu2 = (gauss_quad(lambda z, k=k: sech2(s * z) ** (2 * k)) for k in (1, 2))
    _, var = mf.jacobian_spectrum_moments("tanh", 1.05, 2e-5, 32, "orthogonal")
    mean, _ = mf.jacobian_spectrum_moments("tanh", 1.05, 2e-5, 32, "orthogonal")
    assert var == pytest.approx(mean ** 2 * 32 * (mu2 / mu1 ** 2 - 1), rel=1e-8)
    assert var == pytest.approx(0.136, abs=1e-3)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call,match", [
    (lambda: mf.chi1_grid("tanh", [[1.0]], [0.1]), "sigma_w2_grid"),
    (lambda: mf.chi1_grid("tanh", [1.0], [-0.1]), "sigma_b2_grid"),
    (lambda: mf.chi1_grid("tanh", [np.nan], [0.1]), "sigma_w2_grid"),
    (lambda: mf.chi1_grid("tanh", [], [0.1]), "sigma_w2_grid"),
    (lambda: mf.chi1_grid("gelu", [1.0], [0.1]), "activation"),
    (lambda: mf.chi1_grid(np.sin, [1.0], [0.1]), "derivative"),
    (lambda: mf.chi1_grid("tanh", [1.0], [0.1], max_iter=0), "max_iter"),
    (lambda: mf.chi1_grid("tanh", [1.0], [0.1], tol=0.0), "tol"),
    (lambda: mf.chi1_grid("tanh", [1.0], [0.1], nodes=1), "nodes"),
    (lambda: mf.critical_sigma_w2("tanh", -0.1), "sigma_b2"),
    (lambda: mf.critical_sigma_w2("tanh", [0.1, 0.2]), "sigma_b2"),
    (lambda: mf.c_star("tanh", -1.0, 0.1), "sigma_w2"),
    (lambda: mf.c_star("tanh", 2.0, 0.1, q_star=-1.0), "q_star"),
    (lambda: mf.depth_scales("tanh", 2.0, np.inf), "sigma_b2"),
    (lambda: mf.gradient_scaling("tanh", 2.0, 0.1, 0), "depth"),
    (lambda: mf.jacobian_spectrum_moments("tanh", 2.0, 0.1, 4, "xavier"), "init"),
    (lambda: mf.jacobian_spectrum_moments("tanh", 2.0, 0.1, 4, q=-1.0), "q must"),
])
def test_bad_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_non_convergence_raises():
    with pytest.raises(RuntimeError, match="converge"):
        mf.depth_scales("relu", 3.0, 0.1)
    with pytest.raises(RuntimeError, match="converge"):
        mf.c_star("relu", 3.0, 0.1)
