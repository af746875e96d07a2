"""The training loop: one loop for every task, method and chapter.

The loop knows no dataset, model kind or research method: the run's task (`lalr_core.core.loop.tasks`)
turns batches into losses, the optimiser comes from the registry with the run's methods' hooks
(`lalr_core.core.loop.optim`), and a method's per-epoch work runs as a callback it supplies.

``train(cfg)`` runs one ``RunConfig`` and returns a result dict (tidy per-epoch history,
per-step loss and lr, final metrics, callback results). A run *diverges* when a step's loss is
NaN/inf, or when an epoch's mean training loss exceeds ``LOSS_BLOWUP`` (1e3) times the run's
first loss (its absolute value, at least 1: a fine-tuning that starts near zero loss is not
flagged for returning to order 1). Healthy runs of the collection start near ln(10) for
cross-entropy and only decrease, so a 1000-fold rise is far outside them. Divergence ends the
run and is recorded as ``diverged`` with ``diverged_step`` (the first step whose loss was bad;
several source tables contain diverged settings), not raised; every accuracy and evaluation
loss computed on the parameters that gave that loss or later is NaN, never a number read off
NaN or exploded logits.
With ``checkpoint_dir`` the run saves its full state every ``checkpoint_every`` epochs and a
later call resumes from it, so a killed run loses at most those epochs; a checkpoint of
another configuration is refused (the task's ``resume_free`` names what may differ).
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

from lalr_core.core.loop import optim, tasks  # noqa: F401  (registers the core optimisers and tasks)
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.loop.schedules import SCHEDULES
from lalr_core.core.loop.tasks import evaluate
from lalr_core.core.models.networks import num_parameters
from lalr_core.core.progress import bar as progress_bar

__all__ = ["COMPILE_ENV", "LOSS_BLOWUP", "check_resumable", "compile_wanted", "evaluate", "initial_model", "load_checkpoint",
           "load_run_data", "lr_factor", "make_optimizer", "resolve_device", "run_model",
           "save_checkpoint", "train"]

LOSS_BLOWUP = 1e3  # an epoch's mean loss above this x max(|first loss|, 1) = diverged


# ----------------------------------------------------------------------------- helpers
def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` = the first CUDA device if there is one, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def lr_factor(cfg: RunConfig, epoch: int) -> float:
    """Multiplier of the initial lr during ``epoch`` (0-indexed): ``cfg.schedule``'s."""
    return SCHEDULES[cfg.schedule](cfg, epoch)


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
    """The run's architecture for its task (unseeded init; load weights into it)."""
    return cfg.task.build_model(cfg)


def initial_model(cfg: RunConfig) -> torch.nn.Module:
    """The run's model at initialisation, exactly as `train` starts it (seeded by cfg.seed)."""
    torch.manual_seed(cfg.seed)
    return run_model(cfg)


def load_run_data(cfg: RunConfig, device: torch.device):
    """The data of a run (real or synthetic) on ``device``."""
    return cfg.task.load(cfg, device)


def _flat_key(key: dict) -> dict:
    """A run's key with the task's fields as ``"task.<field>"`` entries."""
    task = key.get("task", {})
    return {**{k: v for k, v in key.items() if k != "task"},
            **{f"task.{k}": v for k, v in task.items()}}


def check_resumable(cfg: RunConfig, saved: dict | None, where: Path) -> None:
    """Raise ``ValueError`` unless the checkpoint's config ``saved`` is ``cfg``'s, up to the
    key entries the task lists in ``resume_free`` (None: a checkpoint from before the loop
    recorded its config, accepted)."""
    if saved is None:
        return
    free = set(cfg.task.resume_free)
    now, then = _flat_key(cfg.key()), _flat_key(saved)
    changed = sorted(k for k in now.keys() | then.keys()
                     if k not in free and now.get(k) != then.get(k))
    if changed:
        raise ValueError(f"the checkpoint in {where} is of another run: it has other values "
                         f"of {changed}")


def _loss_scale(first_loss: float) -> float:
    """The reference of ``LOSS_BLOWUP``: ``|first_loss|``, at least 1 (1 if not finite)."""
    return max(abs(first_loss), 1.0) if math.isfinite(first_loss) else 1.0


def _call(callbacks, hook: str, *args) -> None:
    for cb in callbacks:
        fn = getattr(cb, hook, None)
        if fn is not None:
            fn(*args)


