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

The package: ``settings`` (the arms' names, `Settings`, ``PROFILES``), ``runs`` (every
section's configs and callbacks, ``CHAPTER``), ``numbers`` (the per-run quantities the checks
judge). Their public names are re-exported here.
"""

from lalr_core.chapters.ch05_quasi_newton.numbers import (
    cohesion_numbers,
    crossover_epoch,
    diverged,
    final_accuracy,
    final_loss,
    held_out_loss,
    layer_dt,
    loss_after_steps,
    per_seed,
    phi_numbers,
    step_log,
    volatility,
)
from lalr_core.chapters.ch05_quasi_newton.runs import (
    CHAPTER,
    PROBE,
    cohesion_callbacks,
    cohesion_runs,
    fig46_runs,
    fig410_epochs,
    fig410_runs,
    fig410_train_size,
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
    PROFILES,
    QN,
    REFERENCE_TABLE,
    TABLE_ARMS,
    Settings,
)

__all__ = [
    "ALG5", "ARMS", "CHAPTER", "PROBE", "PROFILES", "QN", "REFERENCE_TABLE", "TABLE_ARMS",
    "Settings", "cohesion_callbacks", "cohesion_numbers", "cohesion_runs", "crossover_epoch",
    "diverged", "fig46_runs", "fig410_epochs", "fig410_runs", "fig410_train_size",
    "fig420_runs", "final_accuracy", "final_loss", "held_out_loss", "hessian_run",
    "layer_dt", "loss_after_steps", "per_seed", "phi_callbacks", "phi_numbers", "phi_runs",
    "probe_run", "probe_runs", "probe_sections", "run_cost", "section_runs", "step_log",
    "table_runs", "volatility",
]
