"""Runs whose model is a transformed version of another task's model (LoRA, linearisation).

Chapter 03 fine-tunes LoRA adapters on a frozen TinyTF and compares with the linearised model
(the linearised model of the slides' Theorem 3, ``[KimKim-slides]``). Both are a function of the task's model, so one
wrapper task does it for any task and any transform, with no change to the training loop:

* ``MODEL_TRANSFORMS``: name -> ``fn(model, **options) -> nn.Module``. The function may change
  ``model`` in place (freeze parameters, swap modules) and returns the model to train. It may
  have an attribute ``validate(**options)`` that raises ``ValueError`` on bad options; it is
  called when the task is built, before any data or model exists. `lalr_core.methods.pretrained.lora`
  registers ``"lora"``.
* `TransformedTask` (``"transformed"``): a frozen `TaskConfig` with ``base`` (the task whose
  data, batches, loss and evaluation are used), ``transform`` and ``options``. Its
  ``build_model`` builds the base's model and applies the transform; every other hook, and
  every optional hook or attribute the base has (``correct``, ``start_epoch``, ``splits``,
  ``max_steps``, ...), is the base's. Its key holds the base's key, so two runs on different
  bases never share a cache entry.

Example, chapter 03's LoRA fine-tuning with the pull of `lalr_core.methods.pretrained.proximal`::

    cfg = finetuning_config("sent", pretrained=pre, wd=0.0)
    cfg = cfg.replace(task=TransformedTask(base=cfg.task, transform="lora",
                                           options={"rank": 4, "alpha": 8.0}),
                      methods=(ProximalPull(lam=1.0),))

The cache's code fingerprint of a training unit covers the module of the run's task class;
the modules of the base task and of the transform, found by name, are listed in
`TransformedTask.code_modules`, which ``lalr_core.core.runs.units.train_code_modules`` reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig, plugin_config
from lalr_core.core.loop.registry import Registry

__all__ = ["MODEL_TRANSFORMS", "TransformedTask", "apply_transform", "freeze_options"]

MODEL_TRANSFORMS = Registry("model transform")  # name -> fn(model, **options) -> nn.Module


def freeze_options(options) -> tuple[tuple[str, Any], ...]:
    """``options`` (a mapping or ``(key, value)`` pairs) as sorted, hashable pairs.

    Lists become tuples at every depth, so a key read back from JSON (where tuples are lists)
    rebuilds an equal task.

    Raises:
        ValueError: not pairs, a key that is not a str, a key given twice, or a value that
            is not hashable after the conversion (e.g. a dict).
    """
    def freeze(v):
        return tuple(freeze(x) for x in v) if isinstance(v, (list, tuple)) else v

    items = options.items() if isinstance(options, Mapping) else options
    try:
        pairs = [(k, freeze(v)) for k, v in items]
    except (TypeError, ValueError):
        raise ValueError(f"options must be a mapping or (key, value) pairs, "
                         f"got {options!r}") from None
    keys = [k for k, _ in pairs]
    if not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
        raise ValueError(f"option names must be distinct strings, got {keys}")
    for k, v in pairs:
        try:
            hash(v)
        except TypeError:
            raise ValueError(f"option {k!r} must be a number, str, bool, None or a tuple of "
                             f"those (it is part of the cache key), got {v!r}") from None
    return tuple(sorted(pairs))


def _check_options(transform: str, options: tuple[tuple[str, Any], ...]) -> None:
    """Raise ``ValueError`` unless ``options`` bind to ``fn(model, **options)`` and pass the
    transform's own ``validate`` (if it has one)."""
    fn = MODEL_TRANSFORMS[transform]  # raises naming the registered transforms
    kwargs = dict(options)
    try:
        inspect.signature(fn).bind(None, **kwargs)
    except TypeError as e:
        raise ValueError(f"bad options for model transform {transform!r}: {e}") from None
    if (validate := getattr(fn, "validate", None)) is not None:
        validate(**kwargs)


