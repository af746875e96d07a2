"""Training callbacks the core provides, and the registry methods and chapters add theirs to.

The protocol (`lalr_core.core.loop.train.train`): a ``name`` attribute and optional hooks
``on_optimizer(optimizer)``, ``on_train_start(model)``, ``on_backward(model)``,
``on_step(model)``, ``on_epoch_end(model, row)``, ``result()``, ``state_dict()``,
``load_state_dict(state)``. ``CALLBACKS`` maps the names used in ``units.train_runs`` to
their classes.
"""

from __future__ import annotations

import torch
from torch import nn

from lalr_core.core.loop.registry import Registry

CALLBACKS = Registry("callback")


@CALLBACKS.register("weights")
class FinalWeights:
    """Result: the final ``state_dict`` on the CPU (float tensors, a few MB for small models)."""

    name = "weights"

    def __init__(self):
        self.state: dict[str, torch.Tensor] = {}

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self.state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}

    def result(self) -> dict[str, torch.Tensor]:
        return self.state

    def state_dict(self) -> dict:
        return {"state": self.state}

    def load_state_dict(self, state: dict) -> None:
        self.state = state["state"]


class SplitHistory:
    """Base of the callbacks that score extra splits of a run (out-of-distribution tests,
    forgetting of a pretraining task) at the start and after every epoch.

    A subclass implements ``_record(model, epoch)``, appending ``{"epoch", "split", "loss",
    "acc"}`` rows to ``self.rows`` and per-example correctness to ``self.hits[split]``.
    Result: ``{"history": DataFrame(epoch, split, loss, acc), "correct": {split: bool array
    of the last record}}``; the rows survive a resume.
    """

    def __init__(self):
        self.rows: list[dict] = []
        self.hits: dict[str, object] = {}

    def _record(self, model: nn.Module, epoch: int) -> None:
        raise NotImplementedError

    def on_train_start(self, model: nn.Module) -> None:
        if not self.rows:                       # a resumed run keeps its step-0 record
            self._record(model, 0)

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self._record(model, int(row["epoch"]))

    def result(self) -> dict:
        import pandas as pd  # late: keeps this module light for worker start-up

        return {"history": pd.DataFrame(self.rows, columns=["epoch", "split", "loss", "acc"]),
                "correct": dict(self.hits)}

    def state_dict(self) -> dict:
        return {"rows": list(self.rows), "hits": dict(self.hits)}

    def load_state_dict(self, state: dict) -> None:
        self.rows, self.hits = list(state["rows"]), dict(state["hits"])
