"""The papermill driver behind ``make figures``.

``python -m lalr_core.driver --profile quick --chapters 04`` obtains the data the chosen
chapters need (before any notebook starts), executes each chapter notebook with papermill at
the profile, writes the executed copies to ``figures/<profile>/notebooks/``, prints each
notebook's time, records ``timings.json``, rebuilds ``REPORT.md``, and exits non-zero naming
the notebook and cell of any failure. ``--rehearse`` does the same with every training run cut
to a few steps (`lalr_core.core.rehearsal`), into ``figures/rehearsal/<profile>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from lalr_core.chapters import CHAPTERS, chapter_settings, prepared_datasets
from lalr_core.core.data import DatasetMissingError, ensure_dataset
from lalr_core.core.loop.config import check_profile
from lalr_core.core.progress import PROGRESS_ENV, follow
from lalr_core.core.rehearsal import REHEARSE_ENV
from lalr_core.core.results.provenance import repo_root
from lalr_core.core.results.report import build_report
from lalr_core.core.results.writer import FIGURES_ENV, default_root
from lalr_core.core.runs import EXECUTOR_ENV, EXECUTORS
from lalr_core.core.runs.chapter import SKIP_ENV
from lalr_core.placement import CPU_BUDGET_MIN
from lalr_core.plan import dry_run


def chapter_notebooks(notebooks_dir: Path) -> dict[str, Path]:
    """Chapter id (``"04"``, ``"02b"``) -> notebook path, from ``NN[x]_topic.ipynb`` names.

    Raises:
        ValueError: the folder does not exist or holds no chapter notebook (names --notebooks).
    """
    if not notebooks_dir.is_dir():
        raise ValueError(f"--notebooks: the folder {notebooks_dir} does not exist")
    found = {p.name.split("_")[0]: p for p in sorted(notebooks_dir.glob("[0-9][0-9]*_*.ipynb"))}
    if not found:
        raise ValueError(f"--notebooks: no chapter notebook (NN_topic.ipynb) in {notebooks_dir}")
    return found


def select_chapters(requested: str | None, available: dict[str, Path]) -> list[str]:
    """Validate a comma-separated chapter list (``None``/``all`` = every notebook).

    Raises:
        ValueError: an unknown chapter, or a list that names none (``",,"``); names --chapters.
    """
    if requested is None or requested.strip() in ("", "all"):
        return sorted(available)
    chosen = [re.sub(r"^\d+", lambda m: m.group(0).zfill(2), c.strip())  # "2b" -> "02b"
              for c in requested.split(",") if c.strip()]
    if not chosen:
        raise ValueError(f"--chapters {requested!r} names no chapter; give ids such as 04,06 "
                         f"or all (available: {sorted(available)})")
    unknown = [c for c in chosen if c not in available]
    if unknown:
        raise ValueError(f"--chapters: unknown chapters {unknown}; available: {sorted(available)}")
    return chosen


def prepare_data(chapters: list[str], profile: str, required: bool = True) -> None:
    """Make every real dataset the chapters use at ``profile`` available (or raise; with
    ``required`` False, say what is missing and go on: the placement skips what needs it).

    This explicit data step is the only place that may install a system package: as root,
    offline, Fashion-MNIST comes from Debian's ``dataset-fashion-mnist`` (``apt-get``), and
    the step says so before it runs.
    """
    needed = set()
    for chapter in chapters:
        if chapter in CHAPTERS:
            needed |= prepared_datasets(chapter_settings(chapter, profile))
    for name in sorted(needed):
        print(f"data: ensuring {name} (if it is missing, this step may download it or, as "
              f"root, apt-get install a Debian package) ...", flush=True)
        try:
            ensure_dataset(name, allow_apt=True)
        except DatasetMissingError as exc:
            if required:
                raise
            print(f"data: {name} is missing; what needs it is skipped ({exc})", flush=True)


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def _failure_message(nb: Path, exc: Exception) -> str:
    cell = getattr(exc, "exec_count", None)
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    return f"FAILED {nb.name} at cell [{cell}]: {ename}: {evalue}"


KERNEL_SHUTDOWN_S = 60.0


def _kernel_manager_class():
    """The kernel manager papermill starts kernels with: local (IPC) sockets where the OS
    has them, so the kernel has no TCP port to guard and says nothing about encryption, and
    `KERNEL_SHUTDOWN_S` to exit when the notebook is done."""
    from jupyter_client.manager import AsyncKernelManager

    class LocalSocketKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            # Time to exit cleanly after the last cell (a kernel that started Ray shuts it
            # down at exit, which takes longer than jupyter_client's 5 s before SIGTERM).
            self.shutdown_wait_time = KERNEL_SHUTDOWN_S
            if os.name == "posix":
                self.transport = "ipc"
                self.ip = os.path.join(tempfile.gettempdir(), f"lalr-kernel-{os.getpid()}")

    return LocalSocketKernelManager


def place(chapters: list[str], notebooks: dict[str, Path], profile: str, out_root: Path,
          budget_min: float) -> dict[str, dict]:
    """Chapter -> its placement (`lalr_core.placement.place_notebook`) on this machine, from
    the dry run's plan; written to ``<out>/<profile>/placement.json`` and printed."""
    from lalr_core.placement import place_notebook
    from lalr_core.plan import build_plan

    plan = build_plan(chapters, profile)
    ref = plan["calibration"]["reference_flops_per_example"]
    placed = {p["id"]: place_notebook(notebooks[p["id"]], p, plan["data"], ref, budget_min)
              for p in plan["chapters"]}
    path = out_root / profile / "placement.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # the chapters placed by earlier runs into this folder stay (as timings.json's do), each
    # with the budget it was placed under
    old = json.loads(path.read_text()) if path.exists() else {"chapters": {}}
    kept = {c: {"budget_cpu_min": old.get("budget_cpu_min"), **p}
            for c, p in old["chapters"].items()}
    path.write_text(json.dumps({"budget_cpu_min": budget_min, "chapters": {**kept, **{
        c: {"run": p["run"], "reasons": p["reasons"], "unmarked": p.get("unmarked", []),
            "skipped_cells": len(p["skipped"]), "budget_cpu_min": budget_min}
        for c, p in placed.items()}}}, indent=1))
    for c, p in placed.items():
        if p["run"] != "all":
            what = "skipped" if p["run"] == "none" else f"{len(p['skipped'])} cells skipped"
            print(f"[{profile}] chapter {c}: {what} on this machine:", flush=True)
            for section, why in p["reasons"].items():
                print(f"    {section}: {why}", flush=True)
    return placed


