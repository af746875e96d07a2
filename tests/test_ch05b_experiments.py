"""Chapter 05b (Newton, Gauss-Newton, natural gradient, saddles, sharpness): settings, and the
numbers each check judges, against closed forms and small explicit computations."""

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import CHAPTERS, chapter, chapter_settings, prepared_datasets
from lalr_core.chapters import ch05b_newton_natural_gradient as ch05b


def test_registered_with_settings_per_profile_and_no_training_runs():
    assert CHAPTERS["05b"] == "ch05b_newton_natural_gradient"
    assert chapter("05b") is ch05b.CHAPTER and ch05b.CHAPTER.sections is None
    assert {p: chapter_settings("05b", p).e15_seeds for p in ("smoke", "quick", "paper")} == \
        {"smoke": 3, "quick": 10, "paper": 3}
    assert prepared_datasets(chapter_settings("05b", "quick")) == set()   # synthetic toys only


@pytest.mark.parametrize("bad", [{"e15_seeds": 1}, {"e15_seeds": 0}, {"e15_seeds": 2.5},
                                 {"no_such_setting": 1}])
def test_bad_settings_stop_before_any_compute(bad):
    with pytest.raises(ValueError, match="e15_seeds|no_such_setting"):
        chapter_settings("05b", "smoke", bad)


# ----------------------------------------------------------------------------- E9
def test_within_factor():
    expected = {"a": 30, "b": 5}
    assert ch05b.within_factor({"a": 10, "b": 15}, expected)          # both exactly at x3
    assert not ch05b.within_factor({"a": 9, "b": 5}, expected)        # 30 / 9 > 3
    assert not ch05b.within_factor({"a": 30, "b": None}, expected)    # not reached
    assert ch05b.within_factor({"a": 30, "b": 5, "extra": None}, expected)   # only expected keys


def test_rosenbrock_grid_hessian_det_and_eigenvalues_closed_forms():
    x, y = np.meshgrid(np.linspace(-2, 2, 7), np.linspace(-1, 3, 5))
    np.testing.assert_allclose(ch05b.rosenbrock_grid(x, y), (1 - x) ** 2 + 100 * (y - x ** 2) ** 2,
                               rtol=1e-14, atol=1e-12)
    # H = [[2 - 400 y + 1200 x^2, -400 x], [-400 x, 200]]: det = 400 + 80000 (x^2 - y)
    np.testing.assert_allclose(ch05b.rosenbrock_hessian_det(x, y), 400 + 80000 * (x ** 2 - y),
                               rtol=1e-12, atol=1e-6)
    np.testing.assert_array_equal(ch05b.rosenbrock_hessian_eigenvalues((0.0, 1.0)), [-398.0, 200.0])


def test_e9_newton_and_gauss_newton_iteration_counts():
    paths = ch05b.e9_paths()
    assert set(paths) == {"GD (lr 2e-3)", "Newton", "Gauss–Newton", "damped λ=1", "damped λ=10",
                          "damped λ=100"}
    gn = paths["Gauss–Newton"]
    # Gauss-Newton on r = (1 - x, 10 (y - x^2)): the first step solves x = 1 exactly (r1 is
    # linear), the second y = x^2 = 1, so the minimum (1, 1) in two steps
    assert gn.iters == 2 and np.allclose(gn.points[-1], [1.0, 1.0])
    assert gn.points[1][0] == pytest.approx(1.0)
    assert all(p.f[0] == pytest.approx(24.2) for p in paths.values())    # f(-1.2, 1) = 4.84 + 19.36


# ----------------------------------------------------------------------------- E10
def _e10_record(loss, rel, h_min, h_max, g_min):
    return {"loss": np.array(loss), "rel": np.array(rel), "h_min": np.array(h_min),
            "h_max": np.array(h_max), "g_min": np.array(g_min)}


def test_e10_numbers():
    tanh = _e10_record([1.0, 0.5, 0.1], [0.8, 0.1, 0.004], [-1, -0.1, 0], [2, 1, 1],
                       [0.0, -1e-12, 0.0])
    relu = _e10_record([1.0, 0.5, 0.1], [0.9, 0.2, 1e-3], [-2, 0, 0], [3, 1, 1], [0.0, 0.0, 1e-3])
    n = ch05b.e10_numbers({"tanh": tanh, "relu": relu})
    assert n["rho"] == pytest.approx(1.0)                    # same order: Spearman 1
    assert n["g_psd"] and n["h_indefinite"] and n["relu_differs"]
    assert n["tanh_falls"]                                   # 0.004 < 0.8 / 100
    assert n["g_min"] == -1e-12
    relu["rel"][-1], tanh["g_min"][1] = 1e-7, -1e-9
    n = ch05b.e10_numbers({"tanh": tanh, "relu": relu})
    assert not n["relu_differs"] and not n["g_psd"]


