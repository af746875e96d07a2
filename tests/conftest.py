"""Shared fixtures and test callbacks (import them with ``from conftest import ...``)."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Run the test with one torch thread (MKL's threaded eigvalsh / svdvals stall for seconds
    per call when the 2 cores are oversubscribed; one thread takes ~20 ms)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


class LRProbe:
    """A training callback that records, at each epoch's end (before LALR's hook: a caller's
    callbacks run first), every tagged param group's lr of the epoch just ended, and the
    weights at the start and after every epoch."""

    name = "probe"

    def __init__(self):
        self.lrs, self.weights = [], []

    def on_optimizer(self, optimizer):
        self.optimizer = optimizer

    def on_train_start(self, model):
        self.weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def on_epoch_end(self, model, row):
        self.lrs += [(row["epoch"], row["lr"], g["layer"], g["lr"])
                     for g in self.optimizer.param_groups if g.get("layer") is not None]
        self.weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def result(self):
        return None
