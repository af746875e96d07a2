"""Chapter 03's verdicts as functions: one per source item, from the runs' numbers to a frozen
dataclass of those numbers and their `Finding`\\ s (claims: ``claims.CLAIMS``).

Each function takes plain results (data frames or mappings of numbers the notebook computed
from the runs), so the unit tests (``tests/test_ch03_ntk_claims.py``) can feed it small
synthetic results on which it must PASS, FAIL or be INCONCLUSIVE.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lalr_core.chapters.ch03_ntk.claims import CLAIMS
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import (
    paired_difference,
    rank_correlation_by_seed,
)

# the largest lambda whose accuracy competes for "best" (the source: a moderate lambda <= 5)
BEST_LAMBDA_MAX = 5.0
# a minimiser counts as converged when its objective's gradient fell by this factor (at 1e-3
# the relative output gap moved by < 1e-3 in a pilot at smoke against L-BFGS run to 1e-8)
CONVERGED = 1e-3


def _no_pull(rows: pd.DataFrame) -> bool:
    """No run with lambda > 0 applied the pull once (then every lambda is plain AdamW)."""
    pulled = rows[rows.lam > 0]
    return "pulls" in rows and bool(len(pulled)) and bool((pulled.pulls.fillna(0) == 0).all())


_NO_PULL = ("the selective pull never applied in any run with λ > 0, so every λ trained plain "
            "AdamW: nothing to compare")


def _falls_in_every_seed(rows: pd.DataFrame, column: str) -> bool:
    return all(bool(np.all(np.diff(g.sort_values("lam")[column].to_numpy()) < 0))
               for _, g in rows.groupby("seed"))


def _by_seed(rows: pd.DataFrame, column: str) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(g.lam.to_numpy(float), g[column].to_numpy(float))
            for _, g in rows.sort_values("seed").groupby("seed")]


def falls_by_seed(rows: pd.DataFrame, column: str, claim_id: str) -> Finding:
    """Spearman(lambda, ``column``) of each seed's runs over the lambda grid, the mean over
    seeds with its t interval (seeds are independent, a seed's runs are not), judged as
    ``claim_id`` says."""
    claim = CLAIMS[claim_id]
    if _no_pull(rows):
        return Finding(None, detail=_NO_PULL)
    ev = rank_correlation_by_seed(_by_seed(rows, column), threshold=claim.threshold,
                                  side=claim.side)
    return Finding(ev, ours=f"ρ {ev.text(2)}; {len(rows)} runs",
                   detail="each seed's Spearman over the lambda grid, t interval over seeds")


def close_at_chosen(rows: pd.DataFrame, claim_id: str) -> Finding:
    """The linearised model against the fine-tuned one at the regularised lambda a user would
    pick: among ``lam > 0`` the one whose fine-tuned model has the best mean *validation*
    accuracy; judged on *test* accuracy (%), ``finetuned_test`` minus ``linearised_test``,
    paired by seed, within the claim's tolerance. A closeness claim, not a trend: the gap may
    fall with lambda and still be far from zero. Not at the strongest lambda: there the pull
    can keep both models at chance, and two models that learned nothing are close vacuously.
    """
    claim = CLAIMS[claim_id]
    val = rows[rows.lam > 0].groupby("lam").finetuned.mean()
    if not len(val):
        return Finding(None, detail="no λ > 0 among the linearised models' λ")
    lam = float(val.idxmax())
    at = rows[rows.lam == lam].sort_values("seed")
    ev = paired_difference(at.finetuned_test, at.linearised_test, threshold=claim.threshold,
                           side=claim.side)
    return Finding(ev, ours=f"fine-tuned − linearised test accuracy (points) at λ = {lam:g}: "
                            f"{ev.text(2)}; linearised {at.linearised_test.mean():.1f} %, "
                            f"fine-tuned {at.finetuned_test.mean():.1f} %",
                   detail=f"λ = {lam:g} chosen on the fine-tuned model's validation accuracy "
                          f"among λ > 0; paired t interval over seeds on test accuracy; PASS "
                          f"inside ±{claim.threshold:g} points, FAIL wholly outside")


@dataclass(frozen=True)
class TableT1:
    """Table T-002-1 for one task: per-lambda means, the chosen lambda and the findings."""

    task: str
    means: pd.DataFrame           # lam -> mean of each quantity over seeds
    best_lam: float               # the best lambda <= 5 by mean validation accuracy
    strongest: float              # the largest lambda of the grid (the source's 50)
    distance: Finding
    lin_error: Finding
    kl: Finding
    accuracy: Finding


def table_t1(rows: pd.DataFrame, task: str) -> TableT1:
    """Table T-002-1's four rows for ``task``.

    ``rows``: one row per run with ``lam``, ``seed``, ``distance``, ``lin_error``, ``kl``,
    ``accuracy`` (validation, %), ``test_accuracy`` (%) and ``pulls`` (steps where the pull
    applied). Distance: strictly falling in lambda in every seed (bool; N/A if the pull never
    applied). Linearisation error and KL: Spearman with lambda < 0, resampled by seed. Accuracy:
    the best lambda <= 5 is chosen on *validation* accuracy (mean over seeds), then its *test*
    accuracy minus that of the strongest lambda, paired by seed, > 0 (the selection and the
    judgement see different examples).
    """
    rows = rows.reset_index(drop=True)
    strongest = float(rows.lam.max())
    if _no_pull(rows):
        distance = Finding(None, detail=_NO_PULL)
    else:
        distance = Finding(_falls_in_every_seed(rows, "distance"),
                           ours=rows.groupby("lam").distance.mean().round(4).to_dict(),
                           detail=f"{rows.seed.nunique()} seeds", replicates=rows.seed.nunique())
    val = rows.groupby("lam").accuracy.mean()
    pool = val[(val.index <= BEST_LAMBDA_MAX) & (val.index < strongest)]
    best = float(pool.idxmax()) if len(pool) else math.nan
    claim = CLAIMS[f"T1-accuracy-{task}"]
    if not len(pool):
        accuracy = Finding(None, detail=f"no λ ≤ {BEST_LAMBDA_MAX:g} below the strongest")
    else:
        test = rows.pivot_table(index="seed", columns="lam", values="test_accuracy")
        ev = paired_difference(test[best], test[strongest], threshold=claim.threshold,
                               side=claim.side)
        accuracy = Finding(ev, ours=f"test acc(λ={best:g}) − acc(λ={strongest:g}): "
                                    f"{ev.text(2)} points",
                           detail=f"λ = {best:g} chosen on validation accuracy; judged on the "
                                  "test split, paired by seed")
    means = rows.groupby("lam")[["distance", "lin_error", "kl", "accuracy",
                                 "test_accuracy"]].mean()
    return TableT1(task, means, best, strongest, distance,
                   falls_by_seed(rows, "lin_error", f"T1-linerr-{task}"),
                   falls_by_seed(rows, "kl", f"T1-kl-{task}"), accuracy)


def distance_falls(rows: pd.DataFrame) -> Finding:
    """``distance`` strictly falls in lambda in every seed (N/A if the pull never applied)."""
    if _no_pull(rows):
        return Finding(None, detail=_NO_PULL)
    return Finding(_falls_in_every_seed(rows, "distance"),
                   ours=rows.groupby("lam").distance.mean().round(4).to_dict(),
                   detail=f"{rows.seed.nunique()} seeds", replicates=rows.seed.nunique())


@dataclass(frozen=True)
class KappaFigure:
    """Fig (a)-(c): Spearman of kappa (with and without the head) against the settings'
    final train loss and validation accuracy."""

    spread: Mapping[str, float]   # kappa's max / min over the settings, per kernel
    loss: Finding
    acc: Finding
    loss_lora: Finding
    acc_lora: Finding


def kappa_figure(settings: pd.DataFrame, by_seed: pd.DataFrame | None = None) -> KappaFigure:
    """``settings``: one row per setting (seed means) with ``kappa`` (LoRA and head),
    ``kappa_lora`` (LoRA only), ``final_train_loss`` and ``val_acc``; ``by_seed``: the same
    columns with ``seed``, one row per (setting, seed) (default: ``settings`` as one seed).

    The claims are judged on ``by_seed``: each seed's Spearman over the settings, mean with its
    t interval over seeds (a seed's fine-tunings of all settings are one replicate; the
    settings of one seed share κ at θ₀ and the pretraining, so they are not independent
    replicates and a Fisher-z interval over them would count one pipeline as many)."""
    by_seed = settings.assign(seed=0) if by_seed is None else by_seed
    groups = [g for _, g in by_seed.sort_values("seed").groupby("seed")]
    out = {}
    for col, suffix in (("kappa", ""), ("kappa_lora", "-lora")):
        for target, name in (("final_train_loss", "loss"), ("val_acc", "acc")):
            claim = CLAIMS[f"F-002-c-{name}{suffix}"]
            ev = rank_correlation_by_seed([(g[col].to_numpy(float), g[target].to_numpy(float))
                                           for g in groups], threshold=claim.threshold,
                                          side=claim.side)
            out[f"{name}{suffix.replace('-', '_')}"] = Finding(
                ev, ours=f"ρ {ev.text(2)} over {len(settings)} settings",
                detail="each seed's Spearman over the settings, t interval over seeds")
    spread = {col: float(settings[col].max() / settings[col].min())
              for col in ("kappa", "kappa_lora")}
    return KappaFigure(spread, out["loss"], out["acc"], out["loss_lora"], out["acc_lora"])


def monotone_where_pulled(increases: int, pulls: int, *, control_increases: int | None = None,
                          steps: int | None = None) -> Finding:
    """Theorem 1 on one selective flow: no loss increase (PASS) where the pull applied at least
    once; N/A when it never applied (the flow is then plain GD). ``control_increases``: the
    always-on flow from the same start (the control arm), reported."""
    ours = {"increases": int(increases), "pulled steps": int(pulls)}
    if steps is not None:
        ours["steps"] = int(steps)
    if control_increases is not None:
        ours["always-on increases (control)"] = int(control_increases)
    if pulls == 0:
        return Finding(None, ours=ours, detail="the selective pull never applied: the flow is "
                                               "plain gradient descent, Theorem 1 is not tested")
    return Finding(increases == 0, ours=ours,
                   detail="increases counted per step (> 1e-9 relative); the always-on arm "
                          "shows whether this start can raise the loss at all")


def distance_falls_where_pulled(distances: Mapping[float, float], pulls: int) -> Finding:
    """Final distances (lambda -> ||theta - theta_0||) of flows from one start fall strictly as
    lambda grows; N/A if the (selective) pull never applied (every flow is then plain GD)."""
    if pulls == 0:
        return Finding(None, ours={f"λ={k:g}": v for k, v in sorted(distances.items())},
                       detail="the selective pull never applied: nothing to compare")
    f = falls_with_lambda(distances)
    return Finding(f.evidence, ours={**f.ours, "pulled steps": int(pulls)}, detail=f.detail)


def falls_with_lambda(values: Mapping[float, float], *, inversions: int = 0) -> Finding:
    """``values`` (lambda -> a gap) falls as lambda grows: at most ``inversions`` rises between
    neighbours and lower at the largest lambda than at the smallest (bool)."""
    lams = sorted(values)
    v = np.array([values[lam] for lam in lams], dtype=float)
    if len(v) < 2 or not np.isfinite(v).all():
        return Finding(None, ours={f"λ={k:g}": values[k] for k in lams},
                       detail="fewer than two finite values")
    rises = int(np.sum(np.diff(v) >= 0))
    ok = rises <= inversions and v[-1] < v[0]
    return Finding(bool(ok), ours={f"λ={k:g}": round(float(values[k]), 6) for k in lams},
                   detail=f"{rises} rises between neighbouring λ (allowed: {inversions})")


@dataclass(frozen=True)
class KernelRidgeAtConvergence:
    """Slide C at convergence: per lambda the relative output gaps (training and held-out
    inputs) and the minimiser's convergence."""

    table: pd.DataFrame
    finding: Finding


def _gap(r: Mapping, suffix: str) -> float:
    f_nl, f_krr, f0 = (np.asarray(r[k + suffix], float) for k in ("f_nl", "f_krr", "f0"))
    return float(np.linalg.norm(f_nl - f_krr) / np.linalg.norm(f_krr - f0))


def krr_at_convergence(rows: Sequence[Mapping]) -> KernelRidgeAtConvergence:
    """``rows``: per lambda ``lam``, ``grad_ratio`` (the minimiser's convergence) and, on the
    training inputs and (suffix ``_held``) on held-out inputs, ``f_nl`` (the regularised
    minimiser's outputs), ``f_krr`` (kernel ridge's, sigma = lam / 2) and ``f0`` (theta_0's).

    The quantity is ``||f_nl - f_krr|| / ||f_krr - f0||``: 0 at every lambda for a model linear
    in its parameters, and it does not shrink merely because both solutions stay near theta_0
    as lambda grows (the gap of their risks would). On the training inputs both solutions
    approach the targets as lambda -> 0, which forces them together there; on held-out inputs
    nothing does, so the claim is judged there: the held-out gap falls strictly as lambda
    grows. N/A if a minimiser did not converge (``grad_ratio > CONVERGED``)."""
    table = pd.DataFrame([{"lam": float(r["lam"]), "sigma": float(r["lam"]) / 2,
                           "relative gap (train inputs)": _gap(r, ""),
                           "relative gap (held-out inputs)": _gap(r, "_held"),
                           "grad ratio": float(r["grad_ratio"])} for r in rows])
    table = table.sort_values("lam").reset_index(drop=True)
    if (table["grad ratio"] > CONVERGED).any():
        bad = table.lam[table["grad ratio"] > CONVERGED].tolist()
        return KernelRidgeAtConvergence(table, Finding(
            None, ours=table.round(6).to_dict("records"),
            detail=f"the minimiser did not converge at λ = {bad}"))
    finding = falls_with_lambda(dict(zip(table.lam, table["relative gap (held-out inputs)"])))
    return KernelRidgeAtConvergence(table, Finding(
        finding.evidence, ours=finding.ours,
        detail=f"held-out inputs, at convergence (objective's gradient down by ≥ "
               f"{1 / CONVERGED:g}×); " + finding.detail))


def selection(eta: Mapping[str, float],
              reduction: Mapping[str, float | Sequence[float]]) -> Finding:
    """E-002-Sel: Spearman(eta, the candidate's train-loss reduction) > 0 over the candidates.

    ``reduction``: per candidate its reduction per seed (a sequence, seeds in the same order
    for every candidate; a number is one seed). Each seed's Spearman over the candidates, mean
    with its t interval over seeds: the candidates of one seed share θ₀, the base run and the
    pretraining, so they are one replicate, not independent units."""
    claim = CLAIMS["Sel"]
    names = list(eta)
    red = {n: np.atleast_1d(np.asarray(reduction[n], float)) for n in names}
    k = {v.size for v in red.values()}
    if len(k) != 1:
        raise ValueError(f"every candidate needs the same number of seeds, got {sorted(k)}")
    x = np.array([eta[n] for n in names], float)
    groups = [(x, np.array([red[n][s] for n in names])) for s in range(k.pop())]
    ev = rank_correlation_by_seed(groups, threshold=claim.threshold, side=claim.side)
    return Finding(ev, ours=f"ρ {ev.text(2)} over {len(names)} candidates",
                   detail="each seed's Spearman over the candidates, t interval over seeds")
