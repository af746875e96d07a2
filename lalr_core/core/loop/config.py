"""Profiles (smoke / quick / paper) and validated run configurations.

A notebook's ``parameters`` cell names a ``profile`` and a dict of ``overrides``; the chapter's
typed settings (`lalr_core.core.runs.chapter`) fill every heavy setting and check the overrides,
and ``RunConfig`` validates one training run before any compute. The resolved ``RunConfig``
(minus the device) is the cache key of the run.

``RunConfig`` holds what every run has (data, model, optimiser, schedule, seed). A research
method's settings travel in ``RunConfig.methods`` as that method's own frozen `MethodConfig`
(validated by it, hashable, registered by name in ``METHODS``), so adding a method adds no
field here; the training loop asks each method for its hooks (`MethodConfig`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from lalr_core.core.data import DATASETS, check_dataset_name
from lalr_core.core.loop.registry import Registry
from lalr_core.core.loop.schedules import SCHEDULES  # noqa: F401  (RunConfig.schedule; re-exported)
from lalr_core.core.models.networks import check_model_name

PROFILES = ("smoke", "quick", "paper")

OPTIMIZERS = Registry("optimizer")  # name -> factory(params, cfg, **optimizer_params)
TASKS = Registry("task")            # name -> TaskConfig subclass; core ones in core.tasks
METHODS = Registry("method")        # name -> MethodConfig subclass


@dataclass(frozen=True)
class PluginConfig:
    """Settings of a registered plug-in (a task or a method): frozen, validated, hashable.

    ``key()`` is ``{"kind": name, **fields}``; `plugin_config` rebuilds the object from it. A
    field declared with ``field(compare=False)`` (e.g. a task's number of loader processes or
    its data folder: how the run is done, not what it computes) is left out of equality and
    of ``key()``, like ``RunConfig.device``; the rebuilt object has its default there.
    """

    name: ClassVar[str] = ""

    def key(self) -> dict[str, Any]:
        return {"kind": self.name, **{f.name: getattr(self, f.name)
                                      for f in dataclasses.fields(self) if f.compare}}


def plugin_config(spec, registry: Registry):
    """``spec`` (a config object, its registered name, or its ``key()`` dict) as an object."""
    if isinstance(spec, PluginConfig):
        return spec
    if isinstance(spec, str):
        spec = {"kind": spec}
    if not isinstance(spec, Mapping) or "kind" not in spec:
        raise ValueError(f"a {registry.kind} must be its config object, its name or a dict with "
                         f"a 'kind' (its registered name), got {spec!r}")
    fields = dict(spec)
    cls = registry[fields.pop("kind")]
    try:
        return cls(**fields)
    except TypeError as e:
        raise ValueError(f"bad settings for {registry.kind} {cls.name!r}: {e}") from None


@dataclass(frozen=True)
class TaskConfig(PluginConfig):
    """What a training step computes from a batch (`lalr_core.core.loop.tasks` has the protocol).

    The optional parts of the protocol are declared here with defaults that change nothing, so
    the loop calls them on every task; a task overrides the ones it needs.
    """

    # Key entries (``"epochs"``, ``"task.<field>"``) in which a resumed run may differ from
    # its checkpoint; any other difference is refused.
    resume_free = ()
    # Modules whose code a run of this task depends on beyond the task's own (a task that
    # wraps another by name lists the other's), for the run's code fingerprint.
    code_modules = ()
    # Stop after this many steps in all (None: every epoch in full).
    max_steps = None
    # A per-step lr schedule ``(cfg, data, step) -> factor`` in place of ``cfg.schedule``
    # (None: the run's epoch schedule applies).
    step_lr_factor = None

    def start_epoch(self, cfg: "RunConfig", data, epoch: int) -> None:
        """Before each epoch's batches (0-based ``epoch``); nothing by default."""

    def configure_optimizer(self, cfg: "RunConfig", optimizer) -> None:
        """Right after the optimiser is built (methods' wrappers included); nothing by default."""

    def correct(self, cfg: "RunConfig", model, data, split: str):
        """One bool per example of ``split``: classified correctly? None: not defined."""
        return None


@dataclass(frozen=True)
class MethodConfig(PluginConfig):
    """A method's settings inside a `RunConfig`, and its hooks into the training loop.

    Subclass as a frozen dataclass, validate in ``__post_init__``, register with
    ``@METHODS.register(name)`` and set ``name``. Every hook is optional:

    * ``param_groups(model, lr)``: a per-layer lr policy's param groups (see
      `lalr_core.core.loop.layer_lr`); at most one method of a run may return groups;
    * ``wrap_optimizer(optimizer, model)``: e.g. a gradient transform before each step;
    * ``callbacks(cfg)``: callbacks appended after the caller's (same protocol as `train`'s).
    """

    def param_groups(self, model, lr: float) -> list[dict] | None:
        return None

    def wrap_optimizer(self, optimizer, model):
        return optimizer

    def callbacks(self, cfg: "RunConfig") -> list:
        return []


