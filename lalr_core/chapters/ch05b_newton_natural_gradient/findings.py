"""Chapter 05b's verdicts: one function per experiment, from its numbers to a frozen dataclass
of `Finding` objects, one per claim of `claims.CLAIMS` (synthetic PASS / FAIL cases in
``tests/test_ch05b_newton_natural_gradient_claims.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lalr_core.chapters.ch05b_newton_natural_gradient.claims import CLAIMS
from lalr_core.chapters.ch05b_newton_natural_gradient.experiments import (
    E9_EXPECTED,
    E15_ARMS,
    within_factor,
)
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import paired_difference

FASTER = 100   # "far fewer iterations": our factor


def faster_by(fast: int | None, slow: int | None, budget: int, factor: int = FASTER
              ) -> bool | None:
    """``fast`` reached the tolerance in ``factor`` times fewer iterations than ``slow``
    (``None``: not reached within ``budget``). True / False, or None when ``slow`` did not
    reach it and the budget is below ``factor * fast`` (undecided)."""
    if fast is None:
        return False
    if slow is not None:
        return bool(slow >= factor * fast)
    return True if budget >= factor * fast else None


@dataclass(frozen=True)
class E9:
    output_space: Finding
    counts: Finding


def e9_findings(iters: Mapping[str, int | None], eig01: np.ndarray, budget: int) -> E9:
    """From the iteration counts per method and the Hessian's eigenvalues at (0, 1)."""
    gn, gd = iters["Gauss–Newton"], iters["GD (lr 2e-3)"]
    verdict = faster_by(gn, gd, budget)
    return E9(
        output_space=Finding(verdict, {"GD": gd, "Gauss–Newton": gn},
                             "iterations to f < 1e-10 from (−1.2, 1); full steps" if verdict
                             is not None else "GD did not reach f < 1e-10 within a budget "
                                              "too short to decide"),
        counts=Finding(bool(within_factor(iters, E9_EXPECTED) and eig01[0] < 0 < eig01[1]),
                       {**iters, "eig H(0,1)": np.round(eig01, 1).tolist()},
                       "a regression against a first run of the same methods"))


@dataclass(frozen=True)
class E10:
    psd: Finding
    tanh: Finding
    relu: Finding


def e10_findings(runs, numbers) -> E10:
    """From `experiments.e10_runs` and `experiments.e10_numbers` of one seed, or lists of them
    over independently seeded networks (each bool then holds in every seed; one network is one
    replicate: its claim verdicts are recorded INCONCLUSIVE)."""
    runs_k = [runs] if isinstance(runs, Mapping) else list(runs)
    nums_k = [numbers] if isinstance(numbers, Mapping) else list(numbers)
    k = len(runs_k)
    relu = [np.asarray(r["relu"]["rel"], dtype=float) for r in runs_k]
    tanh = [np.asarray(r["tanh"]["rel"], dtype=float) for r in runs_k]
    how = "one network (seed 0)" if k == 1 else f"in every one of {k} seeds"
    return E10(
        psd=Finding(bool(all(n["g_psd"] and n["h_indefinite"] for n in nums_k)),
                    {"min eig G": min(n["g_min"] for n in nums_k),
                     "min eig H at init": {a: round(float(r["h_min"][0]), 3)
                                           for a, r in runs_k[0].items()}}),
        tanh=Finding(bool(all(n["rho"] >= 0.8 and n["tanh_falls"] for n in nums_k)),
                     {"spearman(loss, rel)": [round(float(n["rho"]), 3) for n in nums_k],
                      "tanh rel": np.round(tanh[0], 5).tolist()},
                     f"H by torch.func, G the densified curvlinops GGN; {how}", replicates=k),
        relu=Finding(bool(all(r.max() < 1e-6 for r in relu)),
                     {"relu rel": np.round(relu[0], 5).tolist()},
                     "the notes' statement in its own direction; the output is a product of "
                     "the layers' weights, so ∇²f keeps cross-layer blocks and H ≠ G wherever "
                     f"the residuals are nonzero; {how}", replicates=k))


