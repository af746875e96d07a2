"""Structured channel pruning by masks, and what a pruned network keeps (seed 001, ch. 3).

`prune_channels` masks the lowest-scoring output channels of each conv by per-layer ratios
(from `pruning.layer_budgets` or the uniform / ERK / LAMP baselines), `apply_masks` keeps them
at zero while fine-tuning, `sparsity` measures the masked fraction and `slimmed_parameters`
counts the physically slimmed network (our reading of the source's "parameters remaining").
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import torch
from torch import nn

from lalr_core.methods.pruning.budgets import EPS, IMPORTANCE, channel_importance, check_fraction

UNITS = ("params", "channels")


def prunable_layers(model: nn.Module) -> dict[str, tuple[nn.Conv2d, str | None]]:
    """Every ``nn.Conv2d`` with the name of the BatchNorm right after it, if any.

    "Right after" = the next module in ``named_modules`` order is a ``BatchNorm2d`` with
    ``out_channels`` features (conv-BN as in `models.BasicBlock`, `models.BasicCNN`).
    """
    mods = list(model.named_modules())
    out = {}
    for i, (name, mod) in enumerate(mods):
        if isinstance(mod, nn.Conv2d):
            nxt = mods[i + 1] if i + 1 < len(mods) else (None, None)
            bn = (nxt[0] if isinstance(nxt[1], nn.BatchNorm2d)
                  and nxt[1].num_features == mod.out_channels else None)
            out[name] = (mod, bn)
    return out


def _channel_mask(conv: nn.Conv2d, ratio: float, importance: str) -> torch.Tensor:
    n_prune = math.floor(ratio * conv.out_channels + EPS)
    keep = torch.ones(conv.out_channels, dtype=conv.weight.dtype, device=conv.weight.device)
    scores = channel_importance(conv.weight, importance)
    keep[torch.argsort(scores, stable=True)[:n_prune]] = 0.0     # lowest scores go
    return keep


def prune_channels(model: nn.Module, ratios: Mapping[str, float],
                   importance: str = "l1") -> tuple[nn.Module, dict[str, torch.Tensor]]:
    """Mask ``floor(r_i c_out)`` lowest-scoring output channels of each named conv.

    The copy has the pruned channels' conv weights (and bias) and the following BN's gamma
    and beta set to 0, so the channel outputs exactly 0 in eval and train mode. Call
    `apply_masks` after every optimiser step to keep them at 0 while fine-tuning. Channels
    are masked, not removed; `slimmed_parameters` counts what a physically slimmed network
    would keep.

    Args:
        model: the trained model; not modified.
        ratios: ``{conv module name: ratio in [0, 1)}`` (e.g. from `layer_budgets`).
        importance: channel score, ``"l1"`` or ``"me_prune"`` (`channel_importance`).

    Returns:
        ``(pruned copy, masks)``; ``masks`` maps parameter names to 0/1 tensors of their shape.

    Raises:
        ValueError: a name that is not a ``Conv2d``, a ratio outside ``[0, 1)``, or an unknown
            ``importance``.
    """
    if importance not in IMPORTANCE:
        raise ValueError(f"importance must be one of {IMPORTANCE}, got {importance!r}")
    layers = prunable_layers(model)
    unknown = sorted(set(ratios) - set(layers))
    if unknown:
        raise ValueError(f"ratios name layers that are not Conv2d modules: {unknown}")
    pruned, masks = copy.deepcopy(model), {}
    copies = prunable_layers(pruned)
    for name, r in ratios.items():
        keep = _channel_mask(layers[name][0], check_fraction(f"ratio of {name}", r), importance)
        conv, bn = copies[name]
        masks[f"{name}.weight"] = keep.view(-1, *[1] * (conv.weight.dim() - 1)).expand_as(
            conv.weight).clone()
        if conv.bias is not None:
            masks[f"{name}.bias"] = keep.clone()
        if bn is not None:
            masks[f"{bn}.weight"], masks[f"{bn}.bias"] = keep.clone(), keep.clone()
    apply_masks(pruned, masks)
    return pruned, masks


@torch.no_grad()
def apply_masks(model: nn.Module, masks: Mapping[str, torch.Tensor]) -> nn.Module:
    """Multiply the masked parameters by their masks in place (after each optimiser step).

    Args:
        model: the pruned model.
        masks: from `prune_channels`.

    Returns:
        ``model`` (same object).

    Raises:
        ValueError: a mask naming no parameter of ``model`` or of the wrong shape.
    """
    params = dict(model.named_parameters())
    for name, mask in masks.items():
        if name not in params or params[name].shape != mask.shape:
            raise ValueError(f"mask {name!r} of shape {tuple(mask.shape)} matches no parameter")
        params[name].mul_(mask.to(params[name].device, params[name].dtype))
    return model


def sparsity(model: nn.Module, masks: Mapping[str, torch.Tensor],
             unit: str = "params") -> float:
    """Achieved pruned fraction over the masked conv layers.

    Args:
        model: the pruned model (only used to check the masks match it).
        masks: from `prune_channels`.
        unit: ``"params"``: zeroed conv weights / all weights of the masked convs (BN and
            biases excluded); ``"channels"``: pruned / all output channels of those convs.

    Returns:
        Fraction in ``[0, 1]``; 0 for empty ``masks``.

    Raises:
        ValueError: unknown ``unit`` or masks not matching ``model``.
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    params = dict(model.named_parameters())
    bad = [k for k, v in masks.items() if k not in params or params[k].shape != v.shape]
    if bad:
        raise ValueError(f"masks do not match the model's parameters: {bad}")
    W = [v for v in masks.values() if v.dim() >= 2]              # conv weight masks
    if not W:
        return 0.0
    if unit == "params":
        return float(sum((v == 0).sum() for v in W) / sum(v.numel() for v in W))
    dead = sum(int((v.reshape(v.shape[0], -1) == 0).all(1).sum()) for v in W)
    return dead / sum(v.shape[0] for v in W)


