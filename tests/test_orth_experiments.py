"""Chapter-06 settings, run builders, summaries and the source tables."""

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch06_orthogonal_sgdm as ox
from lalr_core.chapters import chapter, chapter_settings
from lalr_core.core.runs.units import train_runs
from lalr_core.core.loop.config import PROFILES, RunConfig
from lalr_core.core.results.writer import param_hash
from lalr_core.methods.orthogonal.transform import GradTransform
from lalr_core.core.runs import RunCache


def test_orth_settings_resolve_and_builders_are_consistent():
    for profile in ("smoke", "quick", "paper"):
        s = chapter_settings("06", profile)
        suite = ox.suite_configs(s)
        assert len(suite) == len(s.suite_models) * 2 * s.seeds
        probes = ox.with_probes(s, suite)
        # every seed's SGDM / Orth-SGDM run of the probed models carries the probe (checks pair seeds)
        assert sum("representations" in p for p in probes) == 2 * s.seeds
        assert sum("zero_grad" in p for p in probes) == 2 * s.seeds
        sym, _ = ox.CHAPTER.runs(s, "figI")
        assert [(c.model, c.seed) for c in sym] == [(m, k) for m in s.sym_models for k in range(s.sym_seeds)]
        t51 = ox.table51_configs(s)
        assert {n for n in t51 if not n.startswith("orth_")} >= {"sgdm", "adam", "sgdm_clip", "adam_clip"}
        assert all(c.method("grad_transform").transform == "orth" for n, cs in t51.items() if n.startswith("orth_") for c in cs)
    paper = chapter_settings("06", "paper")
    c = ox.untuned(paper, "resnet20", "orth_sgdm")
    assert (c.dataset, c.batch_size, c.lr, c.momentum, c.wd, c.epochs, c.n_train, c.n_val, c.augment) == (
        "cifar10", 1024, 1e-2, 0.9, 5e-4, 100, 40_000, 10_000, True)
    sgdm = ox.table51_configs(paper)["sgdm"][0]
    assert (sgdm.lr, sgdm.momentum, sgdm.wd, sgdm.milestones, sgdm.epochs) == (0.05, 0.85, 1e-2, (100, 150), 200)
    with pytest.raises(ValueError, match="unknown variant"):
        ox.untuned(paper, "resnet20", "orth_lion")
    with pytest.raises(ValueError, match="unknown setting"):
        chapter_settings("06", "quick", {"seedz": 2})


def test_summaries():
    h = pd.DataFrame({"epoch": [1, 2, 3], "val_acc": [0.5, 0.79, 0.81]})
    assert ox.epochs_to_reach(h, 80) == 3 and np.isnan(ox.epochs_to_reach(h, 90))
    np.testing.assert_allclose(ox.running_mean([1, 2, 3, 4], 2), [1, 1.5, 2.5, 3.5])
    df = pd.DataFrame({"m": ["a", "a", "a"], "test_acc": [0.8, 0.9, 1.0], "test_loss": [1, 2, 3],
                       "diverged": [False] * 3})
    row = ox.mean_se(df, ["m"]).iloc[0]
    assert row["test_acc_mean"] == pytest.approx(90) and row["test_acc_se"] == pytest.approx(10 / math.sqrt(3))


def test_source_tables_beside_ours():
    t53 = ox.read_source("5.3")
    assert len(t53) == 20 and set(t53["variant"]) == {"sgdm", "orth_sgdm"}
    t56 = ox.read_source("5.6")
    assert {"test_acc_mean", "test_loss_se"} <= set(t56.columns) and len(t56) == 9
    ours = pd.DataFrame({"model": ["resnet8", "mlp"], "variant": ["sgdm", "sgdm"], "test_acc_mean": [80, 70]})
    both = ox.beside_source(ours, t53, ["model", "variant"], {"resnet8": "resnet20"})
    assert both["source_test_acc_mean"].iloc[0] == pytest.approx(79.14)
    assert np.isnan(both["source_test_acc_mean"].iloc[1])
    grid = ox.beside_source(pd.DataFrame({"lr": [0.01], "momentum": [0.9], "base": ["sgdm"], "orth": [True]}),
                            ox.read_source("5.4"), ["lr", "momentum", "base", "orth"])
    assert grid["source_test_acc_mean"].iloc[0] == pytest.approx(87.44)
    by_opt = ox.beside_source(pd.DataFrame({"optimizer": ["sgdm"]}), ox.read_source("5.1"), ["optimizer"])
    assert by_opt["source_model"].iloc[0] == "resnet20" and by_opt["source_test_acc_mean"].iloc[0] == 91.45
    with pytest.raises(ValueError, match="no source table"):
        ox.read_source("9.9")


