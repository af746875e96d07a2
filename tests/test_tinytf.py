"""TinyTF (`lalr_core.methods.pretrained.text.tinytf`): shapes and parameter counts against the closed
form, the hand-written attention against torch's scaled_dot_product_attention and the whole
attention sub-layer against nn.MultiheadAttention, the padding mask, and the tied MLM head."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.methods.pretrained.text.tinytf import (
    EncoderBlock,
    TinyTFClassifier,
    TinyTFConfig,
    TinyTFMLM,
    attention,
    tied_mlm_logits,
)


pytestmark = pytest.mark.usefixtures("one_thread")


def param_count(V, L, d, f, n_blocks, C):
    """Closed form: embeddings, per block 4 (d x d + d) + 2 LN + ff1 + ff2, ln_f, head."""
    block = 4 * (d * d + d) + 2 * 2 * d + (d * f + f) + (f * d + d)
    return V * d + L * d + n_blocks * block + 2 * d + (d * C + C)


def tokens(B=3, T=16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(3, 64, (B, T), generator=gen)
    x[:, 0] = 1  # [CLS]
    return x


def test_shapes_and_parameter_counts_follow_the_config():
    for cfg in (TinyTFConfig(), TinyTFConfig(d_model=64, n_heads=4, n_blocks=16, d_ff=128)):
        clf = TinyTFClassifier(cfg, num_classes=2)
        x = tokens(T=48)
        assert clf(x).shape == (3, 2)
        assert len(clf.encoder.hidden_states(x)) == cfg.n_blocks + 1
        n = sum(p.numel() for p in clf.parameters())
        assert n == param_count(64, 48, cfg.d_model, cfg.d_ff, cfg.n_blocks, 2)
        mlm = TinyTFMLM(cfg)
        assert mlm(x).shape == (3, 48, 64)
        assert sum(p.numel() for p in mlm.parameters()) == n - (cfg.d_model * 2 + 2) + 64


def test_module_names_expose_the_lora_and_lalr_targets():
    names = dict(TinyTFClassifier().named_modules())
    for i in range(2):
        for part in ("ln1", "q_proj", "k_proj", "v_proj", "o_proj", "ln2", "ff1", "ff2"):
            assert f"encoder.blocks.{i}.{part}" in names
    assert names["encoder.blocks.0.ff1"].weight.shape == (64, 32)  # d -> 2d
    assert names["encoder.blocks.0.q_proj"].weight.shape == (32, 32)
    assert {"encoder.tok_emb", "encoder.pos_emb", "encoder.ln_f", "head"} <= set(names)
    assert not any(isinstance(m, nn.Dropout) for m in names.values())


def test_init_is_normal_002_with_zero_biases():
    torch.manual_seed(0)
    model = TinyTFClassifier(TinyTFConfig(d_model=64, d_ff=128, n_blocks=4))
    weights = torch.cat([m.weight.flatten() for m in model.modules()
                         if isinstance(m, (nn.Linear, nn.Embedding))])
    assert abs(weights.std().item() - 0.02) < 0.001 and abs(weights.mean().item()) < 0.001
    assert all((m.bias == 0).all() for m in model.modules() if isinstance(m, nn.Linear))


def test_attention_matches_scaled_dot_product_attention_with_padding():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 7, 5, generator=gen, dtype=torch.float64) for _ in range(3))
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[0, 4:] = True
    pad[1, 6:] = True
    ours = attention(q, k, v, pad)
    oracle = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad[:, None, None, :])
    torch.testing.assert_close(ours, oracle, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(attention(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_attention_sublayer_matches_multihead_attention():
    torch.manual_seed(2)
    cfg = TinyTFConfig(d_model=8, n_heads=2, d_ff=16)
    block = EncoderBlock(cfg).double()
    for p in block.parameters():
        nn.init.normal_(p, 0, 0.3)
    nn.init.zeros_(block.ff2.weight)
    nn.init.zeros_(block.ff2.bias)  # the block is now x + attention sub-layer only
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([block.q_proj.weight, block.k_proj.weight,
                                            block.v_proj.weight]))
        mha.in_proj_bias.copy_(torch.cat([block.q_proj.bias, block.k_proj.bias,
                                          block.v_proj.bias]))
        mha.out_proj.weight.copy_(block.o_proj.weight)
        mha.out_proj.bias.copy_(block.o_proj.bias)
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    pad = torch.tensor([[False] * 4 + [True] * 2, [False] * 6])
    h = block.ln1(x)
    expected = x + mha(h, h, h, key_padding_mask=pad, need_weights=False)[0]
    torch.testing.assert_close(block(x, pad), expected, rtol=1e-10, atol=1e-10)


def test_padding_tokens_do_not_change_the_cls_output():
    torch.manual_seed(3)
    model = TinyTFClassifier(TinyTFConfig(n_blocks=2)).eval()
    short = tokens(B=2, T=16, seed=4)
    padded = torch.zeros(2, 48, dtype=torch.long)
    padded[:, :16] = short
    with torch.no_grad():
        cls_short = model.encoder(short)[:, 0]
        cls_padded = model.encoder(padded)[:, 0]
        torch.testing.assert_close(cls_padded, cls_short, rtol=1e-5, atol=1e-6)
        # the content at a padded position is ignored once it is masked
        mask = padded == 0
        other = padded.clone()
        other[:, 20:] = 40
        torch.testing.assert_close(model.encoder(other, mask)[:, 0], cls_padded,
                                   rtol=1e-5, atol=1e-6)
        assert not torch.allclose(model.encoder(other)[:, 0], cls_padded, atol=1e-4)
        torch.testing.assert_close(model(padded), model.head(cls_short), rtol=1e-5, atol=1e-6)


def test_mlm_head_is_tied_to_the_token_embedding():
    torch.manual_seed(5)
    model = TinyTFMLM()
    outside = [n for n, _ in model.named_parameters() if not n.startswith("encoder.")]
    assert outside == ["mlm_head.bias"]  # no decoder matrix of its own
    x = tokens()
    with torch.no_grad():
        model.mlm_head.bias.normal_()
        h = model.encoder(x)
        torch.testing.assert_close(model(x), h @ model.encoder.tok_emb.weight.T
                                   + model.mlm_head.bias)
        model.encoder.tok_emb.weight[40:] *= 0  # the head reads the very tensor it shares
        torch.testing.assert_close(model(x), tied_mlm_logits(model.encoder, model.mlm_head.bias,
                                                             x))
        assert (model(x)[..., 40:] == model.mlm_head.bias[40:]).all()


def test_bad_configs_raise():
    with pytest.raises(ValueError, match="multiple"):
        TinyTFConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="n_blocks"):
        TinyTFConfig(n_blocks=0)
    with pytest.raises(ValueError, match="positional"):
        TinyTFClassifier()(tokens(T=49))
    with pytest.raises(ValueError, match="num_classes"):
        TinyTFClassifier(num_classes=0)
