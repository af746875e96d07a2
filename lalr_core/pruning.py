"""HT-SR-guided structured channel pruning and its baselines (seed 001, Ch. 3).

Seed 001 Ch. 3.1-3.2 (eq. 3.1, Table 3.1, Fig. 3.1, figs. 3.3-3.21): per-layer pruning budgets
from an HT-SR metric filled in 0.01 increments (`layer_budgets`), the uniform / ERK / LAMP
baselines of Fig. 3.1 (`uniform_budgets`, `erk_budgets`, `lamp_scores`, `lamp_budgets`),
channel scores (filter L1 and ME-Prune's eq. 3.1, `channel_importance`), and mask-based
channel pruning (`prune_channels`, `apply_masks`, `sparsity`).

Written from the source and the papers it cites; no code copied. ERK: Evci et al. 2020,
"Rigging the Lottery" (RigL), Sec. 3 "Sparsity distribution". LAMP: Lee et al. 2021,
"Layer-adaptive Sparsity for the Magnitude-based Pruning", Sec. 3 (LAMP score). ME-Prune's
eq. 3.1 is HYDRA's score initialisation (Sehwag et al. 2020).

`slimmed_parameters` counts the physically slimmed network (inputs fed by pruned channels
removed too). AugMix is `data.augmix`; fine-tuning a pruned model, with or without layer-wise
lrs, is `htsr_callbacks.PrunedStart` in the training loop. Not here: AugPrune (the source
gives no formula, digest A-20) and HYDRA score optimisation (not described, A-21).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping

import torch
from torch import nn

STEP = 0.01          # the source's increment of a layer's pruning ratio per iteration (Ch. 3.2)
K_MAX = 0.95         # digest I.2.10 cap on any layer's budget (keeps >= 5 % of channels)
RULES = ("direct", "inverse")
IMPORTANCE = ("l1", "me_prune")
UNITS = ("params", "channels")
# Table 3.1: augmentation x (ratio ~ metric) -> setting number; "direct" = prune more for
# layers with larger metrics (Settings 1, 3), "inverse" = prune more for smaller (2, 4).
TABLE_3_1 = {"traditional": {"direct": 1, "inverse": 2}, "augmix": {"direct": 3, "inverse": 4}}
_EPS = 1e-9          # float slack when counting 0.01 increments


# ----------------------------------------------------------------------------- checks


def _check_fraction(name: str, x: float, hi_open: bool = True) -> float:
    x = float(x)
    if not (0.0 <= x < 1.0 if hi_open else 0.0 <= x <= 1.0) or math.isnan(x):
        raise ValueError(f"{name} must be in [0, 1{')' if hi_open else ']'}, got {x}")
    return x


def _check_sizes(names: list[str], sizes: Mapping[str, float] | None) -> torch.Tensor:
    if sizes is None:
        return torch.ones(len(names), dtype=torch.float64)
    if set(sizes) != set(names):
        raise ValueError(f"sizes keys must equal the layer names {names}, got {list(sizes)}")
    n = torch.tensor([float(sizes[k]) for k in names], dtype=torch.float64)
    if not bool((n > 0).all()):
        raise ValueError(f"sizes must be positive, got {dict(sizes)}")
    return n


def _fill_to_mean(weights: torch.Tensor, n: torch.Tensor, target: float,
                  cap: float) -> torch.Tensor:
    """``min(cap, c * weights)`` with ``c`` such that the ``n``-weighted mean is ``target``."""
    k = torch.zeros_like(weights)
    free = weights > 0
    for _ in range(len(weights) + 1):                     # each pass saturates >= 1 layer
        rest = target * n.sum() - (n * k)[~free].sum()
        c = rest / (n * weights)[free].sum()
        k = torch.where(free, (c * weights).clamp(max=cap), k)
        over = free & (c * weights > cap)
        if not bool(over.any()):
            return k
        free = free & ~over
        if not bool(free.any()):
            if abs(float((n * k).sum() / n.sum()) - target) < 1e-12:
                return k                                  # every layer exactly at the cap
            break
    raise ValueError(f"target {target} not reachable with every layer capped at {cap}")


# ----------------------------------------------------------------------------- budgets


def _increment(budgets: torch.Tensor, n: torch.Tensor, target: float,
               step: float) -> torch.Tensor:
    """Seed 001 Ch. 3.2: raise every layer's ratio by ``step`` per iteration, stop a layer at
    its budget ``k_i`` and stop all at the global target ("rather under-prune")."""
    r = torch.zeros_like(budgets)
    while (n * r).sum() < target * n.sum() - _EPS:
        active = r + step <= budgets + _EPS
        if not bool(active.any()):
            break
        r = torch.where(active, r + step, r)
    return r


def layer_budgets(metric_per_layer: Mapping[str, float], total_sparsity: float,
                  rule: str = "direct", step: float = STEP,
                  sizes: Mapping[str, float] | None = None, k_max: float = K_MAX,
                  match_budget: bool = True) -> dict[str, float]:
    """Per-layer channel pruning ratios from an HT-SR metric (seed 001 Ch. 3.2, Table 3.1).

    The source "determine[s] layerwise k_i by normalizing all matrix entropy measurements"
    and uses ``k_i`` as a per-layer budget: every layer's ratio grows by ``step`` = 0.01 per
    iteration and stops once the next step would pass ``k_i`` ("we would rather under-prune
    than over-prune"). The normalisation is unstated; as digest I.2.10 we take
    ``u_i = (m_i - min m) / (max m - min m)`` (0.5 if all equal), ``1 - u_i`` for ``"inverse"``,
    and budgets proportional to ``0.5 + u_i``, capped at ``k_max``.

    Source vs digest: the digest sets ``k_i = min(k_max, P (0.5 + u_i))``, whose size-weighted
    mean is below ``P`` whenever the mean of ``u`` is below 0.5, so the global target is then
    missed. The source says the budgets give "adequate control over the overall model size",
    so by default (``match_budget=True``) the factor is solved so the ``sizes``-weighted mean
    of ``k_i`` is exactly ``total_sparsity`` (layers at ``k_max`` are fixed, as in ERK).
    ``match_budget=False`` gives the digest's literal rule.

    Args:
        metric_per_layer: ``{layer name: metric}`` (e.g. a column of `htsr_metrics`), finite.
        total_sparsity: ``P``, fraction of the prunable parameters (or channels) to remove,
            in ``[0, 1)``.
        rule: ``"direct"`` prunes more for larger metrics (Settings 1, 3), ``"inverse"``
            for smaller (Settings 2, 4).
        step: ratio increment per iteration, in ``(0, 1)``.
        sizes: ``{layer name: prunable parameters}`` (or channels); sets the unit of ``P``.
            ``None``: every layer counts 1.
        k_max: cap on a layer's budget, in ``(0, 1)``.
        match_budget: solve the budgets' scale for ``P`` (default) or use ``P`` as the scale.

    Returns:
        ``{layer name: ratio}``, multiples of ``step`` in ``[0, k_max]``; their
        ``sizes``-weighted mean is at most ``P`` and, with ``match_budget``, within
        ``step`` of it.

    Raises:
        ValueError: empty or non-finite metrics, unknown ``rule``, ``P``, ``step`` or ``k_max``
            out of range, bad ``sizes``, or ``P`` unreachable under ``k_max``.
    """
    names = list(metric_per_layer)
    m = torch.tensor([float(metric_per_layer[k]) for k in names], dtype=torch.float64)
    if len(names) == 0 or not bool(torch.isfinite(m).all()):
        raise ValueError(f"metric_per_layer must be non-empty and finite, got {metric_per_layer}")
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    P = _check_fraction("total_sparsity", total_sparsity)
    if not 0.0 < step < 1.0:
        raise ValueError(f"step must be in (0, 1), got {step}")
    if not 0.0 < k_max < 1.0:
        raise ValueError(f"k_max must be in (0, 1), got {k_max}")
    n = _check_sizes(names, sizes)
    span = m.max() - m.min()
    u = (m - m.min()) / span if span > 0 else torch.full_like(m, 0.5)
    u = u if rule == "direct" else 1.0 - u
    w = 0.5 + u                                                  # digest I.2.10 budget shape
    k = _fill_to_mean(w, n, P, k_max) if match_budget else (P * w).clamp(max=k_max)
    r = _increment(k, n, P, step)
    return {name: round(float(x), 10) for name, x in zip(names, r)}


def uniform_budgets(layers: Iterable[str], total_sparsity: float) -> dict[str, float]:
    """The "even" baseline: every layer pruned by ``total_sparsity`` (Fig. 3.1, Ch. 3.3).

    Args:
        layers: layer names.
        total_sparsity: per-layer (and so global) pruning ratio in ``[0, 1)``.

    Returns:
        ``{layer name: total_sparsity}``.

    Raises:
        ValueError: no layers or ``total_sparsity`` outside ``[0, 1)``.
    """
    P = _check_fraction("total_sparsity", total_sparsity)
    names = list(layers)
    if not names:
        raise ValueError("layers must be non-empty, got []")
    return {name: P for name in names}


def erk_budgets(shapes: Mapping[str, tuple[int, ...]], total_sparsity: float) -> dict[str, float]:
    """Erdos-Renyi-Kernel pruning ratios (Evci et al. 2020, Sec. 3; source ref. [18], Fig. 3.1).

    Density ``d_l = min(1, eps * sum(shape_l) / prod(shape_l))`` (for a linear layer the sum
    is ``n_in + n_out``: plain Erdos-Renyi), with ``eps`` set so that
    ``sum_l d_l prod(shape_l) = (1 - P) sum_l prod(shape_l)``; layers whose density would
    exceed 1 are kept dense and ``eps`` re-solved over the others. ERK is unstructured and
    data-free; used for channels, its ratios serve as per-layer channel ratios.

    Args:
        shapes: ``{layer name: weight shape}``, e.g. ``(c_out, c_in, kh, kw)``.
        total_sparsity: ``P`` in ``[0, 1)``, fraction of all listed weights to remove.

    Returns:
        ``{layer name: 1 - d_l}`` (float, not quantised to 0.01).

    Raises:
        ValueError: empty or non-positive shapes, ``P`` out of range.
    """
    P = _check_fraction("total_sparsity", total_sparsity)
    names = list(shapes)
    if not names or any(len(shapes[k]) < 2 or min(shapes[k]) < 1 for k in names):
        raise ValueError(f"shapes must be non-empty with >= 2 positive dims, got {dict(shapes)}")
    n = torch.tensor([float(math.prod(shapes[k])) for k in names], dtype=torch.float64)
    raw = torch.tensor([sum(shapes[k]) for k in names], dtype=torch.float64) / n
    d = _fill_to_mean(raw, n, 1.0 - P, 1.0)
    return {name: float(1.0 - x) for name, x in zip(names, d)}


def lamp_scores(weight: torch.Tensor) -> torch.Tensor:
    """LAMP score of every weight of one layer (Lee et al. 2021, Sec. 3; source ref. [51]).

    ``score(w) = w^2 / sum_{v : |v| >= |w|} v^2``: the squared weight over the squared
    weights not smaller than it in the same layer. Lee et al. index weights in sorted order
    (``v >= u``); we sum over all ``|v| >= |w|`` so tied weights get equal scores (identical
    when magnitudes are distinct). The largest weight scores 1, so global thresholding keeps
    at least one weight per layer.

    Args:
        weight: any shape, at least one entry.

    Returns:
        Scores in ``(0, 1]`` (0 for zero weights), same shape as ``weight``.

    Raises:
        ValueError: empty ``weight``.
    """
    if weight.numel() == 0:
        raise ValueError(f"weight must be non-empty, got shape {tuple(weight.shape)}")
    sq = weight.detach().reshape(-1).double() ** 2
    s, order = torch.sort(sq)                                    # ascending
    tail = s.flip(0).cumsum(0).flip(0)                           # sum_{v >= u} s_v
    first = torch.searchsorted(s, s, side="left")                # first index of each tie group
    out = torch.empty_like(sq)
    out[order] = torch.where(tail[first] > 0, s / tail[first], torch.zeros_like(s))
    return out.reshape(weight.shape).to(weight.dtype)


def lamp_budgets(weights: Mapping[str, torch.Tensor], total_sparsity: float) -> dict[str, float]:
    """Per-layer pruning ratios of global LAMP thresholding (Lee et al. 2021; Fig. 3.1).

    The source shows only LAMP's layer-wise ratios (Fig. 3.1), not LAMP channel pruning: we
    do as it did -- prune the ``floor(P N)`` weights with the lowest `lamp_scores` over all
    layers (unstructured) and report each layer's pruned fraction, usable as channel ratios.

    Args:
        weights: ``{layer name: weight}``.
        total_sparsity: ``P`` in ``[0, 1)``.

    Returns:
        ``{layer name: fraction of its weights pruned}``.

    Raises:
        ValueError: empty ``weights`` or ``P`` out of range.
    """
    P = _check_fraction("total_sparsity", total_sparsity)
    if not weights:
        raise ValueError("weights must be non-empty, got {}")
    scores = [lamp_scores(w).reshape(-1).double() for w in weights.values()]
    flat = torch.cat(scores)
    n_prune = math.floor(P * flat.numel() + _EPS)
    pruned = torch.zeros(flat.numel(), dtype=torch.bool)
    pruned[torch.argsort(flat, stable=True)[:n_prune]] = True    # global threshold
    out, i = {}, 0
    for name, s in zip(weights, scores):
        out[name] = float(pruned[i:i + s.numel()].double().mean())
        i += s.numel()
    return out


# ----------------------------------------------------------------------------- scores


def me_prune_scores(weight: torch.Tensor) -> torch.Tensor:
    """ME-Prune / HYDRA weight scores, eq. 3.1 (seed 001 Ch. 3.1).

    ``s^(0) = sqrt(6 / fan_in) * theta / max|theta|`` with ``fan_in = prod(shape[1:])``
    (``c_in kh kw`` for a conv). The source does not say whether ``max`` is per layer or per
    channel; the per-layer reading is HYDRA's.

    Args:
        weight: ``[c_out, ...]`` pretrained weight, not all zero.

    Returns:
        Scores, same shape as ``weight``.

    Raises:
        ValueError: fewer than 2 dims or an all-zero weight.
    """
    if weight.dim() < 2:
        raise ValueError(f"weight must have >= 2 dims, got shape {tuple(weight.shape)}")
    peak = weight.detach().abs().max()
    if peak == 0:
        raise ValueError("weight must not be all zero (max |theta| = 0 in eq. 3.1)")
    fan_in = math.prod(weight.shape[1:])
    return math.sqrt(6.0 / fan_in) / peak * weight.detach()      # eq. 3.1


def channel_importance(weight: torch.Tensor, method: str = "l1") -> torch.Tensor:
    """One importance score per output channel; low scores are pruned first.

    ``"l1"``: filter L1 norm ``sum |w|`` over ``[c_in, kh, kw]``. ``"me_prune"``: the same sum
    of ``|s^(0)|`` from eq. 3.1 (`me_prune_scores`; the channel reduction is the digest's
    [REC], the source gives weight scores only). Eq. 3.1's factor is constant within a layer,
    so both methods rank a layer's channels identically; they differ only in scale.

    Args:
        weight: ``[c_out, ...]`` conv (or linear) weight.
        method: ``"l1"`` or ``"me_prune"``.

    Returns:
        ``[c_out]`` scores.

    Raises:
        ValueError: unknown ``method`` or a weight with fewer than 2 dims.
    """
    if method not in IMPORTANCE:
        raise ValueError(f"method must be one of {IMPORTANCE}, got {method!r}")
    if weight.dim() < 2:
        raise ValueError(f"weight must have >= 2 dims, got shape {tuple(weight.shape)}")
    s = weight.detach() if method == "l1" else me_prune_scores(weight)
    return s.abs().reshape(weight.shape[0], -1).sum(1)          # (c_out,)


# ----------------------------------------------------------------------------- masks


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
    n_prune = math.floor(ratio * conv.out_channels + _EPS)
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
    would keep (digest I.2.10).

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
        keep = _channel_mask(layers[name][0], _check_fraction(f"ratio of {name}", r), importance)
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
    """Conv weights of the physically slimmed network vs the unpruned one (digest I.2.10).

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
