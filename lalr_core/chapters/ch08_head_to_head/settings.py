"""Chapter 08's settings: the tasks, the contenders, the tuning protocol, per profile.

``quick``: Fashion-MNIST ResNet-8 (half width) from scratch, chapter 01's TinyTF fine-tuned
on SENT (its quick sizes, so the pretraining is chapter 01's cached run), and a deeper net
(ResNet-20, quarter width). ``paper``: CIFAR-10 ResNet-20 (the thesis's sec. 5.4.1 setting,
100 epochs), chapter 01's paper TinyTF setting and CIFAR-10 ResNet-56. ``smoke``: the same
code on synthetic images and a 1-epoch pretraining, in seconds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lalr_core.chapters.ch08_head_to_head.contenders import CENTRES, CONTENDERS, check_contender
from lalr_core.chapters.ch08_head_to_head.tasks import Task, task_of
from lalr_core.core.runs import EXECUTORS
from lalr_core.core.runs.chapter import ChapterSettings, positive
from lalr_core.methods.layer_lr.tempbalance import SCHEMES


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 08 at one profile (see ``PROFILES``).

    Learning rates are per step; a trial's lr is its contender's centre (``centres``, from the
    sources) times one of ``lr_factors``; every contender gets the same trials.
    """

    tasks: dict               # task name -> `tasks.Task` fields (image or text)
    synthetic: bool           # image tasks on in-memory data of the dataset's shapes (smoke)
    contenders: tuple[str, ...]  # keys of `contenders.CONTENDERS`; "sgdm" must be one
    centres: dict             # task kind ("image" / "text") -> contender -> centre lr
    lr_factors: tuple[float, ...]  # the lr trials: centre x each factor (same for everyone)
    tuning_seeds: tuple[int, ...]  # seeds of the tuning runs (disjoint from the eval seeds)
    eval_seeds: int           # fresh seeds 0, 1, ... of the evaluation runs
    tuned_lr: dict            # task -> contender -> chosen lr (set by the notebook after
                              # tuning; a missing entry evaluates at the centre)
    momentum: float           # SGDM, its methods, LARS
    lars_eta: float           # LARS's trust coefficient (chapter 01's choice on TinyTF)
    tb_scheme: str            # TempBalance's allocation (chapter 02's default)
    target_fraction: float    # time to target: first epoch whose validation accuracy
                              # reaches this fraction of SGDM's mean final one
    early_epochs: int         # "early training": validation accuracy after this many epochs
    max_epochs: int | None    # every task's epochs capped at this (a rehearsal takes smoke's)
    workers: int
    executor: str | None      # "local" or "ray"

    @property
    def datasets(self) -> tuple[str, ...]:
        """The real datasets of the image tasks (none when synthetic; text is generated)."""
        if self.synthetic:
            return ()
        return tuple(sorted({t.dataset for t in self.task_specs().values()
                             if t.kind == "image"}))

    def task_specs(self) -> dict[str, Task]:
        """Task name -> `Task` (checked; epochs capped at ``max_epochs``)."""
        specs = {name: task_of(name, spec) for name, spec in self.tasks.items()}
        if self.max_epochs is None:
            return specs
        return {name: dataclasses.replace(t, epochs=min(t.epochs, self.max_epochs))
                for name, t in specs.items()}

    def check(self) -> None:
        """Reject values the runs or the notebook's cells cannot use (``ValueError``)."""
        if not self.tasks:
            raise ValueError("setting 'tasks' must name at least one task")
        specs = self.task_specs()
        for name in self.contenders:
            check_contender(name)
        if "sgdm" not in self.contenders:
            raise ValueError("setting 'contenders' must include 'sgdm' (every comparison's "
                             "baseline)")
        if len(set(self.contenders)) != len(self.contenders):
            raise ValueError(f"setting 'contenders' repeats a name: {self.contenders!r}")
        for kind in {t.kind for t in specs.values()}:
            missing = [c for c in self.contenders if c not in self.centres.get(kind, {})]
            if missing:
                raise ValueError(f"setting 'centres' has no {kind} lr for {missing}")
        for kind, lrs in self.centres.items():
            if not isinstance(lrs, dict) or any(
                    isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0
                    for v in lrs.values()):
                raise ValueError(f"setting 'centres' must map task kinds to contender -> lr "
                                 f"> 0, got {kind!r}: {lrs!r}")
        for task, lrs in self.tuned_lr.items():
            if task not in specs:
                raise ValueError(f"setting 'tuned_lr' names unknown task {task!r}; "
                                 f"tasks: {sorted(specs)}")
            for c, v in dict(lrs).items():
                check_contender(c)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                    raise ValueError(f"setting 'tuned_lr' needs lrs > 0, got {task}/{c}: {v!r}")
        positive(self, "lr_factors", "eval_seeds", "lars_eta", "target_fraction",
                 "early_epochs", "workers")
        positive(self, "max_epochs", allow_none=True)
        if not self.lr_factors:
            raise ValueError("setting 'lr_factors' must hold at least one trial")
        if not self.tuning_seeds or any(s < self.eval_seeds for s in self.tuning_seeds):
            raise ValueError(f"setting 'tuning_seeds' must be seeds >= eval_seeds = "
                             f"{self.eval_seeds} (disjoint from the evaluation seeds 0, 1, "
                             f"...), got {self.tuning_seeds!r}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"setting 'momentum' must lie in [0, 1), got {self.momentum!r}")
        if not self.target_fraction <= 1:
            raise ValueError(f"setting 'target_fraction' must lie in (0, 1], got "
                             f"{self.target_fraction!r}")
        if self.tb_scheme not in SCHEMES:
            raise ValueError(f"setting 'tb_scheme' must be one of {sorted(SCHEMES)}, "
                             f"got {self.tb_scheme!r}")
        if any(self.early_epochs > t.epochs for t in specs.values()):
            raise ValueError(f"setting 'early_epochs' ({self.early_epochs}) exceeds a task's "
                             f"epochs")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise ValueError(f"setting 'executor' must be one of {sorted(EXECUTORS)} or None, "
                             f"got {self.executor!r}")


_IMAGE = dict(kind="image", dataset="fashion_mnist", n_val=500, n_test=1000, batch_size=64,
              augment=False, wd=5e-4)
_TEXT = dict(kind="text", dataset="sent", mlm_epochs=15, mlm_corpus=4000, mlm_heldout=500,
             n_val=500, n_test=1000, batch_size=32, epochs=6, wd=0.01)  # chapter 01's quick
_CIFAR = dict(kind="image", dataset="cifar10", n_train=45_000, n_val=5_000, n_test=None,
              batch_size=128, augment=True, wd=5e-4, epochs=100)
_COMMON = dict(contenders=CONTENDERS, centres=CENTRES, lr_factors=(10 ** -0.5, 1.0, 10 ** 0.5),
               tuning_seeds=(100,), tuned_lr={}, momentum=0.9, lars_eta=3e-2,
               tb_scheme="tb_linear", target_fraction=0.9, early_epochs=1, executor=None)

PROFILES: dict[str, Settings] = {
    "smoke": Settings(
        tasks={"fmnist_resnet8": dict(_IMAGE, model="resnet8", width=0.5, n_train=128,
                                      n_val=64, n_test=64, batch_size=32, epochs=2),
               "tinytf_sent": dict(_TEXT, mlm_epochs=1, mlm_corpus=400, mlm_heldout=100,
                                   n_train=64, n_val=100, n_test=100, epochs=2),
               "fmnist_resnet20": dict(_IMAGE, model="resnet20", width=0.25, n_train=128,
                                       n_val=64, n_test=64, batch_size=32, epochs=2)},
        synthetic=True, eval_seeds=2, max_epochs=2, workers=2, **_COMMON),
    "quick": Settings(
        # 1000 training images (not 2000) so the chapter's 216 runs take about 5 min of the
        # collection's budget on the reference machine (docs/profiles.md); the image runs are
        # nine tenths of its compute.
        tasks={"fmnist_resnet8": dict(_IMAGE, model="resnet8", width=0.5, n_train=1000,
                                      epochs=4),
               "tinytf_sent": dict(_TEXT, n_train=500),
               "fmnist_resnet20": dict(_IMAGE, model="resnet20", width=0.25, n_train=1000,
                                       epochs=4)},
        synthetic=False, eval_seeds=5, max_epochs=None, workers=2, **_COMMON),
    "paper": Settings(
        tasks={"cifar10_resnet20": dict(_CIFAR, model="resnet20", width=1.0),
               "tinytf_sent": dict(_TEXT, n_train=1000),   # chapter 01's paper sizes
               "cifar10_resnet56": dict(_CIFAR, model="resnet56", width=1.0)},
        synthetic=False, eval_seeds=5, max_epochs=None, workers=1, **_COMMON),
}
