"""``make snapshot`` (`lalr_core.snapshot`) and the committed ``results/`` it writes."""

import json
import re
from pathlib import Path

import pytest

from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.snapshot import PRESENTATION_PATHS, main, snapshot

REPO = Path(__file__).resolve().parents[1]


def _profile(root: Path, name: str, verdicts: list[str], commit: str = "a" * 40) -> None:
    folder = root / name / "04_directedness"
    folder.mkdir(parents=True)
    checks = [{"item_id": "fig3.8", "claim": f"c{i}", "kind": "claim", "verdict": v,
               "chapter": "04_directedness", "commit": commit, "dirty": False,
               "timestamp_utc": "2026-11-28T12:00:00+00:00"} for i, v in enumerate(verdicts)]
    (folder / "checks.json").write_text(json.dumps(checks))
    (folder / "E13.md").write_text("| a |\n|---|\n| 1 |\n")
    (folder / "E13.csv").write_text("a\n1\n")
    (folder / "fig3.8.png").write_bytes(b"png")
    (root / name / "REPORT.md").write_text(
        "# Report\n\n- items: 173 in the inventory, 22 present, 151 missing\n\n"
        "| 04_directedness | fig3.8 | [png](04_directedness/fig3.8.png) [md](04_directedness/E13.md) |\n")


def test_snapshot_copies_text_only_and_indexes_every_profile(tmp_path):
    figures, results = tmp_path / "figures", tmp_path / "results"
    _profile(figures, "quick", ["PASS", "FAIL", "INCONCLUSIVE"])
    _profile(figures, "rehearsal/paper", ["PASS"], commit="b" * 40)
    rows = snapshot(figures, results)
    assert [r["name"] for r in rows] == ["quick", "rehearsal/paper"]
    assert (results / "quick/04_directedness/checks.json").is_file()
    assert (results / "quick/04_directedness/E13.md").is_file()
    assert (results / "quick/04_directedness/E13.csv").is_file()
    assert not list(results.rglob("*.png"))
    report = (results / "quick/REPORT.md").read_text()
    assert "png (not in the snapshot)" in report and "[md](04_directedness/E13.md)" in report
    index = (results / "README.md").read_text()
    # items present are counted from the outputs (fig3.8: png; E13: md, csv), not from REPORT.md
    n_items = len(read_inventory(default_inventory()))
    assert f"| 1 / 1 / 1 / 0 | 0 | 2 of {n_items} |" in index
    assert "rehearsal: the profile's grid" in index and "bbbbbbb" in index
    # a profile absent from figures/ later keeps its snapshot; one present is replaced
    (figures / "quick/REPORT.md").unlink()
    _profile(figures, "paper", ["FAIL"])
    names = [r["name"] for r in snapshot(figures, results)]
    assert names == ["paper", "quick", "rehearsal/paper"]


def test_snapshot_without_reports_says_what_to_run(tmp_path, capsys):
    assert main(["--figures", str(tmp_path), "--results", str(tmp_path / "r")]) == 2
    assert "run `make figures` first" in capsys.readouterr().err


def test_the_committed_results_index_links_only_files_that_exist():
    index = REPO / "results" / "README.md"
    if not index.is_file():
        pytest.skip("no results/ snapshot committed")
    links = re.findall(r"\]\(([^)]+)\)", index.read_text())
    assert links and all((index.parent / link).is_file() for link in links)
    reports = {str(p.relative_to(index.parent)) for p in index.parent.rglob("REPORT.md")}
    assert reports == set(links)


def _git(repo: Path, *args: str) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_snapshot_refuses_outputs_that_head_did_not_make(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "lalr_core").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@t")
    _git(repo, "config", "user.name", "t")
    (repo / "lalr_core/m.py").write_text("x = 1\n")
    for path in PRESENTATION_PATHS:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("how = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    made_at = _git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("docs only\n")  # outside CODE_PATHS: still fresh
    for path in PRESENTATION_PATHS:  # code that only presents the records: still fresh
        (repo / path).write_text("how = 2\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "docs and presentation")
    figures, results = tmp_path / "figures", tmp_path / "results"
    _profile(figures, "quick", ["PASS"], commit=made_at)
    assert [r["name"] for r in snapshot(figures, results, repo=repo)] == ["quick"]
    # code changed since the records were made: refused, nothing rewritten
    (repo / "lalr_core/m.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "code")
    shutil_before = (results / "README.md").read_text()
    with pytest.raises(ValueError, match=r"whose code differs from HEAD in 1 files \(lalr_core/m.py\)"):
        snapshot(figures, results, repo=repo)
    assert (results / "README.md").read_text() == shutil_before
    # a dirty record and an unknown commit are refused too
    rows = json.loads((figures / "quick/04_directedness/checks.json").read_text())
    rows[0].update(dirty=True, commit=_git(repo, "rev-parse", "HEAD"))
    rows.append({**rows[0], "dirty": False, "commit": "f" * 40})
    (figures / "quick/04_directedness/checks.json").write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="dirty") as err:
        snapshot(figures, results, repo=repo)
    assert "which this repository does not hold" in str(err.value)
