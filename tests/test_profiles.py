"""Profiles, overrides and run-config validation: bad input fails before any compute."""

import pytest

from lalr_core.chapters import chapter_settings
from lalr_core.chapters.ch04_directedness import directedness_configs
from lalr_core.core.config import PROFILES, RunConfig, resolve


def test_every_chapter_profile_resolves_to_valid_runs():
    for profile in PROFILES:
        s = chapter_settings("04", profile)
        configs = directedness_configs(s)
        assert set(configs) == {"sgdm", "adam"}


def test_paper_profile_is_the_thesis_setting():
    c = directedness_configs(chapter_settings("04", "paper"))
    assert (c["sgdm"].dataset, c["sgdm"].model, c["sgdm"].batch_size, c["sgdm"].epochs) == (
        "cifar10", "resnet20", 1024, 200)
    assert (c["sgdm"].lr, c["sgdm"].momentum, c["sgdm"].wd, c["sgdm"].milestones) == (0.05, 0.85, 1e-2, (100, 150))
    assert (c["adam"].lr, c["adam"].betas, c["adam"].wd) == (0.01, (0.9, 0.99), 1e-4)
    assert (c["sgdm"].n_train, c["sgdm"].n_val) == (40_000, 10_000)


def test_overrides():
    s = chapter_settings("04", "smoke", {"epochs": 9, "window": None, "adam_betas": [0.8, 0.9]})
    assert s["epochs"] == 9 and s["window"] == chapter_settings("04", "smoke")["window"]
    assert s["adam_betas"] == (0.8, 0.9)
    with pytest.raises(ValueError, match="unknown setting 'epoch'"):
        chapter_settings("04", "smoke", {"epoch": 3})


def test_unknown_profile_and_chapter():
    with pytest.raises(ValueError, match="unknown profile"):
        chapter_settings("04", "full")
    with pytest.raises(ValueError, match="unknown chapter"):
        chapter_settings("99", "smoke")
    with pytest.raises(ValueError, match="unknown profile"):
        resolve({"smoke": {}}, "fast")


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
