"""Every claim test of chapter 02b can PASS, FAIL and (on an interval) be INCONCLUSIVE: small
synthetic curves, metric tables and run tables with per-example correctness, no training
(harness: tests/claim_cases.py). A PASS or FAIL case has >= 3 independent replicates (3
pretraining or finetuning seeds, each with its own jitter, so the seeds' intervals have width);
a claim on one replicate is INCONCLUSIVE (the cases beyond ``CASES`` check that)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from claim_cases import verdict_of

from lalr_core.chapters.ch02b_htsr_pruning import GRID_FIGS, SCALE, SHAPE, UNIFORM, findings
from lalr_core.chapters.ch02b_htsr_pruning.claims import CLAIMS
from lalr_core.chapters.ch02b_htsr_pruning.plans import budget_grid
from lalr_core.chapters.ch02b_htsr_pruning.verdicts import share_difference

CHAPTER = "ch02b_htsr_pruning"
N = 400  # test examples


def correct(acc: float, seed: int, n: int = N) -> np.ndarray:
    """A run's per-example correctness with exactly ``acc * n`` hits, in random places."""
    hits = np.zeros(n, dtype=bool)
    hits[np.random.default_rng(seed).permutation(n)[:round(acc * n)]] = True
    return hits


SEEDS = (0, 1, 2)


def run(metric, rule, P, remaining, acc, seed, *, replicate=0, **labels):
    """One run of seed ``replicate`` (its own pretraining, ``pretrain_seed`` = it, unless
    ``labels`` say otherwise); ``seed`` places its hits."""
    hits = correct(acc, seed)
    return {"metric": metric, "rule": rule, "P": P, "remaining": remaining, "layer_lr": "none",
            "sparsity": P, "over_pruned": False, "seed": replicate, "pretrain_seed": replicate,
            "test_acc": 100 * hits.mean(), "train_acc": 99.0, "test_correct": hits, **labels}


def jitter(seed: int) -> float:
    """A seed's own offset, points: -1, 0, +1 (replicates that agree exactly give no interval)."""
    return float(seed % 3 - 1)


# ----------------------------------------------------------------------------- fig 3.2
def _curves(ent_aug=0.1, alpha_aug_rise=0.0, alpha_trad_rise=0.2):
    epochs = np.arange(8)
    ent_t = pd.Series(3 - 0.1 * epochs, index=epochs)

    def dip(rise):   # falls to 2 at epoch 4, then rises by ``rise`` of it
        y = np.r_[4, 3.5, 3, 2.5, 2.0, 2.0 + rise, 2.0 + rise, 2.0 + rise]
        return pd.Series(y, index=epochs)

    return {("traditional", "entropy"): ent_t, ("augmix", "entropy"): ent_t + ent_aug,
            ("traditional", "alpha"): dip(alpha_trad_rise * 2),
            ("augmix", "alpha"): dip(alpha_aug_rise * 2)}


def _seeds_of(curves, seeds=SEEDS):
    """Per arm, one curve per seed: ``curves`` plus the seed's own small shift (both arms)."""
    return {k: [y + 0.01 * s for s in seeds] for k, y in curves.items()}


def _fig32(cid, seeds=SEEDS, **kw):
    return findings.fig32(_seeds_of(_curves(**kw), seeds)).findings[cid]


def _rebound_curves(aug_rise):
    return {**_curves(), ("traditional", "entropy"): _curves()[("traditional", "alpha")],
            ("augmix", "entropy"): _curves(alpha_aug_rise=aug_rise)[("augmix", "alpha")]}


# ----------------------------------------------------------------------------- figs 3.4-3.21
CONVS = [f"c{i}" for i in range(9)]
TRANS = ["c3", "c6"]


def _metrics(seed, sign=0.0, outlier=False):
    """One network's metrics: transition convs shifted to the extremes (``sign`` 1: lowest
    entropy, highest norm; -1: the opposite; 0: like the others), or one outlier layer."""
    rng = np.random.default_rng(seed)
    entropy = pd.Series(2 + rng.uniform(0, 0.2, 9), index=CONVS)
    norm = pd.Series(1 + rng.uniform(0, 0.2, 9), index=CONVS)
    entropy[TRANS] -= sign * 1.0
    norm[TRANS] += sign * 1.0
    if outlier:
        entropy["c5"] += 5.0
    return pd.DataFrame({"entropy": entropy, "norm": norm, "spectral_norm": norm})


