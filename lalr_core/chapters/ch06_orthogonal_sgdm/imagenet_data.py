"""ImageNet data of the chapter's runs: folder layout, transforms, loaders and samplers.

The expected layout and how to prepare it from the ILSVRC2012 tars are in the docstring of
`lalr_core.chapters.ch06_orthogonal_sgdm.imagenet`, which trains on these loaders (and
re-exports every name of this module).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Sampler

from lalr_core.core.data import DatasetMissingError, data_root

LAYOUT = "<root>/imagenet/{train,val}/<wnid>/*.JPEG (torchvision ImageFolder)"
# torchvision's ImageNet statistics and its reference recipe (pytorch/vision
# references/classification/presets.py): resize 256 then centre-crop 224 for evaluation
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESIZE_RATIO = 256 / 224


def imagenet_dir(root: str | Path | None = None) -> Path | None:
    """The ImageNet folder ``<root>/imagenet`` if it has class folders in ``train`` and ``val``.

    Args:
        root: the data root (None: `lalr_core.core.data.data_root`).

    Returns:
        The folder, or None when the layout of `imagenet`'s module docstring is absent.
    """
    path = data_root(root) / "imagenet"
    for split in ("train", "val"):
        if not (path / split).is_dir() or not any(d.is_dir() for d in (path / split).iterdir()):
            return None
    return path


def require_imagenet(root: str | Path | None = None) -> Path:
    """Like `imagenet_dir`, but raise ``DatasetMissingError`` naming the layout when absent."""
    path = imagenet_dir(root)
    if path is None:
        raise DatasetMissingError(
            f"ImageNet not found under {data_root(root) / 'imagenet'}; expected {LAYOUT}. "
            "See lalr_core.chapters.ch06_orthogonal_sgdm.imagenet's docstring for how to prepare "
            "it from the ILSVRC2012 tars.")
    return path


@dataclass(frozen=True)
class ImageNetData:
    """A run's ImageNet data: the train and validation loaders and the run's device.

    ``to(device)`` moves nothing (the loaders read from disk): it records the device, to which
    the tasks of `imagenet` move each batch.
    """

    train: DataLoader
    val: DataLoader
    device: torch.device

    def to(self, device: torch.device | str) -> ImageNetData:
        return replace(self, device=torch.device(device))


class EpochSampler(Sampler):
    """A fresh permutation per epoch from ``(seed, epoch)``, optionally skipping its start.

    Because the order depends on the epoch only, a run resumed from a checkpoint sees the same
    data order. ``skip`` leaves out an epoch's first samples (the training loop resumes at
    epoch boundaries only, so its runs never skip).
    """

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch, self.skip = n, seed, 0, 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        """Draw the order of ``epoch`` (0-based) and leave out its first ``skip`` samples."""
        self.epoch, self.skip = epoch, skip

    def __iter__(self):
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return iter(torch.randperm(self.n, generator=gen)[self.skip:].tolist())

    def __len__(self) -> int:
        return self.n - self.skip


class TwoViews:
    """Apply two transforms to one image: the Barlow Twins pair ``(y1, y2)``."""

    def __init__(self, first, second):
        self.first, self.second = first, second

    def __call__(self, img):
        return self.first(img), self.second(img)


def _bt_view(crop: int, blur_p: float, solarize_p: float):
    """One Barlow Twins view (official code's ``Transform``, after BYOL, Grill et al. 2020).

    Blur: torchvision's kernel is finite; 23 px at 224 (~10% of the side, as SimCLR) with
    sigma in [0.1, 2], where the official code uses PIL's untruncated blur.
    """
    from torchvision import transforms as T

    kernel = 2 * (crop // 20) + 1  # odd; 23 at 224
    return T.Compose([
        T.RandomResizedCrop(crop, interpolation=T.InterpolationMode.BICUBIC),
        T.RandomHorizontalFlip(),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2),
        T.RandomApply([T.GaussianBlur(kernel, sigma=(0.1, 2.0))], p=blur_p),
        T.RandomSolarize(128, p=solarize_p),
        T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])


def imagenet_transforms(crop: int = 224, two_views: bool = False):
    """``(train, eval)`` transforms: torchvision's ResNet recipe (the thesis states none) or BT's views.

    Train: RandomResizedCrop(crop) + horizontal flip; with ``two_views``, the asymmetric
    BT pair (blur p 1.0 / 0.1, solarisation p 0.0 / 0.2). Eval: resize the short side to
    ``crop * 256/224``, centre-crop ``crop``. Both end with the ImageNet mean/std.

    Raises:
        ValueError: ``crop < 8``.
    """
    from torchvision import transforms as T

    if crop < 8:
        raise ValueError(f"crop must be >= 8 pixels, got {crop}")
    norm = [T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
    evaluation = T.Compose([T.Resize(round(crop * RESIZE_RATIO)), T.CenterCrop(crop), *norm])
    if two_views:
        return TwoViews(_bt_view(crop, 1.0, 0.0), _bt_view(crop, 0.1, 0.2)), evaluation
    return T.Compose([T.RandomResizedCrop(crop), T.RandomHorizontalFlip(), *norm]), evaluation


def imagenet_loaders(root: str | Path | None, batch_size: int, workers: int, *,
                     two_views: bool = False, seed: int = 0,
                     crop: int = 224) -> tuple[DataLoader, DataLoader]:
    """Train and validation loaders over the ImageFolder layout.

    Args:
        root: the data root (None: the default); see `require_imagenet`.
        batch_size: images per batch (both loaders).
        workers: loader processes (0: load in the calling process).
        two_views: train batches are ``((y1, y2), labels)`` BT pairs; the last partial batch
            is dropped (BN and the cross-correlation need full batches).
        seed: seeds the per-epoch order (`EpochSampler`) and the workers' augmentation RNG.
        crop: image side in pixels.

    Returns:
        ``(train, val)``; train's ``sampler`` is an `EpochSampler` (call ``set_epoch``).

    Raises:
        DatasetMissingError: no ImageNet under ``root``.
        ValueError: bad sizes, or train and val with different class folders.
    """
    from torchvision.datasets import ImageFolder

    if batch_size < 1 or workers < 0:
        raise ValueError(f"need batch_size >= 1 and workers >= 0, got {batch_size}, {workers}")
    path = require_imagenet(root)
    train_tf, eval_tf = imagenet_transforms(crop, two_views)
    train_set = ImageFolder(path / "train", train_tf)
    val_set = ImageFolder(path / "val", eval_tf)
    if train_set.classes != val_set.classes:  # else the label indices would disagree
        missing = sorted(set(train_set.classes) ^ set(val_set.classes))[:5]
        raise ValueError(f"train and val class folders differ, e.g. {missing}")
    common = dict(batch_size=batch_size, num_workers=workers,
                  pin_memory=torch.cuda.is_available(), persistent_workers=False)
    train = DataLoader(train_set, sampler=EpochSampler(len(train_set), seed), drop_last=two_views,
                       generator=torch.Generator().manual_seed(seed), **common)
    return train, DataLoader(val_set, shuffle=False, **common)


def seed_epoch(loader: DataLoader, seed: int, epoch: int, skip_batches: int = 0) -> None:
    """Data order, worker seeds and (``workers=0``) the global augmentation RNG of an epoch."""
    loader.sampler.set_epoch(epoch, skip_batches * loader.batch_size)
    loader.generator.manual_seed(seed * 1_000_003 + epoch)
    if loader.num_workers == 0:  # torchvision's transforms draw from the global RNG
        torch.manual_seed(seed * 1_000_003 + epoch)

