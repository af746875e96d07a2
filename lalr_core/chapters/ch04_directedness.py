"""Chapter 04 (directedness of optimisation trajectories, seed 004 sec. 3.2): settings and runs.

Source: seed 004 sec. 3.2 ("Ch3-SGDM"/"Ch3-Adam" of the digest); quick = the digest's section 6
reduction on Fashion-MNIST, smoke = the same code on synthetic data in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lalr_core.core.chapter import Chapter, ChapterSettings, Sections, check_names, positive
from lalr_core.core.config import RunConfig
from lalr_core.core.data import DATASETS, SYNTHETIC_SIZES, check_dataset_name
from lalr_core.core.models import check_model_name

RUNS = ("sgdm", "adam")  # the training runs of section "fig3.7", in this order


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 04 at one profile (see ``PROFILES``)."""

    # The two training runs (figs 3.7, 3.12, 3.17-3.19): data, model and schedule.
    dataset: str            # a `lalr_core.core.data.DATASETS` name
    synthetic: bool         # in-memory data in the dataset's shapes (smoke)
    n_train: int | None     # training examples; None = the whole train split minus n_val
    n_val: int              # held out from the train split
    n_test: int | None      # test examples; None = the whole test split
    augment: bool           # random crop + horizontal flip
    model: str              # a `lalr_core.core.models` name
    width: float            # multiplier of every hidden width
    batch_size: int         # examples per step (one step = one point of the trajectory)
    epochs: int             # passes over the training set
    milestones: tuple[int, ...]  # epochs at which the lr is multiplied by lr_decay (>= 1 drop)
    lr_decay: float         # multistep lr factor at each milestone (thesis: 0.1)
    window: int             # N of psi_N (eqs. 3.3-3.5) in steps, the trajectory callback's window
    # SGDM run (lr per step, L2 weight decay added to the gradient)
    sgdm_lr: float
    sgdm_momentum: float
    sgdm_wd: float
    # Adam run
    adam_lr: float
    adam_betas: tuple[float, float]
    adam_wd: float
    # Simulations (figs 3.8-3.11, 3.13-3.16): steps of every simulated path (>= 200: fig 3.15
    # checks saturation at step 200), walks averaged in fig 3.11.
    sim_steps: int
    sim_seeds: int
    # Monte-Carlo checks of listings C.2-C.4: draws for C.3, and at most this many for C.4;
    # draws of the decayed sum for C.2.
    mc_count: int
    mc_norm_draws: int
    mc_sum_draws: int
    # Parallel training processes.
    workers: int

    def check(self) -> None:
        """Reject values the runs or the notebook's cells cannot use (``ValueError``)."""
        check_names(self, "dataset", check_dataset_name)
        check_names(self, "model", check_model_name)
        positive(self, "n_train", "n_test", allow_none=True)
        positive(self, "width", "batch_size", "epochs", "milestones", "lr_decay", "window",
                 "sgdm_lr", "adam_lr", "sim_steps", "sim_seeds", "mc_count", "mc_norm_draws",
                 "mc_sum_draws", "workers")
        for name in ("n_val", "sgdm_wd", "adam_wd"):
            if getattr(self, name) < 0:
                raise ValueError(f"setting {name!r} must be >= 0, got {getattr(self, name)!r}")
        if not self.milestones or list(self.milestones) != sorted(self.milestones) \
                or self.milestones[-1] >= self.epochs:
            raise ValueError(f"setting 'milestones' must be one or more increasing epochs in "
                             f"(0, epochs = {self.epochs}), got {self.milestones!r}")
        if self.lr_decay > 1:
            raise ValueError(f"setting 'lr_decay' must lie in (0, 1], got {self.lr_decay!r}")
        for name in ("sgdm_momentum", "adam_betas"):
            value = getattr(self, name)
            if not all(0 <= v < 1 for v in (value if isinstance(value, tuple) else (value,))):
                raise ValueError(f"setting {name!r} must lie in [0, 1), got {value!r}")
        before_drop = self.milestones[0] * math.ceil(self.train_size / self.batch_size)
        if self.window >= before_drop:
            raise ValueError(f"setting 'window' must be < the {before_drop} steps before the "
                             f"first lr drop (figs 3.7 and 3.19 compare psi_N there), "
                             f"got {self.window!r}")
        if self.sim_steps < 200:
            raise ValueError(f"setting 'sim_steps' must be >= 200 (fig 3.15 reads step 200), "
                             f"got {self.sim_steps!r}")
        for name in ("mc_count", "mc_norm_draws", "mc_sum_draws"):
            if getattr(self, name) < 2:
                raise ValueError(f"setting {name!r} must be >= 2 (a standard error needs two "
                                 f"draws), got {getattr(self, name)!r}")

    @property
    def train_size(self) -> int:
        """Training examples of each run (``n_train``, else what the split leaves)."""
        if self.n_train is not None:
            return self.n_train
        return SYNTHETIC_SIZES[0] if self.synthetic else \
            DATASETS[self.dataset].train_size - self.n_val


