"""The training loop: device-resident data, on-device augmentation, schedules, callbacks.

``train(cfg)`` runs one ``RunConfig`` and returns a result dict (tidy per-epoch history,
per-step loss and lr, final metrics, callback results). A NaN/inf loss ends the run and is
recorded as ``diverged`` (several source tables contain diverged settings), not raised.
With ``checkpoint_dir`` the run saves its full state every ``checkpoint_every`` epochs and a
later call resumes from it, so a killed run loses at most those epochs.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .augmentation import augment, augmix, crop_pad_for
from .data import DATASETS, ImageData, iterate_batches, load_data
from .models import build_model, num_parameters
from .orthogonal import GradientTransform, select_params
from .profiles import RunConfig
from .tempbalance import LayerLR
from .tempbalance_callback import SKIP_FIRST, SKIP_LAST, TempBalanceCallback


# ----------------------------------------------------------------------------- helpers
def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` = the first CUDA device if there is one, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def lr_factor(cfg: RunConfig, epoch: int) -> float:
    """Multiplier of the initial lr during ``epoch`` (0-indexed).

    ``multistep``: ``lr_decay`` per milestone passed (torch MultiStepLR). ``cosine``: seed 001
    eq. 2.12, ``lr_t = lr_0/2 * (1 + cos((t+1) pi / T))``, which reaches 0 at the last epoch.
    ``cosine_tb``: TempBalance's code, one epoch behind eq. 2.12 (lr_0 in the first epoch, never
    0; digest A-5), ``lr_0/2 * (1 + cos(t pi / T))``.
    """
    if cfg.schedule == "multistep":
        return cfg.lr_decay ** sum(epoch >= m for m in cfg.milestones)
    if cfg.schedule == "cosine":
        return 0.5 * (1 + math.cos((epoch + 1) * math.pi / cfg.epochs))
    if cfg.schedule == "cosine_tb":  # TempBalance's code: lr_0 in epoch 0, one epoch behind
        return 0.5 * (1 + math.cos(epoch * math.pi / cfg.epochs))
    return 1.0


def make_optimizer(cfg: RunConfig, model: torch.nn.Module) -> GradientTransform:
    """The torch optimiser named by ``cfg.optimizer``, wrapped by ``cfg.grad_transform``.

    The wrapper transforms the chosen weight gradients (``cfg.transform_layers``) before the
    optimiser's step, so coupled weight decay and momentum act on the transformed gradient
    (seed 004 Algorithm 6); ``grad_transform="none"`` steps exactly as the plain optimiser.
    With ``cfg.layer_lr != "none"`` the optimiser gets one param group per layer (tagged
    ``"layer"``, stem and classifier in the untagged rest group; `tempbalance.LayerLR`), whose
    ``lr_scale`` `TempBalanceCallback` sets every epoch; otherwise one group.
    """
    params = list(model.parameters()) if cfg.layer_lr == "none" else \
        LayerLR(model, skip_first=SKIP_FIRST, skip_last=SKIP_LAST).param_groups(cfg.lr)
    if cfg.optimizer in ("sgd", "sgdm"):
        momentum = cfg.momentum if cfg.optimizer == "sgdm" else 0.0
        opt = torch.optim.SGD(params, lr=cfg.lr, momentum=momentum, weight_decay=cfg.wd,
                              nesterov=cfg.nesterov and momentum > 0)
    else:
        cls = torch.optim.Adam if cfg.optimizer == "adam" else torch.optim.AdamW
        opt = cls(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.wd)
    named = dict(model.named_parameters())
    chosen = [] if cfg.grad_transform == "none" else \
        [named[n] for n in select_params(model, cfg.transform_layers)]
    return GradientTransform(opt, chosen, transform=cfg.grad_transform, method=cfg.orth_method)


@torch.no_grad()
def evaluate(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor,
             batch_size: int = 1000) -> tuple[float, float]:
    """Mean cross-entropy and accuracy (in [0, 1]) of ``model`` in eval mode."""
    if len(X) == 0:
        return float("nan"), float("nan")
    was_training = model.training
    model.eval()
    loss_sum, correct = 0.0, 0
    for Xb, yb in iterate_batches(X, y, batch_size, shuffle=False):
        logits = model(Xb).float()
        loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
        correct += (logits.argmax(1) == yb).sum().item()
    model.train(was_training)
    return loss_sum / len(X), correct / len(X)


@contextlib.contextmanager
def deterministic_mode(enabled: bool):
    """Strict determinism for the duration of a run (restores the previous setting)."""
    previous = torch.are_deterministic_algorithms_enabled()
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


def run_model(cfg: RunConfig) -> torch.nn.Module:
    """The run's architecture for its dataset (unseeded init; load weights into it)."""
    spec = DATASETS[cfg.dataset]
    return build_model(cfg.model, in_channels=spec.in_channels, num_classes=spec.num_classes,
                       width=cfg.width, image_size=spec.image_size)


