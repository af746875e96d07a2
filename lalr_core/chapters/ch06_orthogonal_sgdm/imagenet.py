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

The data side (folder layout, transforms, loaders, samplers) is `imagenet_data`, whose names
are re-exported here; this module holds the two training functions and their helpers.
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
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from lalr_core.chapters.ch06_orthogonal_sgdm.imagenet_data import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    LAYOUT,
    RESIZE_RATIO,
    EpochSampler,
    TwoViews,
    imagenet_dir,
    imagenet_loaders,
    imagenet_transforms,
    require_imagenet,
    seed_epoch,
)
from lalr_core.core.models import TORCHVISION_ARCHS, build_model
from lalr_core.core.runs import active_cache
from lalr_core.core.ssl_models import BarlowTwins, barlow_twins_loss
from lalr_core.core.train import load_checkpoint, resolve_device, save_checkpoint
from lalr_core.methods.orthogonal import LARS, GradientTransform, lars_param_groups, select_params

__all__ = [  # the data names are re-exported from imagenet_data
    "BARLOW_DEFAULTS", "CLASSIFIER_DEFAULTS", "IMAGENET_MEAN", "IMAGENET_STD", "LAYOUT",
    "RESIZE_RATIO", "EpochSampler", "TwoViews", "bt_lr", "imagenet_dir", "imagenet_loaders",
    "imagenet_transforms", "require_imagenet", "seed_epoch", "train_imagenet_barlow_twins",
    "train_imagenet_classifier",
]

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
    if (ckpt := load_checkpoint(path)) is not None:
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
        save_checkpoint(path, {"params": p, "model": model.state_dict(),
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
        seed_epoch(train_dl, p["seed"], epoch)
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
        seed_epoch(train_dl, p["seed"], *divmod(state["step"], per_epoch))
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


# ----------------------------------------------------------------------------- cached units
def classifier_unit(params: dict) -> dict[str, Any]:
    """`train_imagenet_classifier` as a cached unit (``runs.cached``), resumable from its
    per-epoch checkpoint in the unit's scratch folder."""
    ckpt = active_cache().checkpoint_dir("ch06_imagenet", params, fn=classifier_unit)
    return train_imagenet_classifier(params, checkpoint_dir=ckpt)


def barlow_twins_unit(params: dict) -> dict[str, Any]:
    """`train_imagenet_barlow_twins` as a cached unit, resumable like `classifier_unit`."""
    ckpt = active_cache().checkpoint_dir("ch06_bt_imagenet", params, fn=barlow_twins_unit)
    return train_imagenet_barlow_twins(params, checkpoint_dir=ckpt)
