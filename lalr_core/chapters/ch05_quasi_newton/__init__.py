"""Chapter 05 (second-order methods): settings, runs, and the numbers its checks judge.

Source: Mark Tuddenham, *Advancing differentiable program optimisation via novel first and
second-order metrics, and adaptive optimisation strategies*, PhD thesis, University of
Southampton, 2026, chapter 4 and appendices E, F, H (key `[Tuddenham2026]` in REFERENCES.md;
author <https://orcid.org/0000-0002-3428-4051>); the class-gradient method was first published
as Tuddenham, Prügel-Bennett and Hare, *Quasi-Newton's method in the class gradient defined
high-curvature subspace*, arXiv:2012.01938, 2020 (`[Tuddenham2020]`). The thesis gives no pass
thresholds: the checks' thresholds are ours and keep the direction of its qualitative claims.

The quick profile is our reduction to a 2-core CPU on the sklearn digits (8x8, the
collection's fixed 1347 / 450 split), with BasicCNN at a quarter or half width standing in for
the thesis's networks so that no new model is needed: ``basic_cnn`` at width 0.5 (16 channels,
batch norm, for the thesis's batch-normalised ResNet-9) for the training comparisons,
``basic_cnn_nobn`` at width 0.25 (1,338 parameters) where the exact Hessian is needed. The
known-matrix experiments (listing F.1, appendix H) and the test functions are at the source's
own scale at every profile but smoke.

Training runs (cached units of the one loop): SGD(M) against the quasi-Newton step in the
class-gradient subspace (`lalr_core.methods.class_subspace.optimizer`, optimiser
``"qn_class_subspace"``), paired by seed (same initialisation and batch order). The thesis shows
one run per setting; its comparisons are judged over ``seeds`` seeds
(`lalr_core.core.results.evidence`).

The package: ``settings`` (the arms' names, `Settings`, ``PROFILES``), ``runs`` (every
section's configs and callbacks, ``CHAPTER``), ``numbers`` (the per-run and per-section
quantities the checks judge), ``hessian`` (the exact-Hessian sections, figs 4.11 and E.1),
``known_matrix`` (listing F.1, fig 4.14, appendix H) and ``quotes`` (the thesis's sentences).
Their public names are re-exported here.
"""

from lalr_core.chapters.ch05_quasi_newton.hessian import (
    class_gradient_cosine,
    class_subspace_alignment,
    e1_taus,
    e1_windows,
    hessian_problem,
    hessian_spectrum,
    rank_falls,
    spectrum_numbers,
)
from lalr_core.chapters.ch05_quasi_newton.known_matrix import (
    THESIS_EXACT_KAPPAS,
    THESIS_SAMPLE_KAPPAS,
    appendix_h,
    cumulants_within,
    fig413_numbers,
    fig414_run,
    fig417a_numbers,
    fig417a_samples,
    middle_window,
    power_iteration_runs,
    rolling_runs,
    rolling_stats,
    rolling_tail,
    steadier_with_window,
    stop_rule_share,
)
from lalr_core.chapters.ch05_quasi_newton.numbers import (
    arm_summary,
    cohesion_column,
    cohesion_extremes,
    cohesion_numbers,
    crossover_epoch,
    crossover_order_holds,
    diverged,
    divergence_counts,
    final_accuracy,
    final_loss,
    first_epoch_loss,
    gc_numbers,
    held_out_loss,
    layer_dt,
    loss_after_steps,
    loss_drop,
    max_eta,
    mean_curve,
    mean_eta,
    per_seed,
    phi_numbers,
    random_cosine_scale,
    source_accuracies,
    step_log,
    table_e,
    train_loss_noise,
    volatility,
)
from lalr_core.chapters.ch05_quasi_newton.quotes import QUOTES
from lalr_core.chapters.ch05_quasi_newton.runs import (
    CHAPTER,
    PROBE,
    cohesion_callbacks,
    cohesion_runs,
    fig46_runs,
    fig410_early_steps,
    fig410_epochs,
    fig410_runs,
    fig410_train_size,
    fig420_arms,
    fig420_runs,
    hessian_run,
    phi_callbacks,
    phi_runs,
    probe_run,
    probe_runs,
    probe_sections,
    run_cost,
    section_runs,
    table_runs,
)
from lalr_core.chapters.ch05_quasi_newton.settings import (
    ALG5,
    ARMS,
    LABELS,
    PROFILES,
    QN,
    REFERENCE_TABLE,
    TABLE_ARMS,
    Settings,
)

__all__ = [
    "ALG5",
    "ARMS",
    "CHAPTER",
    "LABELS",
    "PROBE",
    "PROFILES",
    "QN",
    "QUOTES",
    "REFERENCE_TABLE",
    "TABLE_ARMS",
    "THESIS_EXACT_KAPPAS",
    "THESIS_SAMPLE_KAPPAS",
    "Settings",
    "appendix_h",
    "arm_summary",
    "class_gradient_cosine",
    "class_subspace_alignment",
    "cohesion_callbacks",
    "cohesion_column",
    "cohesion_extremes",
    "cohesion_numbers",
    "cohesion_runs",
    "crossover_epoch",
    "crossover_order_holds",
    "cumulants_within",
    "diverged",
    "divergence_counts",
    "e1_taus",
    "e1_windows",
    "fig46_runs",
    "fig410_early_steps",
    "fig410_epochs",
    "fig410_runs",
    "fig410_train_size",
    "fig413_numbers",
    "fig414_run",
    "fig417a_numbers",
    "fig417a_samples",
    "fig420_arms",
    "fig420_runs",
    "final_accuracy",
    "final_loss",
    "first_epoch_loss",
    "gc_numbers",
    "held_out_loss",
    "hessian_problem",
    "hessian_run",
    "hessian_spectrum",
    "layer_dt",
    "loss_after_steps",
    "loss_drop",
    "max_eta",
    "mean_curve",
    "mean_eta",
    "middle_window",
    "per_seed",
    "phi_callbacks",
    "phi_numbers",
    "phi_runs",
    "power_iteration_runs",
    "probe_run",
    "probe_runs",
    "probe_sections",
    "random_cosine_scale",
    "rank_falls",
    "rolling_runs",
    "rolling_stats",
    "rolling_tail",
    "run_cost",
    "section_runs",
    "source_accuracies",
    "spectrum_numbers",
    "steadier_with_window",
    "step_log",
    "stop_rule_share",
    "table_e",
    "table_runs",
    "train_loss_noise",
    "volatility",
]
