"""Chapter 03's claim tests on small synthetic results: each gives PASS, FAIL and, where it is
judged on an interval, INCONCLUSIVE (the harness: ``tests/test_claim_cases.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from lalr_core.chapters.ch03_ntk import findings as it

CHAPTER = "ch03_ntk"

LAMS = (0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0)


def _rows(seeds=3, *, distance=None, lin=None, kl=None, val=None, test=None, pulls=10):
    """One row per (seed, lambda); each column a function (lam, seed) -> value."""
    flat = lambda lam, seed: 1.0
    out = []
    for seed in range(seeds):
        for lam in LAMS:
            out.append({"lam": lam, "seed": seed,
                        "distance": (distance or (lambda a, s: 5 - np.log1p(a)))(lam, seed),
                        "lin_error": (lin or flat)(lam, seed), "kl": (kl or flat)(lam, seed),
                        "accuracy": (val or (lambda a, s: 90 - a / 10))(lam, seed),
                        "test_accuracy": (test or (lambda a, s: 90 - a / 10))(lam, seed),
                        "pulls": 0 if lam == 0 else pulls})
    return pd.DataFrame(out)


# Each seed's trend plus its own noise, so the seeds' Spearman rhos differ (identical rhos
# give a zero-width interval, which is refused): the trend dominates the noise.
_NOISE = {(lam, seed): float(v) for seed in range(5) for lam, v in
          zip(LAMS, np.random.default_rng(100 + seed).normal(0.0, 1.0, len(LAMS)))}
FALLS = lambda lam, seed: -float(np.log1p(lam)) + 0.4 * _NOISE[(lam, seed)]
RISES = lambda lam, seed: float(np.log1p(lam)) + 0.4 * _NOISE[(lam, seed)]
MIXED = lambda lam, seed: FALLS(lam, seed) if seed == 0 else RISES(lam, seed)


def _t1(task="sent", **kw):
    return it.table_t1(_rows(**kw), task)


# accuracy: best lambda <= 5 by validation, judged on test against lambda = 50
DROP = lambda lam, seed: 90.0 - (8.0 + 0.3 * seed if lam == 50 else 0.0)
GAIN = lambda lam, seed: 90.0 + (8.0 + 0.3 * seed if lam == 50 else 0.0)
NOISY = lambda lam, seed: 90.0 - ((8.0, -8.0, 1.0)[seed] if lam == 50 else 0.0)


def _gap(fn, seeds=3):
    rows = _rows(seeds).assign(gap=[fn(a, s) for a, s in zip(_rows(seeds).lam,
                                                                _rows(seeds).seed)])
    return lambda cid: it.falls_by_seed(rows, "gap", cid)


def _close(gap, seeds=3):
    """Fine-tuned and linearised accuracies (%) over the lambda grid: the fine-tuned model
    learns best (validation) at lambda = 1, where the linearised one trails on test by
    ``gap(seed)`` points; at the strongest lambda both sit at chance (a vacuous closeness the
    chosen lambda must not pick)."""
    rows = _rows(seeds)
    best, chance = 1.0, max(LAMS)
    ft = [90.0 if a == best else 50.0 if a == chance else 80.0 for a in rows.lam]
    lin = [f - (gap(s) if a == best else 0.0 if a == chance else 30.0)
           for f, a, s in zip(ft, rows.lam, rows.seed)]
    return it.close_at_chosen(rows.assign(finetuned=ft, finetuned_test=ft, linearised=lin,
                                          linearised_test=lin), "T1b-close-sent")


def _settings(n, sign, noise=0.3, seeds=3):
    """``n`` settings whose loss follows κ (sign +1) or opposes it (-1), ``seeds`` seeds each
    with its own noise; returns (seed means, per-seed rows)."""
    k = np.arange(1, n + 1, dtype=float)
    rows = []
    for s in range(seeds):
        loss = sign * k + noise * n * np.random.default_rng(s).standard_normal(n) / 10
        rows.append(pd.DataFrame({"seed": s, "kappa": 10 ** k, "kappa_lora": 10 ** (k / 2),
                                  "final_train_loss": loss, "val_acc": -loss}))
    per_seed = pd.concat(rows, ignore_index=True)
    return (per_seed.assign(setting=np.tile(k, seeds)).groupby("setting").mean()
            .drop(columns="seed").reset_index(drop=True), per_seed)


def _kappa(n, sign, **kw):
    return it.kappa_figure(*_settings(n, sign, **kw))


def _krr(gaps, grad_ratio=1e-9):
    """Held-out gaps as given; the training-input gaps fall regardless (they do not decide)."""
    n = 4
    return it.krr_at_convergence([
        {"lam": lam, "f0": np.zeros(n), "f_krr": np.ones(n),
         "f_nl": np.ones(n) + np.r_[1 / (1 + lam), np.zeros(n - 1)],
         "f0_held": np.zeros(n), "f_krr_held": np.ones(n),
         "f_nl_held": np.ones(n) + np.r_[g, np.zeros(n - 1)], "grad_ratio": grad_ratio}
        for lam, g in gaps.items()])


def _sel(n, sign, noise=2.0, seeds=3):
    """``n`` candidates, ``seeds`` seeds' reductions each (one noise draw per seed)."""
    rng = np.random.default_rng(1)
    eta = {f"c{i}": float(i) for i in range(n)}
    red = {f"c{i}": [sign * i + noise * rng.standard_normal() for _ in range(seeds)]
           for i in range(n)}
    return it.selection(eta, red)


