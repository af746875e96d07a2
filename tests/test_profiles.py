"""Profiles, overrides and run-config validation: bad input fails before any compute.

Chapter 04's settings (`lalr_core.chapters.ch04_directedness`) serve as the worked example;
the last tests are generic ones of `lalr_core.core.loop.config` (``check_profile``,
``RunConfig``).
"""

import dataclasses

import pytest

from lalr_core.chapters import chapter, chapter_settings
from lalr_core.chapters import ch04_directedness as ch04
from lalr_core.chapters.ch04_directedness import directedness_configs
from lalr_core.core.loop.config import PROFILES, RunConfig, check_profile

CALLBACKS = {"trajectory": {"window": 10, "per_layer": True}}  # smoke's, per run


def test_every_chapter_profile_resolves_to_valid_runs():
    for profile in PROFILES:
        s = chapter_settings("04", profile)
        configs = directedness_configs(s)
        assert set(configs) == {"sgdm", "adam"}


def test_every_profile_constructs_and_passes_check():
    assert sorted(ch04.PROFILES) == sorted(PROFILES)
    for profile, s in ch04.PROFILES.items():
        assert isinstance(s, ch04.Settings)
        s.check()
        assert chapter_settings("04", profile) == s
        assert dataclasses.replace(s) == s  # reconstructs (and re-checks) unchanged


def test_paper_profile_is_the_thesis_setting():
    c = directedness_configs(chapter_settings("04", "paper"))
    assert (c["sgdm"].dataset, c["sgdm"].model, c["sgdm"].batch_size, c["sgdm"].epochs) == (
        "cifar10", "resnet20", 1024, 200)
    assert (c["sgdm"].lr, c["sgdm"].momentum, c["sgdm"].wd, c["sgdm"].milestones) == (
        0.05, 0.85, 1e-2, (100, 150))
    assert (c["adam"].lr, c["adam"].betas, c["adam"].wd) == (0.01, (0.9, 0.99), 1e-4)
    assert (c["sgdm"].n_train, c["sgdm"].n_val) == (40_000, 10_000)
    assert c["sgdm"].lr_decay == c["adam"].lr_decay == 0.1


def test_smoke_section_runs_are_the_fixed_configs():
    common = dict(dataset="fashion_mnist", synthetic=True, n_train=512, n_val=128, n_test=128,
                  augment=False, model="basic_cnn", width=0.5, batch_size=64, epochs=6,
                  schedule="multistep", milestones=(3, 5), lr_decay=0.1)
    expected = [cfg for seed in (0, 1) for cfg in (
        RunConfig(**common, optimizer="sgdm", lr=0.05, momentum=0.85, wd=1e-3, seed=seed),
        RunConfig(**common, optimizer="adam", lr=1e-3, betas=(0.9, 0.99), wd=1e-4, seed=seed))]
    s = chapter_settings("04", "smoke")
    configs, callbacks = ch04.CHAPTER.runs(s, "fig3.7")
    assert configs == expected and [c.key() for c in configs] == [e.key() for e in expected]
    assert callbacks == [CALLBACKS] * 4
    assert list(directedness_configs(s)) == list(ch04.RUNS) == ["sgdm", "adam"]
    assert ch04.run_keys(s) == [("sgdm", 0), ("adam", 0), ("sgdm", 1), ("adam", 1)]
    assert list(directedness_configs(s).values()) == configs[:2]       # seed 0
    assert list(directedness_configs(s, seed=1).values()) == configs[2:]
    assert ch04.CHAPTER.all_runs(s) == (configs, callbacks)  # one section: the same runs
    assert chapter("04") is ch04.CHAPTER


