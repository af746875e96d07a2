"""Did a refactor change any result? Compare two `figures/<profile>` trees.

Usage:
    python scripts/compare_checks.py snapshot figures/quick before.json
    python scripts/compare_checks.py compare before.json figures/quick
    python scripts/compare_checks.py compare results/quick figures/quick    # make compare
    python scripts/compare_checks.py counts before.json figures/quick

``snapshot`` records every check of every chapter (item, claim, verdict, our numbers, the
source's numbers, detail) and a sha256 of every table CSV; ``compare`` reports each check or
table that differs, and exits 1 if any does. Provenance that must differ between two runs
(commit, dirty flag, timestamps) is left out, and so are the numbers a wall clock measures
(declared in ``WALL_CLOCK_CHECKS`` and ``WALL_CLOCK_COLUMNS``: an overhead ratio, a timing slope,
seconds per epoch): they move with the machine's load, so of those checks only the verdict is
compared (in ``checks.json`` and in a chapter's ``verdicts.csv``), and of those tables only the
other columns. Use it before and after a change that should not
change any result (same profile, same thread count, from an empty cache). ``before`` may also
be a folder with the same ``<chapter>/checks.json`` layout, such as the committed snapshot
``results/quick``: then ``compare`` tells whether a fresh run reproduces it. ``counts`` prints, per
chapter, the claim tests and sanity checks by verdict before and after a change that should
change results (a record written before checks had kinds counts as ``unclassified``).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import sys
from pathlib import Path

CHECK_FIELDS = ("item_id", "claim", "kind", "verdict", "passed", "detail", "ours", "source",
                "interval", "source_effect", "half_width", "underpowered")


# Checks whose numbers are wall-clock measurements: (chapter, item, start of the claim).
WALL_CLOCK_CHECKS = (
    ("01_lalr", "L-C7", "the metric overhead is negligible"),
    ("07_signal_propagation", "E8", "Linformer's time grows more slowly"),
)
WALL_CLOCK_FIELDS = ("item_id", "claim", "kind", "verdict", "passed")
# Table columns that a wall clock measures (seconds, and ratios of seconds).
WALL_CLOCK_COLUMNS = {
    "01_lalr/X-L1.csv": ("t_epoch_s", "t_metrics_s", "t_grouping_s", "t_svd_s", "t_ce_s",
                         "t_cs_s", "r"),
}


def _is_wall_clock(chapter: str, row: dict) -> bool:
    return any(chapter == c and row.get("item_id") == i and str(row.get("claim", "")).startswith(s)
               for c, i, s in WALL_CLOCK_CHECKS)


# A chapter's verdict table repeats its checks: a wall-clock check's row there keeps its
# verdict, not its numbers.
VERDICT_TABLE, VERDICT_NUMBERS = "verdicts.csv", "our numbers"


def _table_digest(rel: str, data: bytes) -> str:
    """sha256 of a table, without the columns (or the verdict table's cells) a wall clock
    measures."""
    chapter, _, name = rel.rpartition("/")
    drop = WALL_CLOCK_COLUMNS.get(rel, ())
    if drop or name == VERDICT_TABLE:
        reader = csv.DictReader(io.StringIO(data.decode()))
        rows, head = list(reader), reader.fieldnames or []
        for r in rows:
            if VERDICT_NUMBERS in r and _is_wall_clock(
                    chapter, {"item_id": r.get("claim"), "claim": r.get("what we test", "")}):
                r[VERDICT_NUMBERS] = "(wall clock)"
        out = io.StringIO()
        writer = csv.DictWriter(out, [c for c in head if c not in drop], extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        data = out.getvalue().encode()
    return hashlib.sha256(data).hexdigest()


def machine_of(row: dict) -> str:
    """What a check's floats depend on beyond its config: the CPU model, the instruction set
    torch's kernels used (recorded since 2026-12), the torch version."""
    env = row.get("environment") or {}
    return (f"{env.get('cpu', '?')} ({env.get('cpu_capability', 'capability not recorded')}), "
            f"torch {env.get('torch', '?')}")


def snapshot(figures: Path) -> dict:
    """``{"checks": {chapter: [check, ...]}, "tables": {relative csv path: sha256},
    "machines": [machine_of(check), ...]}`` (the machines sorted, each once)."""
    checks, machines = {}, set()
    for path in sorted(figures.glob("*/checks.json")):
        chapter = path.parent.name
        rows = json.loads(path.read_text())
        machines |= {machine_of(row) for row in rows}
        checks[chapter] = [
            {k: row.get(k) for k in (WALL_CLOCK_FIELDS if _is_wall_clock(chapter, row)
                                     else CHECK_FIELDS)}
            for row in rows]
    tables = {}
    for p in sorted(figures.glob("*/*.csv")):
        rel = p.relative_to(figures).as_posix()
        tables[rel] = _table_digest(rel, p.read_bytes())
    return {"checks": checks, "tables": tables, "machines": sorted(machines)}


def differences(before: dict, after: dict) -> list[str]:
    """Human-readable lines, one per differing check, table, or missing / extra item."""
    out = []
    for chapter in sorted(set(before["checks"]) | set(after["checks"])):
        a, b = before["checks"].get(chapter), after["checks"].get(chapter)
        if a is None or b is None:
            out.append(f"{chapter}: checks.json only in {'after' if a is None else 'before'}")
            continue
        if len(a) != len(b):
            out.append(f"{chapter}: {len(a)} checks before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            diff = {k: (x.get(k), y.get(k)) for k in CHECK_FIELDS if x.get(k) != y.get(k)}
            if diff:  # a field absent from an older snapshot counts as None
                out.append(f"{chapter} #{i} {x['item_id']} ({x['claim'][:60]}): {diff}")
    for table in sorted(set(before["tables"]) | set(after["tables"])):
        a, b = before["tables"].get(table), after["tables"].get(table)
        if a != b:
            out.append(f"table {table}: " + ("missing after" if b is None else
                                             "new" if a is None else "content differs"))
    return out


_VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "N/A")


def verdict_changes(before: dict, after: dict) -> list[str]:
    """One line per check present in both whose verdict differs (matched by chapter and
    position, as `differences` matches them)."""
    out = []
    for chapter in sorted(set(before["checks"]) & set(after["checks"])):
        for i, (x, y) in enumerate(zip(before["checks"][chapter], after["checks"][chapter])):
            if x.get("verdict") != y.get("verdict"):
                out.append(f"{chapter} #{i} {x['item_id']}: {x.get('verdict')} -> "
                           f"{y.get('verdict')} ({str(x.get('claim', ''))[:60]})")
    return out


def summary_lines(before: dict, after: dict, diffs: list[str]) -> list[str]:
    """What a reader needs first: whether the two runs shared a machine (floats are
    bit-identical only on one CPU and instruction set), and which verdicts changed."""
    out = []
    a, b = before.get("machines"), after.get("machines")
    if a and b and a != b:
        out.append(f"machines differ: before {'; '.join(a)}; after {'; '.join(b)} (their float "
                   "sums differ and training amplifies that: numbers move within their noise; "
                   "compare the verdicts)")
    changed = verdict_changes(before, after)
    n = sum(len(rows) for rows in after["checks"].values())
    out.append(f"{len(diffs)} differences; verdicts changed: {len(changed)} of {n} checks")
    return out + [f"  {line}" for line in changed]


def counts(snap: dict) -> dict[str, dict[str, dict[str, int]]]:
    """``{chapter: {kind: {verdict: n}}}`` of a snapshot."""
    out: dict = {}
    for chapter, rows in snap["checks"].items():
        for row in rows:
            kind = row.get("kind") or "unclassified"
            by = out.setdefault(chapter, {}).setdefault(kind, dict.fromkeys(_VERDICTS, 0))
            by[row["verdict"]] = by.get(row["verdict"], 0) + 1
    return out


def counts_table(before: dict, after: dict) -> str:
    """A Markdown table: per chapter and kind, the verdict counts before and after."""
    a, b = counts(before), counts(after)
    lines = ["| chapter | kind | before (P/F/I/NA) | after (P/F/I/NA) |", "|---|---|---|---|"]
    for chapter in sorted(set(a) | set(b)):
        for kind in sorted(set(a.get(chapter, {})) | set(b.get(chapter, {}))):
            cells = ["/".join(str(x.get(chapter, {}).get(kind, {}).get(v, 0)) for v in _VERDICTS)
                     for x in (a, b)]
            lines.append(f"| {chapter} | {kind} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def load_before(before: Path) -> dict:
    """A snapshot from a JSON file written by ``snapshot``, or made now from a folder."""
    return snapshot(before) if before.is_dir() else json.loads(before.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("figures", type=Path)
    snap.add_argument("out", type=Path)
    comp = sub.add_parser("compare")
    comp.add_argument("before", type=Path)
    comp.add_argument("figures", type=Path)
    cnt = sub.add_parser("counts")
    cnt.add_argument("before", type=Path)
    cnt.add_argument("figures", type=Path)
    args = parser.parse_args(argv)
    if not args.figures.is_dir():
        parser.error(f"{args.figures} is not a folder of figures")
    if args.cmd == "snapshot":
        snap_ = snapshot(args.figures)
        args.out.write_text(json.dumps(snap_, indent=1, sort_keys=True))
        n = sum(map(len, snap_["checks"].values()))
        print(f"{n} checks in {len(snap_['checks'])} chapters, {len(snap_['tables'])} tables")
        return 0
    if args.cmd == "counts":
        print(counts_table(load_before(args.before), snapshot(args.figures)))
        return 0
    before, after = load_before(args.before), snapshot(args.figures)
    diffs = differences(before, after)
    print("\n".join(diffs + [""] + summary_lines(before, after, diffs)) if diffs
          else "identical: every check and table")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
