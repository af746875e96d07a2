"""LARS and LAMB from ``pytorch_optimizer``, registered as optimisers of the shared loop.

The layer-wise trust-ratio classics, taken from a well-kept package rather than written by
hand: chapter 01's baselines (its source cites both, §1.0, refs [11], [12], as the layer-wise
methods LALR differs from) and two of chapter 08's contenders. Names: ``"lars_po"`` (``"lars"`` is chapter 06's Barlow-Twins LARS,
`lalr_core.methods.orthogonal`) and ``"lamb"``.

* LARS (You, Gitman, Ginsburg 2017), ``pytorch_optimizer.LARS``: for every parameter with
  >= 2 dims the step is ``lr * eta * ||w|| / (||g|| + wd ||w||) * (g + wd w)`` fed through
  SGD momentum; 1-D parameters (biases, LayerNorm) take the plain momentum step at ``lr``
  without weight decay. So ``lr`` is not AdamW's unit: the relative step of a matrix is about
  ``lr * eta / (1 - momentum)``.
* LAMB (You et al. 2019/2020, Algorithm 2), ``pytorch_optimizer.Lamb``: ``r = m / (sqrt(v)
  + eps) + wd w`` rescaled per tensor to norm ``||w||`` (clamped at 10, the paper's phi), so
  each tensor moves by ``lr * ||w||``: its relative step is ``lr``, while AdamW's is about
  ``lr / rms(w)``. Two package defaults differ from the paper and are switched: the step is
  divided by the first moment's bias correction ``1 - beta1^t`` *outside* the trust ratio
  (10x the paper's first step; ``adam_debias=True`` keeps ``lr``), and weight decay is
  decoupled (``weight_decouple=False`` puts ``wd w`` inside the trust ratio, as the paper
  does). `tests/test_ch01_settings.py` checks the first step against the paper's rule.

Both take the run's ``lr``, ``wd`` (and ``momentum`` / ``betas``); extra settings go in
``RunConfig.optimizer_params``. Neither combines with a per-layer lr policy (they are the
per-layer rule themselves).
"""

from __future__ import annotations

import pytorch_optimizer
import torch

from lalr_core.core.loop.config import OPTIMIZERS, RunConfig

LARS_ETA = 1e-3   # LARS's trust coefficient (You et al. 2017; pytorch_optimizer's default)


def _plain(name: str, params) -> list:
    params = list(params)
    if params and isinstance(params[0], dict):
        raise ValueError(f"{name} sets its own per-layer rates; it cannot be combined with a "
                         f"per-layer lr policy (got param groups)")
    return params


@OPTIMIZERS.register("lars_po")
def lars_po(params, cfg: RunConfig, eta: float = LARS_ETA) -> torch.optim.Optimizer:
    """``pytorch_optimizer.LARS`` with the run's lr, momentum, wd and trust coefficient ``eta``."""
    if not eta > 0:
        raise ValueError(f"LARS eta must be > 0, got {eta!r}")
    return pytorch_optimizer.LARS(_plain("lars_po", params), lr=cfg.lr, momentum=cfg.momentum,
                                  weight_decay=cfg.wd, trust_coefficient=eta)


@OPTIMIZERS.register("lamb")
def lamb(params, cfg: RunConfig) -> torch.optim.Optimizer:
    """``pytorch_optimizer.Lamb`` with the run's lr, betas and wd, in the paper's form
    (module docstring)."""
    return pytorch_optimizer.Lamb(_plain("lamb", params), lr=cfg.lr, betas=cfg.betas,
                                  weight_decay=cfg.wd, weight_decouple=False,
                                  adam_debias=True)
