"""Claims as data, findings as values: what a chapter tests and what one run of it found.

A check is one of two kinds (``KINDS``):

* ``"claim"``: a *claim test*. The source's claim, in the source's direction, judged against a
  null or a control arm; data exist on which it FAILs (its unit tests build them). REPORT.md
  counts only these as verdicts.
* ``"sanity"``: a *sanity check*. An identity, a mechanical property, a bug demonstration,
  anything that holds by construction or cannot fail on data the setting can produce. Listed
  apart in REPORT.md; it guards the code, it is not evidence for the source.

A chapter keeps its claims in a ``CLAIMS`` dict (id -> `Claim`) and one function per source
item that takes the runs' results and returns a frozen dataclass of its numbers and
`Finding`\\ s; the notebook then records each finding with ``FigureWriter.record``.

A claim test records the half-width of its interval, the smallest effect this profile can
decide, beside the source's effect where the source reports one (``source_effect``, in the
estimate's unit). When that effect lies within one half-width of the threshold the profile could
not have decided it even had it held exactly: REPORT.md says "underpowered at this profile"
(`underpowered`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lalr_core.core.results.evidence import MIN_REPLICATES, SIDES, Evidence

KINDS = ("claim", "sanity")
#: ``Claim.replicate`` of a claim tested by an exact computation on fixed inputs (a closed
#: form, a deterministic toy flow): a bool from it decides a verdict without replicates
DETERMINISTIC = "deterministic: an exact computation on fixed inputs, no replicate needed"


def bool_refusal(replicate: str, replicates: int | None) -> str:
    """Why a claim test's bare PASS / FAIL (a bool, no interval) may not decide a verdict
    (``""``: it may): it is neither `DETERMINISTIC` nor declared to hold over at least
    `MIN_REPLICATES` independent replicates (``replicates``: e.g. "in every seed" of 5)."""
    if replicate == DETERMINISTIC or (replicates is not None and replicates >= MIN_REPLICATES):
        return ""
    have = "an undeclared number of independent replicates" if replicates is None else \
        f"{replicates} independent replicate{'' if replicates == 1 else 's'}"
    return (f"a PASS / FAIL without an interval on {have}: a verdict needs "
            f">= {MIN_REPLICATES} (or a deterministic computation)")


def check_kind(kind) -> str:
    """``kind`` if it is one of `KINDS`.

    Raises:
        ValueError: anything else.
    """
    if kind not in KINDS:
        raise ValueError(f"check kind must be one of {KINDS}, got {kind!r}")
    return kind


@dataclass(frozen=True)
class Claim:
    """One thing a chapter tests.

    Attributes:
        id: unique within the chapter, e.g. ``"L-C8"`` or ``"fig4.6-final-loss"``.
        text: what we test, one line, in the source's direction.
        where: the source's section, figure or table.
        experiments: our experiments that test it (chapter 01's X-L ids), if named.
        quote: the source's own sentence behind the claim, verbatim.
        kind: ``"claim"`` or ``"sanity"`` (module docstring).
        item: the inventory item the check belongs to (default: ``id``).
        threshold, side: the claim on the estimate (`Evidence`'s ``threshold`` and ``side``),
            when it is judged on an interval; ``FigureWriter.record`` refuses evidence judged
            against anything else, so the data here is what is tested.
        source_effect: the source's own effect in the estimate's unit (e.g. +3.1 points), if
            the source reports one.
        unit: the estimate's unit, e.g. ``"points"``, ``"nats"``.
        replicate: what one independent replicate of the claim is (e.g. "a network trained
            from its own seed, pretraining included"; "a network at initialisation";
            `DETERMINISTIC` for an exact computation). Recorded with every verdict, with the
            count behind it.
        null: what the claim is judged against, where the effect is absent (the control arm,
            the same architecture at initialisation, noise through the same optimiser's
            filters). Recorded with every verdict.

    Raises:
        ValueError: an empty id or text, an unknown kind or side, a side without a threshold.
    """

    id: str
    text: str
    where: str = ""
    experiments: tuple[str, ...] = ()
    quote: str = ""
    kind: str = "claim"
    item: str | None = None
    threshold: float | None = None
    side: str | None = None
    source_effect: float | None = None
    unit: str = ""
    replicate: str = ""
    null: str = ""

    def __post_init__(self):
        for name in ("id", "text"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"a claim needs a non-empty {name}, got {value!r}")
        check_kind(self.kind)
        if self.side is not None and self.side not in SIDES:
            raise ValueError(f"claim {self.id}: side must be one of {SIDES}, got {self.side!r}")
        if (self.side is None) != (self.threshold is None):
            raise ValueError(f"claim {self.id}: give both threshold and side, or neither")
        if self.item is None:
            object.__setattr__(self, "item", self.id)

    def judge(self, estimate: Evidence) -> Evidence:
        """``estimate``'s interval judged against this claim's threshold and side.

        Raises:
            ValueError: the claim has no threshold (it is judged otherwise).
        """
        if self.side is None:
            raise ValueError(f"claim {self.id} has no threshold to judge an interval against")
        return estimate.judged(self.threshold, self.side)


@dataclass(frozen=True)
class Finding:
    """What one run of a claim's test found.

    Attributes:
        evidence: an `Evidence` (its interval decides PASS / FAIL / INCONCLUSIVE), a bool
            (PASS / FAIL of a deterministic test) or ``None`` (N/A: this setting cannot show
            the effect; ``detail`` says why).
        ours: our numbers for the record (JSON-ready).
        detail: how it was judged, one line; required for N/A.
        replicates: for a bool, the independent replicates it holds over ("in every seed":
            the seeds), so that it may decide a claim test (`bool_refusal`).
    """

    evidence: Evidence | bool | None
    ours: Any = None
    detail: str = ""
    replicates: int | None = None

    def __post_init__(self):
        if self.evidence is None and not self.detail.strip():
            raise ValueError("an N/A finding needs a detail saying why")
        if not isinstance(self.evidence, (Evidence, bool)) and self.evidence is not None:
            raise ValueError(f"evidence must be Evidence, a bool or None, got "
                             f"{type(self.evidence).__name__}")

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL``, ``INCONCLUSIVE`` or ``N/A``."""
        if isinstance(self.evidence, Evidence):
            return self.evidence.verdict
        return {True: "PASS", False: "FAIL", None: "N/A"}[self.evidence]


@dataclass(frozen=True)
class ItemFindings:
    """What one source item's function found: claim id -> `Finding`, in recording order, and
    the numbers behind them (JSON-ready, for tables and rendered prose). A chapter may extend
    it with the item's own fields; ``FigureWriter.record_all`` records every finding under its
    claim."""

    findings: Mapping[str, Finding] = field(default_factory=dict)
    numbers: Mapping[str, Any] = field(default_factory=dict)


def underpowered(evidence: Evidence, source_effect: float | None) -> bool:
    """The interval is too wide to decide the source's own effect: had our estimate been
    exactly ``source_effect``, the interval would still cover the threshold
    (``|source_effect - threshold| <= half-width``; a ``within`` claim: the half-width is at
    least the tolerance, so no estimate could PASS). ``False`` when the source gives no
    effect (``None``) and the claim is not ``within``.
    """
    hw = evidence.half_width
    if not math.isfinite(hw):
        return True
    if evidence.side == "within":
        return hw >= evidence.threshold
    if source_effect is None:
        return False
    return abs(source_effect - evidence.threshold) <= hw
