"""Chapter 01's runs: every fine-tuning as a labelled run (setting, arm, task, seed), the
sections they form, the callbacks each carries, and the second stage (U-match).

Settings of a run (our protocol P-LALR):

* ``"main"``: ``n_train`` examples, ``epochs`` epochs (X-L2, X-L3, X-L5, X-L12, X-L15 i/iii,
  X-L16, X-L17, X-L18);
* ``"small"``: SENT with ``small_n_train`` examples, ``small_epochs`` epochs (X-L4);
* ``"shift"``: SENT with the lexicon shift (train / val on half the lexicon, test on the
  other half; X-L15 ii);
* ``"probe"``: SENT from the deeper TinyTF's own pretraining (``probe_blocks`` blocks), with
  ridge probes of the [CLS] state after every block (X-L10);
* ``"perturb"``: SENT from a perturbed pretrained start, ``arm`` ``"U/noise"`` etc. (X-L14);
* ``"vision"``: the image transfer setting (`lalr_core.methods.pretrained.vision`), its own task;
* ``"nlp"``: the source's setting, a Hugging Face encoder (``nlp_model``) fine-tuned on GLUE
  SST-2 and CoLA (`lalr_core.methods.pretrained.text.hf`, the optional ``nlp`` extra), if ``nlp_model``.

The main-setting runs of U and of the six phase orders (LALR-REC among them) carry the
per-layer diagnostics (`lalr_core.methods.layer_lr.lalr.diagnostics`: X-L6, X-L7, X-L11, X-L13).

Arms (``ARMS``): ``U`` (AdamW at ``base_lr``), ``LALR-REC`` (our executable
specification, `LALR`'s defaults), ``LALR-AW`` (App. A as written, `LALR.as_written`), ``LARS``,
``LAMB`` (`lalr_core.methods.layer_lr.trust_ratio`), ``TempBalance`` (chapter 02's method at
``base_lr``), the X-L5 phase
schedules (``"svd>ce>cs"`` is LALR-REC itself, the same cached run), the X-L16 / X-L17
variants (metrics once, the text's CS direction, App. A's per-parameter grouping alone) and
X-L18's SENT arms (``SENT_ARMS``: one open choice of the source changed each).

``U-match`` is a second stage: uniform AdamW at ``base_lr * m``, where ``m`` is the mean
``lr_scale`` LALR-REC actually used in that setting and task (`mean_lr_scale`: over the
layers and epochs of its callback table, all seeds), so it needs the LALR-REC runs first.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lalr_core.chapters.ch01_lalr.settings import Settings
from lalr_core.core.runs.chapter import Sections
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.pretrained.text import tasks as text
from lalr_core.methods.pretrained.text.hf import HFSequenceClassificationTask
from lalr_core.chapters.ch01_lalr import transfer
from lalr_core.methods.pretrained import vision
from lalr_core.methods.layer_lr.lalr import LALR
from lalr_core.methods.pretrained.perturb import PERTURBATIONS
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance

U, UMATCH, REC, AW = "U", "U-match", "LALR-REC", "LALR-AW"
VISION = "vision"   # the vision setting's task label
LARS, LAMB, TB = "LARS", "LAMB", "TempBalance"
ONCE, TEXT20, PARAM_AW = "LALR-once", "LALR-text20", "LALR-paramAW"
MAIN_ARMS = (U, REC, AW, LARS, LAMB, TB)           # stage 1 of X-L2 (U-match: stage 2)
ORDERS = tuple(">".join(p) for p in itertools.permutations(("svd", "ce", "cs")))
SINGLES = ("svd-only", "ce-only", "cs-only")
SCHEDULES = ORDERS + SINGLES                          # X-L5; ORDERS[0] == "svd>ce>cs"
VARIANTS = (ONCE, TEXT20, PARAM_AW)                   # X-L16, X-L17
# X-L18 (ours): why LALR-REC sits at chance on SENT. Each arm changes one choice the source
# leaves open, all else LALR-REC: a floor so that no layer is frozen (s_min = 0.1); coarser CE
# histograms with a larger constant (16 bins, eps 1e-3, against 64 and 1e-8); the other CE and
# SVD definitions (softmax of the truncated weights; the mean of the top L - 1 singular
# values); and, not a choice of the source but the direct test of the layer min-max holds
# back, the token embedding kept at the base lr (LALR's ``exclude``).
FLOOR, CE16, CEVAR, TOKU = "LALR-floor", "LALR-ce16", "LALR-softmaxCE", "LALR-tokU"
SENT_ARMS = (FLOOR, CE16, CEVAR, TOKU)
_SENT_LALR = {FLOOR: {"s_min": 0.1}, CE16: {"ce_bins": 16, "ce_eps": 1e-3},
              CEVAR: {"ce_variant": "softmax_trunc", "svd_variant": "top_Lminus1"},
              TOKU: {"exclude": ("encoder.tok_emb",)}}
PROBED = (U, UMATCH, REC)                             # arms whose runs carry "text_splits"
DIAGNOSED = (U, REC, *ORDERS)                         # main-setting arms with diagnostics
SETTINGS = ("main", "small", "shift", "probe", "perturb", "vision", "nlp")
UMATCH_SETTINGS = ("main", "small", "vision", "nlp")  # where U-match runs (stage 2)
NLP_TASKS = ("sst2", "cola")                          # the source's GLUE tasks


@dataclass(frozen=True)
class Run:
    """One labelled fine-tuning: ``section`` (the experiment that plans it), ``setting``,
    ``arm``, ``task``, ``seed`` and its ``config``."""

    section: str
    setting: str
    arm: str
    task: str
    seed: int
    config: RunConfig

    @property
    def key(self) -> tuple[str, str, str]:
        return self.setting, self.arm, self.task


def pretraining(s: Settings, n_blocks: int | None = None) -> RunConfig:
    """The MLM run every fine-tuning starts from (one cached unit, shared); ``n_blocks``:
    X-L10's deeper TinyTF (same corpus, epochs and optimiser)."""
    deeper = {} if n_blocks in (None, text.TextTask.n_blocks) else {"n_blocks": n_blocks}
    return text.pretraining_config(epochs=s.mlm_epochs, n_corpus=s.mlm_corpus,
                                   n_val=s.mlm_heldout, n_test=s.mlm_heldout, **deeper)


