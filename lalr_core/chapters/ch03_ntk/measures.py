"""Chapter 03's per-run quantities: the four rows of table T-002-1, the separately trained
linearised model's gap (Theorem 3's quantity), and the NTK at theta_0 of a run's trainable set.

Every quantity is over the run's trainable parameters (LoRA A, B and the head; our choice),
with theta_0 = their values at initialisation (`lalr_core.core.loop.train.initial_model`, the
run's seed) and theta_t = the run's final weights (callback ``"weights"``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model
from lalr_core.methods.ntk import empirical as ntk


def margin(logits: torch.Tensor) -> torch.Tensor:
    """The scalar function of the theory for two classes: ``z_1 - z_0`` (our choice)."""
    return logits[:, 1] - logits[:, 0]


def final_model(cfg: RunConfig, result: Mapping) -> nn.Module:
    """The run's model with its final weights (eval mode)."""
    model = initial_model(cfg)
    model.load_state_dict(result["callbacks"]["weights"])
    return model.eval()


def theta0(cfg: RunConfig) -> dict[str, torch.Tensor]:
    """The trainable parameters at initialisation (name -> tensor)."""
    return ntk.snapshot_params(initial_model(cfg))


@torch.no_grad()
def logits(model: nn.Module, inputs: torch.Tensor, batch: int = 500) -> torch.Tensor:
    model.eval()
    return torch.cat([model(inputs[i:i + batch]) for i in range(0, len(inputs), batch)])


def _distance(model: nn.Module, start: Mapping[str, torch.Tensor]) -> float:
    moved = dict(model.named_parameters())
    return float(torch.sqrt(sum(((moved[n].detach() - t0) ** 2).sum()
                                for n, t0 in start.items())))


def distance(cfg: RunConfig, result: Mapping) -> float:
    """``||theta_t - theta_0||_2`` over the run's trainable parameters."""
    return _distance(final_model(cfg, result), theta0(cfg))


def table_numbers(cfg: RunConfig, result: Mapping, data) -> dict[str, float]:
    """Table T-002-1's rows for one run.

    * ``distance``: ``||theta_t - theta_0||_2`` over the trainable parameters;
    * ``lin_error``: ``||f_theta_t(x*) - [f_theta_0(x*) + J_0 (theta_t - theta_0)]||_2`` over
      the logit vectors of every training input (the slides' table, row 2), and ``lin_error_rms`` (/ sqrt n);
    * ``kl``: mean over validation examples of KL(softmax f_theta_t || softmax f-bar_theta_t),
      f-bar the same first-order expansion (our reading of the slides' "KL Divergence"; natural log);
    * ``accuracy``: validation accuracy of f_theta_t, in %.
    """
    model, start = final_model(cfg, result), theta0(cfg)
    X, _ = data.split("train")
    rem = ntk.taylor_remainder(model, start, X)
    Xv, yv = data.split("val")
    f_t = logits(model, Xv).double()
    f_bar = f_t - ntk.taylor_remainder(model, start, Xv).double()
    kl = F.kl_div(F.log_softmax(f_bar, 1), F.log_softmax(f_t, 1), log_target=True,
                  reduction="batchmean")
    return {"distance": _distance(model, start), "lin_error": float(torch.linalg.vector_norm(rem)),
            "lin_error_rms": float(torch.linalg.vector_norm(rem) / np.sqrt(len(X))),
            "kl": float(kl), "accuracy": 100 * float((f_t.argmax(1) == yv).float().mean())}


def linearised_gap(cfg: RunConfig, result: Mapping, lin_cfg: RunConfig, lin_result: Mapping,
                   data) -> float:
    """``||f_theta_t(x*) - f-bar_theta-bar_t(x*)||_2`` on the training inputs: the fine-tuned
    model against its linearised model trained separately from the same theta_0 with the same
    optimiser, seed and data order (Theorem 3's quantity)."""
    X, _ = data.split("train")
    return float(torch.linalg.vector_norm(logits(final_model(cfg, result), X)
                                          - logits(final_model(lin_cfg, lin_result), X)))


def ntk_at_init(cfg: RunConfig, inputs: torch.Tensor, params=None) -> torch.Tensor:
    """The margin NTK ``K = J J^T`` (float64) at the run's theta_0 on ``inputs``, over the
    trainable parameters (or ``params``, `lalr_core.methods.ntk.empirical.ntk_params`)."""
    return ntk.empirical_ntk(initial_model(cfg), inputs, params=params, output=margin,
                             dtype=torch.float64)