def run_notebooks(chapters: list[str], notebooks: dict[str, Path], profile: str,
                  out_root: Path, executor: str | None = None,
                  placed: dict[str, dict] | None = None) -> list[dict]:
    """Execute the notebooks; returns one timing record per notebook.

    While a notebook runs, what its sweeps, runs and saved items report
    (`lalr_core.core.progress`) is copied to this terminal. With ``placed`` (`place`), a
    notebook placed elsewhere is not run, and one placed in part runs without its skipped
    cells.
    """
    import nbformat
    import papermill as pm  # slow import, only when executing

    from lalr_core.placement import without_cells

    out_dir = out_root / profile / "notebooks"
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ[FIGURES_ENV] = str(out_root.resolve())  # the kernels' FigureWriter writes here
    if executor is not None:
        os.environ[EXECUTOR_ENV] = executor  # every sweep in every kernel uses it
    # The kernels append every bar redraw to a live file; the terminal gets it as it comes,
    # progress.log one line per bar's final state and per saved item.
    progress_file = out_root / profile / "progress.live"
    progress_file.unlink(missing_ok=True)
    os.environ[PROGRESS_ENV] = str(progress_file.resolve())
    readable = (out_root / profile / "progress.log").open("w", encoding="utf-8")
    records = []
    for chapter in chapters:
        nb = notebooks[chapter]
        where = (placed or {}).get(chapter, {"run": "all"})
        if where["run"] == "none":
            print(f"[{profile}] {nb.name}: skipped on this machine", flush=True)
            records.append({"notebook": nb.name, "seconds": 0.0, "status": "skipped here"})
            continue
        source = nb
        if where["run"] == "part":  # the copy without the cells placed elsewhere
            source = out_dir / f".{nb.stem}.placed.ipynb"
            nbformat.write(without_cells(nbformat.read(nb, as_version=4), where["skipped"]),
                           source)
        t0 = time.perf_counter()
        print(f"[{profile}] {nb.name} ...", flush=True)
        stop = threading.Event()
        follower = threading.Thread(target=follow, args=(progress_file, sys.stderr, stop),
                                    kwargs={"log": readable}, daemon=True)
        follower.start()
        try:
            pm.execute_notebook(str(source), str(out_dir / nb.name), parameters={"profile": profile},
                                cwd=str(nb.parent), progress_bar=False, kernel_name="python3",
                                kernel_manager_class=_kernel_manager_class())
            status = "ok"
        except Exception as exc:  # report and go on with the other notebooks
            status = _failure_message(nb, exc)
        finally:
            stop.set()
            follower.join()
            if source != nb:
                source.unlink(missing_ok=True)
        seconds = time.perf_counter() - t0
        print(f"[{profile}] {nb.name}: {status} in {seconds:.1f} s", flush=True)
        records.append({"notebook": nb.name, "seconds": round(seconds, 1), "status": status})
    readable.close()
    progress_file.unlink(missing_ok=True)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--chapters", default=None, help="comma-separated, e.g. 04,06 (default: all)")
    parser.add_argument("--notebooks", default=str(repo_root() / "notebooks"))
    parser.add_argument("--out", default=str(default_root()),
                        help="output root (default $LALR_FIGURES_ROOT, else <repo>/figures)")
    parser.add_argument("--executor", default=None, choices=EXECUTORS,
                        help="where every chapter's sweeps run: local processes, or Ray (the "
                             "cluster in $RAY_ADDRESS, else one started here); default "
                             "$LALR_EXECUTOR or local")
    parser.add_argument("--data-only", action="store_true",
                        help="only make the chapters' data available (`make data`)")
    parser.add_argument("--rehearse", action="store_true",
                        help="run every notebook to its end with each training run cut to a "
                             "few steps (synthetic data where the real data is absent), into "
                             "<out>/rehearsal/ and a separate run cache; nothing is a result")
    parser.add_argument("--cpu-budget", type=float, default=None, metavar="MINUTES",
                        help="at the paper profile without a GPU, skip a notebook part whose "
                             "training runs are estimated above this many CPU minutes (default "
                             "20); 0 skips every part that trains, 'inf' runs everything")
    parser.add_argument("--dry-run", action="store_true",
                        help="build and check every run, print the plan with GPU-hours and "
                             "write plan.json; train, download or install nothing")
    args = parser.parse_args(argv)
    try:
        try:
            profile = check_profile(args.profile)
        except ValueError as exc:
            raise ValueError(f"--profile: {exc}") from None
        notebooks = chapter_notebooks(Path(args.notebooks))
        chapters = select_chapters(args.chapters, notebooks)
        if args.dry_run:  # before the data step: a dry run only reports
            return dry_run(chapters, profile, Path(args.out))
        if args.rehearse and args.data_only:
            raise ValueError("--rehearse needs no data step (absent data is drawn synthetic); "
                             "drop --data-only")
        budget = CPU_BUDGET_MIN if args.cpu_budget is None else args.cpu_budget
        if not budget >= 0:  # NaN too
            raise ValueError(f"--cpu-budget must be >= 0 minutes, got {args.cpu_budget}")
        # At paper on a machine without a GPU, what fits runs here and the rest is skipped.
        placing = profile == "paper" and not (args.rehearse or args.data_only) \
            and not _has_gpu()
        if not args.rehearse:
            prepare_data(chapters, profile, required=not placing)
    except (ValueError, DatasetMissingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.data_only:
        return 0
    out = Path(args.out)
    placed = place(chapters, notebooks, profile, out, budget) if placing else None
    if placed:  # the kernels train none of the runs of the sections placed elsewhere
        os.environ[SKIP_ENV] = json.dumps({c: p["sections"] for c, p in placed.items()
                                           if p["run"] == "part"})
    if args.rehearse:  # the kernels inherit the flag; outputs and runs go apart
        os.environ[REHEARSE_ENV] = "1"
        out = out / "rehearsal"
    t0 = time.perf_counter()
    records = run_notebooks(chapters, notebooks, profile, out, args.executor, placed)
    timings = out / profile / "timings.json"
    previous = {r["notebook"]: r for r in json.loads(timings.read_text())} if timings.exists() else {}
    previous.update({r["notebook"]: r for r in records})
    timings.write_text(json.dumps(list(previous.values()), indent=1))
    report = build_report(profile, root=out)
    print(f"total {time.perf_counter() - t0:.1f} s; report: {report}")
    failed = [r for r in records if r["status"] not in ("ok", "skipped here")]
    for r in failed:
        print(r["status"], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
