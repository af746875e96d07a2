"""ImageNet runs of seed 004 chapter 5 (chapter 06): figs 5.7 and 5.8 at full scale.

* fig 5.7: SGDM vs Orthogonal-SGDM, torchvision ResNet-34, batch 1024, lr 1e-2, momentum 0.9,
  wd 5e-4, 100 epochs, no lr schedule (`train_imagenet_classifier`).
* fig 5.8: Barlow Twins loss during pre-training, LARS vs Orthogonal-LARS (only the
  backbone's conv weights orthogonalised), batch 1024, other settings the official BT ones
  (`train_imagenet_barlow_twins`).

Expected layout (torchvision ``ImageFolder``), under the data root (``$LALR_DATA_ROOT``,
default ``<repo>/data/datasets``)::

    imagenet/train/<wnid>/*.JPEG    # 1000 class folders, 1,281,167 images
    imagenet/val/<wnid>/*.JPEG      # the same 1000 folders, 50,000 images

How to prepare it: download ``ILSVRC2012_img_train.tar``, ``ILSVRC2012_img_val.tar`` and
``ILSVRC2012_devkit_t12.tar.gz`` from image-net.org (registration needed) into
``<root>/imagenet/`` and run ``torchvision.datasets.ImageNet(<root>/imagenet, split=s)`` once
for ``s`` in ``"train"``, ``"val"``. It unpacks the per-class train tars and re-sorts the
flat validation images into ``<wnid>`` folders with the devkit's ground truth (needs scipy).
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Sampler
from tqdm.auto import tqdm

from .data import DatasetMissingError, data_root
from .models import TORCHVISION_ARCHS, build_model
from .orthogonal import LARS, GradientTransform, lars_param_groups, select_params
from .ssl_models import BarlowTwins, barlow_twins_loss
from .train import _load_checkpoint, _save_checkpoint, resolve_device

LAYOUT = "<root>/imagenet/{train,val}/<wnid>/*.JPEG (torchvision ImageFolder)"
# torchvision's ImageNet statistics and its reference recipe (pytorch/vision
# references/classification/presets.py): resize 256 then centre-crop 224 for evaluation
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESIZE_RATIO = 256 / 224

CLASSIFIER_DEFAULTS: dict[str, Any] = dict(  # fig 5.7 (sec. 5.4.1.1 "untuned")
    model="resnet34", grad_transform="none", orth_method="svd",  # "none" = SGDM, "orth"
    lr=1e-2, momentum=0.9, wd=5e-4,  # lr per step, constant (no schedule, digest G26)
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
_FREE = ("workers", "device", "root")  # may change between a run and its resume


# ----------------------------------------------------------------------------- the data
def imagenet_dir(root: str | Path | None = None) -> Path | None:
    """The ImageNet folder ``<root>/imagenet`` if it has class folders in ``train`` and ``val``.

    Args:
        root: the data root (None: `lalr_core.data.data_root`).

    Returns:
        The folder, or None when the layout of the module docstring is absent.
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
            "See lalr_core.imagenet's docstring for how to prepare it from the ILSVRC2012 tars.")
    return path


class EpochSampler(Sampler):
    """A fresh permutation per epoch from ``(seed, epoch)``, optionally skipping its start.

    Because the order depends on the epoch only, a run resumed from a checkpoint (even one
    taken mid-epoch: ``skip`` samples already seen) sees the same data order.
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
    """``(train, eval)`` transforms: torchvision's ResNet recipe (digest G26) or BT's views.

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


