"""Chapter 05b's claim tests give PASS and FAIL (and INCONCLUSIVE where judged on an interval)
on small synthetic results: iteration counts, relative GGN gaps, paths' ends and sharpness per
seed built by hand, passed to `ch05b_newton_natural_gradient.findings`. The sanity checks of
``CLAIMS`` (identities, a regression against a first run) have no cases."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lalr_core.chapters.ch05b_newton_natural_gradient import CLAIMS, E9_EXPECTED, E15_ARMS
from lalr_core.chapters.ch05b_newton_natural_gradient import findings as F
from lalr_core.chapters.ch05b_newton_natural_gradient.experiments import (
    e11_probit_numbers,
    e11_probit_runs,
    probit_fisher,
    probit_hessian,
)

CHAPTER = "ch05b_newton_natural_gradient"

UP = np.array([3.0, 4.0, 5.0, 3.5, 4.5])
ACROSS = np.array([3.0, -3.0, 1.0, -2.0, 0.5])


def e9(gd, gn):
    return F.e9_findings({**E9_EXPECTED, "GD (lr 2e-3)": gd, "Gauss–Newton": gn},
                         np.array([-398.0, 200.0]), budget=40_000)


def e10(rho=0.95, falls=True, relu=(0.79, 0.05, 0.005, 6e-4, 8e-3, 6e-3), seeds: int = 3):
    """E10 on ``seeds`` independently seeded networks (one: a single replicate)."""
    runs = [{a: {"rel": np.asarray(relu if a == "relu" else (0.7, 0.04, 1e-4)) * (1 + 0.1 * s),
                 "h_min": np.array([-1.0])} for a in ("tanh", "relu")} for s in range(seeds)]
    numbers = [{"rho": rho, "tanh_falls": falls, "g_psd": True, "h_indefinite": True,
                "g_min": -1e-14} for _ in range(seeds)]
    if seeds == 1:
        return F.e10_findings(runs[0], numbers[0])
    return F.e10_findings(runs, numbers)


def e11(ng, gd, budget=2000):
    logistic = {"iters": {"GD (1/L)": None, "NG (true Fisher)": 3, "NG (empirical Fisher)": 3},
                "invariance_gap": 0.0, "w_gap": 0.0}
    return F.e11_findings({"GD (1/L)": gd, "NG (true Fisher)": ng}, budget, 0.01, logistic,
                          20_000)


def e12(newton_end=(0.0, 0.0), newton_index=1, sf_near=5, gd_near=30):
    numbers = {"ends": {"gd": np.array([0.0, 1.414]), "newton": np.array(newton_end),
                        "damped": np.array([0.0, 1.414]), "saddle_free": np.array([0.0, 1.414])},
               "index": {"gd": 0, "newton": newton_index, "damped": 0, "saddle_free": 0},
               "near_min": {"gd": gd_near, "newton": None, "damped": 20, "saddle_free": sf_near}}
    return F.e12_findings(numbers, 1e-8)


def e15(epochs_diff=-UP, steps_diff=-UP):
    small, by_epochs, by_steps = E15_ARMS
    base = 20.0 + np.arange(5)
    return F.e15_findings(pd.DataFrame({small: base, by_epochs: base - epochs_diff,
                                        by_steps: base - steps_diff}))


CASES = {
    "E9-output-space": {"PASS": lambda: e9(13_255, 2).output_space,
                        "FAIL": lambda: e9(100, 2).output_space},
    "E10-tanh": {"PASS": lambda: e10().tanh, "FAIL": lambda: e10(rho=0.3).tanh,
                 "INCONCLUSIVE": lambda: e10(seeds=1).tanh},
    "E10-relu": {"PASS": lambda: e10(relu=(1e-14, 3e-15, 2e-15)).relu,
                 "FAIL": lambda: e10().relu, "INCONCLUSIVE": lambda: e10(seeds=1).relu},
    "E11-probit": {"PASS": lambda: e11(4, None).probit, "FAIL": lambda: e11(50, 300).probit},
    "E12-saddle": {"PASS": lambda: e12().saddle,
                   "FAIL": lambda: e12(newton_end=(0.0, 1.414), newton_index=0).saddle},
    "E15-epochs": {"PASS": lambda: e15().epochs, "FAIL": lambda: e15(epochs_diff=UP).epochs,
                   "INCONCLUSIVE": lambda: e15(epochs_diff=ACROSS).epochs},
    "E15-steps": {"PASS": lambda: e15().steps, "FAIL": lambda: e15(steps_diff=UP).steps,
                  "INCONCLUSIVE": lambda: e15(steps_diff=ACROSS).steps},
}


def test_cases_cover_exactly_the_claim_tests():
    assert {c for c, claim in CLAIMS.items() if claim.kind == "claim"} == set(CASES)


def test_faster_by_is_undecided_when_the_budget_is_too_short():
    assert F.faster_by(4, None, 2000) is True
    assert F.faster_by(40, None, 2000) is None
    assert F.faster_by(None, 10, 2000) is False
    assert F.faster_by(2, 150, 2000) is False


def test_probit_fisher_differs_from_the_hessian_and_natural_gradient_is_fast():
    X = np.array([[1.0, 0.5], [-0.3, 2.0], [0.7, -1.2], [2.0, 0.1]])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    w = np.array([0.4, -0.2])
    assert not np.allclose(probit_fisher(w, X), probit_hessian(w, X, y))
    runs = e11_probit_runs(n=200, gd_steps=300)
    iters = e11_probit_numbers(runs)["iters"]
    assert iters["NG (true Fisher)"] is not None and iters["NG (true Fisher)"] < 20
