"""Chapter 02 settings, run builders and summaries (lalr_core.chapters.ch02_tempbalance)."""

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch02_tempbalance as tb
from lalr_core.chapters import chapter, chapter_settings
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.layer_lr.tempbalance import allocate
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_every_profile_builds_valid_unique_runs(profile):
    s = chapter_settings("02", profile)
    cfgs, callbacks = tb.all_runs(s)
    assert len(cfgs) == len(set(cfgs)) == len(callbacks) > 0
    assert all(isinstance(c, RunConfig) and c.schedule == "cosine" for c in cfgs
               if c.model != s.esd_model)
    tb_code = tb.all_runs(chapter_settings("02", profile, {"schedule": "cosine_tb"}))[0]
    assert {c.schedule for c in tb_code if c.model != s.esd_model} == {"cosine_tb"}
    costs = [tb.run_cost(c) for c in cfgs]
    assert costs == sorted(costs, reverse=True)


def test_paper_profile_is_the_source_grid():
    s = chapter_settings("02", "paper")
    assert s.dataset == "cifar100" and s.epochs == 200
    assert s.widths == (0.25, 0.5, 1.0, 1.5, 2.0, 2.5)          # eq. 2.10, "10" = 1.0
    assert s.lrs == (0.025, 0.05, 0.075, 0.1, 0.15, 0.2)         # eq. 2.11
    grid, _ = tb.section_runs(s)["fig2.1"]
    assert len(grid) == 2 * 6 * 6 * 2 * s.seeds
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
    assert all(c.model == s.cka_model for c in with_weights)      # fig 2.2: every seed
    assert {c.seed for c in with_weights} == set(range(s.seeds))


def test_allocation_names_round_trip():
    s = chapter_settings("02", "smoke")
    for name in tb.ALLOCATIONS:
        assert tb.allocation_of(tb.run(s, "resnet18_mini", 1.0, 0.1, name)) == name
    with pytest.raises(ValueError, match="unknown allocation"):
        tb.run(s, "resnet18_mini", 1.0, 0.1, "cubic")


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_every_profile_constructs_and_passes_its_check(profile):
    s = tb.PROFILES[profile]
    assert isinstance(s, tb.Settings) and chapter_settings("02", profile) == s
    s.check()
    assert dataclasses.replace(s) == s                 # construction re-runs the checks
    assert chapter("02") is tb.CHAPTER and tb.CHAPTER.profiles is tb.PROFILES
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 3


def test_overrides_keep_the_other_values_and_become_tuples():
    s = chapter_settings("02", "quick", {"epochs": 3, "lrs": [0.1, 0.2], "seeds": None})
    q = chapter_settings("02", "quick")
    assert s.epochs == 3 and s.lrs == (0.1, 0.2) and s.seeds == q.seeds
    assert dataclasses.replace(s, epochs=q.epochs, lrs=q.lrs) == q


@pytest.mark.parametrize("overrides, setting", [
    ({"lrs": [0.0]}, "lrs"),                               # lr 0
    ({"map_lr": 0.0}, "map_lr"),
    ({"esd_lr": -0.02}, "esd_lr"),
    ({"epochs": 0}, "epochs"),                             # epochs 0
    ({"epochs": "3"}, "epochs"),                           # a string for an integer
    ({"epochs": 2.5}, "epochs"),
    ({"models": ["resnet18_mini", "resnet_nope"]}, "models"),   # unknown model
    ({"esd_model": "mlp_nope"}, "esd_model"),
    ({"sampling_models": ["resnet18_mini", "nope"]}, "sampling_models"),
    ({"dataset": "imagenet_nope"}, "dataset"),             # unknown dataset
    ({"lrs": ["fast"]}, "lrs"),                            # a non-number lr
    ({"sampling_lr": "0.1"}, "sampling_lr"),
    ({"negpow_lr": float("nan")}, "negpow_lr"),
    ({"dist_lr": float("inf")}, "dist_lr"),
    ({"seeds": 0}, "seeds"),                               # chapter-specific
    ({"dist_seeds": 0}, "dist_seeds"),
    ({"batch_size": 0}, "batch_size"),
    ({"n_train": 0}, "n_train"),
    ({"cka_samples": 0}, "cka_samples"),
    ({"cka_batches": 0}, "cka_batches"),
    ({"widths": []}, "widths"),
    ({"widths": [0.5, 0.0]}, "widths"),
    ({"momentum": 1.0}, "momentum"),
    ({"esd_momentum": -0.1}, "esd_momentum"),
    ({"wd": -5e-4}, "wd"),
    ({"judge_source": 1}, "judge_source"),
    ({"syn_seed": -1}, "syn_seed"),
    ({"augment": 1}, "augment"),
    ({"schedule": "linear"}, "schedule"),
    ({"executor": "slurm"}, "executor"),
    ({"workers": 0}, "workers"),
    ({"models": ["resnet18_mini"]}, "models"),                         # checks compare two
    ({"models": ["resnet18_mini", "resnet18_mini"]}, "models"),
    ({"cka_model": "resnet18_cifar"}, "cka_model"),                    # not in the grid
    ({"cka_width": 0.75}, "cka_width"),
    ({"map_lr": 0.1}, "map_lr"),
    ({"dist_epochs_shown": [1, 2, 4]}, "dist_epochs_shown"),          # beyond dist_epochs
    ({"dist_epochs_shown": []}, "dist_epochs_shown"),
])
def test_bad_values_stop_at_chapter_settings(overrides, setting):
    """The notebook's first line, before any data or training: the error names the setting."""
    with pytest.raises(ValueError, match=rf"'{setting}(\[\d+\])?'"):
        chapter_settings("02", "smoke", overrides)