# ----------------------------------------------------------------------------- E11
def test_e11_numbers_and_ng_much_faster():
    runs = {"curves": {"GD (1/L)": np.array([3.0, 2.0, 1.0 + 2e-6, 1.0 + 5e-7]),
                       "NG (true Fisher)": np.array([3.0, 1.0]),
                       "NG (empirical Fisher)": np.array([3.0, 1.5, 1.2])},
            "ng_original": np.array([3.0, 1.0]), "ng_rescaled": np.array([3.0, 1.0 + 1e-12]),
            "gd_rescaled": np.array([3.0, 2.5]), "D": np.array([1.0, 0.1]),
            "w_original": np.array([2.0, 1.0]), "w_rescaled": np.array([2.0, 10.0 + 1e-6])}
    n = ch05b.e11_numbers(runs)
    assert n["best"] == 1.0
    assert n["iters"] == {"GD (1/L)": 3, "NG (true Fisher)": 1, "NG (empirical Fisher)": None}
    assert n["invariance_gap"] == pytest.approx(1e-12, rel=1e-3)
    assert n["w_gap"] == pytest.approx(1e-7 / 2.0)           # |1 - 0.1 (10 + 1e-6)| / max|w|
    assert not ch05b.ng_much_faster(n["iters"])              # 3 < 100 x 1
    assert ch05b.ng_much_faster({"NG (true Fisher)": 2, "GD (1/L)": 200})
    assert ch05b.ng_much_faster({"NG (true Fisher)": 2, "GD (1/L)": None})
    assert not ch05b.ng_much_faster({"NG (true Fisher)": None, "GD (1/L)": None})


# ----------------------------------------------------------------------------- E12
def test_damping_path_and_its_limits_on_a_diagonal_quadratic():
    H, g = np.diag([2.0, 1.0]), np.array([1.0, 1.0])
    lams = [0.0, 1.0, 3.0]
    np.testing.assert_allclose(ch05b.damping_path(H, g, lams),
                               [[-0.5, -1.0], [-1 / 3, -0.5], [-0.2, -0.25]])
    # lam = 1e-8: |1/(1 + 1e-8) - 1| = 1e-8 / (1 + 1e-8) (relative to Newton's largest entry, 1);
    # lam = 1e10: |g a / (a + 1e10)| <= 2e-10; so the error is the first
    err = ch05b.damping_limit_error({"diag": H}, g)
    assert err == pytest.approx(1e-8, rel=1e-6)


def test_e12_numbers_on_constructed_paths():
    root2 = np.sqrt(2)
    paths = {"gd": np.array([[1.0, 1e-3], [0.5, 0.5], [0.0, root2 - 5e-4], [0.0, root2]]),
             "newton": np.array([[1.0, 1e-3], [0.0, 0.0]]),
             "damped": np.array([[1.0, 1e-3], [0.0, -root2]]),
             "saddle_free": np.array([[1.0, 1e-3], [0.0, root2]])}
    n = ch05b.e12_numbers(paths, limit_error=1e-9)
    assert n["index"] == {"gd": 0, "newton": 1, "damped": 0, "saddle_free": 0}   # H = diag(2, -2 + 3 y^2)
    assert n["near_min"] == {"gd": 2, "newton": None, "damped": 1, "saddle_free": 1}
    assert n["passed"]
    assert not ch05b.e12_numbers(paths, limit_error=1e-5)["passed"]
    paths["saddle_free"] = np.array([[1.0, 1e-3], [0.5, 0.5], [0.2, 1.0], [0.0, root2]])
    assert not ch05b.e12_numbers(paths, limit_error=1e-9)["passed"]    # not faster than GD


def test_e12_newton_is_drawn_to_the_saddle():
    paths = ch05b.e12_saddle_runs()
    # Newton solves x^2 in one step (x = 0) and, in y, iterates y <- y - y (y^2 - 2)/(3 y^2 - 2),
    # which maps a small y to -y^3 / (2 - 3 y^2): the saddle (0, 0)
    y1 = 1e-3 - 1e-3 * (1e-6 - 2) / (3e-6 - 2)
    np.testing.assert_allclose(paths["newton"][1], [0.0, y1], rtol=1e-12, atol=1e-18)
    n = ch05b.e12_numbers(paths, ch05b.damping_limit_error(ch05b.E12_QUADRATICS,
                                                           ch05b.E12_GRADIENT))
    assert n["index"]["newton"] == 1 and n["passed"]


# ----------------------------------------------------------------------------- E15
def test_e15_arms_take_equal_epochs_and_equal_steps():
    runs = ch05b.e15_runs([0, 1], epochs=2, n=64, batches=(16, 64))
    assert len(runs) == 6
    steps = runs.groupby("arm")["steps"].first().to_dict()
    assert steps == {"B=16": 2 * 64 // 16, "B=1024, equal epochs": 2, "B=1024, equal steps": 8}
    lam = ch05b.e15_sharpness(runs)
    assert list(lam.index) == [0, 1] and sorted(lam.columns) == sorted(ch05b.E15_ARMS)
    assert (lam.to_numpy() > 0).all()
    table = pd.DataFrame({"seed": [0, 0], "arm": ["x", "y"], "lambda_max": [1.0, 2.0]})
    assert ch05b.e15_sharpness(table).loc[0].to_dict() == {"x": 1.0, "y": 2.0}
