"""``make bench``: every ``benchmarks/bench_*.py`` in one run, gathered into one table of ratios.

Each script found by the glob runs as a subprocess with its default arguments; its output
streams to the terminal, and the rows it ends with (`_common.emit_rows`, ours vs baseline,
both measured in that run) go through ``$LALR_BENCH_ROWS`` into the table. So a new script
adds its rows with no other edit. A script that exits non-zero, or emits no row, gets a
row saying so, the others still run, and the runner exits 1 at the end.

Writes ``<out>/bench.csv``, ``<out>/bench.md`` (printed at the end too) and the sidecar
``<out>/bench.json`` (the rows, each script's exit code and wall time, provenance: commit,
dirty flag, versions, device with the CPU model and GPU names). ``<out>`` defaults to
``$LALR_FIGURES_ROOT/bench`` or ``figures/bench``.

Usage: ``make bench``; ``python benchmarks/run_all.py [--only spectral,ntk] [--out DIR]
[--benchmarks DIR]``.
"""

from __future__ import annotations

import argparse
import collections
import csv
import dataclasses
import io
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROWS_ENV, BenchRow  # benchmarks/ is on sys.path when a script runs

from lalr_core.core.atomic_io import atomic_write_text
from lalr_core.core.results.provenance import device_info, package_versions, provenance

HERE = Path(__file__).resolve().parent
PREFIX = "bench_"
COLUMNS = ("bench", "case", "ours_label", "ours", "baseline_label", "baseline", "unit", "ratio",
           "note")
# the packages the scripts compare against, beside provenance's torch / numpy / matplotlib
BASELINE_PACKAGES = ("scipy", "pandas", "curvlinops-for-pytorch", "powerlaw", "weightwatcher")
TAIL_LINES = 20  # output lines kept per script, for a failure's note


# ----------------------------------------------------------------------------- discovery
def discover(folder: Path, only: str | None) -> dict[str, Path]:
    """name -> script, for every ``bench_<name>.py`` in ``folder`` (sorted), or the ``only`` ones.

    Raises:
        ValueError: if ``only`` names a benchmark that is not there.
    """
    found = {p.stem[len(PREFIX):]: p for p in sorted(folder.glob(f"{PREFIX}*.py"))}
    if not only:
        return found
    wanted = [w.strip().removeprefix(PREFIX).removesuffix(".py") for w in only.split(",")]
    unknown = [w for w in wanted if w and w not in found]
    if unknown:
        raise ValueError(f"--only: no benchmark {unknown} in {folder}; there are {sorted(found)}")
    return {w: found[w] for w in found if w in wanted}


# ----------------------------------------------------------------------------- running
def _children_cpu_s() -> float:
    """CPU seconds (user + system) of the finished child processes so far: beside the wall
    time, it says how much a run on a shared machine was slowed by others."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def script_args(script: Path, quick: bool) -> list[str]:
    """``["--quick"]`` under ``quick`` for a script whose argparse has that option, else none."""
    return ["--quick"] if quick and '"--quick"' in script.read_text() else []


def read_rows(path: Path) -> tuple[list[dict], str]:
    """The rows a script appended to ``path``, and why not all of them could be read."""
    rows, bad = [], 0
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            bad += 1
    return rows, f"{bad} unreadable row lines" if bad else ""


def run_script(name: str, script: Path, rows_path: Path, args: list[str]) -> dict:
    """Run one script, stream its output, and return its record with the rows it emitted."""
    env = {**os.environ, ROWS_ENV: str(rows_path), "PYTHONUNBUFFERED": "1",
           # _common.py is importable from a script in any --benchmarks folder
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    print(f"\n===== {' '.join([script.name, *args])} =====", flush=True)
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    t0, cpu0 = time.perf_counter(), _children_cpu_s()
    with subprocess.Popen([sys.executable, str(script), *args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as proc:
        for line in proc.stdout:                     # stream, keeping the tail for a failure
            sys.stdout.write(line)
            sys.stdout.flush()
            tail.append(line.rstrip())
    wall, cpu = time.perf_counter() - t0, _children_cpu_s() - cpu0
    rows, unreadable = read_rows(rows_path)
    rec = {"script": script.name, "args": args, "returncode": proc.returncode, "wall_s": wall,
           "cpu_s": cpu, "load_avg_end": os.getloadavg()[0], "rows": len(rows)}
    failed = proc.returncode != 0 or not rows or bool(unreadable)
    if failed:
        why = (f"exit code {proc.returncode}" if proc.returncode else
               unreadable or "emitted no row")
        last = next((t for t in reversed(tail) if t.strip()), "")
        rows.append(failed_row(name, f"FAILED: {why}" + (f": {last}" if last else "")))
    print(f"===== {script.name}: exit code {proc.returncode}, {wall:.1f} s wall, {cpu:.1f} s CPU, "
          f"{rec['rows']} rows", flush=True)
    return {**rec, "failed": failed, "table": rows}


def failed_row(name: str, note: str) -> dict:
    """The table's row for a script that failed: no costs, no ratio, the reason in ``note``."""
    r = BenchRow(name, "script failed", "", "", math.nan, math.nan, unit="", note=note)
    return {**dataclasses.asdict(r), "ratio": math.nan}


