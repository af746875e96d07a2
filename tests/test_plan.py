"""`lalr_core.plan` (the dry run of ``make figures``): every run built on the meta device and
none trained, against closed forms (an MLP's FLOPs and activations), the CPU-built model's
parameter count and the measured calibration epoch."""

from __future__ import annotations

import itertools
import json
import time

import pytest
import torch
from torch import nn

from lalr_core import driver, plan
from lalr_core.chapters import ch04_directedness as ch04
from lalr_core.chapters import chapter
from lalr_core.core.runs.chapter import Chapter
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.models.networks import num_parameters
from lalr_core.core.loop.train import initial_model

# sklearn digits: 8x8 grey images, 10 classes, official split 1347 / 450
DIGITS_MLP = RunConfig(dataset="digits", model="mlp", batch_size=32, n_val=0, epochs=3)
MLP_WIDTHS = (64, 64, 64, 10)  # flattened input, the two hidden layers, the logits


@pytest.fixture
def nothing_trained(monkeypatch):
    """Every training, download and apt-get entry point raises."""
    def refuse(*args, **kwargs):
        raise AssertionError("a dry run trained, downloaded or installed something")

    for target in ("lalr_core.core.loop.train.train", "lalr_core.core.runs.units.train_unit",
                   "lalr_core.core.data._try_download", "lalr_core.core.data._try_apt",
                   "lalr_core.driver.prepare_data"):
        monkeypatch.setattr(target, refuse)


def test_chapter04_paper_plan_builds_every_run_without_training(nothing_trained):
    t0 = time.perf_counter()
    p = plan.build_plan(["04"], "paper")
    assert time.perf_counter() - t0 < 30
    (c,) = p["chapters"]
    expected = len(chapter("04").all_runs(chapter("04").settings("paper"))[0])
    assert expected == 2 * ch04.PROFILES["paper"].seeds
    assert len(c["runs"]) == expected and c["error"] is None and p["failed_runs"] == 0
    assert all(r["status"] == "ok" and r["built_on"] == "meta" for r in c["runs"])
    assert {r["optimizer"]: r["state_copies"] for r in c["runs"]} == {"sgdm": 1, "adam": 2}
    # measured 0.185 GPU-hours on an H200 (the calibration record): the estimate within 2x
    assert 0.185 / 2 < p["total_gpu_hours"] < 0.185 * 2
    assert p["nothing_trained"] and "cifar10" in p["data"]


def test_parameter_count_equals_the_cpu_built_model():
    cfg = RunConfig(dataset="cifar10", model="resnet20")
    found = plan.probe(cfg)
    assert found["on"] == "meta"
    assert found["params"] == num_parameters(initial_model(cfg)) == 269_722


def test_flops_of_linear_layers_are_their_closed_form():
    B = 8
    with torch.device("meta"):
        mlp = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 5))
        X = torch.zeros(B, 10)
    flops, _ = plan.measure_forward(mlp, (X,), {})
    assert flops == B * 2 * (10 * 20 + 20 * 5)  # 2 in out per Linear per example
    found = plan.probe(DIGITS_MLP)
    forward = 2 * sum(a * b for a, b in itertools.pairwise(MLP_WIDTHS))
    assert found["flops"] == forward
    s_per_flop = 1e-12
    n_train, n_eval = plan.epoch_examples(DIGITS_MLP)
    assert (n_train, n_eval) == (1347, 450)
    # training an example costs 3 forwards (forward + backward), evaluating it one
    assert plan.gpu_seconds(DIGITS_MLP, forward, s_per_flop) == pytest.approx(
        DIGITS_MLP.epochs * (3 * n_train * forward + n_eval * forward) * s_per_flop)


def test_activation_memory_of_an_mlp_is_its_closed_form():
    found = plan.probe(DIGITS_MLP)
    # leaf outputs per example: Flatten 64, Linear 64 + ReLU 64, Linear 64 + ReLU 64, Linear 10
    per_example = 64 + 2 * 64 + 2 * 64 + 10
    assert found["act_bytes"] == DIGITS_MLP.batch_size * per_example * 4
    fp32 = plan.memory_bytes(DIGITS_MLP, found, copies=1)
    bf16 = plan.memory_bytes(DIGITS_MLP.replace(bf16=True), found, copies=1)
    assert bf16["activations"] == fp32["activations"] / 2
    params = sum(a * b + b for a, b in itertools.pairwise(MLP_WIDTHS))
    assert fp32["weights"] == fp32["gradients"] == fp32["optimizer"] == 4 * params
    assert fp32["data"] == (1347 + 450) * 64 * 4


def test_calibration_reproduces_the_measured_epoch():
    est = plan.Estimator()
    cfg = RunConfig(dataset="cifar10", model="resnet20", batch_size=1024, n_train=50_000,
                    n_val=0, n_test=1_000, epochs=1, optimizer="sgdm")
    assert est.run(cfg, ["x"])["gpu_hours"] * 3600 == pytest.approx(0.57, rel=1e-3)
    assert est.run(cfg.replace(bf16=True), ["x"])["gpu_hours"] * 3600 == pytest.approx(
        0.456, rel=1e-3)


def test_a_broken_config_is_reported_not_raised(tmp_path, nothing_trained, capsys):
    good = RunConfig(dataset="digits", model="mlp", epochs=1)
    bad = RunConfig(dataset="fashion_mnist", model="densenet121_tv", epochs=1)  # 28 px < 29

    def broken_settings(s):
        raise ValueError("setting 'x' must be positive, got -1")

    chapters = [Chapter(id="98", title="one bad run", profiles=ch04.PROFILES,
                        sections=lambda s: {"a": ([good, bad], [{}, {}])}),
                Chapter(id="99", title="bad settings", profiles=ch04.PROFILES,
                        sections=broken_settings)]
    p = plan.build_plan(chapters, "paper")
    runs = {r["model"]: r for r in p["chapters"][0]["runs"]}
    assert runs["mlp"]["status"] == "ok"
    assert runs["densenet121_tv"]["status"] == "failed" and "29" in runs["densenet121_tv"]["why"]
    assert p["failed_runs"] == 1 and p["failed_chapters"] == ["99"]
    assert "must be positive" in p["chapters"][1]["error"]
    assert plan.dry_run(chapters, "paper", tmp_path) == 2
    assert "FAILED" in capsys.readouterr().out


def test_driver_dry_run_prints_the_plan_and_writes_plan_json(tmp_path, nothing_trained,
                                                              capsys):
    code = driver.main(["--profile", "paper", "--chapters", "04", "--dry-run",
                        "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "GPU-hours" in out and "fig3.7" in out and "calibration" in out
    assert out.rstrip().splitlines()[-1] == "dry run: nothing trained"
    saved = json.loads((tmp_path / "paper" / "plan.json").read_text())
    assert saved["total_gpu_hours"] > 0 and len(saved["chapters"][0]["runs"]) == 6
    assert not (tmp_path / "paper" / "notebooks").exists()


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_the_data_step_prepares_every_dataset_a_chapters_runs_read(profile):
    """What ``make data`` fetches (`prepared_datasets`) covers every real dataset the
    chapters' runs and their pretrainings read, so no run downloads data by itself."""
    from lalr_core.chapters import CHAPTERS, chapter, prepared_datasets

    for cid in CHAPTERS:
        ch = chapter(cid)
        settings = ch.settings(profile)
        runs = [cfg for cfg, *_ in plan.chapter_runs(ch, settings)]
        missing = plan.read_datasets(runs) - prepared_datasets(settings)
        assert not missing, f"chapter {cid} at {profile} reads {sorted(missing)} unprepared"