def _grid_case(fig, ok, *, at_init=False, seeds=SEEDS):
    """3 trained replicates (seeds) with the claim's property (``ok``) or against it, and 10
    init networks of the null without it (or with it too: ``at_init``)."""
    role, aug = next(k for k, v in GRID_FIGS.items() if v[2] == fig)
    if role == "densenet":
        trained = [_metrics(s, 1.0 if ok else -1.0) for s in seeds]
    else:
        trained = [_metrics(s, outlier=not ok) for s in seeds]
    init = [_metrics(100 + s, 1.0 if at_init else 0.0) for s in range(10)]
    table = (trained[0], {c: 100 * (i + 1) for i, c in enumerate(CONVS)})
    grid = budget_grid(table, [0.3, 0.6], ["entropy", "norm"])
    return findings.grid_checks(role, aug, table, grid, TRANS, trained=trained, init=init)


# ----------------------------------------------------------------------------- fig 3.3
def _f33(gains: dict[str, float], seeds=SEEDS, **labels) -> pd.DataFrame:
    """Per seed (its own pretraining): uniform curves (flat at 60 %) and direct metric runs at
    P = 0.85 per augmentation, each family's direct runs at 60 % + ``gains[aug/family]`` +
    the seed's jitter points."""
    rows, seed = [], 0
    for k in seeds:
        for aug in ("traditional", "augmix"):
            for P, r in ((0.3, 0.8), (0.85, 0.1), (0.95, 0.05)):
                seed += 1
                rows.append(run(UNIFORM, UNIFORM, P, r, 0.6, seed, replicate=k, aug=aug,
                                **labels))
            for family, names in (("shape", SHAPE), ("scale", SCALE)):
                g = gains.get(f"{aug}/{family}", 0.0) + jitter(k) * (1 + (aug == "augmix"))
                for m in names:
                    seed += 1
                    rows.append(run(m, "direct", 0.85, 0.3, 0.6 + g / 100, seed, replicate=k,
                                    aug=aug, **labels))
    return pd.DataFrame(rows)


def _fig33(cid, gains, seeds=SEEDS, **labels):
    swept = {"traditional": (0.3, 0.85), "augmix": (0.3, 0.85)}
    return findings.fig33(_f33(gains, seeds, **labels), swept, SHAPE + SCALE).findings[cid]


# ----------------------------------------------------------------------------- T-001-e
def _te(gain: dict[str, float], seeds=SEEDS, **labels):
    rows, seed = [], 100
    for k in seeds:
        for i, role in enumerate(("densenet", "mobilenet", "wrn")):
            for P, r in ((0.5, 0.6), (0.95, 0.05)):
                seed += 1
                rows.append(run(UNIFORM, UNIFORM, P, r, 0.6, seed, replicate=k, role=role,
                                **labels))
            g = gain[role] + jitter(k) * (i + 1)
            for m in ("entropy", "alpha"):
                for rule in ("direct", "inverse"):
                    seed += 1
                    rows.append(run(m, rule, 0.85, 0.3, 0.6 + g / 100, seed, replicate=k,
                                    role=role, **labels))
    return findings.t001e(pd.DataFrame(rows), ("mobilenet", "wrn"), ("entropy", "alpha"),
                          ("direct", "inverse"))


# ----------------------------------------------------------------------------- fig 3.22
LAYERS = [f"l{i}" for i in range(8)]


def _probes(gaps):
    base, tb, rec = [], [], []
    for i, layer in enumerate(LAYERS):
        for e in range(4):
            a = 3 + 0.1 * i - 0.05 * e
            base.append({"layer": layer, "epoch": e, "alpha": a})
            tb.append({"layer": layer, "epoch": e, "alpha": a + (gaps[i] if e >= 1 else 0.0)})
            rec.append({"layer": layer, "epoch": e, "lr_scale": 1 + 0.2 * (i - 3.5)})
    return pd.DataFrame(tb), pd.DataFrame(base), pd.DataFrame(rec)


def _fig322(cid, gaps, seeds=SEEDS):
    """One (TB, baseline, records) per finetuning seed, each seed's gaps shifted by its
    jitter / 20."""
    per = [_probes(np.asarray(gaps, float) + jitter(k) / 20) for k in seeds]
    return findings.fig322(*([p[i] for p in per] for i in range(3))).findings[cid]


LOWER = -0.3 + 0.02 * np.arange(8)
MIXED = np.array([0.3, -0.25, 0.2, -0.3, 0.1, -0.2, 0.25, -0.1])


# ----------------------------------------------------------------------------- fig 3.23 / 3.24
def _delta(n_ok, n=11):
    return {i / 10: ((-1.0, 0.0) if i < n_ok else (0.0, -1.0)) for i in range(n)}


