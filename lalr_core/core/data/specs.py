"""Dataset specs and names: ``DATASETS``, the name check, the data root, the missing-data error.

Part of `lalr_core.core.data` (the package docstring describes the whole flow).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torchvision.datasets as tvd

ROOT_ENV_VAR = "LALR_DATA_ROOT"


@dataclass(frozen=True)
class DatasetSpec:
    """What ``load_data`` needs to know about one dataset.

    ``mean``/``std`` are per-channel constants on the [0, 1] pixel scale.
    """

    tv_class: type | None   # torchvision dataset class (None: read by ``_read_digits``)
    in_channels: int
    image_size: int         # pixels per side (square images)
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    train_size: int         # samples in the official train split
    test_size: int          # samples in the official test split


DATASETS: dict[str, DatasetSpec] = {
    # CIFAR-10 constants as in the sources' code (the std is the often-quoted 0.2023 set).
    "cifar10": DatasetSpec(tvd.CIFAR10, 3, 32, 10, (0.4914, 0.4822, 0.4465),
                           (0.2023, 0.1994, 0.2010), 50_000, 10_000),
    "cifar100": DatasetSpec(tvd.CIFAR100, 3, 32, 100, (0.5071, 0.4865, 0.4409),
                            (0.2673, 0.2564, 0.2762), 50_000, 10_000),
    "mnist": DatasetSpec(tvd.MNIST, 1, 28, 10, (0.1307,), (0.3081,), 60_000, 10_000),
    "fashion_mnist": DatasetSpec(tvd.FashionMNIST, 1, 28, 10, (0.2860,), (0.3530,),
                                 60_000, 10_000),
    # sklearn digits (1797 images, values 0..16 stored as uint8 round(v * 255 / 16)); the
    # "official" split is our stratified 1347/450 (random_state 0); mean/std of its
    # train part (tests/test_data.py recomputes them).
    "digits": DatasetSpec(None, 1, 8, 10, (0.3053,), (0.3758,), 1347, 450),
}
DIGITS_SPLIT_SEED = 0  # the collection's digits split (our choice)


class DatasetMissingError(RuntimeError):
    """The raw files of a dataset are absent and could not be fetched."""


def check_dataset_name(name: str) -> None:
    """Raise unless ``name`` is a key of ``DATASETS``.

    Args:
        name: dataset name.

    Raises:
        ValueError: naming the bad value and the valid ones.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}")


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: ``root`` if given, else ``$LALR_DATA_ROOT``, else ``<repo>/data/datasets``.

    Args:
        root: explicit root, or None.

    Returns:
        The root as a ``Path`` (not created).
    """
    if root is not None:
        return Path(root)
    if os.environ.get(ROOT_ENV_VAR):
        return Path(os.environ[ROOT_ENV_VAR])
    # this file is <repo>/lalr_core/core/data/specs.py
    return Path(__file__).resolve().parents[3] / "data" / "datasets"
