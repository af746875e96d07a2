"""TinyTF: the small pre-LN transformer encoder of chapters 01 (LALR) and 03 (NTK).

Our stand-in for the large pretrained language models of the sources (chapters 01 and 03):
token + learned positional embedding
(d = 32, positional table of length 48), 2 pre-LN encoder blocks written by hand with separate
``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` (d x d), ``ff1`` (d -> 2d), ``ff2`` (2d -> d),
``ln1``, ``ln2``, 2 heads, no dropout; [CLS] pooling and a linear head; a tied MLM head for
pretraining. Separate q/k/v/o modules make LoRA targets (``q_proj``, ``v_proj``, chapter 03's choice)
and LALR's same-shape partners explicit, and ``ln*.weight`` are the 1-D "weight" tensors that
trip the LALR code's grouping. Every size is a `TinyTFConfig` field (X-L1 needs 2/4/8/16 blocks
at d = 64).

Further choices: GELU between ``ff1`` and ``ff2`` (BERT's); a final
LayerNorm ``ln_f`` after the last block (a pre-LN stack needs one before any head); weights
and embeddings ~ N(0, 0.02^2), biases 0, LayerNorms 1/0 (BERT / GPT-2); the MLM head is
``logits = ln_f(h) @ tok_emb.weight.T + bias`` (tied, one bias per token, no transform layer).

Module names (state-dict keys): ``encoder.tok_emb``, ``encoder.pos_emb``,
``encoder.blocks.<i>.{ln1, q_proj, k_proj, v_proj, o_proj, ln2, ff1, ff2}``, ``encoder.ln_f``,
then ``head`` (classifier) or ``mlm_head.bias`` (MLM). The backbone is ``encoder``: a
fine-tuning loads exactly its state dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class TinyTFConfig:
    """Sizes of a TinyTF (our defaults).

    Attributes:
        vocab_size: tokens (D-SYN-TXT: 64).
        max_len: positional table length (48: the corpus's long sequences).
        d_model: width of the residual stream.
        n_heads: attention heads (``d_model`` must be a multiple).
        n_blocks: encoder blocks (2; more where an experiment asks, e.g. X-L1, X-L10).
        d_ff: hidden width of the feed-forward (2 * d_model by default).
        pad_id: the padding token, masked out as an attention key.
        init_std: std of the normal init of weights and embeddings.
    """

    vocab_size: int = 64
    max_len: int = 48
    d_model: int = 32
    n_heads: int = 2
    n_blocks: int = 2
    d_ff: int = 64
    pad_id: int = 0
    init_std: float = 0.02

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "n_heads", "n_blocks", "d_ff"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of n_heads "
                             f"({self.n_heads})")
        if not 0 <= self.pad_id < self.vocab_size or not self.init_std > 0:
            raise ValueError(f"need 0 <= pad_id < vocab_size and init_std > 0, got "
                             f"{self.pad_id}, {self.init_std}")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              key_padding: torch.Tensor | None = None) -> torch.Tensor:
    """Scaled dot-product attention, ``softmax(q k^T / sqrt(hs)) v``, padding keys ignored.

    Args:
        q, k, v: `[B, nh, T, hs]`.
        key_padding: `[B, T]` bool, True where the key is padding (None: no mask). Every row
            needs at least one real key ([CLS] always is one).

    Returns:
        `[B, nh, T, hs]`.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, nh, T, T)
    if key_padding is not None:
        scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
    return scores.softmax(dim=-1) @ v