def _fig323(item, n_ok, n=11):
    """One finetuning seed (a mapping) or, for a list ``n_ok``, one mapping per seed."""
    delta = [_delta(k, n) for k in n_ok] if isinstance(n_ok, (list, tuple)) else _delta(n_ok, n)
    return findings.fig323(delta).findings[item]


# ----------------------------------------------------------------------------- fig 3.25 / 3.26
def _lr_table(tb_gain, sizes, metric=UNIFORM, seeds=(0,), start=500):
    """TB ('eq2.13') and the global lr ('none') at each (P, remaining) of ``sizes``; TB's
    accuracy 60 % + ``tb_gain(remaining)`` points plus a seed's own +-1 point, the global
    lr's 60 % (replicates that agree exactly would give no interval)."""
    rows, k = [], start
    for P, r in sizes:
        for seed in seeds:
            jitter = (seed % 3 - 1) if len(seeds) > 1 else 0
            for lr, acc in (("none", 0.6), ("eq2.13", 0.6 + (tb_gain(r) + jitter) / 100)):
                k += 1
                row = run(metric, UNIFORM if metric == UNIFORM else "direct", P, r, acc, k)
                rows.append(row | {"layer_lr": lr, "seed": seed})
    return pd.DataFrame(rows)


VGG_SIZES = ((0.0, 1.0), (0.5, 0.5), (0.9, 0.1), (0.95, 0.05))


def _fig325(cid, gain):
    return findings.fig325(_lr_table(lambda r: gain, VGG_SIZES, seeds=(0, 1, 2))).findings[cid]


def _fig326(inside_gain, seeds=SEEDS):
    """Per finetuning seed, TB's gain ``inside_gain`` + twice the seed's jitter inside the
    55-65 % range and 0 outside (a jitter at every size would cancel in the contrast)."""
    sizes = ((0.2, 0.9), (0.25, 0.6), (0.6, 0.3))
    t = pd.concat([_lr_table(lambda r, k=k: inside_gain + 2 * jitter(k) * (len(seeds) > 1)
                             if 0.55 <= r <= 0.65 else 0.0, sizes, start=500 + 100 * k)
                   .assign(seed=k)
                   for k in seeds], ignore_index=True)
    return findings.fig326(t, 0.55, 0.65, "smoke").findings["fig3.26"]


# ----------------------------------------------------------------------------- the cases
def _grid_cases():
    out = {}
    for (role, _), (_, _, fig) in GRID_FIGS.items():
        ids = ([f"{fig}-transition-{m}" for m in ("entropy", "norm", "spectral_norm")]
               if role == "densenet" else [f"{fig}-no-outlier"])
        for cid in ids:
            out[cid] = {"PASS": lambda fig=fig, cid=cid: _grid_case(fig, True).findings[cid],
                        "FAIL": lambda fig=fig, cid=cid: _grid_case(fig, False).findings[cid]}
            if role == "densenet":   # the init networks hold the ranks too: no PASS
                out[cid]["INCONCLUSIVE"] = lambda fig=fig, cid=cid: _grid_case(
                    fig, True, at_init=True).findings[cid]
    return out


