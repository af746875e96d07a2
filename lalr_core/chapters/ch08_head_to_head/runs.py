"""Chapter 08's runs: the tuning trials and the evaluation runs of every (task, contender),
as labelled runs, and the sections they form.

The protocol (equal for every contender): on each task, ``len(lr_factors)`` trials of the
contender's lr (its centre times each factor) on each tuning seed; the trial with the best
mean final validation accuracy is its lr (`summaries.choose_lr`); then ``eval_seeds`` fresh
seeds at that lr. Sections ``tune:<task>`` and ``eval:<task>``; the evaluation runs use
``tuned_lr`` (the notebook sets it from the tuning runs) and, before it is set, the centre
(what the dry run costs: a run's cost does not depend on its lr).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lalr_core.chapters.ch08_head_to_head import contenders as cont
from lalr_core.chapters.ch08_head_to_head.settings import Settings
from lalr_core.chapters.ch08_head_to_head.tasks import base_config, pretraining
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.runs.chapter import Sections

TUNE, EVAL = "tune", "eval"


@dataclass(frozen=True)
class Run:
    """One labelled run: ``stage`` (tune / eval), ``task``, ``contender``, ``lr``, ``seed``
    and its ``config``."""

    stage: str
    task: str
    contender: str
    lr: float
    seed: int
    config: RunConfig


def config(s: Settings, task: str, contender: str, lr: float, seed: int) -> RunConfig:
    """The run of ``contender`` at ``lr`` on ``task`` with ``seed``."""
    spec = s.task_specs()[task]
    base = base_config(spec, seed, s.synthetic)
    return dataclasses.replace(base, **cont.changes(
        contender, float(lr), momentum=s.momentum, lars_eta=s.lars_eta, tb_scheme=s.tb_scheme))


def trial_lrs(s: Settings, task: str, contender: str) -> tuple[float, ...]:
    """The lr trials of ``contender`` on ``task``: its centre times each of ``lr_factors``."""
    centre = s.centres[s.task_specs()[task].kind][contender]
    return tuple(float(centre * f) for f in s.lr_factors)


def eval_lr(s: Settings, task: str, contender: str) -> float:
    """The chosen lr (``tuned_lr``), or the centre before tuning."""
    chosen = s.tuned_lr.get(task, {}).get(contender)
    return float(chosen) if chosen is not None else \
        float(s.centres[s.task_specs()[task].kind][contender])


def tuning_runs(s: Settings, task: str) -> list[Run]:
    return [Run(TUNE, task, c, lr, seed, config(s, task, c, lr, seed))
            for c in s.contenders for lr in trial_lrs(s, task, c) for seed in s.tuning_seeds]


def eval_runs(s: Settings, task: str) -> list[Run]:
    return [Run(EVAL, task, c, eval_lr(s, task, c), seed,
                config(s, task, c, eval_lr(s, task, c), seed))
            for c in s.contenders for seed in range(s.eval_seeds)]


def pretrainings(s: Settings) -> list[RunConfig]:
    """The pretrainings the text tasks fine-tune from (trained first, with ``"weights"``)."""
    out = [pretraining(t) for t in s.task_specs().values()]
    return list(dict.fromkeys(c for c in out if c is not None))


def section_runs(s: Settings) -> Sections:
    """Every training run: ``tune:<task>`` and ``eval:<task>`` -> (configs, no callbacks)."""
    out: Sections = {}
    for task in s.tasks:
        for stage, runs in ((TUNE, tuning_runs(s, task)), (EVAL, eval_runs(s, task))):
            configs = [r.config for r in runs]
            out[f"{stage}:{task}"] = (configs, [{}] * len(configs))
    return out


_COST = {"resnet": 4.0, "basic_cnn": 1.0, "mlp": 0.1}
TEXT_COST = 0.25   # a TinyTF fine-tuning step of 32 sequences, relative to a ResNet image


def run_cost(cfg: RunConfig) -> float:
    """A rough relative cost of a run, to start the longest first."""
    if isinstance(cfg.task, str):   # image classification
        unit = next((v for k, v in _COST.items() if cfg.model.startswith(k)), 1.0) * cfg.width
        n = cfg.n_train or 50_000
    else:
        unit, n = TEXT_COST, getattr(cfg.task, "n_train", None) or 1000
    extra = 1.5 if cfg.method("grad_transform") is not None or cfg.methods else 1.0
    return unit * extra * cfg.epochs * n