# ----------------------------------------------------------------------------- helpers
def _resolve(params: dict, defaults: dict) -> dict:
    """Defaults updated by ``params``; ``ValueError`` on unknown keys or bad values."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"unknown parameters {unknown}; known: {sorted(defaults)}")
    p = {**defaults, **params}
    if p["grad_transform"] not in ("none", "orth"):
        raise ValueError(f"grad_transform must be 'none' or 'orth', got {p['grad_transform']!r}")
    if p["batch_size"] < 1 or p["epochs"] < 1:
        raise ValueError(f"need batch_size, epochs >= 1, got {p['batch_size']}, {p['epochs']}")
    for key in ("max_steps", "max_steps_per_epoch"):
        if p.get(key) is not None and p[key] < 1:
            raise ValueError(f"{key} must be None or >= 1, got {p[key]}")
    return p


def _torchvision(name: str, num_classes: int, crop: int) -> nn.Module:
    arch = name.removesuffix("_tv")
    if arch not in TORCHVISION_ARCHS:
        raise ValueError(f"unknown torchvision model {name!r}; choose one of {TORCHVISION_ARCHS}")
    return build_model(f"{arch}_tv", num_classes=num_classes, image_size=crop)


def _seed_epoch(loader: DataLoader, seed: int, epoch: int, skip_batches: int = 0) -> None:
    """Data order, worker seeds and (``workers=0``) the global augmentation RNG of an epoch."""
    loader.sampler.set_epoch(epoch, skip_batches * loader.batch_size)
    loader.generator.manual_seed(seed * 1_000_003 + epoch)
    if loader.num_workers == 0:  # torchvision's transforms draw from the global RNG
        torch.manual_seed(seed * 1_000_003 + epoch)


def _to(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    fmt = torch.channels_last if device.type == "cuda" and x.ndim == 4 else torch.preserve_format
    return x.to(device, non_blocking=True, memory_format=fmt)


def _prepare(model: nn.Module, base: torch.optim.Optimizer, chosen: list[str], p: dict,
             device: torch.device, ckpt_dir, state: dict, free: tuple[str, ...]):
    """Wrap ``base`` around ``chosen`` weights and resume from ``ckpt_dir`` if it has a checkpoint.

    Returns ``(optimizer, checkpoint path, state, autocast context)``.
    """
    named = dict(model.named_parameters())
    opt = GradientTransform(base, [named[n] for n in chosen], transform=p["grad_transform"],
                            method=p["orth_method"])
    path = Path(ckpt_dir) / "checkpoint.pt" if ckpt_dir is not None else None
    if (ckpt := _load_checkpoint(path)) is not None:
        changed = sorted(k for k in p if k not in free and ckpt["params"].get(k) != p[k])
        if changed:
            raise ValueError(f"the checkpoint in {ckpt_dir} has other values of {changed}")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        state = ckpt["state"]
    bf16 = p["bf16"] and device.type == "cuda"
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    return opt, path, state, autocast


def _checkpoint(path: Path | None, p: dict, model, optimizer, state: dict) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        _save_checkpoint(path, {"params": p, "model": model.state_dict(),
                                "optimizer": optimizer.state_dict(), "state": state})


def _on(model: nn.Module, device: torch.device) -> nn.Module:
    model = model.to(device)
    return model.to(memory_format=torch.channels_last) if device.type == "cuda" else model


@torch.no_grad()
def _evaluate(model: nn.Module, loader: DataLoader, device, autocast) -> tuple[float, float]:
    """Mean cross-entropy and top-1 accuracy (in [0, 1]) over ``loader``."""
    model.eval()
    loss_sum, correct, n = torch.zeros((), device=device), torch.zeros((), device=device), 0
    for X, y in loader:
        X, y = _to(X, device), y.to(device, non_blocking=True)
        with autocast:
            logits = model(X).float()
        loss_sum += F.cross_entropy(logits, y, reduction="sum")
        correct += (logits.argmax(1) == y).sum()
        n += len(y)
    model.train()
    return loss_sum.item() / max(n, 1), correct.item() / max(n, 1)


# ----------------------------------------------------------------------------- fig 5.7
def _classifier_epoch(model, opt, loader, device, autocast, steps: int, bar) -> float:
    """Train ``steps`` batches of ``loader``; return the mean training loss."""
    losses = []
    for X, y in loader:
        X, y = _to(X, device), y.to(device, non_blocking=True)
        with autocast:
            loss = F.cross_entropy(model(X).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        bar.update()
        if len(losses) == steps:
            break
    return torch.stack(losses).mean().item()  # one host sync per epoch


def train_imagenet_classifier(params: dict, *, checkpoint_dir: str | Path | None = None,
                              progress: bool = True) -> dict[str, Any]:
    """Train a torchvision classifier on ImageNet with SGDM or Orthogonal-SGDM (fig 5.7).

    Orth orthogonalises every conv and linear weight (classifier included, the source's
    default) before torch's SGD step, so weight decay and momentum act on ``O``.

    Args:
        params: overrides of ``CLASSIFIER_DEFAULTS`` (unknown keys raise).
        checkpoint_dir: saved after every epoch; a later call with it resumes (``epochs``,
            ``workers``, ``device`` and ``root`` may differ, nothing else).
        progress: tqdm bar over steps.

    Returns:
        ``history`` (DataFrame: epoch, step, train_loss, val_loss, val_acc, time_s),
        ``final`` (its last row), ``diverged``, ``optimizer_stats``, ``device``.

    Raises:
        DatasetMissingError: no ImageNet. ValueError: bad parameters, checkpoint mismatch.
    """
    p = _resolve(params, CLASSIFIER_DEFAULTS)
    device = resolve_device(p["device"])
    train_dl, val_dl = imagenet_loaders(p["root"], p["batch_size"], p["workers"], seed=p["seed"],
                                        crop=p["crop"])
    torch.manual_seed(p["seed"])
    model = _on(_torchvision(p["model"], len(train_dl.dataset.classes), p["crop"]), device)
    sgd = torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=p["momentum"],
                          weight_decay=p["wd"])
    chosen = [] if p["grad_transform"] == "none" else select_params(model, "all")
    init = {"epoch": 0, "rows": [], "elapsed": 0.0, "diverged": False}
    opt, path, state, autocast = _prepare(model, sgd, chosen, p, device, checkpoint_dir, init,
                                          _FREE + ("epochs",))
    steps = min(len(train_dl), p["max_steps_per_epoch"] or len(train_dl))
    bar = tqdm(total=p["epochs"] * steps, initial=state["epoch"] * steps, disable=not progress,
               desc=f"{p['model']}/{p['grad_transform']}", leave=False)
    for epoch in range(state["epoch"], 0 if state["diverged"] else p["epochs"]):
        t0 = time.perf_counter()
        _seed_epoch(train_dl, p["seed"], epoch)
        train_loss = _classifier_epoch(model, opt, train_dl, device, autocast, steps, bar)
        val_loss, val_acc = _evaluate(model, val_dl, device, autocast)
        state["elapsed"] += time.perf_counter() - t0
        state["rows"].append(dict(epoch=epoch + 1, step=(epoch + 1) * steps, train_loss=train_loss,
                                  val_loss=val_loss, val_acc=val_acc, time_s=state["elapsed"]))
        state["epoch"], state["diverged"] = epoch + 1, not math.isfinite(train_loss)
        bar.set_postfix(loss=f"{train_loss:.3f}", val_acc=f"{val_acc:.3f}")
        _checkpoint(path, p, model, opt, state)
        if state["diverged"]:  # recorded, not raised (STYLE 8)
            break
    bar.close()
    history = pd.DataFrame(state["rows"], columns=["epoch", "step", "train_loss", "val_loss",
                                                   "val_acc", "time_s"])
    final = {k: float(v) for k, v in history.iloc[-1].items()} if len(history) else {}
    return {"history": history, "final": final, "diverged": state["diverged"],
            "optimizer_stats": dict(opt.stats), "device": str(device)}


# ----------------------------------------------------------------------------- fig 5.8
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


def _barlow_model(p: dict) -> BarlowTwins:
    if not p["backbone"].startswith("resnet"):
        raise ValueError(f"the BT backbone must be a torchvision ResNet, got {p['backbone']!r}")
    trunk = _torchvision(p["backbone"], 1000, p["crop"])
    dim, trunk.fc = trunk.fc.in_features, nn.Identity()  # 2048-d for ResNet-50
    return BarlowTwins(trunk, dim, p["projector"])


def _bt_segment(model, opt, loader, p, device, autocast, state, sched, bar) -> list[tuple]:
    """Steps from ``state["step"]`` to the epoch's end or ``stop``: rows (step, epoch, loss, lr)."""
    total, warmup, stop, per_epoch = sched
    rows = []
    for (y1, y2), _ in loader:
        lr = bt_lr(state["step"], total, warmup, p["batch_size"])
        for group in opt.param_groups:
            group["lr"] = lr * group["lr_scale"]
        with autocast:
            z1, z2 = model(_to(y1, device)), model(_to(y2, device))  # (B, projector[-1])
        loss = barlow_twins_loss(z1.float(), z2.float(), p["lambd"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        state["step"] += 1
        rows.append((state["step"], (state["step"] - 1) // per_epoch + 1, loss.detach(),
                     lr * p["lr_weights"]))
        bar.update()
        if state["step"] >= stop:
            break
    losses = torch.stack([r[2] for r in rows]).float().cpu().tolist()  # one sync per segment
    return [(s, e, v, lr) for (s, e, _, lr), v in zip(rows, losses, strict=True)]


def train_imagenet_barlow_twins(params: dict, *, checkpoint_dir: str | Path | None = None,
                                progress: bool = True) -> dict[str, Any]:
    """Barlow Twins pre-training on ImageNet with LARS or Orthogonal-LARS (fig 5.8).

    Orth orthogonalises only the backbone's conv weights (``trunk.*``); the projector's dense
    layers are not (sec. 5.5.6). Weights use ``lr_weights``; biases and BN parameters form a
    second LARS group (``exclude=True``: no wd, no trust ratio) with ``lr_biases``.

    Args:
        params: overrides of ``BARLOW_DEFAULTS`` (unknown keys raise).
        checkpoint_dir: saved after every epoch and when ``max_steps`` stops the run; a later
            call resumes, mid-epoch included (``max_steps``, ``workers``, ``device`` and
            ``root`` may differ, nothing else).
        progress: tqdm bar over steps.

    Returns:
        ``steps`` (DataFrame: step, epoch, loss, lr of the weights), ``steps_per_epoch``,
        ``diverged``, ``optimizer_stats``, ``device``, ``wall_time_s``.

    Raises:
        DatasetMissingError: no ImageNet. ValueError: bad parameters, checkpoint mismatch.
    """
    p = _resolve(params, BARLOW_DEFAULTS)
    p["projector"] = tuple(p["projector"])  # a list and a tuple are one checkpoint key
    if not 0 <= p["warmup_epochs"] < p["epochs"] or p["batch_size"] < 2:
        raise ValueError(f"need 0 <= warmup_epochs < epochs and batch_size >= 2, got "
                         f"{p['warmup_epochs']}, {p['epochs']}, {p['batch_size']}")
    device = resolve_device(p["device"])
    train_dl, _ = imagenet_loaders(p["root"], p["batch_size"], p["workers"], two_views=True,
                                   seed=p["seed"], crop=p["crop"])
    per_epoch = len(train_dl)
    if per_epoch == 0:
        raise ValueError(f"batch_size {p['batch_size']} exceeds the {len(train_dl.sampler)} images")
    torch.manual_seed(p["seed"])
    model = _on(_barlow_model(p), device)
    groups = lars_param_groups(model)
    for group, scale in zip(groups, (p["lr_weights"], p["lr_biases"]), strict=True):
        group["lr_scale"] = scale
    lars = LARS(groups, lr=p["lr_weights"], momentum=p["momentum"], wd=p["wd"], eta=p["eta"])
    chosen = [] if p["grad_transform"] == "none" else select_params(model, "conv", "trunk.")
    init = {"step": 0, "rows": [], "elapsed": 0.0, "diverged": False}
    opt, path, state, autocast = _prepare(model, lars, chosen, p, device, checkpoint_dir, init,
                                          _FREE + ("max_steps",))
    total, warmup = p["epochs"] * per_epoch, p["warmup_epochs"] * per_epoch
    stop = min(total, p["max_steps"] or total)
    bar = tqdm(total=stop, initial=min(state["step"], stop), disable=not progress, leave=False,
               desc=f"barlow/{p['grad_transform']}")
    while state["step"] < stop and not state["diverged"]:
        t0 = time.perf_counter()
        _seed_epoch(train_dl, p["seed"], *divmod(state["step"], per_epoch))
        rows = _bt_segment(model, opt, train_dl, p, device, autocast, state,
                           (total, warmup, stop, per_epoch), bar)
        state["rows"] += rows
        state["diverged"] = not all(math.isfinite(r[2]) for r in rows)  # recorded (STYLE 8)
        state["elapsed"] += time.perf_counter() - t0
        bar.set_postfix(loss=f"{rows[-1][2]:.1f}")
        _checkpoint(path, p, model, opt, state)
    bar.close()
    return {"steps": pd.DataFrame(state["rows"], columns=["step", "epoch", "loss", "lr"]),
            "steps_per_epoch": per_epoch, "diverged": state["diverged"],
            "optimizer_stats": dict(opt.stats), "device": str(device),
            "wall_time_s": state["elapsed"]}
