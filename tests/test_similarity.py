"""Cosine sets (eqs. 5.10-5.12, 4.56), random baselines (app. A) and the chapter-06 probes."""

import math

import numpy as np
import pytest
import torch

from lalr_core import orth_experiments as ox
from lalr_core.experiments import chapter_settings
from lalr_core.probes import FilterCosineProbe, RepresentationProbe, SymmetryProbe, ZeroGradProbe
from lalr_core.profiles import RunConfig
from lalr_core.similarity import (channel_similarity, five_numbers, pairwise_abs_cos,
                                  random_abs_cos_mean, random_cos_threshold, rowwise_cos)
from lalr_core.train import train


def test_pairwise_abs_cos_matches_explicit_loop():
    W = torch.randn(5, 2, 3, 3, generator=torch.Generator().manual_seed(0))
    rows = W.flatten(1).double()
    expected = [abs(float(rows[i] @ rows[j] / rows[i].norm() / rows[j].norm()))
                for i in range(5) for j in range(i + 1, 5)]
    np.testing.assert_allclose(pairwise_abs_cos(W).numpy(), expected, rtol=1e-12)


def test_channel_similarity_known_cases():
    h = torch.zeros(2, 3, 2, 2)
    h[0, 0, 0, 0] = h[0, 1, 0, 1] = h[0, 2, 1, 1] = 1.0   # sample 0: orthogonal channels
    h[1] = 1.0                                           # sample 1: identical channels
    np.testing.assert_allclose(channel_similarity(h).numpy(), [0.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError):
        channel_similarity(torch.zeros(2, 1, 3, 3))


def test_rowwise_cos_and_five_numbers():
    A = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    B = torch.tensor([[-2.0, 0.0], [0.0, 3.0]])
    np.testing.assert_allclose(rowwise_cos(A, B).numpy(), [-1.0, 1 / math.sqrt(2)], rtol=1e-12)
    assert five_numbers([1, 2, 3, 4, 5]) == {"min": 1, "q1": 2, "median": 3, "q3": 4, "max": 5,
                                             "mean": 3}


def test_random_baselines_closed_forms_and_monte_carlo():
    assert random_cos_threshold(10_000) == pytest.approx(0.1)         # eq. A.20 example
    assert random_abs_cos_mean(2) == pytest.approx(2 / math.pi)       # uniform angle
    assert random_abs_cos_mean(3) == pytest.approx(0.5)               # cos uniform on [-1, 1]
    x, y = torch.randn(2, 200_000, 50, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mc = torch.nn.functional.cosine_similarity(x, y, dim=1).abs()
    assert abs(mc.mean().item() - random_abs_cos_mean(50)) < 4 * mc.std().item() / math.sqrt(2e5)


TINY = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
            model="basic_cnn", batch_size=16, epochs=2, device="cpu", lr=0.01)


def test_probes_record_during_training():
    probes = [FilterCosineProbe(["conv2"], every=2), RepresentationProbe(["bn1", "bn3"], every=2),
              ZeroGradProbe("conv2"), SymmetryProbe("conv2", every=1, seed=3)]
    out = train(RunConfig(**TINY, grad_transform="orth"), callbacks=probes, progress=False)
    cb = out["callbacks"]
    steps = 2 * 64 // 16
    assert list(cb["filter_cos"]["step"]) == [0, 2, 4, 6, 8]
    assert cb["filter_cos"]["n_pairs"].iloc[0] == 32 * 31 // 2 and cb["filter_cos"]["fan_in"].iloc[0] == 288
    assert set(cb["representations"]["step"]) == {0, 2, 4, 6} and set(cb["representations"]["layer"]) == {"bn1", "bn3"}
    assert len(cb["representations"]) == 4 * 2 * 10   # 4 sampled batches x 2 layers x 10 samples
    assert list(cb["zero_grad"]["step"]) == list(range(1, steps + 1))
    assert (cb["zero_grad"]["below_eps"] >= cb["zero_grad"]["zero"]).all()
    sym = cb["symmetry"]
    assert sym["phi"].shape == (steps, 32) == sym["phi_perm"].shape and sym["fan_in"] == 288
    assert np.all(np.abs(sym["phi"]) <= 1 + 1e-9)


def test_symmetry_probe_last_sgd_step_points_at_the_solution():
    """Plain SGD (no momentum, no wd): theta_tau - theta_{tau-1} = -lr * g, so phi = -1."""
    out = train(RunConfig(**TINY, optimizer="sgd", wd=0.0), callbacks=[SymmetryProbe("conv2")],
                progress=False)
    np.testing.assert_allclose(out["callbacks"]["symmetry"]["phi"][-1], -1.0, atol=1e-6)


def test_orth_settings_resolve_and_builders_are_consistent():
    for profile in ("smoke", "quick", "paper"):
        s = chapter_settings("06", profile)
        suite = ox.suite_configs(s)
        assert len(suite) == len(s["suite_models"]) * 2 * s["seeds"]
        probes = ox.with_probes(s, suite)
        assert sum("representations" in p for p in probes) == 2 and sum("zero_grad" in p for p in probes) == 2
        t51 = ox.table51_configs(s)
        assert {n for n in t51 if not n.startswith("orth_")} >= {"sgdm", "adam", "sgdm_clip", "adam_clip"}
        assert all(c.grad_transform == "orth" for n, cs in t51.items() if n.startswith("orth_") for c in cs)
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
    import pandas as pd
    h = pd.DataFrame({"epoch": [1, 2, 3], "val_acc": [0.5, 0.79, 0.81]})
    assert ox.epochs_to_reach(h, 80) == 3 and np.isnan(ox.epochs_to_reach(h, 90))
    np.testing.assert_allclose(ox.running_mean([1, 2, 3, 4], 2), [1, 1.5, 2.5, 3.5])
    df = pd.DataFrame({"m": ["a", "a", "a"], "test_acc": [0.8, 0.9, 1.0], "test_loss": [1, 2, 3],
                       "diverged": [False] * 3})
    row = ox.mean_se(df, ["m"]).iloc[0]
    assert row["test_acc_mean"] == pytest.approx(90) and row["test_acc_se"] == pytest.approx(10 / math.sqrt(3))
