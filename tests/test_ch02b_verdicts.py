"""Chapter 02b's verdicts (`ch02b_htsr_pruning.verdicts`) and the summaries its checks use:
per-example interpolation of the uniform curve, pooled and contrasted gains, the "every one of
k" rule, TempBalance-vs-global-lr evidence, rebounds, alpha gaps, and the quotes' wording."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch02b_htsr_pruning as px
from lalr_core.chapters import chapter_settings
from lalr_core.core.results.evidence import Evidence

N = 400  # test examples of the synthetic runs


def correct(acc: float, seed: int, n: int = N) -> np.ndarray:
    """A run's per-example correctness with exactly ``acc * n`` hits, in random places."""
    hits = np.zeros(n, dtype=bool)
    hits[np.random.default_rng(seed).permutation(n)[:round(acc * n)]] = True
    return hits


def row(metric, rule, P, remaining, hits, **labels):
    return {"metric": metric, "rule": rule, "P": P, "remaining": remaining, "layer_lr": "none",
            "test_acc": 100 * float(np.mean(hits)), "test_correct": hits, **labels}


def curve(points, seed=0, **labels):
    """Uniform runs at ``[(P, remaining, acc), ...]``."""
    return pd.DataFrame([row(px.UNIFORM, px.UNIFORM, P, r, correct(a, seed + i), **labels)
                         for i, (P, r, a) in enumerate(points)])


# ----------------------------------------------------------------------------- interpolation
def test_uniform_curve_is_interpolated_per_example_and_clamped_at_its_ends():
    c = curve([(0.3, 0.6, 0.9), (0.5, 0.2, 0.5)])
    lo, hi = (np.asarray(h, float) for h in c.sort_values("remaining")["test_correct"])
    y, clamped = px.uniform_at(c, 0.3)                       # a quarter of the way up
    assert not clamped and np.allclose(y, 0.75 * lo + 0.25 * hi)
    assert y.mean() == pytest.approx(0.6)                    # 0.5 + 0.25 * (0.9 - 0.5)
    for r, want, flag in ((0.1, lo, True), (0.9, hi, True), (0.2, lo, False), (0.6, hi, False)):
        y, clamped = px.uniform_at(c, r)
        assert clamped is flag and np.array_equal(y, want)
    with pytest.raises(ValueError, match="no runs"):
        px.uniform_at(c.iloc[:0], 0.3)
    twin = pd.concat([c, curve([(0.35, 0.6, 0.7)], seed=9)], ignore_index=True)
    y, _ = px.uniform_at(twin, 0.6)                         # two runs of one size: averaged
    assert y.mean() == pytest.approx(0.8)


def test_a_run_on_the_uniform_curve_gains_nothing_and_a_better_one_gains_its_margin():
    c = curve([(0.3, 0.6, 0.9), (0.5, 0.2, 0.5)])
    on = pd.DataFrame([row("entropy", "direct", 0.5, 0.4,
                           c.sort_values("remaining")["test_correct"].iloc[1])])
    on.loc[0, "remaining"] = 0.6                             # exactly the upper uniform run
    e, clamped = px.versus_uniform(on, c)
    assert e.estimate == 0 and e.low == e.high == 0 and clamped == 0 and e.verdict == "FAIL"
    better = pd.DataFrame([row("entropy", "direct", 0.5, 0.2, correct(0.8, 7))])
    e, _ = px.versus_uniform(better, c)
    assert e.estimate == pytest.approx(30.0) and e.verdict == "PASS" and e.n_test == N
    assert px.versus_uniform(better, c, side="less")[0].verdict == "FAIL"


def test_pooled_gains_average_the_runs_and_contrasts_are_their_difference():
    c1 = curve([(0.3, 0.6, 0.9), (0.5, 0.2, 0.5)], seed=0)
    c2 = curve([(0.3, 0.6, 0.8), (0.5, 0.2, 0.4)], seed=5)
    runs1 = pd.DataFrame([row("alpha", "direct", 0.5, 0.2, correct(0.7, 11)),
                          row("entropy", "direct", 0.5, 0.6, correct(0.9, 12))])
    runs2 = pd.DataFrame([row("alpha", "direct", 0.5, 0.4, correct(0.6, 13))])
    g1 = px.versus_uniform(runs1, c1)[0].estimate         # (70 - 50 + 90 - 90) / 2
    g2 = px.versus_uniform(runs2, c2)[0].estimate         # 60 - 60
    assert g1 == pytest.approx(10.0) and g2 == pytest.approx(0.0)
    e = px.gain_contrast((runs1, c1), (runs2, c2))
    assert e.estimate == pytest.approx(g1 - g2) and e.low <= e.estimate <= e.high


