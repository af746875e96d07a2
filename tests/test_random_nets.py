"""Tests of lalr_core.methods.signal.random_nets (seed 003 secs. 1.2-1.4; chapter 07's E2, E4-E6).

Oracles: autograd (gradients and the Jacobian of a small net rebuilt from `sample_layers`),
exact facts (an orthogonal linear net is an isometry; the first circle's polygon length), the
mean-field predictions of `nngp` / `mean_field` with statistical tolerances sized from
repeated runs (stated at each test), and the sampling laws themselves."""

import numpy as np
import pytest
import torch

from lalr_core.methods.signal import mean_field as mf
from lalr_core.methods.signal import nngp as ng
from lalr_core.methods.signal import random_nets as rn

pytestmark = pytest.mark.usefixtures("one_thread")   # QR / SVD stall with threads on 2 cores


def at_q_star(net, n, width, seed=0):
    q = ng.q_fixed_point(net.activation, net.sigma_w2, net.sigma_b2)
    return rn.inputs_at_length(n, width, q, net, seed=seed)


# ----------------------------------------------------------------------------- sampling
def test_sampling_laws_and_reproducibility():
    """Gaussian weights have variance ``sigma_w2 / fan_in``, biases ``sigma_b2``; square
    orthogonal weights satisfy ``W W^T = sigma_w2 I``; rectangular ones keep ``E|W v|^2``;
    the same seed gives the same layers; the inputs' stream is not the weights'."""
    net = rn.RandomNet("tanh", 2.0, 0.5)
    (W, b), = rn.sample_layers(net, [400, 300], seeds=2, seed=3)
    assert W.shape == (2, 300, 400) and b.shape == (2, 300)
    assert float(W.var() * 400) == pytest.approx(2.0, rel=0.01)           # SE ~0.1%
    assert float(b.var()) == pytest.approx(0.5, rel=0.1)                  # SE ~2.6%
    (W2, b2), = rn.sample_layers(net, [400, 300], seeds=2, seed=3)
    assert torch.equal(W, W2) and torch.equal(b, b2)
    orth = rn.RandomNet("linear", 1.5, 0.0, init="orthogonal")
    for n_out, n_in in ((50, 50), (80, 30), (30, 80)):
        (W, _), = rn.sample_layers(orth, [n_in, n_out], seeds=3)
        small = min(n_out, n_in)
        G = W @ W.transpose(-2, -1) if n_out <= n_in else W.transpose(-2, -1) @ W
        scale = 1.5 * max(n_out, n_in) / n_in if n_out >= n_in else 1.5
        torch.testing.assert_close(G, scale * torch.eye(small, dtype=G.dtype).expand_as(G))
    x = rn.inputs_at_length(3, 400, 1.0, net)
    (W, _), = rn.sample_layers(net, [400, 300])
    cos = (W[0, :3] @ x.T).abs() / (W[0, :3].norm(dim=1, keepdim=True) * x.norm(dim=1))
    assert float(cos.max()) < 0.3                     # one stream would give cosines of 1


def test_inputs_at_length_sets_first_layer_length():
    net = rn.RandomNet("tanh", 2.0, 0.3)
    x = rn.inputs_at_length(5, 64, 1.1, net, seed=1)
    torch.testing.assert_close(x.square().sum(1) / 64,
                               torch.full((5,), 0.4, dtype=torch.float64))
    assert torch.equal(x, rn.inputs_at_length(5, 64, 1.1, net, seed=1))
    assert float(rn.inputs_at_length(2, 8, 0.3, net).abs().max()) == 0.0