class EncoderBlock(nn.Module):
    """Pre-LN block: ``x + o_proj(attn(ln1 x))``, then ``x + ff2(gelu(ff1(ln2 x)))``."""

    def __init__(self, cfg: TinyTFConfig):
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, cfg.d_ff)
        self.ff2 = nn.Linear(cfg.d_ff, d)

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None = None) -> torch.Tensor:
        B, T, C = x.shape
        nh, hs = self.n_heads, C // self.n_heads
        h = self.ln1(x)
        q, k, v = (proj(h).view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        a = attention(q, k, v, key_padding).transpose(1, 2).reshape(B, T, C)
        x = x + self.o_proj(a)
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class TinyTFEncoder(nn.Module):
    """Embeddings, the blocks and ``ln_f``: tokens `[B, T]` -> hidden states `[B, T, d]`."""

    def __init__(self, cfg: TinyTFConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_blocks))
        self.ln_f = nn.LayerNorm(cfg.d_model)

    def padding_of(self, tokens: torch.Tensor) -> torch.Tensor:
        """`[B, T]` bool, True at ``pad_id``."""
        return tokens == self.cfg.pad_id

    def hidden_states(self, tokens: torch.Tensor,
                      key_padding: torch.Tensor | None = None) -> list[torch.Tensor]:
        """The residual stream after the embedding and after each block (before ``ln_f``).

        Args:
            tokens: `[B, T]` int64 token ids, ``T <= max_len``.
            key_padding: `[B, T]` bool (default: ``tokens == pad_id``).

        Returns:
            ``n_blocks + 1`` tensors `[B, T, d]` (the probes of X-L10 read position 0).
        """
        T = tokens.shape[1]
        if T > self.cfg.max_len:
            raise ValueError(f"sequences of length {T} exceed the positional table "
                             f"({self.cfg.max_len})")
        if key_padding is None:
            key_padding = self.padding_of(tokens)
        pos = torch.arange(T, device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(pos)[None]  # (B, T, d)
        states = [x]
        for block in self.blocks:
            x = block(x, key_padding)
            states.append(x)
        return states

    def forward(self, tokens: torch.Tensor,
                key_padding: torch.Tensor | None = None) -> torch.Tensor:
        return self.ln_f(self.hidden_states(tokens, key_padding)[-1])


def init_weights(module: nn.Module, std: float) -> None:
    """BERT / GPT-2 init: Linear and Embedding weights ~ N(0, std^2), biases 0."""
    for m in module.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, std)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)


class TinyTFClassifier(nn.Module):
    """TinyTF with a linear head on the [CLS] (position 0) state: `[B, T]` -> `[B, C]`."""

    def __init__(self, cfg: TinyTFConfig = TinyTFConfig(), num_classes: int = 2):
        super().__init__()
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be an int >= 1, got {num_classes!r}")
        self.encoder = TinyTFEncoder(cfg)
        self.head = nn.Linear(cfg.d_model, num_classes)
        init_weights(self, cfg.init_std)

    def forward(self, tokens: torch.Tensor,
                key_padding: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encoder(tokens, key_padding)[:, 0])


def tied_mlm_logits(encoder: TinyTFEncoder, bias: torch.Tensor, tokens: torch.Tensor,
                    key_padding: torch.Tensor | None = None) -> torch.Tensor:
    """MLM logits `[B, T, V]` = ``encoder(tokens) @ tok_emb.weight.T + bias`` (tied head).

    Also how a fine-tuned encoder is scored with the pretrained head's ``bias`` reattached.
    """
    return F.linear(encoder(tokens, key_padding), encoder.tok_emb.weight, bias)


class MLMHead(nn.Module):
    """The MLM head's own parameter: one output bias per token (its weight is the tied
    token embedding, see `tied_mlm_logits`)."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(vocab_size))


class TinyTFMLM(nn.Module):
    """TinyTF for masked-token prediction: `[B, T]` -> logits `[B, T, vocab]`, tied head."""

    def __init__(self, cfg: TinyTFConfig = TinyTFConfig()):
        super().__init__()
        self.encoder = TinyTFEncoder(cfg)
        self.mlm_head = MLMHead(cfg.vocab_size)
        init_weights(self, cfg.init_std)

    def forward(self, tokens: torch.Tensor,
                key_padding: torch.Tensor | None = None) -> torch.Tensor:
        return tied_mlm_logits(self.encoder, self.mlm_head.bias, tokens, key_padding)
