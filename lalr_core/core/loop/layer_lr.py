"""Per-layer learning rates: the one interface every layer-wise lr method plugs into.

A per-layer lr policy is a `MethodConfig` whose ``param_groups(model, lr)`` gives one param
group per layer (tagged ``"layer": name``; the untagged rest group keeps the global lr) and
whose ``callbacks(cfg)`` includes a `LayerLRCallback` around a `LayerScaler`. The scaler maps
the current model to one multiplier per tagged layer, at the start of training and after every
epoch; the loop then sets ``group["lr"] = lr_t * group["lr_scale"]`` each epoch, so any global
schedule composes with the policy. TempBalance (seed 001 ch. 2) is one such policy; LALR is
another.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd
from torch import nn


class LayerScaler(Protocol):
    """Maps the model to per-layer lr multipliers (and per-layer diagnostics to record)."""

    columns: tuple[str, ...]  # names of the diagnostics, recorded before ``lr_scale``

    def __call__(self, model: nn.Module, layers: list[str]
                 ) -> tuple[np.ndarray, dict[str, np.ndarray]]: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class LayerLRCallback:
    """Writes ``group["lr_scale"]`` of every tagged layer group from ``scaler``.

    Hooks: ``on_optimizer`` (keeps the optimiser), ``on_train_start`` (multipliers of the first
    epoch, from the initial weights) and ``on_epoch_end`` (multipliers of the next epoch).
    Result: tidy ``epoch, layer, <scaler.columns>, lr_scale``; ``epoch`` = epochs completed
    when fitted, so the multipliers of row ``epoch = e`` scale the lr of epoch ``e + 1``.
    """

    def __init__(self, name: str, scaler: LayerScaler):
        self.name, self.scaler = name, scaler
        self.optimizer = None
        self.epoch = 0
        self.records: list[tuple] = []

    def on_optimizer(self, optimizer) -> None:
        self.optimizer = optimizer

    def on_train_start(self, model: nn.Module) -> None:
        self.epoch = 0
        self._allocate(model)

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self.epoch = int(row["epoch"])
        self._allocate(model)

    def _allocate(self, model: nn.Module) -> None:
        if self.optimizer is None:
            raise RuntimeError(f"{type(self).__name__} needs on_optimizer(optimizer) first")
        groups = [g for g in self.optimizer.param_groups if g.get("layer") is not None]
        if not groups:
            raise ValueError("no param group carries a 'layer' tag; build the optimiser from "
                             "the policy's param_groups(model, lr)")
        names = [g["layer"] for g in groups]
        scales, extras = self.scaler(model, names)
        for i, (group, name, scale) in enumerate(zip(groups, names, scales)):
            group["lr_scale"] = float(scale)
            self.records.append((self.epoch, name, *(float(extras[c][i])
                                                     for c in self.scaler.columns), float(scale)))

    def result(self) -> pd.DataFrame:
        return pd.DataFrame(self.records,
                            columns=["epoch", "layer", *self.scaler.columns, "lr_scale"])

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "records": list(self.records),
                "scaler": self.scaler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.records = state["epoch"], list(state["records"])
        self.scaler.load_state_dict(state["scaler"])