def test_unknown_override_is_rejected_before_compute():
    with pytest.raises(ValueError, match="unknown setting 'epochz'") as e:
        chapter_settings("02", "quick", {"epochz": 3})
    assert "known:" in str(e.value) and "'epochs'" in str(e.value) and "'lrs'" in str(e.value)


def test_every_setting_is_read():
    """No dead settings: each field is read by the runs or the notebook's cells."""
    from pathlib import Path

    package = Path(tb.__file__).parent
    text = "".join(p.read_text() for p in sorted(package.glob("*.py"))) \
        + (Path(__file__).parents[1] / "notebooks" / "src" / "02_tempbalance.py").read_text()
    unread = [f.name for f in dataclasses.fields(tb.Settings)
              if not re.search(rf"\b[sS]\.{f.name}\b", text)]
    assert not unread


def _sgdm(model, width, lr, scheme=None, params=(), epochs=2):
    return RunConfig(dataset="digits", n_train=256, augment=True, model=model, width=width,
                     optimizer="sgdm", lr=lr, momentum=0.9, wd=5e-4, batch_size=64,
                     epochs=epochs, schedule="cosine", seed=0,
                     methods=() if scheme is None else (TempBalance(scheme, params),))


def test_smoke_sections_are_the_fixed_runs():
    r18, r34 = "resnet18_mini", "resnet34_mini"
    weights, spectral = {"weights": {}}, {"spectral": {"xmin": "ks", "conv": "slices"}}
    want = {
        "fig2.1": ([_sgdm(r18, 0.5, 0.2), _sgdm(r18, 0.5, 0.2, "eq2.13"),
                    _sgdm(r34, 0.5, 0.2), _sgdm(r34, 0.5, 0.2, "eq2.13")],
                   [{}, {}, weights, weights]),
        "fig2.3": ([_sgdm(r18, 0.5, 0.2), _sgdm(r18, 0.5, 0.2, "eq2.13"),
                    _sgdm(r18, 0.5, 0.2, "root", (("k", 2.0),)),
                    _sgdm(r18, 0.5, 0.2, "root", (("k", 3.0),)),
                    _sgdm(r18, 0.5, 0.2, "log", (("base", 2.0),))], [{}] * 5),
        "fig2.5": ([_sgdm(r18, 0.5, 0.05), _sgdm(r18, 0.5, 0.05, "softmax"),
                    _sgdm(r18, 0.5, 0.05, "neg_pow2")], [{}] * 3),
        "fig2.6": ([_sgdm(r18, 0.5, 0.2, "eq2.13", epochs=3),
                    _sgdm(r34, 0.5, 0.2, "eq2.13", epochs=3)], [spectral] * 2),
        "T-001-a": ([_sgdm(r18, 0.5, 0.2), _sgdm(r18, 0.5, 0.2, "power", (("p", 2.0),)),
                     _sgdm(r18, 0.5, 0.2, "power", (("p", 3.0),))], [{}] * 3),
        "T-001-d": ([_sgdm(m, 0.5, 0.1, s) for m in (r18, r34)
                     for s in (None, "gauss_alpha", "gauss_lr", "emg")], [{}] * 8),
        "fig1.3": ([RunConfig(dataset="digits", n_train=256, model="mlp", width=2.0,
                              optimizer="sgdm", lr=0.02, momentum=0.9, wd=5e-4, batch_size=16,
                              epochs=2)], [weights]),
    }
    got = tb.section_runs(chapter_settings("02", "smoke"))
    assert list(got) == list(want)
    for section, (cfgs, cbs) in want.items():
        assert got[section] == (cfgs, cbs), section
        assert tb.CHAPTER.runs(chapter_settings("02", "smoke"), section) == (cfgs, cbs)


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_the_sweep_holds_every_config_of_every_section(profile):
    s = chapter_settings("02", profile)
    cfgs, cbs = tb.all_runs(s)
    every = {c for configs, _ in tb.section_runs(s).values() for c in configs}
    assert set(cfgs) == every
    generic = tb.CHAPTER.all_runs(s)
    if profile != "paper":   # paper's fig 2.6 runs are fig 2.1 configs with another callback
        assert set(zip(cfgs, map(str, cbs))) == set(zip(generic[0], map(str, generic[1])))


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
