"""Reliability: bad input stops before any compute, naming the
setting; a diverged run reports NaN, not numbers read off NaN logits, and its chapter finishes.

Oracles: the error messages (each names the setting or option), the defaults of ``RunConfig``'s
fields (a valid config's cache key is the hash of its keyword arguments over those defaults),
a model whose logits a callback blows up by a known factor, and the checks chapter 04 writes
when its SGDM run diverges (papermill at the smoke profile, into a temporary figures and runs
root).
"""

import dataclasses
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from lalr_core import driver
from lalr_core.chapters import chapter_settings
from lalr_core.core.loop import train as train_module
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.runs import param_hash
from lalr_core.core.loop.train import train

REPO = pathlib.Path(__file__).resolve().parents[2]
TINY = {"dataset": "fashion_mnist", "synthetic": True, "n_train": 64, "n_val": 16, "n_test": 16,
        "model": "mlp", "batch_size": 16, "epochs": 3, "device": "cpu", "eval_batch_size": 32}
NAN = float("nan")


# ---------------------------------------------------------------- item 4: chapter settings

BAD_SETTINGS = [
    # chapter 04: the values of the issue, then the other kinds of setting
    ("04", "sgdm_lr", 0.0), ("04", "sgdm_lr", -0.1), ("04", "adam_lr", "abc"),
    ("04", "sgdm_lr", NAN), ("04", "adam_lr", math.inf), ("04", "epochs", 0),
    ("04", "epochs", "3"), ("04", "epochs", 2.5), ("04", "model", "resnet_nope"),
    ("04", "dataset", "mnist_nope"), ("04", "window", 0), ("04", "window", 10_000),
    ("04", "sim_steps", "abc"), ("04", "sgdm_wd", NAN), ("04", "width", math.inf),
    ("04", "sgdm_momentum", 1.0), ("04", "workers", 0), ("04", "augment", "yes"),
    # chapter 02
    ("02", "lrs", (0.0,)), ("02", "epochs", 0), ("02", "models", ("nope", "resnet18_mini")),
    ("02", "dataset", "nope"), ("02", "momentum", 1.5), ("02", "wd", NAN), ("02", "workers", 0),
    ("02", "schedule", "nope"), ("02", "esd_model", "nope"),
    # chapter 02b
    ("02b", "pretrain_lr", NAN), ("02b", "ft_lr", math.inf), ("02b", "wd", NAN),
    ("02b", "pretrain_epochs", 0), ("02b", "dataset", "nope"), ("02b", "importance", "nope"),
    ("02b", "models", {"densenet": "nope", "wrn": "wrn10_1", "mobilenet": "mobilenetv2_mini",
                       "vgg": "vgg_mini"}),
    ("02b", "grid_ratios", (1.5,)), ("02b", "fig31_sparsity", 1.0), ("02b", "workers", 0),
    # chapter 06
    ("06", "lr", NAN), ("06", "t54_lrs", (math.inf,)), ("06", "f51_model", "nope"),
    ("06", "t51_model", "nope"), ("06", "suite_models", ("nope",)), ("06", "cos_model", "nope"),
    ("06", "widths", {"nope": 1.0}), ("06", "source_analogue", {"resnet8": "nope"}),
    ("06", "rep_modules", ("bn9",)), ("06", "tdp_layer", "nope"), ("06", "sym_layer", "nope"),
    ("06", "cos_layers", ("conv2", "nope")), ("06", "bt_projector", ()),
    ("06", "bt_momentum", 1.0), ("06", "thresholds", (60.0, NAN)), ("06", "workers", 0),
    ("06", "dataset", "nope"),
]


@pytest.mark.parametrize("chapter_id,name,bad", BAD_SETTINGS,
                         ids=[f"{c}-{n}-{b!r}" for c, n, b in BAD_SETTINGS])
def test_bad_setting_stops_in_chapter_settings_naming_it(chapter_id, name, bad):
    with pytest.raises(ValueError) as err:
        chapter_settings(chapter_id, "quick", {name: bad})
    assert name in str(err.value)


@pytest.mark.parametrize("overrides", [5, "epochs=2", ["epochs", 2]])
def test_overrides_that_are_not_a_mapping_are_a_clear_error(overrides):
    with pytest.raises(ValueError, match="overrides must be a mapping"):
        chapter_settings("04", "quick", overrides)


