"""benchmarks/run_all.py (``make bench``): one table from every bench_*.py, failures included."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[1] / "benchmarks" / "run_all.py"

GOOD = '''
from _common import BenchRow, emit_rows  # the real one: run_all.py puts benchmarks/ on PYTHONPATH
print("measuring")
emit_rows([BenchRow("good", "case A", "ours", "plain", 2.0, 6.0),
           BenchRow("good", "case B", "lanczos", "power", 10, 25, unit="matvecs",
                    note="target >= 3x fewer: NOT met")])
'''
BAD = '''
print("about to fail")
raise RuntimeError("boom")
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    (tmp / "benchmarks").mkdir()
    (tmp / "benchmarks" / "bench_good.py").write_text(GOOD)
    (tmp / "benchmarks" / "bench_bad.py").write_text(BAD)
    (tmp / "benchmarks" / "helper.py").write_text("raise SystemExit(3)\n")  # not a bench_*.py
    done = subprocess.run([sys.executable, str(RUNNER), "--benchmarks", str(tmp / "benchmarks"),
                           "--out", str(tmp / "out")], check=False, capture_output=True,
                          text=True, timeout=120)
    return done, tmp / "out"


def test_failing_script_gives_nonzero_exit_and_streams_output(run):
    done, _ = run
    assert done.returncode == 1, done.stderr
    assert "measuring" in done.stdout and "about to fail" in done.stdout
    assert "FAILED: bench_bad.py" in done.stdout


def test_csv_rows_and_ratios(run):
    _, out = run
    rows = list(csv.DictReader((out / "bench.csv").open()))
    assert [(r["bench"], r["case"]) for r in rows] == [
        ("bad", "script failed"), ("good", "case A"), ("good", "case B")]
    assert float(rows[1]["ratio"]) == 3.0 and float(rows[2]["ratio"]) == 2.5
    assert rows[2]["unit"] == "matvecs" and rows[2]["note"] == "target >= 3x fewer: NOT met"
    bad = rows[0]
    assert bad["ratio"] == "" and bad["note"].startswith("FAILED: exit code 1")
    assert "RuntimeError: boom" in bad["note"]


def test_markdown_table(run):
    done, out = run
    md = (out / "bench.md").read_text()
    assert md.splitlines()[0] == "| bench | case | ours | baseline | ratio | note |"
    assert "| good | case A | ours: 2 s | plain: 6 s | 3.00x |  |" in md
    assert "| good | case B | lanczos: 10 matvecs | power: 25 matvecs | 2.50x |" in md
    assert "| bad | script failed | - | - | - |" in md
    assert md in done.stdout                                     # printed at the end


def test_sidecar_has_rows_provenance_and_device(run):
    _, out = run
    side = json.loads((out / "bench.json").read_text())
    assert [r["ratio"] for r in side["rows"]] == [None, 3.0, 2.5]
    assert {s["script"]: (s["returncode"], s["rows"], s["failed"]) for s in side["scripts"]} == {
        "bench_bad.py": (1, 0, True), "bench_good.py": (0, 2, False)}
    assert {"commit", "dirty", "environment", "timestamp_utc"} <= set(side)
    assert side["device"]["cores"] >= 1 and side["device"]["cpu"]
    assert "gpus" in side["device"] and "powerlaw" in side["versions"]


def test_only_rejects_unknown_name(tmp_path):
    done = subprocess.run([sys.executable, str(RUNNER), "--benchmarks", str(tmp_path),
                           "--only", "nope"], check=False, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "nope" in done.stderr