def vision_pretraining(s: Settings) -> RunConfig | str:
    """The vision setting's pretraining run, or ``"imagenet"`` (torchvision's weights)."""
    if s.vision_pretrain == "imagenet":
        return vision.IMAGENET
    if s.vision_pretrain == "fashion_mnist":
        return transfer.pretraining_config(
            "fashion_mnist", transfer.FMNIST_SPLIT[0], model=s.vision_model,
            n_train=s.vision_pretrain_n, epochs=s.vision_pretrain_epochs,
            synthetic=s.synthetic)
    # CIFAR-100 -> CIFAR-10 (the paper setting): SGDM with a cosine schedule
    return transfer.pretraining_config(
        "cifar100", None, model=s.vision_model, n_train=s.vision_pretrain_n, n_test=None,
        epochs=s.vision_pretrain_epochs, optimizer="sgdm", lr=0.1, wd=5e-4, batch_size=128,
        schedule="cosine", augment=True, synthetic=s.synthetic)


def pretrainings(s: Settings) -> list[RunConfig]:
    """Every pretraining the chapter's fine-tunings fetch (trained first, in one sweep with
    the ``"weights"`` callback: the same cached units `lalr_core.core.runs.units.pretrained` reads)."""
    out = [pretraining(s), pretraining(s, s.probe_blocks), vision_pretraining(s)]
    return [c for c in dict.fromkeys(out) if isinstance(c, RunConfig)]


