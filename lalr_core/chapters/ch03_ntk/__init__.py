"""Chapter 03 (linearisation explains fine-tuning, seed 002; NNGP from seed 003): settings per
profile, the regularised LoRA fine-tunings, and the full-batch flows of the theorems.

``settings`` holds the typed `Settings`, ``PROFILES`` and the LoRA placements; ``runs`` the
fine-tunings (and their linearised models) as sections of ``CHAPTER``; ``dynamics`` the
full-batch gradient descent of Theorems 1-5 and the toy slides, and the regularised
objective's minimiser; ``measures`` the per-run numbers; ``claims`` what is tested (``CLAIMS``)
and ``findings`` the verdicts, one function per source item.
"""

from __future__ import annotations

from lalr_core.chapters.ch03_ntk.dynamics import (
    Flow,
    Minimiser,
    Problem,
    flow_problem,
    flow_unit,
    gradient_flow,
    lipschitz_estimates,
    margin_problem,
    perturbed_start,
    regularised_minimiser,
    stable_lr,
    toy_problem,
)
from lalr_core.chapters.ch03_ntk.runs import (
    CHAPTER,
    NLP_TASKS,
    figure_runs,
    finetuning,
    lora_task,
    nlp_runs,
    pretraining,
    selection_runs,
    table_runs,
)
from lalr_core.chapters.ch03_ntk.settings import (
    BASE_SET,
    CANDIDATES,
    DEFAULT_LORA,
    LORA_CONFIGS,
    PROFILES,
    REFERENCE_TABLE,
    SOURCE_LAMBDAS,
    Settings,
)

__all__ = [
    "BASE_SET", "CANDIDATES", "CHAPTER", "DEFAULT_LORA", "LORA_CONFIGS", "NLP_TASKS", "PROFILES",
    "REFERENCE_TABLE", "SOURCE_LAMBDAS", "Flow", "Minimiser", "Problem", "Settings",
    "figure_runs", "finetuning", "flow_problem", "flow_unit",
    "gradient_flow", "lipschitz_estimates", "lora_task", "margin_problem", "nlp_runs",
    "perturbed_start", "pretraining", "regularised_minimiser", "selection_runs", "stable_lr",
    "table_runs", "toy_problem",
]
