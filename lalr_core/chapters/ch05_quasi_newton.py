"""Chapter 05 (second-order methods, seed 004 ch. 4 and appendices E, F, H): settings, runs and
the per-seed quantities its checks judge.

Source: `../shared/seeds/004_1023ee9970b6fc33.txt` ch. 4; digest
`../shared/spec/seed004_ch4_quasi_newton.md`. The quick profile is the digest's reduction (its
sec. 6) on the sklearn digits (8x8, the collection's fixed 1347 / 450 split; the digest suggests
a stratified 1437 / 360 one), with BasicCNN at a quarter or half width standing in for its
TinyCNN so that no new model is needed: ``basic_cnn`` at width 0.5 (16 channels, batch norm)
for the training comparisons, ``basic_cnn_nobn`` at width 0.25 (1,338 parameters) where the
exact Hessian is needed. The known-matrix experiments (listing F.1, appendix H) and the test
functions are at the source's own scale at every profile but smoke.

Training runs (cached units of the one loop): SGD(M) against the quasi-Newton step in the
class-gradient subspace (`lalr_core.methods.quasi_newton`, optimiser ``"qn_class_subspace"``),
paired by seed (same initialisation and batch order). The thesis shows one run per setting;
its comparisons are judged over ``seeds`` seeds (`lalr_core.core.evidence`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lalr_core.core.chapter import Chapter, ChapterSettings, Sections, check_names, positive
from lalr_core.core.config import RunConfig
from lalr_core.core.data import check_dataset_name
from lalr_core.core.models import check_model_name
from lalr_core.core.provenance import repo_root
from lalr_core.methods import quasi_newton  # noqa: F401  (registers "qn_class_subspace")

QN = "qn_class_subspace"
REFERENCE_TABLE = repo_root() / "data" / "reference" / "ch05_tableE.csv"  # tables E.1 / E.2
ARMS = ("sgd", QN)                 # fig 4.6's two series, in this order
TABLE_ARMS = ("sgdm", QN)          # tables E.1 / E.2


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 05 at one profile (see ``PROFILES``)."""

    # Known-matrix experiments (listing F.1; figs 4.12, 4.13, 4.17, 4.18) and appendix H.
    known_size: int                  # H = X^T X, X ~ N(0, 1) of known_size x known_size (100)
    known_seeds: int                 # fig 4.12's stop rule is also run on this many matrices
    rolling_steps: int               # listing F.1 block D (10 000)
    rolling_samples: tuple[int, ...]  # fig 4.18's window lengths (100, 1000, 10 000)
    cumulant_samples: int            # appendix H's draws of ||H eps||^2 (digest: 100 000)
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
    diverge_lr: float                # digest: "both diverge at lr = 0.5" (thesis: eta > 0.1)
    table_lrs: tuple[float, ...]     # tables E.1 / E.2: 0.1, 0.05, 0.01 (app. E.4 settings)
    table_momentum: float            # SGDM's momentum (E.4: 0.9); the QN step has none
    table_epochs: int
    gamma: float                     # the QN smoothing rate (E.4: 0.9)
    hessian_model: str               # fig 4.11: a small CNN whose exact Hessian fits
    hessian_width: float
    hessian_epochs: int
    hessian_examples: int | None     # training examples in the Hessian's loss (None: all)
    workers: int

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


_KNOWN = dict(known_size=100, known_seeds=20, rolling_steps=10_000,
              rolling_samples=(100, 1000, 10_000), cumulant_samples=100_000)
_E4 = dict(table_lrs=(0.1, 0.05, 0.01), table_momentum=0.9, gamma=0.9)
PROFILES = {
    "smoke": Settings(
        known_size=30, known_seeds=3, rolling_steps=300, rolling_samples=(10, 40),
        cumulant_samples=2000, dataset="digits", synthetic=False, n_train=256, n_test=128,
        model="basic_cnn", width=0.5, batch_size=64, seeds=2, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=3, diverge_lr=0.5, table_epochs=2, hessian_model="basic_cnn_nobn",
        hessian_width=0.25, hessian_epochs=2, hessian_examples=64, workers=2, **_E4),
    # the digest's sec. 6 reduction; 5 seeds for the comparisons (digest: 3)
    "quick": Settings(
        **_KNOWN, dataset="digits", synthetic=False, n_train=None, n_test=None,
        model="basic_cnn", width=0.5, batch_size=128, seeds=5, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=30, diverge_lr=0.5, table_epochs=20, hessian_model="basic_cnn_nobn",
        hessian_width=0.25, hessian_epochs=20, hessian_examples=256, workers=2, **_E4),
    # the thesis's setting where it states one: ResNet-9 / CIFAR-10, batch 1024, 50 epochs
    # (fig 4.6; app. E.4), 3 seeds; fig 4.11's ~60k CNN is not given: BasicCNN at width 2
    # (~60k parameters, CIFAR-10), its Hessian on 10 000 examples (digest sec. 5 item 11)
    "paper": Settings(
        **_KNOWN, dataset="cifar10", synthetic=False, n_train=45_000, n_test=None,
        model="resnet9", width=1.0, batch_size=1024, seeds=3, fig46_lr=0.01, fig46_wd=5e-4,
        fig46_epochs=50, diverge_lr=0.5, table_epochs=50, hessian_model="basic_cnn_nobn",
        hessian_width=2.0, hessian_epochs=50, hessian_examples=10_000, workers=1, **_E4),
}


