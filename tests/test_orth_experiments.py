"""Chapter-06 settings, run builders, summaries and the source tables."""

import math

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch06_orthogonal_sgdm as ox
from lalr_core.chapters import chapter_settings
from lalr_core.core.units import train_runs
from lalr_core.core.config import RunConfig
from lalr_core.methods.orthogonal import GradTransform
from lalr_core.core.runs import RunCache


def test_orth_settings_resolve_and_builders_are_consistent():
    for profile in ("smoke", "quick", "paper"):
        s = chapter_settings("06", profile)
        suite = ox.suite_configs(s)
        assert len(suite) == len(s["suite_models"]) * 2 * s["seeds"]
        probes = ox.with_probes(s, suite)
        assert sum("representations" in p for p in probes) == 2 and sum("zero_grad" in p for p in probes) == 2
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
                                 "fig5.14", "fig5.10", "figI"}
        for cfgs, cbs in sections.values():
            assert len(cfgs) == len(cbs) and all(isinstance(c, RunConfig) for c in cfgs)
        cfgs, _ = ox.all_runs(s)
        costs = [ox.run_cost(c) for c in cfgs]
        assert costs == sorted(costs, reverse=True)
    paper = ox.section_runs(chapter_settings("06", "paper"))
    assert len(paper["table5.4"][0]) == 4 * 5 * 4 * 5      # lr x momentum x optimiser x 5 runs
    assert {c.model for c in paper["suite"][0]} >= {"resnet20", "resnet44", "wide_resnet50_2_tv"}
