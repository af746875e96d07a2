"""E14 (`lalr_core.methods.layer_lr.scale_invariance`): the scale-invariant logistic model against
torch autograd (its gradient, ``w . grad L = 0``, ``grad L(a w) = grad L(w) / a``), the exact
per-step norm recursion with and without weight decay, the closed-form equilibrium as a fixed
point, the log-log fit on exact power laws, and the slope at E14's planned settings."""

import numpy as np
import pytest
import torch

from lalr_core.methods.layer_lr.scale_invariance import (
    FIT_WINDOW,
    equilibrium_norm_sq,
    implicit_decay,
    loglog_slope,
    loss_and_grad,
    sgd_norms,
    teacher_data,
)


def _autograd(w: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """The same loss written directly in torch float64; gradient by autograd."""
    wt = torch.tensor(w, requires_grad=True)
    logits = torch.tensor(X) @ (wt / wt.norm())
    loss = torch.nn.functional.softplus(-torch.tensor(y) * logits).mean()
    loss.backward()
    return loss.item(), wt.grad.numpy()


def test_gradient_matches_autograd_and_is_orthogonal_to_w():
    X, y = teacher_data(n=64, d=7, seed=3)
    rng = np.random.default_rng(0)
    for scale in (0.01, 1.0, 300.0):
        w = scale * rng.standard_normal(7)
        loss, grad = loss_and_grad(w, X, y)
        loss_ag, grad_ag = _autograd(w, X, y)
        assert loss == pytest.approx(loss_ag, rel=1e-12)
        np.testing.assert_allclose(grad, grad_ag, rtol=1e-10, atol=1e-14 / scale)
        # Euler's identity for a degree-0 homogeneous loss, on the autograd gradient
        assert abs(w @ grad_ag) <= 1e-12 * np.linalg.norm(w) * np.linalg.norm(grad_ag)
    w = rng.standard_normal(7)
    for a in (0.1, 5.0):
        loss_a, grad_a = _autograd(a * w, X, y)
        loss_1, grad_1 = _autograd(w, X, y)
        assert loss_a == pytest.approx(loss_1, rel=1e-12)
        np.testing.assert_allclose(grad_a, grad_1 / a, rtol=1e-10)


def test_each_sgd_step_adds_exactly_lr_squared_times_the_squared_gradient():
    for lr in (0.1, 1.0):
        traj = sgd_norms(lr, num_steps=2000)
        s, g = traj["norm_sq"].to_numpy(), traj["grad_sq"].to_numpy()[:-1]
        np.testing.assert_allclose(s[1:] - s[:-1], lr**2 * g, rtol=1e-9, atol=1e-13 * s.max())
        assert (np.diff(s) > 0).all()  # the norm only grows
        np.testing.assert_allclose(traj["eff_lr"], lr / s)
    lr, wd = 0.5, 1e-2  # with L2 in the gradient: (1 - lr wd)^2 |w|^2 + lr^2 |g|^2
    traj = sgd_norms(lr, wd=wd, num_steps=2000)
    s, g = traj["norm_sq"].to_numpy(), traj["grad_sq"].to_numpy()[:-1]
    np.testing.assert_allclose(s[1:], (1 - lr * wd) ** 2 * s[:-1] + lr**2 * g, rtol=1e-12)


def test_equilibrium_is_the_fixed_point_of_the_norm_recursion():
    for lr, wd, c in ((0.1, 1e-3, 0.13), (1.0, 0.5, 2.0), (1.9, 1.0, 0.3)):
        s = equilibrium_norm_sq(lr, wd, c)
        assert s == pytest.approx((1 - lr * wd) ** 2 * s + lr**2 * c / s, rel=1e-12)
    with pytest.raises(ValueError, match="lr \\* wd"):
        equilibrium_norm_sq(1.0, 2.0, 0.1)


def test_loglog_slope_recovers_an_exact_power_law_over_the_stated_window():
    k = np.arange(1, 1001)
    fit = loglog_slope(k, 3.0 * k**0.5)
    assert fit["slope"] == pytest.approx(0.5, abs=1e-12)
    assert (fit["k_lo"], fit["k_hi"]) == (100, 1000) and FIT_WINDOW == (0.1, 1.0)
    bent = np.where(k < 100, 1.0, k ** -0.5)  # only the window's part counts
    assert loglog_slope(k, bent)["slope"] == pytest.approx(-0.5, abs=1e-12)
    with pytest.raises(ValueError, match="need >= 3"):
        loglog_slope(k[:2], k[:2])


def test_planned_settings_norm_grows_as_sqrt_k_and_settles_with_weight_decay():
    """Batch 32, 20k steps, eta 0.1 and 1 (our first prototype: 0.489 / 0.483; theory 0.5 +- 0.03)."""
    table = implicit_decay(lrs=(0.1, 1.0), wds=(0.0, 1e-3)).set_index(["lr", "wd"])
    free = table.xs(0.0, level="wd")
    assert ((free["slope_corrected"] - 0.5).abs() < 0.03).all()
    assert abs(free.loc[1.0, "slope"] - 0.5) < 0.03
    # eta 0.1, |w_0| = 1: the raw slope still carries |w_0|^4 (0.469); the transient only
    # lowers it, and the corrected slope removes it
    assert free.loc[0.1, "slope"] < free.loc[0.1, "slope_corrected"]
    np.testing.assert_allclose(free["eff_lr_slope"], -free["slope"])
    # the explicit lr is forgotten: both runs end at about the same effective lr
    assert free.loc[0.1, "eff_lr_end"] == pytest.approx(free.loc[1.0, "eff_lr_end"], rel=0.1)
    decayed = table.xs(1e-3, level="wd")
    np.testing.assert_allclose(decayed["equilibrium"], decayed["equilibrium_theory"], rtol=0.02)
    assert (decayed["norm_sq_end"] < free["norm_sq_end"]).all()


def test_bad_arguments_raise():
    for kwargs in ({"lr": 0}, {"lr": 0.1, "wd": -1}, {"lr": 0.1, "batch_size": 0},
                   {"lr": 0.1, "num_steps": 2.5}, {"lr": float("nan")}):
        with pytest.raises(ValueError):
            sgd_norms(**kwargs)
