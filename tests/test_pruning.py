"""Channel pruning (seed 001 Ch. 3): budgets, ERK, LAMP, ME-Prune eq. 3.1, masks."""

import math

import pytest
import torch

from lalr_core.methods.pruning.channel_masks import (
    apply_masks,
    prunable_layers,
    prune_channels,
    sparsity,
)
from lalr_core.core.models.networks import build_model
from lalr_core.methods.pruning.budgets import (
    channel_importance,
    erk_budgets,
    lamp_budgets,
    lamp_scores,
    layer_budgets,
    me_prune_scores,
    uniform_budgets,
)

SIZES = {"a": 100, "b": 400, "c": 1600, "d": 50}
METRIC = {"a": 3.1, "b": 2.2, "c": 5.0, "d": 4.0}


def _weighted(r, sizes):
    return sum(r[k] * sizes[k] for k in r) / sum(sizes.values())


@pytest.mark.parametrize("rule", ["direct", "inverse"])
@pytest.mark.parametrize("P", [0.0, 0.3, 0.5, 0.85])
def test_budgets_meet_target_within_one_step(rule, P):
    r = layer_budgets(METRIC, P, rule=rule, sizes=SIZES)
    assert all(0.0 <= x < 1.0 for x in r.values())
    assert all(abs(x / 0.01 - round(x / 0.01)) < 1e-6 for x in r.values())   # 0.01 grid
    assert P - 0.01 - 1e-9 <= _weighted(r, SIZES) <= P + 1e-9           # never over-prunes


def test_budget_direction_and_uniform_metric():
    direct = layer_budgets(METRIC, 0.5, rule="direct")
    inverse = layer_budgets(METRIC, 0.5, rule="inverse")
    order = sorted(METRIC, key=METRIC.get)
    assert [direct[k] for k in order] == sorted(direct.values())        # larger metric, more
    assert [inverse[k] for k in order] == sorted(inverse.values(), reverse=True)
    flat = layer_budgets(dict.fromkeys("abc", 1.0), 0.37)
    assert set(flat.values()) == {0.37} == set(uniform_budgets("abc", 0.37).values())


def test_literal_rule_without_budget_matching_under_prunes():
    # u = (0, 0, 1): P (0.5 + u) has mean 2P/3 < P -- the reason for match_budget=True
    r = layer_budgets({"a": 0.0, "b": 0.0, "c": 1.0}, 0.6, match_budget=False)
    assert r == {"a": 0.3, "b": 0.3, "c": 0.9}


def test_erk_closed_form_three_layers():
    shapes = {"conv1": (4, 2, 3, 3), "conv2": (8, 4, 3, 3), "fc": (10, 8)}
    n = {k: math.prod(s) for k, s in shapes.items()}
    N = sum(n.values())
    P = 0.6                                                  # no layer saturates here
    eps = (1 - P) * N / sum(sum(s) for s in shapes.values())
    r = erk_budgets(shapes, P)
    for k, s in shapes.items():
        assert r[k] == pytest.approx(1 - eps * sum(s) / n[k], abs=1e-12)
    # P = 0.3: conv1's and fc's densities would exceed 1 -> kept dense, conv2 takes the rest
    r = erk_budgets(shapes, 0.3)
    assert r["conv1"] == r["fc"] == 0.0
    assert r["conv2"] == pytest.approx(1 - (0.7 * N - n["conv1"] - n["fc"]) / n["conv2"])
    assert sum(r[k] * n[k] for k in n) / N == pytest.approx(0.3, abs=1e-12)