def test_train_runs_takes_one_callback_spec_per_config(tmp_path):
    base = dict(dataset="fashion_mnist", synthetic=True, n_train=32, n_val=8, n_test=8, model="mlp",
                batch_size=16, epochs=1, device="cpu")
    cfgs = [RunConfig(**base), RunConfig(**base, methods=(GradTransform("orth"),))]
    res = train_runs(cfgs, callbacks=[{}, {"zero_grad": {"layer": "net.1"}}], cache=RunCache(tmp_path))
    assert res[0]["callbacks"] == {} and len(res[1]["callbacks"]["zero_grad"]) == 2
    with pytest.raises(ValueError, match="callback specs"):
        train_runs(cfgs, callbacks=[{}], cache=RunCache(tmp_path))
    with pytest.raises(ValueError, match="unknown callbacks"):
        train_runs(cfgs, callbacks={"zero_grads": {}}, cache=RunCache(tmp_path))


def test_every_section_builds_valid_runs_and_the_sweep_starts_with_the_longest():
    for profile in ("smoke", "quick", "paper"):
        s = chapter_settings("06", profile)
        sections = ox.section_runs(s)
        assert set(sections) == {"suite", "table5.1", "table5.4", "fig5.7", "table5.5", "table5.6",
                                 "fig5.14", "fig5.10", "figI", "classifier_null", "fig5.13"}
        for cfgs, cbs in sections.values():
            assert len(cfgs) == len(cbs) and all(isinstance(c, RunConfig) for c in cfgs)
        cfgs, _ = ox.CHAPTER.all_runs(s)
        costs = [ox.run_cost(c) for c in cfgs]
        assert costs == sorted(costs, reverse=True)
    quick = chapter_settings("06", "quick")
    tdp, tdp_cbs = ox.section_runs(quick)["fig5.13"]  # no-BN model outside the suite: own runs
    assert quick.tdp_exact_model not in quick.suite_models and not ox.has_batch_norm(quick.tdp_exact_model)
    assert sorted((ox.variant_of(c), c.seed) for c in tdp) == sorted(
        (v, k) for v in ("sgdm", "orth_sgdm") for k in range(quick.seeds))
    assert all(cb == {"zero_grad": {"layer": quick.tdp_exact_layer}} for cb in tdp_cbs)
    inside = dataclasses.replace(quick, tdp_exact_model="basic_cnn", tdp_exact_layer="conv2")
    assert all(c in ox.section_runs(inside)["suite"][0] for c in ox.section_runs(inside)["fig5.13"][0])
    with pytest.raises(ValueError, match="tdp_exact_layer"):
        dataclasses.replace(quick, tdp_exact_model="resnet8", tdp_exact_layer="conv1").check()
    paper = ox.section_runs(chapter_settings("06", "paper"))
    assert len(paper["table5.4"][0]) == 4 * 5 * 4 * 5      # lr x momentum x optimiser x 5 runs
    assert {c.model for c in paper["suite"][0]} >= {"resnet20", "resnet44", "wide_resnet50_2_tv"}


# ----------------------------------------------------------------------------- typed settings
ROOT = Path(__file__).resolve().parents[1]


def test_every_profile_constructs_and_passes_check():
    assert sorted(ox.PROFILES) == sorted(PROFILES) and chapter("06") is ox.CHAPTER
    for profile, s in ox.PROFILES.items():
        assert isinstance(s, ox.Settings)
        s.check()
        assert chapter_settings("06", profile) == s
        assert dataclasses.replace(s) == s  # reconstructs (and re-checks) unchanged
        assert param_hash(s.as_dict()) == param_hash(json.loads(json.dumps(s.as_dict())))


