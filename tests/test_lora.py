"""LoRA adapters (`lalr_core.methods.pretrained.lora`): exactly the base layer at B = 0, a zero gradient
of A there, the dense layer W + s B A as oracle (an explicit matmul / F.conv2d
with the merged kernel), injection into TinyTF by exact names and patterns, merging, and the
errors."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.methods.pretrained.text.tinytf import TinyTFClassifier, TinyTFConfig
from lalr_core.methods.pretrained.lora import (
    LoRAConv2d,
    LoRALinear,
    inject_lora,
    lora_modules,
    lora_transform,
    merge_lora,
)

TINY = TinyTFConfig(d_model=8, n_heads=2, n_blocks=2, d_ff=16, max_len=12)
CONV = {"stride": 2, "padding": 1, "dilation": 2}


def _linear():
    torch.manual_seed(0)
    return nn.Linear(5, 3).double()


def _conv():
    torch.manual_seed(0)
    return nn.Conv2d(3, 4, kernel_size=3, **CONV).double()


def _randomise_b(adapter):
    with torch.no_grad():
        adapter.lora_B.normal_()


def _tokens(n=6, T=10):
    g = torch.Generator().manual_seed(1)
    x = torch.randint(1, 64, (n, T), generator=g)
    x[:, -2:] = 0  # some padding
    return x


@pytest.mark.parametrize("make, x_shape", [(_linear, (7, 5)), (_conv, (2, 3, 9, 9))])
def test_zero_b_leaves_the_output_unchanged_and_a_gets_no_gradient(make, x_shape):
    base = make()
    x = torch.randn(x_shape, dtype=torch.float64)
    expected = base(x)
    adapter = (LoRALinear if isinstance(base, nn.Linear) else LoRAConv2d)(
        copy.deepcopy(base), rank=2, alpha=6.0)
    out = adapter(x)
    assert torch.equal(out, expected)
    out.square().sum().backward()
    assert torch.count_nonzero(adapter.lora_A.grad) == 0  # B = 0: dy/dA = 0 exactly
    assert adapter.lora_B.grad.abs().sum() > 0
    assert adapter.base.weight.grad is None and not adapter.base.weight.requires_grad
    assert adapter.scale == 3.0 and torch.count_nonzero(adapter.lora_B) == 0


def test_linear_adapter_is_the_dense_layer_w_plus_s_ba():
    base = _linear()
    adapter = LoRALinear(copy.deepcopy(base), rank=2, alpha=6.0)
    _randomise_b(adapter)
    x = torch.randn(4, 6, 5, dtype=torch.float64)  # leading dims broadcast like nn.Linear
    W = base.weight + 3.0 * adapter.lora_B @ adapter.lora_A
    oracle = x @ W.T + base.bias
    torch.testing.assert_close(adapter(x), oracle, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(adapter(x), base(x))  # the update does something


def test_conv_adapter_is_the_conv_with_the_merged_kernel():
    base = _conv()
    adapter = LoRAConv2d(copy.deepcopy(base), rank=2, alpha=6.0)
    _randomise_b(adapter)
    A, B = adapter.lora_A, adapter.lora_B  # [r, in, kh, kw], [out, r]
    delta = torch.zeros_like(base.weight)
    for o in range(4):  # explicit sum over the rank, no einsum
        for r in range(2):
            delta[o] += B[o, r] * A[r]
    x = torch.randn(2, 3, 9, 9, dtype=torch.float64)
    oracle = F.conv2d(x, base.weight + 3.0 * delta, base.bias, **CONV)
    out = adapter(x)
    assert out.shape == base(x).shape
    torch.testing.assert_close(out, oracle, rtol=1e-12, atol=1e-12)


def test_inject_into_tinytf_adapts_only_the_targets_and_trains_only_lora_and_head():
    torch.manual_seed(0)
    model = TinyTFClassifier(TINY).double()
    x = _tokens()
    before = model(x)
    trainable = inject_lora(model, ["encoder.blocks.0.q_proj", "encoder.blocks.*.v_proj"],
                            rank=2, alpha=4.0)
    assert sorted(lora_modules(model)) == ["encoder.blocks.0.q_proj", "encoder.blocks.0.v_proj",
                                           "encoder.blocks.1.v_proj"]
    assert type(model.encoder.blocks[1].q_proj) is nn.Linear
    expected = [f"{m}.{p}" for m in ("encoder.blocks.0.q_proj", "encoder.blocks.0.v_proj",
                                     "encoder.blocks.1.v_proj") for p in ("lora_A", "lora_B")]
    assert sorted(trainable) == sorted(expected + ["head.weight", "head.bias"])
    assert [n for n, p in model.named_parameters() if p.requires_grad] == trainable
    assert torch.equal(model(x), before)  # B = 0: the pretrained function exactly
    model(x).sum().backward()
    assert all(p.grad is None for n, p in model.named_parameters() if n not in trainable)


def test_merge_gives_a_plain_model_with_the_same_outputs():
    torch.manual_seed(0)
    model = TinyTFClassifier(TINY).double()
    keys = list(model.state_dict())
    inject_lora(model, ["encoder.blocks.*.q_proj", "encoder.blocks.1.ff2"], rank=3, alpha=3.0,
                train=())
    for adapter in lora_modules(model).values():
        _randomise_b(adapter)
    x = _tokens()
    adapted = model(x)
    merged = merge_lora(model)
    assert merged is model and not lora_modules(merged)
    assert list(merged.state_dict()) == keys
    torch.testing.assert_close(merged(x), adapted, rtol=1e-10, atol=1e-12)
    conv = LoRAConv2d(_conv(), 2, 2.0)
    _randomise_b(conv)
    x = torch.randn(1, 3, 9, 9, dtype=torch.float64)
    out = conv(x)
    plain = merge_lora(conv)
    assert type(plain) is nn.Conv2d
    torch.testing.assert_close(plain(x), out, rtol=1e-10, atol=1e-12)


def test_inject_into_a_conv_net_and_the_transform_returns_the_model():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3),
                        nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    x = torch.randn(2, 3, 6, 6)
    before = net(x)
    out = lora_transform(net, targets=("0", "2"), rank=2, alpha=2.0, train=("4",))
    assert out is net and sorted(lora_modules(net)) == ["0", "2"]
    assert torch.equal(net(x), before)
    assert sorted(n for n, p in net.named_parameters() if p.requires_grad) == [
        "0.lora_A", "0.lora_B", "2.lora_A", "2.lora_B", "4.bias", "4.weight"]


def test_bad_settings_raise_before_anything_changes():
    model = TinyTFClassifier(TINY)
    with pytest.raises(ValueError, match=r"encoder\.blocks\.0\.q_proj"):  # lists what exists
        inject_lora(model, ["encoder.blocks.*.query"], rank=2, alpha=2.0)
    with pytest.raises(ValueError, match="matches no Linear/Conv2d"):
        inject_lora(model, ["encoder.ln_f"], rank=2, alpha=2.0)  # a LayerNorm
    with pytest.raises(ValueError, match="rank"):
        inject_lora(model, ["head"], rank=0, alpha=2.0)
    with pytest.raises(ValueError, match="alpha"):
        inject_lora(model, ["head"], rank=2, alpha=-1.0)
    with pytest.raises(ValueError, match="classifier"):
        inject_lora(model, ["encoder.blocks.0.q_proj"], rank=2, alpha=2.0, train=("classifier",))
    with pytest.raises(ValueError, match="at least one"):
        inject_lora(model, [], rank=2, alpha=2.0)
    assert not lora_modules(model) and all(p.requires_grad for p in model.parameters())
    inject_lora(model, ["encoder.blocks.0.q_proj"], rank=2, alpha=2.0)
    with pytest.raises(ValueError, match="already"):
        inject_lora(model, ["encoder.blocks.0.q_proj"], rank=2, alpha=2.0)
    grouped = nn.Sequential(nn.Conv2d(4, 4, 3, groups=2))
    with pytest.raises(ValueError, match="groups=1"):
        inject_lora(grouped, ["0"], rank=2, alpha=2.0, train=())
    assert grouped[0].weight.requires_grad
    with pytest.raises(ValueError, match="nn.Linear"):
        LoRALinear(nn.Conv2d(1, 1, 1), 2, 2.0)
