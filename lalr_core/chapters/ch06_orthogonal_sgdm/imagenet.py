"""ImageNet runs of seed 004 chapter 5 (chapter 06): figs 5.7 and 5.8 at full scale.

* fig 5.7: SGDM vs Orthogonal-SGDM, torchvision ResNet-34, batch 1024, lr 1e-2, momentum 0.9,
  wd 5e-4, 100 epochs, no lr schedule (`ImageNetClassifierTask`, `classifier_config`).
* fig 5.8: Barlow Twins loss during pre-training, LARS vs Orthogonal-LARS (only the
  backbone's conv weights orthogonalised), batch 1024, other settings the official BT ones
  (`ImageNetBarlowTwinsTask`, `barlow_twins_config`).

Both are tasks of the one training loop (`lalr_core.core.loop.train`), like the reduced runs of
`unsupervised`: the task loads the folder, builds the model, yields the batches (seeding each
epoch's order, `seed_epoch`) and computes the loss; the loop supplies seeding, the optimiser
(``sgdm``, or ``lars`` with ``optimizer_params`` ``eta``), the orthogonalising method
(`GradTransform`), the history, divergence handling and per-epoch checkpoints. Barlow Twins'
warm-up + cosine schedule (`bt_lr`) is the task's per-step lr factor, and its two LARS groups
carry their lrs as ``lr_scale``. ``cfg.dataset`` is not read (ImageNet is a folder of JPEGs,
not one of the in-memory ``DATASETS``): the task names the data; the other in-memory data
settings of a ``RunConfig`` (``synthetic``, ``n_train``, ``augment``, ...) must keep their
defaults. Checkpoints are per epoch only: a killed run resumes at its last finished epoch
(the hand-written loops before these tasks also resumed mid-epoch).

The notebook keeps its parameter dicts: ``classifier_unit(params)`` and
``barlow_twins_unit(params)`` are cached units whose ``params`` override
``CLASSIFIER_DEFAULTS`` / ``BARLOW_DEFAULTS`` (the settings' ``f57_imagenet`` is checked
against the former); `classifier_config` and `barlow_twins_config` turn such a dict into the
``RunConfig`` they train, `train_imagenet_classifier` and `train_imagenet_barlow_twins` train
it (with an optional checkpoint folder).

Expected layout (torchvision ``ImageFolder``), under the data root (``$LALR_DATA_ROOT``,
default ``<repo>/data/datasets``)::

    imagenet/train/<wnid>/*.JPEG    # 1000 class folders, 1,281,167 images
    imagenet/val/<wnid>/*.JPEG      # the same 1000 folders, 50,000 images

How to prepare it: download ``ILSVRC2012_img_train.tar``, ``ILSVRC2012_img_val.tar`` and
``ILSVRC2012_devkit_t12.tar.gz`` from image-net.org (registration needed) into
``<root>/imagenet/`` and run ``torchvision.datasets.ImageNet(<root>/imagenet, split=s)`` once
for ``s`` in ``"train"``, ``"val"``. It unpacks the per-class train tars and re-sorts the
flat validation images into ``<wnid>`` folders with the devkit's ground truth (needs scipy).

The data side (folder layout, transforms, loaders, samplers) is `imagenet_data`, whose names
are re-exported here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.chapters.ch06_orthogonal_sgdm.imagenet_data import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    LAYOUT,
    RESIZE_RATIO,
    EpochSampler,
    ImageNetData,
    TwoViews,
    imagenet_dir,
    imagenet_loaders,
    imagenet_transforms,
    require_imagenet,
    seed_epoch,
)
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.core.models.networks import TORCHVISION_ARCHS, TORCHVISION_NAMES, build_model
from lalr_core.core.runs import active_cache
from lalr_core.core.models.ssl import BarlowTwins, barlow_twins_loss
from lalr_core.core.loop.train import resolve_device, train
from lalr_core.methods.orthogonal.polar import METHODS as ORTH_METHODS
from lalr_core.methods.orthogonal.transform import GradTransform

__all__ = [  # the data names are re-exported from imagenet_data
    "BARLOW_DEFAULTS", "CLASSIFIER_DEFAULTS", "IMAGENET_MEAN", "IMAGENET_STD", "LAYOUT",
    "RESIZE_RATIO", "EpochSampler", "ImageNetBarlowTwinsTask", "ImageNetClassifierTask",
    "ImageNetData", "ImageNetTask", "TwoViews", "barlow_twins_config", "barlow_twins_unit",
    "bt_lr", "classifier_config", "classifier_unit", "imagenet_dir", "imagenet_loaders",
    "imagenet_transforms", "require_imagenet", "seed_epoch", "train_imagenet_barlow_twins",
    "train_imagenet_classifier",
]

CLASSIFIER_DEFAULTS: dict[str, Any] = dict(  # fig 5.7 (sec. 5.4.1.1 "untuned")
    model="resnet34", grad_transform="none", orth_method="svd",  # "none" = SGDM, "orth"
    lr=1e-2, momentum=0.9, wd=5e-4,  # lr per step, constant (§5.4.1.1 names no schedule)
    batch_size=1024, epochs=100, workers=8, seed=0, device="auto",
    bf16=True,  # autocast on CUDA only; weights, gradients and SVDs stay float32
    root=None, crop=224,  # crop: training/evaluation side in pixels (tests use 32)
    max_steps_per_epoch=None,  # None = the whole training set every epoch
)
BARLOW_DEFAULTS: dict[str, Any] = dict(  # fig 5.8; Zbontar et al. 2021 sec. 4 / official code
    backbone="resnet50", projector=(8192, 8192, 8192), lambd=5.1e-3,
    grad_transform="none", orth_method="svd",  # "orth": backbone conv weights only
    lr_weights=0.2, lr_biases=4.8e-3,  # per 256 images: the peak lr is lr * batch_size / 256
    momentum=0.9, eta=1e-3, wd=1.5e-6,  # LARS; biases and BN: no wd, no adaptation
    batch_size=1024, epochs=1000, warmup_epochs=10, workers=8, seed=0, device="auto",
    bf16=True, root=None, crop=224,
    max_steps=None,  # stop after this many steps; the lr schedule still spans `epochs`
)
# RunConfig fields of in-memory data that the ImageNet tasks cannot honour
_IN_MEMORY = ("synthetic", "n_train", "n_val", "n_test", "split_seed", "augment", "augmix",
              "width")


# ----------------------------------------------------------------------------- helpers
def _resolve(params: Mapping[str, Any], defaults: dict) -> dict:
    """Defaults updated by ``params``; ``ValueError`` on unknown keys or bad values."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"unknown parameters {unknown}; known: {sorted(defaults)}")
    p = {**defaults, **params}
    if p["grad_transform"] not in ("none", "orth"):
        raise ValueError(f"grad_transform must be 'none' or 'orth', got {p['grad_transform']!r}")
    if p["orth_method"] not in ORTH_METHODS:
        raise ValueError(f"orth_method must be one of {ORTH_METHODS}, got {p['orth_method']!r}")
    return p


