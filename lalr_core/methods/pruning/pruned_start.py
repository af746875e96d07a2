"""`PrunedStart`: the "train -> prune -> finetune" pipeline of HT-SR pruning as a training callback.

It starts a run from a cached run's weights, masks channels by given per-layer ratios
(`channel_masks.prune_channels`) and keeps them at zero after every step. With TempBalance
among the run's methods the fine-tuning uses TempBalance's layer-wise lrs, fitted on the pruned
weights. Registered by name in ``CALLBACKS``, so its arguments are part of a run's cache key.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.runs.units import pretrained_weights
from lalr_core.methods.pruning.channel_masks import apply_masks, prune_channels, sparsity


@CALLBACKS.register("pruned_start")
class PrunedStart:
    """Start from a cached run's weights with channels pruned by ``ratios`` (masks kept).

    Args:
        pretrained: the cached unit's params (`pretrained_weights`).
        ratios: ``{conv name: fraction of output channels to prune}``.
        importance: channel score of `channel_masks.prune_channels` (``"l1"`` or ``"me_prune"``).
    """

    name = "pruned_start"
    # A rehearsal (`lalr_core.core.rehearsal.shape_key`) trains one fine-tuning for all ratios:
    # masks keep every tensor's shape, so the ratios change numbers, not the code path.
    not_shape = ("ratios",)

    def __init__(self, pretrained: Mapping, ratios: Mapping[str, float],
                 importance: str = "l1"):
        self.pretrained, self.ratios, self.importance = dict(pretrained), dict(ratios), importance
        self.masks: dict[str, torch.Tensor] = {}
        self.achieved: dict[str, float] = {}

    @torch.no_grad()
    def on_train_start(self, model: nn.Module) -> None:
        model.load_state_dict(pretrained_weights(self.pretrained))
        pruned, masks = prune_channels(model, self.ratios, self.importance)
        model.load_state_dict(pruned.state_dict())
        device = next(model.parameters()).device
        self.masks = {k: v.to(device) for k, v in masks.items()}
        self.achieved = {"params": sparsity(model, self.masks, "params"),
                         "channels": sparsity(model, self.masks, "channels")}

    def on_step(self, model: nn.Module) -> None:
        apply_masks(model, self.masks)

    def result(self) -> dict:
        return {"sparsity": self.achieved, "ratios": self.ratios}

    def state_dict(self) -> dict:
        return {"masks": self.masks, "achieved": self.achieved}

    def load_state_dict(self, state: dict) -> None:
        self.masks, self.achieved = state["masks"], state["achieved"]