@dataclass(frozen=True)
class E11:
    probit: Finding
    logistic: Finding
    invariance: Finding


def e11_findings(probit_iters: Mapping[str, int | None], probit_budget: int,
                 fisher_gap: float, logistic: Mapping, logistic_budget: int) -> E11:
    """From `experiments.e11_probit_numbers`' ``iters`` (its GD budget and ``||F - H|| /
    ||H||``) and `experiments.e11_numbers` on logistic regression."""
    ng, gd = probit_iters["NG (true Fisher)"], probit_iters["GD (1/L)"]
    verdict = faster_by(ng, gd, probit_budget)
    lng, lgd = logistic["iters"]["NG (true Fisher)"], logistic["iters"]["GD (1/L)"]

    def shown(v, budget):
        return v if v is not None else f"> {budget}"

    return E11(
        probit=Finding(verdict, {"GD (1/L)": shown(gd, probit_budget), "NG (true Fisher)": ng,
                                 "‖F − H‖/‖H‖ at NG's end": round(fisher_gap, 4)},
                       "probit: Fisher scoring, not Newton; GD step 1/L" if verdict is not None
                       else "GD's budget too short to decide a 100-fold gap"),
        logistic=Finding(bool(faster_by(lng, lgd, logistic_budget)),
                         {k: shown(v, logistic_budget) for k, v in logistic["iters"].items()},
                         "for the canonical link the true Fisher is the Hessian: NG is Newton"),
        invariance=Finding(bool(logistic["invariance_gap"] < 1e-9 and logistic["w_gap"] < 1e-8),
                           {"max |Δloss|": logistic["invariance_gap"],
                            "relative |w − Dw'|": logistic["w_gap"]},
                           "undamped F; an identity of the Fisher metric"))


@dataclass(frozen=True)
class E12:
    limits: Finding
    saddle: Finding


def e12_findings(numbers: Mapping, limit_error: float) -> E12:
    """From `experiments.e12_numbers` (``ends``, ``index``, ``near_min``) and the damped step's
    limit error."""
    ends, index, near = numbers["ends"], numbers["index"], numbers["near_min"]
    saddle = bool(np.abs(ends["newton"]).max() < 1e-8 and index["newton"] == 1
                  and index["saddle_free"] == 0 and index["gd"] == 0
                  and near["saddle_free"] is not None and near["gd"] is not None
                  and near["saddle_free"] < near["gd"])
    return E12(
        limits=Finding(bool(limit_error < 1e-6), {"limit error": limit_error}),
        saddle=Finding(saddle, {"ends": {m: np.round(e, 6).tolist() for m, e in ends.items()},
                                "Morse index at end": dict(index),
                                "steps to a minimum": dict(near)},
                       "GD (lr 0.1) is the control arm; no line search"))


@dataclass(frozen=True)
class E15:
    epochs: Finding
    steps: Finding


def e15_findings(sharpness: pd.DataFrame) -> E15:
    """From `experiments.e15_sharpness` (λmax per seed and arm): small minus large batch,
    paired by seed, at equal epochs and at equal steps."""
    small, epochs_arm, steps_arm = E15_ARMS
    ev = {cid: CLAIMS[cid].judge(paired_difference(sharpness[small], sharpness[arm]))
          for cid, arm in (("E15-epochs", epochs_arm), ("E15-steps", steps_arm))}
    return E15(
        epochs=Finding(ev["E15-epochs"], f"λmax(B16) − λmax(B1024): {ev['E15-epochs'].text(2)}",
                       "paired by seed; power iteration on curvlinops HVPs"),
        steps=Finding(ev["E15-steps"], f"λmax(B16) − λmax(B1024): {ev['E15-steps'].text(2)}",
                      "paired by seed; equal steps removes the update-count confounder"))
