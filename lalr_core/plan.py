"""The dry run of ``make figures``: every run of the chosen chapters, checked and costed, none
trained.

``make figures PROFILE=paper CHAPTERS=04 DRY_RUN=1`` (``python -m lalr_core.driver ...
--dry-run``) calls `dry_run`. For each chapter it builds the settings and every run config of
its sections (`lalr_core.core.runs.chapter.Chapter.all_runs`), plus the pretraining runs those
fetch (a task's ``pretrained`` config: trained on a cache miss, once), and for each distinct
model (task, model, width, dataset, batch size):

* builds the model on the **meta** device (no memory, no compute; on the CPU only where meta
  fails, which the plan says), without pretrained weights (nothing is downloaded or trained:
  the architecture is the same);
* counts its parameters and, with `torch.utils.flop_counter.FlopCounterMode`, the FLOPs of one
  forward (matrix products and convolutions; elementwise ops are not counted); training an
  example costs 3 forwards (forward + backward), evaluating it one;
* estimates peak GPU memory: weights + gradients + optimiser state (`STATE_COPIES`) +
  activations (the outputs of every leaf module in one training forward at the run's batch
  size, halved under ``bf16``) + the device-resident dataset (float32 images). The CUDA
  context (~0.5 GiB) and allocator slack are not included.

GPU time: ``epochs x (3 n_train + n_eval) x forward FLOPs per example x seconds per FLOP``,
with seconds per FLOP calibrated on our loop's measured epoch (`CALIBRATION`: ResNet-20 on
50,000 CIFAR-10 images at batch 1024, 0.57 s float32, 0.46 s bf16 on one H200). It is rough,
+-2x: one model's throughput stands for every architecture, and callbacks (trajectory,
spectra, probes) and augmentation are not modelled; a step with few FLOPs (a small batch or
model) is launch-bound, so its estimate is a lower bound (marked ``>``). A failed build or an
invalid config is recorded for its runs (or its chapter), never raised. Work outside the
shared loop's runs is listed as not estimated.

Data: whether each dataset is present under the data root, or what ``make data`` would do to
get it; nothing is downloaded, gunzipped or installed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from lalr_core.chapters import chapter, prepared_datasets
from lalr_core.core.atomic_io import atomic_write_text
from lalr_core.core.data import (
    DATASETS,
    DEBIAN_FASHION_MNIST_DIR,
    SYNTHETIC_SIZES,
    DatasetMissingError,
    data_root,
    ensure_dataset,
)
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.tasks import ImageClassification
from lalr_core.core.results.writer import default_root
from lalr_core.core.runs.cache import RunCache
from lalr_core.core.runs.chapter import Chapter
from lalr_core.core.runs.units import is_trained, pretraining_unit
from lalr_core.methods.pretrained.text.corpus import LONG_LENGTH, SHORT
from lalr_core.methods.pretrained.text.hf import TINY_SPLIT, HFSequenceClassificationTask
from lalr_core.methods.pretrained.text.tasks import MLMTask, SequenceClassificationTask

# Our loop's measured epoch (benchmarks/measured/bench_gpu_epoch_h200_2026-11-26.json): ResNet-20,
# 50,000 CIFAR-10-shaped images at batch 1024 + 1,000 test images evaluated, crop + flip, SGDM.
CALIBRATION = {"device": "NVIDIA H200", "model": "resnet20", "dataset": "cifar10",
               "batch_size": 1024, "n_train": 50_000, "n_eval": 1_000,
               "s_per_epoch": 0.570, "s_per_epoch_bf16": 0.456,
               "record": "benchmarks/measured/bench_gpu_epoch_h200_2026-11-26.json"}
# Optimiser state per parameter, in copies of the parameters (torch.optim and the methods'
# optimisers); "classes": one gradient EMA per class (methods.quasi_newton). Muon: one momentum
# buffer on its hidden matrices (the AdamW part's two moments are on the few other weights).
STATE_COPIES = {"sgd": 0, "alg5_sgd": 0, "sgdm": 1, "lars": 1, "lars_po": 1, "adam": 2,
                "adamw": 2, "lamb": 2, "muon": 1, "qn_class_subspace": "classes"}
ASSUMED_STATE_COPIES = 2   # an optimiser not in STATE_COPIES (Adam's)
SMALL_STEP = 0.1           # a step below this share of the calibration step's FLOPs is
                           # launch-bound on a GPU: its estimate is a lower bound
GPU_MEMORY_GIB = 80        # an H100's memory: a run estimated above it is flagged
CPU_BATCH = 2              # batch of the CPU fallback's forward (activations scaled up)
GIB = 2 ** 30
# Work of each chapter outside `Chapter.all_runs` (what its notebook computes otherwise).
OTHER_WORK = {
    "01": "stage 2, the U-match fine-tunings (built from stage 1's LALR results), and the "
          "per-layer diagnostics",
    "02b": "every prune-then-finetune run (plans.finetune_plan: built from the pretrained "
           "weights' HT-SR metrics, so known only after pretraining)",
    "03": "the full-batch flows of Theorems 1-5 (dynamics.flow_unit, a runs.sweep of cached "
          "units) and the per-run NTK measures",
    "04": "seed 003's E13 batch size x lr grid (methods.batch_scaling, a small teacher task), "
          "the random-walk simulations and the Monte-Carlo listings",
    "05": "the known-matrix experiments (listing F.1, appendix H) and the test functions",
    "05b": "all of it: the lecture notes' second-order toys (Newton, Gauss-Newton, natural "
           "gradient, damping and saddles, sharpness vs batch size) train no network through "
           "the shared loop",
    "06": "figs 5.7 and 5.8 on ImageNet (imagenet.classifier_unit, barlow_twins_unit; ImageNet "
          "is not fetched by make data) and the fig 5.8 / 5.9 Barlow Twins and Poisson VAE runs",
    "07": "all of it: no network is trained through the shared loop (NNGP, mean-field maps, "
          "random nets at initialisation, the trainability grid, rank collapse); at paper, "
          "E3's trainability grid (9 sigma_w^2 x 8 depths up to 150 x 5 seeds x 1000 steps) "
          "is about half an hour of a CPU core (its 9 cells of a depth train side by side: "
          "~0.7 ms a layer and step, measured by benchmarks/bench_trainability.py)",
}


class NotEstimated(Exception):
    """A run the dry run cannot cost without downloading or training (not a failure)."""


# ----------------------------------------------------------------------------- tasks
def _fields(task) -> set[str]:
    return {f.name for f in dataclasses.fields(task)} if dataclasses.is_dataclass(task) else set()


def _innermost(task):
    """The task whose data and inputs a run uses (a ``transformed`` task's ``base``)."""
    return _innermost(task.base) if "base" in _fields(task) else task


def without_pretrained(task):
    """``task`` with no ``pretrained`` weights (at any depth): the same architecture, built
    without fetching (or training) the pretraining."""
    changes = {}
    if "pretrained" in _fields(task) and task.pretrained is not None:
        changes["pretrained"] = None
    if "base" in _fields(task):
        changes["base"] = without_pretrained(task.base)
    return dataclasses.replace(task, **changes) if changes else task


def pretrainings(task) -> list[RunConfig]:
    """The runs ``task`` fetches from the cache (trained there on a miss), deepest first."""
    found = []
    if "base" in _fields(task):
        found += pretrainings(task.base)
    if "pretrained" in _fields(task) and isinstance(task.pretrained, RunConfig):
        found += [*pretrainings(task.pretrained.task), task.pretrained]
    return found


def example_inputs(cfg: RunConfig, batch: int, device: str) -> tuple[tuple, dict]:
    """``(args, kwargs)`` of the model's forward on one training batch of ``batch`` examples.

    Raises:
        NotEstimated: a task without a known input, or a model from the Hugging Face hub.
    """
    task = _innermost(cfg.task)
    if isinstance(task, ImageClassification):
        return (torch.zeros(batch, *cfg.image_shape, device=device),), {}
    if isinstance(task, MLMTask):  # half the corpus at length 16, half at 48: the longer
        return (torch.zeros(batch, LONG_LENGTH, dtype=torch.long, device=device),), {}
    if isinstance(task, SequenceClassificationTask):
        length = SHORT if task.dataset in ("sent", "acc") else LONG_LENGTH
        return (torch.zeros(batch, length, dtype=torch.long, device=device),), {}
    if isinstance(task, HFSequenceClassificationTask):
        if not task.tiny:
            raise NotEstimated(f"its model {task.model_name!r} and GLUE {task.dataset} come "
                               f"from the Hugging Face hub; a dry run downloads nothing")
        ids = torch.zeros(batch, task.max_length, dtype=torch.long, device=device)
        return (), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    raise NotEstimated(f"the dry run knows no input of task {task.name!r}")


def epoch_examples(cfg: RunConfig) -> tuple[int, int]:
    """``(trained, evaluated)`` examples per epoch: the train split, and val + test (plus the
    validation passes every ``eval_every_steps``)."""
    task = _innermost(cfg.task)
    if isinstance(task, MLMTask):
        return task.n_corpus, task.n_val + task.n_test
    if isinstance(task, (SequenceClassificationTask, HFSequenceClassificationTask)):
        n_test = task.n_test or TINY_SPLIT
        return task.n_train or TINY_SPLIT, task.n_val + n_test
    spec = DATASETS[cfg.dataset]
    classes = getattr(task, "classes", None)
    share = len(classes) / spec.num_classes if classes else 1.0
    train_avail, test_avail = SYNTHETIC_SIZES if cfg.synthetic else \
        (round(spec.train_size * share), round(spec.test_size * share))
    n_train = cfg.n_train if cfg.n_train is not None else train_avail - cfg.n_val
    n_eval = cfg.n_val + (cfg.n_test if cfg.n_test is not None else test_avail)
    if cfg.eval_every_steps:
        n_eval += math.ceil(n_train / cfg.batch_size) // cfg.eval_every_steps * cfg.n_val
    return n_train, n_eval


def labels(cfg: RunConfig) -> tuple[str, str]:
    """``(model, dataset)`` as the table shows them."""
    task = _innermost(cfg.task)
    if isinstance(task, (MLMTask, SequenceClassificationTask)):
        model = f"tinytf d{task.d_model} x{task.n_blocks}"
        data = "text corpus" if isinstance(task, MLMTask) else f"text {task.dataset}"
    elif isinstance(task, HFSequenceClassificationTask):
        model = task.model_name + (" (tiny)" if task.tiny else "")
        data = f"glue {task.dataset}" + (" (tiny)" if task.tiny else "")
    else:
        model = cfg.model + (f" w{cfg.width:g}" if cfg.width != 1 else "")
        data = cfg.dataset + (" (synthetic)" if cfg.synthetic else "")
        if getattr(task, "classes", None):
            data += f" {len(task.classes)} cl."
    if "transform" in _fields(cfg.task):
        model += f" +{cfg.task.transform}"
    return model, data


# ----------------------------------------------------------------------------- one model
def _tensors(value) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def measure_forward(model: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[float, int]:
    """``(FLOPs, activation bytes)`` of one training-mode forward of ``model``.

    FLOPs: `FlopCounterMode`'s count (2 per multiply-add of matrix products and convolutions).
    Activation bytes: the outputs of every leaf module (containers would count their
    children's outputs twice; an in-place output once).
    """
    outputs: dict[int, torch.Tensor] = {}

    def keep(module, inputs, output):
        outputs.update((id(t), t) for t in _tensors(output))

    leaves = [m for m in model.modules() if next(m.children(), None) is None]
    handles = [m.register_forward_hook(keep) for m in leaves]
    model.train()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return float(counter.get_total_flops()), sum(t.numel() * t.element_size()
                                                 for t in outputs.values())


def state_copies(cfg: RunConfig) -> float | None:
    """Optimiser state per parameter (`STATE_COPIES`); None for an optimiser not listed."""
    copies = STATE_COPIES.get(cfg.optimizer)
    if copies == "classes":
        task = _innermost(cfg.task)
        return float(task.num_classes(cfg) if hasattr(task, "num_classes")
                     else DATASETS[cfg.dataset].num_classes)
    return copies


def _build_and_measure(cfg: RunConfig, device: str, batch: int) -> dict[str, Any]:
    task = without_pretrained(cfg.task)
    args, kwargs = example_inputs(cfg, batch, device)
    with torch.random.fork_rng(devices=[]), torch.device(device):
        model = task.build_model(cfg)
    flops, act = measure_forward(model, args, kwargs)
    return {"params": sum(p.numel() for p in model.parameters()),
            "flops": flops / batch, "act_bytes": act * cfg.batch_size / batch}


def probe(cfg: RunConfig) -> dict[str, Any]:
    """The run's model measured: ``params``, ``flops`` (forward, per example), ``act_bytes``
    (one training batch, float32), ``on`` (``"meta"`` or ``"cpu"``) and ``note``.

    Raises:
        NotEstimated: see `example_inputs`.
        Exception: whatever building or running the model raised on the CPU too.
    """
    example_inputs(cfg, 1, "meta")  # NotEstimated before any build
    try:
        return {**_build_and_measure(cfg, "meta", cfg.batch_size), "on": "meta", "note": ""}
    except NotEstimated:
        raise
    except Exception as exc:  # noqa: BLE001 - meta is an optimisation: try the CPU
        why = f"{type(exc).__name__}: {exc}"
    found = _build_and_measure(cfg, "cpu", min(CPU_BATCH, cfg.batch_size))
    return {**found, "on": "cpu", "note": f"built on the CPU (meta failed: {why[:200]})"}


def probe_key(cfg: RunConfig) -> str:
    """What determines the model and one batch's shape (not the optimiser or the seed)."""
    task = without_pretrained(cfg.task)
    return json.dumps([task.key(), cfg.model, cfg.width, cfg.dataset, cfg.batch_size],
                      sort_keys=True, default=str)


# ----------------------------------------------------------------------------- cost
def _reference() -> RunConfig:
    c = CALIBRATION
    return RunConfig(dataset=c["dataset"], model=c["model"], batch_size=c["batch_size"],
                     n_train=c["n_train"], n_val=0, n_test=c["n_eval"], epochs=1)


def seconds_per_flop(reference_flops: float) -> float:
    """Calibration: the measured epoch over its FLOPs (``3 n_train + n_eval`` forwards)."""
    c = CALIBRATION
    return c["s_per_epoch"] / ((3 * c["n_train"] + c["n_eval"]) * reference_flops)


def gpu_seconds(cfg: RunConfig, flops: float, s_per_flop: float) -> float:
    """Estimated seconds of the run on one H200 (forward ``flops`` per example)."""
    n_train, n_eval = epoch_examples(cfg)
    bf16 = CALIBRATION["s_per_epoch_bf16"] / CALIBRATION["s_per_epoch"] if cfg.bf16 else 1.0
    return cfg.epochs * (3 * n_train + n_eval) * flops * s_per_flop * bf16


def memory_bytes(cfg: RunConfig, found: dict, copies: float) -> dict[str, float]:
    """Peak GPU memory of the run by part (bytes); weights stay float32 under bf16."""
    n_train, _ = epoch_examples(cfg)
    data = 0.0
    if isinstance(_innermost(cfg.task), ImageClassification):  # float32 tensors on the device
        n_test = cfg.n_test if cfg.n_test is not None else DATASETS[cfg.dataset].test_size
        data = (n_train + cfg.n_val + n_test) * math.prod(cfg.image_shape) * 4.0
    return {"weights": 4.0 * found["params"], "gradients": 4.0 * found["params"],
            "optimizer": 4.0 * found["params"] * copies,
            "activations": found["act_bytes"] * (0.5 if cfg.bf16 else 1.0), "data": data}


# ----------------------------------------------------------------------------- data
def data_status(name: str) -> str:
    """Whether dataset ``name`` is present, else what ``make data`` would do (no download)."""
    root = data_root()
    try:  # no download, no apt, and no Debian gunzip (a dry run writes nothing)
        ensure_dataset(name, allow_download=False, allow_apt=False,
                       debian_dir=root / ".dry-run-no-debian")
        return "present" if DATASETS[name].tv_class else "present (ships with scikit-learn)"
    except DatasetMissingError:
        pass
    if name == "fashion_mnist" and len(list(DEBIAN_FASHION_MNIST_DIR.glob("*.gz"))) >= 4:
        return f"missing; make data gunzips it from {DEBIAN_FASHION_MNIST_DIR} (no download)"
    apt = ", else (as root) apt-get installs dataset-fashion-mnist" \
        if name == "fashion_mnist" else ""
    return f"missing under {root}; make data downloads it where online (torchvision){apt}"


# ----------------------------------------------------------------------------- chapters
def read_datasets(configs) -> set[str]:
    """The real image datasets these runs read (text tasks generate or fetch their own)."""
    return {c.dataset for c in configs
            if not c.synthetic and isinstance(_innermost(c.task), ImageClassification)}


def chapter_runs(ch: Chapter, settings) -> list[tuple[RunConfig, list[str], dict]]:
    """Every run once with the sections it serves and its callbacks spec; the pretrainings
    they fetch first, each serving the sections of the runs that fetch it (a pretraining
    placed elsewhere takes those sections with it)."""
    if ch.sections is None:
        return []
    sections = ch.sections(settings)
    configs, callbacks = ch.all_runs(settings)
    of: dict[RunConfig, list[str]] = defaultdict(list)
    for name, (cfgs, _) in sections.items():
        for c in cfgs:
            if name not in of[c]:
                of[c].append(name)
    fetched: dict[RunConfig, list[str]] = {}  # a pretraining serves its fine-tunings' sections
    for c in configs:
        for p in pretrainings(c.task):
            if p not in of:
                fetched.setdefault(p, [])
                fetched[p] += [name for name in of[c] if name not in fetched[p]]
    return [(p, names, pretraining_unit(p)["callbacks"]) for p, names in fetched.items()] + \
        [(c, of[c], cb) for c, cb in zip(configs, callbacks, strict=True)]


class Estimator:
    """Costs runs: probes each distinct model once (`probe_key`), calibrated on the reference
    run (`CALIBRATION`), which it probes first."""

    def __init__(self):
        reference = _reference()
        self.probes: dict[str, dict] = {probe_key(reference): probe(reference)}
        self.reference_flops = self.probes[probe_key(reference)]["flops"]
        self.s_per_flop = seconds_per_flop(self.reference_flops)
        self.cache = RunCache()  # $LALR_RUNS_ROOT (a rehearsal's own): what is trained already

    def _probe(self, cfg: RunConfig) -> dict:
        key = probe_key(cfg)
        if key not in self.probes:
            try:
                self.probes[key] = probe(cfg)
            except NotEstimated as exc:
                self.probes[key] = {"status": "not estimated", "why": str(exc)}
            except Exception as exc:  # noqa: BLE001 - a dry run reports every failure
                self.probes[key] = {"status": "failed", "why": f"{type(exc).__name__}: {exc}"}
        return self.probes[key]

    def run(self, cfg: RunConfig, sections: list[str],
            callbacks: dict | None = None) -> dict[str, Any]:
        """One run's record: its labels, whether the run cache already holds it (``cached``:
        computed earlier, here or on another machine), and its size, memory and GPU-hours
        where its model was built (else ``status`` "failed" or "not estimated" and ``why``)."""
        model, data = labels(cfg)
        rec = {"sections": sections, "model": model, "dataset": data, "task": cfg.task.name,
               "optimizer": cfg.optimizer, "seed": cfg.seed, "epochs": cfg.epochs,
               "batch_size": cfg.batch_size, "bf16": cfg.bf16,
               "cached": is_trained(cfg, callbacks or {}, self.cache), "status": "ok"}
        found = self._probe(cfg)
        if "status" in found:
            return {**rec, **found}
        copies = state_copies(cfg)
        mem = memory_bytes(cfg, found, ASSUMED_STATE_COPIES if copies is None else copies)
        step_share = cfg.batch_size * found["flops"] / (CALIBRATION["batch_size"]
                                                        * self.reference_flops)
        return {**rec, "params": found["params"], "flops_per_example": found["flops"],
                "examples_per_epoch": epoch_examples(cfg), "state_copies": copies,
                "built_on": found["on"], "note": found["note"],
                "memory_gib": {k: v / GIB for k, v in mem.items()},
                "est_memory_gib": sum(mem.values()) / GIB,
                "gpu_hours": gpu_seconds(cfg, found["flops"], self.s_per_flop) / 3600,
                "lower_bound": step_share < SMALL_STEP}


def _rows(runs: list[dict]) -> list[dict[str, Any]]:
    """The table: runs grouped by sections, model, dataset, batch and epochs."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in runs:
        groups[(",".join(r["sections"]), r["model"], r["dataset"], r["batch_size"],
                r["epochs"])].append(r)
    rows = []
    for (sections, model, data, batch, epochs), rs in groups.items():
        ok = [r for r in rs if r["status"] == "ok"]
        rows.append({"sections": sections, "model": model, "dataset": data, "batch_size": batch,
                     "epochs": epochs, "runs": len(rs), "estimated": len(ok),
                     "params": max((r["params"] for r in ok), default=None),
                     "est_memory_gib": max((r["est_memory_gib"] for r in ok), default=None),
                     "gpu_hours": sum(r["gpu_hours"] for r in ok),
                     "lower_bound": any(r["lower_bound"] for r in ok)})
    return sorted(rows, key=lambda r: -r["gpu_hours"])


def chapter_plan(ch: str | Chapter, profile: str, estimator: Estimator) -> dict[str, Any]:
    """One chapter's plan; an unknown chapter, an invalid setting or config is recorded in
    ``error``."""
    try:
        ch = chapter(ch) if isinstance(ch, str) else ch
    except ValueError as exc:
        return {"id": ch, "title": "?", "runs": [], "rows": [], "datasets": [], "make_data": [],
                "error": str(exc), "other_work": ""}
    out = {"id": ch.id, "title": ch.title, "runs": [], "rows": [], "datasets": [],
           "make_data": [], "error": None,
           "other_work": OTHER_WORK.get(ch.id, "anything its notebook computes outside these "
                                               "runs (callbacks, probes, analyses)")}
    try:
        settings = ch.settings(profile)
        out["make_data"] = sorted(prepared_datasets(settings))
        runs = chapter_runs(ch, settings)
    except Exception as exc:  # noqa: BLE001 - reported for the chapter, the others go on
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["runs"] = [estimator.run(c, secs, cb) for c, secs, cb in runs]
    out["rows"] = _rows(out["runs"])
    out["datasets"] = sorted(read_datasets([c for c, *_ in runs]))
    out["gpu_hours"] = sum(r["gpu_hours"] for r in out["rows"])
    return out


def build_plan(chapters: Sequence[str | Chapter], profile: str) -> dict[str, Any]:
    """The dry-run plan of ``chapters`` (ids or `Chapter` objects) at ``profile``.

    Returns:
        ``{"profile", "calibration", "chapters": [chapter_plan, ...], "data": {name: status},
        "total_gpu_hours", "failed_runs", "failed_chapters", "nothing_trained": True}``.
    """
    estimator = Estimator()
    plans = [chapter_plan(c, profile, estimator) for c in chapters]
    names = sorted({d for p in plans for d in (*p["datasets"], *p["make_data"])})
    return {"profile": profile,
            "calibration": {**CALIBRATION, "s_per_flop": estimator.s_per_flop,
                            "reference_flops_per_example": estimator.reference_flops},
            "chapters": plans, "data": {d: data_status(d) for d in names},
            "total_gpu_hours": sum(p.get("gpu_hours", 0.0) for p in plans),
            "failed_runs": sum(r["status"] == "failed" for p in plans for r in p["runs"]),
            "failed_chapters": [p["id"] for p in plans if p["error"]],
            "nothing_trained": True}


# ----------------------------------------------------------------------------- output
def _num(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _params(n: int | None) -> str:
    return "-" if n is None else f"{n / 1e6:.2f}M" if n >= 10_000 else str(n)


def _note(r: dict) -> str:
    """What the table does not show about run ``r`` ("" if nothing)."""
    if r["status"] != "ok":
        return f"{r['status'].upper()}: {r['model']} on {r['dataset']}: {r['why']}"
    why = [r["note"]] if r["note"] else []
    if r["state_copies"] is None:
        why.append(f"{r['optimizer']}'s state assumed {ASSUMED_STATE_COPIES} copies")
    if r["est_memory_gib"] > GPU_MEMORY_GIB:
        why.append(f"memory above {GPU_MEMORY_GIB} GiB")
    return f"note: {r['model']}: {'; '.join(why)}" if why else ""


def _chapter_lines(p: dict) -> list[str]:
    lines = [f"chapter {p['id']}: {p['title']}"]
    if p["error"]:
        return [*lines, f"  FAILED to build its runs: {p['error']}"]
    head = f"  {'section(s)':<26} {'model':<24} {'dataset':<18} {'runs':>5} {'batch':>6} " \
           f"{'epochs':>6} {'params':>8} {'mem GiB':>8} {'GPU-h':>8}"
    lines += [head] if p["rows"] else ["  no training runs through the shared loop"]
    for r in p["rows"]:
        sec = r["sections"] if len(r["sections"]) <= 26 else r["sections"][:23] + "..."
        runs = str(r["runs"]) if r["estimated"] == r["runs"] else f"{r['estimated']}/{r['runs']}"
        lines.append(f"  {sec:<26} {r['model'][:24]:<24} {r['dataset'][:18]:<18} {runs:>5} "
                     f"{r['batch_size']:>6} {r['epochs']:>6} {_params(r['params']):>8} "
                     f"{_num(r['est_memory_gib'], '.2f'):>8} "
                     f"{('>' if r['lower_bound'] else '') + format(r['gpu_hours'], '.2f'):>8}")
    notes = Counter(_note(r) for r in p["runs"])
    lines += [f"  {k} [{v} runs]" for k, v in notes.items() if k]
    if any(r["lower_bound"] for r in p["rows"]):
        lines.append(f"  >: steps under {SMALL_STEP:.0%} of the calibration step's FLOPs (small "
                     f"batch or model) are launch-bound on a GPU: a lower bound")
    lines.append(f"  chapter {p['id']} total: {len(p['runs'])} runs, {p['gpu_hours']:.2f} "
                 f"GPU-hours")
    lines.append(f"  other work, not estimated: {p['other_work']}")
    return lines


def format_plan(plan: dict, path: Path | None = None) -> str:
    """The plan as the text `dry_run` prints (``path``: where it was written)."""
    c = plan["calibration"]
    title = (f"dry run of make figures, profile {plan['profile']}: every run's model built on "
             f"the meta device and costed; none trained")
    lines = [title, ""]
    for p in plan["chapters"]:
        lines += [*_chapter_lines(p), ""]
    lines.append(f"total: {sum(len(p['runs']) for p in plan['chapters'])} runs, "
                 f"{plan['total_gpu_hours']:.2f} GPU-hours (one {c['device']}; rough, +-2x)")
    lines.append(f"calibration: {c['model']} on {c['n_train']:,} {c['dataset']} images at batch "
                 f"{c['batch_size']} = {c['s_per_epoch']} s/epoch float32, "
                 f"{c['s_per_epoch_bf16']} s bf16 ({c['record']}); "
                 f"{c['reference_flops_per_example'] / 1e6:.1f} MFLOPs per forward, so "
                 f"{1 / c['s_per_flop'] / 1e12:.1f} TFLOP/s effective. Memory excludes the "
                 f"CUDA context (~0.5 GiB).")
    for name, status in plan["data"].items():
        users = [p["id"] for p in plan["chapters"] if name in p["datasets"]]
        fetched = [p["id"] for p in plan["chapters"] if name in p["make_data"]]
        gap = "" if set(users) <= set(fetched) else \
            f"; NOT in make data's list for chapter(s) {sorted(set(users) - set(fetched))} " \
            f"(their runs download it themselves, online only)"
        lines.append(f"data: {name}: {status}{gap}")
    if plan["failed_runs"] or plan["failed_chapters"]:
        lines.append(f"FAILED: {plan['failed_runs']} runs, chapters {plan['failed_chapters']}")
    lines += [f"plan: {path}"] if path else []
    lines.append("dry run: nothing trained")
    return "\n".join(lines)


def write_plan(plan: dict, root: str | os.PathLike | None = None) -> Path:
    """Write ``plan`` to ``<root>/<profile>/plan.json`` (root: ``$LALR_FIGURES_ROOT``, else
    ``<repo>/figures``); returns the path."""
    path = Path(root if root is not None else default_root()) / plan["profile"] / "plan.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, json.dumps(plan, indent=1, default=str))


def dry_run(chapters: Sequence[str | Chapter], profile: str,
            root: str | os.PathLike | None = None) -> int:
    """Build, print and write the plan; returns the exit status: 0, or 2 if a run or a
    chapter failed to build."""
    plan = build_plan(chapters, profile)
    print(format_plan(plan, write_plan(plan, root)), flush=True)
    return 2 if plan["failed_runs"] or plan["failed_chapters"] else 0