# ----------------------------------------------------------------------------- forward
def test_propagation_matches_the_q_and_c_maps():
    """Wide tanh net (N = 1000, 10 layers, 6 nets, 4 inputs at ``q^1 = 1.5``, chaotic): the
    mean ``q^l`` within 4% of `nngp.nngp_kernel`'s diagonal at every layer (spread measured
    over 40 nets: 4.8% for one net and input, ``~sqrt(2/N)``; 2.5% for one net's mean over
    its inputs, so ~1% here), every single ``q^l`` within 30%; the mean correlation within
    0.05 (per-net spread ~0.03 from ``O(1/sqrt N)`` noise carried along a c-map contracting
    at ``chi_c = 0.92``)."""
    net = rn.RandomNet("tanh", 2.5, 0.05)
    x = rn.inputs_at_length(4, 1000, 1.5, net)
    prop = rn.propagate(x, 10, net, seeds=6)
    K = ng.nngp_kernel(x.numpy(), 9, "tanh", 2.5, 0.05)
    q_th = np.diagonal(K, axis1=1, axis2=2)                               # (10, 4)
    np.testing.assert_allclose(prop.q.mean(dim=(0, 2)).numpy(), q_th[:, 0], rtol=0.04)
    np.testing.assert_allclose(prop.q.numpy(), np.broadcast_to(q_th, (6, 10, 4)), rtol=0.3)
    c_th = K / np.sqrt(q_th[:, :, None] * q_th[:, None, :])
    iu = np.triu_indices(4, 1)
    gap = prop.c.mean(0).numpy()[:, iu[0], iu[1]] - c_th[:, iu[0], iu[1]]
    assert np.abs(gap.mean(axis=1)).max() < 0.05
    assert prop.c.shape == (6, 10, 4, 4)


def test_ordered_phase_correlations_go_to_one():
    """Ordered (chi_1 = 0.76): two inputs at c^1 ~ 0 become identical (c^l -> 1)."""
    net = rn.RandomNet("tanh", 1.0, 0.05)
    prop = rn.propagate(at_q_star(net, 2, 300), 30, net, seeds=2)
    assert float(prop.c[:, 0, 0, 1].abs().max()) < 0.6
    assert float(prop.c[:, -1, 0, 1].min()) > 0.999