def test_quick_profile_uses_the_thesis_optimisers_and_several_seeds():
    s = chapter_settings("04", "quick")
    paper = chapter_settings("04", "paper")
    for name in ("sgdm_lr", "sgdm_momentum", "sgdm_wd", "adam_lr", "adam_betas", "adam_wd"):
        assert getattr(s, name) == getattr(paper, name), name
    assert s.seeds >= 3 and paper.seeds >= 3
    steps_per_epoch = -(-s.train_size // s.batch_size)
    assert [m / s.epochs for m in s.milestones] == [0.5, 0.75]  # the thesis's 100, 150 of 200
    assert s.window < s.milestones[0] * steps_per_epoch


def test_section_runs_follow_the_settings():
    s = chapter_settings("04", "quick", {"window": 7, "epochs": 20, "adam_lr": 2e-3})
    configs, callbacks = ch04.CHAPTER.runs(s, "fig3.7")
    assert [c.epochs for c in configs] == [20] * 2 * s.seeds and configs[1].lr == 2e-3
    assert [(c.optimizer, c.seed) for c in configs[:3]] == [("sgdm", 0), ("adam", 0), ("sgdm", 1)]
    assert all(cb == {"trajectory": {"window": 7, "per_layer": True}} for cb in callbacks)
    with pytest.raises(ValueError, match="unknown section 'fig3.8'; known: \\['fig3.7'\\]"):
        ch04.CHAPTER.runs(s, "fig3.8")


def test_overrides():
    s = chapter_settings("04", "smoke", {"epochs": 9, "window": None, "adam_betas": [0.8, 0.9]})
    assert s.epochs == 9 and s.window == chapter_settings("04", "smoke").window
    assert s.adam_betas == (0.8, 0.9)
    with pytest.raises(ValueError, match="unknown setting 'epoch'"):
        chapter_settings("04", "smoke", {"epoch": 3})


def test_unknown_override_names_the_known_settings():
    with pytest.raises(ValueError) as err:
        chapter_settings("04", "smoke", {"learning_rate": 0.1})
    message = str(err.value)
    assert "unknown setting 'learning_rate'" in message
    for name in (f.name for f in dataclasses.fields(ch04.Settings)):
        assert repr(name) in message


def test_settings_are_frozen():
    s = chapter_settings("04", "smoke")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.epochs = 3


@pytest.mark.parametrize("bad, match", [
    # the classes: each stops at chapter_settings, before any compute
    ({"sgdm_lr": 0}, "'sgdm_lr' must be positive"),
    ({"adam_lr": -1e-3}, "'adam_lr' must be positive"),
    ({"epochs": 0}, "'epochs' must be positive"),
    ({"epochs": "3"}, "'epochs' must be an integer"),
    ({"epochs": 3.0}, "'epochs' must be an integer"),
    ({"epochs": True}, "'epochs' must be an integer"),
    ({"model": "vgg"}, "unknown model"),
    ({"dataset": "imagenet21k"}, "imagenet21k"),
    ({"sgdm_lr": "fast"}, "'sgdm_lr' must be a number"),
    ({"adam_lr": "1e-3"}, "'adam_lr' must be a number"),
    ({"window": 0}, "'window' must be positive"),
    ({"window": 4}, "'window' must be >= 5"),
    ({"seeds": 0}, "'seeds' must be positive"),
    ({"judge_source": "no"}, "'judge_source' must be true or false"),
    # the chapter's own ranges
    ({"batch_size": 0}, "'batch_size' must be positive"),
    ({"width": 0.0}, "'width' must be positive"),
    ({"n_train": 0}, "'n_train' must be positive"),
    ({"n_test": -5}, "'n_test' must be positive"),
    ({"n_val": -1}, "'n_val' must be >= 0"),
    ({"sgdm_wd": -1e-4}, "'sgdm_wd' must be >= 0"),
    ({"adam_wd": -1e-4}, "'adam_wd' must be >= 0"),
    ({"sgdm_momentum": 1.0}, "'sgdm_momentum' must lie in \\[0, 1\\)"),
    ({"sgdm_momentum": -0.1}, "'sgdm_momentum' must lie in \\[0, 1\\)"),
    ({"adam_betas": (0.9, 1.2)}, "'adam_betas' must lie in \\[0, 1\\)"),
    ({"adam_betas": (0.9,)}, "'adam_betas' must have 2 items"),
    ({"milestones": ()}, "'milestones' must be one or more increasing epochs"),
    ({"milestones": (5, 3)}, "'milestones' must be one or more increasing epochs"),
    ({"milestones": (3, 6)}, "'milestones' must be one or more increasing epochs"),
    ({"milestones": (0, 3)}, "'milestones' must be positive"),
    ({"milestones": (3.5,)}, "'milestones\\[0\\]' must be an integer"),
    ({"lr_decay": 0}, "'lr_decay' must be positive"),
    ({"lr_decay": 1.5}, "'lr_decay' must lie in \\(0, 1\\]"),
    ({"sim_steps": 199}, "'sim_steps' must be >= 200"),
    ({"sim_seeds": 0}, "'sim_seeds' must be positive"),
    ({"mc_count": 1}, "'mc_count' must be >= 2"),
    ({"mc_norm_draws": 0}, "'mc_norm_draws' must be positive"),
    ({"mc_sum_draws": 1}, "'mc_sum_draws' must be >= 2"),
    ({"workers": 0}, "'workers' must be positive"),
    ({"synthetic": 1}, "'synthetic' must be true or false"),
    ({"augment": "yes"}, "'augment' must be true or false"),
])
def test_bad_settings_stop_at_chapter_settings(bad, match):
    with pytest.raises(ValueError, match=match):
        chapter_settings("04", "smoke", bad)


def test_boundary_values_are_accepted():
    s = chapter_settings("04", "smoke", {"sim_steps": 200, "mc_count": 2, "n_val": 0,
                                        "sgdm_wd": 0, "lr_decay": 1.0, "n_test": None,
                                        "milestones": [1], "width": 1,
                                        "window": 7})  # < the 8 steps before the drop
    assert s.milestones == (1,) and s.n_test == 128  # an override None keeps the profile's
    assert directedness_configs(s)["sgdm"].milestones == (1,)
    assert dataclasses.replace(s, n_test=None, n_train=None).n_test is None


def test_unknown_profile_and_chapter():
    with pytest.raises(ValueError, match="unknown profile"):
        chapter_settings("04", "full")
    with pytest.raises(ValueError, match="unknown chapter"):
        chapter_settings("99", "smoke")
    with pytest.raises(ValueError, match="unknown profile"):
        chapter_settings("02", "fast")


def test_check_profile():
    assert check_profile("paper") == "paper"
    with pytest.raises(ValueError, match="choose one of smoke, quick, paper"):
        check_profile("Paper")


@pytest.mark.parametrize("bad, match", [
    (dict(dataset="imagenet"), "imagenet"), (dict(model="vgg"), "unknown model"),
    (dict(optimizer="lion"), "unknown optimizer"), (dict(schedule="step"), "unknown schedule"),
    (dict(lr=0), "lr"), (dict(lr=-1.0), "lr"), (dict(batch_size=0), "batch_size"),
    (dict(momentum=1.0), "momentum"), (dict(betas=(0.9, 1.2)), "betas"),
    (dict(milestones=(5, 3)), "milestones"), (dict(epochs=4, milestones=(4,)), "milestones"),
    (dict(wd=-1e-4), "wd"), (dict(n_val=-1), "n_val"), (dict(clip_grad_norm=0), "clip_grad_norm"),
    (dict(device="tpu"), "device"), (dict(lr_decay=2.0), "lr_decay"),
])
def test_run_config_rejects(bad, match):
    with pytest.raises(ValueError, match=match):
        RunConfig(**bad)


def test_key_excludes_device_only():
    a, b = RunConfig(device="cpu"), RunConfig(device="auto")
    assert a.key() == b.key() and "device" not in a.key()
    assert RunConfig(lr=0.2).key() != a.key()
