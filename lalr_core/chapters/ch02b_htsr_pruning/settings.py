"""Chapter 02b's names (metrics, roles, table 3.1, figure ids) and its typed settings per profile.

``PROFILES``: smoke / quick = our reductions on sklearn digits; paper = CIFAR-100 and the
source's models (its epochs, ratio grid and batch are our choices: the source states none).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lalr_core.core.runs.chapter import ChapterSettings, positive
from lalr_core.core.data import check_dataset_name
from lalr_core.core.models.networks import check_model_name
from lalr_core.core.runs import EXECUTORS
from lalr_core.methods.pruning import budgets as pruning

# The 10 HT-SR metrics (the source counts 10 and names 11; our 10: `spectral.htsr_metrics`)
# grouped as in the source's bullet list (ch. 3.2).
SHAPE = ("alpha", "rand_distance", "stable_rank", "entropy")
SCALE = ("norm", "log_norm", "spectral_norm", "log_spectral_norm")
HYBRID = ("alpha_weighted", "log_alpha_norm")
METRICS = SHAPE + SCALE + HYBRID
UNIFORM = "uniform"
AUGS = ("traditional", "augmix")
ROLES = ("densenet", "wrn", "mobilenet", "vgg")  # the model roles, in pretraining order
# Table 3.1 is `pruning.TABLE_3_1`, the dict `layer_budgets`' rules are named after.
SETTINGS = pruning.TABLE_3_1
SOURCE_MODELS = {"densenet": "DenseNet40", "wrn": "WRN28-10", "mobilenet": "MobileNetV2",
                 "vgg": "VGG19"}

# Figs 3.4-3.21: (role, aug) -> (direct panel, inverse panel, composite figure)
GRID_FIGS = {("densenet", "traditional"): ("fig3.4", "fig3.5", "fig3.6"),
             ("densenet", "augmix"): ("fig3.7", "fig3.8", "fig3.9"),
             ("mobilenet", "traditional"): ("fig3.10", "fig3.11", "fig3.12"),
             ("mobilenet", "augmix"): ("fig3.13", "fig3.14", "fig3.15"),
             ("wrn", "traditional"): ("fig3.16", "fig3.17", "fig3.18"),
             ("wrn", "augmix"): ("fig3.19", "fig3.20", "fig3.21")}


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 02b at one profile (see ``PROFILES``). Ratios are global
    targets P (fraction of the masked convs' weights pruned) unless named otherwise."""

    # Data, models and execution (every run): a `DATASETS` name; training examples (None =
    # the whole split); role -> `lalr_core.core.models.networks` name for each of ``ROLES``; the seed of
    # every run; parallel training processes and the sweep's executor (`EXECUTORS`).
    dataset: str
    n_train: int | None
    models: dict
    batch_size: int
    seed: int
    workers: int
    executor: str | None  # None: $LALR_EXECUTOR (`make figures EXECUTOR=...`), else local
    # Pretraining (SGD momentum, cosine; weights kept for the pruning): lr per step, L2 wd,
    # epochs; the roles also pretrained with AugMix; the roles whose alpha / entropy are
    # recorded every epoch (fig 3.2, compared with their AugMix run).
    pretrain_lr: float
    momentum: float
    wd: float
    pretrain_epochs: int
    augmix_roles: tuple[str, ...]
    fig32_roles: tuple[str, ...]
    # Fig 3.1: the roles drawn and the global unstructured sparsity of ERK / LAMP / uniform.
    fig31_roles: tuple[str, ...]
    fig31_sparsity: float
    # The random inputs that find a slimmed network's dead input channels (the x axis of the
    # accuracy curves, `summaries.slimmed_remaining`).
    slim_samples: int
    # Figs 3.4-3.21 (budgets only): the targets P (rows) and metrics (columns) of each grid.
    grid_ratios: tuple[float, ...]
    grid_metrics: tuple[str, ...]
    # Their null (the layer claims): the same architectures at initialisation, this many
    # seeds (`plans.init_tables`; no training).
    init_seeds: int
    # Finetuning (every section): lr0 (cosine), channel scores (`pruning.IMPORTANCE`), and the
    # budget rules swept next to uniform (`pruning.RULES`) in figs 3.3 and T-001-e.
    ft_lr: float
    importance: str
    rules: tuple[str, ...]
    # Fig 3.3 (DNm): finetuning epochs (also T-001-e's), metrics, targets P with traditional
    # and with AugMix pretraining, and the pretraining augmentations drawn.
    f33_epochs: int
    f33_metrics: tuple[str, ...]
    f33_ratios: tuple[float, ...]
    f33_aug_ratios: tuple[float, ...]
    f33_augs: tuple[str, ...]
    # T-001-e: the roles compared with DNm, their metrics and targets P.
    te_roles: tuple[str, ...]
    te_metrics: tuple[str, ...]
    te_ratios: tuple[float, ...]
    # Figs 3.3 and T-001-e: extra targets P run with uniform pruning only, so that each
    # metric run can be compared with the uniform curve at its own measured size (the
    # verdicts interpolate the curve; a run outside it is clamped to the nearest end).
    curve_ratios: tuple[float, ...]
    # Figs 3.23-3.25: uniform channel ratios of VGG (the 11 sizes), finetuning epochs and
    # finetuning seeds (seed, seed + 1, ...; same pretrained weights and masks): fig 3.25's
    # accuracy comparison pairs them, the alpha figures 3.23/3.24 draw the first.
    vgg_ratios: tuple[float, ...]
    vgg_epochs: int
    vgg_seeds: int
    # Fig 3.22: VGG's uniform channel ratio ("4M parameters", our reading: ratio 0.553) and finetuning epochs.
    f322_ratio: float
    f322_epochs: int
    # Fig 3.26 (DNm, uniform / alpha pruning x global / TempBalance lrs): targets P, epochs.
    f326_ratios: tuple[float, ...]
    f326_epochs: int

    def check(self) -> None:
        """Reject values that would only fail after pretraining (``ValueError``): unknown data,
        models, metrics, rules, roles, augmentations or channel scores, and out-of-range
        numbers or ratios."""
        try:
            check_dataset_name(self.dataset)
        except ValueError as e:
            raise ValueError(f"setting 'dataset': {e}") from e
        if bad := sorted(set(ROLES) - set(self.models)):
            raise ValueError(f"setting 'models' lacks roles {bad}; it needs one model per "
                             f"role of {ROLES}")
        for role, name in self.models.items():
            if not isinstance(name, str):
                raise ValueError(f"setting 'models': {role} must be a model name, got {name!r}")
            try:
                check_model_name(name)
            except ValueError as e:
                raise ValueError(f"setting 'models' ({role}): {e}") from e
        positive(self, "n_train", allow_none=True)
        positive(self, "batch_size", "workers", "pretrain_lr", "pretrain_epochs", "ft_lr",
                 "f33_epochs", "vgg_epochs", "vgg_seeds", "f322_epochs", "f326_epochs",
                 "slim_samples", "init_seeds")
        for name in ("seed", "wd"):
            if getattr(self, name) < 0:
                raise ValueError(f"setting {name!r} must be >= 0, got {getattr(self, name)!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"setting 'momentum' must lie in [0, 1), got {self.momentum!r}")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise ValueError(f"setting 'executor' must be one of {EXECUTORS}, "
                             f"got {self.executor!r}")
        self._check_names()
        self._check_ratios()

    def _check_names(self) -> None:
        choices = {"metrics": (METRICS, "grid_metrics", "f33_metrics", "te_metrics"),
                   "rules": (pruning.RULES, "rules"), "augmentations": (AUGS, "f33_augs"),
                   "roles": (ROLES, "augmix_roles", "fig32_roles", "fig31_roles", "te_roles")}
        for kind, (known, *names) in choices.items():
            for name in names:
                value = getattr(self, name)
                if bad := sorted(set(value) - set(known)):
                    raise ValueError(f"setting {name!r}: unknown {kind} {bad}; "
                                     f"choose from {known}")
                if not value and name != "te_roles":
                    raise ValueError(f"setting {name!r} must not be empty")
        if self.importance not in pruning.IMPORTANCE:
            raise ValueError(f"setting 'importance' must be one of {pruning.IMPORTANCE}, "
                             f"got {self.importance!r}")
        # the AugMix budget grids (figs 3.7-3.21) and fig 3.3's AugMix sweep need those runs
        need = {r for r, a in GRID_FIGS if a == "augmix"} | \
               ({"densenet"} if "augmix" in self.f33_augs else set())
        if bad := sorted(need - set(self.augmix_roles)):
            raise ValueError(f"setting 'augmix_roles' must include {bad} (figs 3.3-3.21 use "
                             f"their AugMix runs), got {self.augmix_roles!r}")
        if "densenet" not in self.fig32_roles or not set(self.fig32_roles) <= \
                set(self.augmix_roles):
            raise ValueError(f"setting 'fig32_roles' must include densenet (fig 3.2's check) and "
                             f"lie in augmix_roles {self.augmix_roles!r}, "
                             f"got {self.fig32_roles!r}")

    def _check_ratios(self) -> None:
        for name in ("grid_ratios", "f33_ratios", "f33_aug_ratios", "te_ratios", "f326_ratios",
                     "curve_ratios"):
            value = getattr(self, name)
            if (not value and name != "curve_ratios") or \
                    any(not 0 < P <= pruning.K_MAX for P in value):
                least = "" if name == "curve_ratios" else ", at least one"
                raise ValueError(f"setting {name!r}: targets must lie in (0, {pruning.K_MAX}]"
                                 f"{least}, got {value!r}")
        if not self.vgg_ratios or any(not 0 <= r < 1 for r in self.vgg_ratios):
            raise ValueError(f"setting 'vgg_ratios': channel ratios must lie in [0, 1), at "
                             f"least one, got {self.vgg_ratios!r}")
        if not 0 <= self.f322_ratio < 1:
            raise ValueError(f"setting 'f322_ratio' must lie in [0, 1), got {self.f322_ratio!r}")
        if not 0 < self.fig31_sparsity < 1:
            raise ValueError(f"setting 'fig31_sparsity' must lie in (0, 1), "
                             f"got {self.fig31_sparsity!r}")