def _t1_cases(task):
    return {
        f"T1-distance-{task}": {
            "PASS": lambda: _t1(task).distance,
            "FAIL": lambda: _t1(task, distance=lambda a, s: 5 - np.log1p(a) * (s != 1)).distance,
            "N/A": lambda: _t1(task, pulls=0).distance},
        f"T1-linerr-{task}": {
            "PASS": lambda: _t1(task, lin=FALLS).lin_error,
            "FAIL": lambda: _t1(task, lin=RISES).lin_error,
            "INCONCLUSIVE": lambda: _t1(task, lin=MIXED).lin_error},
        f"T1-kl-{task}": {
            "PASS": lambda: _t1(task, kl=FALLS).kl,
            "FAIL": lambda: _t1(task, kl=RISES).kl,
            "INCONCLUSIVE": lambda: _t1(task, kl=MIXED).kl},
        f"T1-accuracy-{task}": {
            "PASS": lambda: _t1(task, test=DROP).accuracy,
            "FAIL": lambda: _t1(task, test=GAIN).accuracy,
            "INCONCLUSIVE": lambda: _t1(task, test=NOISY).accuracy},
        f"T1b-gap-{task}": {
            "PASS": lambda: _gap(FALLS)(f"T1b-gap-{task}"),
            "FAIL": lambda: _gap(RISES)(f"T1b-gap-{task}"),
            "INCONCLUSIVE": lambda: _gap(MIXED)(f"T1b-gap-{task}")},
        f"T1b-close-{task}": {
            # within ±5: a gap of 1 +- 0.3 points; outside: 40 points (the linearised model at
            # chance); straddling the tolerance: 4, 6, 5.5 points
            "PASS": lambda: _close(lambda s: 1.0 + 0.3 * s),
            "FAIL": lambda: _close(lambda s: 40.0 + s),
            "INCONCLUSIVE": lambda: _close(lambda s: (4.0, 6.0, 5.5)[s])},
    }


def _nlp_cases(task):
    return {
        f"nlp-distance-{task}": {
            "PASS": lambda: it.distance_falls(_rows()),
            "FAIL": lambda: it.distance_falls(_rows(distance=lambda a, s: 1.0)),
            "N/A": lambda: it.distance_falls(_rows(pulls=0))},
        f"nlp-linerr-{task}": {
            "PASS": lambda: it.falls_by_seed(_rows(lin=FALLS), "lin_error", f"nlp-linerr-{task}"),
            "FAIL": lambda: it.falls_by_seed(_rows(lin=RISES), "lin_error", f"nlp-linerr-{task}"),
            "INCONCLUSIVE": lambda: it.falls_by_seed(_rows(lin=MIXED), "lin_error",
                                                     f"nlp-linerr-{task}")},
        f"nlp-kl-{task}": {
            "PASS": lambda: it.falls_by_seed(_rows(kl=FALLS), "kl", f"nlp-kl-{task}"),
            "FAIL": lambda: it.falls_by_seed(_rows(kl=RISES), "kl", f"nlp-kl-{task}"),
            "INCONCLUSIVE": lambda: it.falls_by_seed(_rows(kl=FALLS, seeds=1), "kl",
                                                     f"nlp-kl-{task}")},
    }


