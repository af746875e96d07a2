"""The chapters: one module (or package) per notebook, and the registry the driver reads.

Each chapter module holds its notebook's typed settings per profile, its sections' runs and
chapter-only units, as a `lalr_core.core.runs.chapter.Chapter` named ``CHAPTER``; chapters import
methods and the core, never each other. ``chapter_settings`` resolves a chapter's settings at
a profile, so bad input stops before any compute.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from lalr_core.core.runs.chapter import Chapter

CHAPTERS: dict[str, str] = {  # chapter id -> module
    "01": "ch01_lalr",
    "02": "ch02_tempbalance",
    "02b": "ch02b_htsr_pruning",
    "03": "ch03_ntk",
    "04": "ch04_directedness",
    "05": "ch05_quasi_newton",
    "05b": "ch05b_newton_natural_gradient",
    "06": "ch06_orthogonal_sgdm",
    "07": "ch07_signal_propagation",
    "08": "ch08_head_to_head",
}


def chapter(chapter_id: str) -> Chapter:
    """The `Chapter` object of ``chapter_id`` (raises ``ValueError`` for an unknown id)."""
    if chapter_id not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter_id!r}; known: {sorted(CHAPTERS)}")
    return importlib.import_module(f"{__name__}.{CHAPTERS[chapter_id]}").CHAPTER


def chapter_settings(chapter_id: str, profile: str, overrides: Mapping[str, Any] | None = None):
    """The checked settings of ``chapter_id`` at ``profile`` with ``overrides``.

    Raises ``ValueError`` for an unknown chapter, profile or setting, or a bad value.
    """
    return chapter(chapter_id).settings(profile, overrides)


def prepared_datasets(settings) -> set[str]:
    """The real datasets the data step (``make data``, the start of ``make figures``) makes
    available for a chapter's ``settings``: its ``datasets`` where it reads several (or none),
    else its one ``dataset`` unless it runs on synthetic data."""
    if hasattr(settings, "datasets"):
        return set(settings.datasets)
    return set() if getattr(settings, "synthetic", False) else {settings.dataset}
