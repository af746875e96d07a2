"""Muon (Jordan et al. 2024): SGD-momentum whose update of every hidden weight matrix is
orthogonalised by a Newton-Schulz iteration; embeddings, the output layer, biases and gains
are left to AdamW, as its authors recommend.

Source: Keller Jordan, Yuchen Jin, Vlado Boza, Jiacheng You, Franz Cesista, Laker Newhouse,
Jeremy Bernstein, "Muon: An optimizer for hidden layers in neural networks", 2024,
<https://kellerjordan.github.io/posts/muon/> (code: <https://github.com/KellerJordan/Muon>).
It descends from the thesis's Orthogonal-SGDM (`lalr_core.methods.orthogonal.transform`):
Orth-SGDM orthogonalises the *gradient* and then applies momentum, Muon orthogonalises the
*momentum* (Nesterov) and scales each matrix's step by ``sqrt(max(1, fan_out / fan_in))``.

The update is ``pytorch_optimizer.Muon`` (a well-kept package; its defaults are the authors':
lr 0.02, momentum 0.95, Nesterov, 5 Newton-Schulz steps with the quintic coefficients, AdamW
betas (0.9, 0.95)); this module only decides which parameters it orthogonalises. That needs
the model, so the split is a method (`MuonSplit`, ``RunConfig(optimizer="muon",
methods=(MuonSplit(),))``) and the ``"muon"`` factory refuses parameters without it.

* hidden (Muon): the weight of every ``nn.Linear`` and ``nn.Conv*`` except the network's input
  layer and its output layer; a conv kernel is flattened to ``out x (in*kh*kw)`` by the package,
  as the authors do for the CIFAR-10 speedrun;
* the rest (AdamW at ``lr * adamw_ratio``): ``nn.Embedding`` weights (the input layer of a
  transformer; then the first linear is hidden), the first conv/linear of a network with no
  embedding (the stem), the last conv/linear (the head), biases and norm gains.

``torch.optim.Muon`` (torch 2.9+) is not used: it accepts 2-D parameters only and refuses a
conv kernel, and it has no AdamW part for the other parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytorch_optimizer
import torch
from torch import nn

from lalr_core.core.loop.config import METHODS, OPTIMIZERS, MethodConfig, RunConfig

MUON_LR = 0.02          # the authors' default lr of the orthogonalised updates
ADAMW_RATIO = 0.015     # the AdamW part's lr / Muon's lr: the package defaults 3e-4 / 0.02
MUON_MOMENTUM = 0.95    # the authors' default
ADAMW_BETAS = (0.9, 0.95)
_MATRIX_LAYERS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)


def hidden_matrices(model: nn.Module) -> list[str]:
    """Names of the weights Muon orthogonalises (module docstring), in module order."""
    layers = [(name, m) for name, m in model.named_modules() if isinstance(m, _MATRIX_LAYERS)]
    has_embedding = any(isinstance(m, nn.Embedding) for m in model.modules())
    first = 0 if has_embedding else 1  # with an embedding, the first linear is already hidden
    hidden = layers[first:-1] if len(layers) > 1 else []
    return [f"{name}.weight" if name else "weight" for name, _ in hidden]


def muon_groups(model: nn.Module) -> list[dict]:
    """Two param groups: hidden matrices (``use_muon=True``) and the rest (AdamW)."""
    hidden = set(hidden_matrices(model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in named if n in hidden], "use_muon": True,
               "names": [n for n, _ in named if n in hidden]},
              {"params": [p for n, p in named if n not in hidden], "use_muon": False,
               "names": [n for n, _ in named if n not in hidden]}]
    return [g for g in groups if g["params"]]


@METHODS.register("muon_split")
@dataclass(frozen=True)
class MuonSplit(MethodConfig):
    """Which parameters Muon orthogonalises (`hidden_matrices`); pair it with
    ``optimizer="muon"``."""

    name = "muon_split"

    def param_groups(self, model, lr: float) -> list[dict]:
        return muon_groups(model)


@OPTIMIZERS.register("muon")
def muon(params, cfg: RunConfig, adamw_ratio: float = ADAMW_RATIO,
         momentum: float = MUON_MOMENTUM) -> torch.optim.Optimizer:
    """``pytorch_optimizer.Muon`` at the run's ``lr`` (the Muon groups) and ``lr *
    adamw_ratio`` (the AdamW group, via the loop's ``lr_scale``), the run's ``wd`` decoupled
    in both, ``momentum`` Nesterov (the run's ``momentum`` is SGDM's and is not used).

    Raises:
        ValueError: the params are not `MuonSplit`'s groups, or a bad ratio / momentum.
    """
    groups = list(params)
    if not groups or not isinstance(groups[0], dict) or \
            any("use_muon" not in g for g in groups):
        raise ValueError("optimizer 'muon' needs the hidden / other split of method "
                         "MuonSplit: RunConfig(optimizer='muon', methods=(MuonSplit(),))")
    if not adamw_ratio > 0:
        raise ValueError(f"Muon adamw_ratio must be > 0, got {adamw_ratio!r}")
    if not 0 <= momentum < 1:
        raise ValueError(f"Muon momentum must lie in [0, 1), got {momentum!r}")
    for g in groups:
        g.pop("names", None)
        g["lr_scale"] = 1.0 if g["use_muon"] else adamw_ratio
        g["lr"] = cfg.lr * g["lr_scale"]
    return pytorch_optimizer.Muon(groups, lr=cfg.lr, momentum=momentum, weight_decay=cfg.wd,
                                  adamw_lr=cfg.lr * adamw_ratio, adamw_betas=ADAMW_BETAS,
                                  adamw_wd=cfg.wd)
