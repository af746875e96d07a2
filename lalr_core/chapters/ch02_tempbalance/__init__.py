"""Chapter 02 (TempBalance, seed 001 ch. 1-2): settings, the runs of every item, summaries and
verdicts.

`settings` holds the allocations, the typed ``Settings`` per profile (smoke / quick = our
reductions on the sklearn digits / paper = the source's CIFAR-100 grid) and
``section_runs``, which turns them into each item's ``RunConfig`` list; `summaries` the run
table and the arithmetic of the checks on spectra and CKA; `verdicts` the accuracy contrasts
judged on 95% intervals and our numbers beside the source's; `claims` every check as data (claim
test or sanity check) and `findings` one function per source item that turns the runs' results
into those checks' findings. The notebook reads them through
``CHAPTER``.
"""

from lalr_core.chapters.ch02_tempbalance import findings
from lalr_core.chapters.ch02_tempbalance.claims import CLAIMS
from lalr_core.chapters.ch02_tempbalance.settings import (
    ALLOCATIONS,
    EXECUTORS,
    FIG23_MAPS,
    FIG24_MAPS,
    POWERS,
    PROFILES,
    SAMPLING,
    Settings,
    all_runs,
    allocation_of,
    run,
    run_cost,
    section_runs,
    train_examples,
)
from lalr_core.chapters.ch02_tempbalance.summaries import (
    cka_contrast,
    exp_vs_normal,
    last_alphas,
    neg_pow2_count_at_least,
    run_table,
)
from lalr_core.chapters.ch02_tempbalance.verdicts import (
    METRICS,
    all_of,
    beside_source,
    contrast,
    delta_gap,
    gap_beside_source,
    paired_deltas,
    seed_means,
    select,
    unit_evidence,
)
from lalr_core.core.runs.chapter import Chapter

# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'n_train', 'epochs', 'cka_samples', 'cka_batches', 'dist_epochs', 'dist_epochs_shown',
    'esd_epochs',
)
# Below smoke's lengths: ResNet-34 at width 2.5 takes minutes a step of smoke's batch on a CPU.
REHEARSAL_VALUES = {"n_train": 8, "batch_size": 8}
CHAPTER = Chapter(id="02", title="TempBalance: layer-wise learning rates from weight spectra",
                  profiles=PROFILES, sections=section_runs, run_cost=run_cost,
                  rehearsal=REHEARSAL, rehearsal_values=REHEARSAL_VALUES)

__all__ = [
    "ALLOCATIONS",
    "CHAPTER",
    "CLAIMS",
    "EXECUTORS",
    "FIG23_MAPS",
    "FIG24_MAPS",
    "METRICS",
    "POWERS",
    "PROFILES",
    "SAMPLING",
    "Settings",
    "all_of",
    "all_runs",
    "allocation_of",
    "beside_source",
    "cka_contrast",
    "contrast",
    "delta_gap",
    "exp_vs_normal",
    "findings",
    "gap_beside_source",
    "last_alphas",
    "neg_pow2_count_at_least",
    "paired_deltas",
    "run",
    "run_cost",
    "run_table",
    "section_runs",
    "seed_means",
    "select",
    "train_examples",
    "unit_evidence",
]
