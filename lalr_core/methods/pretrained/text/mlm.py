"""Masked-token prediction on D-SYN-TXT: the masking rule, the loss and its evaluation.

Masking (15 % of the content positions; every detail is ours, after BERT):
each sequence gets exactly ``max(1, round(0.15 * content))`` masked positions (BERT's original
per-sequence count, 2 at length 16 and 7 at length 48; never none, so no batch has an empty
loss), drawn uniformly among its content positions ([CLS] and [PAD] never). Rule ``"bert"``:
a chosen position becomes [MASK] with probability 0.8, a uniform random ordinary token (ids
3-63: no [PAD], [CLS] or [MASK]) with probability 0.1, and stays with probability 0.1; rule
``"mask"``: always [MASK]. The loss is the cross-entropy at the chosen positions only.
Evaluation uses masks drawn once from a fixed stream, so the held-out loss of two models
(before / after fine-tuning: forgetting, X-L3) is measured on the same masked inputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from lalr_core.methods.pretrained.text.corpus import MASK, VOCAB_SIZE, pretraining_corpus, stream

IGNORE = -100         # target of an unmasked position (cross_entropy's ignore_index)
MASK_RULES = ("bert", "mask")
FIRST_ORDINARY = 3    # random replacements are drawn from ids 3..63


def masked_count(content: int, rate: float) -> int:
    """Masked positions of a sequence with ``content`` content tokens: max(1, round(rate c))."""
    return max(1, round(rate * content))


def mask_tokens(tokens: torch.Tensor, k: int, generator: torch.Generator,
                rule: str = "bert") -> tuple[torch.Tensor, torch.Tensor]:
    """Mask ``k`` content positions in every row of unpadded sequences.

    Args:
        tokens: `[B, T]` int64, [CLS] at position 0 and no padding (all rows of one length).
        k: positions per row, ``1 <= k <= T - 1``.
        generator: source of every draw (its device must be the tokens').
        rule: ``"bert"`` (80 / 10 / 10) or ``"mask"`` (always [MASK]).

    Returns:
        ``(inputs, targets)``, both `[B, T]`: the masked inputs, and the original token at
        chosen positions, ``IGNORE`` elsewhere.
    """
    if rule not in MASK_RULES:
        raise ValueError(f"mask rule must be one of {MASK_RULES}, got {rule!r}")
    B, T = tokens.shape
    if not 1 <= k <= T - 1:
        raise ValueError(f"k must lie in [1, {T - 1}] for length {T}, got {k}")
    dev = tokens.device
    order = torch.rand(B, T - 1, generator=generator, device=dev).argsort(dim=1)
    chosen = torch.zeros(B, T, dtype=torch.bool, device=dev)
    chosen.scatter_(1, order[:, :k] + 1, True)  # +1: position 0 is [CLS]
    u = torch.rand(B, T, generator=generator, device=dev)
    random_tok = torch.randint(FIRST_ORDINARY, VOCAB_SIZE, (B, T), generator=generator,
                               device=dev)
    if rule == "mask":
        u = torch.zeros_like(u)
    inputs = torch.where(chosen & (u < 0.8), MASK,
                         torch.where(chosen & (u < 0.9), random_tok, tokens))
    return inputs, torch.where(chosen, tokens, IGNORE)


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor,
                                                                         torch.Tensor]:
    """Mean cross-entropy over the chosen positions, and the number predicted right.

    Args:
        logits: `[B, T, V]`.
        targets: `[B, T]`, ``IGNORE`` where nothing is predicted.
    """
    loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    hits = ((logits.detach().argmax(-1) == targets) & (targets != IGNORE)).sum()
    return loss, hits


@torch.no_grad()
def masked_lm_eval(logits_of: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor,
                   targets: torch.Tensor, batch_size: int = 1000) -> tuple[float, float]:
    """Held-out MLM loss (mean over masked tokens) and masked-token accuracy.

    Args:
        logits_of: padded inputs `[B, T]` -> logits `[B, T, V]` (the caller sets eval mode).
        inputs, targets: `[N, T]` from `heldout_masked`.
        batch_size: sequences per forward pass.
    """
    total, hits, count = 0.0, 0, 0
    for i in range(0, len(inputs), batch_size):
        logits = logits_of(inputs[i:i + batch_size]).float()
        t = targets[i:i + batch_size]
        total += F.cross_entropy(logits.flatten(0, 1), t.flatten(), ignore_index=IGNORE,
                                 reduction="sum").item()
        hits += ((logits.argmax(-1) == t) & (t != IGNORE)).sum().item()
        count += (t != IGNORE).sum().item()
    return (total / count, hits / count) if count else (float("nan"), float("nan"))


def heldout_masked(n: int, data_seed: int, split: str, rate: float,
                   rule: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A held-out corpus split with its fixed masks: ``(inputs, targets)``, `[n, 48]` each.

    The sequences are `corpus.pretraining_corpus` ``(n, data_seed, split)``; the masks come
    from their own stream, so every model evaluated on them sees the same masked inputs.
    """
    tokens, lengths = pretraining_corpus(n, data_seed, split)
    tokens = torch.as_tensor(tokens)
    inputs, targets = tokens.clone(), torch.full_like(tokens, IGNORE)
    seed = int(stream(data_seed, f"corpus/{split}/mask").integers(2 ** 62))
    gen = torch.Generator().manual_seed(seed)
    for length in np.unique(lengths):
        rows = torch.as_tensor(np.flatnonzero(lengths == length))
        L = int(length)
        x, y = mask_tokens(tokens[rows, :L], masked_count(L - 1, rate), gen, rule)
        inputs[rows, :L], targets[rows, :L] = x, y
    return inputs, targets