CASES = {
    **_t1_cases("sent"), **_t1_cases("acc"), **_nlp_cases("sst2"), **_nlp_cases("cola"),
    "F-002-c-loss": {
        "PASS": lambda: _kappa(20, +1).loss,
        "FAIL": lambda: _kappa(20, -1).loss,
        "INCONCLUSIVE": lambda: _kappa(20, +1, seeds=2).loss},
    "F-002-c-acc": {
        "PASS": lambda: _kappa(20, +1).acc,
        "FAIL": lambda: _kappa(20, -1).acc,
        "INCONCLUSIVE": lambda: _kappa(20, +1, seeds=2).acc},
    "F-002-c-loss-lora": {
        "PASS": lambda: _kappa(20, +1).loss_lora,
        "FAIL": lambda: _kappa(20, -1).loss_lora,
        "INCONCLUSIVE": lambda: _kappa(20, +1, seeds=2).loss_lora},
    "F-002-c-acc-lora": {
        "PASS": lambda: _kappa(20, +1).acc_lora,
        "FAIL": lambda: _kappa(20, -1).acc_lora,
        "INCONCLUSIVE": lambda: _kappa(20, +1, seeds=2).acc_lora},
    "F-002-A-selective": {
        "PASS": lambda: it.monotone_where_pulled(0, 40, control_increases=3),
        "FAIL": lambda: it.monotone_where_pulled(2, 40, control_increases=3),
        "N/A": lambda: it.monotone_where_pulled(0, 0, control_increases=0)},
    "F-002-A-distance-selective": {
        "PASS": lambda: it.distance_falls_where_pulled({0.0: 1.2, 1.0: 1.1, 10.0: 0.7}, 9),
        "FAIL": lambda: it.distance_falls_where_pulled({0.0: 1.02, 1.0: 1.021, 10.0: 1.022}, 9),
        "N/A": lambda: it.distance_falls_where_pulled({0.0: 1.0, 1.0: 1.0, 10.0: 1.0}, 0)},
    "F-002-B": {
        "PASS": lambda: it.falls_with_lambda({0.0: 0.2, 10.0: 0.03}),
        "FAIL": lambda: it.falls_with_lambda({0.0: 0.03, 10.0: 0.2})},
    "Th1": {
        "PASS": lambda: it.monotone_where_pulled(0, 12, control_increases=0, steps=50),
        "FAIL": lambda: it.monotone_where_pulled(1, 12, control_increases=0, steps=50),
        "N/A": lambda: it.monotone_where_pulled(0, 0, control_increases=0, steps=50)},
    "Th3-4": {
        "PASS": lambda: it.falls_with_lambda({0.0: 2.1, 0.1: 2.2, 1.0: 2.0, 10.0: 1.7, 50.0: 0.3},
                                             inversions=1),
        "FAIL": lambda: it.falls_with_lambda({0.0: 2.1, 0.1: 2.2, 1.0: 2.3, 10.0: 1.7, 50.0: 0.3},
                                             inversions=1)},
    "KRR": {
        "PASS": lambda: _krr({0.1: 0.9, 1.0: 0.6, 10.0: 0.2, 50.0: 0.05}).finding,
        "FAIL": lambda: _krr({0.1: 0.3, 1.0: 0.6, 10.0: 0.7, 50.0: 0.05}).finding,
        "N/A": lambda: _krr({0.1: 0.9, 1.0: 0.6}, grad_ratio=0.1).finding},
    "Sel": {
        "PASS": lambda: _sel(12, +1),
        "FAIL": lambda: _sel(12, -1),
        "INCONCLUSIVE": lambda: _sel(12, +1, seeds=1)},
}