def apply_transform(model: nn.Module, transform: str, options=()) -> nn.Module:
    """``MODEL_TRANSFORMS[transform](model, **options)``, options checked first.

    Args:
        model: the model to transform (a transform may change it in place).
        transform: a registered transform name.
        options: a mapping or ``(key, value)`` pairs of the transform's keyword arguments.

    Returns:
        The transformed model.

    Raises:
        ValueError: an unknown transform or bad options.
        TypeError: the transform returned no ``nn.Module`` (a bug of the transform).
    """
    options = freeze_options(options)
    _check_options(transform, options)
    out = MODEL_TRANSFORMS[transform](model, **dict(options))
    if not isinstance(out, nn.Module):
        raise TypeError(f"model transform {transform!r} returned {type(out).__name__}, "
                        f"not an nn.Module")
    return out


@TASKS.register("transformed")
@dataclass(frozen=True)
class TransformedTask(TaskConfig):
    """The task ``base`` with its model passed through ``MODEL_TRANSFORMS[transform]``.

    Args:
        base: the task whose data, batches, loss and evaluation are used (a `TaskConfig`,
            its registered name or its key dict; it may itself be a `TransformedTask`).
        transform: a name registered in `MODEL_TRANSFORMS`.
        options: the transform's keyword arguments (a mapping or ``(key, value)`` pairs;
            kept as sorted pairs, part of the cache key).

    Raises:
        ValueError: an unknown base task or transform, or options the transform refuses.
    """

    name = "transformed"
    base: Any = "image_classification"
    transform: str = "lora"
    options: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "base", plugin_config(self.base, TASKS))
        if not isinstance(self.transform, str):
            raise ValueError(  # noqa: TRY004 - a setting, as everywhere in the config
                f"transform must be a registered name, got {self.transform!r}")
        object.__setattr__(self, "options", freeze_options(self.options))
        _check_options(self.transform, self.options)

    def key(self) -> dict[str, Any]:
        return {"kind": self.name, "base": self.base.key(), "transform": self.transform,
                "options": self.options}

    @property
    def code_modules(self) -> list[str]:
        """The modules whose code a run of this task depends on beyond this one: the base
        task's (recursively) and the transform's."""
        base = self.base.code_modules
        return sorted({type(self.base).__module__,
                       MODEL_TRANSFORMS[self.transform].__module__, *base})

    @property
    def resume_free(self) -> tuple[str, ...]:
        """The base's run-level entries (e.g. ``"epochs"``). Its ``"task.<field>"`` entries
        cannot be honoured: here the whole base is one key entry, ``"task.base"``."""
        return tuple(k for k in self.base.resume_free
                     if not k.startswith("task."))

    # ------------------------------------------------------------------- the task protocol
    def build_model(self, cfg: RunConfig) -> nn.Module:
        """The base's model, transformed (seeded by the loop like any model)."""
        return apply_transform(self.base.build_model(cfg), self.transform, self.options)

    def load(self, cfg: RunConfig, device: torch.device):
        return self.base.load(cfg, device)

    def channels_last(self, cfg: RunConfig) -> bool:
        return self.base.channels_last(cfg)

    def batches(self, cfg: RunConfig, data, generator: torch.Generator) -> Iterator[tuple]:
        return self.base.batches(cfg, data, generator)

    def loss(self, model: nn.Module, batch: tuple, autocast, generator):
        return self.base.loss(model, batch, autocast, generator)

    def evaluate(self, cfg: RunConfig, model: nn.Module, data, split: str):
        return self.base.evaluate(cfg, model, data, split)

    # The optional hooks are the base's (`TaskConfig` declares them with no-op defaults).
    @property
    def max_steps(self):
        return self.base.max_steps

    @property
    def step_lr_factor(self):
        return self.base.step_lr_factor

    def start_epoch(self, cfg: RunConfig, data, epoch: int):
        return self.base.start_epoch(cfg, data, epoch)

    def configure_optimizer(self, cfg: RunConfig, optimizer) -> None:
        self.base.configure_optimizer(cfg, optimizer)

    def correct(self, cfg: RunConfig, model: nn.Module, data, split: str):
        return self.base.correct(cfg, model, data, split)

    def __getattr__(self, attr: str):
        # Only reached when normal lookup fails: eval_at_start, splits and the base's
        # helpers, exactly where the base has them. Private names are not forwarded: copy
        # and pickle probe them before ``base`` exists.
        if attr.startswith("_") or attr == "base":
            raise AttributeError(attr)
        return getattr(self.base, attr)

