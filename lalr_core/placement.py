"""What of a paper run this machine can do: each notebook part placed here or skipped, with why.

On a machine without a GPU, ``make figures PROFILE=paper`` runs every part of every notebook
that fits a CPU and has its data, and skips the rest, saying why. The parts are marked in the
notebooks by cell tags:

* ``runs:<section>``: the cell uses the training runs of the chapter's section ``<section>``
  (`lalr_core.core.runs.chapter.Chapter`); it runs here when every run of the section has its
  data and the section's estimated CPU time is within the budget;
* ``long``: work outside the chapter's sections that is too long for a CPU at the paper
  profile (the dry run does not cost it; `lalr_core.plan.OTHER_WORK` says what it is); skipped
  without a GPU unless the budget is unlimited (``--cpu-budget inf``);
* ``needs:<dataset>``: work outside the sections that reads ``<dataset>``; skipped when the
  dataset is missing.

The driver also tells the kernels (``$LALR_SKIP_SECTIONS``, read by
`lalr_core.core.runs.chapter.Chapter`) which sections are skipped, so a notebook's sweep of
every section trains none of their runs. Untagged cells always run. A notebook runs whole when every section can run here, and is
skipped whole when a section that cannot has no tagged cells. The skipped cells are removed from the copy papermill
executes, with a note in their place naming the section and the reason; ``placement.json``
beside REPORT.md lists them, and REPORT.md shows them.

CPU time: the dry run's FLOPs (`lalr_core.plan.Estimator`) at `CPU_CALIBRATION`'s measured
rate, plus `STEP_OVERHEAD_S` per optimiser step (small models are bound by it on a CPU). Rough
(+-3x); the budget, not the estimate, is what a user sets (``--cpu-budget``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import nbformat

from lalr_core.core.data import DATASETS

# Training throughput of this collection's CPU machine (2 cores, AVX-512): ResNet-20 on 32x32x3
# images, batch 128, channels_last, 840-880 images/s (the environment probe of 2026-11-22).
CPU_CALIBRATION = {"model": "resnet20", "images_per_s": 860.0, "cores": 2}
# Seconds per optimiser step beyond its FLOPs (callbacks, evaluation, Python). A compromise:
# measured here (2026-11-28, cores shared with one other job), chapter 01's TinyTF X-L runs took
# ~2 s a run of 192 steps and chapter 03's LoRA runs 2-7 s a run of 320 steps (well below this
# rate), while chapter 03's linearised runs (T1b: a Jacobian-vector product a step) took
# 250-530 s a run of 320 steps (above it); FLOPs alone say milliseconds for all of them.
STEP_OVERHEAD_S = 0.1
CPU_BUDGET_MIN = 20.0     # default: a section estimated above this many CPU minutes is skipped
LONG_TAG = "long"
RUNS_TAG = "runs:"
NEEDS_TAG = "needs:"


def cpu_minutes(run: dict[str, Any], reference_flops: float) -> float:
    """Estimated CPU minutes of one costed run record of the dry run (``status`` ok)."""
    per_flop = 1.0 / (CPU_CALIBRATION["images_per_s"] * 3 * reference_flops)
    n_train, n_eval = run["examples_per_epoch"]
    flops = run["epochs"] * (3 * n_train + n_eval) * run["flops_per_example"]
    steps = run["epochs"] * math.ceil(n_train / run["batch_size"])
    return (flops * per_flop + steps * STEP_OVERHEAD_S) / 60


def _data_reason(label: str, data_status: dict[str, str], chapter_id: str) -> str | None:
    """Why a run on dataset ``label`` cannot run here (None: it can)."""
    if label not in DATASETS:   # text corpora are generated; GLUE runs are "not estimated"
        return None
    status = data_status.get(label, "")
    if status.startswith("present"):
        return None
    return f"needs {label} ({status}: `make data PROFILE=paper CHAPTERS={chapter_id}`)"


def section_reasons(chapter_plan: dict[str, Any], data_status: dict[str, str],
                    reference_flops: float, budget_min: float) -> dict[str, str]:
    """Section -> why it cannot run here, for every section of the chapter that cannot.

    A section cannot when a run of it lacks its data, was not costed (its model or data comes
    from a hub, say), or when its runs together are estimated above ``budget_min`` CPU minutes.
    A run the run cache already holds (``cached``: trained earlier, here or on a GPU machine
    whose entries were copied in) costs nothing.
    """
    minutes: dict[str, float] = defaultdict(float)
    gpu_hours: dict[str, float] = defaultdict(float)
    why: dict[str, str] = {}
    for run in chapter_plan["runs"]:
        for section in run["sections"]:
            if run["status"] != "ok":
                why.setdefault(section, f"{run['model']} on {run['dataset']}: {run['why']}")
                continue
            if (reason := _data_reason(run["dataset"], data_status, chapter_plan["id"])):
                why.setdefault(section, reason)
            if not run.get("cached"):
                minutes[section] += cpu_minutes(run, reference_flops)
                gpu_hours[section] += run["gpu_hours"]
    for section, m in minutes.items():
        if section not in why and m > budget_min:
            why[section] = (f"needs a GPU: about {m / 60:.1f} CPU-hours here, "
                            f"{gpu_hours[section]:.2f} GPU-hours on one H200 (budget "
                            f"{budget_min:g} CPU minutes per section)")
    return why


def notebook_tags(nb: nbformat.NotebookNode) -> set[str]:
    """Every placement tag of the notebook's cells."""
    return {t for c in nb.cells for t in c.metadata.get("tags", [])
            if t == LONG_TAG or t.startswith((RUNS_TAG, NEEDS_TAG))}


