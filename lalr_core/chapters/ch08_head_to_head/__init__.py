"""Chapter 08 (head to head): every method of the sources, and Muon, on common tasks with
equal tuning budgets.

``tasks`` holds the `Task` (what every contender shares on a task) and its base run;
``contenders`` each method as ``RunConfig`` changes from the collection's one implementation
(chapters 01, 02, 06) or a well-kept library (LARS, LAMB, Muon) and the centre of its lr
trials; ``settings`` the typed `Settings` and ``PROFILES``; ``runs`` the tuning and evaluation
runs, labelled, and their sections; ``summaries`` the tables, the tuning choice, curves and
time to target; ``claims`` the sources' claims as templates, one copy per task; ``findings``
the paired intervals behind every verdict and table cell. ``CHAPTER.train(S, "tune:<task>")``
then ``CHAPTER.train(S_tuned, "eval:<task>")``.
"""

from __future__ import annotations

from lalr_core.chapters.ch08_head_to_head.contenders import CENTRES, CONTENDERS, CONTROL, LABELS
from lalr_core.chapters.ch08_head_to_head.runs import (
    EVAL,
    TUNE,
    Run,
    config,
    eval_lr,
    eval_runs,
    pretrainings,
    run_cost,
    section_runs,
    trial_lrs,
    tuning_runs,
)
from lalr_core.chapters.ch08_head_to_head.settings import PROFILES, Settings
from lalr_core.chapters.ch08_head_to_head.tasks import Task
from lalr_core.core.runs.chapter import Chapter

# The length settings a rehearsal takes from smoke (`lalr_core.core.rehearsal`): the epochs'
# cap and the evaluation seeds (the loader caps the image examples); the tasks, contenders,
# lr trials and tuning protocol keep the profile's values.
REHEARSAL = ("max_epochs", "eval_seeds")
CHAPTER = Chapter(id="08", title="Head to head: every method on common tasks, equal tuning",
                  profiles=PROFILES, sections=section_runs, run_cost=run_cost,
                  rehearsal=REHEARSAL)



def train_stage(settings: Settings, stage: str) -> tuple[list[Run], list[dict]]:
    """Train ``stage``'s section (`TUNE` or `EVAL`) of every task through ``CHAPTER.train``;
    the labelled runs and their results, in order."""
    label = {TUNE: tuning_runs, EVAL: eval_runs}[stage]
    runs, results = [], []
    for task in settings.tasks:
        configs, res = CHAPTER.train(settings, f"{stage}:{task}")
        labelled = label(settings, task)
        assert [r.config for r in labelled] == configs   # the section is these runs
        runs += labelled
        results += res
    return runs, results


__all__ = ["CENTRES", "CHAPTER", "CONTENDERS", "CONTROL", "EVAL", "LABELS", "PROFILES", "Run",
           "Settings", "TUNE", "Task", "config", "eval_lr", "eval_runs", "pretrainings",
           "run_cost", "section_runs", "train_stage", "trial_lrs", "tuning_runs"]
