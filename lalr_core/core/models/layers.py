"""Which modules are "layers": the one rule every per-layer method uses.

A layer is a module whose weight is a matrix (or a stack of matrices): every convolution (1-3-D,
transposed too) and every linear map, in ``named_modules`` registration order. This is seed
001's "layer weight matrices" (spectra, TempBalance's per-layer lrs; ``[Ye2023]``) and seed
004's conv / linear weights (orthogonalised gradients). Biases and norms are not layers; the
callers decide what follows a layer (e.g. `tempbalance.layer_groups` ties BN to its conv).
Channel pruning (`channel_masks.prunable_layers`) narrows this to ``nn.Conv2d``.
"""

from __future__ import annotations

from torch import nn

KINDS = {"conv": nn.modules.conv._ConvNd, "linear": nn.Linear}


def weight_layers(model: nn.Module, kinds: tuple[str, ...] = ("conv", "linear")
                  ) -> dict[str, nn.Module]:
    """``{module name: module}`` of the layers of ``model`` of the given ``kinds``.

    Args:
        model: any module (the root itself counts, named ``""``).
        kinds: a subset of ``("conv", "linear")``.

    Raises:
        ValueError: an unknown kind.
    """
    if unknown := [k for k in kinds if k not in KINDS]:
        raise ValueError(f"unknown layer kinds {unknown}; choose from {tuple(KINDS)}")
    types = tuple(KINDS[k] for k in kinds)
    return {name: mod for name, mod in model.named_modules() if isinstance(mod, types)}