def test_every_profile_of_every_chapter_is_still_valid():
    for chapter_id in ("02", "02b", "04", "06"):
        for profile in ("smoke", "quick", "paper"):
            chapter_settings(chapter_id, profile, {})


# ---------------------------------------------------------------- item 4: RunConfig

BAD_RUNS = [("epochs", 2.5), ("batch_size", 64.5), ("seed", "0"), ("lr", NAN), ("lr", math.inf),
            ("wd", NAN), ("epochs", True), ("seed", True), ("synthetic", 1), ("n_val", 1.5),
            ("split_seed", -1), ("width", math.inf), ("clip_grad_norm", math.inf),
            ("wd", "0"), ("milestones", (1.5,)), ("betas", (0.9, NAN)), ("n_train", 100.0),
            ("eval_batch_size", False), ("device", 0)]


@pytest.mark.parametrize("name,bad", BAD_RUNS, ids=[f"{n}-{b!r}" for n, b in BAD_RUNS])
def test_run_config_rejects_bad_types_naming_the_field(name, bad):
    with pytest.raises(ValueError) as err:
        RunConfig(**{**TINY, name: bad})
    assert name in str(err.value)


VALID = [TINY, {**TINY, "lr": 1, "wd": 0, "width": 2, "momentum": 0.0},
         {"model": "resnet20", "optimizer": "adamw", "lr": 3e-4, "betas": [0.9, 0.95],
          "wd": 0.05, "schedule": "multistep", "milestones": [3, 6], "epochs": 8,
          "clip_grad_norm": 1, "seed": 7, "n_train": None, "augment": True}]


@pytest.mark.parametrize("kwargs", VALID)
def test_validation_keeps_a_valid_config_and_its_key(kwargs):
    cfg = RunConfig(**kwargs)
    fields = [f for f in dataclasses.fields(RunConfig) if f.compare]
    expected = {f.name: kwargs.get(f.name, f.default) for f in fields}
    expected["task"], expected["methods"] = {"kind": "image_classification"}, []
    assert param_hash(cfg.key()) == param_hash(expected)  # same values, same types
    assert RunConfig(**cfg.key()) == cfg


# ---------------------------------------------------------------- item 4: the driver


@pytest.fixture
def no_compute(monkeypatch):
    """Fail the test if the driver gets as far as fetching data or executing a notebook."""
    def forbidden(*args, **kwargs):
        raise AssertionError("the driver started work despite bad arguments")
    monkeypatch.setattr(driver, "prepare_data", forbidden)
    monkeypatch.setattr(driver, "run_notebooks", forbidden)


@pytest.mark.parametrize("argv,option,words", [
    (["--chapters", ",,"], "--chapters", "names no chapter"),
    (["--chapters", " , "], "--chapters", "names no chapter"),
    (["--chapters", "09"], "--chapters", "unknown chapters"),
    (["--notebooks", "/nonexistent/notebooks", "--chapters", "04"], "--notebooks",
     "does not exist"),
    (["--profile", "fast"], "--profile", "unknown profile"),
])
def test_driver_rejects_bad_options_before_any_work(argv, option, words, no_compute, capsys,
                                                     tmp_path):
    assert driver.main(["--profile", "smoke", "--out", str(tmp_path), *argv]) != 0
    err = capsys.readouterr().err
    assert option in err and words in err


def test_driver_rejects_a_folder_without_notebooks(tmp_path, no_compute, capsys):
    assert driver.main(["--profile", "smoke", "--notebooks", str(tmp_path)]) != 0
    assert "--notebooks" in capsys.readouterr().err


# ---------------------------------------------------------------- item 5: divergence