def _torchvision_name(name: str) -> str:
    """``resnet34`` or ``resnet34_tv`` -> the model name ``resnet34_tv``."""
    arch = name.removesuffix("_tv")
    if arch not in TORCHVISION_ARCHS:
        raise ValueError(f"unknown torchvision model {name!r}; choose one of {TORCHVISION_ARCHS}")
    return f"{arch}_tv"


def _orth(p: dict, layers: str, prefix: str = "") -> tuple:
    """The run's methods: Orth (``p["orth_method"]``) on the chosen weights, or none."""
    if p["grad_transform"] == "none":
        return ()
    return (GradTransform("orth", method=p["orth_method"], layers=layers, prefix=prefix),)


def _to(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    fmt = torch.channels_last if device.type == "cuda" and x.ndim == 4 else torch.preserve_format
    return x.to(device, non_blocking=True, memory_format=fmt)


def _autocast(cfg: RunConfig, device: torch.device):
    if cfg.bf16 and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _int_at_least(name: str, value, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}{' or None' if allow_none else ''}, "
                         f"got {value!r}")


# ----------------------------------------------------------------------------- tasks
@dataclass(frozen=True)
class ImageNetTask(TaskConfig):
    """What both ImageNet tasks share: the folder, the image side and the loader processes.

    Args:
        crop: training and evaluation image side in pixels (224; tests use 32).
        workers: loader processes (0: load in the training process). Not part of the key.
        root: the data root (None: `lalr_core.core.data.data_root`). Not part of the key.
    """

    crop: int = 224
    workers: int = field(default=8, compare=False)
    root: str | Path | None = field(default=None, compare=False)
    eval_at_start = False

    def __post_init__(self):
        _int_at_least("crop", self.crop, 8)
        _int_at_least("workers", self.workers, 0)

    def check(self, cfg: RunConfig) -> None:
        """Raise ``ValueError`` if ``cfg`` asks for what this task cannot do."""
        defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)}
        changed = [n for n in _IN_MEMORY if getattr(cfg, n) != defaults[n]]
        if changed:
            raise ValueError(f"the ImageNet tasks read the image folder and use none of "
                             f"{changed}: leave them at their defaults")
        if cfg.model not in TORCHVISION_NAMES:
            raise ValueError(f"unknown torchvision model {cfg.model!r}; choose one of "
                             f"{TORCHVISION_NAMES}")

    def channels_last(self, cfg: RunConfig) -> bool:
        return resolve_device(cfg.device).type == "cuda"

    def start_epoch(self, cfg: RunConfig, data: ImageNetData, epoch: int) -> None:
        seed_epoch(data.train, cfg.seed, epoch)


