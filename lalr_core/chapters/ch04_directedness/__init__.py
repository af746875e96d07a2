"""Chapter 04 (directedness of optimisation trajectories, seed 004 sec. 3.2): settings, runs and
the per-seed quantities its checks judge. Its checks as data are in `claims` (``CLAIMS``), the
verdicts (per-seed numbers -> `Finding`) in `findings`.

Source: seed 004 (the thesis ``[Tuddenham2026]``, see REFERENCES.md) sec. 3.2, its SGDM and Adam
runs; quick = a reduction on
Fashion-MNIST with the thesis's optimiser hyper-parameters and several seeds per optimiser,
smoke = the same code on synthetic data in seconds.

The thesis shows one run per optimiser. Its comparisons (SGDM vs Adam, a run vs a random walk,
which we replace by noise through the same optimiser's filters, `noise_null`; one fit vs another) are judged here over seeds: each check reduces every seed's run to one
number (a function below) and passes the numbers to `lalr_core.core.results.evidence.mean_interval`
or `paired_difference` (SGDM and Adam paired by seed: same initialisation and batch order). A
diverged seed gives NaN and is left out of the interval (``seed_notes`` says which).

The ``e13_*`` settings serve the notebook's short section on the lecture notes ``[ATDL-notes]``
(our experiment E13: batch size vs learning rate, `lalr_core.methods.trajectory.batch_scaling`), with the
helper ``e13_fit_batches``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lalr_core.core.data import DATASETS, SYNTHETIC_SIZES, check_dataset_name
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.models.networks import check_model_name
from lalr_core.core.results.evidence import mean_interval
from lalr_core.core.runs.chapter import Chapter, ChapterSettings, Sections, check_names, positive
from lalr_core.methods import trajectory as tj
from lalr_core.methods.trajectory import filtered_noise as fnull

RUNS = ("sgdm", "adam")  # the optimisers of section "fig3.7", in this order (every seed)

# Thresholds of the checks (ours, fixed before the runs; the thesis gives none).
EARLY_STEP = 5      # "psi is initially high": psi at this batch ...
EARLY_HIGH = 0.8    # ... above this
START_STEP = 20     # fig 3.12's "at the start": psi(t) from theta_0 at this batch
SPIKE_GAIN = 0.10   # an lr-drop spike: psi_N rises by more than this fraction within N steps
RW_MARGIN = 1.5     # "well above the random walk": psi_N / (1/sqrt N) above this
FAR_ABOVE = 2.0     # fig 3.12 "much greater": final D_t / the fitted random walk's above this
LAYER_SHARE = 0.5   # "most" weight tensors
# E13 (our reading of the notes' table: steps ∝ 1/B at small B, then a plateau): log-log slopes of
# steps-to-target on the E13_FIT smallest and largest batch sizes.
E13_FIT = 3
E13_LINEAR_TOL = 0.3   # "∝ 1/B": the small-batch slope within this of -1
E13_PLATEAU = -0.5     # "plateau": the large-batch slope above this (doubling B saves < 30%)


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 04 at one profile (see ``PROFILES``)."""

    # The training runs (figs 3.7, 3.12, 3.17-3.19): data, model and schedule.
    dataset: str            # a `lalr_core.core.data.DATASETS` name
    synthetic: bool         # in-memory data in the dataset's shapes (smoke)
    n_train: int | None     # training examples; None = the whole train split minus n_val
    n_val: int              # held out from the train split (no check reads it)
    n_test: int | None      # test examples; None = the whole test split
    augment: bool           # random crop + horizontal flip
    model: str              # a `lalr_core.core.models.networks` name
    width: float            # multiplier of every hidden width
    batch_size: int         # examples per step (one step = one point of the trajectory)
    epochs: int             # passes over the training set
    milestones: tuple[int, ...]  # epochs at which the lr is multiplied by lr_decay (>= 1 drop)
    lr_decay: float         # multistep lr factor at each milestone (thesis: 0.1)
    window: int             # N of psi_N (eqs. 3.3-3.5) in steps, the trajectory callback's window
    seeds: int              # runs per optimiser, seeds 0..seeds-1 (the thesis shows one each)
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
    # Our numbers beside the source's: True where the setting is the source's (paper), so the
    # source's number is judged against our seeds' interval; False: the difference only.
    judge_source: bool
    # Parallel training processes.
    workers: int
    # Seeds of the filtered-noise null (`noise_null`): iid Gaussian gradients of each run's
    # dimension through its optimiser's update rule (a cheap simulation, no training).
    null_seeds: int
    # Seed 003's E13 (batch size vs lr on a teacher task; `lalr_core.methods.trajectory.batch_scaling`):
    # SGD runs on the batch x lr grid to a target error, then Adam at one lr on every batch.
    e13_batches: tuple[int, ...]   # batch sizes B (examples per step), increasing, >= 4 of them
    e13_lrs: tuple[float, ...]     # SGD lr grid (per step), increasing
    e13_seeds: int                 # seeds 0..e13_seeds-1 (initialisation and batch stream)
    e13_steps: int                 # step budget of every SGD run
    e13_target: float              # relative excess error to reach (0 = teacher, 1 = constant)
    e13_noise: float               # label noise, standard deviation in the targets' units
    e13_adam_lr: float             # Adam's lr for mean |dtheta| / lr
    e13_adam_steps: int            # Adam steps per run (the mean runs over all of them)

    def check(self) -> None:
        """Reject values the runs or the notebook's cells cannot use (``ValueError``)."""
        check_names(self, "dataset", check_dataset_name)
        check_names(self, "model", check_model_name)
        positive(self, "n_train", "n_test", allow_none=True)
        positive(self, "width", "batch_size", "epochs", "milestones", "lr_decay", "window",
                 "seeds", "sgdm_lr", "adam_lr", "sim_steps", "sim_seeds", "mc_count",
                 "mc_norm_draws", "mc_sum_draws", "workers", "null_seeds")
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
        before_drop = self.milestones[0] * self.steps_per_epoch
        if self.window >= before_drop:
            raise ValueError(f"setting 'window' must be < the {before_drop} steps before the "
                             f"first lr drop (figs 3.7 and 3.19 compare psi_N there), "
                             f"got {self.window!r}")
        if self.window < EARLY_STEP:
            raise ValueError(f"setting 'window' must be >= {EARLY_STEP} (fig 3.7 reads psi at batch "
                             f"{EARLY_STEP}, before the window fills), got {self.window!r}")
        if self.sim_steps < 200:
            raise ValueError(f"setting 'sim_steps' must be >= 200 (fig 3.15 reads step 200), "
                             f"got {self.sim_steps!r}")
        for name in ("mc_count", "mc_norm_draws", "mc_sum_draws"):
            if getattr(self, name) < 2:
                raise ValueError(f"setting {name!r} must be >= 2 (a standard error needs two "
                                 f"draws), got {getattr(self, name)!r}")
        self._check_e13()

    def _check_e13(self) -> None:
        """The E13 fields (seed 003): grids increasing, two seeds for an interval."""
        positive(self, "e13_batches", "e13_lrs", "e13_seeds", "e13_steps", "e13_target",
                 "e13_adam_lr", "e13_adam_steps")
        for name, least in (("e13_batches", 4), ("e13_lrs", 2)):
            value = getattr(self, name)
            if len(value) < least or any(a >= b for a, b in itertools.pairwise(value)):
                raise ValueError(f"setting {name!r} must be {least} or more increasing values, "
                                 f"got {value!r}")
        if self.e13_seeds < 2:
            raise ValueError(f"setting 'e13_seeds' must be >= 2 (an interval over seeds), "
                             f"got {self.e13_seeds!r}")
        if not self.e13_target < 1:
            raise ValueError(f"setting 'e13_target' must lie in (0, 1), got {self.e13_target!r}")
        if self.e13_noise < 0:
            raise ValueError(f"setting 'e13_noise' must be >= 0, got {self.e13_noise!r}")

    @property
    def train_size(self) -> int:
        """Training examples of each run (``n_train``, else what the split leaves)."""
        if self.n_train is not None:
            return self.n_train
        return SYNTHETIC_SIZES[0] if self.synthetic else \
            DATASETS[self.dataset].train_size - self.n_val

    @property
    def steps_per_epoch(self) -> int:
        """Optimiser steps per epoch (the loader keeps the last, smaller batch)."""
        return math.ceil(self.train_size / self.batch_size)

    def drops(self) -> list[int]:
        """The last step at each old lr (after ``milestones`` epochs), as figs 3.7/3.19 mark."""
        return [m * self.steps_per_epoch for m in self.milestones]


