"""Orthogonalisation, the optimiser wrapper and LARS against explicit computations."""

import math

import pytest
import torch

from lalr_core.methods import orthogonal as orth
from lalr_core.core.models import build_model
from lalr_core.core.config import RunConfig
from lalr_core.core.train import make_optimizer

SHAPES = [(16, 3, 3, 3), (16, 16, 3, 3), (64, 32, 3, 3), (10, 64), (32, 9), (200, 5)]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gives_orthonormal_rows_or_columns_in_float32(shape):
    G = torch.randn(shape, generator=_gen())
    O = orth.orthogonalise(G, "svd")
    assert O.shape == G.shape and O.dtype == torch.float32
    M = O.flatten(1)
    small = min(M.shape)
    gram = M @ M.T if M.shape[0] <= M.shape[1] else M.T @ M
    torch.testing.assert_close(gram, torch.eye(small), atol=1e-5, rtol=0)


def test_svd_is_the_nearest_orthogonal_matrix():
    """Polar factor oracle: O = G (G^T G)^(-1/2) for full-column-rank G (eq. 5.7)."""
    G = torch.randn(40, 12, generator=_gen(1), dtype=torch.float64)
    evals, evecs = torch.linalg.eigh(G.T @ G)
    expected = G @ evecs @ torch.diag(evals.rsqrt()) @ evecs.T
    torch.testing.assert_close(orth.orthogonalise(G), expected, atol=1e-10, rtol=0)
    # and it beats random orthogonal matrices in Frobenius distance (eq. 5.5)
    for seed in range(5):
        Q, _ = torch.linalg.qr(torch.randn(40, 12, generator=_gen(seed), dtype=torch.float64))
        assert (expected - G).norm() <= (Q - G).norm()


@pytest.mark.parametrize("shape", SHAPES)
def test_newton_schulz_keeps_singular_vectors_and_maps_values_by_the_polynomial(shape):
    G = torch.randn(shape, generator=_gen(2), dtype=torch.float64)
    M = G.flatten(1)
    U, S, Vh = torch.linalg.svd(M, full_matrices=False)
    expected = U @ torch.diag(orth.ns_singular_value_map(S / M.norm())) @ Vh
    got = orth.orthogonalise(G, "newton_schulz").flatten(1)
    torch.testing.assert_close(got, expected, atol=1e-8, rtol=1e-6)


def test_newton_schulz_singular_values_lie_in_the_documented_band():
    for shape in [(16, 144), (64, 576), (576, 64), (10, 64)]:
        G = torch.randn(shape, generator=_gen(3))
        s = torch.linalg.svdvals(orth.orthogonalise(G, "newton_schulz"))
        assert 0.681 <= s.min() and s.max() <= 1.135 + 1e-4, (shape, s.min(), s.max())
    x = torch.linspace(0.01, 1, 1000, dtype=torch.float64)
    band = orth.ns_singular_value_map(x)
    assert 0.681 <= band.min() and band.max() <= 1.135


def test_normalisations_match_hand_computation():
    G = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    torch.testing.assert_close(orth.normalise(G), G / math.sqrt(29))
    torch.testing.assert_close(orth.component_normalise(G), torch.tensor([[.6, .8], [0., 1.]]))
    assert torch.isnan(orth.component_normalise(torch.tensor([[0.0, 0.0], [1.0, 0.0]]))).any()


def test_bad_inputs_raise_before_compute():
    with pytest.raises(ValueError, match="unknown orthogonalisation method"):
        orth.orthogonalise(torch.randn(3, 3), "qr")
    with pytest.raises(ValueError, match=">= 2 dims"):
        orth.orthogonalise(torch.randn(3), "svd")
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="ndim >= 2"):
        orth.GradientTransform(opt, [model.bn1.weight])
    with pytest.raises(ValueError, match="not held"):
        orth.GradientTransform(opt, [torch.nn.Parameter(torch.randn(3, 3))])
    with pytest.raises(ValueError, match="unknown gradient transform"):
        orth.GradientTransform(opt, [model.conv1.weight], transform="whiten")
    with pytest.raises(ValueError, match="unknown layer rule"):
        orth.select_params(model, "dense")
    with pytest.raises(ValueError, match="grad_transform"):
        RunConfig(methods=(orth.GradTransform("orthogonal"),))
    with pytest.raises(ValueError, match="bad settings for method 'grad_transform'"):
        RunConfig(methods=({"kind": "grad_transform", "orth_method": "svd"},))
    with pytest.raises(ValueError, match="orth method"):
        orth.GradTransform("orth", method="qr")


def test_select_params_rules():
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    assert orth.select_params(model, "all") == ["conv1.weight", "conv2.weight", "conv3.weight",
                                                "fc.weight"]
    assert orth.select_params(model, "conv") == ["conv1.weight", "conv2.weight", "conv3.weight"]
    assert orth.select_params(model, "all", prefix="conv2") == ["conv2.weight"]


def _steps(cfg: RunConfig, model, X, y, n=1):
    opt = make_optimizer(cfg, model)
    for _ in range(n):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    return opt


