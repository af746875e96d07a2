"""`scripts/rekey_cache.py`: an entry made before the change of code fingerprint (issue 26),
of today's code, is moved to its new key and found; an entry of other code stays where it is.

Oracle: the old `code_hash` module itself (from git), run on a copy of today's package with
that module in place: the fingerprint the old code gave today's sources."""

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from lalr_core.chapters import chapter
from lalr_core.core.runs.cache import RunCache
from lalr_core.core.runs.keys import META_FILE, param_hash
from lalr_core.core.runs.units import train_unit

REPO = Path(__file__).resolve().parents[1]
OLD = "f26e0b8"  # the last commit of the ast.dump scheme


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_fingerprint(modules: list[str], tmp_path: Path) -> str:
    shown = subprocess.run(["git", "show", f"{OLD}:lalr_core/core/runs/code_hash.py"],
                           check=False, cwd=REPO, capture_output=True)
    if shown.returncode:
        pytest.skip(f"commit {OLD} is not in this clone's history")
    root = tmp_path / "old"
    shutil.copytree(REPO / "lalr_core", root / "lalr_core")
    (root / "lalr_core/core/runs/code_hash.py").write_bytes(shown.stdout)
    old = _load(root / "lalr_core/core/runs/code_hash.py", "old_code_hash")
    return old.code_fingerprint(modules, root=root)


def _age(cache: RunCache, params: dict, fingerprint: str) -> Path:
    """Move the unit's entry to the key `fingerprint` gives it, as the old scheme stored it."""
    entry = cache.path("train", params, fn=train_unit)
    meta = json.loads((entry / META_FILE).read_text())
    key = param_hash(params, code=fingerprint)
    (entry / META_FILE).write_text(json.dumps({**meta, "hash": key,
                                                "code_fingerprint": fingerprint}))
    return entry.rename(entry.parent / key)


def _two_entries(cache: RunCache, result: dict) -> tuple[dict, dict, list[str]]:
    """Two of chapter 04's smoke runs cached with ``result``, and the first's code modules."""
    ch = chapter("04")
    settings = ch.settings("smoke")
    configs, _ = ch.runs(settings, next(iter(ch.sections(settings))))
    first, other = ({"run": c.key(), "callbacks": {}} for c in configs[:2])
    for params in (first, other):
        cache.put("train", params, result, fn=train_unit)
    modules = json.loads((cache.path("train", first, fn=train_unit) / META_FILE).read_text())[
        "code_modules"]
    return first, other, modules


def test_rekey_moves_todays_code_and_leaves_other_code(tmp_path):
    rekey = _load(REPO / "scripts" / "rekey_cache.py", "rekey_cache")
    cache = RunCache(tmp_path / "runs")
    today, other, modules = _two_entries(cache, {"loss": 1.0})
    _age(cache, today, _old_fingerprint(modules, tmp_path))
    stale = _age(cache, other, "0" * 16)
    assert not cache.lookup("train", today, fn=train_unit)[0]     # the old key misses
    assert rekey.main(["--root", str(tmp_path / "runs")]) == 0
    assert cache.lookup("train", today, fn=train_unit) == (True, {"loss": 1.0})
    assert stale.is_dir() and not cache.lookup("train", other, fn=train_unit)[0]


def test_code_at_moves_entries_made_by_that_code_and_names_the_edits(tmp_path, capsys):
    """Oracle: today's scheme over a copy of the package with one core module edited (the
    'earlier code'); its entry moves, with the edited module named; other code stays."""
    rekey = _load(REPO / "scripts" / "rekey_cache.py", "rekey_cache")
    from lalr_core.core.runs import code_hash

    cache = RunCache(tmp_path / "runs")
    then, other, modules = _two_entries(cache, {"loss": 2.0})
    earlier = tmp_path / "earlier"
    shutil.copytree(REPO / "lalr_core", earlier / "lalr_core")
    edited = earlier / "lalr_core/core/rehearsal.py"
    edited.write_text(edited.read_text() + "\n\ndef _gone():\n    return 1\n")
    old = code_hash.code_fingerprint(modules, root=earlier)
    assert old != code_hash.code_fingerprint(modules)              # the edit is in the closure
    _age(cache, then, old)
    stale = _age(cache, other, "1" * 16)
    assert rekey.main(["--root", str(tmp_path / "runs"), "--code-at", str(earlier)]) == 0
    assert cache.lookup("train", then, fn=train_unit) == (True, {"loss": 2.0})
    assert stale.is_dir() and not cache.lookup("train", other, fn=train_unit)[0]
    assert "moved across edits of: lalr_core.core.rehearsal" in capsys.readouterr().out
