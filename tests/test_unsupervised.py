"""Reduced Barlow Twins and Poisson-VAE tasks (figs 5.8, 5.9): they train in the one loop,
orthogonalise only the parts the source names, and the count transform inverts the
normalisation."""

import numpy as np
import pytest
import torch

from lalr_core.chapters import chapter_settings
from lalr_core.chapters import ch06_orthogonal_sgdm as ox
from lalr_core.chapters.ch06_orthogonal_sgdm.unsupervised import (BarlowTwinsTask, PoissonVAETask,
                                                                  counts_of)
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.data import normalise
from lalr_core.core.models.networks import BarlowTwins, PoissonVAE, basic_cnn_trunk
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.loop.train import train
from lalr_core.methods.orthogonal.transform import GradTransform, transformed_params

DATA = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16)


def test_counts_invert_the_normalisation():
    pixels = torch.tensor([0, 51, 128, 255], dtype=torch.uint8).view(1, 1, 2, 2)
    counts = counts_of(normalise(pixels, "fashion_mnist"), "fashion_mnist")
    np.testing.assert_allclose(counts.numpy().ravel(),
                               np.round(10 * np.array([0, 51, 128, 255]) / 255))


def test_orthogonalised_parts_are_the_encoder_and_the_trunk_convs():
    assert transformed_params(PoissonVAE(), "all", "encoder.") == ["encoder.1.weight", "encoder.3.weight"]
    trunk, dim = basic_cnn_trunk(1, 28)
    names = transformed_params(BarlowTwins(trunk, dim), "conv", "trunk.")
    assert names == ["trunk.conv1.weight", "trunk.conv2.weight", "trunk.conv3.weight"]
    s = chapter_settings("06", "smoke")
    for cfg in ox.barlow_twins_configs(s) + ox.vae_configs(s):
        model = cfg.task.build_model(cfg)
        opt = make_optimizer(cfg, model)
        chosen = {id(p) for p in getattr(opt, "params", [])}
        named = dict(model.named_parameters())
        expect = set() if not ox.is_orthogonalised(cfg) else {
            id(named[n]) for n in transformed_params(model, *(
                ("conv", "trunk.") if cfg.task.name == "barlow_twins" else ("all", "encoder.")))}
        assert chosen == expect


def test_runs_train_and_record():
    for orth in (False, True):
        gt = (GradTransform("orth", layers="conv", prefix="trunk."),) if orth else ()
        bt = train(RunConfig(**DATA, model="basic_cnn", optimizer="lars", lr=0.2, wd=1.5e-6,
                             optimizer_params={"eta": 1e-3}, batch_size=16, epochs=1,
                             task=BarlowTwinsTask(steps=3, projector=(32, 32)), methods=gt),
                   progress=False)
        assert list(bt["steps"]["step"]) == [1, 2, 3] and np.isfinite(bt["steps"]["loss"]).all()
        assert np.isnan(bt["final"]["train_acc"])
        gt = (GradTransform("orth", prefix="encoder."),) if orth else ()
        vae = train(RunConfig(**DATA, model="mlp", optimizer="adam", lr=1e-3, batch_size=16,
                              epochs=1, task=PoissonVAETask(steps=4), eval_every_steps=2,
                              methods=gt), progress=False)
        assert list(vae["evals"]["step"]) == [0, 2, 4]
        assert np.isfinite(vae["evals"]["val_loss"]).all()


def test_step_tasks_reject_bad_settings_before_compute():
    with pytest.raises(ValueError, match="steps"):
        BarlowTwinsTask(steps=0)
    with pytest.raises(ValueError, match="epochs=1"):
        train(RunConfig(**DATA, model="mlp", optimizer="adam", epochs=2,
                        task=PoissonVAETask(steps=2)), progress=False)
    with pytest.raises(ValueError, match="unknown optimizer_params"):
        RunConfig(**DATA, optimizer="lars", optimizer_params={"trust": 1e-3})
    with pytest.raises(ValueError, match="unknown task"):
        RunConfig(**DATA, task="captioning")
    with pytest.raises(ValueError, match="bad settings for task 'barlow_twins'"):
        RunConfig(**DATA, task={"kind": "barlow_twins", "depth": 3})


def test_task_survives_the_cache_key():
    cfg = ox.barlow_twins_configs(chapter_settings("06", "smoke"))[-1]
    assert RunConfig(**cfg.key()) == cfg
    assert cfg.key()["task"]["kind"] == "barlow_twins"
