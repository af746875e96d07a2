"""What a profile's outputs hold, as records: its check records and each inventory item's files.

Read by REPORT.md (:mod:`lalr_core.core.results.report`), the chapter pages
(:mod:`lalr_core.core.results.pages`), the book and the snapshot, so that all four show the
same items, files and verdicts. It only reads: nothing here decides a verdict.
"""

from __future__ import annotations

from pathlib import Path

from lalr_core.core.results.writer import CHECKS_FILE, read_checks

FILE_KINDS = ("png", "pdf", "csv", "md")  # an item's output files, in the order they are linked
CLAIM_TABLE = "verdicts"  # a chapter's one-row-per-claim table, the output of a "claim" item


def check_kind_of(check: dict) -> str:
    """A record's kind: ``claim``, ``sanity``, or ``unclassified`` (written before kinds)."""
    return check.get("kind") or "unclassified"


def split_sanity(checks: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(judged, sanity)``: the records shown as verdicts (claim tests, and records written
    before kinds) and the sanity checks, each in their order."""
    judged = [c for c in checks if check_kind_of(c) != "sanity"]
    return judged, [c for c in checks if check_kind_of(c) == "sanity"]


def _files(profile_dir: Path, chapter: str, item_id: str) -> dict[str, str]:
    """The item's existing output files: kind -> path relative to ``profile_dir``."""
    paths = {kind: f"{chapter}/{item_id}.{kind}" for kind in FILE_KINDS}
    return {kind: rel for kind, rel in paths.items() if (profile_dir / rel).is_file()}


def load_checks(profile_dir) -> list[dict]:
    """All check records under ``<profile_dir>/*/checks.json`` (chapter from the folder).

    Raises:
        ValueError: a corrupt checks file.
    """
    profile_dir = Path(profile_dir)
    records = []
    for path in sorted(profile_dir.glob(f"*/{CHECKS_FILE}")):
        for record in read_checks(path):
            records.append({**record, "chapter": path.parent.name})
    return records


def item_records(profile_dir, rows: list[dict], checks: list[dict] | None = None) -> list[dict]:
    """One record per inventory row: what REPORT.md's table and the chapter pages show.

    Args:
        profile_dir: ``<root>/<profile>``.
        rows: inventory rows (:func:`lalr_core.core.results.inventory.read_inventory`).
        checks: check records (:func:`load_checks`); read from ``profile_dir`` if ``None``.

    Returns:
        Each row's columns plus ``files`` (kind -> existing file, relative to
        ``profile_dir``, in the order of `FILE_KINDS`; a ``claim`` item without files of
        its own gets its chapter's verdict table) and ``checks`` (its check records).
    """
    profile_dir = Path(profile_dir)
    checks = load_checks(profile_dir) if checks is None else checks
    by_item: dict[tuple[str, str], list[dict]] = {}
    for c in checks:
        by_item.setdefault((c["chapter"], c["item_id"]), []).append(c)
    records = []
    for row in rows:
        files = _files(profile_dir, row["chapter"], row["item_id"])
        if not files and row["kind"] == "claim":  # a source without figures: its claims' table
            files = _files(profile_dir, row["chapter"], CLAIM_TABLE)
        records.append({**row, "files": files,
                        "checks": by_item.get((row["chapter"], row["item_id"]), [])})
    return records


def items_present(records: list[dict]) -> int:
    """How many of `item_records`' items have an output file (REPORT.md's "present")."""
    return sum(bool(rec["files"]) for rec in records)


def uninventoried(records: list[dict], checks: list[dict]) -> list[dict]:
    """The check records whose item the inventory rows of `item_records` do not list, in
    their order."""
    known = {(r["chapter"], r["item_id"]) for r in records}
    return [c for c in checks if (c["chapter"], c["item_id"]) not in known]
