"""Chapter 01 (LALR, seed 000): settings per profile, the labelled runs of every experiment,
the source's claims, and the verdicts the notebook records.

``settings`` holds the typed `Settings` and ``PROFILES``; LARS and LAMB are the optimisers
``"lars_po"`` and ``"lamb"`` of `lalr_core.methods.layer_lr.trust_ratio`; ``runs`` turns
settings into labelled fine-tunings (stage 1 by section, and the U-match stage that needs
LALR's runs first); ``claims`` the claims L-C1..L-C30 with the source's sentences;
``verdicts`` the per-run numbers, paired intervals, combination rules and the verdict table;
``findings`` one function per claim: the runs' results in, an `findings.Item` (its numbers
and the `Finding` the notebook records) out, each judged against its null or control arm;
``mechanics`` the deterministic checks (AdamW integration, the normaliser's NaN, App. A's
misaligned grouping, gradient-free metrics); ``mechanisms`` the per-run quantities of the
mechanism claims (X-L6, X-L7, X-L10, X-L11, X-L13, X-L14), read from the per-layer
diagnostics. ``CHAPTER.all_runs(settings)`` is the one sweep of stage 1, after
``pretrainings(settings)``.
"""

from __future__ import annotations

from lalr_core.chapters.ch01_lalr import findings, mechanisms
from lalr_core.chapters.ch01_lalr.claims import (
    CLAIMS,
    SOURCE_CLAIMS,
    UNTESTABLE,
    Claim,
)
from lalr_core.chapters.ch01_lalr.mechanics import (
    literal_gives_nan,
    lr_integration,
    metrics_read_weights_only,
    misalignment_summary,
    normaliser_cases,
)
from lalr_core.chapters.ch01_lalr.runs import (
    AW,
    DIAGNOSED,
    LAMB,
    LARS,
    MAIN_ARMS,
    NLP_TASKS,
    ONCE,
    ORDERS,
    PARAM_AW,
    PROBED,
    REC,
    SCHEDULES,
    SENT_ARMS,
    SINGLES,
    TB,
    TEXT20,
    UMATCH,
    VARIANTS,
    VISION,
    Run,
    U,
    arm_changes,
    by_arm,
    callbacks_for,
    finetuning,
    mean_lr_scale,
    perturbed_arm,
    planned_runs,
    pretraining,
    pretrainings,
    run_cost,
    section_runs,
    umatch_lrs,
    umatch_runs,
    vision_pretraining,
)
from lalr_core.chapters.ch01_lalr.settings import PROFILES, Settings
from lalr_core.chapters.ch01_lalr.verdicts import (
    PENDING,
    at_least,
    curve,
    every,
    final,
    forgetting,
    fraction_interval,
    frozen_per_epoch,
    generalisation_gap,
    kendall_w,
    metric_grid,
    paired,
    paired_curve,
    per_seed,
    ranking,
    requirement,
    scales_follow_metrics,
    split_accuracy,
    split_history,
    texts,
    top_tercile_fall,
    unchanged_scales,
    verdict_table,
    versus_best_other,
)
from lalr_core.core.runs.chapter import Chapter

# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'mlm_epochs', 'mlm_corpus', 'mlm_heldout', 'n_train', 'n_val', 'n_test',
    'small_n_train', 'small_epochs', 'overhead_sizes', 'overhead_repeats',
    'overhead_budget_s', 'vision_pretrain_n', 'vision_pretrain_epochs', 'vision_n_train',
    'vision_epochs', 'nlp_tiny', 'e14_steps',
)
CHAPTER = Chapter(id="01", title="LALR: layer-adaptive learning rates, tested claim by claim",
                  profiles=PROFILES, sections=section_runs, run_cost=run_cost,
                  rehearsal=REHEARSAL)

__all__ = [
    "AW",
    "CHAPTER",
    "CLAIMS",
    "DIAGNOSED",
    "LAMB",
    "LARS",
    "MAIN_ARMS",
    "ONCE",
    "ORDERS",
    "PARAM_AW",
    "PENDING",
    "PROBED",
    "PROFILES",
    "REC",
    "SCHEDULES",
    "SENT_ARMS",
    "SINGLES",
    "SOURCE_CLAIMS",
    "TB",
    "TEXT20",
    "UMATCH",
    "UNTESTABLE",
    "VARIANTS",
    "VISION",
    "Claim",
    "Run",
    "Settings",
    "U",
    "arm_changes",
    "at_least",
    "by_arm",
    "callbacks_for",
    "curve",
    "every",
    "final",
    "findings",
    "finetuning",
    "forgetting",
    "fraction_interval",
    "frozen_per_epoch",
    "generalisation_gap",
    "kendall_w",
    "literal_gives_nan",
    "lr_integration",
    "mean_lr_scale",
    "mechanisms",
    "metric_grid",
    "metrics_read_weights_only",
    "misalignment_summary",
    "normaliser_cases",
    "paired",
    "paired_curve",
    "per_seed",
    "perturbed_arm",
    "planned_runs",
    "pretraining",
    "pretrainings",
    "ranking",
    "requirement",
    "run_cost",
    "scales_follow_metrics",
    "section_runs",
    "split_accuracy",
    "split_history",
    "texts",
    "top_tercile_fall",
    "umatch_lrs",
    "umatch_runs",
    "unchanged_scales",
    "verdict_table",
    "versus_best_other",
    "vision_pretraining",
]
