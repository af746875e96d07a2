"""Optimiser factories by name, and the optimiser of a run (its methods' hooks applied).

``OPTIMIZERS[name](params, cfg, **cfg.optimizer_params)`` builds a torch optimiser from param
groups, the run's common hyper-parameters and the optimiser's own extra settings (e.g. LARS's
trust coefficient). The core registers sgd, sgdm, adam and adamw, which take no extra settings;
a method registers its own (e.g. LARS) with ``@OPTIMIZERS.register(name)``.
A method's ``wrap_optimizer`` may return an `OptimizerWrapper` around the optimiser.
"""

from __future__ import annotations

import torch

from lalr_core.core.loop.config import OPTIMIZERS, RunConfig


class OptimizerWrapper:
    """Base of a method's optimiser wrapper: the loop's optimiser contract (``param_groups``,
    ``state``, ``zero_grad``) delegated to the wrapped ``self.optimizer``, which the subclass
    sets; it adds ``step`` (and its own ``state_dict`` / ``load_state_dict``)."""

    optimizer: torch.optim.Optimizer

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)


def _no_extra(name: str, extra: dict) -> None:
    if extra:
        raise ValueError(f"optimizer {name!r} takes no optimizer_params, got {sorted(extra)}")


@OPTIMIZERS.register("sgd")
def sgd(params, cfg: RunConfig, **extra) -> torch.optim.Optimizer:
    _no_extra("sgd", extra)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=0.0, weight_decay=cfg.wd, nesterov=False)


@OPTIMIZERS.register("sgdm")
def sgdm(params, cfg: RunConfig, **extra) -> torch.optim.Optimizer:
    _no_extra("sgdm", extra)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.wd,
                           nesterov=cfg.nesterov and cfg.momentum > 0)


@OPTIMIZERS.register("adam")
def adam(params, cfg: RunConfig, **extra) -> torch.optim.Optimizer:
    _no_extra("adam", extra)
    return torch.optim.Adam(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.wd)


@OPTIMIZERS.register("adamw")
def adamw(params, cfg: RunConfig, **extra) -> torch.optim.Optimizer:
    _no_extra("adamw", extra)
    return torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.wd)


def make_optimizer(cfg: RunConfig, model: torch.nn.Module):
    """The optimiser named by ``cfg.optimizer`` over the run's param groups, wrapped by methods.

    A per-layer lr policy among ``cfg.methods`` gives the param groups (one per layer, tagged
    ``"layer"``); otherwise one group. Then every method's ``wrap_optimizer`` applies in order.
    """
    grouped = [(m.name, g) for m in cfg.methods
               if (g := m.param_groups(model, cfg.lr)) is not None]
    if len(grouped) > 1:
        raise ValueError(f"only one per-layer lr policy per run, got {[n for n, _ in grouped]}")
    params = grouped[0][1] if grouped else list(model.parameters())
    opt = OPTIMIZERS[cfg.optimizer](params, cfg, **dict(cfg.optimizer_params))
    for m in cfg.methods:
        opt = m.wrap_optimizer(opt, model)
    return opt
