"""`scripts/train_sections.py`: the sections it is given are checked before any compute, and
what it packs to bring home is every complete cache entry and nothing else."""

import importlib.util
import tarfile
from pathlib import Path

import pytest

from lalr_core.core.runs.keys import CKPT_PREFIX, LOCK_PREFIX, TMP_PREFIX

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "train_sections.py"


@pytest.fixture(scope="module")
def ts():
    spec = importlib.util.spec_from_file_location("train_sections", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_section_names_a_known_chapter(ts):
    assert ts.parse_section("03:T1") == ("03", "T1")
    for bad in ("03", "03:", "99:T1"):
        with pytest.raises(ValueError):
            ts.parse_section(bad)


def test_unknown_sections_are_refused_before_anything_trains(ts, tmp_path, monkeypatch):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path / "runs"))
    with pytest.raises(ValueError, match="unknown section 'nope'"):
        ts.main(["--profile", "smoke", "06:fig5.7", "03:nope"])
    assert not (tmp_path / "runs" / "train").exists()


def test_pack_holds_the_complete_entries_only(ts, tmp_path):
    root = tmp_path / "runs"
    for name in ("abc", "def", "nometa"):
        (root / "train" / name).mkdir(parents=True)
        (root / "train" / name / "result.pkl").write_bytes(b"x")
        if name != "nometa":                                   # unreadable: no meta.json
            (root / "train" / name / "meta.json").write_text('{"created": "2026"}')
    (root / "train" / f"{TMP_PREFIX}ghi").mkdir()              # a unit being written
    (root / "train" / f"{CKPT_PREFIX}jkl").mkdir()             # an unfinished unit's checkpoint
    (root / "train" / f"{LOCK_PREFIX}abc").write_text("pid")   # a lock file
    assert ts.pack(root, tmp_path / "runs.tgz") == 2
    with tarfile.open(tmp_path / "runs.tgz") as tar:
        assert sorted(tar.getnames()) == [
            "train/abc", "train/abc/meta.json", "train/abc/result.pkl",
            "train/def", "train/def/meta.json", "train/def/result.pkl"]
