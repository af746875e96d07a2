"""Chapter 02's summaries: the run table, the last fitted alphas, NegPow2's closed form, the
fig 2.6 distribution fits and the fig 2.2 CKA contrasts (the arithmetic behind the checks that
are not comparisons of accuracies; those are in `verdicts`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.chapters.ch02_tempbalance.settings import allocation_of
from lalr_core.core.results import tables
from lalr_core.core.loop.config import RunConfig


def run_table(configs: list[RunConfig], results: list[dict]) -> pd.DataFrame:
    """One row per run: model, width, lr, allocation, seed, final accuracies (%), diverged,
    and ``test_correct`` (one bool per test example; None for a diverged run) with its length
    ``n_test``: the one-seed intervals of `lalr_core.chapters.ch02_tempbalance.verdicts` need
    them."""
    table = tables.run_table(configs, results, lambda cfg: {
        "model": cfg.model, "width": cfg.width, "lr": cfg.lr, "allocation": allocation_of(cfg),
        "seed": cfg.seed, "epochs": cfg.epochs}, percent=True)
    correct = [None if r.get("test_correct") is None else np.asarray(r["test_correct"], bool)
               for r in results]
    table["test_correct"] = pd.Series(correct, index=table.index, dtype=object)
    table["n_test"] = [np.nan if c is None else len(c) for c in correct]
    return table


def last_alphas(result: Mapping) -> pd.Series:
    """The alphas TempBalance fitted after the last epoch (layer -> alpha), layer order."""
    rec = result["callbacks"]["tempbalance"]
    last = rec[rec.epoch == rec.epoch.max()]
    return pd.Series(last["alpha"].to_numpy(), index=last["layer"].to_numpy(), name="alpha")


def neg_pow2_count_at_least(n: int, c: float) -> int:
    """Layers that NegPow2 gives at least ``c * lr_t``: ``min(n, floor(log2(n / c)))``.

    From eq. 2.22 the j-th largest layer gets ``n 2^-j lr_t`` (the top one ``n (1/2 + 2^-n)``),
    so ``n 2^-j >= c`` iff ``j <= log2(n / c)`` (E-2.5's closed form), for n >= 2
    (the top layer's extra ``n 2^-n`` never crosses a power of two then).
    """
    if n < 2 or not c > 0:
        raise ValueError(f"need n >= 2 and c > 0, got n={n}, c={c}")
    return int(min(n, max(0.0, np.floor(np.log2(n / c)))))


def exp_vs_normal(alpha) -> dict[str, float]:
    """Fig 2.6 fit: exponential MLE on ``alpha - min(alpha)`` vs normal MLE on ``alpha``.

    Returns the two log-likelihoods (the shift has Jacobian 1, so they are comparable), the
    skewness and the two KS p-values (the exponential's loc fixed at the minimum).
    """
    a = np.asarray(alpha, dtype=float)
    x = a - a.min()
    scale = x.mean()
    ll_exp = float(stats.expon.logpdf(x, scale=scale).sum())
    mu, sd = a.mean(), a.std()
    ll_norm = float(stats.norm.logpdf(a, mu, sd).sum())
    return {"n": len(a), "skewness": float(stats.skew(a)), "loglik_exp": ll_exp,
            "loglik_normal": ll_norm,
            # frozen distributions, not names + args: a scipy newer than 1.17 (the GPU
            # machines') maps "norm" to a cdf that takes no loc/scale
            "ks_p_exp": float(stats.kstest(x, stats.expon(0, scale).cdf).pvalue),
            "ks_p_normal": float(stats.kstest(a, stats.norm(mu, sd).cdf).pvalue)}


def cka_contrast(matrix: pd.DataFrame) -> dict[str, float]:
    """Fig 2.2 summaries of a module x module CKA matrix (registration order).

    ``adjacent``: mean CKA of consecutive modules; ``first_last``: mean CKA between the first
    and the last third of the modules (the "shallower vs deeper" similarity the source says
    drops with the allocation).
    """
    m = matrix.to_numpy(dtype=float)
    n = len(m)
    third = max(1, n // 3)
    return {"adjacent": float(np.mean(np.diag(m, 1))),
            "first_last": float(m[:third, n - third:].mean())}
