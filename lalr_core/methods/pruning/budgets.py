"""HT-SR-guided structured channel pruning and its baselines (seed 001, Ch. 3).

Seed 001 Ch. 3.1-3.2 (eq. 3.1, Table 3.1, Fig. 3.1, figs. 3.3-3.21): per-layer pruning budgets
from an HT-SR metric filled in 0.01 increments (`layer_budgets`), the uniform / ERK / LAMP
baselines of Fig. 3.1 (`uniform_budgets`, `erk_budgets`, `lamp_scores`, `lamp_budgets`),
and channel scores (filter L1 and ME-Prune's eq. 3.1, `channel_importance`).

Written from the source and the papers it cites; no code copied. ERK: Evci et al. 2020,
"Rigging the Lottery" (RigL), Sec. 3 "Sparsity distribution". LAMP: Lee et al. 2021,
"Layer-adaptive Sparsity for the Magnitude-based Pruning", Sec. 3 (LAMP score). ME-Prune's
eq. 3.1 is HYDRA's score initialisation (Sehwag et al. 2020).

Masking channels, keeping them masked and counting what is left: `channel_masks`. AugMix:
`augmentation.augmix`. Fine-tuning a pruned model, with or without layer-wise lrs:
`htsr_callbacks.PrunedStart`. Not here: AugPrune (the source gives no formula)
and HYDRA score optimisation (the source does not describe it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import torch

STEP = 0.01          # the source's increment of a layer's pruning ratio per iteration (Ch. 3.2)
K_MAX = 0.95         # our cap on any layer's budget (keeps >= 5 % of channels; the source has none)
RULES = ("direct", "inverse")
IMPORTANCE = ("l1", "me_prune")
# Table 3.1: augmentation x (ratio ~ metric) -> setting number; "direct" = prune more for
# layers with larger metrics (Settings 1, 3), "inverse" = prune more for smaller (2, 4).
TABLE_3_1 = {"traditional": {"direct": 1, "inverse": 2}, "augmix": {"direct": 3, "inverse": 4}}
EPS = 1e-9          # float slack when counting 0.01 increments


# ----------------------------------------------------------------------------- checks


def check_fraction(name: str, x: float, hi_open: bool = True) -> float:
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
    its budget ``k_i`` and stop all at the global target ("rather under-prune").

    In closed form: after t iterations layer i is at ``step * min(t, m_i)`` with
    ``m_i = floor((k_i + eps) / step)`` increments allowed; the loop stops at the first t whose
    ``n``-weighted mean reaches the target (or when every layer is at its cap), so all
    iterations are evaluated at once (the loop took ~10 ms per call).
    """
    caps = torch.floor((budgets + EPS) / step).clamp(min=0)            # m_i
    t = torch.arange(int(caps.max()) + 1, dtype=budgets.dtype)         # iterations 0..max m
    r_all = step * torch.minimum(t[:, None], caps[None, :])            # (T, L) ratios after t
    reached = (r_all * n).sum(1) >= target * n.sum() - EPS
    first = int(torch.argmax(reached.to(torch.int8))) if bool(reached.any()) else len(t) - 1
    return r_all[first]


def layer_budgets(metric_per_layer: Mapping[str, float], total_sparsity: float,
                  rule: str = "direct", step: float = STEP,
                  sizes: Mapping[str, float] | None = None, k_max: float = K_MAX,
                  match_budget: bool = True) -> dict[str, float]:
    """Per-layer channel pruning ratios from an HT-SR metric (seed 001 Ch. 3.2, Table 3.1).

    The source "determine[s] layerwise k_i by normalizing all matrix entropy measurements"
    and uses ``k_i`` as a per-layer budget: every layer's ratio grows by ``step`` = 0.01 per
    iteration and stops once the next step would pass ``k_i`` ("we would rather under-prune
    than over-prune"). The normalisation is unstated; we take
    ``u_i = (m_i - min m) / (max m - min m)`` (0.5 if all equal), ``1 - u_i`` for ``"inverse"``,
    and budgets proportional to ``0.5 + u_i``, capped at ``k_max``.

    Why the scale is solved: ``k_i = min(k_max, P (0.5 + u_i))`` taken literally has a size-weighted
    mean is below ``P`` whenever the mean of ``u`` is below 0.5, so the global target is then
    missed. The source says the budgets give "adequate control over the overall model size",
    so by default (``match_budget=True``) the factor is solved so the ``sizes``-weighted mean
    of ``k_i`` is exactly ``total_sparsity`` (layers at ``k_max`` are fixed, as in ERK).
    ``match_budget=False`` gives that literal rule.

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
    P = check_fraction("total_sparsity", total_sparsity)
    if not 0.0 < step < 1.0:
        raise ValueError(f"step must be in (0, 1), got {step}")
    if not 0.0 < k_max < 1.0:
        raise ValueError(f"k_max must be in (0, 1), got {k_max}")
    n = _check_sizes(names, sizes)
    span = m.max() - m.min()
    u = (m - m.min()) / span if span > 0 else torch.full_like(m, 0.5)
    u = u if rule == "direct" else 1.0 - u
    w = 0.5 + u                                                  # budget shape (our choice)
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
    P = check_fraction("total_sparsity", total_sparsity)
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
    P = check_fraction("total_sparsity", total_sparsity)
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
    P = check_fraction("total_sparsity", total_sparsity)
    if not weights:
        raise ValueError("weights must be non-empty, got {}")
    scores = [lamp_scores(w).reshape(-1).double() for w in weights.values()]
    flat = torch.cat(scores)
    n_prune = math.floor(P * flat.numel() + EPS)
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
    of ``|s^(0)|`` from eq. 3.1 (`me_prune_scores`; the channel reduction is our choice,
    the source gives weight scores only). Eq. 3.1's factor is constant within a layer,
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