# ----------------------------------------------------------------------------- checkpoints
def save_checkpoint(path: Path, state: dict) -> None:
    """``torch.save`` with the file's sha256 beside it (``checkpoint.pt.sha256``), both written
    atomically (`lalr_core.core.atomic_io.atomic_write_checked`): a kill leaves the previous
    checkpoint intact, and `load_checkpoint` detects a damaged one."""
    import io

    from lalr_core.core.atomic_io import atomic_write_checked  # cheap: atomic_io is tiny

    buffer = io.BytesIO()
    torch.save(state, buffer)
    atomic_write_checked(path, buffer.getbuffer())


def load_checkpoint(path: Path | None) -> dict | None:
    """The checkpoint saved at ``path``, or None when there is none or it is damaged.

    A flipped byte often still loads, so the sha256 is checked first. A checkpoint that fails
    the check, has no checksum or does not load is deleted with a ``RuntimeWarning`` naming it,
    and the run restarts from scratch instead of resuming from damaged state.
    """
    import io
    import warnings

    from lalr_core.core.atomic_io import read_checked, remove_checked

    if path is None or not path.exists():
        return None
    try:
        return torch.load(io.BytesIO(read_checked(path)), map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 - any damage: restart rather than resume from it
        warnings.warn(f"damaged checkpoint {path} discarded ({exc}); the run restarts from "
                      "scratch", RuntimeWarning, stacklevel=2)
        remove_checked(path)
        return None


# ----------------------------------------------------------------------------- the loop
COMPILE_ENV = "LALR_COMPILE"  # "1": compile the model of every run (``make figures COMPILE=1``)


def compile_wanted(compile_model: bool | None, device: torch.device) -> bool:
    """Whether to ``torch.compile`` a run's model: as asked, else ``$LALR_COMPILE=1`` on CUDA.

    Compiling pays on a GPU for runs of many steps (ResNet-20 at batch 1024 on an H200: 1.16x
    float32, 1.29x bf16 per step, `benchmarks/bench_gpu_epoch.py`); on a CPU and for short runs
    the compile time outweighs it, so the environment only turns it on for CUDA runs.
    """
    if compile_model is not None:
        return compile_model
    return os.environ.get(COMPILE_ENV, "0") == "1" and device.type == "cuda"


def train(cfg: RunConfig, *, data=None, callbacks: Iterable = (),
          progress: bool = True, checkpoint_dir: str | Path | None = None,
          checkpoint_every: int = 0, eval_every: int = 1,
          compile_model: bool | None = None) -> dict[str, Any]:
    """Train ``cfg.model`` on ``cfg.dataset`` and return the result dict.

    Args:
        cfg: the validated run configuration.
        data: pre-loaded data (else loaded from ``cfg``); moved to the run's device.
        callbacks: objects with optional hooks ``on_optimizer(optimizer)`` (right after
            `make_optimizer`, before ``on_train_start``), ``on_train_start(model)``,
            ``on_backward(model)`` (raw gradients, before clipping and the transform),
            ``on_step(model)`` (after the optimiser step),
            ``on_epoch_end(model, row)``, ``result()`` (None without it), and, for a
            callback with state to resume, ``state_dict()`` and ``load_state_dict(state)``;
            each needs a ``name`` attribute. The callbacks of
            ``cfg.methods`` (``MethodConfig.callbacks``) are appended unless one of the same
            name is given; e.g. TempBalance's result is ``callbacks["tempbalance"]``.
        progress: show a tqdm bar over epochs.
        checkpoint_dir: where to keep a resumable checkpoint (None = no checkpoints).
        checkpoint_every: epochs between checkpoints (0 = never).
        eval_every: epochs between validation/test evaluations (the last epoch always).
        compile_model: compile the model (``nn.Module.compile``: the module, its parameters
            and state-dict names stay as they are, so callbacks and checkpoints see no
            difference); None: `compile_wanted`. Not part of the cache key, like the device:
            it changes the float rounding, not the computation.

    Returns:
        dict with ``history`` (DataFrame, one row per epoch), ``steps`` (DataFrame: step,
        epoch, lr, loss), ``final`` (dict of last metrics; a diverged run's accuracies and
        evaluation losses are NaN), ``diverged`` (bool), ``diverged_step`` (the first step
        whose loss was NaN/inf or exploded, see ``LOSS_BLOWUP``; None),
        ``callbacks`` (name -> result), ``num_parameters``, ``device``, ``wall_time_s``,
        ``config`` (the cache key), ``evals`` (DataFrame: step, val_loss, val_acc every
        ``cfg.eval_every_steps``), ``optimizer_stats`` (the optimiser's own ``stats`` counters, where it keeps any),
        ``test_correct`` (one bool per test example at the end, where the task defines
        ``correct``; None for a diverged run).

    The task's optional hooks (`lalr_core.core.loop.tasks`: ``start_epoch``,
    ``configure_optimizer``, ``step_lr_factor``, ``max_steps``, ``resume_free``) have
    defaults on `TaskConfig` that change nothing.
    """
    callbacks = list(callbacks)
    for method in cfg.methods:
        given = {cb.name for cb in callbacks}
        callbacks += [cb for cb in method.callbacks(cfg) if cb.name not in given]
    task = cfg.task
    step_lr_factor = task.step_lr_factor  # per-step schedule of the task, or None
    max_steps = task.max_steps            # None: every epoch in full
    if step_lr_factor is not None and cfg.schedule != "constant":
        raise ValueError(f"task {task.name!r} has its own per-step lr schedule; use "
                         f"schedule='constant', got {cfg.schedule!r}")
    device = resolve_device(cfg.device)
    data = (data or task.load(cfg, device)).to(device)
    model = initial_model(cfg).to(device)
    # the layout changes the float sums; the faster one per model is the rule
    # `Task.channels_last` (benchmarks/bench_throughput.py), recorded in the result
    memory_format = "channels_last" if task.channels_last(cfg) else "contiguous"
    if memory_format == "channels_last":
        model = model.to(memory_format=torch.channels_last)
    if compile_wanted(compile_model, device):
        model.compile()
    optimizer = make_optimizer(cfg, model)
    task.configure_optimizer(cfg, optimizer)
    _call(callbacks, "on_optimizer", optimizer)
    gen = torch.Generator(device=device).manual_seed(cfg.seed + 1)  # data order + augmentation
    ckpt_path = Path(checkpoint_dir) / "checkpoint.pt" if checkpoint_dir else None
    state = {"epoch": 0, "rows": [], "steps": [], "evals": [], "diverged": False, "elapsed": 0.0}
    _call(callbacks, "on_train_start", model)
    if (ckpt := load_checkpoint(ckpt_path)) is not None:
        check_resumable(cfg, ckpt.get("config"), ckpt_path.parent)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        gen.set_state(ckpt["generator"])
        for cb in callbacks:
            if hasattr(cb, "load_state_dict"):
                cb.load_state_dict(ckpt["callbacks"][cb.name])
        state = {"evals": [], **ckpt["state"]}
    if cfg.eval_every_steps and task.eval_at_start and not state["steps"] and not state["evals"]:
        state["evals"].append((0, *task.evaluate(cfg, model, data, "val")))
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.bf16 and device.type == "cuda"
                else contextlib.nullcontext())
    bar = progress_bar(range(state["epoch"], cfg.epochs), desc=f"{cfg.model}/{cfg.optimizer}",
                       disable=not progress, leave=False, unit="epoch")
    diverged_step = None  # a diverged run stops at once, so this is never checkpointed
    with deterministic_mode(cfg.deterministic):
        for epoch in bar:
            if max_steps is not None and len(state["steps"]) >= max_steps:
                break
            t0 = time.perf_counter()
            lr = cfg.lr * lr_factor(cfg, epoch)
            for group in optimizer.param_groups:
                group["lr"] = lr * group.get("lr_scale", 1.0)
            model.train()
            task.start_epoch(cfg, data, epoch)
            losses, correct, seen, scored = [], torch.zeros((), device=device), 0, False
            step_lrs, cut = [], False  # per-step lrs (task schedules); epoch cut by max_steps
            for batch in task.batches(cfg, data, gen):
                done = len(state["steps"]) + len(losses)  # steps before this one
                if max_steps is not None and done >= max_steps:  # (this batch goes unused: it
                    # tells a cut epoch from one that ended exactly at max_steps)
                    cut = True
                    break
                if step_lr_factor is not None:
                    factor = step_lr_factor(cfg, data, done)
                    for group in optimizer.param_groups:  # the group's base lr times factor
                        group["lr"] = factor * (cfg.lr * group.get("lr_scale", 1.0))
                    step_lrs.append(cfg.lr * factor)
                loss, n_correct, n_batch = task.loss(model, batch, autocast, gen)
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
                    state["evals"].append((n_steps, *task.evaluate(cfg, model, data, "val")))
                if n_correct is not None:  # None: the task has no accuracy
                    correct, scored = correct + n_correct, True
                seen += n_batch
            step_losses = torch.stack(losses).float().cpu().numpy()  # one sync per epoch
            first = len(state["steps"])
            step_lrs = step_lrs or [lr] * len(step_losses)
            state["steps"] += [(first + i + 1, epoch + 1, step_lrs[i], float(v))
                               for i, v in enumerate(step_losses)]
            run_ends = epoch + 1 == cfg.epochs or (max_steps is not None
                                                    and len(state["steps"]) >= max_steps)
            row = {"epoch": epoch + 1, "step": len(state["steps"]), "lr": step_lrs[0],
                   "train_loss": float(step_losses.mean()),
                   "train_acc": correct.item() / seen if scored else float("nan")}
            limit = LOSS_BLOWUP * _loss_scale(state["steps"][0][3])
            if not np.isfinite(step_losses).all() or row["train_loss"] > limit:
                bad = ~np.isfinite(step_losses) | (step_losses > limit)
                state["diverged"], diverged_step = True, first + int(np.argmax(bad)) + 1
                # nothing measured on the parameters behind the bad loss (those after step
                # diverged_step - 1) or later is a result: no accuracy of NaN logits
                row.update(train_acc=np.nan, val_loss=np.nan, val_acc=np.nan, test_loss=np.nan,
                           test_acc=np.nan)
                state["evals"] = [(s, *rest) if s < diverged_step - 1 else (s, np.nan, np.nan)
                                  for s, *rest in state["evals"]]
            elif (epoch + 1) % eval_every == 0 or run_ends:
                row["val_loss"], row["val_acc"] = task.evaluate(cfg, model, data, "val")
                row["test_loss"], row["test_acc"] = task.evaluate(cfg, model, data, "test")
            state["elapsed"] += time.perf_counter() - t0
            row["time_s"] = state["elapsed"]
            state["rows"].append(row)
            state["epoch"] = epoch + 1
            _call(callbacks, "on_epoch_end", model, row)
            bar.set_postfix(loss=f"{row['train_loss']:.3f}", val=f"{row.get('val_acc', np.nan):.3f}")
            if state["diverged"] or cut:  # a cut epoch is not checkpointed
                break
            if ckpt_path and checkpoint_every and state["epoch"] % checkpoint_every == 0:
                ckpt_path.parent.mkdir(parents=True, exist_ok=True)
                save_checkpoint(ckpt_path, {
                    "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "generator": gen.get_state(), "state": state, "config": cfg.key(),
                    "callbacks": {cb.name: cb.state_dict() for cb in callbacks
                                  if hasattr(cb, "state_dict")}})
    history = pd.DataFrame(state["rows"])
    # per-example test hits, for paired intervals (None where the task defines none)
    test_correct = task.correct(cfg, model, data, "test") \
        if not state["diverged"] and len(history) else None
    # a diverged run's last row holds NaN where nothing valid was measured: not filled forward
    last = (history if state["diverged"] else history.ffill()).iloc[-1].to_dict() \
        if len(history) else {}
    return {
        "history": history,
        "steps": pd.DataFrame(state["steps"], columns=["step", "epoch", "lr", "loss"]),
        "evals": pd.DataFrame(state["evals"], columns=["step", "val_loss", "val_acc"]),
        "optimizer_stats": dict(getattr(optimizer, "stats", {})),
        "final": {k: float(v) for k, v in last.items()},
        "diverged": state["diverged"],
        "diverged_step": diverged_step,
        "test_correct": test_correct,
        "callbacks": {cb.name: cb.result() if hasattr(cb, "result") else None
                      for cb in callbacks},
        "num_parameters": num_parameters(model),
        "device": str(device),
        "memory_format": memory_format,
        "wall_time_s": state["elapsed"],
        "config": cfg.key(),
    }