_MC = dict(mc_norm_draws=5000, mc_sum_draws=200)  # listing C.4's cap and C.2's draws

PROFILES = {
    "smoke": Settings(
        dataset="fashion_mnist", synthetic=True, n_train=512, n_val=128, n_test=128,
        augment=False, model="basic_cnn", width=0.5, batch_size=64, epochs=6,
        milestones=(3, 5), lr_decay=0.1, window=10,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-3,
        adam_lr=1e-3, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=300, sim_seeds=3, mc_count=2000, **_MC, workers=1,
    ),
    "quick": Settings(
        dataset="fashion_mnist", synthetic=False, n_train=10_000, n_val=2_000, n_test=2_000,
        augment=False, model="resnet20", width=0.5, batch_size=256, epochs=15,
        milestones=(8, 12), lr_decay=0.1, window=50,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-3,
        adam_lr=1e-3, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=1000, sim_seeds=20, mc_count=20_000, **_MC, workers=2,
    ),
    "paper": Settings(
        dataset="cifar10", synthetic=False, n_train=40_000, n_val=10_000, n_test=None,
        augment=True, model="resnet20", width=1.0, batch_size=1024, epochs=200,
        milestones=(100, 150), lr_decay=0.1, window=250,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-2,
        adam_lr=0.01, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=1000, sim_seeds=20, mc_count=100_000, **_MC, workers=1,
    ),
}


def directedness_configs(s: Settings) -> dict[str, RunConfig]:
    """The SGDM and Adam runs of chapter 04 (name -> config, in the order of ``RUNS``)."""
    common = dict(dataset=s.dataset, synthetic=s.synthetic, n_train=s.n_train, n_val=s.n_val,
                  n_test=s.n_test, augment=s.augment, model=s.model, width=s.width,
                  batch_size=s.batch_size, epochs=s.epochs, schedule="multistep",
                  milestones=s.milestones, lr_decay=s.lr_decay)
    return {
        "sgdm": RunConfig(**common, optimizer="sgdm", lr=s.sgdm_lr, momentum=s.sgdm_momentum,
                          wd=s.sgdm_wd),
        "adam": RunConfig(**common, optimizer="adam", lr=s.adam_lr, betas=s.adam_betas,
                          wd=s.adam_wd),
    }


def section_runs(s: Settings) -> Sections:
    """Section ``"fig3.7"``: the runs of ``RUNS`` with the trajectory callback (psi_N over
    ``window`` steps, per layer too); their results also feed figs 3.12 and 3.17-3.19."""
    configs = directedness_configs(s)
    return {"fig3.7": ([configs[name] for name in RUNS],
                       [{"trajectory": {"window": s.window, "per_layer": True}} for _ in RUNS])}


CHAPTER = Chapter(id="04", title="Directedness of optimisation trajectories (SGDM vs Adam)",
                  profiles=PROFILES, sections=section_runs)