def test_every_setting_is_read():
    """No dead settings: each field is read by the run builders (``runs.py``, and
    ``classifier_null.py`` for its section) or the notebook."""
    chapter_dir = ROOT / "lalr_core/chapters/ch06_orthogonal_sgdm"
    text = "\n".join(p.read_text() for p in (
        chapter_dir / "runs.py", *chapter_dir.glob("classifier_null.py"),
        ROOT / "notebooks/src/06_orthogonal_sgdm.py"))
    unread = [f.name for f in dataclasses.fields(ox.Settings)
              if not re.search(rf"\b[sS]\.{f.name}\b", text)]
    assert not unread


BAD = [  # (overrides at smoke, what the error names)
    ({"lr": 0}, "'lr' must be positive"),
    ({"t51_adam_lr": 0.0}, "'t51_adam_lr' must be positive"),
    ({"cos_lrs": [1.0, 0]}, "'cos_lrs' must be positive"),
    ({"bt_lr": "fast"}, "'bt_lr' must be a number"),
    ({"lr": "1e-2"}, "'lr' must be a number"),
    ({"epochs": 0}, "'epochs' must be positive"),
    ({"epochs": "3"}, "'epochs' must be an integer"),
    ({"t54_epochs": 1.5}, "'t54_epochs' must be an integer"),
    ({"seeds": 0}, "'seeds' must be positive"),
    ({"batch_size": -64}, "'batch_size' must be positive"),
    ({"f514_batches": [4, 0]}, "'f514_batches' must be positive"),
    ({"t51_model": "resnet_1000"}, "unknown model 'resnet_1000'"),
    ({"suite_models": ["basic_cnn", "vit"]}, "unknown model 'vit'"),
    ({"widths": {"resnet_8": 0.5}}, "unknown model 'resnet_8'"),
    ({"dataset": "imagenet22k"}, "unknown dataset 'imagenet22k'"),
    ({"tdp_window": 0}, "'tdp_window' must be positive"),
    ({"bt_window": 0}, "'bt_window' must be positive"),
    ({"cos_every": 0}, "'cos_every' must be positive"),
    ({"vae_eval_every": 0}, "'vae_eval_every' must be positive"),
    ({"f57_eval_every": -1}, "'f57_eval_every' must be >= 0"),
    ({"momentum": 1.0}, "'momentum' must lie in \\[0, 1\\)"),
    ({"t54_moms": [0.9, -0.1]}, "'t54_moms' must lie in \\[0, 1\\)"),
    ({"bt_noise": -0.1}, "'bt_noise' must be >= 0"),
    ({"thresholds": [50]}, "'thresholds' must be >= 2 percentages"),
    ({"thresholds": [50, 150]}, "'thresholds' must be >= 2 percentages"),
    ({"t51_milestones": [2]}, "'t51_milestones' must be increasing"),
    ({"ns_seeds": 2}, "'ns_seeds' must be <= seeds"),
    ({"rep_model": "resnet20"}, "'rep_model' must be one of suite_models"),
    ({"cos_layers": ["conv2"]}, "'cos_layers' must have 2 items"),
    ({"widths": {"resnet8": 0}}, "'widths' must map models to positive numbers"),
    ({"t51_adamw": "yes"}, "'t51_adamw' must be true or false"),
    ({"executor": "dask"}, "'executor' must be one of"),
    ({"workers": 0}, "'workers' must be positive"),
    ({"sym_seeds": 0}, "'sym_seeds' must be positive"),
    ({"f514_overtake": 0}, "'f514_overtake' must be positive"),
    ({"f53_mark": -5}, "'f53_mark' must be positive"),
    ({"f57_imagenet": {"model": "resnet34", "seed": 1}}, "'f57_imagenet' has unknown keys"),
    ({"f57_imagenet": {"model": "resnet20"}}, "'f57_imagenet' needs a torchvision model"),
]


@pytest.mark.parametrize("overrides, match", BAD, ids=[str(o) for o, _ in BAD])
def test_bad_values_stop_at_the_settings_before_any_compute(overrides, match, monkeypatch):
    import lalr_core.core.runs.units as units

    monkeypatch.setattr(units, "sweep", lambda *a, **k: pytest.fail("compute started"))
    with pytest.raises(ValueError, match=match):
        chapter_settings("06", "smoke", overrides)


def test_unknown_override_names_the_known_settings():
    with pytest.raises(ValueError) as err:
        chapter_settings("06", "quick", {"learning_rate": 0.1})
    message = str(err.value)
    assert "unknown setting 'learning_rate'" in message
    assert all(repr(f.name) in message for f in dataclasses.fields(ox.Settings))


