"""One chapter's paper notebook rehearsed end to end (``make figures PROFILE=paper REHEARSE=1
CHAPTERS=04``): its figure, table and check code met the paper grid, every output is marked as
a rehearsal, and nothing was written into the real run cache or the real figures."""

import json
import os
import subprocess
import sys

from conftest import REPO

CHAPTER = "04"  # trains through the loop (ResNet-20, synthetic CIFAR-10) and draws 25 items


def test_a_paper_notebook_rehearses_to_its_end_and_marks_everything(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "figures"
    env = {**os.environ, "LALR_RUNS_ROOT": str(runs), "LALR_FIGURES_ROOT": str(out),
           "LALR_DATA_ROOT": str(tmp_path / "no-data")}  # no CIFAR-10: drawn synthetic
    env.pop("LALR_REHEARSE", None)
    proc = subprocess.run(
        [sys.executable, "-m", "lalr_core.driver", "--profile", "paper", "--chapters", CHAPTER,
         "--rehearse", "--out", str(out), "--notebooks", str(REPO / "notebooks")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1200, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    profile = out / "rehearsal" / "paper"
    report = (profile / "REPORT.md").read_text()
    assert report.startswith("# Report: profile `paper` (REHEARSAL)")
    [chapter] = [p for p in profile.iterdir() if p.is_dir() and p.name.startswith(CHAPTER)]
    checks = json.loads((chapter / "checks.json").read_text())
    assert checks and all(c["rehearsal"] is True for c in checks)
    sidecars = [json.loads(p.read_text()) for p in chapter.glob("*.json")
                if p.name != "checks.json"]
    assert len(sidecars) >= 20 and all(s["rehearsal"] is True for s in sidecars)
    assert not runs.exists() and (tmp_path / "runs-rehearsal").is_dir()
    assert not (out / "paper").exists()           # the real paper figures are untouched
    assert not (tmp_path / "no-data").exists()    # nothing downloaded or unpacked