_MINI = {"densenet": "densenet10_mini", "wrn": "wrn10_1", "mobilenet": "mobilenetv2_mini",
         "vgg": "vgg_mini"}
_COMMON = dict(
    pretrain_lr=0.1, momentum=0.9, wd=5e-4, ft_lr=0.05, importance="me_prune", seed=0,
    augmix_roles=("densenet", "wrn", "mobilenet"), fig32_roles=("densenet", "wrn"),
    fig31_roles=("wrn", "densenet"), fig31_sparsity=0.8, rules=("direct", "inverse"),
    te_roles=("mobilenet", "wrn"), f322_ratio=0.553, executor=None, slim_samples=32,
    init_seeds=10,
)
_F326_RATIOS = (0.2, 0.35, 0.45, 0.6, 0.8)
PROFILES = {
    "smoke": Settings(
        **_COMMON, dataset="digits", n_train=256, models=_MINI, batch_size=64,
        pretrain_epochs=2, f33_epochs=2, f33_metrics=("entropy", "norm"), f33_ratios=(0.85,),
        f33_aug_ratios=(0.85,), f33_augs=AUGS, grid_ratios=(0.5, 0.85),
        grid_metrics=("entropy", "norm", "spectral_norm"), te_metrics=("entropy",),
        te_ratios=(0.85,), curve_ratios=(0.95,), vgg_ratios=(0.0, 0.9), vgg_epochs=2, vgg_seeds=1,
        f322_epochs=2, f326_ratios=(0.6,), f326_epochs=2, workers=1,
    ),
    "quick": Settings(
        **_COMMON, dataset="digits", n_train=None, models=_MINI, batch_size=64,
        pretrain_epochs=15, f33_epochs=2, f33_metrics=METRICS, f33_ratios=(0.3, 0.5, 0.7, 0.85),
        f33_aug_ratios=(0.5, 0.85), f33_augs=AUGS, grid_ratios=(0.3, 0.5, 0.7, 0.85),
        grid_metrics=METRICS,
        te_metrics=("entropy", "alpha", "norm", "spectral_norm"), te_ratios=(0.5, 0.85),
        # the uniform curve from 92 % to 1 % of the conv weights remaining (DNm), spanning
        # every metric run's size (0.7 ... 0.015), so few comparisons are clamped
        curve_ratios=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95),
        vgg_ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95), vgg_epochs=5,
        vgg_seeds=3,  # runs of ~4 s: seeds put the training noise into fig 3.25's intervals
        # + 0.25: DNm's uniform run keeps 61 % of its conv weights, inside the source's
        # "optimal range" 55-65 % (fig 3.26), which no size of the coarser grid reaches
        f322_epochs=8, f326_ratios=(0.2, 0.25, 0.35, 0.45, 0.6, 0.8), f326_epochs=4,
        workers=2,
    ),
    "paper": Settings(  # source silent on epochs / ratio grid / batch: our choices
        **_COMMON, dataset="cifar100", n_train=None, batch_size=128,
        models={"densenet": "densenet40_cifar", "wrn": "wrn28_10_cifar",
                "mobilenet": "mobilenetv2_cifar", "vgg": "vgg19_cifar"},
        pretrain_epochs=200, f33_epochs=40, f33_metrics=METRICS,
        f33_ratios=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
        f33_aug_ratios=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), f33_augs=AUGS,
        grid_ratios=(0.1, 0.3, 0.5, 0.7, 0.9), grid_metrics=METRICS, te_metrics=METRICS,
        te_ratios=(0.3, 0.5, 0.7, 0.9), curve_ratios=(0.05, 0.95),  # the curve's two ends
        vgg_ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95), vgg_epochs=40,
        vgg_seeds=1,  # the source shows one run per size
        f322_epochs=40, f326_ratios=_F326_RATIOS, f326_epochs=40, workers=1,
    ),
}


def setting(aug: str, rule: str) -> int:
    """Table 3.1's setting number of ``aug`` (traditional | augmix) and ``rule``."""
    if aug not in SETTINGS or rule not in SETTINGS[aug]:
        raise ValueError(f"no setting for ({aug!r}, {rule!r}); table: {SETTINGS}")
    return SETTINGS[aug][rule]


def settings_table() -> pd.DataFrame:
    """Table 3.1 rendered from ``SETTINGS`` (rows augmentation, columns ratio ~ metric)."""
    names = {"traditional": "Traditional", "augmix": "AugMix"}
    cols = {"direct": "Directly Proportional", "inverse": "Inversely Proportional"}
    df = pd.DataFrame({cols[r]: {names[a]: SETTINGS[a][r] for a in SETTINGS} for r in cols})
    df.index.name = "Augmentation Scheme"
    return df