def test_a_diverged_run_reports_nan_not_numbers_from_nan_logits():
    cfg = RunConfig(**{**TINY, "epochs": 5, "eval_every_steps": 1}, optimizer="sgd", lr=1e6)
    out = train(cfg, progress=False)
    assert out["diverged"] and len(out["history"]) < 5
    k = out["diverged_step"]
    losses = out["steps"]["loss"].to_numpy()
    limit = train_module.LOSS_BLOWUP * max(abs(losses[0]), 1.0)
    assert not losses[k - 1] <= limit and (losses[:k - 1] <= limit).all()  # NaN or exploded
    for metric in ("val_acc", "test_acc", "val_loss", "test_loss", "train_acc"):
        assert math.isnan(out["final"][metric]), metric
        assert math.isnan(out["history"][metric].iloc[-1]), metric
    evals = out["evals"]
    after = evals["step"] >= k - 1  # evaluated on the parameters that gave the bad loss, or later
    assert after.any() and evals.loc[after, ["val_loss", "val_acc"]].isna().all().all()
    assert evals.loc[~after, "val_acc"].notna().all()


class _BlowUp:
    """Multiplies the last layer's weights by ``factor`` once, after step ``at``: the logits and
    the loss grow by orders of magnitude and stay finite."""

    name = "blow_up"

    def __init__(self, at: int, factor: float):
        self.at, self.factor, self.steps = at, factor, 0

    def on_step(self, model):
        self.steps += 1
        if self.steps == self.at:
            with torch.no_grad():
                list(model.parameters())[-2].mul_(self.factor)


def test_a_loss_that_explodes_without_nan_is_flagged():
    cfg = RunConfig(**{**TINY, "epochs": 4}, optimizer="sgd", lr=1e-3)
    out = train(cfg, callbacks=[_BlowUp(at=2, factor=1e6)], progress=False)
    losses = out["steps"]["loss"].to_numpy()
    assert np.isfinite(losses).all() and losses.max() > train_module.LOSS_BLOWUP * losses[0]
    assert out["diverged"] and out["diverged_step"] == 3 and len(out["history"]) == 1
    assert math.isnan(out["final"]["val_acc"])
    assert "LOSS_BLOWUP" in train_module.__doc__


def test_a_healthy_run_is_not_flagged():
    out = train(RunConfig(**TINY, lr=0.5), progress=False)
    assert not out["diverged"] and out["diverged_step"] is None
    assert np.isfinite(out["final"]["val_acc"])


def test_spike_gain_refuses_a_drop_outside_the_trajectory():
    from lalr_core.methods.trajectory import spike_gain

    psi = np.linspace(1.0, 0.5, 8)
    psi[5:] = 0.8
    assert spike_gain(psi, 4, 3) == pytest.approx(0.8 / psi[3] - 1)
    for drop in (0, 8, 24):
        with pytest.raises(ValueError, match="8 steps"):
            spike_gain(psi, drop, 3)


def test_chapter_04_finishes_when_its_sgdm_run_diverges(tmp_path):
    """The notebook at the smoke profile with sgdm_lr = 1e6: it completes, and the checks that
    read the SGDM run are N/A with the step at which it diverged."""
    env = {**os.environ, "LALR_FIGURES_ROOT": str(tmp_path / "figures"),
           "LALR_RUNS_ROOT": str(tmp_path / "runs")}
    papermill = pathlib.Path(sys.executable).with_name("papermill")
    done = subprocess.run(
        [str(papermill), "04_directedness.ipynb", str(tmp_path / "out.ipynb"),
         "-p", "profile", "smoke", "-y", "overrides: {sgdm_lr: 1000000.0}",
         "--no-progress-bar", "--no-log-output"],
        cwd=REPO / "notebooks", env=env, capture_output=True, text=True, timeout=240,
        check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    checks = json.loads((tmp_path / "figures/smoke/04_directedness/checks.json").read_text())
    by_item = {}
    for c in checks:
        by_item.setdefault(c["item_id"], []).append(c)
    for item in ("fig3.7A", "fig3.12A", "fig3.17A", "fig3.18", "extra_layer_psi"):
        assert {c["verdict"] for c in by_item[item]} == {"N/A"}, item
    # every N/A is the divergence's, but those the smoke window cannot show on any run
    na = [c for c in checks if c["verdict"] == "N/A" and "cannot show the claim" not in c["detail"]]
    assert na and all("the SGDM run diverged at step" in c["detail"] for c in na)
    for item in ("fig3.7B", "fig3.17B", "fig3.10"):  # Adam's own checks and the simulations
        assert "N/A" not in {c["verdict"] for c in by_item[item]}, item