def method_config(spec: MethodConfig | Mapping[str, Any]) -> MethodConfig:
    """``spec`` as a `MethodConfig` (a cache key's ``{"kind": name, ...}`` is rebuilt)."""
    if isinstance(spec, str):
        raise ValueError(f"a method must be a MethodConfig or its key dict, got {spec!r}")
    return plugin_config(spec, METHODS)


def check_profile(profile: str) -> str:
    """Return ``profile`` if known, else raise ``ValueError`` naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return profile


def _positive(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


# RunConfig's fields by kind, type-checked before the range checks (nothing is converted, so
# a valid config keeps its values and its cache key). None is allowed where the field says so.
_INT_FIELDS = ("n_train", "n_val", "n_test", "split_seed", "batch_size", "epochs",
               "eval_every_steps", "seed", "eval_batch_size")
_REAL_FIELDS = ("width", "lr", "momentum", "wd", "lr_decay", "clip_grad_norm")
_BOOL_FIELDS = ("synthetic", "augment", "augmix", "nesterov", "deterministic", "bf16")
_OPTIONAL_FIELDS = ("n_train", "n_test", "clip_grad_norm")


def _check_kind(name: str, value, kind: str) -> None:
    """Raise ``ValueError`` naming field ``name`` unless ``value`` is an int (not a bool), a
    finite real number (int or float, not a bool) or a bool, as ``kind`` says."""
    if kind == "bool":
        ok, what = isinstance(value, bool), "true or false"
    elif kind == "int":
        ok, what = isinstance(value, int) and not isinstance(value, bool), "an integer"
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value)
        what = "a finite number"
    if not ok:
        raise ValueError(f"{name} must be {what}, got {value!r}")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines one training run (data, model, optimiser, schedule, seed).

    Units: ``lr`` per step at the start of training; ``milestones`` and ``epochs`` in epochs;
    ``wd`` is L2 added to the gradient for sgd/sgdm/adam and decoupled for adamw (torch's
    semantics); ``clip_grad_norm`` is the max global gradient 2-norm (None = off), applied to the
    raw gradients before any method's gradient transform (our reading of seed 004's "max gradient of 1.0"). ``methods``
    are the research methods of the run (`MethodConfig`s, e.g. TempBalance's per-layer lrs or
    an orthogonalising gradient transform), in the order their hooks apply.
    """

    dataset: str = "fashion_mnist"
    synthetic: bool = False          # in-memory data in the real shapes (smoke profile)
    n_train: int | None = None       # None = the whole official train split minus n_val
    n_val: int = 0                   # held out from the official train split
    n_test: int | None = None        # None = the whole official test split
    split_seed: int = 0
    augment: bool = False            # random crop (pad 4 on 32 px) + horizontal flip, on device
    augmix: bool = False             # then AugMix, torchvision defaults (seed 001 ch. 3)
    model: str = "resnet20"
    width: float = 1.0               # multiplier of every hidden width
    optimizer: str = "sgdm"
    lr: float = 0.1
    momentum: float = 0.9            # sgdm only
    betas: tuple[float, float] = (0.9, 0.999)  # adam/adamw only
    wd: float = 0.0
    nesterov: bool = False
    batch_size: int = 128
    epochs: int = 10
    schedule: str = "constant"
    milestones: tuple[int, ...] = ()  # epochs at which multistep multiplies lr by lr_decay
    lr_decay: float = 0.1
    clip_grad_norm: float | None = None
    eval_every_steps: int = 0        # also evaluate validation every k steps (fig 5.7); 0 = off
    seed: int = 0
    deterministic: bool = False      # torch.use_deterministic_algorithms during the run
    eval_batch_size: int = 1000
    bf16: bool = False               # bf16 autocast, used only on CUDA
    optimizer_params: tuple = ()     # ((name, value), ...) extra arguments of the factory
    task: Any = "image_classification"  # a TaskConfig, its name or key dict
    methods: tuple = ()              # MethodConfig instances (or their key dicts)
    device: str = field(default="auto", compare=False)  # not part of the cache key

    def __post_init__(self):
        self._check_kinds()
        check_dataset_name(self.dataset)
        check_model_name(self.model)
        OPTIMIZERS[self.optimizer]  # raises naming the choices
        object.__setattr__(self, "task", plugin_config(self.task, TASKS))
        items = self.optimizer_params.items() if isinstance(self.optimizer_params, Mapping) \
            else self.optimizer_params
        try:
            pairs = tuple((str(k), v) for k, v in items)
        except (TypeError, ValueError):
            raise ValueError(f"optimizer_params must be (name, value) pairs, "
                             f"got {self.optimizer_params!r}") from None
        object.__setattr__(self, "optimizer_params", pairs)
        factory = inspect.signature(OPTIMIZERS[self.optimizer]).parameters
        allowed = [n for n, q in list(factory.items())[2:] if q.kind == q.KEYWORD_ONLY
                   or q.kind == q.POSITIONAL_OR_KEYWORD]
        if unknown := sorted({k for k, _ in pairs} - set(allowed)):
            raise ValueError(f"unknown optimizer_params {unknown} for {self.optimizer!r}; "
                             f"allowed: {allowed}")
        if isinstance(self.eval_every_steps, bool) or not isinstance(self.eval_every_steps, int) \
                or self.eval_every_steps < 0:
            raise ValueError(f"eval_every_steps must be an int >= 0, got {self.eval_every_steps!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose one of "
                             f"{SCHEDULES.names()}")
        for name in ("lr", "batch_size", "epochs", "width", "eval_batch_size"):
            _positive(name, getattr(self, name))
        _positive("clip_grad_norm", self.clip_grad_norm, allow_none=True)
        _positive("n_train", self.n_train, allow_none=True)
        _positive("n_test", self.n_test, allow_none=True)
        if self.n_val < 0 or self.wd < 0:
            raise ValueError(f"n_val and wd must be >= 0, got {self.n_val}, {self.wd}")
        if not 0 <= self.momentum < 1 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"momentum and betas must lie in [0, 1), got {self.momentum}, "
                             f"{self.betas}")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay must lie in (0, 1], got {self.lr_decay}")
        if sorted(self.milestones) != list(self.milestones) or any(
                not 0 < m < self.epochs for m in self.milestones):
            raise ValueError(f"milestones must be increasing epochs in (0, {self.epochs}), "
                             f"got {self.milestones}")
        if self.device not in ("auto", "cpu") and not self.device.startswith(("cuda", "mps")):
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda[:k]' or 'mps', "
                             f"got {self.device!r}")
        if self.augmix and not self.augment:
            raise ValueError("augmix=True needs augment=True (AugMix follows the crop and flip)")
        self._check_methods()
        object.__setattr__(self, "betas", tuple(self.betas))
        object.__setattr__(self, "milestones", tuple(self.milestones))

    def _check_kinds(self) -> None:
        """Types first, so the range checks compare numbers: ints, finite reals, bools, the
        seeds >= 0 and the milestones / betas as sequences of those (bad user input is a
        ``ValueError`` here, as everywhere in the config)."""
        for kind, names in (("int", _INT_FIELDS), ("real", _REAL_FIELDS), ("bool", _BOOL_FIELDS)):
            for name in names:
                value = getattr(self, name)
                if not (value is None and name in _OPTIONAL_FIELDS):
                    _check_kind(name, value, kind)
        for name in ("seed", "split_seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name, kind in (("milestones", "int"), ("betas", "real")):
            value = getattr(self, name)
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"{name} must be a tuple, got {value!r}")  # noqa: TRY004
            for i, v in enumerate(value):
                _check_kind(f"{name}[{i}]", v, kind)
        if len(self.betas) != 2:
            raise ValueError(f"betas must be two numbers, got {self.betas!r}")
        if not isinstance(self.device, str):
            raise ValueError(f"device must be a string, got {self.device!r}")  # noqa: TRY004

    def _check_methods(self) -> None:
        """Rebuild key dicts as `MethodConfig`s; one method per name."""
        if isinstance(self.methods, (MethodConfig, Mapping)) or not isinstance(
                self.methods, (list, tuple)):
            raise ValueError(f"methods must be a tuple of MethodConfig, got {self.methods!r}")
        methods = tuple(method_config(m) for m in self.methods)
        names = [m.name for m in methods]
        if len(set(names)) != len(names):
            raise ValueError(f"each method may appear once, got {names}")
        object.__setattr__(self, "methods", methods)

    def method(self, name: str) -> MethodConfig | None:
        """The run's settings of method ``name`` (None if the run does not use it)."""
        return next((m for m in self.methods if m.name == name), None)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        spec = DATASETS[self.dataset]
        return spec.in_channels, spec.image_size, spec.image_size

    def key(self) -> dict[str, Any]:
        """The resolved parameters that identify the run (the cache key's content);
        ``RunConfig(**cfg.key())`` rebuilds ``cfg``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare}
        out["task"] = self.task.key()
        out["methods"] = [m.key() for m in self.methods]
        return out

    def replace(self, **changes) -> "RunConfig":
        """A validated copy with ``changes`` applied (unknown names raise ``TypeError``)."""
        return dataclasses.replace(self, **changes)
