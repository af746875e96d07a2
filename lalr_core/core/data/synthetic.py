"""Synthetic data: in-memory images of a dataset's real shapes and classes (no disk access).

Part of `lalr_core.core.data` (the package docstring describes the whole flow).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lalr_core.core.data.specs import DATASETS
from lalr_core.core.data.tensors import ImageData

SYNTHETIC_SIZES = (512, 128)  # default (n_train, n_test) of synthetic data, samples


def synthetic_data(name: str, n_train: int, n_val: int, n_test: int, seed: int,
                   device: torch.device) -> ImageData:
    """Class-dependent smooth mean patterns plus unit Gaussian noise, in memory."""
    spec = DATASETS[name]
    C, S, K = spec.in_channels, spec.image_size, spec.num_classes
    g = torch.Generator().manual_seed(seed * 4)
    # Patterns drawn on a 4x4 grid and upsampled: low-frequency, so a CNN can pick them up.
    patterns = 0.5 * F.interpolate(torch.randn(K, C, 4, 4, generator=g), size=(S, S),
                                   mode="bilinear", align_corners=False)

    def draw(n: int, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
        gs = torch.Generator().manual_seed(seed * 4 + offset)  # one stream per split
        y = torch.randint(0, K, (n,), generator=gs)
        X = patterns[y] + torch.randn(n, C, S, S, generator=gs)
        return X.to(device), y.to(device)

    (Xtr, ytr), (Xv, yv), (Xte, yte) = draw(n_train, 1), draw(n_val, 2), draw(n_test, 3)
    return ImageData(Xtr, ytr, Xv, yv, Xte, yte, name, K, C, S, synthetic=True)
