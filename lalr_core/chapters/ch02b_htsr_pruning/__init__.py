"""Chapter 02b (seed 001 ch. 3, HT-SR-metric-guided channel pruning): settings, runs, summaries.

Pipeline of the source: pretrain (traditional augmentation or AugMix) -> per-layer pruning
budgets from an HT-SR metric of the pretrained conv weights (`pruning.layer_budgets`, Table 3.1
settings) -> mask channels (ME-Prune scores) -> finetune with lr0 0.05 cosine, with a global lr
or TempBalance's alpha-weighted layer-wise lrs (eq. 2.13). `settings` holds the names and the
typed ``Settings`` per profile (smoke / quick = our reductions on sklearn digits /
paper = CIFAR-100 and the source's models). Pretraining is one sweep (the chapter's only section
known up front); the budgets need its weights, so every finetuning run is built from
`plans.metric_tables` afterwards (`plans.finetune_plan`). `summaries` holds the checks'
arithmetic (run tables, transition-layer ranks, rebound detection, lr extremes);
`verdicts` judges accuracy comparisons between runs on paired-bootstrap intervals over the shared
test examples (metric budgets vs uniform pruning at the same size, TempBalance vs the global lr);
`claims` keeps every check as data (claim test or sanity check) and `findings` has one function
per source item that turns the runs' results into those checks' findings.
"""

from lalr_core.chapters.ch02b_htsr_pruning import findings
from lalr_core.chapters.ch02b_htsr_pruning.claims import CLAIMS
from lalr_core.chapters.ch02b_htsr_pruning.plans import (
    all_finetunes,
    budget_grid,
    fig31_table,
    finetune_plan,
    finetune_spec,
    init_tables,
    layer_table,
    max_abs_zscore,
    metric_tables,
    pretrain_config,
    pretrain_pairs,
    pretrain_runs,
    pretrain_unit,
    pretrained_model,
    ranks_of,
    ratios_for,
    rule_correlations,
    sections,
    transition_layers,
)
from lalr_core.chapters.ch02b_htsr_pruning.quotes import QUOTES
from lalr_core.chapters.ch02b_htsr_pruning.settings import (
    AUGS,
    EXECUTORS,
    GRID_FIGS,
    HYBRID,
    METRICS,
    PROFILES,
    ROLES,
    SCALE,
    SETTINGS,
    SHAPE,
    SOURCE_MODELS,
    UNIFORM,
    Settings,
    setting,
    settings_table,
)
from lalr_core.chapters.ch02b_htsr_pruning.summaries import (
    alpha_gap,
    largest_lr_shift,
    layer_means,
    lr_extremes,
    rebound,
    rebound_mitigated,
    rebound_rise,
    run_table,
    slimmed_remaining,
)
from lalr_core.chapters.ch02b_htsr_pruning.verdicts import (
    GROUPS,
    all_of,
    best_run,
    contrast,
    example_correct,
    gain_contrast,
    gain_table,
    lr_evidence,
    lr_gains,
    lr_range_contrast,
    matched_uniform,
    pipelines,
    runs_of,
    seeds_of,
    share_difference,
    uniform_at,
    uniform_curve,
    versus_range,
    versus_uniform,
)
from lalr_core.core.runs.chapter import Chapter

# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'n_train', 'pretrain_epochs', 'f33_epochs', 'vgg_epochs', 'f322_epochs', 'f326_epochs',
)
# Below smoke's lengths: WRN-28-10 takes minutes a step of smoke's batch on a CPU, and each
# of the ~590 fine-tunings' slimmed size is a forward pass over `slim_samples` inputs.
REHEARSAL_VALUES = {"n_train": 8, "batch_size": 8, "slim_samples": 2}
CHAPTER = Chapter(id="02b", title="HT-SR metrics as channel-pruning budgets; layer-wise lrs "
                  "after pruning", profiles=PROFILES, sections=sections,
                  rehearsal=REHEARSAL, rehearsal_values=REHEARSAL_VALUES)

__all__ = [
    "AUGS",
    "CHAPTER",
    "CLAIMS",
    "EXECUTORS",
    "GRID_FIGS",
    "GROUPS",
    "HYBRID",
    "METRICS",
    "PROFILES",
    "QUOTES",
    "ROLES",
    "SCALE",
    "SETTINGS",
    "SHAPE",
    "SOURCE_MODELS",
    "UNIFORM",
    "Settings",
    "all_finetunes",
    "all_of",
    "alpha_gap",
    "best_run",
    "budget_grid",
    "contrast",
    "example_correct",
    "fig31_table",
    "findings",
    "finetune_plan",
    "finetune_spec",
    "gain_contrast",
    "gain_table",
    "init_tables",
    "largest_lr_shift",
    "layer_means",
    "layer_table",
    "lr_evidence",
    "lr_extremes",
    "lr_gains",
    "lr_range_contrast",
    "matched_uniform",
    "max_abs_zscore",
    "metric_tables",
    "pipelines",
    "pretrain_config",
    "pretrain_pairs",
    "pretrain_runs",
    "pretrain_unit",
    "pretrained_model",
    "ranks_of",
    "ratios_for",
    "rebound",
    "rebound_mitigated",
    "rebound_rise",
    "rule_correlations",
    "run_table",
    "runs_of",
    "sections",
    "seeds_of",
    "setting",
    "settings_table",
    "share_difference",
    "slimmed_remaining",
    "transition_layers",
    "uniform_at",
    "uniform_curve",
    "versus_range",
    "versus_uniform",
]
