"""Chapter 05's settings: the arms' names, the typed `Settings` and ``PROFILES`` (smoke, quick,
paper), with the reasons for every reduction next to its value."""

from __future__ import annotations

from dataclasses import dataclass

from lalr_core.core.data import check_dataset_name
from lalr_core.core.data.specs import DATASETS
from lalr_core.core.models.networks import check_model_name
from lalr_core.core.results.provenance import repo_root
from lalr_core.core.runs.chapter import ChapterSettings, check_names, positive
from lalr_core.methods.curvature import gradient_probes as gp  # registers the probes' callbacks

QN = "qn_class_subspace"
REFERENCE_TABLE = repo_root() / "data" / "reference" / "ch05_tableE.csv"  # tables E.1 / E.2
ARMS = ("sgd", QN)                 # fig 4.6's two series, in this order
TABLE_ARMS = ("sgdm", QN)          # tables E.1 / E.2
ALG5 = "alg5_sgd"                  # fig 4.20: algorithm 5 (lalr_core.methods.curvature.eigen_step)
LABELS = {"sgd": "SGD", "sgdm": "SGDM", QN: "quasi-Newton"}   # the optimisers' names in plots


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 05 at one profile (see ``PROFILES``)."""

    # Known-matrix experiments (listing F.1; figs 4.12, 4.13, 4.17, 4.18) and appendix H.
    known_size: int                  # H = X^T X, X ~ N(0, 1) of known_size x known_size (100)
    known_seeds: int                 # fig 4.12's stop rule is also run on this many matrices
    rolling_steps: int               # listing F.1 block D (10 000)
    rolling_samples: tuple[int, ...]  # fig 4.18's window lengths (100, 1000, 10 000)
    cumulant_samples: int            # appendix H's draws of ||H eps||^2 (unstated; 100 000)
    # The training runs (figs 4.6, 4.11; tables E.1, E.2).
    dataset: str
    synthetic: bool
    n_train: int | None              # None: the whole train split
    n_test: int | None               # held-out examples (the test split; None: all of it)
    model: str                       # fig 4.6 / tables: BasicCNN with batch norm (TinyCNN-BN)
    width: float
    batch_size: int
    seeds: int
    fig46_lr: float                  # fig 4.6's caption: lr 0.01, momentum 0, wd 5e-4
    fig46_wd: float
    fig46_epochs: int
    diverge_lr: float                # thesis: both diverge for eta > 0.1; we test at 0.5
    table_lrs: tuple[float, ...]     # tables E.1 / E.2: 0.1, 0.05, 0.01 (app. E.4 settings)
    table_momentum: float            # SGDM's momentum (E.4: 0.9); the QN step has none
    table_epochs: int
    gamma: float                     # the QN smoothing rate (E.4: 0.9)
    hessian_model: str               # fig 4.11: a small CNN whose exact Hessian fits
    hessian_width: float
    hessian_epochs: int
    hessian_examples: int | None     # training examples in the Hessian's loss (None: all)
    lanczos_tol: float               # ARPACK's relative accuracy, figs 4.11 / E.1 (0: machine's)
    # Figs 4.7-4.9 (q^LC, q^SL, q^GC along a run) and E.1 (class gradients vs the top-C Hessian
    # eigenvectors); `lalr_core.methods.class_subspace.probe`. At smoke / quick one run serves all four:
    # fig 4.11's network and training (`hessian_run`); at paper figs 4.7-4.9 ride on fig 4.6's SGD
    # run of seed 0 (ResNet-9, the chapter's baseline run: the thesis does not name the run)
    # and E.1 on fig 4.11's ~60k CNN (E.3).
    probe_on_fig46: bool             # figs 4.7-4.9 on fig 4.6's SGD run (paper) or fig 4.11's
    probe_lc_points: int             # q^LC records, the start and the end included (ours: 6)
    probe_lc_per_class: int          # q^LC probe examples per class (ours: 2)
    probe_lc_columns: int | None     # None: exact logit Hessians; m: m sampled columns (item 8)
    probe_sl_per_class: int          # q^SL probe examples per class (ours: 20)
    probe_sl_every: int              # steps between q^SL records (ours: 10)
    e1_store_every: int              # steps between stored class-gradient directions (1: all)
    e1_store_first: int              # ... and every step of the first this many (0: none)
    e1_rtol: float                   # E.1a's relative rank tolerance (unstated; ours: 0.1)
    # Fig 4.10: SGD vs QN over batch sizes (the thesis's MNIST sweep; QN gamma as app. E.4).
    bs_dataset: str
    bs_n_train: int | None           # training examples (None: the whole split); 1st batch = all
    bs_model: str
    bs_width: float
    bs_batch_sizes: tuple[int, ...]  # largest first; the first is the full batch
    bs_steps: int                    # optimiser steps per run (epochs scaled to match them)
    bs_lr: float                     # caption: 0.01 (paper); 0.1 where 0.01 cannot cross over
    bs_source_lr: float              # the caption's 0.01: the check at the source's setting
    bs_seeds: int
    # Fig 4.20: algorithm 5 on the chapter's dataset (SGD at eta' and at alg5_sgd_lr; the
    # eigenvalue- and projection-based step sizes bounded by eta').
    alg5_n_train: int | None         # None: the chapter's n_train
    alg5_model: str
    alg5_width: float
    alg5_batch_size: int
    alg5_epochs: int
    alg5_sample: int                 # s, the window (sec. 4.4.4: 250; on the digits: 50)
    alg5_eta_max: float              # eta', the bound (and SGD's high lr): 1
    alg5_sgd_lr: float               # "a better learning rate for SGD, 0.1"
    alg5_seeds: int                  # the thesis shows one run; the checks pair seeds
    # Figs 4.15 (phi_t per filter) and 4.16 (gradient cohesion): SGDM runs with gradient probes
    # (`lalr_core.methods.curvature.gradient_probes`), on the chapter's dataset / split.
    probe_lr: float                  # SGDM of both (quick: 0.05 / 0.9; paper: E.4's 0.1)
    probe_momentum: float
    phi_model: str                   # fig 4.15: TinyCNN-32 (BasicCNN, 32 filters x 288 at quick)
    phi_width: float
    phi_layer: str                   # "the second convolutional layer" (paper: layer1.0.conv1)
    phi_batch_size: int
    phi_epochs: int
    phi_every: int                   # record every k-th step (1 = all; memory bound at paper)
    phi_seeds: int                   # the thesis shows one run; >= 2 for an interval
    cohesion_model: str              # fig 4.16: TinyCNN-BN (BasicCNN with batch norm)
    cohesion_width: float
    cohesion_batch_size: int         # the training batch
    cohesion_epochs: int
    cohesion_batches: tuple[int, ...]  # probe mini-batch sizes, smallest first (not stated)
    cohesion_d: int                  # gradients per probe (fig 4.16: d = 10, "n = 10")
    cohesion_per_epoch: int          # probes per epoch (fig 4.16: 25)
    cohesion_mode: str               # "train": batch statistics (restored after); or "eval"
    cohesion_seeds: int
    workers: int

    @property
    def datasets(self) -> tuple[str, ...]:
        """The real datasets the driver prepares: the chapter's and the batch-size sweep's
        (MNIST at ``paper``, the digits below it)."""
        return () if self.synthetic else tuple(sorted({self.dataset, self.bs_dataset}))

    def check(self) -> None:
        """Reject values the runs or the cells cannot use (``ValueError``)."""
        check_names(self, "dataset", check_dataset_name)
        check_names(self, "model", check_model_name)
        check_names(self, "hessian_model", check_model_name)
        positive(self, "known_size", "known_seeds", "rolling_steps", "rolling_samples",
                 "cumulant_samples", "width", "batch_size", "seeds", "fig46_lr",
                 "fig46_epochs", "diverge_lr", "table_lrs", "table_epochs", "hessian_width",
                 "hessian_epochs", "workers")
        positive(self, "n_train", "n_test", "hessian_examples", allow_none=True)
        if not self.lanczos_tol >= 0:
            raise ValueError(f"setting 'lanczos_tol' must be >= 0, got {self.lanczos_tol!r}")
        if self.known_size < 3:
            raise ValueError(f"setting 'known_size' must be >= 3, got {self.known_size!r}")
        if self.cumulant_samples < 100:
            raise ValueError(f"setting 'cumulant_samples' must be >= 100 (k-statistics of "
                             f"order 3), got {self.cumulant_samples!r}")
        if len(self.table_lrs) < 2 or sorted(self.table_lrs, reverse=True) != list(self.table_lrs):
            raise ValueError(f"setting 'table_lrs' must list >= 2 learning rates, largest first "
                             f"(the tables' order), got {self.table_lrs!r}")
        if len(self.rolling_samples) < 2:
            raise ValueError(f"setting 'rolling_samples' must list >= 2 window lengths, got "
                             f"{self.rolling_samples!r}")
        for name in ("fig46_wd",):
            if getattr(self, name) < 0:
                raise ValueError(f"setting {name!r} must be >= 0, got {getattr(self, name)!r}")
        if not 0 <= self.table_momentum < 1 or not 0 < self.gamma < 1:
            raise ValueError(f"settings 'table_momentum' must lie in [0, 1) and 'gamma' in "
                             f"(0, 1), got {self.table_momentum!r}, {self.gamma!r}")
        if self.seeds < 2:
            raise ValueError(f"setting 'seeds' must be >= 2 (a paired interval), got "
                             f"{self.seeds!r}")
        positive(self, "probe_lc_points", "probe_lc_per_class", "probe_sl_per_class",
                 "probe_sl_every", "e1_store_every")
        positive(self, "probe_lc_columns", allow_none=True)
        if self.probe_lc_points < 2 or self.probe_sl_per_class < 2:
            raise ValueError(f"settings 'probe_lc_points' (the start and the end) and "
                             f"'probe_sl_per_class' (pairs) must be >= 2, got "
                             f"{self.probe_lc_points!r}, {self.probe_sl_per_class!r}")
        if self.e1_store_first < 0 or not 0 < self.e1_rtol < 1:
            raise ValueError(f"setting 'e1_store_first' must be >= 0 and 'e1_rtol' in (0, 1), "
                             f"got {self.e1_store_first!r}, {self.e1_rtol!r}")
        check_names(self, "bs_dataset", check_dataset_name)
        check_names(self, "bs_model", check_model_name)
        check_names(self, "alg5_model", check_model_name)
        positive(self, "bs_width", "bs_batch_sizes", "bs_steps", "bs_lr", "bs_source_lr", "bs_seeds",
                 "alg5_width", "alg5_batch_size", "alg5_epochs", "alg5_sample", "alg5_eta_max",
                 "alg5_sgd_lr", "alg5_seeds")
        positive(self, "bs_n_train", "alg5_n_train", allow_none=True)
        sizes = self.bs_batch_sizes
        if len(sizes) < 2 or list(sizes) != sorted(set(sizes), reverse=True):
            raise ValueError(f"setting 'bs_batch_sizes' must list >= 2 batch sizes, strictly "
                             f"decreasing (the full batch first), got {sizes!r}")
        n = DATASETS[self.bs_dataset].train_size if self.bs_n_train is None else self.bs_n_train
        if sizes[0] < n:
            raise ValueError(f"setting 'bs_batch_sizes' must start with the full batch "
                             f"(>= {n} training examples), got {sizes!r}")
        if not self.alg5_sgd_lr < self.alg5_eta_max:
            raise ValueError(f"setting 'alg5_sgd_lr' must be below 'alg5_eta_max' (fig 4.20: "
                             f"0.1 vs 1), got {self.alg5_sgd_lr!r}, {self.alg5_eta_max!r}")
        if min(self.bs_seeds, self.alg5_seeds) < 2:
            raise ValueError(f"settings 'bs_seeds' and 'alg5_seeds' must be >= 2 (a paired "
                             f"interval), got {self.bs_seeds!r}, {self.alg5_seeds!r}")
        check_names(self, "phi_model", check_model_name)
        check_names(self, "cohesion_model", check_model_name)
        positive(self, "probe_lr", "phi_width", "phi_batch_size", "phi_epochs", "phi_every",
                 "phi_seeds", "cohesion_width", "cohesion_batch_size", "cohesion_epochs",
                 "cohesion_batches", "cohesion_d", "cohesion_per_epoch", "cohesion_seeds")
        if not 0 <= self.probe_momentum < 1:
            raise ValueError(f"setting 'probe_momentum' must lie in [0, 1), got "
                             f"{self.probe_momentum!r}")
        if self.phi_seeds < 2:
            raise ValueError(f"setting 'phi_seeds' must be >= 2 (fig 4.15's interval over "
                             f"seeds), got {self.phi_seeds!r}")
        if len(self.cohesion_batches) < 2 or list(self.cohesion_batches) != sorted(
                set(self.cohesion_batches)):
            raise ValueError(f"setting 'cohesion_batches' must list >= 2 distinct probe batch "
                             f"sizes, smallest first, got {self.cohesion_batches!r}")
        if self.cohesion_d < 2:
            raise ValueError(f"setting 'cohesion_d' must be >= 2 (a mean gradient of several), "
                             f"got {self.cohesion_d!r}")
        if self.cohesion_mode not in gp.MODES:
            raise ValueError(f"setting 'cohesion_mode' must be one of {gp.MODES}, got "
                             f"{self.cohesion_mode!r}")


_KNOWN = dict(known_size=100, known_seeds=20, rolling_steps=10_000,
              rolling_samples=(100, 1000, 10_000), cumulant_samples=100_000)
_E4 = dict(table_lrs=(0.1, 0.05, 0.01), table_momentum=0.9, gamma=0.9)
_LANCZOS = dict(lanczos_tol=0.0)  # the top Hessian eigenpairs to machine precision
_FIG410_FIG420 = {
    "smoke": {
        "bs_dataset": "digits", "bs_n_train": 256, "bs_model": "basic_cnn", "bs_width": 0.5,
        "bs_batch_sizes": (256, 64), "bs_steps": 8, "bs_lr": 0.1, "bs_source_lr": 0.01,
        "bs_seeds": 2,
        "alg5_n_train": None, "alg5_model": "basic_cnn", "alg5_width": 0.5,
        "alg5_batch_size": 32, "alg5_epochs": 2, "alg5_sample": 10, "alg5_eta_max": 1.0,
        "alg5_sgd_lr": 0.1, "alg5_seeds": 2},
    # our reduction of figs 4.10 and 4.20 to the collection's 1347 digits. Fig 4.10: batch
    # sizes full / 4 / 15 batches per epoch (90, not 84 = 1347 / 16, which leaves a last batch
    # of 3, whose step and batch-norm statistics spike the held-out loss right before each
    # evaluation); lr 0.1 (at 0.01 QN leads throughout 300 steps: no crossover to test); 100
    # steps per run (300-480 would be closer to the thesis's epochs but beyond the chapter's
    # time budget: the QN step at full batch costs ~0.1 s on one core); 3 seeds. Fig 4.20:
    # batch 32, 10 epochs, s = 50 (the window must fill well before the 420-step run ends; 250
    # would take 60 % of it), on 1344 = 42 x 32 of the 1347 images (1347 leaves a last batch of 3: at lr 1 its
    # step, right before each evaluation, sent the held-out loss to 10-60).
    "quick": {
        "bs_dataset": "digits", "bs_n_train": None, "bs_model": "basic_cnn", "bs_width": 0.5,
        "bs_batch_sizes": (1347, 337, 90), "bs_steps": 100, "bs_lr": 0.1, "bs_source_lr": 0.01,
        "bs_seeds": 3,
        "alg5_n_train": 1344, "alg5_model": "basic_cnn", "alg5_width": 0.5,
        "alg5_batch_size": 32, "alg5_epochs": 10, "alg5_sample": 50, "alg5_eta_max": 1.0,
        "alg5_sgd_lr": 0.1, "alg5_seeds": 3},
    # fig 4.10: MNIST with 50 000 training images (the footnote: "MNIST only has 50,000
    # training samples"), the caption's lr 0.01, QN gamma 0.9 (app. E.4), plain SGD (the
    # caption's "standard SGD"), batch sizes halving from 32 768 below the full batch (the
    # thesis names only ">= 32768" and the full batch), ~500 steps (>= 100 epochs at full
    # batch, so that the full batch gets as many epochs as the thesis's curves show), BasicCNN
    # (app. D) as the unstated small CNN. Fig 4.20: ResNet-20 / CIFAR-10 (the chapter's
    # 45 000 / 10 000), s = 250, eta' = 1, SGD at 1 and 0.1; batch 128 and 30 epochs (ours:
    # unstated in the thesis); 3 seeds (the thesis: one run).
    "paper": {
        "bs_dataset": "mnist", "bs_n_train": 50_000, "bs_model": "basic_cnn", "bs_width": 1.0,
        "bs_batch_sizes": (50_000, 32_768, 16_384, 8_192, 4_096), "bs_steps": 500,
        "bs_lr": 0.01, "bs_source_lr": 0.01, "bs_seeds": 3,
        "alg5_n_train": None, "alg5_model": "resnet20", "alg5_width": 1.0,
        "alg5_batch_size": 128, "alg5_epochs": 30, "alg5_sample": 250, "alg5_eta_max": 1.0,
        "alg5_sgd_lr": 0.1, "alg5_seeds": 3},
}


# Figs 4.15 / 4.16. quick, our reduction (SGDM 0.05 / 0.9; fig 4.15: batch 32, 15 epochs,
# every step, conv2 of BasicCNN at width 1 = 32 filters of 32 x 3 x 3 = 288; fig 4.16:
# BasicCNN-BN at width 0.5, batch 32, 5 epochs, 25 probes per epoch of d = 10 gradients at
# batch sizes 4, 32, 256: from an eighth of the training batch to 8 times it). paper: the thesis's ResNet-18 / CIFAR-10 (kuangliu's
# CIFAR layout, 11.2M parameters), its "second convolutional layer" layer1.0.conv1 (64 filters x
# 576), 200 epochs (the shorter of its 200 / 1000), app. E.4's lr 0.1 / momentum 0.9, batch 128
# (not stated), every 25th step (2,816 records, ~0.8 GB); fig 4.16's model and batch sizes are
# not stated: ResNet-20 / CIFAR-10 (fig 4.20's) with 32, 128, 512, 2048 (ours).
_PROBES_QUICK = {
    "probe_lr": 0.05, "probe_momentum": 0.9,
    "phi_model": "basic_cnn", "phi_width": 1.0, "phi_layer": "conv2",
    "phi_batch_size": 32, "phi_epochs": 15, "phi_every": 1, "phi_seeds": 5,
    "cohesion_model": "basic_cnn", "cohesion_width": 0.5, "cohesion_batch_size": 32,
    "cohesion_epochs": 5, "cohesion_batches": (4, 32, 256), "cohesion_d": 10,
    "cohesion_per_epoch": 25, "cohesion_mode": "train", "cohesion_seeds": 3,
}
_PROBES = {
    # smoke: quick's settings with fewer epochs, seeds and probes, and a smaller largest probe
    "smoke": {**_PROBES_QUICK, "phi_epochs": 2, "phi_seeds": 2, "cohesion_epochs": 2,
              "cohesion_batches": (4, 32, 128), "cohesion_per_epoch": 4, "cohesion_seeds": 2},
    "quick": _PROBES_QUICK,
    "paper": {"probe_lr": 0.1, "probe_momentum": 0.9,
              "phi_model": "resnet18_cifar", "phi_width": 1.0, "phi_layer": "layer1.0.conv1",
              "phi_batch_size": 128, "phi_epochs": 200, "phi_every": 25, "phi_seeds": 3,
              "cohesion_model": "resnet20", "cohesion_width": 1.0, "cohesion_batch_size": 128,
              "cohesion_epochs": 20, "cohesion_batches": (32, 128, 512, 2048), "cohesion_d": 10,
              "cohesion_per_epoch": 25, "cohesion_mode": "train", "cohesion_seeds": 3},
}
_PROBE_DEFAULTS = dict(probe_lc_points=6, probe_lc_per_class=2, probe_lc_columns=None,
                     probe_sl_per_class=20, probe_sl_every=10, e1_store_every=1, e1_store_first=0,
                     e1_rtol=0.1)
_SUBSPACE = {  # figs 4.7-4.9, E.1 (paper: ResNet-9 samples 32 Hessian columns per example, as
    # exact logit Hessians of 6.5M parameters do not fit in memory; q^SL twice an epoch; E.1
    # stores every step of the first 50, then every 50th, to bound memory)
    "smoke": dict(probe_on_fig46=False, **{**_PROBE_DEFAULTS, "probe_lc_points": 3,
                                          "probe_sl_per_class": 5, "probe_sl_every": 4}),
    "quick": dict(probe_on_fig46=False, **_PROBE_DEFAULTS),
    "paper": dict(probe_on_fig46=True, **{**_PROBE_DEFAULTS, "probe_lc_columns": 32,
                                         "probe_sl_every": 22, "e1_store_every": 50,
                                         "e1_store_first": 50}),
}


PROFILES = {
    "smoke": Settings(
        known_size=30, known_seeds=3, rolling_steps=300, rolling_samples=(10, 40),
        cumulant_samples=2000, dataset="digits", synthetic=False, n_train=256, n_test=128,
        model="basic_cnn", width=0.5, batch_size=64, seeds=2, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=3, diverge_lr=0.5, table_epochs=2, hessian_model="basic_cnn_nobn",
        hessian_width=0.25, hessian_epochs=2, hessian_examples=64, workers=2, **_E4, **_LANCZOS,
        **_FIG410_FIG420["smoke"], **_PROBES["smoke"],
        **_SUBSPACE["smoke"]),
    # our reduction to a 2-core CPU; 5 seeds for the comparisons
    "quick": Settings(
        **_KNOWN, dataset="digits", synthetic=False, n_train=None, n_test=None,
        model="basic_cnn", width=0.5, batch_size=128, seeds=5, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=30, diverge_lr=0.5, table_epochs=20, hessian_model="basic_cnn_nobn",
        hessian_width=0.25, hessian_epochs=20, hessian_examples=256, workers=2, **_E4, **_LANCZOS,
        **_FIG410_FIG420["quick"], **_PROBES["quick"],
        **_SUBSPACE["quick"]),
    # the thesis's setting where it states one: ResNet-9 / CIFAR-10, batch 1024, 50 epochs
    # (fig 4.6; app. E.4), 3 seeds; fig 4.11's ~60k CNN is not given: BasicCNN at width 2
    # (~60k parameters, CIFAR-10), its Hessian on 10 000 examples (ours: the thesis does not
    # say which examples)
    "paper": Settings(
        **_KNOWN, dataset="cifar10", synthetic=False, n_train=45_000, n_test=None,
        model="resnet9", width=1.0, batch_size=1024, seeds=3, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=50, diverge_lr=0.5, table_epochs=50, hessian_model="basic_cnn_nobn",
        hessian_width=2.0, hessian_epochs=50, hessian_examples=10_000, workers=1, **_E4, **_LANCZOS,
        **_FIG410_FIG420["paper"], **_PROBES["paper"],
        **_SUBSPACE["paper"]),
}
