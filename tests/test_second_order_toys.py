"""Oracles for `lalr_core.methods.curvature.second_order_toys` (seed 003, E9-E12, E15)."""

import numpy as np
import pytest
import torch
from torch import nn

from lalr_core.methods.curvature import operators as cv
from lalr_core.methods.curvature import second_order_toys as so


def test_newton_on_a_quadratic_converges_in_one_step():
    A = np.array([[10.0, 2.0], [2.0, 1.0]])
    b = np.array([1.0, -3.0])
    x_star = np.linalg.solve(A, b)
    path = so.second_order_path(lambda x: 0.5 * (x - x_star) @ A @ (x - x_star),
                                lambda x: A @ x - b, lambda x: A, [5.0, -7.0], tol=1e-20)
    np.testing.assert_allclose(path.points[1], x_star, atol=1e-12)
    assert path.iters == 1


def test_rosenbrock_pieces_agree_with_the_library():
    p = np.array([0.3, -0.7])
    np.testing.assert_allclose(so.rosen_f_np(p), so.rosen_f(p))
    np.testing.assert_allclose(so.rosen_grad_np(p), so.rosen_grad(p))
    r = so.rosen_residuals(p)
    np.testing.assert_allclose(r @ r, so.rosen_f(p))
    H = torch.autograd.functional.hessian(
        lambda t: (1 - t[0]) ** 2 + 100 * (t[1] - t[0] ** 2) ** 2, torch.tensor(p))
    np.testing.assert_allclose(so.rosen_hess(p), H.numpy(), atol=1e-10)


def test_gauss_newton_equals_newton_where_residuals_vanish():
    # Near the optimum (1, 1) of Rosenbrock every residual is ~0, so J^T J ~ H / 2 and the
    # GN step is the Newton step to second order.
    p = np.array([1.0 + 1e-8, 1.0 - 1e-8])
    J, r = so.rosen_residual_jacobian(p), so.rosen_residuals(p)
    gn = -np.linalg.solve(J.T @ J, J.T @ r)
    newton = so.damped_step(so.rosen_hess(p), so.rosen_grad_np(p))
    # the steps differ by O(residual x condition number) relative (~1e-5 here)
    np.testing.assert_allclose(gn, newton, rtol=1e-4)
    # at the optimum the residuals are exactly zero and 2 J^T J (GN for f = ||r||^2) is H
    opt = np.array([1.0, 1.0])
    J1 = so.rosen_residual_jacobian(opt)
    np.testing.assert_allclose(2 * J1.T @ J1, so.rosen_hess(opt), rtol=1e-14)


def test_rosenbrock_iteration_counts_newton_5_gauss_newton_2_damped_40():
    x0 = so.ROSENBROCK_START
    assert so.second_order_path(so.rosen_f, so.rosen_grad, so.rosen_hess, x0).iters == 5
    assert so.gauss_newton_path(so.rosen_residuals, so.rosen_residual_jacobian, x0).iters == 2
    assert so.second_order_path(so.rosen_f, so.rosen_grad, so.rosen_hess, x0, lam=1.0,
                                steps=500).iters == 40


def test_ggn_equals_hessian_for_a_linear_model_with_squared_loss():
    torch.manual_seed(0)
    model = nn.Linear(3, 2).double()
    X = torch.randn(20, 3, dtype=torch.float64)
    y = torch.randn(20, 2, dtype=torch.float64)
    H, G = so.hessian_and_ggn(model, X, y)
    torch.testing.assert_close(H, G, atol=1e-12, rtol=0)


def test_dense_hessian_matches_the_curvlinops_hessian():
    X, y = so.regression_data(16)
    model = so.mlp((2, 4, 1), "tanh")
    H, _ = so.hessian_and_ggn(model, X, y)
    op = cv.curvature_operator(model, nn.MSELoss(), [(X, y)], "hessian",
                               check_deterministic=False)
    torch.testing.assert_close(H, cv.dense_matrix(op), atol=1e-10, rtol=1e-8)