CASES = {
    "fig3.2-entropy-higher": {"PASS": lambda: _fig32("fig3.2-entropy-higher", ent_aug=0.1),
                              "FAIL": lambda: _fig32("fig3.2-entropy-higher", ent_aug=-0.1)},
    "fig3.2-entropy-rebound": {
        "N/A": lambda: _fig32("fig3.2-entropy-rebound"),   # a falling entropy: no rebound
        "PASS": lambda: findings.fig32(_seeds_of(_rebound_curves(0.05))).findings[
            "fig3.2-entropy-rebound"],
        "FAIL": lambda: findings.fig32(_seeds_of(_rebound_curves(0.4))).findings[
            "fig3.2-entropy-rebound"]},
    "fig3.2-alpha-rebound": {"PASS": lambda: _fig32("fig3.2-alpha-rebound", alpha_aug_rise=0.05),
                             "FAIL": lambda: _fig32("fig3.2-alpha-rebound", alpha_aug_rise=0.4),
                             "N/A": lambda: _fig32("fig3.2-alpha-rebound", alpha_trad_rise=0.0)},
    **_grid_cases(),
    **{f"fig3.3-{aug}-{family}": {
        "PASS": lambda k=f"{aug}/{family}", c=f"fig3.3-{aug}-{family}": _fig33(c, {k: 15}),
        "FAIL": lambda k=f"{aug}/{family}", c=f"fig3.3-{aug}-{family}": _fig33(c, {k: -15}),
        "INCONCLUSIVE": lambda k=f"{aug}/{family}", c=f"fig3.3-{aug}-{family}": _fig33(c, {k: 0})}
       for aug in ("traditional", "augmix") for family in ("shape", "scale")},
    "fig3.3-augmix-vs-traditional": {
        "PASS": lambda: _fig33("fig3.3-augmix-vs-traditional",
                               {"augmix/shape": 15, "augmix/scale": 15}),
        "FAIL": lambda: _fig33("fig3.3-augmix-vs-traditional",
                               {"traditional/shape": 15, "traditional/scale": 15}),
        "INCONCLUSIVE": lambda: _fig33("fig3.3-augmix-vs-traditional", {})},
    **{f"T-001-e-{role}": {
        "PASS": lambda c=f"T-001-e-{role}": _te({"densenet": 15, "mobilenet": 0, "wrn": 0})
        .findings[c],
        "FAIL": lambda c=f"T-001-e-{role}": _te({"densenet": -15, "mobilenet": 0, "wrn": 0})
        .findings[c],
        "INCONCLUSIVE": lambda c=f"T-001-e-{role}": _te({"densenet": 0, "mobilenet": 0, "wrn": 0})
        .findings[c]} for role in ("mobilenet", "wrn")},
    "T-001-e-wrn-uniform": {
        "PASS": lambda: _te({"densenet": 0, "mobilenet": 0, "wrn": -15})
        .findings["T-001-e-wrn-uniform"],
        "FAIL": lambda: _te({"densenet": 0, "mobilenet": 0, "wrn": 15})
        .findings["T-001-e-wrn-uniform"],
        "INCONCLUSIVE": lambda: _te({"densenet": 0, "mobilenet": 0, "wrn": 0})
        .findings["T-001-e-wrn-uniform"]},
    "fig3.22-mean": {"PASS": lambda: _fig322("fig3.22-mean", LOWER),
                     "FAIL": lambda: _fig322("fig3.22-mean", -LOWER),
                     "INCONCLUSIVE": lambda: _fig322("fig3.22-mean", MIXED)},
    "fig3.22-layers": {"PASS": lambda: _fig322("fig3.22-layers", LOWER),
                       "FAIL": lambda: _fig322("fig3.22-layers", -LOWER)},
    **{item: {"PASS": lambda item=item: _fig323(item, [11, 10, 11]),
              "FAIL": lambda item=item: _fig323(item, [0, 1, 0]),
              "INCONCLUSIVE": lambda item=item: _fig323(item, [5, 6, 7])}
       for item in ("fig3.23", "fig3.24")},
    "fig3.25-middle": {"PASS": lambda: _fig325("fig3.25-middle", 15),
                       "FAIL": lambda: _fig325("fig3.25-middle", -15),
                       "INCONCLUSIVE": lambda: _fig325("fig3.25-middle", 0)},
    "fig3.25-ends": {"PASS": lambda: _fig325("fig3.25-ends", 15),
                     "FAIL": lambda: _fig325("fig3.25-ends", -15),
                     "INCONCLUSIVE": lambda: _fig325("fig3.25-ends", 0)},
    "fig3.26": {"PASS": lambda: _fig326(15), "FAIL": lambda: _fig326(-15),
                "INCONCLUSIVE": lambda: _fig326(0)},
}


# ----------------------------------------------------------------------------- beyond the cases
def test_every_claim_of_the_chapter_has_cases_or_is_a_sanity_check():
    for cid, claim in CLAIMS.items():
        assert (cid in CASES) == (claim.kind == "claim"), cid


def test_sanity_checks_of_the_budgets_hold_on_a_grid_built_by_the_code():
    for fig in ("fig3.6", "fig3.12"):
        r = _grid_case(fig, True)
        for kind in ("uniform-flat", "anti-correlated", "under-target"):
            assert r.findings[f"{fig}-{kind}"].verdict == "PASS"


def test_fig323_sign_test_needs_more_than_a_bare_majority():
    assert _fig323("fig3.23", 7).verdict == "INCONCLUSIVE"   # 7 of 11 happens by chance
    e = findings.sign_share(9, 11)
    assert e.low == pytest.approx(0.482, abs=0.01) and e.verdict == "INCONCLUSIVE"
    assert findings.sign_share(10, 11).verdict == "PASS"


def test_fig326_without_a_size_in_the_range_is_na():
    t = _lr_table(lambda r: 0.0, ((0.2, 0.9), (0.6, 0.3)))
    assert findings.fig326(t, 0.55, 0.65, "smoke").findings["fig3.26"].verdict == "N/A"


# ----------------------------------------------------------------------------- replicates
def _recorded(cid, finding):
    return verdict_of(finding, CLAIMS[cid])


