"""Linear CKA (seed 001 eqs. 2.14-2.15) and activation capture."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.methods.similarity.cka import (
    centred_gram,
    cka,
    cka_matrix,
    collect_activations,
    hsic,
)
from lalr_core.core.models.networks import build_model


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


X, Y = _randn(30, 6, seed=0), _randn(30, 9, seed=1)


def test_hsic_form_equals_feature_form():
    n = X.shape[0]
    K, L = X @ X.T, Y @ Y.T
    expected = float(hsic(K, L) / torch.sqrt(hsic(K, K) * hsic(L, L)))   # eqs. 2.14-2.15
    assert cka(X, Y, "gram") == pytest.approx(expected, rel=1e-10)
    assert cka(X, Y, "feature") == pytest.approx(expected, rel=1e-10)
    H = torch.eye(n, dtype=torch.float64) - 1.0 / n
    torch.testing.assert_close(centred_gram(X), H @ K @ H)


def test_self_similarity_symmetry_and_range():
    assert cka(X, X) == pytest.approx(1.0, abs=1e-12)
    assert cka(X, Y) == pytest.approx(cka(Y, X), rel=1e-12)
    assert 0.0 <= cka(X, Y) <= 1.0


def test_invariance_to_orthogonal_transform_and_isotropic_scaling():
    Q, _ = torch.linalg.qr(_randn(6, 6, seed=2))
    assert cka(X @ Q, Y) == pytest.approx(cka(X, Y), rel=1e-10)
    assert cka(3.7 * X, Y) == pytest.approx(cka(X, Y), rel=1e-10)
    assert cka(X, X @ Q * 0.2) == pytest.approx(1.0, abs=1e-10)


def test_constant_representation_gives_nan():
    assert np.isnan(cka(torch.ones(5, 3), X[:5]))


def test_cka_matrix_flattens_and_is_symmetric():
    acts = {"a": X.reshape(30, 2, 3), "b": Y, "c": X @ X.new_ones(6, 1)}
    df = cka_matrix(acts)
    assert isinstance(df, pd.DataFrame) and list(df.index) == ["a", "b", "c"]
    np.testing.assert_allclose(df.values, df.values.T)
    np.testing.assert_allclose(np.diag(df.values), 1.0)
    assert df.loc["a", "b"] == pytest.approx(cka(X, Y), rel=1e-10)


@pytest.mark.parametrize("call", [
    lambda: cka(X[:, 0], Y),
    lambda: cka(X, Y[:10]),
    lambda: cka(X[:1], Y[:1]),
    lambda: cka(X, Y, method="rbf"),
    lambda: cka_matrix({}),
    lambda: cka_matrix({"a": X, "b": Y[:10]}),
    lambda: hsic(X, X),
])
def test_bad_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def test_collect_activations_resnet20():
    model = build_model("resnet20").train()
    inputs = torch.randn(6, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    names = ["conv1", "layer1.0.bn2", "layer3", "fc"]
    acts = collect_activations(model, inputs, names, batch_size=4)
    assert model.training                                        # mode restored
    assert [tuple(acts[k].shape) for k in names] == [(6, 16, 16, 16), (6, 16, 16, 16),
                                                     (6, 64, 4, 4), (6, 10)]
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(acts["fc"], model(inputs))
    assert not acts["fc"].requires_grad
    df = cka_matrix(acts)
    assert df.shape == (4, 4) and np.all((df.values > -1e-12) & (df.values < 1 + 1e-12))


def test_collect_activations_errors():
    model = nn.Sequential(nn.Linear(3, 3))
    with pytest.raises(ValueError):
        collect_activations(model, torch.randn(2, 3), ["nope"])
    relu = nn.ReLU()
    shared = nn.Sequential(relu, relu)
    with pytest.raises(ValueError):
        collect_activations(shared, torch.randn(2, 3), ["0"])
    assert list(collect_activations(model, torch.randn(2, 3))) == ["0"]
