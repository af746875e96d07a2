"""Training callbacks of seed 001 (TempBalance ch. 2, HT-SR pruning ch. 3).

* `PrunedStart` starts a run from a cached run's weights, masks channels by given per-layer
  ratios (`channel_masks.prune_channels`) and keeps them at zero after every step: the
  "train -> prune -> finetune" pipeline of ch. 3. With TempBalance among the run's methods the fine-tuning
  uses TempBalance's layer-wise lrs, fitted on the pruned weights (ch. 3.3-3.4).
* `SpectralProbe` records every layer's alpha and matrix entropy after every epoch (fig 3.2;
  the alphas of figs 3.22-3.24 come from the TempBalance callback or from this probe).

They follow `lalr_core.core.train`'s callback protocol and are registered by name in
``core.callbacks.CALLBACKS``, so their constructor arguments are part of a run's cache key.
The final weights they start from come from the core's `FinalWeights` (``"weights"``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import torch
from torch import nn

from lalr_core.core.callbacks import CALLBACKS, pretrained_weights
from lalr_core.methods import spectral
from lalr_core.methods.channel_masks import apply_masks, prune_channels, sparsity


@CALLBACKS.register("pruned_start")
class PrunedStart:
    """Start from a cached run's weights with channels pruned by ``ratios`` (masks kept).

    Args:
        pretrained: the cached unit's params (`pretrained_weights`).
        ratios: ``{conv name: fraction of output channels to prune}``.
        importance: channel score of `channel_masks.prune_channels` (``"l1"`` or ``"me_prune"``).
    """

    name = "pruned_start"

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


@CALLBACKS.register("spectral")
class SpectralProbe:
    """Every layer's alpha (x_min rule ``xmin``) and matrix entropy at init and each epoch.

    Args:
        xmin: x_min rule (``"ks"``: the digest's choice for ch. 3, A-1).
        conv: conv handling of `spectral.layer_matrices` (default its default, TempBalance's
            and WeightWatcher's kernel slices; every chapter passes its choice explicitly).
        every: epochs between records.
    """

    name = "spectral"

    def __init__(self, xmin: str = "ks", conv: str = "slices", every: int = 1):
        self.xmin, self.conv, self.every = xmin, conv, int(every)
        self.rows: list[dict] = []

    @torch.no_grad()
    def _record(self, model: nn.Module, epoch: int) -> None:
        mats = spectral.layer_matrices(model, conv=self.conv)
        for layer, lam in spectral.esds(mats).items():
            alpha = spectral.fit_alpha(lam, xmin=self.xmin)["alpha"]
            entropy = spectral.matrix_entropy(lam, tuple(mats[layer].shape[-2:]))
            self.rows.append({"epoch": epoch, "layer": layer, "alpha": alpha, "entropy": entropy})

    def on_train_start(self, model: nn.Module) -> None:
        if not self.rows:
            self._record(model, 0)

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        if int(row["epoch"]) % self.every == 0:
            self._record(model, int(row["epoch"]))

    def result(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["epoch", "layer", "alpha", "entropy"])

    def state_dict(self) -> dict:
        return {"rows": list(self.rows)}

    def load_state_dict(self, state: dict) -> None:
        self.rows = list(state["rows"])