def test_one_pretraining_is_one_replicate_of_a_pipeline_claim():
    # fig 3.3 / T-001-e: three finetuning seeds of ONE pretraining count once
    shared = _fig33("fig3.3-augmix-shape", {"augmix/shape": 15}, pretrain_seed=0)
    assert shared.evidence.verdict == "PASS" and shared.evidence.replicates == 1
    assert _recorded("fig3.3-augmix-shape", shared) == "INCONCLUSIVE"
    one = _fig33("fig3.3-augmix-shape", {"augmix/shape": 15}, seeds=(0,))
    assert one.evidence.replicates == 1
    assert _recorded("fig3.3-augmix-shape", one) == "INCONCLUSIVE"
    te = _te({"densenet": 15, "mobilenet": 0, "wrn": 0}, pretrain_seed=0).findings
    assert _recorded("T-001-e-wrn", te["T-001-e-wrn"]) == "INCONCLUSIVE"
    wrn = _te({"densenet": 0, "mobilenet": 0, "wrn": -15}, seeds=(0,)).findings
    assert wrn["T-001-e-wrn-uniform"].evidence.replicates == 1
    assert _recorded("T-001-e-wrn-uniform", wrn["T-001-e-wrn-uniform"]) == "INCONCLUSIVE"


def test_one_seed_of_curves_layers_or_sizes_is_one_replicate():
    f = _fig32("fig3.2-entropy-higher", seeds=(0,), ent_aug=0.1)
    assert f.evidence is True and _recorded("fig3.2-entropy-higher", f) == "INCONCLUSIVE"
    g = _grid_case("fig3.6", True, seeds=(0,)).findings["fig3.6-transition-entropy"]
    assert _recorded("fig3.6-transition-entropy", g) == "INCONCLUSIVE"
    g = _grid_case("fig3.6", False, seeds=(0,)).findings["fig3.6-transition-norm"]
    assert g.evidence is False and _recorded("fig3.6-transition-norm", g) == "INCONCLUSIVE"
    z = _grid_case("fig3.12", True, seeds=(0,)).findings["fig3.12-no-outlier"]
    assert _recorded("fig3.12-no-outlier", z) == "INCONCLUSIVE"
    m = _fig322("fig3.22-mean", LOWER, seeds=(0,))            # t over 8 layers of one run
    assert m.evidence.verdict == "PASS" and m.evidence.replicates == 1
    assert _recorded("fig3.22-mean", m) == "INCONCLUSIVE"
    assert _recorded("fig3.22-layers", _fig322("fig3.22-layers", LOWER, seeds=(0,))) == \
        "INCONCLUSIVE"
    s = _fig323("fig3.23", 11)                                # 11 sizes of one run
    assert s.evidence.verdict == "PASS" and _recorded("fig3.23", s) == "INCONCLUSIVE"
    assert _recorded("fig3.26", _fig326(15, seeds=(0,))) == "INCONCLUSIVE"


def test_a_rank_the_init_networks_hold_too_never_passes():
    for n_trained in (3, 30):
        f = _grid_case("fig3.9", True, at_init=True, seeds=tuple(range(n_trained)))
        for m in ("entropy", "norm", "spectral_norm"):
            assert f.findings[f"fig3.9-transition-{m}"].verdict == "INCONCLUSIVE"
    # no null given: nothing to judge against
    f = findings.transition_finding("norm", [_metrics(s, 1.0) for s in SEEDS], [], TRANS)
    assert f.verdict == "INCONCLUSIVE"


def test_share_difference_is_newcombes_interval():
    e = share_difference(3, 3, 0, 10)
    assert e.estimate == 1.0 and e.low == pytest.approx(0.372, abs=0.01) and e.high == 1.0
    assert e.replicates == 3 and e.verdict == "PASS"
    assert share_difference(3, 3, 10, 10).verdict == "INCONCLUSIVE"      # holds at init too
    assert share_difference(0, 10, 10, 10).verdict == "FAIL"
    with pytest.raises(ValueError):
        share_difference(4, 3, 0, 10)


def test_init_tables_are_the_untrained_architecture_per_seed():
    from lalr_core.chapters import chapter_settings
    from lalr_core.chapters.ch02b_htsr_pruning.plans import init_tables
    s = chapter_settings("02b", "smoke", {"init_seeds": 3})
    tables = init_tables(s, "densenet")
    assert len(tables) == 3 and list(tables[0].index) == list(tables[1].index)
    assert not np.allclose(tables[0]["norm"], tables[1]["norm"])      # seeds differ
    pd.testing.assert_frame_equal(tables[0], init_tables(s, "densenet")[0])   # seeded