@TASKS.register("imagenet_classifier")
@dataclass(frozen=True)
class ImageNetClassifierTask(ImageNetTask):
    """Fig 5.7: cross-entropy of a torchvision classifier (``cfg.model``, e.g.
    ``resnet34_tv``) on ImageNet, torchvision's recipe (`imagenet_transforms`).

    Evaluation: top-1 accuracy and mean cross-entropy on ImageNet's validation split (the
    source's "test" numbers); ``"test"`` is NaN (ImageNet's test labels are not public). A run
    resumed from its checkpoint may have more ``epochs`` (no schedule depends on them).

    Args:
        max_steps_per_epoch: train only the first this many batches of each epoch (None: all).
    """

    name = "imagenet_classifier"
    resume_free = ("epochs",)
    max_steps_per_epoch: int | None = None

    def __post_init__(self):
        super().__post_init__()
        _int_at_least("max_steps_per_epoch", self.max_steps_per_epoch, 1, allow_none=True)

    def load(self, cfg: RunConfig, device: torch.device) -> ImageNetData:
        self.check(cfg)
        train_dl, val_dl = imagenet_loaders(self.root, cfg.batch_size, self.workers,
                                            seed=cfg.seed, crop=self.crop)
        return ImageNetData(train_dl, val_dl, device)

    def build_model(self, cfg: RunConfig) -> nn.Module:
        from torchvision.datasets.folder import find_classes  # ImageFolder's class list

        self.check(cfg)
        classes, _ = find_classes(require_imagenet(self.root) / "train")
        return build_model(cfg.model, num_classes=len(classes), image_size=self.crop)

    def batches(self, cfg: RunConfig, data: ImageNetData, generator: torch.Generator):
        steps = min(len(data.train), self.max_steps_per_epoch or len(data.train))
        for i, (X, y) in enumerate(data.train):
            yield _to(X, data.device), y.to(data.device, non_blocking=True)
            if i + 1 == steps:  # return before the loader reads another batch
                return

    def loss(self, model: nn.Module, batch: tuple, autocast, generator):
        X, y = batch
        with autocast:
            logits = model(X)
            loss = F.cross_entropy(logits.float(), y)
        return loss, (logits.detach().argmax(1) == y).sum(), len(y)

    @torch.no_grad()
    def evaluate(self, cfg: RunConfig, model: nn.Module, data: ImageNetData,
                 split: str) -> tuple[float, float]:
        """Mean cross-entropy and top-1 accuracy (in [0, 1]) over the validation loader."""
        if split != "val":
            return float("nan"), float("nan")
        device, was_training = data.device, model.training
        model.eval()
        loss_sum, correct, n = torch.zeros((), device=device), torch.zeros((), device=device), 0
        for X, y in data.val:
            X, y = _to(X, device), y.to(device, non_blocking=True)
            with _autocast(cfg, device):
                logits = model(X).float()
            loss_sum += F.cross_entropy(logits, y, reduction="sum")
            correct += (logits.argmax(1) == y).sum()
            n += len(y)
        model.train(was_training)
        return loss_sum.item() / max(n, 1), correct.item() / max(n, 1)


