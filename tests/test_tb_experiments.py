"""Chapter 02 profile table, run builders and summaries (lalr_core.chapters.ch02_tempbalance)."""

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch02_tempbalance as tb
from lalr_core.chapters import chapter_settings
from lalr_core.core.config import RunConfig
from lalr_core.methods.tempbalance import allocate


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_every_profile_builds_valid_unique_runs(profile):
    s = chapter_settings("02", profile)
    cfgs, callbacks = tb.all_runs(s)
    assert len(cfgs) == len(set(cfgs)) == len(callbacks) > 0
    assert all(isinstance(c, RunConfig) and c.schedule == "cosine" for c in cfgs
               if c.model != s["esd_model"])
    tb_code = tb.all_runs(chapter_settings("02", profile, {"schedule": "cosine_tb"}))[0]
    assert {c.schedule for c in tb_code if c.model != s["esd_model"]} == {"cosine_tb"}
    costs = [tb.run_cost(c) for c in cfgs]
    assert costs == sorted(costs, reverse=True)


def test_paper_profile_is_the_source_grid():
    s = chapter_settings("02", "paper")
    assert s["dataset"] == "cifar100" and s["epochs"] == 200
    assert s["widths"] == (0.25, 0.5, 1.0, 1.5, 2.0, 2.5)          # eq. 2.10, "10" = 1.0
    assert s["lrs"] == (0.025, 0.05, 0.075, 0.1, 0.15, 0.2)         # eq. 2.11
    grid, _ = tb.section_runs(s)["fig2.1"]
    assert len(grid) == 2 * 6 * 6 * 2 * s["seeds"]
    assert {c.model for c in grid} == {"resnet18_cifar", "resnet34_cifar"}


def test_shared_runs_are_trained_once_with_one_callback_spec():
    s = chapter_settings("02", "quick")
    sections = tb.section_runs(s)
    spec = {}
    for cfgs, cbs in sections.values():
        for c, cb in zip(cfgs, cbs):
            assert spec.setdefault(c, cb) == cb   # same config -> same cache key
    grid, grid_cb = sections["fig2.1"]
    with_weights = [c for c, cb in zip(grid, grid_cb) if "weights" in cb]
    assert {tb.allocation_of(c) for c in with_weights} == {"baseline", "alpha"}
    assert all(c.model == s["cka_model"] and c.seed == 0 for c in with_weights)


def test_allocation_names_round_trip():
    s = chapter_settings("02", "smoke")
    for name in tb.ALLOCATIONS:
        assert tb.allocation_of(tb.run(s, "resnet18_mini", 1.0, 0.1, name)) == name
    with pytest.raises(ValueError, match="unknown allocation"):
        tb.run(s, "resnet18_mini", 1.0, 0.1, "cubic")


def test_unknown_override_is_rejected_before_compute():
    with pytest.raises(ValueError, match="unknown setting"):
        chapter_settings("02", "quick", {"epochz": 3})


def test_deltas_pair_by_seed():
    rows = []
    for seed, (b, a) in enumerate(((80.0, 82.0), (70.0, 76.0))):
        rows += [dict(model="m", lr=0.1, seed=seed, allocation="baseline", test_acc=b, train_acc=90.0),
                 dict(model="m", lr=0.1, seed=seed, allocation="alpha", test_acc=a, train_acc=88.0)]
    d = tb.deltas(pd.DataFrame(rows), ["model", "lr"])
    assert len(d) == 1
    assert d.d_test.iloc[0] == pytest.approx(4.0) and d.d_train.iloc[0] == pytest.approx(-2.0)
    assert d.runs.iloc[0] == 2
    assert d.d_test_se.iloc[0] == pytest.approx(np.std([2.0, 6.0], ddof=1) / np.sqrt(2))
    assert d.d_train_se.iloc[0] == pytest.approx(0.0)


@pytest.mark.parametrize("n", [2, 3, 7, 8, 19, 35])
def test_neg_pow2_closed_form_matches_the_allocation(n):
    a = np.linspace(1.5, 6.0, n)
    lr = allocate(a, 1.0, "neg_pow2")
    for c in (0.001, 0.01, 0.1, 0.5, 1.0, 2.0):
        assert int((lr >= c).sum()) == tb.neg_pow2_count_at_least(n, c)
    with pytest.raises(ValueError):
        tb.neg_pow2_count_at_least(1, 0.1)


def test_exp_vs_normal_prefers_the_right_family():
    rng = np.random.default_rng(0)
    e = tb.exp_vs_normal(2.0 + rng.exponential(1.5, 2000))
    g = tb.exp_vs_normal(rng.normal(4.0, 1.0, 2000))
    assert e["loglik_exp"] > e["loglik_normal"] and e["skewness"] > 1.5
    assert g["loglik_normal"] > g["loglik_exp"] and abs(g["skewness"]) < 0.2


def test_cka_contrast_on_a_hand_made_matrix():
    m = pd.DataFrame(np.array([[1, .9, .5, .1, .2, .3],
                               [.9, 1, .8, .2, .1, .2],
                               [.5, .8, 1, .7, .3, .2],
                               [.1, .2, .7, 1, .6, .4],
                               [.2, .1, .3, .6, 1, .5],
                               [.3, .2, .2, .4, .5, 1]]))
    c = tb.cka_contrast(m)
    assert c["adjacent"] == pytest.approx(np.mean([.9, .8, .7, .6, .5]))
    assert c["first_last"] == pytest.approx(np.mean([.2, .3, .1, .2]))


def test_last_alphas_takes_the_last_fit():
    rec = pd.DataFrame({"epoch": [0, 0, 3, 3], "layer": ["a", "b", "a", "b"],
                        "alpha": [5.0, 6.0, 2.5, 3.5], "lr_scale": [1, 1, 1, 1]})
    got = tb.last_alphas({"callbacks": {"tempbalance": rec}})
    assert got.to_dict() == {"a": 2.5, "b": 3.5}