def test_gain_table_pools_each_family_and_rule_and_reports_the_same_target_gain():
    c = curve([(0.3, 0.6, 0.9), (0.5, 0.2, 0.5), (0.7, 0.1, 0.3)], aug="traditional")
    runs = pd.DataFrame([row(m, r, 0.5, 0.2, correct(a, i), aug="traditional")
                         for i, (m, r, a) in enumerate((("alpha", "direct", 0.6),
                                                        ("entropy", "direct", 0.4),
                                                        ("norm", "inverse", 0.5)))])
    g = px.gain_table(pd.concat([c, runs], ignore_index=True), by=["aug"])
    assert set(zip(g.family, g.rule)) == {("shape", "direct"), ("scale", "inverse")}
    shape = g[g.family == "shape"].iloc[0]
    assert shape.runs == 2 and shape.gain == pytest.approx(0.0) and shape.clamped == 0
    assert shape.gain_same_P == pytest.approx(0.0) and shape.P == 0.5


# ----------------------------------------------------------------------------- all_of
def test_all_of_passes_only_when_every_interval_passes_and_fails_when_one_fails():
    rng = np.random.default_rng(0)
    for side in ("greater", "less"):
        for _ in range(300):
            lows = rng.normal(0, 1, size=rng.integers(1, 5))
            es = [Evidence(lo + 0.5, lo, lo + 1, 0.2, side) for lo in lows]
            verdicts = {e.verdict for e in es}
            want = ("PASS" if verdicts == {"PASS"} else "FAIL" if "FAIL" in verdicts
                    else "INCONCLUSIVE")
            assert px.all_of(es).verdict == want
    with pytest.raises(ValueError):
        px.all_of([Evidence(0, -1, 1, 0.0, "greater"), Evidence(0, -1, 1, 0.0, "less")])
    with pytest.raises(ValueError):
        px.all_of([])
    nan = Evidence(np.nan, np.nan, np.nan, 0.0, "greater")
    assert px.all_of([Evidence(2, 1, 3), nan]).verdict == "INCONCLUSIVE"


# ----------------------------------------------------------------------------- layer-wise lr
def lr_table():
    rows = []
    for i, (P, rem, base, tb) in enumerate(((0.0, 1.0, 0.9, 0.9), (0.2, 0.6, 0.8, 0.9),
                                            (0.5, 0.2, 0.6, 0.6), (0.9, 0.02, 0.3, 0.2))):
        b = correct(base, 20 + i)
        t = b.copy()
        flip = np.flatnonzero(~b if tb > base else b)[:round(abs(tb - base) * N)]
        t[flip] = ~t[flip]                                 # TB = baseline +- a few examples
        rows += [dict(row(px.UNIFORM, px.UNIFORM, P, rem, b)),
                 dict(row(px.UNIFORM, px.UNIFORM, P, rem, t), layer_lr="eq2.13")]
    return pd.DataFrame(rows)


def test_lr_gains_pair_tempbalance_with_the_global_lr_of_the_same_pruning():
    t = lr_table()
    g = px.lr_gains(t).set_index("P")
    assert g["gain"].tolist() == pytest.approx([0.0, 10.0, 0.0, -10.0])
    assert g.loc[0.2, "low"] > 0 and g.loc[0.9, "high"] < 0
    assert px.lr_evidence(t, [0.2, 0.9]).estimate == pytest.approx(0.0)
    assert px.lr_evidence(t, [0.0], threshold=-0.5).verdict == "PASS"   # identical runs
    with pytest.raises(ValueError, match="eq2.13"):
        px.lr_evidence(t[t.layer_lr == "none"], [0.2])


def test_tempbalance_versus_the_global_lr_pairs_the_finetuning_seeds():
    # two seeds of identical tables: the estimate is the one seed's, and the seeds agree, so
    # the two-level interval is as narrow as one seed's; seeds that disagree widen it
    t = lr_table()
    two = pd.concat([t.assign(seed=0), t.assign(seed=1)], ignore_index=True)
    one, both = px.lr_evidence(t, [0.2]), px.lr_evidence(two, [0.2])
    assert both.n == 2 and "2 seeds" in both.method and both.estimate == pytest.approx(one.estimate)
    flipped = t.copy()
    flipped.loc[flipped.layer_lr == "eq2.13", "test_correct"] = flipped.loc[
        flipped.layer_lr == "none", "test_correct"].to_numpy()            # seed 1: no gain
    mixed = pd.concat([t.assign(seed=0), flipped.assign(seed=1)], ignore_index=True)
    e = px.lr_evidence(mixed, [0.2])
    assert e.estimate == pytest.approx(one.estimate / 2) and e.high - e.low > one.high - one.low
    with pytest.raises(ValueError, match="same seeds"):
        px.lr_evidence(pd.concat([t.assign(seed=0), t[t.layer_lr == "none"].assign(seed=1)]), [0.2])


def test_the_range_contrast_compares_the_gain_inside_a_size_range_with_the_rest():
    t = lr_table()
    e, inside = px.lr_range_contrast(t, 0.55, 0.65)
    assert inside == [0.2] and e.estimate == pytest.approx(10.0 - (0 + 0 - 10) / 3)
    assert e.verdict == "PASS"
    assert px.lr_range_contrast(t, 0.3, 0.4) == (None, [])              # no size inside


