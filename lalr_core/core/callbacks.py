"""Training callbacks the core provides, and the registry methods and chapters add theirs to.

The protocol (`lalr_core.core.train.train`): a ``name`` attribute and optional hooks
``on_optimizer(optimizer)``, ``on_train_start(model)``, ``on_backward(model)``,
``on_step(model)``, ``on_epoch_end(model, row)``, ``result()``, ``state_dict()``,
``load_state_dict(state)``. ``CALLBACKS`` maps the names used in ``units.train_runs`` to
their classes.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

from lalr_core.core.registry import Registry

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


def pretrained_weights(unit_params: Mapping) -> dict[str, torch.Tensor]:
    """The `FinalWeights` of a cached training unit (``{"run": key, "callbacks": {...}}``).

    Inside a sweep unit it reads that sweep's cache (`runs.active_cache`), else the default
    (``$LALR_RUNS_ROOT`` or ``data/runs``): pretrain into the cache you fine-tune from. The
    lookup uses the key `units.train_unit` stored the run under (its code fingerprint
    included), so a pretraining whose code has changed since is not in the cache.

    Raises:
        LookupError: the unit is not in the cache, or it was trained without ``weights``.
    """
    from lalr_core.core.runs import active_cache  # late imports keep this module light;
    from lalr_core.core.units import train_unit  # units imports this module

    hit, result = active_cache().lookup("train", dict(unit_params), fn=train_unit)
    if not hit:
        raise LookupError("pretrained run not in the cache (not trained, or its code changed "
                          f"since); train it first: {unit_params['run']}")
    weights = result["callbacks"].get("weights")
    if not weights:
        raise LookupError("the pretrained run has no 'weights' callback result")
    return weights