def bt_lr(step: int, total_steps: int, warmup_steps: int, batch_size: int) -> float:
    """Barlow Twins' lr multiplier at 0-based ``step`` (the official code's schedule).

    Linear warm-up from 0 to ``batch_size/256`` over ``warmup_steps``, then a cosine decay to
    1/1000 of that peak at ``total_steps``. Each LARS group multiplies it by its own lr (0.2
    for weights, 0.0048 for biases/BN), so batch 1024 peaks at 0.8 where 2048 peaks at 1.6.

    >>> bt_lr(5, 100, 10, 512), bt_lr(10, 100, 10, 512)
    (1.0, 2.0)
    """
    peak = batch_size / 256
    if step < warmup_steps:
        return peak * step / warmup_steps
    q = 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / (total_steps - warmup_steps)))
    return peak * q + peak * 1e-3 * (1 - q)


@TASKS.register("imagenet_barlow_twins")
@dataclass(frozen=True)
class ImageNetBarlowTwinsTask(ImageNetTask):
    """Fig 5.8: Barlow Twins pre-training of a torchvision ResNet trunk (``cfg.model``, e.g.
    ``resnet50_tv``, its classifier removed) on ImageNet's BT views (`imagenet_transforms`).

    The lr follows `bt_lr` per step (warm-up over ``warmup_epochs``, cosine to the end of
    ``cfg.epochs``; ``cfg.schedule`` must be ``"constant"``): ``cfg.lr`` is the weights' lr
    per 256 images (the official 0.2) and the LARS group without adaptation (biases and BN)
    runs at ``lr_biases`` (its ``lr_scale`` is ``lr_biases / cfg.lr``). Orth-LARS
    orthogonalises only the trunk's conv weights (``GradTransform(layers="conv",
    prefix="trunk.")``; sec. 5.5.6). No evaluation (NaN): the figure is the training loss. A
    run resumed from its checkpoint may have another ``max_steps``.

    Args:
        projector: the projector's hidden and output widths.
        lambd: weight of the redundancy-reduction term.
        lr_biases: lr of biases and BN parameters per 256 images.
        warmup_epochs: epochs of linear warm-up (``< cfg.epochs``).
        max_steps: stop after this many steps in all (None: ``cfg.epochs`` epochs).
    """

    name = "imagenet_barlow_twins"
    resume_free = ("task.max_steps",)
    projector: tuple = (8192, 8192, 8192)
    lambd: float = 5.1e-3
    lr_biases: float = 4.8e-3
    warmup_epochs: int = 10
    max_steps: int | None = None

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "projector", tuple(int(w) for w in self.projector))
        _int_at_least("warmup_epochs", self.warmup_epochs, 0)
        _int_at_least("max_steps", self.max_steps, 1, allow_none=True)
        if not self.projector or min(self.projector) < 1 or self.lambd < 0 \
                or self.lr_biases <= 0:
            raise ValueError(f"invalid Barlow Twins settings projector={self.projector}, "
                             f"lambd={self.lambd}, lr_biases={self.lr_biases}")

    def check(self, cfg: RunConfig) -> None:
        super().check(cfg)
        if not cfg.model.startswith("resnet"):
            raise ValueError(f"the BT backbone must be a torchvision ResNet, got {cfg.model!r}")
        if self.warmup_epochs >= cfg.epochs or cfg.batch_size < 2:
            raise ValueError(f"need warmup_epochs < epochs and batch_size >= 2, got "
                             f"{self.warmup_epochs}, {cfg.epochs}, {cfg.batch_size}")

    def load(self, cfg: RunConfig, device: torch.device) -> ImageNetData:
        self.check(cfg)
        train_dl, val_dl = imagenet_loaders(self.root, cfg.batch_size, self.workers,
                                            two_views=True, seed=cfg.seed, crop=self.crop)
        if len(train_dl) == 0:
            raise ValueError(f"batch_size {cfg.batch_size} exceeds the "
                             f"{len(train_dl.sampler)} images")
        return ImageNetData(train_dl, val_dl, device)

    def build_model(self, cfg: RunConfig) -> BarlowTwins:
        self.check(cfg)
        trunk = build_model(cfg.model, num_classes=1000, image_size=self.crop)
        dim, trunk.fc = trunk.fc.in_features, nn.Identity()  # 2048-d for ResNet-50
        return BarlowTwins(trunk, dim, self.projector)

    def configure_optimizer(self, cfg: RunConfig, optimizer) -> None:
        for group in optimizer.param_groups:
            group["lr_scale"] = self.lr_biases / cfg.lr if group.get("exclude") else 1.0

    def step_lr_factor(self, cfg: RunConfig, data: ImageNetData, step: int) -> float:
        per_epoch = len(data.train)
        return bt_lr(step, cfg.epochs * per_epoch, self.warmup_epochs * per_epoch,
                     cfg.batch_size)

    def batches(self, cfg: RunConfig, data: ImageNetData, generator: torch.Generator):
        for (y1, y2), _ in data.train:
            yield _to(y1, data.device), _to(y2, data.device)

    def loss(self, model: nn.Module, batch: tuple, autocast, generator):
        y1, y2 = batch
        with autocast:
            z1, z2 = model(y1), model(y2)  # (B, projector[-1])
        return barlow_twins_loss(z1.float(), z2.float(), self.lambd), None, len(y1)

    def evaluate(self, cfg: RunConfig, model, data, split: str) -> tuple[float, float]:
        return float("nan"), float("nan")  # the figure is the training loss