# ----------------------------------------------------------------------------- runs
def _run(s: Settings, *, optimizer: str, lr: float, epochs: int, seed: int, momentum: float = 0.0,
         wd: float = 0.0, model: str | None = None, width: float | None = None) -> RunConfig:
    return RunConfig(dataset=s.dataset, synthetic=s.synthetic, n_train=s.n_train, n_val=0,
                     n_test=s.n_test, model=model or s.model,
                     width=s.width if width is None else width, optimizer=optimizer, lr=lr,
                     momentum=momentum, wd=wd, batch_size=s.batch_size, epochs=epochs,
                     seed=seed, optimizer_params=(("gamma", s.gamma),) if optimizer == QN else ())


def fig46_runs(s: Settings, lr: float | None = None) -> dict[tuple[str, int], RunConfig]:
    """Fig 4.6: ``(arm, seed) -> config``, SGD (momentum 0, as the caption) and QN at ``lr``
    (default ``fig46_lr``; ``diverge_lr`` for the divergence check)."""
    lr = s.fig46_lr if lr is None else lr
    return {(arm, seed): _run(s, optimizer=arm, lr=lr, epochs=s.fig46_epochs, seed=seed,
                              wd=s.fig46_wd)
            for seed in range(s.seeds) for arm in ARMS}


def table_runs(s: Settings) -> dict[tuple[str, float, int], RunConfig]:
    """Tables E.1 / E.2: ``(arm, lr, seed) -> config`` with app. E.4's settings (SGDM momentum
    0.9, QN gamma 0.9, no weight decay)."""
    return {(arm, lr, seed): _run(s, optimizer=arm, lr=lr, epochs=s.table_epochs, seed=seed,
                                  momentum=s.table_momentum if arm == "sgdm" else 0.0)
            for lr in s.table_lrs for seed in range(s.seeds) for arm in TABLE_ARMS}


def hessian_run(s: Settings) -> RunConfig:
    """Fig 4.11's trained network: the small CNN, SGDM 0.05 / 0.9 (digest sec. 6)."""
    return _run(s, optimizer="sgdm", lr=0.05, momentum=0.9, epochs=s.hessian_epochs, seed=0,
                model=s.hessian_model, width=s.hessian_width)


def section_runs(s: Settings) -> Sections:
    fig46 = [*fig46_runs(s).values(), *fig46_runs(s, s.diverge_lr).values()]
    tables = list(table_runs(s).values())
    return {"fig4.6": (fig46, [{}] * len(fig46)), "tableE": (tables, [{}] * len(tables)),
            "fig4.11": ([hessian_run(s)], [{"weights": {}}])}


def run_cost(cfg: RunConfig) -> float:
    """A rough relative cost, longest first: the QN step costs ~1 + C backward passes."""
    return cfg.epochs * (11.0 if cfg.optimizer == QN else 1.0)


CHAPTER = Chapter(id="05", title="Second-order methods: quasi-Newton in the class-gradient "
                  "subspace, the top Hessian eigenvector", profiles=PROFILES,
                  sections=section_runs, run_cost=run_cost)


# ----------------------------------------------------------------------------- per-run numbers
def held_out_loss(res: dict) -> np.ndarray:
    """Held-out loss after every epoch (NaN once a run diverged)."""
    return res["history"]["test_loss"].to_numpy(dtype=float)


def final_loss(res: dict) -> float:
    return float("nan") if res["diverged"] else float(res["final"]["test_loss"])


def final_accuracy(res: dict) -> float:
    """Final held-out accuracy in points (a diverged run counts 10 %, chance on 10 classes)."""
    return 10.0 if res["diverged"] else 100.0 * float(res["final"]["test_acc"])


def volatility(res: dict) -> float:
    """Standard deviation of the epoch-to-epoch changes of the held-out loss (fig 4.6's "much
    more volatile")."""
    return float(np.std(np.diff(held_out_loss(res)), ddof=1))


def diverged(res: dict, initial_loss: float = float(np.log(10))) -> bool:
    """The digest's divergence: NaN / flagged, or a final loss above the initial ln(10)."""
    return bool(res["diverged"] or not final_loss(res) <= initial_loss)


def per_seed(results: Sequence[dict], fn) -> np.ndarray:
    return np.array([fn(r) for r in results], dtype=float)
