"""`lalr_core.core.results.evidence`: intervals against closed forms and scipy, verdicts by rule."""

import math

import numpy as np
import pytest
from scipy import stats

from lalr_core.core.results.evidence import Evidence, mean_interval, paired_difference


def test_paired_t_interval_matches_scipy_and_a_hand_computation():
    a = [0.91, 0.93, 0.90, 0.94, 0.92]
    b = [0.90, 0.91, 0.91, 0.92, 0.90]
    ev = paired_difference(a, b, scale=100)
    d = 100 * (np.array(a) - np.array(b))
    ci = stats.ttest_rel(np.array(a) * 100, np.array(b) * 100).confidence_interval(0.95)
    assert ev.estimate == pytest.approx(d.mean())
    assert (ev.low, ev.high) == pytest.approx((ci.low, ci.high))
    half = 2.7764451051977987 * d.std(ddof=1) / math.sqrt(5)   # t_{0.975, 4}
    assert ev.high - ev.estimate == pytest.approx(half)
    assert ev.n == 5 and ev.verdict == "INCONCLUSIVE"           # [-0.08, 2.08] covers 0


def test_one_seed_uses_the_binomial_interval_of_the_test_set():
    ev = paired_difference([0.80], [0.75], n_test=450, scale=100)
    se = math.sqrt(0.8 * 0.2 / 450 + 0.75 * 0.25 / 450)
    assert ev.low == pytest.approx(5 - 100 * 1.959963984540054 * se)
    assert ev.n == 1 and ev.n_test == 450 and ev.verdict == "INCONCLUSIVE"  # 5 +- 5.5 points
    big = paired_difference([0.80], [0.75], n_test=10_000, scale=100)
    assert big.verdict == "PASS"                                 # 5 +- 1.2 points, but
    assert big.claim_verdict == "INCONCLUSIVE" and "1 independent replicate" in big.refusal  # one seed
    assert paired_difference([0.8], [0.75]).verdict == "INCONCLUSIVE"   # no n_test: no interval


@pytest.mark.parametrize("low,high,threshold,side,verdict", [
    (0.5, 2.0, 0.0, "greater", "PASS"), (-2.0, -0.5, 0.0, "greater", "FAIL"),
    (-0.5, 2.0, 0.0, "greater", "INCONCLUSIVE"), (-2.0, -0.5, 0.0, "less", "PASS"),
    (0.5, 2.0, 0.0, "less", "FAIL"), (-0.5, 0.5, 1.0, "within", "PASS"),
    (1.5, 2.0, 1.0, "within", "FAIL"), (0.5, 1.5, 1.0, "within", "INCONCLUSIVE"),
    (-math.inf, math.inf, 0.0, "greater", "INCONCLUSIVE"),
])
def test_verdict_rules(low, high, threshold, side, verdict):
    est = 0.0 if not math.isfinite(low) else (low + high) / 2
    assert Evidence(est, low, high, threshold, side, n=5).verdict == verdict
    assert Evidence(est, low, high, threshold, side).verdict == verdict  # the interval's
    assert Evidence(est, low, high, threshold, side).claim_verdict == (  # one replicate
        verdict if verdict == "INCONCLUSIVE" else "INCONCLUSIVE")


def test_diverged_pairs_are_dropped_and_all_nan_is_inconclusive():
    ev = paired_difference([0.9, np.nan, 0.92], [0.8, 0.85, 0.83])
    assert ev.n == 2
    assert paired_difference([np.nan], [0.5]).verdict == "INCONCLUSIVE"


def test_mean_interval_and_bad_input():
    ev = mean_interval([0.9, 0.95, 0.92], threshold=0.8)
    assert ev.verdict == "PASS" and ev.n == 3
    with pytest.raises(ValueError, match="equal lengths"):
        paired_difference([1, 2], [1])
    with pytest.raises(ValueError, match="tolerance"):
        Evidence(0, -1, 1, 0.0, "within")
    with pytest.raises(ValueError, match="side"):
        Evidence(0, -1, 1, 0.0, "bigger")


