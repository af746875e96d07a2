"""Chapter 03's training runs: regularised LoRA fine-tunings of the pretrained TinyTF (and of
their linearised models), the sections they form, and ``CHAPTER``.

Every fine-tuning is the run of `finetuning`: chapter 01's cached MLM pretraining (the same
unit, `pretraining`), LoRA on ``targets`` plus the head (`lalr_core.methods.pretrained.lora` through the
``"transformed"`` task), AdamW without weight decay and, for lambda > 0, the selective pull
toward theta_0 (`lalr_core.methods.pretrained.proximal`). lambda = 0 is plain AdamW.
With ``linearised`` the model trained is the first-order Taylor model of that LoRA model at
theta_0 (`lalr_core.methods.ntk.empirical`, transform ``"linearise"``), trained with the same optimiser,
initialisation and data order (Theorem 3's linearised model). Every run keeps its final weights (callback
``"weights"``), from which the notebook computes distances, linearisation errors and KL.

Sections: ``"T1"`` (table T-002-1: tasks x lambdas x seeds), ``"T1b"`` (the linearised models
of ``lin_lambdas``), ``"Fa"`` (fig (a)-(c): four tasks and six LoRA placements at
``fig_lambda``), ``"Sel"`` (the layer-selection runs: the base set and each candidate added),
``"nlp"`` (the source's setting, a Hugging Face encoder on GLUE, if ``nlp_model``).
"""

from __future__ import annotations

from lalr_core.chapters.ch03_ntk.settings import (
    BASE_SET,
    CANDIDATES,
    DEFAULT_LORA,
    LORA_CONFIGS,
    PROFILES,
    Settings,
)
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.runs.chapter import Chapter, Sections
from lalr_core.methods.ntk import empirical as ntk  # noqa: F401  (registers the "linearise" transform)
from lalr_core.methods.pretrained.proximal import ProximalPull
from lalr_core.methods.pretrained.text import tasks as text
from lalr_core.methods.pretrained.text.hf import HFSequenceClassificationTask
from lalr_core.methods.pretrained.transforms import TransformedTask

WEIGHTS = {"weights": {}}   # every fine-tuning keeps its final weights
NLP_TASKS = ("sst2", "cola")
# LoRA on a Hugging Face encoder (BERT / RoBERTa module names): query and value, + classifier
NLP_TARGETS = ("*.attention.self.query", "*.attention.self.value")


def pretraining(s: Settings) -> RunConfig:
    """Chapter 01's MLM run (the same cached unit: same corpus, epochs and optimiser)."""
    return text.pretraining_config(epochs=s.mlm_epochs, n_corpus=s.mlm_corpus,
                                   n_val=s.mlm_heldout, n_test=s.mlm_heldout)


def lora_task(s: Settings, task: str, targets: tuple[str, ...] | None = None,
              linearised: bool = False) -> TransformedTask:
    """The fine-tuning task: ``task`` from the pretrained TinyTF, LoRA on ``targets`` (default
    placement: q and v of both blocks) and the head; ``linearised``: its Taylor model."""
    base = text.SequenceClassificationTask.from_pretrained(
        pretraining(s), dataset=task, n_train=s.n_train, n_val=s.n_val, n_test=s.n_test)
    lora = TransformedTask(base=base, transform="lora", options={
        "targets": targets or LORA_CONFIGS[DEFAULT_LORA], "rank": s.lora_rank,
        "alpha": s.lora_alpha, "train": ("head",)})
    return TransformedTask(base=lora, transform="linearise") if linearised else lora


def _methods(lam: float) -> tuple:
    return (ProximalPull(lam=lam, mode="selective"),) if lam > 0 else ()


def finetuning(s: Settings, task: str, lam: float, seed: int, *,
               targets: tuple[str, ...] | None = None, linearised: bool = False) -> RunConfig:
    """One regularised LoRA fine-tuning (module docstring)."""
    return RunConfig(optimizer="adamw", lr=s.lr, wd=0.0, batch_size=s.batch_size,
                     epochs=s.epochs, seed=seed, methods=_methods(lam),
                     task=lora_task(s, task, targets, linearised))


