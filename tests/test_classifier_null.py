"""Chapter 06's classifier null direction: the split of one gradient, the float64 probe of
complete vs drop, the runs and their comparison."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from lalr_core.chapters import chapter_settings
from lalr_core.chapters import ch06_orthogonal_sgdm as ox
from lalr_core.chapters.ch06_orthogonal_sgdm import classifier_null as cn
from lalr_core.chapters.ch06_orthogonal_sgdm import read_source, untuned, with_probes
from lalr_core.core.models.networks import build_model


def _ce_gradient(C=10, d=48, B=128, seed=0):
    """Closed-form cross-entropy gradient of a random linear classifier, float64."""
    g = torch.Generator().manual_seed(seed)
    H = torch.randn(B, d, generator=g, dtype=torch.float64)
    W = 0.1 * torch.randn(C, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (B,), generator=g)
    R = torch.softmax(H @ W.T, 1) - torch.nn.functional.one_hot(y, C)
    return R.T @ H / B


def test_null_split_of_a_cross_entropy_gradient():
    split = cn.null_split(_ce_gradient())
    assert split["rank"] == 9 and split["row_sum_rel"] < 1e-14
    assert split["null_share"] == pytest.approx(1 / math.sqrt(10), abs=1e-12)
    assert split["null_common_row"] == pytest.approx(1.0, abs=1e-12)   # shifts every logit alike
    assert split["ns_null_share"] < 1e-10                                # Newton-Schulz drops it
    full = cn.null_split(torch.randn(10, 48, dtype=torch.float64,
                                     generator=torch.Generator().manual_seed(1)))
    assert full["rank"] == 10 and full["null_share"] == 0 and math.isnan(full["null_common_row"])


def test_classifier_name_is_the_last_linear_weight():
    assert cn.classifier_name(build_model("basic_cnn", in_channels=1, image_size=28)) == "fc.weight"
    with pytest.raises(ValueError, match="no linear layer"):
        cn.classifier_name(torch.nn.Conv2d(1, 2, 3))


def test_exact_probe_sgdm_cannot_see_the_completion_and_adam_can(one_thread):
    """The invariance argument of the module docstring, on a real model in float64: under
    SGDM the classifiers differ by the completed common rows only; under Adam the
    per-coordinate scaling turns them into visible differences. The control (complete with
    centred rows = drop in exact arithmetic) differs from drop by rounding only."""
    s = chapter_settings("06", "smoke")
    cfg = untuned(s, "basic_cnn", "orth_sgdm")
    data = cfg.task.load(cfg, torch.device("cpu"))
    probe = cn.exact_probe(cfg, data, 3, {"sgdm": {}, "adam": dict(optimizer="adam", lr=1e-3)},
                           control=True)
    assert len(probe) == 12 and set(probe.run) == {"complete", "control"}
    np.testing.assert_allclose(probe["null_share"], 1 / math.sqrt(10), atol=1e-9)
    summary = cn.probe_summary(probe)
    assert summary.loc[("sgdm", "complete"), "invisible"]
    assert not summary.loc[("adam", "complete"), "invisible"]
    assert summary.loc[("sgdm", "complete"), "classifier_diff"] > 1e-4
    assert summary.loc[("adam", "complete"), "visible_diff"] > 1e-4
    assert summary.loc[("sgdm", "control"), "classifier_diff"] < 1e-12   # no completed row
    sg = probe[(probe.optimizer == "sgdm") & (probe.run == "complete")]
    assert (sg["logit_shift"].iloc[1:] > 1e-6).all()   # the logits do move, all alike
    f32 = cn.exact_probe(cfg, data, 2, dtype=torch.float32, control=True)
    assert f32.loc[f32.run == "control", "classifier_diff"].max() < 1e-5


def test_probe_table_is_cached_and_labelled(tmp_path, monkeypatch, one_thread):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path))
    s = chapter_settings("06", "smoke", {"null_steps": 2, "null_f32_steps": 2})
    table = cn.probe_table(s)
    assert set(table.precision) == {"float64", "float32"} and set(table.model) == {"basic_cnn"}
    assert set(table[table.precision == "float32"].run) == {"complete", "control"}
    assert set(table[table.precision == "float64"].optimizer) == {"sgdm", "adam"}
    assert any(tmp_path.rglob("*")) and table.equals(cn.probe_table(s))


def test_null_configs_pair_the_suite_runs_with_drop_runs():
    s = chapter_settings("06", "smoke", {"null_seeds": {"basic_cnn": 2, "mlp": 1}})
    cfgs, callbacks = ox.null_configs(s)
    rules = [(c.model, c.seed, cn.rule_of(c)) for c in cfgs]
    assert rules == [("basic_cnn", 0, "complete"), ("basic_cnn", 0, "drop"),
                     ("basic_cnn", 0, "newton_schulz"), ("basic_cnn", 1, "complete"),
                     ("basic_cnn", 1, "drop"), ("mlp", 0, "complete"), ("mlp", 0, "drop"),
                     ("mlp", 0, "newton_schulz")]
    assert cfgs[0] == untuned(s, "basic_cnn", "orth_sgdm", 0)          # the suite's run
    assert cfgs[1] == dataclasses.replace(cfgs[0], methods=(
        dataclasses.replace(cfgs[0].methods[0], null="drop"),))       # one field apart
    assert callbacks == with_probes(s, cfgs)
    for bad, match in (({"null_seeds": {"resnet9000": 1}}, "unknown model"),
                       ({"null_seeds": {"basic_cnn": 0}}, "int >= 1"),
                       ({"null_probe": ("nope",)}, "null_probe"),
                       ({"null_steps": 0}, "null_steps"),
                       ({"null_f32_steps": 0}, "null_f32_steps")):
        with pytest.raises(ValueError, match=match):
            ox.null_configs(chapter_settings("06", "smoke", bad))


def test_source_gap_is_table_5_6_conv_minus_all_layer():
    src = read_source("5.6")
    assert cn.source_gap("basic_cnn", src, {}) == pytest.approx(76.80 - 76.67)
    assert cn.source_gap("resnet8", src, {"resnet8": "resnet20"}) == pytest.approx(87.70 - 87.12)
    assert cn.source_gap("resnet34_tv", src, {}) == pytest.approx(85.68 - 85.42)
    assert math.isnan(cn.source_gap("mlp", src, {}))


def _result(acc, correct=None):
    return {"final": {"test_acc": acc}, "test_correct": correct}


def test_null_accuracy_pairs_seeds_or_bootstraps_one_seed():
    s = chapter_settings("06", "smoke", {"null_seeds": {"basic_cnn": 3, "mlp": 1}})
    cfgs, _ = ox.null_configs(s)
    hits = np.zeros(100, dtype=bool)
    hits_c, hits_d = hits.copy(), hits.copy()
    hits_c[:52], hits_d[:50] = True, True                  # complete 0.52, drop 0.50
    acc = {("basic_cnn", "complete"): [0.80, 0.82, 0.81], ("basic_cnn", "drop"): [0.80, 0.81, 0.81],
           ("basic_cnn", "newton_schulz"): [0.79]}
    results = []
    for c in cfgs:
        if c.model == "mlp":
            rule = cn.rule_of(c)
            results.append(_result(0.5, {"complete": hits_c, "drop": hits_d}.get(rule, hits)))
        else:
            results.append(_result(acc[(c.model, cn.rule_of(c))][c.seed]))
    table, ev = cn.null_accuracy(cfgs, results, {"basic_cnn": 0.13, "mlp": 2.0})
    assert ev["basic_cnn"].n == 3 and ev["basic_cnn"].estimate == pytest.approx(100 * 0.01 / 3)
    assert ev["basic_cnn"].side == "within" and ev["basic_cnn"].threshold == 0.13
    assert ev["mlp"].n == 1 and ev["mlp"].estimate == pytest.approx(2.0)
    assert "bootstrap" in ev["mlp"].method
    row = table.set_index("model").loc["basic_cnn"]
    assert row["orth_sgdm_acc"] == pytest.approx(81.0) and row["ns_seeds"] == 1
    assert row["ns_orth_sgdm_acc"] == pytest.approx(79.0)
    table2, ev2 = cn.null_accuracy(cfgs, results, {"basic_cnn": math.nan})
    assert "basic_cnn" not in ev2
    assert table2.set_index("model").loc["basic_cnn", "complete_minus_drop"] == ""