_MC = {"mc_norm_draws": 5000, "mc_sum_draws": 200}  # listing C.4's cap and C.2's draws
# The thesis's optimisers (Ch3-SGDM / Ch3-Adam, figs 3.7 and 3.19 captions).
_THESIS_OPT = {"sgdm_lr": 0.05, "sgdm_momentum": 0.85, "sgdm_wd": 1e-2,
               "adam_lr": 0.01, "adam_betas": (0.9, 0.99), "adam_wd": 1e-4}

# E13: B in {8..1024} x 8 SGD lrs (factor 2), our grid; the target
# and label noise put the critical batch inside the grid (so both regimes are visible).
_E13 = {"e13_batches": (8, 16, 32, 64, 128, 256, 512, 1024),
        "e13_lrs": tuple(0.00625 * 2 ** k for k in range(8)), "e13_steps": 10_000,
        "e13_target": 0.05, "e13_noise": 0.7, "e13_adam_lr": 1e-3, "e13_adam_steps": 200}

PROFILES = {
    "smoke": Settings(
        dataset="fashion_mnist", synthetic=True, n_train=512, n_val=128, n_test=128,
        augment=False, model="basic_cnn", width=0.5, batch_size=64, epochs=6,
        milestones=(3, 5), lr_decay=0.1, window=10, seeds=2,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-3,
        adam_lr=1e-3, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=300, sim_seeds=3, mc_count=2000, **_MC, judge_source=False, workers=1,
        null_seeds=3, e13_batches=(8, 32, 128, 512), e13_lrs=(0.025, 0.05, 0.1, 0.2, 0.4), e13_seeds=3,
        e13_steps=2000, e13_target=0.1, e13_noise=0.7, e13_adam_lr=1e-3, e13_adam_steps=50,
    ),
    # The thesis's optimisers and schedule shape (drops at 1/2 and 3/4 of training), 6 seeds
    # each (4 until the time freed by the throughput work: at 4, Adam's early-phase and lr-drop
    # claims read ~6 and ~8 seeds would decide them); what is cut to fit ~5 min on 2 CPU cores: data (4096 Fashion-MNIST images, no
    # augmentation), width (0.5), batch (256, not 1024: a step would cost 4x), steps (192, not
    # 8000) and with them N (16, not 250). No check reads validation data, so none is held out.
    "quick": Settings(
        dataset="fashion_mnist", synthetic=False, n_train=4096, n_val=0, n_test=1000,
        augment=False, model="resnet20", width=0.5, batch_size=256, epochs=12,
        milestones=(6, 9), lr_decay=0.1, window=16, seeds=6, **_THESIS_OPT,
        sim_steps=1000, sim_seeds=20, mc_count=20_000, **_MC, judge_source=False, workers=2,
        null_seeds=5, **_E13, e13_seeds=8,
    ),
    # The thesis's setting; 3 seeds (the thesis shows one run) so that its comparisons have
    # an interval.
    "paper": Settings(
        dataset="cifar10", synthetic=False, n_train=40_000, n_val=10_000, n_test=None,
        augment=True, model="resnet20", width=1.0, batch_size=1024, epochs=200,
        milestones=(100, 150), lr_decay=0.1, window=250, seeds=3, **_THESIS_OPT,
        sim_steps=1000, sim_seeds=20, mc_count=100_000, **_MC, judge_source=True, workers=1,
        null_seeds=3, **_E13, e13_seeds=16,
    ),
}