def test_versus_range_reports_the_distance_and_judges_only_at_paper():
    assert px.versus_range(0.6, 0.55, 0.65, "quick") == {
        "ours": 0.6, "source": [0.55, 0.65], "difference": 0.0}
    assert px.versus_range(0.4, 0.55, 0.65, "quick")["difference"] == pytest.approx(-0.15)
    assert px.versus_range(0.7, 0.55, 0.65, "paper")["within_source_range"] is False
    assert px.versus_range(0.6, 0.55, 0.65, "paper")["within_source_range"] is True


# ----------------------------------------------------------------------------- summaries
def test_rebound_size_and_mitigation():
    assert px.rebound_rise([1.0, 0.8, 0.9, 0.88]) == pytest.approx(0.125)
    assert px.rebound_rise([1.0, 0.9, 0.8]) == 0.0 and px.rebound_rise([1.0, 2.0]) == 0.0
    trad, aug = [1.0, 0.8, 0.9], [1.0, 0.8, 0.85]
    assert px.rebound_mitigated(trad, aug) is True and px.rebound_mitigated(aug, trad) is False
    assert px.rebound_mitigated([1.0, 0.9, 0.8], aug) is None      # nothing to mitigate
    assert px.rebound_mitigated([1.0, 0.8, 0.81], aug) is None     # rise 1.25 % < 2 %


def test_alpha_gap_skips_the_shared_start():
    def probe(alphas):
        return pd.DataFrame([{"epoch": e, "layer": l, "alpha": a}
                             for e, row_ in enumerate(alphas) for l, a in zip("ab", row_)])
    base = probe([(3.0, 4.0), (2.0, 4.0), (2.0, 3.0)])
    tb = probe([(3.0, 4.0), (1.0, 4.0), (2.0, 2.0)])
    assert px.alpha_gap(tb, base).tolist() == pytest.approx([-0.5, -0.5])
    assert px.alpha_gap(tb, base, "a").tolist() == pytest.approx([-1.0, 0.0])


# ----------------------------------------------------------------------------- settings, quotes
def test_curve_ratios_validate():
    assert chapter_settings("02b", "smoke", {"curve_ratios": ()}).curve_ratios == ()
    with pytest.raises(ValueError, match="curve_ratios"):
        chapter_settings("02b", "smoke", {"curve_ratios": (0.5, 0.99)})


SEED_TEXT = Path(__file__).resolve().parents[2] / "shared" / "seeds" / px.quotes.SOURCE_FILE


@pytest.mark.skipif(not SEED_TEXT.exists(), reason="the source text is not on this machine")
def test_every_quote_is_the_sources_own_wording():
    text = re.sub(r"\s+", " ", SEED_TEXT.read_text(encoding="utf-8"))
    for key, quote in px.QUOTES.items():
        assert re.sub(r"\s+", " ", quote) in text, key


# ----------------------------------------------------------------------------- replicates
def test_gains_pair_seeds_and_count_pretrainings_as_replicates():
    def seed_rows(k, acc, pre):
        c = curve([(0.3, 0.6, 0.6), (0.5, 0.2, 0.6)], seed=10 * k).assign(seed=k,
                                                                           pretrain_seed=pre)
        r = pd.DataFrame([row("alpha", "direct", 0.5, 0.4, correct(acc, 50 + k))]).assign(
            seed=k, pretrain_seed=pre)
        return c, r
    own = [seed_rows(k, 0.7 + 0.01 * k, k) for k in range(3)]
    c, r = (pd.concat(x, ignore_index=True) for x in zip(*own))
    a, b, _ = px.matched_uniform(r, c)
    assert a.shape == b.shape == (3, N) and px.seeds_of(r) == (0, 1, 2)
    e, _ = px.versus_uniform(r, c)
    assert e.n == 3 and e.replicates == 3 and "3 seeds" in e.method
    shared = c.assign(pretrain_seed=0), r.assign(pretrain_seed=0)    # one pretraining
    e1, _ = px.versus_uniform(shared[1], shared[0])
    assert e1.n == 3 and e1.replicates == 1 and e1.claim_verdict == "INCONCLUSIVE"
    assert px.pipelines(r.drop(columns="pretrain_seed")) == 3        # no column: the seeds
    assert px.all_of([e, e1]).replicates == 1


def test_run_table_names_the_pretraining_seed():
    s = chapter_settings("02b", "smoke")
    table = (pd.DataFrame({"entropy": [1.0, 2.0]}, index=["a", "b"]), {"a": 9, "b": 9})
    spec = px.finetune_spec(s, "x", "densenet", "traditional", table, px.UNIFORM, 0.5,
                            "direct", 1, seed=7)
    res = {"final": {"test_acc": 0.5, "train_acc": 0.5}, "diverged": False,
           "test_correct": [True], "callbacks": {"pruned_start": {"sparsity": {
               "params": 0.5, "channels": 0.5}}}}
    t = px.run_table([spec], [res], remaining_fn=None)
    assert t["seed"].tolist() == [7] and t["pretrain_seed"].tolist() == [s.seed]