@torch.no_grad()
def slimmed_parameters(model: nn.Module, masks: Mapping[str, torch.Tensor],
                       input_shape: tuple[int, ...], samples: int = 32,
                       seed: int = 0) -> dict[str, float]:
    """Conv weights of the physically slimmed network vs the unpruned one.

    A pruned output channel also removes the matching input channel of every conv it feeds,
    through concatenations (DenseNet) and residual adds (only if every summand is pruned). We
    find those inputs by running the masked model (eval mode) on ``samples`` random inputs and
    calling a conv input channel dead when it is constant over samples and positions: its
    content is a bias the slimmed network folds into the next layer (BN after a pruned channel
    makes it a constant, not 0). A conv then keeps ``kept_out * live_in / groups * kh * kw``
    weights; a depthwise conv keeps ``kh * kw`` per channel alive on both sides. Zero padding
    makes a folded constant slightly position-dependent at the borders; we ignore that.

    Args:
        model: the pruned model (masks applied, e.g. from `prune_channels`).
        masks: from `prune_channels` (output-channel masks of the pruned convs).
        input_shape: ``(C, H, W)`` of one input.
        samples: random inputs used to find constant channels.
        seed: seed of the random inputs.

    Returns:
        ``{"params": kept conv weights, "full": all conv weights, "remaining": params / full}``.
    """
    convs = {n: m for n, m in model.named_modules() if isinstance(m, nn.Conv2d)}
    live: dict[str, torch.Tensor] = {}

    def hook_for(name):
        def hook(module, args):
            x = args[0].detach().float().transpose(0, 1).flatten(1)       # (C_in, N*H*W)
            spread = x.max(1).values - x.min(1).values
            live[name] = spread > 1e-6 * max(float(spread.max()), 1e-30)
        return hook

    handles = [m.register_forward_pre_hook(hook_for(n)) for n, m in convs.items()]
    was_training = model.training
    try:
        model.eval()
        device = next(model.parameters()).device
        gen = torch.Generator().manual_seed(seed)
        model(torch.randn(samples, *input_shape, generator=gen).to(device))
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    kept = full = 0.0
    for name, conv in convs.items():
        c_out, c_in_g, kh, kw = conv.weight.shape
        full += conv.weight.numel()
        mask = masks.get(f"{name}.weight")
        out = (mask.flatten(1) != 0).any(1) if mask is not None else \
            torch.ones(c_out, dtype=torch.bool, device=conv.weight.device)
        inp = live.get(name, torch.ones(c_in_g * conv.groups, dtype=torch.bool)).to(out.device)
        if conv.groups == 1:
            kept += float(out.sum()) * float(inp.sum()) * kh * kw
        elif conv.groups == c_out == inp.numel():                       # depthwise
            kept += float((out & inp).sum()) * kh * kw
        else:                                                          # grouped: proportional
            kept += float(out.sum()) * float(inp.sum()) / conv.groups * kh * kw
    return {"params": kept, "full": full, "remaining": kept / full if full else 1.0}