def directedness_configs(s: Settings, seed: int = 0) -> dict[str, RunConfig]:
    """The SGDM and Adam runs of chapter 04 with one seed (name -> config, ``RUNS`` order)."""
    common = {"dataset": s.dataset, "synthetic": s.synthetic, "n_train": s.n_train,
              "n_val": s.n_val, "n_test": s.n_test, "augment": s.augment, "model": s.model,
              "width": s.width, "batch_size": s.batch_size, "epochs": s.epochs,
              "schedule": "multistep", "milestones": s.milestones, "lr_decay": s.lr_decay,
              "seed": seed}
    return {
        "sgdm": RunConfig(**common, optimizer="sgdm", lr=s.sgdm_lr, momentum=s.sgdm_momentum,
                          wd=s.sgdm_wd),
        "adam": RunConfig(**common, optimizer="adam", lr=s.adam_lr, betas=s.adam_betas,
                          wd=s.adam_wd),
    }


def run_keys(s: Settings) -> list[tuple[str, int]]:
    """``(optimiser, seed)`` of every run of section ``"fig3.7"``, in its order (seed-major,
    so the two runs of a seed are next to each other)."""
    return [(name, seed) for seed in range(s.seeds) for name in RUNS]


def section_runs(s: Settings) -> Sections:
    """Section ``"fig3.7"``: the runs of ``run_keys`` with the trajectory callback (psi_N over
    ``window`` steps, per layer too); their results also feed figs 3.12 and 3.17-3.19."""
    configs = [directedness_configs(s, seed)[name] for name, seed in run_keys(s)]
    return {"fig3.7": (configs,
                       [{"trajectory": {"window": s.window, "per_layer": True}} for _ in configs])}


# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'n_train', 'n_val', 'n_test', 'batch_size', 'epochs', 'milestones', 'window',
    'sim_steps', 'mc_count', 'e13_steps', 'e13_adam_steps',
)
CHAPTER = Chapter(id="04", title="Directedness of optimisation trajectories (SGDM vs Adam)",
                  profiles=PROFILES, sections=section_runs,
                  rehearsal=REHEARSAL)


# ------------------------------------------------------------------ seeds and divergence
def by_optimiser(s: Settings, results: Sequence[dict]) -> dict[str, list[dict]]:
    """``train_runs``' results (``run_keys`` order) as optimiser -> one result per seed."""
    out: dict[str, list[dict]] = {name: [] for name in RUNS}
    for (name, _), res in zip(run_keys(s), results, strict=True):
        out[name].append(res)
    return out


def seed_notes(runs: dict[str, list[dict]]) -> tuple[dict[str, str], dict[str, str]]:
    """Why checks are N/A, and which seeds are left out of the intervals.

    Returns:
        ``(why_na, left_out)``: optimiser -> text. ``why_na`` holds the optimisers whose every
        seed diverged ("the SGDM run diverged at step 3 (seed 0), at step 2 (seed 1)");
        ``left_out`` those with some diverged seeds, which the intervals leave out.
    """
    why_na, left_out = {}, {}
    for name, results in runs.items():
        bad = [(k, r["diverged_step"]) for k, r in enumerate(results) if r["diverged"]]
        if not bad:
            continue
        steps = ", at ".join(f"step {step} (seed {k})" for k, step in bad)
        if len(bad) == len(results):
            why_na[name] = f"the {name.upper()} run diverged at {steps}"
        else:
            left_out[name] = (f"left out of the interval: the {name.upper()} run diverged at "
                              f"{steps}")
    return why_na, left_out


# ------------------------------------------------------- one run's numbers (figs 3.7, 3.19)
def early_decay_margin(psi_window, drop: int, window: int) -> float:
    """Fig 3.7's early phase as one number: ``min(psi(5) - 0.8, psi(5) - psi(N),
    psi(N) - psi_N(drop))``, > 0 when psi starts high and decays before the first lr drop.

    ``psi_window[t - 1]`` is ``psi_N(t)``; for ``t <= N`` it equals ``psi(t)`` (the window is
    truncated at ``theta_0``). ``drop`` is the last step at the first lr.
    """
    psi = np.asarray(psi_window, dtype=np.float64)
    if not EARLY_STEP <= window < drop <= psi.size:
        raise ValueError(f"need {EARLY_STEP} <= window < drop <= {psi.size} steps, got "
                         f"window={window}, drop={drop}")
    early, full, before = psi[EARLY_STEP - 1], psi[window - 1], psi[drop - 1]
    return float(min(early - EARLY_HIGH, early - full, full - before))


def spike_gains(psi_window, drops: Sequence[int], window: int) -> np.ndarray:
    """`lalr_core.methods.trajectory.spike_gain` after each lr drop (a fraction per drop)."""
    return np.array([tj.spike_gain(psi_window, d, window) for d in drops])


def controlled_spike_gains(psi_window, drops: Sequence[int], window: int) -> np.ndarray:
    """`spike_gains` after each lr drop ``d`` minus the same statistic at the control step
    ``d - N`` (its window, steps ``d-N+1 .. d``, lies at the old lr, with no drop in it).

    The spike statistic is a maximum over ``N`` steps of a fluctuating ``psi_N`` relative to
    its value now, so it is positive even where nothing happens; the control measures that
    baseline in the same run and phase (the null: no lr drop). A drop's spike is its excess.
    """
    psi = np.asarray(psi_window, dtype=np.float64)
    if min(drops) - window < 1:
        raise ValueError(f"the control step d - N needs every drop after step {window}, got "
                         f"{list(drops)}")
    return spike_gains(psi, drops, window) - spike_gains(psi, [d - window for d in drops],
                                                         window)


def spike_rises(psi_window, drops: Sequence[int], window: int) -> np.ndarray:
    """The absolute rise ``max(psi_N(d+1 .. d+N)) - psi_N(d)`` after each lr drop ``d``."""
    psi = np.asarray(psi_window, dtype=np.float64)
    return np.array([psi[d:d + window].max() - psi[d - 1] for d in drops])