# ----------------------------------------------------------------------------- run configs
def classifier_config(params: Mapping[str, Any]) -> RunConfig:
    """Fig 5.7's ``RunConfig`` from overrides of ``CLASSIFIER_DEFAULTS``.

    SGDM (torch's SGD with momentum and L2 ``wd``) at a constant lr; ``grad_transform="orth"``
    orthogonalises every conv and linear weight (classifier included, the source's default)
    before the step, so weight decay and momentum act on ``O``.

    Raises:
        ValueError: unknown keys or bad values.
    """
    p = _resolve(params, CLASSIFIER_DEFAULTS)
    task = ImageNetClassifierTask(crop=p["crop"], workers=p["workers"], root=p["root"],
                                  max_steps_per_epoch=p["max_steps_per_epoch"])
    cfg = RunConfig(model=_torchvision_name(p["model"]), optimizer="sgdm", lr=p["lr"],
                    momentum=p["momentum"], wd=p["wd"], batch_size=p["batch_size"],
                    epochs=p["epochs"], seed=p["seed"], bf16=p["bf16"], device=p["device"],
                    task=task, methods=_orth(p, "all"))
    task.check(cfg)
    return cfg


def barlow_twins_config(params: Mapping[str, Any]) -> RunConfig:
    """Fig 5.8's ``RunConfig`` from overrides of ``BARLOW_DEFAULTS``: LARS (trust ``eta``)
    at ``lr_weights`` (the run's ``lr``) and ``lr_biases``, or Orth-LARS
    (``grad_transform="orth"``: the trunk's conv weights only).

    Raises:
        ValueError: unknown keys or bad values.
    """
    p = _resolve(params, BARLOW_DEFAULTS)
    if not p["backbone"].startswith("resnet"):
        raise ValueError(f"the BT backbone must be a torchvision ResNet, got {p['backbone']!r}")
    task = ImageNetBarlowTwinsTask(
        crop=p["crop"], workers=p["workers"], root=p["root"], projector=tuple(p["projector"]),
        lambd=p["lambd"], lr_biases=p["lr_biases"], warmup_epochs=p["warmup_epochs"],
        max_steps=p["max_steps"])
    cfg = RunConfig(model=_torchvision_name(p["backbone"]), optimizer="lars",
                    optimizer_params=(("eta", p["eta"]),), lr=p["lr_weights"],
                    momentum=p["momentum"], wd=p["wd"], batch_size=p["batch_size"],
                    epochs=p["epochs"], seed=p["seed"], bf16=p["bf16"], device=p["device"],
                    task=task, methods=_orth(p, "conv", "trunk."))
    task.check(cfg)
    return cfg


