"""Profiles (smoke / quick / paper) and validated run configurations.

A notebook's ``parameters`` cell names a ``profile`` and a dict of ``overrides``; the chapter's
profile table (in ``lalr_core.experiments``) fills every heavy setting, ``resolve`` merges the
overrides and rejects unknown keys, and ``RunConfig`` validates one training run before any
compute. The resolved ``RunConfig`` (minus the device) is the cache key of the run.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, Mapping

from .data import DATASETS, check_dataset_name
from .models import check_model_name
from .orthogonal import LAYER_RULES, METHODS, TRANSFORMS
from .tempbalance import SCHEMES

PROFILES = ("smoke", "quick", "paper")
OPTIMIZERS = ("sgd", "sgdm", "adam", "adamw")
SCHEDULES = ("constant", "multistep", "cosine", "cosine_tb")
ALPHA_XMIN = ("median", "ks")
# Fields added after caches existed: key() omits them at their defaults, so old keys still hit.
OMIT_AT_DEFAULT = ("layer_lr", "layer_lr_params", "alpha_xmin", "augmix")


def check_profile(profile: str) -> str:
    """Return ``profile`` if known, else raise ``ValueError`` naming the choices."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    return profile


def resolve(table: Mapping[str, Mapping[str, Any]], profile: str,
            overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Settings of ``profile`` from a chapter's table, with ``overrides`` applied.

    Override values of ``None`` mean "keep the profile's value" (papermill passes every
    parameter). Raises ``ValueError`` for an unknown profile or an unknown override key.
    """
    check_profile(profile)
    settings = dict(table[profile])
    for key, value in (overrides or {}).items():
        if key not in settings:
            raise ValueError(f"unknown setting {key!r} for this chapter; known: {sorted(settings)}")
        if value is not None:
            settings[key] = type(settings[key])(value) if isinstance(settings[key], tuple) else value
    return settings


def _positive(name: str, value, allow_none: bool = False):
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines one training run (data, model, optimiser, schedule, seed).

    Units: ``lr`` per step at the start of training; ``milestones`` and ``epochs`` in epochs;
    ``wd`` is L2 added to the gradient for sgd/sgdm/adam and decoupled for adamw (torch's
    semantics); ``clip_grad_norm`` is the max global gradient 2-norm (None = off), applied to the
    raw gradients before ``grad_transform`` (seed 004 digest G11). ``layer_lr`` names a
    ``tempbalance.SCHEMES`` allocation recomputed every epoch from the current alphas
    (TempBalance, seed 001 ch. 2; ``layer_lr_params`` are the scheme's ``(name, value)`` pairs,
    ``alpha_xmin`` the x_min rule of the alphas); ``"none"`` is one global lr.
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
    grad_transform: str = "none"     # none | orth | norm | cnorm (seed 004 sec. 5.3, 5.5.3)
    orth_method: str = "svd"         # svd (exact U V^T, the source) | newton_schulz (5 steps)
    transform_layers: str = "all"    # all conv+linear weights | conv only (table 5.6)
    eval_every_steps: int = 0        # also evaluate validation every k steps (fig 5.7); 0 = off
    seed: int = 0
    deterministic: bool = False      # torch.use_deterministic_algorithms during the run
    eval_batch_size: int = 1000
    bf16: bool = False               # bf16 autocast, used only on CUDA
    layer_lr: str = "none"           # none | a tempbalance.SCHEMES name, e.g. tb_linear
    layer_lr_params: tuple = ()      # ((name, value), ...) for the scheme, e.g. lr_min_ratio
    alpha_xmin: str = "median"       # x_min rule of the per-layer alphas (median | ks)
    device: str = field(default="auto", compare=False)  # not part of the cache key

    def __post_init__(self):
        check_dataset_name(self.dataset)
        check_model_name(self.model)
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {OPTIMIZERS}")
        if self.grad_transform not in TRANSFORMS:
            raise ValueError(f"unknown grad_transform {self.grad_transform!r}; choose one of {TRANSFORMS}")
        if self.orth_method not in METHODS:
            raise ValueError(f"unknown orth_method {self.orth_method!r}; choose one of {METHODS}")
        if self.transform_layers not in LAYER_RULES:
            raise ValueError(f"unknown transform_layers {self.transform_layers!r}; "
                             f"choose one of {LAYER_RULES}")
        if isinstance(self.eval_every_steps, bool) or not isinstance(self.eval_every_steps, int) \
                or self.eval_every_steps < 0:
            raise ValueError(f"eval_every_steps must be an int >= 0, got {self.eval_every_steps!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; choose one of {SCHEDULES}")
        for name in ("lr", "batch_size", "epochs", "width", "eval_batch_size"):
            _positive(name, getattr(self, name))
        _positive("clip_grad_norm", self.clip_grad_norm, allow_none=True)
        _positive("n_train", self.n_train, allow_none=True)
        _positive("n_test", self.n_test, allow_none=True)
        if self.n_val < 0 or self.wd < 0:
            raise ValueError(f"n_val and wd must be >= 0, got {self.n_val}, {self.wd}")
        if not 0 <= self.momentum < 1 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"momentum and betas must lie in [0, 1), got {self.momentum}, {self.betas}")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay must lie in (0, 1], got {self.lr_decay}")
        if sorted(self.milestones) != list(self.milestones) or any(
                not 0 < m < self.epochs for m in self.milestones):
            raise ValueError(f"milestones must be increasing epochs in (0, {self.epochs}), "
                             f"got {self.milestones}")
        if self.device not in ("auto", "cpu") and not self.device.startswith(("cuda", "mps")):
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda[:k]' or 'mps', got {self.device!r}")
        if self.augmix and not self.augment:
            raise ValueError("augmix=True needs augment=True (AugMix follows the crop and flip)")
        self._check_layer_lr()
        object.__setattr__(self, "betas", tuple(self.betas))
        object.__setattr__(self, "milestones", tuple(self.milestones))

    def _check_layer_lr(self) -> None:
        """Validate (and normalise to hashable tuples) the layer-wise lr fields."""
        if self.layer_lr != "none" and self.layer_lr not in SCHEMES:
            raise ValueError(f"unknown layer_lr {self.layer_lr!r}; choose 'none' or one of "
                             f"{', '.join(SCHEMES)}")
        if self.alpha_xmin not in ALPHA_XMIN:
            raise ValueError(f"unknown alpha_xmin {self.alpha_xmin!r}; choose one of {ALPHA_XMIN}")
        try:
            pairs = tuple((str(name), value) for name, value in self.layer_lr_params)
        except (TypeError, ValueError):
            raise ValueError(f"layer_lr_params must be (name, value) pairs, "
                             f"got {self.layer_lr_params!r}") from None
        if pairs and self.layer_lr == "none":
            raise ValueError(f"layer_lr_params {pairs!r} given but layer_lr is 'none'")
        if pairs:
            fn = SCHEMES[self.layer_lr]
            allowed = set() if self.layer_lr == "eq2.13" else \
                set(inspect.signature(fn).parameters) - {"alphas", "lr_t", "rng"}
            if unknown := sorted({n for n, _ in pairs} - allowed):
                raise ValueError(f"unknown layer_lr_params {unknown} for {self.layer_lr!r}; "
                                 f"allowed: {sorted(allowed)}")
        object.__setattr__(self, "layer_lr_params", pairs)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        spec = DATASETS[self.dataset]
        return spec.in_channels, spec.image_size, spec.image_size

    def key(self) -> dict[str, Any]:
        """The resolved parameters that identify the run (the cache key's content).

        Fields of ``OMIT_AT_DEFAULT`` are left out at their default values, so the keys of
        runs cached before those fields existed are unchanged.
        """
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare
                and not (f.name in OMIT_AT_DEFAULT and getattr(self, f.name) == f.default)}

    def replace(self, **changes) -> "RunConfig":
        """A validated copy with ``changes`` applied (unknown names raise ``TypeError``)."""
        return dataclasses.replace(self, **changes)
