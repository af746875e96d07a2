"""TempBalance in the training loop: per-layer lr multipliers from the current alphas.

Seed 001 ch. 2 (digest I.2.7, I.5 and A-1, A-3, A-4): at the start of every epoch the alpha of
every layer is fitted on the current weights (median x_min rule by default, conv kernels as
TempBalance's kh*kw slices), an allocation scheme of `lalr_core.tempbalance` maps the alphas to
lrs in units of lr_t, and each layer's param group trains at ``lr_t * multiplier``. The first
conv and the last linear are excluded (they and every other parameter keep lr_t); BN follows
its conv (`tempbalance.layer_groups`). ``train()`` builds the per-layer groups
(`make_optimizer`) and adds this callback itself when ``cfg.layer_lr != "none"``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import torch
from torch import nn

from . import spectral
from .tempbalance import SCHEMES, allocate

SKIP_FIRST, SKIP_LAST = True, True  # digest A-4: stem conv and classifier keep lr_t
CONV = "slices"  # digest A-3: TempBalance's kh*kw slices (its sqrt(0.5) does not change alpha)


class TempBalanceCallback:
    """Writes ``group["lr_scale"]`` of every layer group from the current alphas.

    Hooks: ``on_optimizer`` (keeps the optimiser), ``on_train_start`` (multipliers of the
    first epoch, from the initial weights) and ``on_epoch_end`` (multipliers of the next
    epoch). The loop then sets ``group["lr"] = lr_t * group["lr_scale"]`` each epoch, so any
    schedule composes with the allocation. Groups are matched to layers by their ``"layer"``
    tag (`tempbalance.LayerLR.param_groups`); the untagged rest group keeps lr_t.

    Args:
        scheme: a key of ``tempbalance.SCHEMES``.
        params: the scheme's ``(name, value)`` pairs (or a dict).
        xmin: x_min rule of the alpha fit (``"median"`` or ``"ks"``).
        seed: seed of the generator given to sampling schemes (those taking ``rng``).
    """

    name = "tempbalance"

    def __init__(self, scheme: str = "tb_linear", params=(), xmin: str = "median",
                 seed: int = 0):
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
        self.scheme, self.params, self.xmin = scheme, dict(params), xmin
        needs_rng = "rng" in inspect.signature(SCHEMES[scheme]).parameters
        self.rng = np.random.default_rng(seed) if needs_rng else None
        self.optimizer = None
        self.epoch = 0
        self.records: list[tuple[int, str, float, float]] = []  # epoch, layer, alpha, lr_scale

    @classmethod
    def from_config(cls, cfg) -> TempBalanceCallback:
        """The callback of ``cfg.layer_lr`` / ``layer_lr_params`` / ``alpha_xmin``."""
        return cls(cfg.layer_lr, cfg.layer_lr_params, cfg.alpha_xmin, seed=cfg.seed)

    def on_optimizer(self, optimizer) -> None:
        self.optimizer = optimizer

    def on_train_start(self, model: nn.Module) -> None:
        self.epoch = 0
        self._allocate(model)

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self.epoch = int(row["epoch"])
        self._allocate(model)

    @torch.no_grad()
    def _allocate(self, model: nn.Module) -> None:
        """Fit the alphas of the tagged layers and write their multipliers into the groups."""
        if self.optimizer is None:
            raise RuntimeError("TempBalanceCallback needs on_optimizer(optimizer) first")
        groups = [g for g in self.optimizer.param_groups if g.get("layer") is not None]
        if not groups:
            raise ValueError("no param group carries a 'layer' tag; build the optimiser from "
                             "tempbalance.LayerLR(...).param_groups(lr)")
        names = [g["layer"] for g in groups]
        fitted = spectral.alphas(model, xmin=self.xmin, conv=CONV)["alpha"]
        if missing := [n for n in names if n not in fitted.index]:
            raise ValueError(f"no alpha for layer(s) {missing}")
        a = fitted.loc[names].to_numpy(dtype=np.float64)
        extra = {"rng": self.rng} if self.rng is not None else {}
        scales = allocate(a, 1.0, self.scheme, **self.params, **extra)
        for group, name, alpha, scale in zip(groups, names, a, scales):
            group["lr_scale"] = float(scale)
            self.records.append((self.epoch, name, float(alpha), float(scale)))

    def result(self) -> pd.DataFrame:
        """Tidy ``epoch, layer, alpha, lr_scale``; ``epoch`` = epochs completed when fitted,
        so the multipliers of row ``epoch = e`` scale the lr of epoch ``e + 1`` (1-indexed)."""
        return pd.DataFrame(self.records, columns=["epoch", "layer", "alpha", "lr_scale"])

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "records": list(self.records),
                "rng": None if self.rng is None else self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.records = state["epoch"], list(state["records"])
        if self.rng is not None and state.get("rng") is not None:
            self.rng.bit_generator.state = state["rng"]
