"""The cached training unit every chapter's sweeps go through.

``train_runs`` turns a list of ``RunConfig`` (plus per-run callbacks named in ``CALLBACKS``)
into cached, resumable training units executed by `lalr_core.core.runs.sweep`. Callbacks are
named, not passed as objects, so their constructor arguments are part of the unit's cache key;
a method or chapter registers its callbacks with ``@CALLBACKS.register(name)``. The key also
holds the fingerprint of the code a run depends on: this module's closure (the training loop,
the core) plus the modules of the run's method configs and callbacks (`train_code_modules`),
so a fix to a method invalidates the runs that used it and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from lalr_core.core import progress, rehearsal
from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import OPTIMIZERS, RunConfig
from lalr_core.core.loop.schedules import SCHEDULES
from lalr_core.core.loop.train import train
from lalr_core.core.runs import RunCache, active_cache, cached, register_unit, sweep

CHECKPOINT_EVERY = 10  # epochs; a killed paper run resumes losing at most this many


def train_code_modules(params: Mapping[str, Any]) -> list[str]:
    """The plug-in modules a training unit depends on beyond its own: those defining the run's
    task (and those it names in ``task.code_modules``), optimiser factory, method configs and
    callbacks (``train_unit.code_modules``, see
    `runs.sweep`), and those of any training unit a callback starts from (e.g.
    ``pruned_start``'s ``pretrained``), so a fine-tuning is recomputed when the code of its
    pretraining changes."""
    cfg = RunConfig(**params["run"])
    modules = {type(cfg.task).__module__, OPTIMIZERS[cfg.optimizer].__module__,
               SCHEDULES[cfg.schedule].__module__}
    modules |= set(cfg.task.code_modules)  # a task that wraps others by name
    modules |= {type(m).__module__ for m in cfg.methods}
    modules |= {CALLBACKS[kind].__module__ for kind in params["callbacks"]}
    for unit in _nested_units(list(params["callbacks"].values())):
        modules.update(train_code_modules(unit))
    return sorted(modules)


def _nested_units(value: Any) -> list[Mapping[str, Any]]:
    """The training-unit params (``{"run": ..., "callbacks": ...}``) inside ``value``."""
    if isinstance(value, Mapping):
        if {"run", "callbacks"} <= set(value) and isinstance(value["run"], Mapping):
            return [value]
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [unit for v in value for unit in _nested_units(v)]
    return []


@register_unit("train")  # cache.get("train", params) without fn= finds these units
def train_unit(params: dict[str, Any]) -> dict[str, Any]:
    """One cached unit: train ``params['run']`` with the callbacks in ``params['callbacks']``.

    Module-level (picklable) so process and Ray executors can run it.
    """
    cfg = RunConfig(**params["run"])
    callbacks = [CALLBACKS[kind](**spec) for kind, spec in params["callbacks"].items()]
    ckpt = active_cache().checkpoint_dir("train", params, fn=train_unit) \
        if cfg.epochs > CHECKPOINT_EVERY else None
    show = params.get("progress", False) or progress.stream() is not None  # make figures
    return train(cfg, callbacks=callbacks, progress=show,
                 checkpoint_dir=ckpt, checkpoint_every=CHECKPOINT_EVERY)


train_unit.code_modules = train_code_modules  # type: ignore[attr-defined]


def train_runs(configs: Sequence[RunConfig], *,
               callbacks: Mapping[str, dict] | Sequence[Mapping[str, dict]] | None = None,
               workers: int = 1, executor: str | None = None,
               cache: RunCache | None = None) -> list[dict[str, Any]]:
    """Train every config (cached and resumable), in order, through the sweep executor.

    Args:
        configs: the runs.
        callbacks: kind -> constructor kwargs, e.g. ``{"trajectory": {"window": 250}}``, for
            every run, or a sequence of such mappings, one per config.
        workers: parallel processes (threads are split between them).
        executor: ``"local"`` or ``"ray"``; None: ``$LALR_EXECUTOR`` (what ``make figures
            EXECUTOR=...`` sets), else local.
        cache: the run cache (default ``data/runs``).

    In a rehearsal (`lalr_core.core.rehearsal`) only the first run of each shape is trained;
    the others get its result, with their own ``config``.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    per_run = [dict(c) for c in callbacks] if isinstance(callbacks, (list, tuple)) else \
        [dict(callbacks or {})] * len(configs)
    if len(per_run) != len(configs):
        raise ValueError(f"{len(per_run)} callback specs for {len(configs)} configs")
    unknown = sorted({k for spec in per_run for k in spec if k not in CALLBACKS})
    if unknown:
        raise ValueError(f"unknown callbacks {unknown}; known: {CALLBACKS.names()}")
    params = [unit_params(cfg, cb) for cfg, cb in zip(configs, per_run)]
    if rehearsal.active():  # one rehearsed run per shape, its result handed to the others
        keys = [rehearsal_shape(p) for p in params]
        shapes = dict(zip(reversed(keys), reversed(params)))  # the first run of each shape
        results = dict(zip(shapes, sweep(train_unit, list(shapes.values()), name="train",
                                         executor=executor, cache=cache,
                                         workers=min(workers, len(shapes)) or 1)))
        return [{**results[k], "config": p["run"]} for k, p in zip(keys, params)]
    return sweep(train_unit, params, name="train", executor=executor,
                 workers=min(workers, len(params)) or 1, cache=cache)


def rehearsal_shape(params: Mapping[str, Any]) -> str:
    """`rehearsal.shape_key` of a training unit, without the callback arguments each callback
    class names in its ``not_shape``."""
    return rehearsal.shape_key(params, {kind: getattr(CALLBACKS[kind], "not_shape", ())
                                        for kind in params["callbacks"]})


def unit_params(cfg: RunConfig, callbacks: Mapping[str, dict]) -> dict[str, Any]:
    """The params of ``cfg``'s training unit, the cache key's content: ``{"run": cfg.key(),
    "callbacks": {kind: kwargs}}``."""
    return {"run": cfg.key(), "callbacks": dict(callbacks)}


def is_trained(cfg: RunConfig, callbacks: Mapping[str, dict],
               cache: RunCache | None = None) -> bool:
    """Whether ``cache`` (default: the active one, a rehearsal's own) holds this run under its
    current code: its unit's entry is looked for, not read."""
    cache = cache or active_cache()
    return cache.path("train", unit_params(cfg, callbacks), fn=train_unit).is_dir()


# ----------------------------------------------------------------------------- pretrainings
def pretraining_unit(cfg: RunConfig) -> dict[str, Any]:
    """The cached unit of a pretraining run: ``{"run": its key, "callbacks": {"weights": {}}}``.

    Raises:
        ValueError: ``cfg`` uses a method (the method's code would not be part of the
            fine-tunings' code fingerprint).
    """
    if cfg.methods:
        raise ValueError(f"a pretraining may use no method, got {[m.name for m in cfg.methods]}")
    return unit_params(cfg, {"weights": {}})


def pretrained(cfg: RunConfig) -> dict[str, Any]:
    """The pretraining run's result from the active cache, trained there first on a miss.

    The one way a fine-tuning (text or vision) gets its start: training happens under the
    unit's lock (`lalr_core.core.runs.cached`), so processes that need it at once compute it
    once, and the global torch RNG is left as it was.
    """
    with torch.random.fork_rng():
        return cached(train_unit, pretraining_unit(cfg), name="train", cache=active_cache())


def pretrained_weights(unit_params: Mapping) -> dict[str, torch.Tensor]:
    """The `FinalWeights` of a cached training unit (``{"run": key, "callbacks": {...}}``),
    looked up only, never trained here.

    Inside a sweep unit it reads that sweep's cache (`runs.active_cache`), else the default
    (``$LALR_RUNS_ROOT`` or ``data/runs``): pretrain into the cache you fine-tune from. The
    lookup uses the key `train_unit` stored the run under (its code fingerprint included), so
    a pretraining whose code has changed since is not in the cache.

    Raises:
        LookupError: the unit is not in the cache, or it was trained without ``weights``.
    """
    hit, result = active_cache().lookup("train", dict(unit_params), fn=train_unit)
    if not hit:
        raise LookupError("pretrained run not in the cache (not trained, or its code changed "
                          f"since); train it first: {unit_params['run']}")
    weights = result["callbacks"].get("weights")
    if not weights:
        raise LookupError("the pretrained run has no 'weights' callback result")
    return weights