def test_linear_net_kernel_is_unbiased():
    """A linear net's ``K^l`` is unbiased for the kernel at any width: 200 nets of width 20,
    every entry within 4 standard errors."""
    net = rn.RandomNet("linear", 0.9, 0.2)
    x = torch.randn(3, 20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    prop = rn.propagate(x, 4, net, seeds=200)
    K = ng.nngp_kernel(x.numpy(), 3, "linear", 0.9, 0.2)
    se = prop.K.std(0).numpy() / np.sqrt(200)
    assert np.all(np.abs(prop.K.mean(0).numpy() - K) < 4 * se)


# ----------------------------------------------------------------------------- backward
@pytest.mark.parametrize("activation,init", [("tanh", "gaussian"), ("relu", "orthogonal")])
def test_gradient_norms_match_autograd(activation, init):
    """Hand backprop equals autograd on the same nets (rebuilt from `sample_layers`)."""
    net = rn.RandomNet(activation, 1.7, 0.1, init=init)
    d, N, L = 5, 7, 3
    x = torch.randn(1, d, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y = torch.tensor([0.3], dtype=torch.float64)
    got = rn.gradient_norms(x, L, net, targets=y, width=N, seeds=2, seed=4)
    layers = [(W.requires_grad_(), b.requires_grad_())
              for W, b in rn.sample_layers(net, [d] + [N] * L + [1], seeds=2, seed=4)]
    a = x.expand(2, 1, d)
    for i, (W, b) in enumerate(layers):
        h = a @ W.transpose(-2, -1) + b.unsqueeze(-2)
        a = h if i == L else (torch.tanh(h) if activation == "tanh" else torch.relu(h))
    loss = ((a.squeeze(-1) - y) ** 2 / 2).sum()                      # independent nets
    grads = torch.autograd.grad(loss, [t for layer in layers[:L] for t in layer])
    for lay in range(L):
        gW, gb = grads[2 * lay], grads[2 * lay + 1]
        torch.testing.assert_close(got.weight_sq[:, lay, 0], gW.square().sum(dim=(-2, -1)))
        torch.testing.assert_close(got.delta_sq[:, lay, 0], gb.square().mean(-1))


@pytest.mark.parametrize("sw", [1.0, 1.7609546396, 4.0])
def test_gradients_scale_like_chi1_per_layer(sw):
    """E4 in small (N = 256, L = 20, 8 inputs at ``q*``, 3 nets): the fitted slope of
    ``log q~^l`` in ``l`` is ``-log chi_1`` within 10% (measured within 6% over seeds), and
    ``|dL/dW^l|^2`` follows it for ``l >= 2``; at criticality the slope is ~0."""
    net = rn.RandomNet("tanh", sw, 0.05)
    g = rn.gradient_norms(at_q_star(net, 8, 256), 20, net, seeds=3)
    layers = np.arange(1, 21)
    slope = np.polyfit(layers, np.log(g.profile().numpy()), 1)[0]
    slope_w = np.polyfit(layers[1:], np.log(g.profile("weight_sq").numpy()[1:]), 1)[0]
    pred = mf.gradient_scaling("tanh", sw, 0.05, 20)
    expect = np.polyfit(layers, np.log(pred), 1)[0]
    if abs(expect) < 1e-3:
        assert abs(slope) < 0.02 and abs(slope_w) < 0.02
    else:
        assert slope == pytest.approx(expect, rel=0.1)
        assert slope_w == pytest.approx(expect, rel=0.1)


# ----------------------------------------------------------------------------- Jacobian
def test_orthogonal_linear_net_is_an_isometry():
    net = rn.RandomNet("linear", 1.0, 0.3, init="orthogonal")
    x = torch.randn(64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    js = rn.jacobian_singular_values(x, 12, net, seeds=2)
    torch.testing.assert_close(js.singular_values, torch.ones(2, 64, dtype=torch.float64))
    assert js.variance < 1e-20 and js.mean == pytest.approx(1.0)


def test_jacobian_matches_autograd():
    net = rn.RandomNet("tanh", 1.8, 0.1)
    x = torch.randn(6, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    js = rn.jacobian_singular_values(x, 3, net, width=9, seeds=1, seed=5)
    layers = list(rn.sample_layers(net, [6, 9, 9, 9], seed=5))

    def f(v):
        for W, b in layers:
            v = torch.tanh(W[0] @ v + b[0])
        return v

    J = torch.autograd.functional.jacobian(f, x)
    torch.testing.assert_close(js.singular_values[0], torch.linalg.svdvals(J))
    assert float(js.mean_sq_per_layer[0, -1]) == pytest.approx(float(J.square().sum() / 6))


def test_gaussian_linear_mean_square_singular_value():
    """Mean ``lambda = sigma_w2^L`` (1.2^10 = 6.19), N = 200, 4 nets: within 10% (per-net
    spread ~5%); the layer-by-layer means follow ``sigma_w2^l``."""
    net = rn.RandomNet("linear", 1.2, 0.0)
    x = torch.ones(200, dtype=torch.float64)
    js = rn.jacobian_singular_values(x, 10, net, seeds=4)
    assert js.mean == pytest.approx(1.2 ** 10, rel=0.1)
    np.testing.assert_allclose(js.mean_sq_per_layer.mean(0).numpy(), 1.2 ** np.arange(1, 11),
                               rtol=0.1)


def test_jacobian_spread_matches_free_probability():
    """At ``chi_1 = 1``, depth 8, N = 300: Gaussian linear ``var(lambda) = L = 8`` within 25%
    (measured 8.0-9.0); orthogonal tanh near ``q* = 0`` within 15% of its tiny prediction
    (0.034; measured 0.034-0.036), i.e. ~200x better conditioned than Gaussian."""
    lin = rn.RandomNet("linear", 1.0, 0.0)
    x = torch.ones(300, dtype=torch.float64)
    _, var_pred = mf.jacobian_spectrum_moments("linear", 1.0, 0.0, 8)
    assert rn.jacobian_singular_values(x, 8, lin, seeds=2).variance == pytest.approx(
        var_pred, rel=0.25)
    sw, sb = 1.05, 2e-5
    orth = rn.RandomNet("tanh", sw, sb, init="orthogonal")
    js = rn.jacobian_singular_values(at_q_star(orth, 1, 300)[0], 8, orth, seeds=2)
    mean_pred, var_pred = mf.jacobian_spectrum_moments("tanh", sw, sb, 8, "orthogonal")
    assert js.variance == pytest.approx(var_pred, rel=0.15)
    assert js.mean == pytest.approx(mean_pred, rel=0.05)


# ----------------------------------------------------------------------------- curves
@pytest.mark.parametrize("sw", [1.0, 4.0])
def test_curve_length_scales_like_sqrt_chi1_per_layer(sw):
    """E5 in small (N = 300, L = 8, 400 points, 2 nets): the log-length slope is
    ``log(chi_1)/2`` within 15% (measured within 7%): shrinking when ordered (sigma_w2 = 1),
    growing when chaotic (sigma_w2 = 4). Layer 0 is the exact polygon on the circle."""
    net = rn.RandomNet("tanh", sw, 0.05)
    d = mf.depth_scales("tanh", sw, 0.05)
    cl = rn.great_circle_lengths(8, net, 300, n_theta=400, seeds=2, keep_layers=(0, 8))
    n = 400
    exact0 = 2 * n * np.sin(np.pi / n) * np.sqrt(300 * d.q_star)
    torch.testing.assert_close(cl.lengths[:, 0], torch.full((2,), exact0, dtype=torch.float64))
    slope = np.polyfit(np.arange(9), np.log(cl.relative().numpy()), 1)[0]
    assert slope == pytest.approx(np.log(d.chi1) / 2, rel=0.15)
    assert (slope < 0) == (d.chi1 < 1)
    assert cl.kept[8].shape == (2, 400, 300) and set(cl.kept) == {0, 8}


def test_float32_flag():
    net64, net32 = rn.RandomNet("tanh", 2.0, 0.1), rn.RandomNet("tanh", 2.0, 0.1, float64=False)
    x = torch.randn(3, 50, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    p64, p32 = rn.propagate(x, 5, net64), rn.propagate(x, 5, net32)
    assert p32.K.dtype == torch.float32
    torch.testing.assert_close(p32.K.double(), p64.K, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- bad input
NET = rn.RandomNet()
X = torch.ones(2, 4, dtype=torch.float64)


@pytest.mark.parametrize("kw,match", [
    ({"activation": "gelu"}, "activation"), ({"init": "xavier"}, "init"),
    ({"sigma_w2": -1.0}, "sigma_w2"), ({"sigma_b2": float("nan")}, "sigma_b2"),
    ({"sigma_w2": True}, "sigma_w2"), ({"float64": 1}, "float64")])
def test_bad_net_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        rn.RandomNet(**kw)


@pytest.mark.parametrize("call,match", [
    (lambda: rn.propagate(torch.ones(4), 3, NET), "x must"),
    (lambda: rn.propagate(torch.tensor([[1.0, float("inf")]]), 3, NET), "x must"),
    (lambda: rn.propagate(X, 0, NET), "depth"),
    (lambda: rn.propagate(X, 2, NET, width=0), "width"),
    (lambda: rn.propagate(X, 2, NET, seeds=0), "seeds"),
    (lambda: rn.propagate(X, 2, NET, seed=-1), "seed"),
    (lambda: rn.propagate(X, 2, "tanh"), "RandomNet"),
    (lambda: rn.gradient_norms(X, 2, NET, targets=torch.ones(3)), "targets"),
    (lambda: rn.jacobian_singular_values(X, 2, NET), "x must"),
    (lambda: rn.great_circle_lengths(3, NET, 8, keep_layers=(4,)), "keep_layers"),
    (lambda: rn.great_circle_lengths(3, NET, 8, n_theta=2), "n_theta"),
    (lambda: rn.great_circle_lengths(3, NET, 8, q0=-1.0), "q0"),
    (lambda: rn.great_circle_lengths(3, NET, None), "width"),
    (lambda: rn.sample_layers(NET, [4]), "widths"),
    (lambda: rn.inputs_at_length(2, 4, -0.1, NET), "q must"),
    (lambda: rn.inputs_at_length(2, 4, 1.0, rn.RandomNet(sigma_w2=0.0)), "sigma_w2 = 0"),
])
def test_bad_arguments_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()
