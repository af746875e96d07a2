"""The placement of a paper run on a machine without a GPU (`lalr_core.placement`): which
notebook parts run here, which are skipped and why, and the notebooks' tags that mark them."""

import json
from pathlib import Path

import nbformat
import pytest

from lalr_core.chapters import CHAPTERS, chapter
from lalr_core.core.results.report import build_report
from lalr_core.core.runs.chapter import SKIP_ENV, placed_elsewhere
from lalr_core.placement import (
    LONG_TAG,
    RUNS_TAG,
    cpu_minutes,
    notebook_tags,
    place_notebook,
    section_reasons,
    skipped_cells,
    without_cells,
)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
REF = 81.1e6  # forward FLOPs of the calibration model (any positive number will do here)


def _run(sections, dataset="fashion_mnist", epochs=1, n_train=1000, flops=REF, status="ok"):
    rec = {"sections": sections, "model": "m", "dataset": dataset, "status": status,
           "epochs": epochs, "batch_size": 100, "gpu_hours": 0.01}
    if status == "ok":
        rec.update(examples_per_epoch=[n_train, 0], flops_per_example=flops)
    else:
        rec["why"] = "comes from a hub"
    return rec


def _plan(*runs):
    return {"id": "99", "runs": list(runs), "other_work": "the toys"}


def test_cpu_minutes_is_the_calibrated_rate_plus_the_step_overhead():
    from lalr_core.placement import CPU_CALIBRATION, STEP_OVERHEAD_S

    run = _run(["a"], epochs=2, n_train=860)
    want = (2 * 3 * 860 / (3 * CPU_CALIBRATION["images_per_s"]) + 2 * 9 * STEP_OVERHEAD_S) / 60
    assert cpu_minutes(run, REF) == pytest.approx(want)


def test_sections_are_skipped_for_missing_data_hub_runs_and_the_budget():
    status = {"fashion_mnist": "present", "cifar10": "missing under /x; make data downloads it"}
    plan = _plan(_run(["here"]), _run(["data"], dataset="cifar10"),
                 _run(["hub"], status="not estimated"),
                 _run(["heavy"], epochs=10_000), _run(["text"], dataset="text sent"))
    why = section_reasons(plan, status, REF, budget_min=20)
    assert sorted(why) == ["data", "heavy", "hub"]
    assert "make data PROFILE=paper CHAPTERS=99" in why["data"]
    assert "from a hub" in why["hub"] and "CPU-hours" in why["heavy"]
    assert section_reasons(plan, status, REF, budget_min=float("inf")).keys() == {"data", "hub"}


def _nb(*tag_lists):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}", metadata={"tags": list(t)})
                for i, t in enumerate(tag_lists)]
    return nb


def test_skipped_cells_and_the_note_left_in_their_place():
    nb = _nb([], ["runs:a"], ["runs:a", "runs:b"], ["runs:b"], [LONG_TAG], [],
             ["needs:cifar10"], ["needs:fashion_mnist"])
    status = {"cifar10": "missing under /x", "fashion_mnist": "present"}
    skipped = skipped_cells(nb, {"a": "needs a GPU"}, "the toys", status)
    assert sorted(skipped) == [1, 2, 4, 6]
    assert "needs cifar10 (missing under /x)" in skipped[6]
    out = without_cells(nb, skipped)
    kinds = [c.cell_type for c in out.cells]
    assert kinds == ["code", "markdown", "code", "markdown", "code", "markdown", "code"]
    assert "section a: needs a GPU" in out.cells[1].source
    assert "the toys" in out.cells[3].source
    unlimited = skipped_cells(nb, {"a": "needs a GPU"}, "the toys", status, float("inf"))
    assert sorted(unlimited) == [1, 2, 6]                          # the long cell runs
    assert len(nb.cells) == 8  # the original is untouched


def test_a_notebook_whose_skipped_section_is_unmarked_is_skipped_whole(tmp_path):
    path = tmp_path / "99_x.ipynb"
    nbformat.write(_nb([], ["runs:a"]), path)
    status = {"fashion_mnist": "present", "cifar10": "missing"}
    plan = _plan(_run(["a"], dataset="cifar10"), _run(["b"], dataset="cifar10"))
    placed = place_notebook(path, plan, status, REF, 20)
    assert placed["run"] == "none" and placed["unmarked"] == ["b"]
    plan = _plan(_run(["a"], dataset="cifar10"), _run(["b"]))
    placed = place_notebook(path, plan, status, REF, 20)
    assert placed["run"] == "part" and placed["sections"] == ["a"]
    assert place_notebook(path, _plan(_run(["a"])), status, REF, 20)["run"] == "all"


def test_sections_placed_elsewhere_are_not_trained(monkeypatch):
    ch = chapter("04")
    settings = ch.settings("smoke")
    assert "fig3.7" in ch._sections(settings)
    monkeypatch.setenv(SKIP_ENV, json.dumps({"04": ["fig3.7"], "05": ["x"]}))
    assert placed_elsewhere("04") == {"fig3.7"} and placed_elsewhere("03") == set()
    assert ch.all_runs(settings) == ([], [])