def test_ggn_gap_vanishes_with_the_residuals_tanh():
    # Targets produced by the model itself: zero residuals, so H == G exactly; with targets
    # shifted by eps the gap grows linearly in eps.
    X, _ = so.regression_data(16)
    model = so.mlp((2, 6, 1), "tanh", seed=1)
    with torch.no_grad():
        y0 = model(X)
    rel = []
    for eps in (1e-1, 1e-2, 1e-3, 0.0):
        H, G = so.hessian_and_ggn(model, X, y0 + eps * torch.sin(3 * X[:, :1]))
        rel.append(so.relative_difference(H, G))
    assert rel[-1] < 1e-12
    assert rel[0] > rel[1] > rel[2] > rel[3]
    assert rel[1] / rel[2] == pytest.approx(10, rel=0.2)


def test_ggn_is_psd_and_hessian_indefinite_at_init():
    X, y = so.regression_data(32)
    H, G = so.hessian_and_ggn(so.mlp(act="relu"), X, y)
    assert torch.linalg.eigvalsh(G)[0] > -1e-10
    assert torch.linalg.eigvalsh(H)[0] < -1e-3
    assert so.relative_difference(H, G) > 1e-2          # ReLU: H != G (an erratum in the notes' sec. 2.2)


def test_natural_gradient_is_invariant_to_feature_rescaling():
    X, y = so.logistic_data(200, scales=(1.0, 10.0, 100.0))
    D = np.array([3.0, 0.1, 0.01])
    l1, w1 = so.fit_logistic(X, y, "ng", steps=4)
    l2, w2 = so.fit_logistic(X * D, y, "ng", steps=4)
    np.testing.assert_allclose(l1, l2, rtol=1e-10)
    np.testing.assert_allclose(w1, D * w2, rtol=1e-8)
    # one direction, at a common point: F^-1 g transforms as a vector (w = D w')
    w = np.array([0.2, -0.05, 0.003])
    d1 = np.linalg.solve(so.true_fisher(w, X), so.logistic_grad(w, X, y))
    d2 = np.linalg.solve(so.true_fisher(w / D, X * D), so.logistic_grad(w / D, X * D, y))
    np.testing.assert_allclose(d1, D * d2, rtol=1e-8)
    # GD is not invariant
    g1 = so.fit_logistic(X, y, "gd", steps=3, lr=1e-5)[0]
    g2 = so.fit_logistic(X * D, y, "gd", steps=3, lr=1e-5)[0]
    assert not np.allclose(g1, g2, rtol=1e-6)


def test_damped_step_limits():
    H = np.array([[100.0, 0.0], [0.0, -1.0]])
    g = np.array([1.0, 2.0])
    np.testing.assert_allclose(so.damped_step(H, g, 1e-10), so.damped_step(H, g), rtol=1e-8)
    np.testing.assert_allclose(so.damped_step(H, g), -np.linalg.solve(H, g))
    lam = 1e9
    np.testing.assert_allclose(so.damped_step(H, g, lam), -g / lam, rtol=1e-6)


def test_newton_goes_to_the_saddle_and_saddle_free_escapes():
    x0 = (0.5, 1e-2)
    newton = so.run_saddle("newton", x0, steps=30)
    free = so.run_saddle("saddle_free", x0, steps=30)
    gd = so.run_saddle("gd", x0, steps=200)
    np.testing.assert_allclose(newton[-1], 0.0, atol=1e-10)
    assert so.morse_index(so.saddle_hess(newton[-1])) == 1
    y_min = np.sqrt(2.0)
    assert abs(abs(free[-1, 1]) - y_min) < 1e-8
    assert so.morse_index(so.saddle_hess(free[-1])) == 0
    assert abs(abs(gd[-1, 1]) - y_min) < 1e-3


def test_saddle_free_step_is_newton_for_a_positive_definite_matrix():
    H = np.array([[3.0, 1.0], [1.0, 2.0]])
    g = np.array([1.0, -1.0])
    np.testing.assert_allclose(so.saddle_free_step(H, g), so.damped_step(H, g))


def test_batch_size_sharpness_runs_and_is_positive():
    r = so.batch_size_sharpness(64, steps=20, seed=0, n=256, n_test=64)
    assert r["lambda_max"] > 0 and np.isfinite(r["gap"])