def arm_changes(s: Settings, arm: str, umatch_lr: float | None = None) -> dict[str, Any]:
    """The ``RunConfig`` changes of ``arm`` on top of the P-LALR AdamW run.

    Raises:
        ValueError: unknown arm, or ``U-match`` without ``umatch_lr``.
    """
    lalr = {REC: LALR(), AW: LALR.as_written(), ONCE: LALR(recompute="once"),
            TEXT20: LALR(cs_direction="text20"), PARAM_AW: LALR(grouping="named_param_AW")}
    lalr |= {o: LALR(order=tuple(o.split(">"))) for o in ORDERS}
    lalr |= {o: LALR(order=(o.removesuffix("-only"),)) for o in SINGLES}
    lalr |= {a: LALR(**kw) for a, kw in _SENT_LALR.items()}
    if arm in lalr:
        return {"methods": (lalr[arm],)}
    if arm == U:
        return {}
    if arm == UMATCH:
        if umatch_lr is None or not umatch_lr > 0:
            raise ValueError(f"U-match needs its lr (base_lr x LALR-REC's mean scale), "
                             f"got {umatch_lr!r}")
        return {"lr": float(umatch_lr)}
    if arm == LARS:
        return {"optimizer": "lars_po", "lr": s.lars_lr, "momentum": s.lars_momentum,
                "optimizer_params": (("eta", s.lars_eta),)}
    if arm == LAMB:
        return {"optimizer": "lamb", "lr": s.lamb_lr}
    if arm == TB:
        return {"methods": (TempBalance(s.tb_scheme),)}
    raise ValueError(f"unknown arm {arm!r}; known: "
                     f"{(*MAIN_ARMS, UMATCH, *SCHEDULES, *VARIANTS, *SENT_ARMS)}")


def finetuning(s: Settings, arm: str, task: str, seed: int, setting: str = "main",
               umatch_lr: float | None = None) -> RunConfig:
    """The fine-tuning of ``arm`` on ``task`` with ``seed`` in ``setting`` (module docstring)."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; choose one of {SETTINGS}")
    if setting == "vision":
        if task != VISION:
            raise ValueError(f"setting 'vision' has the one task {VISION!r}, got {task!r}")
        cfg = transfer.finetuning_config(
            vision_pretraining(s), seed=seed, epochs=s.vision_epochs, lr=s.base_lr, wd=s.wd,
            batch_size=s.batch_size, n_train=s.vision_n_train, n_val=s.n_val,
            n_test=s.n_test, synthetic=s.synthetic)
        return dataclasses.replace(cfg, **arm_changes(s, arm, umatch_lr))
    if setting == "nlp":
        if not s.nlp_model or task not in NLP_TASKS:
            raise ValueError(f"setting 'nlp' needs nlp_model and a task of {NLP_TASKS}, got "
                             f"{s.nlp_model!r}, {task!r}")
        hf = HFSequenceClassificationTask(model_name=s.nlp_model, dataset=task,
                                          tiny=s.nlp_tiny, n_val=s.n_val,
                                          **({"n_train": s.n_train, "n_test": s.n_test}
                                             if s.nlp_tiny else {}))
        cfg = RunConfig(optimizer="adamw", lr=s.nlp_lr, wd=s.wd, batch_size=s.batch_size,
                        epochs=s.nlp_epochs, seed=seed, task=hf)
        changes = arm_changes(s, arm, umatch_lr)
        return dataclasses.replace(cfg, **changes)
    if setting != "main" and task != "sent":
        raise ValueError(f"setting {setting!r} is SENT only, got task {task!r}")
    n_train, epochs = (s.small_n_train, s.small_epochs) if setting == "small" else \
        (s.n_train, s.epochs)
    pre = pretraining(s, s.probe_blocks if setting == "probe" else None)
    cfg = text.finetuning_config(task, pretrained=pre, seed=seed, epochs=epochs,
                                 lr=s.base_lr, wd=s.wd, batch_size=s.batch_size, n_train=n_train,
                                 n_val=s.n_val, n_test=s.n_test,
                                 lexicon="shift" if setting == "shift" else "all")
    return dataclasses.replace(cfg, **arm_changes(s, arm.split("/")[0], umatch_lr))


def _runs(s: Settings, section: str, setting: str, arms: Iterable[str], tasks: Iterable[str],
          seeds: int) -> list[Run]:
    return [Run(section, setting, arm, task, seed, finetuning(s, arm, task, seed, setting))
            for task in tasks for arm in arms for seed in range(seeds)]


def perturbed_arm(arm: str, kind: str) -> str:
    """X-L14's label of ``arm`` started from perturbation ``kind``: ``"LALR-REC/noise"``."""
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}; known: {PERTURBATIONS}")
    return f"{arm}/{kind}"


