"""The inventory of source items (``data/reference/inventory.csv``): every figure and table of the
sources, the chapter that reproduces it, its kind and the source's claim. Read by the figure
writer (how many items a chapter has) and by the report (one row per item).
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from lalr_core.core.results.provenance import repo_root

INVENTORY_COLUMNS = ("chapter", "item_id", "kind", "caption", "source_claim", "source_numbers")


def default_inventory() -> Path:
    """``<repo>/data/reference/inventory.csv``."""
    return repo_root() / "data" / "reference" / "inventory.csv"


def read_inventory(path) -> list[dict]:
    """Rows of the inventory CSV as dicts keyed by :data:`INVENTORY_COLUMNS`.

    Raises:
        ValueError: if the file is missing, lacks a column, or repeats (chapter, item_id).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"inventory file {path} does not exist")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in INVENTORY_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"inventory {path} lacks columns {missing}")
        rows = [{c: (row[c] or "").strip() for c in INVENTORY_COLUMNS} for row in reader]
    keys = Counter((r["chapter"], r["item_id"]) for r in rows)
    repeated = [k for k, n in keys.items() if n > 1]
    if repeated:
        raise ValueError(f"inventory {path} repeats (chapter, item_id) {repeated}")
    return rows


def inventory_items(chapter: str) -> set[str]:
    """The item ids of ``chapter`` (its folder name) the sources' inventory lists (none when
    there is no inventory)."""
    path = default_inventory()
    return {r["item_id"] for r in read_inventory(path) if r["chapter"] == chapter} \
        if path.is_file() else set()


def inventory_count(chapter: str) -> int:
    """How many items of ``chapter`` the sources' inventory lists (0 when there is none)."""
    return len(inventory_items(chapter))
