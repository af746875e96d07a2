"""Every interval method that decides a verdict, calibrated by simulation.

Each test draws data with no effect and with an effect at the replicate counts the chapters use
(3, 5, 10 seeds), and checks that the two-sided 95 % interval covers the true value near 95 %
of the time (a method that under-covers would PASS or FAIL on noise). With `TRIALS` draws the
coverage's own standard error is about 0.0035 (0.007 at 1,000), so the band [0.93, 0.97]
holds a calibrated method with room to spare and refuses one that covers 90 %.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from lalr_core.core.results.evidence import (
    MIN_REPLICATES,
    Evidence,
    bootstrap_difference,
    mean_interval,
    paired_difference,
    rank_correlation,
    rank_correlation_by_seed,
    replicates_needed,
)

TRIALS = 4000
BAND = (0.93, 0.97)


def _coverage(intervals, truth) -> float:
    return float(np.mean([ev.low <= truth <= ev.high for ev in intervals]))


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize("effect", [0.0, 1.5])
def test_paired_t_covers_95_percent(n, effect):
    rng = np.random.default_rng(n)
    b = rng.normal(0.8, 0.05, size=(TRIALS, n))             # a seed's accuracy varies
    a = b + rng.normal(effect / 100, 0.01, size=(TRIALS, n))   # the paired difference's spread
    evs = [paired_difference(a[t], b[t], scale=100) for t in range(TRIALS)]
    assert BAND[0] <= _coverage(evs, effect) <= BAND[1]
    if effect == 0:  # no effect: a one-sided claim PASSes at most 2.5 % of the time
        assert np.mean([ev.claim_verdict == "PASS" for ev in evs]) <= 0.035


@pytest.mark.parametrize("n", [3, 5, 10])
def test_mean_interval_covers_95_percent(n):
    rng = np.random.default_rng(10 + n)
    x = rng.standard_t(df=8, size=(TRIALS, n))   # heavier tails than normal
    assert BAND[0] <= _coverage([mean_interval(row) for row in x], 0.0) <= BAND[1]


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("seed_sd,n", [(0.0, 300), (0.01, 300), (0.03, 3000)])
def test_seeds_by_examples_interval_covers_95_percent(k, seed_sd, n):
    """Seeds differ in their effect (``seed_sd``) and each classifies a shared test set of
    ``n`` examples, half easy for both methods; no effect. The last case, seeds' spread
    dominating a large test set, is where a two-level percentile bootstrap covered 86 %."""
    rng = np.random.default_rng(int(20 + k + 100 * seed_sd))
    covered = []
    for _ in range(1000):
        seed_effect = rng.normal(0, seed_sd, size=(k, 1))
        p = np.where(rng.random(n) < 0.5, 0.95, 0.65)       # the examples the pair shares
        a, b = rng.random((k, n)) < p + seed_effect, rng.random((k, n)) < p
        ev = bootstrap_difference(a, b)
        covered.append(ev.low <= 0.0 <= ev.high)
    assert BAND[0] <= np.mean(covered) <= BAND[1] + 0.01


@pytest.mark.parametrize("k", [3, 5])
def test_rank_correlation_by_seed_covers_95_percent(k):
    """Each run's pairs are correlated with rho = 0.5; the truth is the expected Spearman rho
    of a run of 12 pairs (simulated once, large)."""
    rng = np.random.default_rng(30 + k)
    cov = [[1, 0.5], [0.5, 1]]
    big = rng.multivariate_normal([0, 0], cov, size=(20_000, 12))
    truth = float(np.mean([stats.spearmanr(r[:, 0], r[:, 1]).statistic for r in big]))
    evs = []
    for _ in range(1500):
        runs = rng.multivariate_normal([0, 0], cov, size=(k, 12))
        evs.append(rank_correlation_by_seed([(r[:, 0], r[:, 1]) for r in runs]))
    assert BAND[0] - 0.01 <= _coverage(evs, truth) <= BAND[1] + 0.01


@pytest.mark.parametrize("n", [10, 30])
def test_pooled_rank_correlation_covers_95_percent_for_independent_pairs(n):
    rng = np.random.default_rng(40 + n)
    x = rng.normal(size=(TRIALS, n))
    evs = [rank_correlation(x[t], rng.normal(size=n)) for t in range(TRIALS)]
    assert BAND[0] <= _coverage(evs, 0.0) <= BAND[1]


def test_one_seed_intervals_do_not_cover_a_methods_effect_so_they_decide_nothing():
    """One trained pair's interval covers the test set's sampling, not the seed's: with seeds
    that differ by 2 points it covers the method's effect far less than 95 %, and so it is
    refused (`Evidence.refusal`): its verdict is INCONCLUSIVE whatever the interval says."""
    rng = np.random.default_rng(50)
    evs = []
    for _ in range(TRIALS // 4):
        acc_b = 0.80
        acc_a = acc_b + rng.normal(0.0, 0.02)            # no effect; seed noise only
        evs.append(paired_difference([acc_a], [acc_b], n_test=5000, scale=100))
    assert _coverage(evs, 0.0) < 0.8
    assert {ev.claim_verdict for ev in evs} == {"INCONCLUSIVE"}
    assert any(ev.verdict != "INCONCLUSIVE" for ev in evs)


def test_zero_width_and_too_few_replicates_are_refused():
    capped = Evidence(-10.0, -10.0, -10.0, 0.0, "greater", n=5)      # a clipped log of 0
    assert capped.verdict == "FAIL" and capped.claim_verdict == "INCONCLUSIVE"
    assert "zero-width" in capped.refusal
    two = paired_difference([0.9, 0.91], [0.8, 0.8], scale=100)       # t over 2 seeds
    assert two.replicates == 2 < MIN_REPLICATES and two.claim_verdict == "INCONCLUSIVE"
    layers = Evidence(1.0, 0.5, 1.5, 0.0, "greater", n=12, unit="layer")  # layers of one run
    assert layers.replicates == 1 and layers.claim_verdict == "INCONCLUSIVE"
    shared = Evidence(1.0, 0.5, 1.5, 0.0, "greater", n=5, replicates=1)   # one pretraining
    assert shared.claim_verdict == "INCONCLUSIVE"


def test_replicates_needed_matches_the_t_interval_it_predicts():
    """Sized from the measured spread: at the predicted count, a t interval with that spread
    decides the effect; one replicate fewer does not."""
    rng = np.random.default_rng(60)
    x = rng.normal(0.4, 1.0, size=4)
    ev = mean_interval(x)
    m = replicates_needed(ev, 1.0)
    s = float(np.std(x, ddof=1))

    def half(k):
        return stats.t.ppf(0.975, k - 1) * s / math.sqrt(k)

    assert half(m) < 1.0 and (m == MIN_REPLICATES or half(m - 1) >= 1.0)
    assert replicates_needed(mean_interval([1.0]), 1.0) is None   # no spread measured