def test_check_stores_the_interval_and_report_prints_it(tmp_path, monkeypatch):
    from lalr_core.core.results import pages, records, report
    from lalr_core.core.results.writer import FIGURES_ENV, FigureWriter
    monkeypatch.setenv(FIGURES_ENV, str(tmp_path))
    out = FigureWriter("02_tempbalance", "smoke", "02_tempbalance.ipynb")
    rec = out.check("fig2.1", "TB beats the baseline", paired_difference(
        [0.9, 0.92, 0.91], [0.85, 0.86, 0.86], scale=100), kind="claim",
        quote="TB improves accuracy", source_effect=2.0)
    assert rec["verdict"] == "PASS" and rec["passed"] is True
    assert rec["interval"]["n"] == 3 and rec["interval"]["confidence"] == 0.95
    rec = out.check("fig2.1", "about equal", paired_difference([0.9, 0.91], [0.9, 0.93],
                                                               threshold=0.5, side="within",
                                                               scale=100), kind="claim")
    assert rec["verdict"] == "INCONCLUSIVE" and rec["passed"] is None
    text = report.render_report("smoke", tmp_path / "smoke", [])
    assert "claim tests (the verdicts): 2: 1 PASS, 0 FAIL, 1 INCONCLUSIVE (1 underpowered), 0 N/A" in text
    assert "  - [02_tempbalance](02_tempbalance.md): 2 claim tests: 1 PASS" in text
    assert "| **INCONCLUSIVE (underpowered)** | about equal |" in text
    assert "| +5.33 [" in text and "3 seeds; claim > 0 | effect +2 |" in text
    page = pages.chapter_page("02_tempbalance", "smoke", [],
                              records.load_checks(tmp_path / "smoke"))
    assert "The source: “TB improves accuracy”" in page and "the source's effect +2" in page


def test_paired_bootstrap_matches_the_closed_form_standard_error():
    """Per-example differences d in {-1, 0, 1}: the bootstrap interval's half-width is close
    to 1.96 * sd(d) / sqrt(n), narrower than the unpaired normal interval when the two runs
    mostly agree (the correlation the binomial interval ignores)."""
    from lalr_core.core.results.evidence import bootstrap_difference
    rng = np.random.default_rng(3)
    n = 2000
    a = rng.random(n) < 0.85
    b = a.copy()
    flip = rng.choice(n, 120, replace=False)         # the runs disagree on 120 examples
    b[flip] = ~b[flip]
    ev = bootstrap_difference(a, b, scale=100, resamples=4000)
    d = a.astype(float) - b.astype(float)
    half = 100 * 1.96 * d.std(ddof=1) / math.sqrt(n)
    assert ev.estimate == pytest.approx(100 * d.mean())
    assert (ev.high - ev.low) / 2 == pytest.approx(half, rel=0.1)
    unpaired = paired_difference([a.mean()], [b.mean()], n_test=n, scale=100)
    assert ev.high - ev.low < 0.6 * (unpaired.high - unpaired.low)
    assert ev.n_test == n and ev == bootstrap_difference(a, b, scale=100, resamples=4000)


def test_several_seeds_cross_seeds_and_examples():
    """Seeds paired by row. When every example of a seed has the same difference c_i, the
    examples add no spread and the interval is the t interval over the seeds' differences;
    one row is the paired bootstrap over examples, draw for draw."""
    from lalr_core.core.results.evidence import bootstrap_difference
    n = 50
    c = np.array([0.0, 1.0, 0.5])
    a, b = np.repeat(c[:, None], n, axis=1), np.zeros((3, n))
    ev, t = bootstrap_difference(a, b), paired_difference(c, np.zeros(3))
    assert (ev.n, ev.n_test, ev.replicates) == (3, n, 3) and "3 seeds" in ev.method
    assert (ev.estimate, ev.low, ev.high) == pytest.approx((t.estimate, t.low, t.high))
    rng = np.random.default_rng(0)
    x, y = rng.random(300) < 0.7, rng.random(300) < 0.6
    assert bootstrap_difference(x[None], y[None]) == bootstrap_difference(x, y)
    with pytest.raises(ValueError, match="equal"):
        bootstrap_difference(np.zeros((2, 5)), np.zeros((3, 5)))