def nlp_finetuning(s: Settings, task: str, lam: float, seed: int) -> RunConfig:
    """The source's setting: ``nlp_model`` with LoRA on query / value and its classifier."""
    hf = HFSequenceClassificationTask(model_name=s.nlp_model, dataset=task, tiny=s.nlp_tiny,
                                      n_val=s.n_val,
                                      **({"n_train": s.n_train, "n_test": s.n_test}
                                         if s.nlp_tiny else {}))
    lora = TransformedTask(base=hf, transform="lora", options={
        "targets": NLP_TARGETS, "rank": s.lora_rank, "alpha": s.lora_alpha,
        "train": ("classifier",)})
    return RunConfig(optimizer="adamw", lr=s.nlp_lr, wd=0.0, batch_size=s.batch_size,
                     epochs=s.nlp_epochs, seed=seed, methods=_methods(lam), task=lora)


# ----------------------------------------------------------------------------- sections
def table_runs(s: Settings, linearised: bool = False) -> dict[tuple[str, float, int], RunConfig]:
    """Table T-002-1: ``(task, lambda, seed) -> config`` (``t1_seeds`` seeds); ``linearised``:
    E-002-T1b's (``lin_lambdas``, the same ``t1_seeds`` seeds: each pairs with its table run)."""
    lams = s.lin_lambdas if linearised else s.lambdas
    return {(task, lam, seed): finetuning(s, task, lam, seed, linearised=linearised)
            for task in s.tasks for lam in lams for seed in range(s.t1_seeds)}


def figure_runs(s: Settings) -> dict[tuple[str, str, int], RunConfig]:
    """Fig (a)-(c)'s ten settings: ``(task, LoRA placement, seed) -> config`` at
    ``fig_lambda``; the four tasks with the default placement, then the placements on SENT."""
    keys = [(task, DEFAULT_LORA) for task in s.fig_tasks]
    keys += [("sent", name) for name in LORA_CONFIGS if name != DEFAULT_LORA]
    return {(task, name, seed): finetuning(s, task, s.fig_lambda, seed,
                                           targets=LORA_CONFIGS[name])
            for task, name in keys for seed in range(s.seeds)}


def selection_runs(s: Settings) -> dict[tuple[str, int], RunConfig]:
    """E-002-Sel: ``(set, seed) -> config`` on SENT at ``fig_lambda``; set ``"base"`` or a
    candidate's name (the base set with the candidate's LoRA added)."""
    sets = {"base": BASE_SET, **{name: BASE_SET + extra for name, extra in CANDIDATES.items()}}
    return {(name, seed): finetuning(s, "sent", s.fig_lambda, seed, targets=targets)
            for name, targets in sets.items() for seed in range(s.seeds)}


def nlp_runs(s: Settings) -> dict[tuple[str, float, int], RunConfig]:
    """The source's setting: ``(GLUE task, lambda, seed) -> config`` (empty without a model)."""
    if not s.nlp_model:
        return {}
    return {(task, lam, seed): nlp_finetuning(s, task, lam, seed)
            for task in NLP_TASKS for lam in s.lambdas for seed in range(s.nlp_seeds)}


def section_runs(s: Settings) -> Sections:
    sections = {"T1": table_runs(s), "T1b": table_runs(s, linearised=True),
                "Fa": figure_runs(s), "Sel": selection_runs(s), "nlp": nlp_runs(s)}
    return {name: (list(runs.values()), [WEIGHTS] * len(runs))
            for name, runs in sections.items() if runs}


def run_cost(cfg: RunConfig) -> float:
    """Relative cost: epochs x examples; a linearised model's step is ~3 passes."""
    factor = 3.0 if cfg.task.transform == "linearise" else 1.0
    return cfg.epochs * factor


# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'mlm_epochs', 'mlm_corpus', 'mlm_heldout', 'n_train', 'n_val', 'n_test', 'epochs',
    'ntk_n', 'th_n', 'th_steps', 'toy_steps', 'nngp_seeds', 'nlp_tiny', 'nlp_epochs',
)
# Below smoke's lengths: each step of a full-batch flow is a float64 forward and backward of
# the paper's TinyTF, and each logged step a Jacobian (14 flows of 50 steps: 11 min, shared).
REHEARSAL_VALUES = {"th_steps": 10}
CHAPTER = Chapter(id="03", title="Linearisation explains fine-tuning (NTK, regularised "
                  "fine-tuning, kernel ridge)", profiles=PROFILES, sections=section_runs,
                  run_cost=run_cost,
                  rehearsal=REHEARSAL, rehearsal_values=REHEARSAL_VALUES)