# ----------------------------------------------------------------------------- the table
def _num(x) -> float | None:
    """A finite float, or None (JSON's null, an empty CSV cell) for NaN, inf or None."""
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _fmt(x, unit: str) -> str:
    x = _num(x)
    if x is None:
        return "-"
    return f"{x:.4g} {unit}".strip()


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(rows: list[dict]) -> str:
    """The table: bench, case, ours, baseline, ratio (``baseline / ours``, e.g. ``3.21x``), note."""
    lines = ["| bench | case | ours | baseline | ratio | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        ours = f"{r['ours_label']}: {_fmt(r['ours'], r['unit'])}" if r["ours_label"] else "-"
        base = f"{r['baseline_label']}: {_fmt(r['baseline'], r['unit'])}" \
            if r["baseline_label"] else "-"
        ratio = "-" if _num(r["ratio"]) is None else f"{r['ratio']:.2f}x"
        lines.append("| " + " | ".join(_cell(c) for c in (r["bench"], r["case"], ours, base,
                                                            ratio, r["note"])) + " |")
    return "\n".join(lines) + "\n"


def csv_text(rows: list[dict]) -> str:
    """The rows as CSV (``COLUMNS``); NaN costs and ratios as empty cells."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({**r, **{k: _num(r[k]) for k in ("ours", "baseline", "ratio")}})
    return buf.getvalue()


# ----------------------------------------------------------------------------- provenance
def sidecar(rows: list[dict], scripts: list[dict], wall_s: float, options: dict) -> str:
    """The JSON record: rows (NaN as null), each script's run, options, provenance, device."""
    clean = [{**r, **{k: _num(r[k]) for k in ("ours", "baseline", "ratio")}} for r in rows]
    record = {"rows": clean, "scripts": scripts, "options": options, "wall_s": wall_s,
              **provenance(device=device_info(), versions=package_versions(*BASELINE_PACKAGES),
                           load_avg_end=os.getloadavg()[0])}
    return json.dumps(record, indent=2, allow_nan=False) + "\n"


# ----------------------------------------------------------------------------- entry point
def main(argv: list[str] | None = None) -> int:
    """Run the scripts, write and print the table; 1 if any script failed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None, help="comma-separated names, e.g. spectral,ntk")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: $LALR_FIGURES_ROOT/bench or figures/bench)")
    parser.add_argument("--quick", action="store_true",
                        help="pass --quick to the scripts that have it (fewer repeats: noisier)")
    parser.add_argument("--benchmarks", type=Path, default=HERE,
                        help="folder of the bench_*.py scripts (default: this one)")
    args = parser.parse_args(argv)
    try:
        todo = discover(args.benchmarks.resolve(), args.only)
    except ValueError as e:
        parser.error(str(e))
    if not todo:
        parser.error(f"no {PREFIX}*.py in {args.benchmarks}")
    if args.out is None:
        from lalr_core.core.results.writer import default_root  # local: matplotlib, pandas take seconds

        args.out = default_root() / "bench"
    out = args.out
    t0, rows, scripts = time.perf_counter(), [], []
    with tempfile.TemporaryDirectory(prefix="lalr_bench_") as tmp:
        for name, script in todo.items():
            rec = run_script(name, script, Path(tmp) / f"{name}.jsonl",
                             script_args(script, args.quick))
            rows += rec.pop("table")
            scripts.append(rec)
    wall = time.perf_counter() - t0
    table = markdown(rows)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "bench.csv", csv_text(rows))
    atomic_write_text(out / "bench.md", table)
    options = {"only": args.only, "quick": args.quick, "benchmarks": str(args.benchmarks)}
    atomic_write_text(out / "bench.json", sidecar(rows, scripts, wall, options))
    failed = [s["script"] for s in scripts if s["failed"]]
    print(f"\n{len(rows)} rows from {len(scripts)} scripts in {wall:.0f} s -> {out}/bench.*\n")
    print(table)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