def test_least_favourable_part_decides_a_claim_on_every_part():
    from lalr_core.core.results.evidence import least_favourable, margin
    parts = {"a": Evidence(2, 1, 3), "b": Evidence(1, 0.5, 2), "c": Evidence(0, -1, 1)}
    assert margin(parts["b"]) == 0.5 and margin(Evidence(0, -0.2, 0.3, 1.0, "within")) == 0.7
    assert least_favourable(parts)[0] == "c"                        # INCONCLUSIVE beats PASS
    assert least_favourable({**parts, "d": Evidence(-2, -3, -1)})[0] == "d"     # then FAIL
    assert least_favourable({k: parts[k] for k in "ab"})[0] == "b"  # narrowest PASS
    with pytest.raises(ValueError, match="at least one part"):
        least_favourable({})


def test_at_least_counts_parts_and_every_names_the_deciding_part():
    from lalr_core.core.results.evidence import at_least, every
    p = Evidence(1.0, 0.5, 1.5, 0.0, "greater", 5)
    i = Evidence(0.2, -0.5, 0.9, 0.0, "greater", 5)
    f = Evidence(-1.0, -1.5, -0.5, 0.0, "greater", 5)
    ev = at_least({"a": p, "b": i, "c": f}, 2)
    assert (ev.low, ev.high, ev.n, ev.verdict) == (1.0, 2.0, 3, "INCONCLUSIVE")
    assert "3 parts" in ev.text()
    assert at_least({"a": p, "b": p, "c": f}, 2).verdict == "PASS"
    assert at_least({"a": p, "b": f, "c": f}, 2).verdict == "FAIL"
    assert every({"a": p, "b": f}).verdict == "FAIL" and "deciding part: b" in every({"a": p, "b": f}).method
    assert mean_interval([0.4, 0.6, 0.5], threshold=0.3, unit="run").text().endswith("3 runs")


def test_rank_correlation_by_seed_is_wider_than_pooled_pairs_when_runs_disagree():
    from lalr_core.core.results.evidence import rank_correlation, rank_correlation_by_seed
    rng = np.random.default_rng(0)
    # five runs of 40 pairs each: within a run a strong trend whose sign differs by run
    signs = (1, 1, 1, -1, 1)
    groups = [(x := rng.normal(size=40), s * x + 0.1 * rng.normal(size=40)) for s in signs]
    pooled = rank_correlation(np.concatenate([g[0] for g in groups]),
                              np.concatenate([g[1] for g in groups]))
    by_run = rank_correlation_by_seed(groups)
    rhos = [stats.spearmanr(x, y).statistic for x, y in groups]
    half = stats.t.ppf(0.975, 4) * np.std(rhos, ddof=1) / np.sqrt(5)   # the t interval by hand
    assert by_run.estimate == pytest.approx(np.mean(rhos))
    assert (by_run.low, by_run.high) == pytest.approx((np.mean(rhos) - half, 1.0))
    assert by_run.half_width > 2 * pooled.half_width
    assert by_run.n == 5 and by_run.unit == "run" and by_run.verdict == "INCONCLUSIVE"
    # every run agrees: decided; one run: no interval; a short or flat run has no rho
    same = [(x := rng.normal(size=20), x + 0.1 * rng.normal(size=20)) for _ in range(4)]
    assert rank_correlation_by_seed(same).verdict == "PASS"
    assert rank_correlation_by_seed(same, side="less").verdict == "FAIL"
    assert rank_correlation_by_seed(same[:1]).verdict == "INCONCLUSIVE"
    assert rank_correlation_by_seed([*same, ([1, 2], [2, 1]), ([1, 1, 1], [1, 2, 3])]).n == 4


def test_rank_correlation_of_a_perfect_order_keeps_rho_inside_its_interval():
    from lalr_core.core.results.evidence import rank_correlation
    ev = rank_correlation([1, 2, 3, 4, 5, 6, 7], [2, 4, 6, 8, 10, 12, 14])
    assert ev.estimate == pytest.approx(1.0) and ev.low <= ev.estimate <= ev.high
