"""LARS, the layer-wise adaptive optimiser of the Barlow Twins experiment (thesis fig 5.8), with
the usual exclusion of biases and norm parameters from adaptation and weight decay.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from lalr_core.core.loop.config import OPTIMIZERS


# ----------------------------------------------------------------------------- LARS
class LARS(torch.optim.Optimizer):
    """Layer-wise Adaptive Rate Scaling (You et al. 2017) as used by Barlow Twins (fig 5.8).

    Per parameter: ``d = g + wd*theta``; if the group is adapted, ``d *= eta * ||theta|| / ||d||``
    (when both norms are positive); ``buf = momentum*buf + d``; ``theta -= lr*buf``. Barlow
    Twins excludes biases and BN parameters from both weight decay and adaptation: put them in
    a group with ``exclude=True``. Units: ``lr`` per step; ``eta`` is the trust coefficient.
    """

    def __init__(self, params, lr: float = 0.2, momentum: float = 0.9, wd: float = 1.5e-6,
                 eta: float = 1e-3, exclude: bool = False):
        if lr <= 0 or not 0 <= momentum < 1 or wd < 0 or eta <= 0:
            raise ValueError(f"invalid LARS settings lr={lr}, momentum={momentum}, wd={wd}, eta={eta}")
        super().__init__(params, dict(lr=lr, momentum=momentum, wd=wd, eta=eta, exclude=exclude))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if not group["exclude"]:
                    d = d.add(p, alpha=group["wd"])
                    p_norm, d_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(d)
                    trust = torch.where((p_norm > 0) & (d_norm > 0),
                                        group["eta"] * p_norm / d_norm, torch.ones_like(p_norm))
                    d = d * trust
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                p.add_(buf, alpha=-group["lr"])
        return loss


def lars_param_groups(model_or_params: nn.Module | Iterable[torch.Tensor]) -> list[dict]:
    """Barlow Twins' split: >= 2-D weights adapted and decayed; biases and BN excluded."""
    params = list(model_or_params.parameters() if isinstance(model_or_params, nn.Module)
                  else model_or_params)
    adapted = [p for p in params if p.ndim > 1]
    excluded = [p for p in params if p.ndim <= 1]
    return [{"params": adapted}, {"params": excluded, "exclude": True}]


@OPTIMIZERS.register("lars")
def lars(params, cfg, eta: float = 1e-3) -> LARS:
    """`LARS` from a run's lr, momentum and wd, ``eta`` from ``cfg.optimizer_params``, with
    Barlow Twins' exclusions (`lars_param_groups`)."""
    params = list(params)
    if params and isinstance(params[0], dict):
        raise ValueError("LARS builds its own groups; a per-layer lr policy cannot be combined")
    return LARS(lars_param_groups(params), lr=cfg.lr, momentum=cfg.momentum, wd=cfg.wd, eta=eta)