def planned_runs(s: Settings) -> list[Run]:
    """Every stage-1 run, labelled (a config may appear under two sections: ``svd>ce>cs`` is
    LALR-REC; `section_runs` and the sweep train it once)."""
    return (_runs(s, "X-L2", "main", MAIN_ARMS, s.tasks, s.seeds)
            + _runs(s, "X-L5", "main", SCHEDULES, s.tasks, s.order_seeds)
            + _runs(s, "X-L16", "main", VARIANTS, s.tasks, s.seeds)
            + _runs(s, "X-L18", "main", SENT_ARMS, ("sent",), s.seeds)
            + _runs(s, "X-L4", "small", (U, REC), ("sent",), s.seeds)
            + _runs(s, "X-L15", "shift", (U, REC), ("sent",), s.seeds)
            + _runs(s, "X-L10", "probe", (U, REC), ("sent",), s.probe_seeds)
            + _runs(s, "X-L14", "perturb", [perturbed_arm(a, k) for a in (U, REC)
                                            for k in PERTURBATIONS], ("sent",), s.perturb_seeds)
            + _runs(s, "vision", "vision", (U, REC), (VISION,), s.vision_seeds)
            + (_runs(s, "nlp", "nlp", (U, REC), NLP_TASKS, s.nlp_seeds) if s.nlp_model else []))


def callbacks_for(s: Settings, run: Run) -> dict[str, dict]:
    """The one rule for a run's callbacks (they are part of its cache key).

    ``"text_splits"`` on the probed arms (U, U-match, LALR-REC, and ``svd>ce>cs``, the same
    run): main setting: the forgetting set ``"mlm"`` and the task's OOD test (X-L3, X-L15);
    small setting: ``"train"`` (accuracy on the training set after each epoch, X-L4) and
    ``"mlm"``. The shifted runs need none (their test split is the shifted one).
    ``"layer_diagnostics"`` on the main-setting runs of U and the six orders (full train loss
    per epoch and per-layer weight statistics), with probes in the ``"probe"`` setting;
    ``"perturb"`` (the perturbation, drawn from the run's seed) in the ``"perturb"`` setting;
    ``"transfer_splits"`` (forgetting of the pretraining classes) in the vision setting.
    """
    task = run.config.task.key()
    if run.setting == "vision":
        forgets = s.vision_pretrain != "imagenet"
        return {"transfer_splits": {"task": task}} if forgets else {}
    if run.setting == "perturb":
        arm, kind = run.arm.split("/")
        return {"perturb": {"kind": kind, "seed": run.seed}}
    if run.setting == "probe":
        return {"layer_diagnostics": {"task": task, "probes": True}}
    out: dict[str, dict] = {}
    if run.arm in PROBED or run.arm == ORDERS[0]:
        if run.setting == "main":
            out["text_splits"] = {"task": task, "splits": ["mlm", text.OOD_SPLITS[run.task]]}
        elif run.setting == "small":
            out["text_splits"] = {"task": task, "splits": ["train", "mlm"]}
    if run.setting == "main" and run.arm in DIAGNOSED:
        out["layer_diagnostics"] = {"task": task}
    return out


def section_runs(s: Settings) -> Sections:
    """Stage 1 by section: section -> (configs, one callbacks spec each)."""
    out: Sections = {}
    for run in planned_runs(s):
        cfgs, cbs = out.setdefault(run.section, ([], []))
        cfgs.append(run.config)
        cbs.append(callbacks_for(s, run))
    return out