@pytest.mark.parametrize("cid", sorted(CHAPTERS))
def test_every_tag_names_a_section_and_every_section_can_be_a_tag(cid):
    ch = chapter(cid)
    sections = set(ch.sections(ch.settings("smoke"))) if ch.sections else set()
    assert not [s for s in sections if "," in s]  # a notebook tag holds no comma
    [path] = NOTEBOOKS.glob(f"{cid}_*.ipynb")
    tags = notebook_tags(nbformat.read(path, as_version=4))
    named = {t[len(RUNS_TAG):] for t in tags if t.startswith(RUNS_TAG)}
    assert named <= sections, named - sections


def test_the_report_lists_what_was_not_run_here(tmp_path):
    profile_dir = tmp_path / "paper"
    profile_dir.mkdir()
    (profile_dir / "placement.json").write_text(json.dumps({"budget_cpu_min": 20, "chapters": {
        "04": {"run": "part", "reasons": {"fig3.7": "needs cifar10"}, "skipped_cells": 16},
        "03": {"run": "none", "reasons": {"T1": "too long"}, "unmarked": ["T1"],
               "skipped_cells": 0},
        "07": {"run": "all", "reasons": {}, "skipped_cells": 0}}}))
    report = build_report("paper", root=tmp_path).read_text()
    assert "## Not run on this machine" in report
    assert "| 04 | 16 cells | fig3.7 | needs cifar10 |" in report and "| 07 |" not in report
    assert "| 03 | the whole notebook (no cells marked for T1) | T1 | too long |" in report
    assert "estimated above 20 CPU minutes" in report


def test_a_chapter_placed_under_another_budget_keeps_its_own(tmp_path):
    """Chapters placed by an earlier run keep the budget they were placed under: a later
    ``--cpu-budget inf`` run of one chapter does not relabel them."""
    profile_dir = tmp_path / "paper"
    profile_dir.mkdir()
    (profile_dir / "placement.json").write_text(json.dumps({"budget_cpu_min": float("inf"),
                                                            "chapters": {
        "04": {"run": "part", "reasons": {"fig3.7": "needs cifar10"}, "skipped_cells": 16,
               "budget_cpu_min": 20},
        "07": {"run": "all", "reasons": {}, "skipped_cells": 0, "budget_cpu_min": float("inf")}}}))
    report = build_report("paper", root=tmp_path).read_text()
    assert "estimated above 20 CPU minutes" in report and "above inf" not in report


def test_a_run_the_cache_holds_costs_nothing():
    """A section whose runs were trained elsewhere (a GPU machine's entries copied into the run
    cache: the plan marks them ``cached``) runs here, whatever its estimate; one uncached run of
    the same size is still costed."""
    run = {"sections": ["T1"], "model": "m", "dataset": "text sent", "status": "ok",
           "epochs": 10, "batch_size": 32, "examples_per_epoch": (1000, 1500),
           "flops_per_example": 1e9, "gpu_hours": 0.01}
    plan = {"id": "03", "runs": [{**run, "cached": True}] * 50}
    assert section_reasons(plan, {}, 1e8, budget_min=20) == {}
    plan["runs"].append(run)
    assert "needs a GPU" in section_reasons(plan, {}, 1e8, budget_min=0.1)["T1"]


def test_placing_some_chapters_keeps_the_others_placement(tmp_path, monkeypatch):
    """`make figures CHAPTERS=03` after a paper run of every chapter: placement.json (which
    REPORT.md reads) keeps the other chapters' placements, as timings.json keeps their times."""
    from lalr_core import driver, plan

    def fake_plan(chapters, profile):
        return {"calibration": {"reference_flops_per_example": REF}, "data": {},
                "chapters": [{"id": c, "runs": [], "error": None} for c in chapters]}

    monkeypatch.setattr(plan, "build_plan", fake_plan)
    nbs = {c: next(NOTEBOOKS.glob(f"{c}_*.ipynb")) for c in ("04", "07")}
    driver.place(["04", "07"], nbs, "paper", tmp_path, 20.0)
    driver.place(["07"], nbs, "paper", tmp_path, float("inf"))
    placed = json.loads((tmp_path / "paper" / "placement.json").read_text())["chapters"]
    assert sorted(placed) == ["04", "07"]
    assert placed["04"]["budget_cpu_min"] == 20.0                 # its own, kept
    assert placed["07"]["budget_cpu_min"] == float("inf")


def test_a_pretraining_serves_the_sections_of_its_fine_tunings():
    """A pretraining run belongs to the sections whose runs fetch it (chapter 01's vision
    pretraining to ``vision``), so placing those sections elsewhere places it too."""
    from lalr_core import plan

    ch = chapter("01")
    runs = plan.chapter_runs(ch, ch.settings("smoke"))
    kinds = {cfg.task.name: secs for cfg, secs, _ in runs if cfg.task.name in
             ("image_subset", "text_mlm")}   # the vision and the text pretraining
    assert all("pretraining" not in secs for _, secs, _ in runs)
    assert kinds["image_subset"] == ["vision"]
    assert "vision" not in kinds["text_mlm"] and "X-L2" in kinds["text_mlm"]