def test_overrides_apply_and_none_keeps_the_profile_value():
    s = chapter_settings("06", "smoke", {"t54_lrs": [0.5], "seeds": None, "tdp_window": 7})
    assert s.t54_lrs == (0.5,) and s.seeds == 1 and s.tdp_window == 7
    assert [c.lr for c in ox.CHAPTER.runs(s, "table5.4")[0]] == [0.5] * 4


# The smoke profile's runs, written out: every section's configs and callbacks, in order.
_DATA = dict(dataset="fashion_mnist", synthetic=True, n_train=256, n_val=64, n_test=64,
             augment=False)
_UNTUNED = dict(_DATA, optimizer="sgdm", lr=1e-2, momentum=0.9, wd=5e-4, batch_size=64, epochs=2)
_ORTH, _NS = (GradTransform("orth"),), (GradTransform("orth", method="newton_schulz"),)
_NORM, _CNORM = (GradTransform("norm"),), (GradTransform("cnorm"),)
_CONV = (GradTransform("orth", layers="conv"),)
_REP = {"representations": {"modules": ["bn1", "bn2", "bn3"], "every": 2}}
_TDP = {"zero_grad": {"layer": "layer2.0.conv2"}}
_COS = {"filter_cos": {"layers": ["conv2", "conv3"], "every": 2}}
_SYM = {"symmetry": {"layer": "conv2", "every": 1, "skip": 2}}


def _u(model, methods=(), **changes):
    width = 0.5 if model == "resnet8" else 1.0
    return RunConfig(**{**_UNTUNED, "model": model, "width": width, "methods": methods, **changes})


def _t51(methods=(), **hyper):
    return RunConfig(**_DATA, model="basic_cnn", batch_size=64, epochs=2, schedule="multistep",
                     milestones=(1,), methods=methods, **hyper)


_SGDM51 = dict(optimizer="sgdm", lr=0.05, momentum=0.85)
_ADAM51 = dict(optimizer="adam", lr=1e-3, betas=(0.9, 0.99), wd=1e-4)
_TDP_EXACT = {"zero_grad": {"layer": "conv2"}}  # fig 5.13 on BasicCNN without BN
SMOKE_RUNS = {
    "suite": [(_u("basic_cnn"), _REP), (_u("basic_cnn", _ORTH), _REP), (_u("resnet8"), _TDP),
              (_u("resnet8", _ORTH), _TDP), (_u("mlp"), {}), (_u("mlp", _ORTH), {}),
              (_u("basic_cnn", _NS), {}), (_u("resnet8", _NS), {}), (_u("mlp", _NS), {})],
    "table5.1": [(_t51(m, **h), {}) for h in (
        dict(_SGDM51, wd=1e-3), _ADAM51, dict(_SGDM51, wd=1e-4, clip_grad_norm=1.0),
        dict(_ADAM51, clip_grad_norm=1.0)) for m in ((), _ORTH)],
    "table5.4": [(_u("basic_cnn", m, lr=lr, epochs=1, **opt), {}) for lr in (0.1, 0.01)
                 for opt in (dict(momentum=0.9), dict(optimizer="adam", betas=(0.9, 0.999)))
                 for m in ((), _ORTH)],
    "fig5.7": [(_u("basic_cnn", m, n_train=None, epochs=1, eval_every_steps=2), {})
               for m in ((), _ORTH)],
    "table5.5": [(_u(mod, m), cb if m in ((), _ORTH) else {}) for mod, cb in
                 (("basic_cnn", _REP), ("resnet8", _TDP)) for m in ((), _NORM, _CNORM, _ORTH)],
    "table5.6": [(_u(mod, m), cb if m in ((), _ORTH) else {}) for mod, cb in
                 (("basic_cnn", _REP), ("resnet8", _TDP)) for m in ((), _ORTH, _CONV)],
    "fig5.14": [(_u("basic_cnn", m, batch_size=b, n_train=64, epochs=1), {}) for b in (4, 32)
                for m in ((), _ORTH)],
    "fig5.13": [(_u("basic_cnn_nobn"), _TDP_EXACT), (_u("basic_cnn_nobn", _ORTH), _TDP_EXACT)],
    "fig5.10": [(_u("basic_cnn", m, lr=lr, epochs=1), _COS) for lr in (1.0, 0.01)
                for m in ((), _ORTH)],
    "figI": [(_u(mod, epochs=1), _SYM) for mod in ("basic_cnn", "basic_cnn_skip")],
}