def run_cost(cfg: RunConfig) -> float:
    """A rough relative cost (examples x epochs x blocks, LALR's metrics included; an image
    costs as much as 10 sequences, a GLUE sentence through a pretrained encoder 1000),
    longest first."""
    task = cfg.task
    if isinstance(task, vision.ClassSubsetTask):
        size = 10.0 * (cfg.n_train or 50_000)
    elif isinstance(task, HFSequenceClassificationTask):
        size = (1.0 if task.tiny else 1000.0) * (task.n_train or 67_349)
    else:
        size = task.n_train * task.n_blocks / 2
    return float(size * cfg.epochs * (1.2 if cfg.methods else 1.0))


# ----------------------------------------------------------------------------- results
def _unit(config: RunConfig, callbacks: Mapping) -> tuple[RunConfig, str]:
    # a trained unit is its config *and* its callbacks: X-L14's perturbed runs share U's
    # config (the perturbation is a callback), and so do X-L10's probed runs at smoke
    return config, json.dumps(callbacks, sort_keys=True, default=str)


def by_arm(s: Settings, runs: Sequence[Run], configs: Sequence[RunConfig],
           callbacks: Sequence[Mapping], results: Sequence[Mapping]
           ) -> dict[tuple[str, str, str], list[Mapping]]:
    """``(setting, arm, task) -> [result of seed 0, 1, ...]`` from a sweep's configs,
    callbacks and results (each run's result is found by its config and `callbacks_for`).

    Raises:
        ValueError: a run the sweep did not train.
    """
    found = {_unit(c, cb): r for c, cb, r in zip(configs, callbacks, results, strict=True)}
    out: dict[tuple[str, str, str], list[tuple[int, Mapping]]] = {}
    for run in runs:
        unit = _unit(run.config, callbacks_for(s, run))
        if unit not in found:
            raise ValueError(f"no result for {run.key} seed {run.seed}: train it first")
        out.setdefault(run.key, []).append((run.seed, found[unit]))
    return {k: [r for _, r in sorted(v, key=lambda sr: sr[0])] for k, v in out.items()}


def mean_lr_scale(tables: Sequence[pd.DataFrame], epochs: int) -> float:
    """The mean lr multiplier LALR applied: over the rows of its callback tables (one per
    seed) with ``epoch < epochs`` (the last row, fitted after the last epoch, is never used),
    every layer equally weighted, all seeds pooled.

    Layers whose lr stays at ``lr_t`` (LayerNorms, the untagged rest group) are not in the
    tables and do not enter the mean.

    Raises:
        ValueError: no table, or no row before ``epochs``.
    """
    if not tables:
        raise ValueError("need at least one LALR callback table")
    values = np.concatenate([t.loc[t["epoch"] < epochs, "lr_scale"].to_numpy(dtype=float)
                             for t in tables])
    if values.size == 0:
        raise ValueError(f"no callback rows before epoch {epochs}")
    return float(np.mean(values))


def umatch_lrs(s: Settings, results: Mapping[tuple[str, str, str], Sequence[Mapping]]
               ) -> dict[tuple[str, str], float]:
    """``(setting, task) -> base_lr * mean_lr_scale`` of LALR-REC's runs there."""
    out = {}
    epochs_of = {"main": s.epochs, "small": s.small_epochs, "vision": s.vision_epochs,
                 "nlp": s.nlp_epochs}
    for (setting, arm, task), res in results.items():
        if arm == REC and setting in UMATCH_SETTINGS:
            epochs = epochs_of[setting]
            out[(setting, task)] = s.base_lr * mean_lr_scale(
                [r["callbacks"]["lalr"] for r in res], epochs)
    return out


def umatch_runs(s: Settings, lrs: Mapping[tuple[str, str], float]) -> list[Run]:
    """Stage 2: U-match in every ``(setting, task)`` of ``lrs`` (`umatch_lrs`), same seeds as
    LALR-REC there."""
    section = {"main": "X-L2", "small": "X-L4", "vision": "vision", "nlp": "nlp"}
    seeds = {"vision": s.vision_seeds, "nlp": s.nlp_seeds}
    return [Run(section[setting], setting, UMATCH, task, seed,
                finetuning(s, UMATCH, task, seed, setting, umatch_lr=lr))
            for (setting, task), lr in lrs.items() for seed in range(seeds.get(setting, s.seeds))]
