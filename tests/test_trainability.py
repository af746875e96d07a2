"""Trainability grid of deep random tanh networks (oracles: the init's variances, a linear
problem a shallow net learns, seeded reproducibility)."""

import math

import numpy as np
import pytest
import torch

from lalr_core.methods.signal import trainability as tr


def _blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    X = torch.randn(n, 5, generator=g) + 3.0 * (2 * y[:, None] - 1)   # separable
    return X, y


def test_initial_variances_are_the_mean_field_convention():
    g = torch.Generator().manual_seed(0)
    layers = tr.random_tanh_net(400, 3, 400, 3, sigma_w2=2.0, sigma_b2=0.5, generator=g)
    W, b = layers[1]
    assert W.var().item() == pytest.approx(2.0 / 400, rel=0.02)
    assert b.var().item() == pytest.approx(0.5, rel=0.2)
    assert len(layers) == 4 and layers[-1][0].shape == (3, 400)


def test_a_shallow_net_learns_separable_blobs_and_runs_reproduce():
    X, y = _blobs()
    grid = tr.trainability_grid(X, y, [1.0, 1.76], [1, 2], width=32, steps=60, lr=0.05)
    assert grid.shape == (2, 2) and np.all(grid > 0.9)
    again = tr.trainability_grid(X, y, [1.0, 1.76], [1, 2], width=32, steps=60, lr=0.05)
    np.testing.assert_array_equal(grid, again)


def test_a_deep_ordered_net_forgets_its_input():
    # deep in the ordered phase (sigma_w^2 = 0.5): every input maps to nearly the same output,
    # so a few steps leave the accuracy near the majority class
    X, y = _blobs()
    deep = tr.trainability_grid(X, y, [0.5], [60], width=32, steps=30, lr=0.05)[0, 0]
    assert deep < 0.75 or math.isnan(deep)


@pytest.mark.parametrize("kw", [{"sigma_w2s": []}, {"depths": [0]}, {"depths": [2.5]},
                                {"lr": 0.0}, {"sigma_b2": -1.0}, {"steps": 0}])
def test_bad_input_is_refused(kw):
    X, y = _blobs(20)
    args = {"sigma_w2s": [1.0], "depths": [1], **kw}
    with pytest.raises(ValueError):
        tr.trainability_grid(X, y, args.pop("sigma_w2s"), args.pop("depths"), **args)


def _one_cell_alone(X, y, *, width, depth, sigma_w2, steps, lr, batch, seed, sigma_b2=0.05):
    """The oracle: one net trained by itself, an explicit loop over its (W, b) layers."""
    g = torch.Generator().manual_seed(seed)
    layers = tr.random_tanh_net(X.shape[1], int(y.max()) + 1, width, depth, sigma_w2, sigma_b2, g)
    params = [p for layer in layers for p in layer]

    def logits(inp):
        h = inp
        for W, b in layers[:-1]:
            h = torch.tanh(h @ W.T + b)
        return h @ layers[-1][0].T + layers[-1][1]

    for _ in range(steps):
        idx = torch.randint(0, len(X), (batch,), generator=g)
        grads = torch.autograd.grad(torch.nn.functional.cross_entropy(logits(X[idx]), y[idx]),
                                    params)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                p -= lr * gr
    with torch.no_grad():
        return float((logits(X).argmax(1) == y).float().mean())


def test_cells_trained_side_by_side_equal_each_cell_trained_alone():
    g = torch.Generator().manual_seed(3)
    X = torch.randn(150, 6, generator=g)
    y = (X[:, 0] + X[:, 1] ** 2 > 1).long() + (X[:, 2] > 0.5).long()     # three classes
    kw = {"width": 16, "depth": 3, "steps": 40, "lr": 0.1, "batch": 20}
    s2s, seeds = [0.8, 1.76, 3.0], [5, 6, 7]
    side = tr.train_accuracies(X, y, sigma_w2s=s2s, sigma_b2=0.05, seeds=seeds, **kw)
    alone = [_one_cell_alone(X, y, sigma_w2=s, seed=sd, **kw) for s, sd in zip(s2s, seeds)]
    assert side == pytest.approx(alone, abs=1e-9)
    assert len(set(alone)) > 1            # the cells differ, so a mix-up would show


def test_cached_grid_equals_the_grid_and_a_second_call_trains_nothing(tmp_path, monkeypatch):
    from lalr_core.core.data import load_data
    from lalr_core.core.runs import ROOT_ENV

    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    spec = {"name": "digits", "n_train": 200, "n_test": 16}
    kw = {"width": 8, "steps": 5, "lr": 0.05, "seed": 7}
    cached = tr.cached_grid(spec, [1.0, 2.0], [2, 3], **kw)
    d = load_data(**spec)
    want = tr.trainability_grid(d.X_train.reshape(len(d.X_train), -1).float(), d.y_train,
                                [1.0, 2.0], [2, 3], **kw)
    np.testing.assert_array_equal(cached, want)

    def no_training(*a, **k):
        raise AssertionError("a cached row was trained again")

    monkeypatch.setattr(tr, "train_accuracies", no_training)
    np.testing.assert_array_equal(tr.cached_grid(spec, [1.0, 2.0], [2, 3], **kw), want)


def test_a_cell_without_its_seed_is_refused():
    X, y = _blobs(20)
    with pytest.raises(ValueError, match="one seed per cell"):
        tr.train_accuracies(X, y, width=4, depth=1, sigma_w2s=[1.0, 2.0], sigma_b2=0.05,
                            steps=1, lr=0.1, batch=4, seeds=[0])