def test_smoke_section_runs_are_the_fixed_configs():
    s = chapter_settings("06", "smoke")
    # the classifier-null section's configs are tested in tests/test_classifier_null.py
    assert list(ox.section_runs(s)) == [*SMOKE_RUNS, "classifier_null"]
    for section, expected in SMOKE_RUNS.items():
        configs, callbacks = ox.CHAPTER.runs(s, section)
        assert list(zip(configs, callbacks)) == expected, section
        assert [c.key() for c in configs] == [c.key() for c, _ in expected], section
    configs, callbacks = ox.CHAPTER.all_runs(s)
    null = list(zip(*ox.CHAPTER.runs(s, "classifier_null")))
    union = {(c, json.dumps(cb, sort_keys=True))
             for runs in [*SMOKE_RUNS.values(), null] for c, cb in runs}
    assert len(configs) == len(union) == 45 + 1    # + the one run with the null dropped
    assert {(c, json.dumps(cb, sort_keys=True)) for c, cb in zip(configs, callbacks)} == union
    with pytest.raises(ValueError, match="unknown section 'table5.7'"):
        ox.CHAPTER.runs(s, "table5.7")


# ----------------------------------------------------------------------------- verdicts
from lalr_core.core.results.evidence import Evidence


def _ev(low, high, threshold=0.0, side="greater"):
    return Evidence((low + high) / 2, low, high, threshold, side, 3)


def test_every_takes_the_least_favourable_part():
    passing = {"a": _ev(1, 3), "b": _ev(0.5, 2)}
    combined = ox.every(passing)
    assert combined.verdict == "PASS" and combined.low == 0.5 and "deciding part: b" in combined.method
    assert ox.every({**passing, "c": _ev(-1, 2)}).verdict == "INCONCLUSIVE"
    failed = ox.every({**passing, "c": _ev(-1, 2), "d": _ev(-3, -1), "e": _ev(-2, -0.5)})
    assert failed.verdict == "FAIL" and "deciding part: d" in failed.method
    assert ox.every({"x": _ev(-0.5, 0.5, 1.0, "within")}).verdict == "PASS"
    with pytest.raises(ValueError, match="at least one"):
        ox.every({})


def test_most_counts_decided_and_undecided_parts():
    p, f, i = _ev(1, 2), _ev(-2, -1), _ev(-1, 1)
    assert ox.most({"1": p, "2": p, "3": i}).verdict == "PASS"          # 2 of 3 decided for
    assert ox.most({"1": p, "2": i, "3": f}).verdict == "INCONCLUSIVE"  # 1 to 2 of 3
    assert ox.most({"1": p, "2": f, "3": f, "4": i}).verdict == "FAIL"  # at most 2 of 4: not most
    assert ox.most({"1": p, "2": p, "3": f, "4": f}).verdict == "FAIL"  # half is not most
    ev = ox.most({"1": p, "2": i, "3": f})
    assert (ev.low, ev.high, ev.threshold) == (1, 2, 1.5) and ev.low <= ev.estimate <= ev.high


def _run(acc, seed_hits=None, epochs_acc=None, diverged=False):
    hist = pd.DataFrame({"epoch": range(1, len(epochs_acc or [acc]) + 1),
                         "val_acc": epochs_acc or [acc]})
    return {"final": {"test_acc": acc, "val_acc": acc, "test_loss": 1 - acc}, "diverged": diverged,
            "history": hist, "test_correct": seed_hits}


