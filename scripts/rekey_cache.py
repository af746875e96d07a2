"""Keep a run cache across the change of code fingerprint (issue 26): re-key the entries whose
code is provably today's.

Until 2026-11-28 a unit's code fingerprint hashed ``ast.dump`` of its modules, which differs
between Python versions (3.12 dumps ``type_params=[]`` in every function and class). Entries
computed on a Python 3.12 GPU machine therefore missed the cache of a Python 3.11 machine, and
the fingerprint is now taken of `code_hash.canonical_dump`, which changes every key once.

For each entry this script recomputes the old fingerprint of the entry's own module list from
today's sources (with `code_hash` itself as it was at ``--before``, the last commit of the old
scheme), as Python 3.11 and as Python 3.12 would have written it. Where one equals the
fingerprint the entry recorded, the entry was computed from today's code, and it is moved to the
key it has now (its meta.json updated). Any other entry is left where it is (``prune`` can
remove it). Usage: ``python scripts/rekey_cache.py [--root DIR] [--dry-run]``.

``--code-at REF`` (a commit, or a folder holding a ``lalr_core`` package) does the same across
an edit of code every run depends on (the core): an entry whose fingerprint is that of REF's
sources (today's scheme) is moved to today's key. The script prints each module of the entries'
code whose source differs between REF and today; moving is a claim that none of those edits
changes a run's numbers (a refactor, a rehearsal-only path), so read them first (``--dry-run``).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import lalr_core.chapters  # noqa: F401
from lalr_core.core.loop.registry import discover
from lalr_core.core.atomic_io import atomic_write_text
from lalr_core.core.runs import code_hash
from lalr_core.core.runs.cache import RunCache
from lalr_core.core.runs.keys import META_FILE, family_unit

_GAINED_IN_312 = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)  # type_params=[]


def _dump_311(tree: ast.AST) -> str:
    return ast.dump(tree)


def _dump_312(tree: ast.AST) -> str:
    """``ast.dump`` as Python 3.12 writes it, from a 3.11 tree (the field it added, empty)."""
    saved = {c: c._fields for c in _GAINED_IN_312}
    try:
        for c in _GAINED_IN_312:
            c._fields = (*c._fields, "type_params")
        for node in ast.walk(tree):
            if isinstance(node, _GAINED_IN_312):
                node.type_params = []
        return ast.dump(tree)
    finally:
        for c, fields in saved.items():
            c._fields = fields


@functools.cache
def old_fingerprints(modules: tuple[str, ...], old_code_hash: Path) -> frozenset[str]:
    """The fingerprints the old scheme gave ``modules`` from today's sources, with the old
    ``code_hash`` module's source at ``old_code_hash`` (as Python 3.11 and 3.12 dumped it)."""
    out = set()
    package_file = code_hash._package_file

    def old_package_file(name, root):
        return (old_code_hash, False) if name == code_hash.__name__ else package_file(name, root)

    for dump in (_dump_311, _dump_312):
        original = code_hash.canonical_dump
        code_hash.canonical_dump, code_hash._package_file = dump, old_package_file
        code_hash.clear_cache()
        try:
            out.add(code_hash.code_fingerprint(modules))
        finally:
            code_hash.canonical_dump, code_hash._package_file = original, package_file
            code_hash.clear_cache()
    return frozenset(out)


def _tree_at(ref: str) -> Path:
    """A folder holding the ``lalr_core`` package as it is at ``ref`` (a commit or a folder)."""
    if Path(ref, "lalr_core").is_dir():
        return Path(ref)
    out = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "archive", ref, "lalr_core"], check=True,
                             capture_output=True, cwd=Path(__file__).resolve().parents[1]).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def changed_modules(modules, root: Path) -> list[str]:
    """The modules of ``modules``' closure (today's) whose source differs under ``root``."""
    here = Path(code_hash.__file__).resolve().parents[3]
    out = []
    for name in code_hash.module_closure(modules):
        found = code_hash._package_file(name, str(here))
        if found is None:  # outside the package (torch, say): not ours to compare
            continue
        rel = found[0].relative_to(here)
        old = root / rel
        if not old.is_file() or old.read_bytes() != (here / rel).read_bytes():
            out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, help="cache root (default $LALR_RUNS_ROOT or data/runs)")
    ap.add_argument("--dry-run", action="store_true", help="only count")
    ap.add_argument("--before", default="f26e0b8",
                    help="a commit whose code_hash.py has the old scheme (default f26e0b8)")
    ap.add_argument("--code-at", help="a commit (or folder with lalr_core) whose code made the "
                    "entries to move: today's scheme over its sources")
    args = ap.parse_args(argv)
    if args.code_at:
        tree = _tree_at(args.code_at)

        def made_there(meta) -> bool:
            return meta["code_fingerprint"] == code_hash.code_fingerprint(
                meta["code_modules"], root=tree)
    else:
        old_code_hash = Path(tempfile.mkdtemp()) / "code_hash.py"
        old_code_hash.write_bytes(subprocess.run(
            ["git", "show", f"{args.before}:lalr_core/core/runs/code_hash.py"], check=True,
            capture_output=True, cwd=Path(__file__).resolve().parents[1]).stdout)

        def made_there(meta) -> bool:
            return meta["code_fingerprint"] in old_fingerprints(tuple(meta["code_modules"]),
                                                                old_code_hash)
    discover()  # imports every method module, registering every run family's unit
    cache = RunCache(args.root)
    edited: set[str] = set()
    counts = {"moved": 0, "current": 0, "other code": 0, "no unit": 0}
    for family in sorted(p for p in cache.root.iterdir() if p.is_dir()):
        fn = family_unit(family.name)
        for entry in sorted(p for p in family.iterdir() if p.is_dir() and p.name[0] != "."):
            meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
            if fn is None or "code_modules" not in meta:
                counts["no unit"] += 1
                continue
            key = cache.key(meta["params"], name=family.name)
            if key == entry.name:
                counts["current"] += 1
            elif not made_there(meta):
                counts["other code"] += 1
            else:
                counts["moved"] += 1
                if args.code_at:
                    edited.update(changed_modules(meta["code_modules"], tree))
                if not args.dry_run and not (family / key).exists():
                    fingerprint = code_hash.code_fingerprint(meta["code_modules"])
                    atomic_write_text(entry / META_FILE, json.dumps(
                        {**meta, "hash": key, "code_fingerprint": fingerprint}, indent=1, sort_keys=True))
                    entry.rename(family / key)
    print(json.dumps(counts))
    if edited:
        print("moved across edits of: " + ", ".join(sorted(edited)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