def test_disabled_wrapper_steps_exactly_as_the_plain_optimiser():
    X, y = torch.randn(8, 1, 28, 28, generator=_gen(4)), torch.arange(8) % 10
    for optimizer in ("sgdm", "adam", "adamw"):
        cfg = RunConfig(model="basic_cnn", optimizer=optimizer, lr=0.05, wd=1e-3)
        torch.manual_seed(0)
        a = build_model("basic_cnn", in_channels=1, image_size=28)
        b = build_model("basic_cnn", in_channels=1, image_size=28)
        b.load_state_dict(a.state_dict())
        _steps(cfg, a, X, y, n=2)
        plain = {"sgdm": torch.optim.SGD(b.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3),
                 "adam": torch.optim.Adam(b.parameters(), lr=0.05, weight_decay=1e-3),
                 "adamw": torch.optim.AdamW(b.parameters(), lr=0.05, weight_decay=1e-3)}[optimizer]
        for _ in range(2):
            plain.zero_grad()
            torch.nn.functional.cross_entropy(b(X), y).backward()
            plain.step()
        for pa, pb in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(pa, pb, rtol=0, atol=0)


def test_orth_sgdm_step_matches_eqs_5_8_and_5_9_with_coupled_weight_decay():
    """One step: v = O + wd*theta (buffer initialised to d_p), theta -= lr*v; biases untouched."""
    X, y = torch.randn(8, 1, 28, 28, generator=_gen(5)), torch.arange(8) % 10
    torch.manual_seed(1)
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    ref = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss = torch.nn.functional.cross_entropy(model(X), y)
    grads = dict(zip(ref, torch.autograd.grad(loss, list(model.parameters()))))
    model.zero_grad()
    cfg = RunConfig(model="basic_cnn", optimizer="sgdm", lr=0.1, momentum=0.9, wd=1e-2,
                    methods=(orth.GradTransform("orth", layers="conv"),))
    _steps(cfg, model, X, y)
    for name, p in model.named_parameters():
        g = grads[name]
        if name.startswith("conv") and name.endswith("weight"):
            U, _, Vh = torch.linalg.svd(g.flatten(1), full_matrices=False)
            g = (U @ Vh).reshape(g.shape)
        torch.testing.assert_close(p.detach(), ref[name] - 0.1 * (g + 1e-2 * ref[name]),
                                   atol=1e-6, rtol=1e-5)


def test_grouped_transform_is_per_layer_not_across_layers():
    """Same-shaped tensors are stacked for speed; each must still be orthogonalised alone."""
    a, b = torch.nn.Parameter(torch.zeros(4, 6)), torch.nn.Parameter(torch.zeros(4, 6))
    opt = torch.optim.SGD([a, b], lr=1.0)
    wrapper = orth.GradientTransform(opt, [a, b])
    ga, gb = torch.randn(4, 6, generator=_gen(6)), 100 * torch.randn(4, 6, generator=_gen(7))
    a.grad, b.grad = ga.clone(), gb.clone()
    wrapper.transform_grads()
    torch.testing.assert_close(a.grad, orth.orthogonalise(ga))
    torch.testing.assert_close(b.grad, orth.orthogonalise(gb))


def test_svd_failure_falls_back_per_tensor_and_continues(monkeypatch):
    params = [torch.nn.Parameter(torch.zeros(4, 6)) for _ in range(3)]
    opt = torch.optim.SGD(params, lr=1.0)
    wrapper = orth.GradientTransform(opt, params)
    grads = [torch.randn(4, 6, generator=_gen(i)) for i in range(3)]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    real_svd, calls = torch.linalg.svd, {"n": 0}

    def flaky(M, full_matrices=True):
        calls["n"] += 1
        if M.ndim == 3 or torch.equal(M.float().mT, grads[1]):  # batched call and tensor 1 fail
            raise torch.linalg.LinAlgError("did not converge")
        return real_svd(M, full_matrices=full_matrices)

    monkeypatch.setattr(torch.linalg, "svd", flaky)
    with pytest.warns(RuntimeWarning, match="Newton-Schulz"):
        wrapper.transform_grads()
    monkeypatch.setattr(torch.linalg, "svd", real_svd)
    torch.testing.assert_close(params[0].grad, orth.orthogonalise(grads[0]))
    torch.testing.assert_close(params[2].grad, orth.orthogonalise(grads[2]))  # not skipped
    torch.testing.assert_close(params[1].grad, orth.newton_schulz(grads[1]))
    assert wrapper.stats["svd_fallbacks"] == 1 and wrapper.stats["skipped_tensors"] == 0


def test_lars_step_matches_hand_computation():
    w = torch.nn.Parameter(torch.tensor([[3.0, 4.0]]))
    b = torch.nn.Parameter(torch.tensor([1.0]))
    opt = orth.LARS([{"params": [w]}, {"params": [b], "exclude": True}], lr=0.5, momentum=0.9,
                    wd=0.1, eta=0.01)
    w.grad, b.grad = torch.tensor([[1.0, 0.0]]), torch.tensor([2.0])
    opt.step()
    d = torch.tensor([[1.3, 0.4]])
    expected_w = torch.tensor([[3.0, 4.0]]) - 0.5 * d * 0.01 * 5.0 / d.norm()
    torch.testing.assert_close(w.detach(), expected_w)
    torch.testing.assert_close(b.detach(), torch.tensor([0.0]))  # excluded: plain momentum SGD
    with pytest.raises(ValueError):
        orth.LARS([w], lr=-1)
