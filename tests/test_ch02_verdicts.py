"""Chapter 02's verdicts (lalr_core.chapters.ch02_tempbalance.verdicts): contrasts against
hand computations and scipy's paired t, the conjunction rule, our numbers beside the source's."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from lalr_core.chapters import ch02_tempbalance as tb
from lalr_core.chapters import chapter_settings
from lalr_core.core.results.evidence import Evidence

N_TEST = 40


def _row(model, width, alloc, seed, test, train, rng):
    hits = np.zeros(N_TEST, bool)
    hits[rng.choice(N_TEST, round(test / 100 * N_TEST), replace=False)] = True
    return dict(model=model, width=width, lr=0.2, allocation=alloc, seed=seed,
                test_acc=100 * hits.mean(), train_acc=train, test_correct=hits, n_test=N_TEST)


def _table(seeds=5, seed=0):
    """R18 and R34 at two widths, baseline and alpha; alpha's test gain is +5 points on R34 at
    width 0.5 and 0 elsewhere (up to the test set's 2.5-point grain), plus seed noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(seeds):
        for m in ("r18", "r34"):
            for w in (0.5, 1.0):
                base = 70 + rng.normal(0, 4)
                gain = 5.0 if (m, w) == ("r34", 0.5) else 0.0
                rows.append(_row(m, w, "baseline", k, base, 90 + k, rng))
                rows.append(_row(m, w, "alpha", k, base + gain + rng.normal(0, 1), 89 + k, rng))
    return pd.DataFrame(rows)


def _paired_t(a, b):
    d = np.asarray(a) - np.asarray(b)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return d.mean(), d.mean() - half, d.mean() + half


def test_contrast_over_seeds_is_the_paired_t_of_the_per_seed_contrast():
    t = _table()
    sel = lambda a, w: {"model": "r34", "width": w, "allocation": a}
    e = tb.contrast(t, "test_acc", [sel("alpha", 0.5), sel("alpha", 1.0)],
                    [sel("baseline", 0.5), sel("baseline", 1.0)])
    by = t.set_index(["model", "width", "allocation", "seed"]).test_acc
    a = [(by["r34", 0.5, "alpha", k] + by["r34", 1.0, "alpha", k]) / 2 for k in range(5)]
    b = [(by["r34", 0.5, "baseline", k] + by["r34", 1.0, "baseline", k]) / 2 for k in range(5)]
    assert (e.estimate, e.low, e.high) == pytest.approx(_paired_t(a, b))
    assert e.n == 5 and "paired t" in e.method


def test_difference_of_differences_uses_weight_two():
    t = _table()
    plus = [{"model": "r34", "allocation": "alpha", "width": 0.5},
            {"model": "r18", "allocation": "baseline", "width": 0.5}]
    minus = [{"model": "r34", "allocation": "baseline", "width": 0.5},
             {"model": "r18", "allocation": "alpha", "width": 0.5}]
    e = tb.contrast(t, "test_acc", plus, minus, weight=2.0)
    by = t[t.width == 0.5].set_index(["model", "allocation", "seed"]).test_acc
    dd = [(by["r34", "alpha", k] - by["r34", "baseline", k])
          - (by["r18", "alpha", k] - by["r18", "baseline", k]) for k in range(5)]
    assert (e.estimate, e.low, e.high) == pytest.approx(_paired_t(dd, np.zeros(5)))


def test_one_seed_test_accuracy_uses_the_paired_bootstrap_over_examples():
    t = _table(seeds=1)
    sel = lambda a: {"model": "r34", "width": 0.5, "allocation": a}
    e = tb.contrast(t, "test_acc", [sel("alpha")], [sel("baseline")], side="greater")
    by = t.set_index(["model", "width", "allocation"]).test_acc
    assert e.estimate == pytest.approx(by["r34", 0.5, "alpha"] - by["r34", 0.5, "baseline"])
    assert e.n == 1 and e.n_test == N_TEST and "bootstrap" in e.method
    assert math.isfinite(e.low) and e.low <= e.estimate <= e.high


def test_one_seed_train_accuracy_uses_the_normal_interval_on_n_train():
    t = _table(seeds=1)
    sel = lambda a: {"model": "r18", "width": 1.0, "allocation": a}
    e = tb.contrast(t, "train_acc", [sel("alpha")], [sel("baseline")], n_train=1000)
    pa, pb = 0.89, 0.90
    half = 100 * 1.959964 * math.sqrt(pa * (1 - pa) / 1000 + pb * (1 - pb) / 1000)
    assert (e.estimate, e.high - e.estimate) == pytest.approx((-1.0, half), rel=1e-5)
    assert "1000 training examples" in e.method and e.n_test is None
    without = tb.contrast(t, "train_acc", [sel("alpha")], [sel("baseline")])
    assert without.verdict == "INCONCLUSIVE" and math.isinf(without.high)


def test_a_diverged_run_drops_its_seed():
    t = _table()
    i = t.index[(t.model == "r18") & (t.width == 0.5) & (t.allocation == "alpha") & (t.seed == 2)]
    t.loc[i, ["test_acc", "train_acc"]] = np.nan
    t.loc[i[0], "test_correct"] = None
    e = tb.contrast(t, "test_acc", [{"model": "r18", "width": 0.5, "allocation": "alpha"}],
                    [{"model": "r18", "width": 0.5, "allocation": "baseline"}])
    assert e.n == 4


def test_selectors_must_name_one_run_per_seed():
    t = _table()
    with pytest.raises(ValueError, match="several runs of one seed"):
        tb.contrast(t, "test_acc", [{"allocation": "alpha"}], [{"allocation": "baseline"}])
    with pytest.raises(ValueError, match="no run matches"):
        tb.seed_means(t, "test_acc", [{"model": "r50"}])
    with pytest.raises(ValueError, match="metric"):
        tb.seed_means(t, "val_acc", [{"model": "r18", "width": 0.5, "allocation": "alpha"}])


def test_paired_deltas_rows_are_the_contrasts():
    t = _table()
    d = tb.paired_deltas(t, ["model", "width"])
    assert len(d) == 4 and set(d.allocation) == {"alpha"} and (d.seeds == 5).all()
    row = d[(d.model == "r34") & (d.width == 0.5)].iloc[0]
    e = tb.contrast(t, "test_acc", [{"model": "r34", "width": 0.5, "allocation": "alpha"}],
                    [{"model": "r34", "width": 0.5, "allocation": "baseline"}])
    assert (row.d_test, row.d_test_low, row.d_test_high) == pytest.approx(
        (e.estimate, e.low, e.high))
    assert row.d_train == pytest.approx(-1.0) and row.d_train_low == pytest.approx(-1.0)
    assert row.d_test_low > 0                         # the planted +5-point gain is detected


def _ev(low, high, side="greater"):
    return Evidence((low + high) / 2, low, high, 0.0, side, 5)


def test_all_of_fails_if_one_part_fails_and_passes_only_if_all_pass():
    passes, fails, unsure = _ev(1, 3), _ev(-3, -1), _ev(-1, 1)
    for parts, verdict in (({"a": passes, "b": _ev(0.5, 2)}, "PASS"),
                           ({"a": passes, "b": unsure}, "INCONCLUSIVE"),
                           ({"a": passes, "b": unsure, "c": fails}, "FAIL"),
                           ({"a": _ev(1, 3, "less")}, "FAIL")):
        deciding, detail = tb.all_of(parts)
        assert deciding.verdict == verdict
        assert all(f"{name}: " in detail for name in parts)
    assert tb.all_of({"a": passes, "b": _ev(0.5, 2)})[0].low == 0.5   # the narrowest margin
    with pytest.raises(ValueError):
        tb.all_of({})


def test_unit_evidence_uses_seeds_and_falls_back_to_batches_for_one_seed():
    rows = [dict(allocation=a, unit="seed", id=k, first_last=v)
            for k in range(4) for a, v in (("alpha", 0.50 + 0.01 * k), ("baseline", 0.60))]
    rows += [dict(allocation=a, unit="batch", id=b, first_last=v)
             for b in range(3) for a, v in (("alpha", 0.7), ("baseline", 0.6 + 0.01 * b))]
    v = pd.DataFrame(rows)
    e = tb.unit_evidence(v, "first_last", "alpha", "baseline", side="less")
    assert e.n == 4 and e.verdict == "PASS" and "seeds" in e.method
    one = v[(v.unit == "batch") | (v.id == 0)]
    e1 = tb.unit_evidence(one, "first_last", "alpha", "baseline", side="less")
    assert e1.n == 3 and e1.verdict == "FAIL" and "batches" in e1.method
    m = tb.unit_evidence(v, "first_last", "baseline", threshold=0.8, side="greater")
    assert m.verdict == "FAIL" and m.estimate == pytest.approx(0.6)   # [0.6, 0.6] <= 0.8


def test_beside_source_reports_differences_and_judges_only_when_asked():
    t = _table()
    t = t[(t.model == "r18") & (t.width == 0.5)]
    src = pd.DataFrame([
        dict(lr=0.2, allocation="baseline", metric="test_acc", source_value=71.0),
        dict(lr=np.nan, allocation="alpha", metric="train_acc_low", source_value=65.0),
        dict(lr=np.nan, allocation="alpha", metric="train_acc_high", source_value=70.0)])
    quick = tb.beside_source(t, src, judge=False)
    assert len(quick) == 2 and quick.within.isna().all()
    base = t[t.allocation == "baseline"].test_acc
    row = quick[quick.metric == "test_acc"].iloc[0]
    assert row.ours == pytest.approx(base.mean())
    assert row.difference == pytest.approx(base.mean() - 71.0)
    rng_row = quick[quick.metric == "train_acc"].iloc[0]
    assert rng_row.ours == pytest.approx(91.0)                 # train 89 + k, k = 0..4
    assert rng_row.difference == pytest.approx(21.0) and rng_row.source == 67.5
    paper = tb.beside_source(t, src, judge=True)
    k, sd = len(base), base.std(ddof=1)
    inside = abs(base.mean() - 71.0) <= stats.t.ppf(0.975, k - 1) * sd * math.sqrt(1 + 1 / k)
    assert paper.within.tolist() == [inside, False]


def test_the_quick_profile_has_five_seeds_for_the_accuracy_claims():
    assert chapter_settings("02", "quick").seeds >= 5            # enough seeds for decidable verdicts


def test_delta_gap_keeps_each_delta_an_equal_weight_mean():
    """Delta over two widths (2 runs each side) minus Delta at one width: lists repeated."""
    t = _table()
    sel = lambda m, a, w: {"model": m, "allocation": a, "width": w}
    first = ([sel("r34", "alpha", 0.5), sel("r34", "alpha", 1.0)],
             [sel("r34", "baseline", 0.5), sel("r34", "baseline", 1.0)])
    second = ([sel("r18", "alpha", 0.5)], [sel("r18", "baseline", 0.5)])
    e = tb.delta_gap(t, "test_acc", first, second, side="greater")
    by = t.set_index(["model", "width", "allocation", "seed"]).test_acc
    gap = [(by["r34", 0.5, "alpha", k] + by["r34", 1.0, "alpha", k]
            - by["r34", 0.5, "baseline", k] - by["r34", 1.0, "baseline", k]) / 2
           - (by["r18", 0.5, "alpha", k] - by["r18", 0.5, "baseline", k]) for k in range(5)]
    assert (e.estimate, e.low, e.high) == pytest.approx(_paired_t(gap, np.zeros(5)))
    one = tb.delta_gap(_table(seeds=1), "test_acc", first, second)
    assert "bootstrap" in one.method and math.isfinite(one.low)
    with pytest.raises(ValueError, match="at least one run"):
        tb.delta_gap(t, "test_acc", first, ([], second[1]))


def test_beside_source_leaves_a_number_without_our_run_empty():
    t = _table()
    src = pd.DataFrame([dict(lr=0.15, allocation="alpha", metric="test_acc", source_value=70.0)])
    row = tb.beside_source(t, src, judge=True).iloc[0]
    assert row.seeds == 0 and math.isnan(row.ours) and math.isnan(row.difference)
    assert row.within is None and row.source == 70.0


def test_gap_beside_source_uses_the_prediction_interval_of_one_run():
    e = Evidence(0.5, -0.5, 1.5, n=3)                   # half-width 1 over 3 seeds
    row = tb.gap_beside_source(e, 2.4, judge=True, lr=0.15, allocation="a - b")
    assert row["difference"] == pytest.approx(-1.9) and row["lr"] == 0.15
    assert row["within"] is True                       # 1.9 <= 1 * sqrt(4)
    assert tb.gap_beside_source(e, 2.6, judge=True)["within"] is False
    assert tb.gap_beside_source(e, 2.6, judge=False)["within"] is None


def test_train_contrast_over_seeds_names_no_test_set():
    t = _table()
    sel = lambda a: {"model": "r18", "width": 1.0, "allocation": a}
    e = tb.contrast(t, "train_acc", [sel("alpha")], [sel("baseline")], n_train=1000)
    assert e.n == 5 and e.n_test is None and "test examples" not in e.text()


def test_a_one_seed_contrast_is_one_replicate_and_decides_no_claim():
    """One seed's test images are one replicate (its bootstrap interval may exclude 0)."""
    sel = lambda a: {"model": "r34", "width": 0.5, "allocation": a}
    one = tb.contrast(_table(seeds=1), "test_acc", [sel("alpha")], [sel("baseline")])
    assert one.replicates == 1 and one.claim_verdict == "INCONCLUSIVE" and one.refusal
    five = tb.contrast(_table(), "test_acc", [sel("alpha")], [sel("baseline")])
    assert five.replicates == 5 and not five.refusal


def test_the_quick_profile_replicates_of_each_claim_family():
    """Accuracy and CKA claims: 5 seeds; fig 2.6 / T-001-c: 3 seeds; fig 1.3: 1 trained MLP
    (INCONCLUSIVE by the replicate rule) against 5 untrained ones (no training)."""
    q = chapter_settings("02", "quick")
    assert (q.seeds, q.dist_seeds, q.esd_seeds, q.esd_init_seeds) == (5, 3, 1, 5)
    fig13 = tb.section_runs(q)["fig1.3"][0]
    assert [c.seed for c in fig13] == list(range(q.esd_seeds))