def train_imagenet_classifier(params: Mapping[str, Any], *,
                              checkpoint_dir: str | Path | None = None,
                              progress: bool = True) -> dict[str, Any]:
    """Train `classifier_config` ``(params)`` with the one loop (fig 5.7).

    Args:
        params: overrides of ``CLASSIFIER_DEFAULTS`` (unknown keys raise).
        checkpoint_dir: saved after every epoch; a later call with it resumes (``epochs``,
            ``workers``, ``device`` and ``root`` may differ, nothing else).
        progress: tqdm bar over epochs.

    Returns:
        `lalr_core.core.loop.train.train`'s result: ``history`` (one row per epoch: ``step``,
        ``train_loss``, ``val_loss``, ``val_acc``, ...), ``steps``, ``final``, ``diverged``,
        ``optimizer_stats``, ...

    Raises:
        DatasetMissingError: no ImageNet. ValueError: bad parameters, checkpoint mismatch.
    """
    return train(classifier_config(params), checkpoint_dir=checkpoint_dir, checkpoint_every=1,
                 progress=progress)


def train_imagenet_barlow_twins(params: Mapping[str, Any], *,
                                checkpoint_dir: str | Path | None = None,
                                progress: bool = True) -> dict[str, Any]:
    """Train `barlow_twins_config` ``(params)`` with the one loop (fig 5.8).

    Args:
        params: overrides of ``BARLOW_DEFAULTS`` (unknown keys raise).
        checkpoint_dir: saved after every full epoch (not when ``max_steps`` stops the run
            inside one); a later call resumes from the last (``max_steps``, ``workers``,
            ``device`` and ``root`` may differ, nothing else).
        progress: tqdm bar over epochs.

    Returns:
        `lalr_core.core.loop.train.train`'s result: ``steps`` (step, epoch, lr of the weights,
        loss), ``history`` (per epoch), ``diverged``, ``optimizer_stats``, ``wall_time_s``, ...

    Raises:
        DatasetMissingError: no ImageNet. ValueError: bad parameters, checkpoint mismatch.
    """
    return train(barlow_twins_config(params), checkpoint_dir=checkpoint_dir, checkpoint_every=1,
                 progress=progress)


# ----------------------------------------------------------------------------- cached units
def classifier_unit(params: dict) -> dict[str, Any]:
    """`train_imagenet_classifier` as a cached unit (``runs.cached``), resumable from its
    per-epoch checkpoint in the unit's scratch folder."""
    classifier_config(params)  # bad parameters raise before any folder is made
    ckpt = active_cache().checkpoint_dir("ch06_imagenet", params, fn=classifier_unit)
    return train_imagenet_classifier(params, checkpoint_dir=ckpt)


def barlow_twins_unit(params: dict) -> dict[str, Any]:
    """`train_imagenet_barlow_twins` as a cached unit, resumable like `classifier_unit`."""
    barlow_twins_config(params)
    ckpt = active_cache().checkpoint_dir("ch06_bt_imagenet", params, fn=barlow_twins_unit)
    return train_imagenet_barlow_twins(params, checkpoint_dir=ckpt)