def layer_spike_share(traj: dict, drops: Sequence[int], window: int,
                      null_gains: Sequence[float] | float = 0.0) -> tuple[float, int]:
    """Share of the weight tensors (names ending in ``weight``) whose own ``psi_N`` spikes
    after every lr drop (`controlled_spike_gains` minus ``null_gains`` > ``SPIKE_GAIN``: the
    rise beyond the same tensor's rise at a step without a drop, and beyond the filtered-noise
    null's controlled rise at that drop, one value per drop), and how many tensors there are.

    ``traj`` is a trajectory callback's result with ``per_layer`` (``layer_names``,
    ``layer_psi_window``, ``(T, layers)``).
    """
    pick = [i for i, nm in enumerate(traj["layer_names"]) if nm.endswith("weight")]
    if not pick:
        raise ValueError("the trajectory has no per-layer weight tensors (per_layer=False?)")
    null_gains = np.broadcast_to(np.asarray(null_gains, dtype=np.float64), (len(drops),))
    spikes = [(controlled_spike_gains(traj["layer_psi_window"][:, i], drops, window)
               - null_gains > SPIKE_GAIN).all() for i in pick]
    return float(np.mean(spikes)), len(pick)


def min_rw_ratio(psi_window, window: int) -> float:
    """``min_t psi_N(t) / E_RW[psi_N(t)]`` over ``t > N`` (the walk's baseline ``1/sqrt N``)."""
    psi = np.asarray(psi_window, dtype=np.float64)
    t = np.arange(1, psi.size + 1)
    return float(np.min(psi[window:] / tj.rw_expected_psi_window(t, window)[window:]))


def phase_means(psi_window, drops: Sequence[int], window: int) -> np.ndarray:
    """Mean ``psi_N`` in each lr phase: steps ``N+1..d_1``, ``d_1+1..d_2``, ..., ``d_k+1..T``
    (the first phase starts after the window has filled)."""
    psi = np.asarray(psi_window, dtype=np.float64)
    edges = [window, *drops, psi.size]
    if list(edges) != sorted(edges) or len(set(edges)) != len(edges):
        raise ValueError(f"need window < drops < {psi.size} steps, got {window}, {list(drops)}")
    return np.array([psi[a:b].mean() for a, b in itertools.pairwise(edges)])


# ------------------------------------------------- the filtered-noise null (figs 3.7-3.19)
def noise_null(s: Settings, name: str, n: int, steps: int) -> dict[str, np.ndarray]:
    """The null of the directedness claims for optimiser ``name``: iid ``N(0, I_n)``
    gradients (``n``: the run's number of parameters) through that optimiser's update rule
    with the run's momentum or betas and lr schedule, for the run's ``steps``, once per null
    seed (``null_seeds``; seeds 0, 1, ...): `filtered_noise.filtered_noise_null`, every key
    ``(null_seeds, steps)``. Weight decay is left out (module docstring there)."""
    cfg = directedness_configs(s)[name]
    lr = fnull.multistep_lr(cfg.lr, steps, [d for d in s.drops() if d < steps], s.lr_decay)
    kw = {"momentum": cfg.momentum} if name == "sgdm" else {"betas": cfg.betas}
    return fnull.filtered_noise_null(int(n), int(steps), name, window=s.window,
                                     seeds=range(s.null_seeds), lr=lr, **kw)


def min_null_ratio(psi_window, null_psi_window, window: int) -> float:
    """``min_t psi_N(t) / psi_N^null(t)`` over ``t > N``, the null the mean over its seeds
    (rows of ``null_psi_window``; a 1-D curve is one seed)."""
    psi = np.asarray(psi_window, dtype=np.float64)
    null = np.atleast_2d(np.asarray(null_psi_window, dtype=np.float64)).mean(0)
    if null.shape != psi.shape:
        raise ValueError(f"the null has {null.shape[0]} steps, the run {psi.size}")
    return float(np.min(psi[window:] / null[window:]))