def test_run_difference_pairs_seeds_and_bootstraps_one_seed():
    a = [_run(0.80), _run(0.82), _run(0.81)]
    b = [_run(0.70), _run(0.73), _run(0.70)]
    ev = ox.run_difference(a, b)
    assert ev.n == 3 and "paired t" in ev.method and ev.estimate == pytest.approx(10.0)
    assert ev.verdict == "PASS"
    assert ox.run_difference(a, b, threshold=15).verdict == "FAIL"
    hits_a = np.r_[np.ones(900, bool), np.zeros(100, bool)]
    hits_b = np.r_[np.ones(700, bool), np.zeros(300, bool)]
    one = ox.run_difference([_run(0.9, hits_a)], [_run(0.7, hits_b)])
    assert "bootstrap" in one.method and one.estimate == pytest.approx(20.0) and one.verdict == "PASS"
    # a diverged run got every example wrong (0 %), over seeds and in the bootstrap
    dead = ox.run_difference([_run(0.9, hits_a)], [_run(float("nan"), None, diverged=True)])
    assert dead.estimate == pytest.approx(90.0)
    assert ox.run_value(_run(0.5, diverged=True), "test_acc") == 0.0
    assert np.isnan(ox.run_value(_run(0.5, diverged=True), "test_loss"))
    # one seed of a non-test value: the normal interval with n_test, or none
    assert ox.run_difference([_run(0.9)], [_run(0.7)], "val_acc", n_test=2000).verdict == "PASS"
    assert ox.run_difference([_run(0.9)], [_run(0.7)], "val_acc").verdict == "INCONCLUSIVE"
    with pytest.raises(ValueError, match="same seeds"):
        ox.run_difference(a, b[:2])


def test_epochs_to_mark_counts_never_as_one_more_epoch():
    r = _run(0.8, epochs_acc=[0.5, 0.79, 0.81])
    assert ox.epochs_to_mark(r, 80) == 3 and ox.epochs_to_mark(r, 50) == 1
    assert ox.epochs_to_mark(r, 90) == 4


def test_log2_ratio_and_slope():
    assert ox.log2_ratio(8, 2) == pytest.approx(2) and ox.log2_ratio(0, 0) == 0
    assert ox.log2_ratio(3, 0) == ox.verdicts.LOG2_RATIO_CAP and ox.log2_ratio(0, 3) == -ox.verdicts.LOG2_RATIO_CAP
    assert ox.slope([0, 10, 20], [1, 2, 3], per=100) == pytest.approx(10)


def test_vs_source_reports_the_spread_only_at_paper():
    t = pd.DataFrame({"test_acc_mean": [80.0, 75.0, 70.0], "source_test_acc_mean": [79.9, 79.0, np.nan],
                      "source_test_acc_se": [0.2, 0.5, np.nan]})
    quick = ox.vs_source(t, "test_acc_mean", "source_test_acc_mean", "quick")
    assert quick["test_acc_mean_minus_source"].iloc[0] == pytest.approx(0.1)
    assert "test_acc_mean_within_source_se" not in quick
    paper = ox.vs_source(t, "test_acc_mean", "source_test_acc_mean", "paper")
    assert list(paper["test_acc_mean_within_source_se"].iloc[:2]) == [True, False]
    assert pd.isna(paper["test_acc_mean_within_source_se"].iloc[2])


def test_grid_range_difference_over_seeds_and_by_bootstrap():
    base = [[_run(0.9), _run(0.88)], [_run(0.3), _run(0.35)]]     # range ~ 0.55 per seed
    orth = [[_run(0.9), _run(0.89)], [_run(0.8), _run(0.78)]]     # range ~ 0.1
    ev = ox.grid_range_difference(base, orth)
    assert "paired t" in ev.method and ev.estimate == pytest.approx(100 * (0.565 - 0.105))
    rng = np.random.default_rng(0)
    hits = {p: rng.random(2000) < p for p in (0.9, 0.3, 0.8)}
    one = ox.grid_range_difference([[_run(0.9, hits[0.9])], [_run(0.3, hits[0.3])]],
                                   [[_run(0.9, hits[0.9])], [_run(0.8, hits[0.8])]])
    assert "bootstrap" in one.method and one.verdict == "PASS"
    assert one.estimate == pytest.approx(100 * (hits[0.8].mean() - hits[0.3].mean()))


def test_centre_shift_is_about_one_for_noise_and_grows_with_a_shift():
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.05, size=(400, 32))
    assert 0.85 < ox.centre_shift(noise) < 1.15
    shifted = noise + np.linspace(-0.05, 0.05, 400)[:, None]
    assert ox.centre_shift(shifted) > 3
    with pytest.raises(ValueError, match="filters"):
        ox.centre_shift(np.zeros(5))


def test_batch_norm_models_cannot_show_exact_zero_gradients():
    assert ox.has_batch_norm("resnet8") and ox.has_batch_norm("basic_cnn")
    assert not ox.has_batch_norm("mlp")
