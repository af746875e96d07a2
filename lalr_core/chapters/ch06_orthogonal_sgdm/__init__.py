"""Chapter 06 (orthogonal SGDM, seed 004 ch. 5): settings per profile, the runs of every item,
and the summaries the notebook reads.

``settings`` holds the typed `Settings` and ``PROFILES`` (``paper`` = the source's setting,
``quick`` = our reduction on Fashion-MNIST, ``smoke`` = the same code on
synthetic data in seconds); ``runs`` the builders that turn settings into ``RunConfig`` lists,
section by section; ``summaries`` the tables and the source's numbers; ``verdicts`` the
intervals behind each check and how a claim over several models combines them; ``claims`` the
checks as data (claim tests and sanity checks, the source's sentences and effects) and
``findings`` one function per source item that judges them. ``CHAPTER``
ties them together (``CHAPTER.all_runs(settings)`` is the one sweep of every section).
"""

from __future__ import annotations

from lalr_core.chapters.ch06_orthogonal_sgdm.runs import (
    TABLE51_BASES,
    VARIANTS,
    ablation_configs,
    null_configs,
    barlow_twins_configs,
    fig57_configs,
    is_orthogonalised,
    probe_callbacks,
    run_cost,
    section_runs,
    suite_configs,
    table51_configs,
    table54_configs,
    untuned,
    vae_configs,
    with_probes,
)
from lalr_core.chapters.ch06_orthogonal_sgdm.settings import PROFILES, Settings
from lalr_core.chapters.ch06_orthogonal_sgdm.summaries import (
    beside_source,
    epochs_to_reach,
    mean_se,
    read_source,
    run_table,
    running_mean,
    variant_of,
)
from lalr_core.chapters.ch06_orthogonal_sgdm.verdicts import (
    IMAGENET_VAL_IMAGES,
    bootstrap_range_difference,
    centre_shift,
    epochs_to_mark,
    every,
    grid_range_difference,
    has_batch_norm,
    log2_ratio,
    most,
    results_by,
    run_difference,
    run_value,
    slope,
    texts,
    vs_source,
)
from lalr_core.core.runs.chapter import Chapter

# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'n_train', 'n_val', 'n_test', 'batch_size', 'epochs', 'f53_mark', 't51_epochs',
    't51_milestones', 't54_epochs', 'f57_n_val', 'f57_batch', 'f57_eval_every', 'bt_steps',
    'bt_batch', 'vae_steps', 'vae_eval_every', 'cos_epochs', 'cos_every', 'rep_every',
    'f514_batches', 'f514_n_train', 'f514_epochs', 'sym_epochs', 'sym_every', 'sym_skip',
    'null_steps', 'null_f32_steps',
)
# Below smoke's lengths: the torchvision ResNet-50s and DenseNets
# take minutes a step of smoke's batch on a CPU.
REHEARSAL_VALUES = {"n_train": 128}  # >= every batch (the P-VAE's is 128)
CHAPTER = Chapter(id="06", title="Orthogonal SGDM: orthogonalising gradients per layer",
                  profiles=PROFILES, sections=section_runs, run_cost=run_cost,
                  rehearsal=REHEARSAL, rehearsal_values=REHEARSAL_VALUES)

__all__ = [
    "CHAPTER", "PROFILES", "TABLE51_BASES", "VARIANTS", "Settings", "ablation_configs", "null_configs",
    "barlow_twins_configs", "beside_source", "epochs_to_reach", "fig57_configs",
    "is_orthogonalised", "mean_se", "probe_callbacks", "read_source", "run_cost", "run_table",
    "running_mean", "section_runs", "suite_configs", "table51_configs", "table54_configs",
    "untuned", "vae_configs", "variant_of", "with_probes",
    # verdicts: intervals and how a claim over several parts combines them
    "IMAGENET_VAL_IMAGES", "bootstrap_range_difference", "centre_shift", "epochs_to_mark", "every",
    "grid_range_difference", "has_batch_norm", "log2_ratio", "most", "results_by",
    "run_difference", "run_value", "slope", "texts", "vs_source",
]
