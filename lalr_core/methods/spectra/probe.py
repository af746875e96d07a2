"""`SpectralProbe`: every layer's power-law alpha and matrix entropy after every epoch, as a
training callback registered by name in ``CALLBACKS``.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.methods import spectra as spectral


@CALLBACKS.register("spectral")
class SpectralProbe:
    """Every layer's alpha (x_min rule ``xmin``) and matrix entropy at init and each epoch.

    Args:
        xmin: x_min rule (``"ks"``: our choice for ch. 3; the source names no rule).
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
