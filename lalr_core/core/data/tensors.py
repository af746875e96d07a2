"""Device-resident tensors: ``ImageData``, ``normalise``, and the split checks and indices.

The checks and the seeded train/validation/test indices are those ``load_data`` applies.

Part of `lalr_core.core.data` (the package docstring describes the whole flow).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from lalr_core.core.data.specs import DATASETS


@dataclass
class ImageData:
    """Train/validation/test tensors of one dataset on one device.

    ``X_*`` are float32 ``[N, C, H, W]``, normalised per channel; ``y_*`` are int64 ``[N]``.
    """

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_val: torch.Tensor
    y_val: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    name: str
    num_classes: int
    in_channels: int
    image_size: int
    synthetic: bool = False

    _TENSORS = ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test")

    def to(self, device: str | torch.device) -> ImageData:
        """Move every tensor.

        Args:
            device: target device.

        Returns:
            A new ``ImageData`` on ``device`` (this one is unchanged).
        """
        return dataclasses.replace(self, **{k: getattr(self, k).to(device) for k in self._TENSORS})

    @property
    def device(self) -> torch.device:
        """The device of the tensors."""
        return self.X_train.device

    def summary(self) -> dict[str, Any]:
        """Sizes and identity, for logs and provenance.

        Returns:
            ``{"name", "synthetic", "num_classes", "in_channels", "image_size", "n_train",
            "n_val", "n_test", "device"}``.
        """
        return {"name": self.name, "synthetic": self.synthetic, "num_classes": self.num_classes,
                "in_channels": self.in_channels, "image_size": self.image_size,
                "n_train": len(self.y_train), "n_val": len(self.y_val),
                "n_test": len(self.y_test), "device": str(self.device)}


def check_count(label: str, value: Any, *, allow_none: bool) -> None:
    """Raise ValueError unless ``value`` is a non-negative int (or None, if ``allow_none``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{label} must be a non-negative int{' or None' if allow_none else ''}, "
                         f"got {value!r}")


def check_sizes(n_train: int | None, n_val: int, n_test: int | None,
                train_avail: int, test_avail: int) -> None:
    """Raise ValueError when the requested sizes exceed what the splits hold."""
    if n_val + (n_train or 0) > train_avail or (n_train is None and n_val >= train_avail):
        raise ValueError(f"n_train={n_train} + n_val={n_val} needs more than the {train_avail} "
                         "samples of the train split (n_train=None takes the rest, at least 1)")
    if n_test is not None and n_test > test_avail:
        raise ValueError(f"n_test={n_test} exceeds the {test_avail} samples of the test split")


def split_indices(train_avail: int, test_avail: int, n_train: int | None, n_val: int,
                  n_test: int | None, split_seed: int) -> tuple[torch.Tensor, ...]:
    """Sorted train/val/test indices.

    Val is the first ``n_val`` of one seeded permutation and train the next ``n_train``, so
    val does not depend on ``n_train`` and train sets are nested as ``n_train`` grows.
    """
    gen = torch.Generator().manual_seed(split_seed)
    perm = torch.randperm(train_avail, generator=gen)
    stop = train_avail if n_train is None else n_val + n_train
    idx_val, idx_train = perm[:n_val], perm[n_val:stop]
    test_perm = torch.randperm(test_avail, generator=gen)  # drawn after perm: seed-determined
    idx_test = torch.arange(test_avail) if n_test is None else test_perm[:n_test]
    return idx_train.sort().values, idx_val.sort().values, idx_test.sort().values


def normalise(X: torch.Tensor, name: str) -> torch.Tensor:
    """Map uint8 pixels to float32 ``(X / 255 - mean) / std`` with ``DATASETS[name]``'s constants.

    Args:
        X: uint8 images ``[N, C, H, W]``.
        name: a key of ``DATASETS``.

    Returns:
        float32 ``[N, C, H, W]`` on ``X``'s device.
    """
    spec = DATASETS[name]
    mean = torch.tensor(spec.mean, device=X.device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=X.device).view(1, -1, 1, 1)
    return (X.float().div_(255.0) - mean).div_(std)