def skipped_cells(nb: nbformat.NotebookNode, reasons: dict[str, str], other_work: str,
                  data_status: dict[str, str] | None = None,
                  budget_min: float = CPU_BUDGET_MIN) -> dict[int, str]:
    """Cell index -> why it is skipped, for the cells whose tags name a section in
    ``reasons``, are ``long`` (the chapter's work outside its sections, ``other_work``; run
    only with an unlimited ``budget_min``), or need a dataset whose ``data_status`` is not
    "present..." (default: `plan.data_status`)."""
    from lalr_core.plan import data_status as status_now

    out = {}
    for i, cell in enumerate(nb.cells):
        for tag in cell.metadata.get("tags", []):
            if tag.startswith(NEEDS_TAG):
                name = tag[len(NEEDS_TAG):]
                status = (data_status or {}).get(name) or status_now(name)
                if not status.startswith("present"):
                    out[i] = f"needs {name} ({status}) outside the sections"
            if tag == LONG_TAG and not math.isinf(budget_min):
                out[i] = (f"too long for a CPU at this profile (work outside the chapter's "
                          f"sections, not costed by the dry run: {other_work})")
            elif tag.startswith(RUNS_TAG) and tag[len(RUNS_TAG):] in reasons:
                out[i] = f"section {tag[len(RUNS_TAG):]}: {reasons[tag[len(RUNS_TAG):]]}"
    return out


def without_cells(nb: nbformat.NotebookNode, skipped: dict[int, str]) -> nbformat.NotebookNode:
    """A copy of ``nb`` without the ``skipped`` cells; one Markdown note in place of each run
    of consecutive skipped cells, naming the reasons."""
    out = nbformat.from_dict(nb)
    cells, pending = [], []
    for i, cell in enumerate(out.cells + [None]):
        if i in skipped:
            if skipped[i] not in pending:
                pending.append(skipped[i])
            continue
        if pending:
            cells.append(nbformat.v4.new_markdown_cell(
                "**Skipped on this machine** (`make figures` placed the cells here elsewhere):\n"
                + "\n".join(f"- {why}" for why in pending)))
            pending = []
        if cell is not None:
            cells.append(cell)
    out.cells = cells
    return out


def place_notebook(nb_path: Path, chapter_plan: dict[str, Any], data_status: dict[str, str],
                   reference_flops: float, budget_min: float) -> dict[str, Any]:
    """Where the notebook's parts run: ``{"run": "all" | "part" | "none", "skipped":
    {cell index: why}, "reasons": {section (or "outside the sections"): why}, "sections":
    the sections skipped}``."""
    nb = nbformat.read(nb_path, as_version=4)
    reasons = section_reasons(chapter_plan, data_status, reference_flops, budget_min)
    if chapter_plan.get("error"):
        return {"run": "none", "skipped": {}, "reasons": {"chapter": chapter_plan["error"]}}
    tagged = {t[len(RUNS_TAG):] for t in notebook_tags(nb) if t.startswith(RUNS_TAG)}
    if untagged := sorted(set(reasons) - tagged):  # its cells are not marked: skip it all
        return {"run": "none", "skipped": {}, "reasons": reasons, "unmarked": untagged}
    skipped = skipped_cells(nb, reasons, chapter_plan.get("other_work", ""), data_status,
                            budget_min)
    sections = sorted(reasons)
    outside = sorted({why for why in skipped.values() if not why.startswith("section ")})
    reasons = {**reasons, **{f"outside the sections ({k + 1})" if len(outside) > 1 else
                             "outside the sections": why for k, why in enumerate(outside)}}
    return {"run": "part" if skipped else "all", "skipped": skipped, "reasons": reasons,
            "sections": sections}