def initial_model(cfg: RunConfig) -> torch.nn.Module:
    """The run's model at initialisation, exactly as `train` starts it (seeded by cfg.seed)."""
    torch.manual_seed(cfg.seed)
    return run_model(cfg)


def load_run_data(cfg: RunConfig, device: torch.device) -> ImageData:
    """The data of a run (real or synthetic) on ``device``."""
    return load_data(cfg.dataset, n_train=cfg.n_train, n_val=cfg.n_val, n_test=cfg.n_test,
                     split_seed=cfg.split_seed, synthetic=cfg.synthetic, device=device)


def _call(callbacks, hook: str, *args) -> None:
    for cb in callbacks:
        fn = getattr(cb, hook, None)
        if fn is not None:
            fn(*args)


# ----------------------------------------------------------------------------- checkpoints
def _save_checkpoint(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a kill leaves the previous checkpoint intact


def _load_checkpoint(path: Path | None) -> dict | None:
    if path is None or not path.exists():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except Exception:  # a corrupt checkpoint is discarded, the run restarts from scratch
        path.unlink(missing_ok=True)
        return None


# ----------------------------------------------------------------------------- the loop
def train(cfg: RunConfig, *, data: ImageData | None = None, callbacks: Iterable = (),
          progress: bool = True, checkpoint_dir: str | Path | None = None,
          checkpoint_every: int = 0, eval_every: int = 1) -> dict[str, Any]:
    """Train ``cfg.model`` on ``cfg.dataset`` and return the result dict.

    Args:
        cfg: the validated run configuration.
        data: pre-loaded data (else loaded from ``cfg``); moved to the run's device.
        callbacks: objects with optional hooks ``on_optimizer(optimizer)`` (right after
            `make_optimizer`, before ``on_train_start``), ``on_train_start(model)``,
            ``on_backward(model)`` (raw gradients, before clipping and the transform),
            ``on_step(model)`` (after the optimiser step),
            ``on_epoch_end(model, row)``, and ``result()``, ``state_dict()``,
            ``load_state_dict(state)``; each needs a ``name`` attribute. With
            ``cfg.layer_lr != "none"`` a `TempBalanceCallback` is appended (unless one
            named ``"tempbalance"`` is given); its result is ``callbacks["tempbalance"]``.
        progress: show a tqdm bar over epochs.
        checkpoint_dir: where to keep a resumable checkpoint (None = no checkpoints).
        checkpoint_every: epochs between checkpoints (0 = never).
        eval_every: epochs between validation/test evaluations (the last epoch always).

    Returns:
        dict with ``history`` (DataFrame, one row per epoch), ``steps`` (DataFrame: step,
        epoch, lr, loss), ``final`` (dict of last metrics), ``diverged`` (bool),
        ``callbacks`` (name -> result), ``num_parameters``, ``device``, ``wall_time_s``,
        ``config`` (the cache key), ``evals`` (DataFrame: step, val_loss, val_acc every
        ``cfg.eval_every_steps``), ``optimizer_stats`` (SVD fallbacks, skipped tensors).
    """
    callbacks = list(callbacks)
    if cfg.layer_lr != "none" and not any(cb.name == "tempbalance" for cb in callbacks):
        callbacks.append(TempBalanceCallback.from_config(cfg))
    device = resolve_device(cfg.device)
    data = (data or load_run_data(cfg, device)).to(device)
    model = initial_model(cfg).to(device)
    if cfg.model != "mlp":
        model = model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(cfg, model)
    _call(callbacks, "on_optimizer", optimizer)
    gen = torch.Generator(device=device).manual_seed(cfg.seed + 1)  # data order + augmentation
    ckpt_path = Path(checkpoint_dir) / "checkpoint.pt" if checkpoint_dir else None
    state = {"epoch": 0, "rows": [], "steps": [], "evals": [], "diverged": False, "elapsed": 0.0}
    _call(callbacks, "on_train_start", model)
    if (ckpt := _load_checkpoint(ckpt_path)) is not None:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        gen.set_state(ckpt["generator"])
        for cb in callbacks:
            cb.load_state_dict(ckpt["callbacks"][cb.name])
        state = {"evals": [], **ckpt["state"]}
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.bf16 and device.type == "cuda"
                else contextlib.nullcontext())
    bar = tqdm(range(state["epoch"], cfg.epochs), desc=f"{cfg.model}/{cfg.optimizer}",
               disable=not progress, leave=False)
    with deterministic_mode(cfg.deterministic):
        for epoch in bar:
            t0 = time.perf_counter()
            lr = cfg.lr * lr_factor(cfg, epoch)
            for group in optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)
            model.train()
            losses, correct, seen = [], torch.zeros((), device=device), 0
            for Xb, yb in iterate_batches(data.X_train, data.y_train, cfg.batch_size,
                                          shuffle=True, generator=gen):
                if cfg.augment:
                    Xb = augment(Xb, crop_pad=crop_pad_for(data.image_size), generator=gen)
                if cfg.augmix:
                    Xb = augmix(Xb, data.name, generator=gen)
                with autocast:
                    logits = model(Xb)
                    loss = F.cross_entropy(logits.float(), yb)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                _call(callbacks, "on_backward", model)
                if cfg.clip_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad_norm)
                optimizer.step()
                _call(callbacks, "on_step", model)
                losses.append(loss.detach())
                n_steps = len(state["steps"]) + len(losses)
                if cfg.eval_every_steps and n_steps % cfg.eval_every_steps == 0:
                    state["evals"].append((n_steps, *evaluate(model, data.X_val, data.y_val,
                                                              cfg.eval_batch_size)))
                correct += (logits.detach().argmax(1) == yb).sum()
                seen += len(yb)
            step_losses = torch.stack(losses).float().cpu().numpy()  # one sync per epoch
            first = len(state["steps"])
            state["steps"] += [(first + i + 1, epoch + 1, lr, float(v))
                               for i, v in enumerate(step_losses)]
            row = {"epoch": epoch + 1, "step": len(state["steps"]), "lr": lr,
                   "train_loss": float(step_losses.mean()), "train_acc": correct.item() / seen}
            if not np.isfinite(step_losses).all():
                state["diverged"] = True
            if (epoch + 1) % eval_every == 0 or epoch + 1 == cfg.epochs or state["diverged"]:
                bs = cfg.eval_batch_size
                row["val_loss"], row["val_acc"] = evaluate(model, data.X_val, data.y_val, bs)
                row["test_loss"], row["test_acc"] = evaluate(model, data.X_test, data.y_test, bs)
            state["elapsed"] += time.perf_counter() - t0
            row["time_s"] = state["elapsed"]
            state["rows"].append(row)
            state["epoch"] = epoch + 1
            _call(callbacks, "on_epoch_end", model, row)
            bar.set_postfix(loss=f"{row['train_loss']:.3f}", val=f"{row.get('val_acc', np.nan):.3f}")
            if state["diverged"]:
                break
            if ckpt_path and checkpoint_every and state["epoch"] % checkpoint_every == 0:
                ckpt_path.parent.mkdir(parents=True, exist_ok=True)
                _save_checkpoint(ckpt_path, {
                    "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "generator": gen.get_state(), "state": state,
                    "callbacks": {cb.name: cb.state_dict() for cb in callbacks}})
    history = pd.DataFrame(state["rows"])
    last = history.ffill().iloc[-1].to_dict() if len(history) else {}
    return {
        "history": history,
        "steps": pd.DataFrame(state["steps"], columns=["step", "epoch", "lr", "loss"]),
        "evals": pd.DataFrame(state["evals"], columns=["step", "val_loss", "val_acc"]),
        "optimizer_stats": dict(getattr(optimizer, "stats", {})),
        "final": {k: float(v) for k, v in last.items()},
        "diverged": state["diverged"],
        "callbacks": {cb.name: cb.result() for cb in callbacks},
        "num_parameters": num_parameters(model),
        "device": str(device),
        "wall_time_s": state["elapsed"],
        "config": cfg.key(),
    }
