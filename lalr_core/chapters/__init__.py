"""The chapters: one module (or package) per notebook, and the registry the driver reads.

Each chapter module holds its notebook's profile table, run builders and chapter-only units;
chapters import methods and the core, never each other. ``CHAPTERS`` names each chapter's
module and table; ``chapter_settings`` resolves a chapter's settings at a profile (with the
chapter's own checks), so bad input stops before any compute.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from lalr_core.core.config import resolve

# chapter id -> (module, profile table, settings check or None)
CHAPTERS: dict[str, tuple[str, str, str | None]] = {
    "02": ("ch02_tempbalance", "TEMPBALANCE", None),
    "02b": ("ch02b_htsr_pruning", "PRUNING", "check_settings"),
    "04": ("ch04_directedness", "DIRECTEDNESS", None),
    "06": ("ch06_orthogonal_sgdm", "ORTHOGONAL", None),
}


def chapter_table(chapter: str) -> dict[str, dict[str, Any]]:
    """The profile table of ``chapter`` (raises ``ValueError`` for an unknown chapter)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; known: {sorted(CHAPTERS)}")
    module, table, _ = CHAPTERS[chapter]
    return getattr(importlib.import_module(f"{__name__}.{module}"), table)


def chapter_settings(chapter: str, profile: str,
                     overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Resolved settings of ``chapter`` at ``profile`` (raises ``ValueError`` on bad input)."""
    settings = resolve(chapter_table(chapter), profile, overrides)
    module, _, check = CHAPTERS[chapter]
    if check is None:
        return settings
    return getattr(importlib.import_module(f"{__name__}.{module}"), check)(settings)