def null_fit(ds, dt, null_ds, null_dt, gamma: float) -> dict[str, Any]:
    """The filtered-noise null scaled to a run's ``D_s``, ``D_t`` by eq. 3.15 with weight
    ``gamma`` (as fig 3.12 fits the random walk's sigma): the null's curves (means over its
    seeds) times the least-squares scale, which is exact since both are linear in it. With
    momentum 0 and a constant lr the null's curves are the random walk's, and this is
    `fit_rw`'s ``sigma_lstsq`` fit."""
    ds, dt = np.asarray(ds, dtype=np.float64), np.asarray(dt, dtype=np.float64)
    a = np.atleast_2d(np.asarray(null_ds, dtype=np.float64)).mean(0)
    b = np.atleast_2d(np.asarray(null_dt, dtype=np.float64)).mean(0)
    if not (a.shape == b.shape == ds.shape == dt.shape):
        raise ValueError(f"need curves of one length, got {ds.shape}, {dt.shape}, {a.shape}, "
                         f"{b.shape}")
    scale = (gamma * a @ ds + (1 - gamma) * b @ dt) / (gamma * a @ a + (1 - gamma) * b @ b)
    return {"scale": float(scale), "ds_fit": scale * a, "dt_fit": scale * b,
            "objective": tj.fit_objective(ds, dt, scale * a, scale * b, gamma)}


def null_spike_gains(null_psi_window, drops: Sequence[int], window: int) -> np.ndarray:
    """`controlled_spike_gains` of the null, per drop, averaged over its seeds: the rise
    after an lr drop that noise through the same filters and schedule shows."""
    rows = np.atleast_2d(np.asarray(null_psi_window, dtype=np.float64))
    return np.mean([controlled_spike_gains(r, drops, window) for r in rows], axis=0)


# ------------------------------------------------------------- fits (figs 3.12, 3.17, 3.18)
def fit_run(ds, dt, n: int) -> dict[str, Any]:
    """The fits of one run's ``D_s``, ``D_t``: random walk and AR(1) with the balanced gamma
    (figs 3.12, 3.17; our gamma) and with gamma = 0 (fig 3.18)."""
    gamma = tj.balanced_gamma(ds, dt)
    return {"n": n, "gamma": gamma,
            "rw": tj.fit_rw(ds, dt, n, gamma), "ar": tj.fit_ar(ds, dt, n, gamma),
            "rw0": tj.fit_rw(ds, dt, n, 0.0), "ar0": tj.fit_ar(ds, dt, n, 0.0)}


def scaled_sse(curve, model) -> float:
    """Eq. 3.15 with gamma = 0 (sum of squared errors) after the least-squares scale of
    ``model`` to ``curve``: how well the model's *shape* follows the curve."""
    curve, model = np.asarray(curve, dtype=np.float64), np.asarray(model, dtype=np.float64)
    if curve.shape != model.shape or not np.dot(model, model) > 0:
        raise ValueError(f"need equal shapes and a non-zero model, got {curve.shape}, "
                         f"{model.shape}")
    scale = np.dot(curve, model) / np.dot(model, model)
    return float(np.sum((curve - scale * model) ** 2))


def shape_log_ratio(dt, fits: dict[str, Any]) -> float:
    """Fig 3.18 as one number: ``log(SSE of the gamma = 0 random walk / SSE of the fig 3.17
    AR fit's shape)`` on ``D_t`` (``scaled_sse``); < 0 when the random walk's shape fits
    better. The gamma = 0 random walk is already least-squares scaled."""
    return float(np.log(scaled_sse(dt, fits["rw0"]["dt_fit"])
                        / scaled_sse(dt, fits["ar"]["dt_fit"])))


# ------------------------------------------------------------------- ours beside the source
def versus_source(values, source: float, *, judge: bool) -> str:
    """Our per-seed ``values`` beside the source's number: the mean and the difference, and
    with ``judge`` (the source's own setting) whether the source's number lies inside our 95%
    interval over seeds (``mean_interval``)."""
    ev = mean_interval(values)
    if not math.isfinite(ev.estimate):
        return f"no finite value (source {source:g})"
    text = f"ours {ev.estimate:.3f} ({ev.n} seeds), source {source:g}: " \
           f"difference {ev.estimate - source:+.3f}"
    if judge:
        inside = ev.low <= source <= ev.high
        text += (f"; the source's number is {'inside' if inside else 'outside'} our 95% "
                 f"interval [{ev.low:.3f}, {ev.high:.3f}]")
    return text


# ------------------------------------------------------------------ seed 003, E13
def e13_fit_batches(s: Settings) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The smallest and the largest ``min(E13_FIT, len // 2)`` batch sizes of ``e13_batches``:
    where E13's two log-log slopes (linear regime, plateau) are fitted; never overlapping."""
    k = min(E13_FIT, len(s.e13_batches) // 2)
    return s.e13_batches[:k], s.e13_batches[-k:]
