"""Chapter 02's names and settings: the allocations, the typed ``Settings`` per profile, and the
runs of every item (`section_runs`).

``paper`` is the source's setting: CIFAR-100, CIFAR ResNet-18/34 at widths {0.25, 0.5, 1, 1.5,
2, 2.5} (eq. 2.10, its "10" read as 1.0, a typo) and initial lrs {0.025, ..., 0.2} (eq. 2.11),
200 epochs of the cosine schedule eq. 2.12, allocation recomputed every epoch; what the source
leaves out (batch, momentum, wd, augmentation, seeds) is TempBalance's code: batch
128, momentum 0.9, wd 5e-4, crop + flip, one seed. ``quick`` is our
reduction on the sklearn digits (R18m / R34m, 8 epochs, the collection's 1347/450 split) with 5
seeds, so that accuracy differences of about a point can be told from seed noise; ``smoke`` the
same on 256 digits in seconds.

Replicates (a claim test decides only on >= 3 independent ones; every run is its own pipeline,
so a seed is one): quick has 5 seeds for the accuracy and CKA claims, 3 (``dist_seeds``) for
fig 2.6 / T-001-c, and 1 trained MLP (``esd_seeds``) for fig 1.3, whose claim test is then
INCONCLUSIVE (its null, ``esd_init_seeds`` untrained MLPs, costs no training; more trained
seeds would add training to the quick budget). ``paper`` has one seed everywhere, as the
source: its claim tests are INCONCLUSIVE unless ``seeds``, ``dist_seeds`` and ``esd_seeds``
are raised to 3.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from lalr_core.core.data import DATASETS, check_dataset_name
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.schedules import SCHEDULES
from lalr_core.core.models.networks import check_model_name
from lalr_core.core.runs import EXECUTORS
from lalr_core.core.runs.chapter import ChapterSettings, Sections, positive
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance

# Allocation name -> (TempBalance scheme, its params). "baseline" is one global lr.
ALLOCATIONS: dict[str, tuple[str, tuple]] = {
    "baseline": ("none", ()),
    "alpha": ("eq2.13", ()),                        # eq. 2.13
    "alpha^2": ("power", (("p", 2.0),)),            # eq. 2.16
    "alpha^3": ("power", (("p", 3.0),)),            # eq. 2.17
    "sqrt": ("root", (("k", 2.0),)),                # eq. 2.18
    "cbrt": ("root", (("k", 3.0),)),
    "root4": ("root", (("k", 4.0),)),
    "log2": ("log", (("base", 2.0),)),
    "softmax": ("softmax", ()),                     # eq. 2.19
    "neg_pow2": ("neg_pow2", ()),                   # eqs. 2.20-2.22
    "gauss_alpha": ("gauss_alpha", ()),             # eqs. 2.26-2.27
    "gauss_lr": ("gauss_lr", ()),                   # eqs. 2.28-2.29
    "emg": ("emg", ()),                             # eqs. 2.30-2.31 (allocation rule ours)
}
FIG23_MAPS = ("alpha", "sqrt", "cbrt", "log2")                                   # fig 2.3
FIG24_MAPS = ("alpha", "alpha^2", "alpha^3", "sqrt", "cbrt", "root4", "log2")    # fig 2.4 (the list is ours)
SAMPLING = ("gauss_alpha", "gauss_lr", "emg")                                    # T-001-d
POWERS = ("alpha^2", "alpha^3")                                                 # T-001-a


# ----------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 02 at one profile (see ``PROFILES``).

    lrs are initial lrs lr_0 per step of the cosine schedule (eq. 2.12); widths are multipliers
    of every channel count; epochs count passes over the train split.
    """

    # Every TempBalance run (`run`): data and the SGDM recipe the source leaves out.
    dataset: str                # a `lalr_core.core.data.DATASETS` name
    n_train: int | None         # training examples; None = the whole train split
    augment: bool               # random crop + horizontal flip
    batch_size: int             # examples per step
    momentum: float             # SGDM momentum, in [0, 1)
    wd: float                   # L2 weight decay added to the gradient, >= 0
    schedule: str               # "cosine" = eq. 2.12; "cosine_tb" = TempBalance's code
    # Fig 2.1 grid (eq. 2.13 vs baseline); its runs also feed figs 2.2-2.5 and T-001-a.
    models: tuple[str, ...]     # >= 2 distinct `lalr_core.core.models.networks` names, shallower first
    widths: tuple[float, ...]
    lrs: tuple[float, ...]      # lr_0 of the grid (the largest is the checks' "largest lr0")
    epochs: int                 # epochs of every run but fig 2.6's and fig 1.3's
    seeds: int                  # seeds 0..seeds-1 of every config but fig 2.6's
    # Fig 2.2 (CKA): the grid runs (every seed) it reads, and the batch-to-batch spread.
    cka_model: str              # one of ``models``
    cka_width: float            # one of ``widths``
    cka_lr: float               # one of ``lrs``
    cka_samples: int | None     # test images of the CKA matrices; None = the whole test set
    cka_batches: int            # random batches of the spread
    cka_batch_size: int         # images per random batch
    cka_batch_seed: int         # seed of the random batches' generator
    # Figs 2.3-2.5: the maps of alpha; alphas from the grid's eq. 2.13 run (seed 0) at map_*.
    map_model: str              # one of ``models``; also fig 2.3's and 2.5's training runs
    map_width: float            # one of ``widths``; also fig 2.3's and 2.5's training runs
    map_lr: float               # one of ``lrs``; fig 2.3's training runs' lr_0
    negpow_lr: float            # lr_0 of fig 2.5's / T-001-b's softmax and NegPow2 runs
    syn_seed: int               # fig 2.5's synthetic alphas: 1 + Exp(syn_alpha_mean), seed
    syn_alpha_mean: float
    # Fig 2.6 / T-001-c: the distribution of alpha over layers, every epoch.
    dist_width: float
    dist_lr: float
    dist_epochs: int
    dist_seeds: int
    dist_epochs_shown: tuple[int, ...]  # histogram epochs, in [0, dist_epochs] (0 = init)
    # T-001-a: squared and cubed weighting (map_model).
    powers_width: float
    powers_lrs: tuple[float, ...]
    # T-001-d: the sampling-based allocations.
    sampling_models: tuple[str, ...]  # >= 2 distinct model names, shallower first
    sampling_width: float
    sampling_lr: float
    # Fig 1.3: the square hidden matrix of an MLP, SGDM, constant lr.
    esd_model: str
    esd_width: float
    esd_lr: float
    esd_momentum: float         # in [0, 1)
    esd_wd: float               # >= 0
    esd_batch: int
    esd_epochs: int
    esd_seeds: int              # trained seeds 0..esd_seeds-1: the claim test's replicates
    esd_init_seeds: int         # the null: the MLP at initialisation, seeds after the trained
    # Our numbers beside the source's: True where the setting is the source's (paper), so ours
    # are judged against the source's spread; False: the difference is reported only.
    judge_source: bool
    # Execution: parallel training processes and the sweep's executor.
    workers: int
    executor: str | None        # "local", "ray"; None: $LALR_EXECUTOR, else local

    def check(self) -> None:
        """Reject values the runs or the notebook's cells cannot use (``ValueError``)."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            items = value if isinstance(value, tuple) else (value,)
            if any(isinstance(v, float) and not math.isfinite(v) for v in items):
                raise ValueError(f"setting {f.name!r} must be finite, got {value!r}")
        _known(self, "dataset", check_dataset_name)
        for name in ("models", "sampling_models", "cka_model", "map_model", "esd_model"):
            _known(self, name, check_model_name)
        positive(self, "n_train", "cka_samples", allow_none=True)
        positive(self, "batch_size", "widths", "lrs", "epochs", "seeds", "cka_width", "cka_lr",
                 "cka_batches", "cka_batch_size", "map_width", "map_lr", "negpow_lr",
                 "syn_alpha_mean", "dist_width", "dist_lr", "dist_epochs", "dist_seeds",
                 "powers_width", "powers_lrs", "sampling_width", "sampling_lr", "esd_width",
                 "esd_lr", "esd_batch", "esd_epochs", "esd_seeds", "esd_init_seeds", "workers")
        for name in ("wd", "esd_wd", "cka_batch_seed", "syn_seed", "dist_epochs_shown"):
            value = getattr(self, name)
            if any(v < 0 for v in (value if isinstance(value, tuple) else (value,))):
                raise ValueError(f"setting {name!r} must be >= 0, got {value!r}")
        for name in ("momentum", "esd_momentum"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"setting {name!r} must lie in [0, 1), got "
                                 f"{getattr(self, name)!r}")
        for name in ("widths", "lrs", "powers_lrs", "dist_epochs_shown"):
            if not getattr(self, name):
                raise ValueError(f"setting {name!r} must not be empty")
        for name in ("models", "sampling_models"):
            value = getattr(self, name)
            if len(value) < 2 or len(set(value)) != len(value):
                raise ValueError(f"setting {name!r} must name >= 2 distinct models (the checks "
                                 f"compare the first with the last), got {value!r}")
        for name, among in (("cka_model", "models"), ("map_model", "models"),
                            ("cka_width", "widths"), ("map_width", "widths"),
                            ("cka_lr", "lrs"), ("map_lr", "lrs")):
            if getattr(self, name) not in getattr(self, among):
                raise ValueError(f"setting {name!r} must be one of {among} = "
                                 f"{getattr(self, among)!r} (its grid run is read), got "
                                 f"{getattr(self, name)!r}")
        if max(self.dist_epochs_shown) > self.dist_epochs:
            raise ValueError(f"setting 'dist_epochs_shown' must lie in [0, dist_epochs = "
                             f"{self.dist_epochs}], got {self.dist_epochs_shown!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"setting 'schedule' must be one of {SCHEDULES.names()}, "
                             f"got {self.schedule!r}")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise ValueError(f"setting 'executor' must be one of {EXECUTORS}, "
                             f"got {self.executor!r}")


def _known(settings: Settings, name: str, check) -> None:
    """Run a name ``check`` on every name in setting ``name``; its error names the setting."""
    value = getattr(settings, name)
    for v in value if isinstance(value, tuple) else (value,):
        try:
            check(v)
        except ValueError as e:
            raise ValueError(f"setting {name!r}: {e}") from None


_SMALL = dict(
    dataset="digits", augment=True, batch_size=64, momentum=0.9, wd=5e-4,
    schedule="cosine",  # eq. 2.12; "cosine_tb" = TempBalance's code (one epoch behind)
    models=("resnet18_mini", "resnet34_mini"), cka_model="resnet34_mini", cka_width=1.0,
    cka_lr=0.2, cka_batches=5, cka_batch_size=128, cka_samples=None, cka_batch_seed=0,
    map_model="resnet18_mini", map_width=1.0,
    map_lr=0.2, negpow_lr=0.05, syn_seed=0, syn_alpha_mean=2.0, dist_width=0.5, dist_lr=0.2,
    dist_epochs_shown=(2, 6, 12),
    powers_width=0.5, powers_lrs=(0.15, 0.2), sampling_width=0.5, sampling_lr=0.1,
    sampling_models=("resnet18_mini", "resnet34_mini"),
    esd_model="mlp", esd_width=2.0, esd_lr=0.02, esd_momentum=0.9, esd_wd=5e-4, esd_batch=16,
    esd_epochs=40, esd_seeds=1, esd_init_seeds=5, judge_source=False, executor=None,
)

PROFILES: dict[str, Settings] = {
    "smoke": Settings(**dict(
        _SMALL, n_train=256, widths=(0.5,), lrs=(0.2,), epochs=2, seeds=1, dist_epochs=3,
        dist_seeds=1, dist_epochs_shown=(1, 2, 3), cka_width=0.5, cka_batches=2, map_width=0.5,
        esd_epochs=2, powers_lrs=(0.2,), workers=1,
    )),
    "quick": Settings(**dict(
        _SMALL, n_train=None, widths=(0.5, 1.0), lrs=(0.05, 0.2), epochs=8, seeds=5,
        dist_epochs=12, dist_seeds=3, workers=2,
    )),
    "paper": Settings(**dict(
        _SMALL, dataset="cifar100", n_train=None, batch_size=128,
        models=("resnet18_cifar", "resnet34_cifar"), widths=(0.25, 0.5, 1.0, 1.5, 2.0, 2.5),
        lrs=(0.025, 0.05, 0.075, 0.1, 0.15, 0.2), epochs=200, seeds=1,
        cka_model="resnet34_cifar", cka_width=0.5, cka_lr=0.2, cka_batch_size=128,
        cka_samples=2000,  # n x n grams of 109 modules: the whole 10k test set needs ~90 GB
        map_model="resnet18_cifar", map_width=0.25, map_lr=0.2, negpow_lr=0.05,
        dist_width=0.25, dist_lr=0.2, dist_epochs=200, dist_seeds=1,
        dist_epochs_shown=(20, 100, 200), powers_width=0.25, powers_lrs=(0.15, 0.2),
        sampling_width=0.25, sampling_lr=0.1,
        sampling_models=("resnet18_cifar", "resnet34_cifar", "resnet101_cifar",
                         "resnet152_cifar"),
        esd_model="mlp", esd_epochs=40, judge_source=True, workers=1,
    )),
}


# ----------------------------------------------------------------------------- configs
def run(s: Settings, model: str, width: float, lr: float, allocation: str = "baseline",
        seed: int = 0, epochs: int | None = None, **changes) -> RunConfig:
    """One SGDM run of the chapter (cosine eq. 2.12) with a named ``ALLOCATIONS`` entry."""
    if allocation not in ALLOCATIONS:
        raise ValueError(f"unknown allocation {allocation!r}; choose one of {list(ALLOCATIONS)}")
    layer_lr, params = ALLOCATIONS[allocation]
    base = dict(dataset=s.dataset, n_train=s.n_train, augment=s.augment, model=model,
                width=width, optimizer="sgdm", lr=lr, momentum=s.momentum, wd=s.wd,
                batch_size=s.batch_size, epochs=epochs or s.epochs, schedule=s.schedule,
                methods=() if layer_lr == "none" else (TempBalance(layer_lr, params),), seed=seed)
    return RunConfig(**{**base, **changes})


def allocation_of(cfg: RunConfig) -> str:
    """The ``ALLOCATIONS`` name of a config (inverse of `run`)."""
    tb = cfg.method("tempbalance")
    scheme, params = ("none", ()) if tb is None else (tb.scheme, tb.params)
    for name, (layer_lr, p) in ALLOCATIONS.items():
        if scheme == layer_lr and tuple(params) == tuple(p):
            return name
    return f"{scheme}{dict(params)}"


def section_runs(s: Settings) -> Sections:
    """Every training run of the notebook: section -> (configs, one callbacks spec each).

    Identical configs in two sections (e.g. the fig 2.1 runs reused by T-001-a) are one cached
    run; the callbacks spec is part of the cache key, so shared runs carry the same spec.
    """
    seeds = range(s.seeds)
    grid = [run(s, m, w, lr, a, k) for m in s.models for w in s.widths for lr in s.lrs
            for a in ("baseline", "alpha") for k in seeds]
    cka = {(s.cka_model, s.cka_width, s.cka_lr, a) for a in ("baseline", "alpha")}
    grid_cb = [{"weights": {}} if (c.model, c.width, c.lr, allocation_of(c)) in cka
               else {} for c in grid]        # fig 2.2 reads every seed's weights
    maps = [run(s, s.map_model, s.map_width, s.map_lr, a, k)
            for a in ("baseline", *FIG23_MAPS) for k in seeds]
    negpow = [run(s, s.map_model, s.map_width, s.negpow_lr, a, k)
              for a in ("baseline", "softmax", "neg_pow2") for k in seeds]
    dist = [run(s, m, s.dist_width, s.dist_lr, "alpha", k, epochs=s.dist_epochs)
            for m in s.models for k in range(s.dist_seeds)]
    powers = [run(s, s.map_model, s.powers_width, lr, a, k) for lr in s.powers_lrs
              for a in ("baseline", *POWERS) for k in seeds]
    sampling = [run(s, m, s.sampling_width, s.sampling_lr, a, k)
                for m in s.sampling_models for a in ("baseline", *SAMPLING) for k in seeds]
    esd = [RunConfig(dataset=s.dataset, n_train=s.n_train, model=s.esd_model,
                     width=s.esd_width, optimizer="sgdm", lr=s.esd_lr, momentum=s.esd_momentum,
                     wd=s.esd_wd, batch_size=s.esd_batch, epochs=s.esd_epochs, seed=k)
           for k in range(s.esd_seeds)]
    out = {"fig2.1": (grid, grid_cb), "fig2.3": (maps, None), "fig2.5": (negpow, None),
           "fig2.6": (dist, [{"spectral": {"xmin": "ks", "conv": "slices"}}] * len(dist)),
           "T-001-a": (powers, None), "T-001-d": (sampling, None),
           "fig1.3": (esd, [{"weights": {}}] * len(esd))}
    lookup = {c: cb for c, cb in zip(grid, grid_cb)}   # reuse fig 2.1's spec for shared runs
    return {k: (cfgs, cbs or [lookup.get(c, {}) for c in cfgs]) for k, (cfgs, cbs) in out.items()}


def run_cost(cfg: RunConfig) -> float:
    """Rough relative cost, to start the longest runs first."""
    return cfg.epochs * cfg.width * (2.0 if "34" in cfg.model else 1.0) * \
        (cfg.n_train or 1347) / cfg.batch_size


def all_runs(s: Settings) -> tuple[list[RunConfig], list[dict]]:
    """The union of `section_runs`, duplicates removed (the first spec of a config), longest
    first.

    Not `Chapter.all_runs`, which keeps a config once per callbacks spec: at ``paper`` the
    fig 2.6 runs are fig 2.1 configs with the spectral callback, which this sweep leaves to
    the fig 2.6 cell.
    """
    seen: dict[RunConfig, dict] = {}
    for cfgs, cbs in section_runs(s).values():
        for c, cb in zip(cfgs, cbs):
            seen.setdefault(c, cb)
    pairs = sorted(seen.items(), key=lambda p: -run_cost(p[0]))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def train_examples(s: Settings) -> int:
    """Training examples behind a run's train accuracy (the one-seed interval's ``n``)."""
    return s.n_train or DATASETS[s.dataset].train_size
