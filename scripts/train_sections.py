"""Train chapter sections' runs into the run cache on a GPU machine, to bring the cache home.

A GPU machine without network (or one lent for minutes) cannot run the notebooks, but it can
fill the run cache: the cache key does not name the device, so the entries it computes are the
ones `make figures` looks up on any other machine. Copy them back (``--pack``) into the run
cache there (``tar xzf runs.tgz -C $LALR_RUNS_ROOT``), and the notebooks read them instead of
training.

Small models (chapters 01 and 03's TinyTF fine-tunings) leave a GPU mostly idle in one process,
so ``--workers`` processes share it (the local executor pins nothing on a one-GPU machine).

Usage:
    python scripts/train_sections.py --profile paper --workers 14 --deadline 420 \\
        06:fig5.7 03:T1 03:T1b 01:X-L2 --log timings.json --pack runs.tgz

Sections are trained in the order given, consecutive sections of one chapter in one sweep (one
pool of workers); a chapter whose turn comes after ``--deadline`` seconds is not started (a
sweep cut off by an outer ``timeout`` keeps every run it finished: entries are written
atomically). ``--log`` gets, after each chapter, its wall time, runs and the device; ``--pack``
gets every complete entry of the cache, the locks and temporaries left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
import traceback
from pathlib import Path

import torch

from lalr_core.chapters import chapter as chapter_of
from lalr_core.core.results.provenance import device_info
from lalr_core.core.runs.cache import RunCache
from lalr_core.core.runs.units import train_runs


def parse_section(text: str) -> tuple[str, str]:
    """``"03:T1"`` -> ``("03", "T1")`` (``ValueError`` for an unknown chapter)."""
    chapter, sep, section = text.partition(":")
    if not sep or not section:
        raise ValueError(f"a section is CHAPTER:SECTION (e.g. 03:T1), got {text!r}")
    chapter_of(chapter)  # ValueError for an unknown chapter
    return chapter, section


def pack(root: Path, out: Path) -> int:
    """Write every readable cache entry under ``root`` (`RunCache.entries`: a unit's folder
    with its meta.json, no temporary, checkpoint or damaged one) into the tarball ``out``;
    returns how many it holds."""
    entries = [Path(m["path"]) for m in RunCache(root).entries()]
    with tarfile.open(out, "w:gz") as tar:
        for entry in entries:
            tar.add(entry, arcname=f"{entry.parent.name}/{entry.name}")
    return len(entries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sections", nargs="+", help="CHAPTER:SECTION, in the order to train them")
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--deadline", type=float, default=float("inf"),
                    help="seconds after which no further section is started")
    ap.add_argument("--log", type=Path, help="JSON file of each section's timing")
    ap.add_argument("--pack", type=Path, help="tar.gz of the cache's complete entries")
    args = ap.parse_args(argv)
    wanted = [parse_section(s) for s in args.sections]
    if args.workers < 1:
        raise SystemExit(f"--workers must be >= 1, got {args.workers}")

    t0 = time.perf_counter()
    log = {"profile": args.profile, "workers": args.workers, "device": device_info(),
           "torch": torch.__version__, "sections": []}
    chapters = {c: chapter_of(c) for c, _ in wanted}
    groups: list[dict] = []  # consecutive sections of one chapter: one sweep, one worker pool
    for chapter, section in wanted:  # every section's configs before any compute
        configs, callbacks = chapters[chapter].runs(chapters[chapter].settings(args.profile),
                                                    section)
        if not groups or groups[-1]["chapter"] != chapter:
            groups.append({"chapter": chapter, "sections": [], "configs": [], "callbacks": []})
        groups[-1]["sections"].append(section)
        groups[-1]["configs"] += configs
        groups[-1]["callbacks"] += callbacks
    for group in groups:
        record = {"chapter": group["chapter"], "sections": group["sections"],
                  "runs": len(group["configs"])}
        if time.perf_counter() - t0 > args.deadline:
            record["status"] = "not started (deadline)"
        else:
            start = time.perf_counter()
            try:
                train_runs(group["configs"], callbacks=group["callbacks"],
                           workers=args.workers, executor="local")
                record["status"] = "done"
            except Exception as exc:  # noqa: BLE001 - report it; the other chapters still count
                record["status"] = f"failed: {type(exc).__name__}: {exc}"
                traceback.print_exc()
            record["wall_s"] = round(time.perf_counter() - start, 1)
        log["sections"].append(record)
        print(json.dumps(record), flush=True)
        if args.log:
            args.log.write_text(json.dumps(log, indent=1))
    if args.pack:
        n = pack(RunCache().root, args.pack)
        print(f"packed {n} entries into {args.pack}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