def test_lamp_scores_hand_example():
    w = torch.tensor([[1.0, -2.0], [3.0, 0.0]], dtype=torch.float64)
    # sorted squares 0, 1, 4, 9; tails 14, 14, 13, 9
    expected = torch.tensor([[1 / 14, 4 / 13], [1.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(lamp_scores(w), expected)
    torch.testing.assert_close(lamp_scores(torch.tensor([-1.0, 1.0])), torch.tensor([0.5, 0.5]))


def test_lamp_budgets_global_threshold():
    w = {"x": torch.tensor([1.0, 2.0, 3.0]), "y": torch.tensor([0.1, 0.2, 10.0])}
    # scores x: 1/14, 4/13, 1; y: 0.01/100.05, 0.04/100.04, 1 -> lowest 2 are both in y
    assert lamp_budgets(w, 0.4) == {"x": 0.0, "y": pytest.approx(2 / 3)}


def test_me_prune_eq_3_1_hand_example():
    theta = torch.tensor([[1.0, -2.0], [0.5, 4.0]]).reshape(2, 1, 1, 2)     # fan-in 2
    s = me_prune_scores(theta)
    torch.testing.assert_close(s, math.sqrt(6 / 2) / 4 * theta)             # eq. 3.1
    torch.testing.assert_close(channel_importance(theta, "me_prune"),
                               math.sqrt(3) / 4 * torch.tensor([3.0, 4.5]))
    torch.testing.assert_close(channel_importance(theta, "l1"), torch.tensor([3.0, 4.5]))


def _model():
    torch.manual_seed(0)
    model = build_model("basic_cnn", image_size=16)
    for m in model.modules():                       # non-trivial BN so beta would leak
        if isinstance(m, torch.nn.BatchNorm2d):
            torch.nn.init.normal_(m.weight)
            torch.nn.init.normal_(m.bias)
            m.running_mean.normal_()
    return model


@pytest.mark.parametrize("importance", ["l1", "me_prune"])
def test_pruned_channels_zero_and_stay_zero(importance):
    model = _model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    ratios = {"conv1": 0.25, "conv2": 0.5, "conv3": 0.75}
    pruned, masks = prune_channels(model, ratios, importance=importance)
    for k, v in model.state_dict().items():                             # original untouched
        torch.testing.assert_close(v, before[k])
    assert sparsity(pruned, masks, "channels") == pytest.approx((8 + 16 + 24) / 96)
    n = {"conv1": 3 * 32 * 9, "conv2": 32 * 32 * 9, "conv3": 32 * 32 * 9}  # weights per conv
    expected = sum(ratios[k] * n[k] for k in n) / sum(n.values())
    assert sparsity(pruned, masks) == pytest.approx(expected)
    outs = {}
    for name in ("bn1", "bn2", "bn3"):
        getattr(pruned, name).register_forward_hook(lambda m, i, o, n=name: outs.__setitem__(n, o))
    X, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))
    opt = torch.optim.SGD(pruned.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for _ in range(2):
        loss = torch.nn.functional.cross_entropy(pruned(X), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        apply_masks(pruned, masks)
    pruned.eval()
    assert torch.isfinite(pruned(X)).all()
    for conv, bn in (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3")):
        dead = masks[f"{conv}.weight"].reshape(32, -1)[:, 0] == 0
        assert int(dead.sum()) == int(ratios[conv] * 32)
        assert (getattr(pruned, conv).weight[dead] == 0).all()
        assert (getattr(pruned, conv).bias[dead] == 0).all()
        assert (outs[bn][:, dead] == 0).all()                           # channel output is 0
        kept = channel_importance(getattr(model, conv).weight, importance)
        assert kept[dead].max() <= kept[~dead].min()                    # lowest scores pruned


def test_prunable_layers_pairs_conv_with_bn():
    layers = prunable_layers(build_model("resnet20"))
    assert len(layers) == 19 and layers["layer2.0.conv2"][1] == "layer2.0.bn2"


@pytest.mark.parametrize("call", [
    lambda: layer_budgets({}, 0.5),
    lambda: layer_budgets({"a": float("nan")}, 0.5),
    lambda: layer_budgets(METRIC, 1.0),
    lambda: layer_budgets(METRIC, -0.1),
    lambda: layer_budgets(METRIC, 0.5, rule="sideways"),
    lambda: layer_budgets(METRIC, 0.5, step=0.0),
    lambda: layer_budgets(METRIC, 0.5, sizes={"a": 1}),
    lambda: layer_budgets(METRIC, 0.97),                                # above k_max = 0.95
    lambda: uniform_budgets([], 0.5),
    lambda: erk_budgets({"a": (4,)}, 0.5),
    lambda: erk_budgets({"a": (4, 4)}, 1.0),
    lambda: lamp_scores(torch.empty(0)),
    lambda: lamp_budgets({}, 0.5),
    lambda: me_prune_scores(torch.zeros(2, 3)),
    lambda: channel_importance(torch.ones(3), "l1"),
    lambda: channel_importance(torch.ones(3, 3), "l2"),
    lambda: prune_channels(_model(), {"fc": 0.5}),
    lambda: prune_channels(_model(), {"conv1": 1.0}),
    lambda: prune_channels(_model(), {"conv1": 0.5}, importance="random"),
    lambda: apply_masks(_model(), {"nope.weight": torch.ones(1)}),
    lambda: sparsity(_model(), {}, unit="flops"),
])
def test_bad_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


# ----------------------------------------------------------------------------- slimmed counts
def _chain():
    from torch import nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 4, 1, bias=False))


def test_slimmed_parameters_of_a_plain_chain_by_hand():
    from lalr_core.methods.pruning.channel_masks import slimmed_parameters
    model = _chain().eval()
    pruned, masks = prune_channels(model, {"0": 0.5, "3": 0.25})
    got = slimmed_parameters(pruned, masks, (3, 8, 8))
    # conv0 keeps 4 of 8 outputs; conv3 sees 4 live inputs, keeps 12 of 16 outputs; conv6
    # sees 12 live inputs (BN of a pruned channel is zeroed, so it outputs exactly 0).
    want = 4 * 3 * 9 + 12 * 4 * 9 + 4 * 12 * 1
    full = 8 * 3 * 9 + 16 * 8 * 9 + 4 * 16
    assert got == {"params": want, "full": full, "remaining": want / full}


def test_slimmed_parameters_unpruned_is_everything():
    from lalr_core.methods.pruning.channel_masks import slimmed_parameters
    model = _chain()
    got = slimmed_parameters(model, {}, (3, 8, 8))
    assert got["remaining"] == 1.0


def test_slimmed_parameters_residual_add_keeps_a_channel_alive():
    from lalr_core.methods.pruning.channel_masks import slimmed_parameters
    from lalr_core.core.models.networks import build_model
    torch.manual_seed(0)
    model = build_model("resnet18_mini", in_channels=1, num_classes=10, image_size=8)
    # pruning a block's conv2 does not kill the channel: the shortcut still carries it
    pruned, masks = prune_channels(model, {"layer1.0.conv2": 0.5})
    got = slimmed_parameters(pruned, masks, (1, 8, 8))
    c2 = pruned.layer1[0].conv2.weight
    assert got["full"] - got["params"] == c2.numel() // 2          # only conv2's own outputs


def test_increment_matches_the_sources_loop():
    from lalr_core.methods.pruning.budgets import EPS, _increment

    def loop(budgets, n, target, step):  # the source's procedure, literally (Ch. 3.2)
        r = torch.zeros_like(budgets)
        while (n * r).sum() < target * n.sum() - EPS:
            active = r + step <= budgets + EPS
            if not bool(active.any()):
                break
            r = torch.where(active, r + step, r)
        return r

    gen = torch.Generator().manual_seed(0)
    for _ in range(300):
        L = int(torch.randint(1, 30, (1,), generator=gen))
        k = torch.rand(L, generator=gen, dtype=torch.float64) * 0.95
        n = torch.randint(1, 10_000, (L,), generator=gen).double()
        target = float(torch.rand(1, generator=gen)) * 0.9
        for step in (0.01, 0.05):
            assert torch.allclose(_increment(k, n, target, step), loop(k, n, target, step),
                                  atol=1e-12, rtol=0)
