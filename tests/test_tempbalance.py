"""Layer-wise lr allocation (seed 001 eqs. 2.13, 2.16-2.22, 2.26-2.31) and LayerLR groups."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.core.models.networks import build_model
from lalr_core.methods.layer_lr.tempbalance import (
    SCHEMES,
    SUM_PRESERVING,
    LayerLR,
    allocate,
    layer_groups,
    neg_pow2_probs,
)

ALPHAS = np.array([2.0, 4.0, 3.0, 8.0])  # 4 layers, distinct; ranks 0, 2, 1, 3
LR = 0.1


def _rng_params(scheme, seed=0):
    return {"rng": np.random.default_rng(seed)} if scheme in ("gauss_alpha", "gauss_lr", "exp",
                                                             "emg") else {}


# ----------------------------------------------------------------------------- hand computations
@pytest.mark.parametrize("scheme, params, g", [
    ("eq2.13", {}, [2, 4, 3, 8]),                           # eq. 2.13, sum 17
    ("power", {"p": 2}, [4, 16, 9, 64]),                    # eq. 2.16, sum 93
    ("power", {"p": 3}, [8, 64, 27, 512]),                  # eq. 2.17, sum 611
    ("root", {"k": 2}, [2**0.5, 2, 3**0.5, 8**0.5]),        # eq. 2.18
    ("log", {}, [1, 2, math.log2(3), 3]),                   # eq. 2.18 text, log2
    ("softmax", {}, [math.exp(a) for a in ALPHAS]),         # eq. 2.19
])
def test_weighted_schemes_match_hand_computation(scheme, params, g):
    g = np.array(g, dtype=float)
    expected = LR * 4 * g / g.sum()
    np.testing.assert_allclose(allocate(ALPHAS, LR, scheme, **params), expected, rtol=1e-12)


def test_eq2_13_literal_numbers():
    np.testing.assert_allclose(allocate([2.0, 3.0, 5.0], 0.1), [0.06, 0.09, 0.15], rtol=1e-12)


def test_tb_linear_hand_computation():
    # alpha in [2, 8] -> lr in [0.05, 0.15]: (a - 2) / 6 of the way
    expected = [0.05, 0.05 + 0.1 * 2 / 6, 0.05 + 0.1 / 6, 0.15]
    np.testing.assert_allclose(allocate(ALPHAS, LR, "tb_linear"), expected, rtol=1e-12)
    np.testing.assert_allclose(allocate(ALPHAS, LR, "tb_linear", lr_min_ratio=0.7,
                                        lr_max_ratio=1.3),
                               np.interp(ALPHAS, [2, 8], [0.07, 0.13]), rtol=1e-12)
    np.testing.assert_allclose(allocate([3.0, 3.0], LR, "tb_linear"), [LR, LR])


def test_neg_pow2_vector_and_assignment():
    np.testing.assert_allclose(neg_pow2_probs(4), [1 / 16, 1 / 8, 1 / 4, 1 / 2 + 1 / 16])  # 2.20-21
    assert neg_pow2_probs(19).sum() == pytest.approx(1.0, abs=1e-15)
    # eq. 2.22: j-th smallest alpha gets NegPow2[j]; ALPHAS ranks are 0, 2, 1, 3
    np.testing.assert_allclose(allocate(ALPHAS, LR, "neg_pow2"),
                               LR * 4 * np.array([1 / 16, 1 / 4, 1 / 8, 9 / 16]), rtol=1e-12)
    lrs = allocate(np.linspace(2, 6, 19), 1.0, "neg_pow2")  # E-2.5's counts for n = 19
    assert (lrs < 0.1).sum() == 12 and (lrs < 0.01).sum() == 9
    assert lrs.max() == pytest.approx(9.5, abs=1e-4)


def test_gauss_alpha_hand_computation():
    y = ALPHAS + np.random.default_rng(3).normal(0, 1, 4)  # eq. 2.26
    y = np.maximum(y, 1e-3)
    np.testing.assert_allclose(allocate(ALPHAS, LR, "gauss_alpha", rng=np.random.default_rng(3)),
                               LR * 4 * y / y.sum(), rtol=1e-12)   # eq. 2.27, normalised


def test_gauss_lr_hand_computation():
    x = LR + np.random.default_rng(5).normal(0, 1, 4)      # eq. 2.28
    w = np.sort(np.log1p(np.exp(x)))
    w = w / w.sum()
    expected = LR * 4 * w[[0, 2, 1, 3]]                     # eq. 2.29 by alpha rank
    got = allocate(ALPHAS, LR, "gauss_lr", rng=np.random.default_rng(5))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_emg_hand_computation():
    rng = np.random.default_rng(7)
    excess = np.mean(ALPHAS - 1)                            # 1 / nu
    a = 1 + rng.exponential(excess, 4) + rng.normal(0, 1, 4)  # eqs. 2.30-2.31
    w = np.sort(np.maximum(a, 1e-3))
    expected = LR * 4 * (w / w.sum())[[0, 2, 1, 3]]
    got = allocate(ALPHAS, LR, "emg", rng=np.random.default_rng(7))
    np.testing.assert_allclose(got, expected, rtol=1e-12)


# ----------------------------------------------------------------------------- properties
@pytest.mark.parametrize("scheme", SUM_PRESERVING)
def test_sum_preserved(scheme):
    lrs = allocate(ALPHAS, LR, scheme, **_rng_params(scheme))
    assert lrs.sum() == pytest.approx(4 * LR, rel=1e-12)
    assert np.all(lrs >= 0)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_larger_alpha_gets_larger_lr(scheme):
    lrs = allocate(ALPHAS, LR, scheme, **_rng_params(scheme))
    order = np.argsort(ALPHAS)
    if scheme == "uniform":
        np.testing.assert_allclose(lrs, LR)
    elif scheme == "gauss_alpha":  # noisy around alpha: check the expectation instead
        mean = np.mean([allocate(ALPHAS, LR, scheme, rng=np.random.default_rng(s))
                        for s in range(200)], axis=0)
        assert np.all(np.diff(mean[order]) > 0)
    else:
        assert np.all(np.diff(lrs[order]) >= 0)


def test_equal_alphas_give_lr_t_for_weighted_schemes():
    for scheme in ("eq2.13", "power", "root", "log", "softmax"):
        np.testing.assert_allclose(allocate([3.0] * 5, LR, scheme), LR, rtol=1e-12)


@pytest.mark.parametrize("scheme", ["gauss_alpha", "gauss_lr", "exp", "emg"])
def test_sampling_reproducible_with_seeded_generator(scheme):
    a = allocate(ALPHAS, LR, scheme, rng=np.random.default_rng(11))
    b = allocate(ALPHAS, LR, scheme, rng=np.random.default_rng(11))
    c = allocate(ALPHAS, LR, scheme, rng=np.random.default_rng(12))
    t1 = allocate(ALPHAS, LR, scheme, rng=torch.Generator().manual_seed(11))
    t2 = allocate(ALPHAS, LR, scheme, rng=torch.Generator().manual_seed(11))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(t1, t2)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("call", [
    lambda: allocate(ALPHAS, LR, "nope"),
    lambda: allocate(ALPHAS, LR, "power", q=2),
    lambda: allocate(ALPHAS, LR, "eq2.13", p=2),
    lambda: allocate(np.ones((2, 2)), LR),
    lambda: allocate([], LR),
    lambda: allocate([1.0, np.nan], LR),
    lambda: allocate(ALPHAS, -0.1),
    lambda: allocate([0.0, 2.0], LR, "power"),
    lambda: allocate([0.9, 2.0], LR, "log"),
    lambda: allocate(ALPHAS, LR, "tb_linear", lr_min_ratio=2.0, lr_max_ratio=1.0),
    lambda: allocate(ALPHAS, LR, "gauss_alpha", rng=None),
    lambda: allocate(ALPHAS, LR, "gauss_lr", rng=np.random.default_rng(0), positive="abs"),
    lambda: allocate([0.5, 0.8], LR, "emg", rng=np.random.default_rng(0)),
])
def test_bad_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


# ----------------------------------------------------------------------------- LayerLR
def _small_cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                         nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 2))


def _assert_partition(model, ll):
    ids = [id(p) for ps in ll.params for p in ps] + [id(p) for p in ll.rest]
    assert len(ids) == len(set(ids))
    assert set(ids) == {id(p) for p in model.parameters()}


def test_layer_groups_small_cnn():
    model = _small_cnn()
    names, params, rest = layer_groups(model)
    assert names == ["0", "3", "7"] and rest == []
    assert [len(ps) for ps in params] == [4, 3, 2]      # conv w,b + bn w,b; conv w + bn; fc w,b
    assert params[0][2] is model[1].weight
    _assert_partition(model, LayerLR(model))
    ll = LayerLR(model, skip_first=True, skip_last=True)
    assert ll.names == ["3"] and len(ll.rest) == 6
    _assert_partition(model, ll)


def test_layer_groups_resnet20():
    model = build_model("resnet20")
    ll = LayerLR(model)
    assert ll.n_layers == 1 + 18 + 1                       # stem, 9 blocks x 2 convs, fc
    assert ll.names[1] == "layer1.0.conv1" and ll.rest == []
    assert any(p is model.layer1[0].bn1.bias for p in ll.params[1])
    _assert_partition(model, ll)
    opt = torch.optim.SGD(ll.param_groups(0.1), lr=0.1)
    ll.step(opt, np.linspace(2, 5, 20), 0.1, "root")
    assert sum(g["lr"] for g in opt.param_groups) == pytest.approx(20 * 0.1)


def test_sgd_step_with_layer_lrs_matches_hand_computation():
    model = _small_cnn().double()
    ll = LayerLR(model)
    opt = torch.optim.SGD(ll.param_groups(0.1)[::-1], lr=0.1)  # group order must not matter
    lrs = allocate([2.0, 3.0, 5.0], 0.1)                        # [0.06, 0.09, 0.15]
    ll.apply(opt, lrs)
    X = torch.randn(5, 1, 6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    model(X).square().sum().backward()
    before = {id(p): (p.detach().clone(), p.grad.clone()) for p in model.parameters()}
    opt.step()
    for lr, ps in zip(lrs, ll.params):
        for p in ps:
            w, g = before[id(p)]
            torch.testing.assert_close(p.detach(), w - lr * g, rtol=0, atol=1e-14)


def test_apply_rest_group_gets_default_lr():
    model = _small_cnn()
    ll = LayerLR(model, skip_last=True)
    opt = torch.optim.Adam(ll.param_groups(1e-3))
    ll.apply(opt, [1e-3, 2e-3], default_lr=5e-4)
    assert [g["lr"] for g in opt.param_groups] == [1e-3, 2e-3, 5e-4]


def test_step_aligns_named_alphas():
    model = _small_cnn()
    ll = LayerLR(model, skip_first=True)
    opt = torch.optim.SGD(ll.param_groups(0.1))
    named = pd.Series({"7": 5.0, "0": 9.0, "3": 3.0})   # any order, extra layer "0" ignored
    lrs = ll.step(opt, named, 0.1)
    np.testing.assert_allclose(lrs, [0.075, 0.125])
    assert [g["lr"] for g in opt.param_groups] == pytest.approx([0.075, 0.125, 0.1])
    with pytest.raises(ValueError):
        ll.step(opt, {"3": 3.0}, 0.1)


def test_apply_bad_inputs_raise():
    model = _small_cnn()
    ll = LayerLR(model)
    opt = torch.optim.SGD(ll.param_groups(0.1))
    for lrs in ([0.1, 0.1], [0.1, -0.1, 0.1], [0.1, np.inf, 0.1]):
        with pytest.raises(ValueError):
            ll.apply(opt, lrs)
    with pytest.raises(ValueError):  # one group for everything mixes layers
        ll.apply(torch.optim.SGD(model.parameters(), lr=0.1), [0.1] * 3)
    with pytest.raises(ValueError):  # layer "7" has no group
        ll.apply(torch.optim.SGD(ll.param_groups(0.1)[:2]), [0.1] * 3)
    with pytest.raises(ValueError):
        ll.step(opt, [2.0, 3.0], 0.1)
    with pytest.raises(ValueError):
        LayerLR(nn.Sequential(nn.ReLU()))
    assert [g["lr"] for g in opt.param_groups] == [0.1] * 3    # unchanged after failures


def test_name_rule_ties_norms_as_the_tempbalance_authors_do():
    """The authors' batchnorm_type='name': a BN joins the conv named like it with bn -> conv;
    a ResNet's shortcut BN and the BNs inside a Sequential (VGG) keep the global lr."""
    from lalr_core.core.models.networks import build_model
    from lalr_core.methods.layer_lr.tempbalance.groups import layer_groups
    net = build_model("resnet18_mini", in_channels=1, num_classes=10, width=0.25, image_size=8)
    modules = dict(net.named_modules())
    names, params, rest = layer_groups(net, skip_first=True, skip_last=True, norms="name")
    owner = {id(p): n for n, ps in zip(names, params) for p in ps}
    for name, m in modules.items():
        if not isinstance(m, nn.BatchNorm2d):
            continue
        conv = name.replace("bn", "conv")                  # the authors' mapping, literally
        want = conv if conv in names else None
        assert {owner.get(id(p)) for p in m.parameters()} == {want}, name
    assert owner.get(id(modules["layer2.0.shortcut.1"].weight)) is None
    assert owner[id(modules["layer2.0.bn1"].weight)] == "layer2.0.conv1"
    order = layer_groups(net, skip_first=True, skip_last=True, norms="order")
    assert order[0] == names                                  # same layers, other BN ties
    assert sum(map(len, order[1])) > sum(map(len, params))
    vgg = build_model("vgg_mini", in_channels=1, num_classes=10, width=0.25, image_size=8)
    n2, p2, r2 = layer_groups(vgg, norms="name")
    assert not any(isinstance(m, nn.BatchNorm2d) for m in vgg.modules()
                   if any(id(p) in {id(q) for ps in p2 for q in ps} for p in m.parameters()))
    with pytest.raises(ValueError, match="norms"):
        layer_groups(vgg, norms="nearest")
