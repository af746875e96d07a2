"""Reduced Barlow Twins and Poisson-VAE units (figs 5.8, 5.9): they train, orthogonalise only the
parts the source names, and the count transform inverts the normalisation."""

import numpy as np
import torch

from lalr_core.data import normalise
from lalr_core.models import BarlowTwins, PoissonVAE, basic_cnn_trunk
from lalr_core.orthogonal import select_params
from lalr_core.unsupervised import _counts, barlow_twins_unit, vae_unit

DATA = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16)


def test_counts_invert_the_normalisation():
    pixels = torch.tensor([0, 51, 128, 255], dtype=torch.uint8).view(1, 1, 2, 2)
    counts = _counts(normalise(pixels, "fashion_mnist"), "fashion_mnist")
    np.testing.assert_allclose(counts.numpy().ravel(), np.round(10 * np.array([0, 51, 128, 255]) / 255))


def test_orthogonalised_parts_are_the_encoder_and_the_trunk_convs():
    assert select_params(PoissonVAE(), "all", "encoder.") == ["encoder.1.weight", "encoder.3.weight"]
    trunk, dim = basic_cnn_trunk(1, 28)
    names = select_params(BarlowTwins(trunk, dim), "conv", "trunk.")
    assert names == ["trunk.conv1.weight", "trunk.conv2.weight", "trunk.conv3.weight"]


def test_units_train_and_record():
    for orth in (False, True):
        bt = barlow_twins_unit(dict(DATA, steps=3, batch=16, lr=0.2, momentum=0.9, wd=1.5e-6,
                                    eta=1e-3, lambd=5e-3, noise=0.1, projector=(32, 32), orth=orth,
                                    seed=0))
        assert list(bt["steps"]["step"]) == [1, 2, 3] and np.isfinite(bt["steps"]["loss"]).all()
        assert bt["optimizer_stats"]["steps"] == 3
        vae = vae_unit(dict(DATA, steps=4, batch=16, lr=1e-3, eval_every=2, orth=orth, seed=0))
        assert list(vae["evals"]["step"]) == [0, 2, 4] and np.isfinite(vae["evals"]["mse"]).all()
