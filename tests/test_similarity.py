"""Cosine sets (eqs. 5.10-5.12, 4.56) and random-vector baselines (app. A.1.4)."""

import math

import numpy as np
import pytest
import torch

from lalr_core.methods.similarity.cosine_sets import (
    channel_similarity,
    five_numbers,
    pairwise_abs_cos,
    random_abs_cos_mean,
    rowwise_cos,
)


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
    assert random_abs_cos_mean(2) == pytest.approx(2 / math.pi)       # uniform angle
    assert random_abs_cos_mean(3) == pytest.approx(0.5)               # cos uniform on [-1, 1]
    x, y = torch.randn(2, 200_000, 50, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mc = torch.nn.functional.cosine_similarity(x, y, dim=1).abs()
    assert abs(mc.mean().item() - random_abs_cos_mean(50)) < 4 * mc.std().item() / math.sqrt(2e5)
