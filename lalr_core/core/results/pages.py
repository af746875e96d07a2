"""A chapter's page, ``<profile>/<chapter>.md``: its source items as a code host renders them.

For every item of the chapter, in the inventory's order: a heading with the item's id and
caption (an anchor named by the id, which REPORT.md links to), its figure, the source's claim,
and each check as one short line: the verdict, our estimate with its 95% interval and
replicates, and the source's number. The long text (the source's sentence, how the check was
judged, the full numbers) folds into a ``<details>`` block under its line. Sanity checks are
listed apart, and an item without outputs says so.

REPORT.md's one-line-per-check table reuses the short texts (`verdict_label`, `estimate_text`,
`source_text`, `shorten`, `file_links`). Everything here is a pure function of the records of
:mod:`lalr_core.core.results.records`; the callers read and write the files.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from lalr_core.core.results.evidence import VERDICTS, Evidence
from lalr_core.core.results.records import FILE_KINDS, split_sanity

WIDTH = 120  # characters: REPORT.md's widest cell, and a check's claim on its page line
LINE_PART = 80  # characters of our estimate, or of the source's number, on a check's line
DETAILS_SUMMARY = "how it was judged"
_RELATION = {"greater": "> ", "less": "< ", "within": "within ±"}
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")  # a "<" that a renderer would take for HTML


# ----------------------------------------------------------------------------- names
def page_name(chapter: str) -> str:
    """The page's file, beside REPORT.md: ``05_quasi_newton.md``."""
    return f"{chapter}.md"


def item_link(chapter: str, item_id: str) -> str:
    """A link target, relative to REPORT.md, of the item's section on its chapter's page."""
    return f"{page_name(chapter)}#{item_id}"


# ----------------------------------------------------------------------------- short texts
def shorten(text, width: int = WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters ending in "…" when longer.

    >>> shorten("a  long\\nsentence", 8)
    'a long…'
    """
    one = " ".join(str(text).split())
    return one if len(one) <= width else one[:width - 1].rstrip() + "…"


def _inline(text) -> str:
    """``text`` on one line, safe as Markdown prose (no "<" read as a tag)."""
    return _TAG_START.sub(r"\\<", " ".join(str(text).split()))


def _value(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _evidence(check: dict) -> Evidence | None:
    return Evidence.from_record(check["interval"]) if check.get("interval") else None


def verdict_label(check: dict) -> str:
    """``PASS``, ``INCONCLUSIVE (underpowered)`` (even the source's own effect would not be
    decided at this profile); ``(rehearsal)`` is added to a rehearsal's verdicts."""
    label = check.get("verdict", "?")
    if check.get("underpowered") and label == "INCONCLUSIVE":
        label += " (underpowered)"
    return label + (" (rehearsal)" if check.get("rehearsal") else "")


def estimate_text(check: dict) -> str:
    """Our number: ``-2.13 [-4.54, +0.28], 5 seeds; claim > 0`` for a check with an interval,
    else the record's ``ours`` (and its replicates); ``""`` when it has neither."""
    ev = _evidence(check)
    if ev is not None:
        return f"{ev.text()}; claim {_RELATION[ev.side]}{ev.threshold:g}"
    ours = "" if check.get("ours") is None else _value(check["ours"])
    n = check.get("replicates")
    return ours + (f"; {n} replicate{'s' if n != 1 else ''}" if ours and n is not None else "")


def source_text(check: dict) -> str:
    """The source's number: the record's ``source``, else the source's effect on the
    interval's scale (``effect +2``); ``""`` when the record gives neither."""
    if check.get("source") is not None:
        return _value(check["source"])
    if check.get("source_effect") is not None:
        return f"effect {check['source_effect']:+.3g}"
    return ""


def tally(checks: list[dict]) -> str:
    """``2 PASS, 0 FAIL, 1 INCONCLUSIVE (1 underpowered), 0 N/A``."""
    n = Counter(c.get("verdict") for c in checks)
    weak = sum(c.get("verdict") == "INCONCLUSIVE" and bool(c.get("underpowered"))
               for c in checks)
    return ", ".join(f"{n.get(v, 0)} {v}" + (f" ({weak} underpowered)" if v == "INCONCLUSIVE"
                                              and weak else "") for v in VERDICTS)


def file_links(files: dict[str, str], linked=FILE_KINDS) -> str:
    """Links to an item's files (kind -> relative path); the kinds not ``linked`` (left out
    of a snapshot) are named after them. ``""`` for no file."""
    links = " ".join(f"[{kind}]({rel})" for kind, rel in files.items() if kind in linked)
    left_out = [kind for kind in files if kind not in linked]
    if not left_out:
        return links
    note = f"{', '.join(left_out)} not in the snapshot"
    return f"{links}; {note}" if links else note


# ----------------------------------------------------------------------------- one check
def check_line(check: dict) -> str:
    """A check's line on its page: verdict, claim, our estimate, the source's number."""
    line = f"**{verdict_label(check)}** {_inline(shorten(check.get('claim', ''), WIDTH))}"
    ours, source = estimate_text(check), source_text(check)
    if ours:
        line += f": {_inline(shorten(ours, LINE_PART))}"
    if source:
        line += f"; source: {_inline(shorten(source, LINE_PART))}"
    return line


def _interval_reach(check: dict) -> str:
    """How far the interval reaches: its method, the effects it decides, the source's
    effect, and the replicates that would decide it."""
    ev = _evidence(check)
    if ev is None:
        return ""
    parts = [] if ev.method and ev.method in str(check.get("detail")) else \
        [ev.method or "95% interval"]  # a detail that names the method says it already
    if check.get("half_width") is not None:
        parts.append(f"decides effects beyond ±{check['half_width']:.3g}")
    if check.get("source_effect") is not None:
        parts.append(f"the source's effect {check['source_effect']:+.3g}"
                     + (", underpowered at this profile" if check.get("underpowered") else ""))
    if check.get("replicates_needed") and check.get("verdict") == "INCONCLUSIVE":
        parts.append(f"~{check['replicates_needed']} replicates would decide it")
    return "; ".join(parts)


def check_details(check: dict) -> list[str]:
    """The long text of a check, one Markdown line each: the source's sentence, how it was
    judged, why it was not decided, and what its line cut short. ``[]`` when there is none."""
    lines = []
    if len(str(check.get("claim", ""))) > WIDTH:
        lines.append(f"Claim: {_inline(check['claim'])}")
    if check.get("quote"):
        lines.append(f"The source: “{_inline(check['quote'])}”")
    if check.get("detail"):
        lines.append(f"How: {_inline(check['detail'])}")
    if reach := _interval_reach(check):
        lines.append(f"Interval: {_inline(reach)}")
    if check.get("refusal") and check.get("verdict") == "INCONCLUSIVE":
        would = check.get("interval_verdict")
        lines.append(f"Not decided: {_inline(check['refusal'])}" +
                     (f"; alone it would read {would}" if would in ("PASS", "FAIL") else ""))
    if check.get("replicate_unit") or check.get("null"):
        lines.append(f"Replicate: {_inline(check.get('replicate_unit') or '?')}; null: "
                     f"{_inline(check.get('null') or 'not stated')}")
    shown = _evidence(check) is None and len(estimate_text(check)) <= LINE_PART
    if check.get("ours") is not None and not shown:  # the line has the interval, or cut ours
        lines.append(f"Ours: {_inline(_value(check['ours']))}")
    if len(source_text(check)) > LINE_PART:
        lines.append(f"The source's number: {_inline(source_text(check))}")
    return lines


def _check_block(check: dict) -> list[str]:
    """A list item: the check's line, its details folded under it (indented into the item)."""
    lines = [f"- {check_line(check)}"]
    details = check_details(check)
    if details:
        lines += ["", f"  <details><summary>{DETAILS_SUMMARY}</summary>", ""]
        lines += [f"  - {d}" for d in details]
        lines += ["", "  </details>"]
    return lines + [""]


# ----------------------------------------------------------------------------- one item
def _heading(item_id: str, caption: str, level: int = 2) -> str:
    return f'{"#" * level} <a id="{item_id}"></a>{item_id} · {_inline(caption)}'


def _checks_part(checks: list[dict]) -> list[str]:
    claims, sanity = split_sanity(checks)
    lines = []
    if claims:
        lines += ["Claim tests:", ""] + [x for c in claims for x in _check_block(c)]
    if sanity:
        lines += ["Sanity checks (they hold by construction; not verdicts on the source):", ""]
        lines += [x for c in sanity for x in _check_block(c)]
    return lines


def item_section(rec: dict, linked=FILE_KINDS) -> list[str]:
    """The lines of one item of `lalr_core.core.results.records.item_records`; ``linked``:
    the file kinds present beside the page (a snapshot leaves some out)."""
    files = rec["files"]
    lines = [_heading(rec["item_id"], rec.get("caption", "")), ""]
    if "png" in files and "png" in linked:
        alt = _inline(f"{rec['item_id']}: {rec.get('caption', '')}")
        alt = re.sub(r"([\[\]])", r"\\\1", alt)  # a lone bracket would end the alt text
        lines += [f"![{alt}]({files['png']})", ""]
    if rec.get("source_claim"):
        lines += [f"The source's claim: {_inline(rec['source_claim'])}", ""]
    if not files:
        lines += ["No outputs at this profile" + (": only its checks ran." if rec["checks"]
                                                    else ": no figure, table or check."), ""]
    else:
        lines += [f"Ours: {file_links(files, linked)}", ""]
        if not rec["checks"]:
            lines += ["No check of this item.", ""]
    if rec.get("source_numbers"):
        lines += [f"The source's numbers: {_inline(rec['source_numbers'])}", ""]
    return lines + _checks_part(rec["checks"])


# ----------------------------------------------------------------------------- one page
def _not_run_here(placed: dict | None) -> list[str]:
    """What this machine skipped of the chapter (its entry in ``placement.json``)."""
    if not placed or placed.get("run") == "all":
        return []
    what = "the whole notebook" if placed["run"] == "none" else \
        f"{placed['skipped_cells']} cells (the rest of the notebook ran)"
    return [f"Not run on this machine: {what}.", ""] + [
        f"- {_inline(section)}: {_inline(why)}" for section, why in placed["reasons"].items()
    ] + [""]


def chapter_page(chapter: str, profile: str, records: list[dict], others: list[dict] = (), *,
                 linked=FILE_KINDS, placed: dict | None = None) -> str:
    """The text of ``<chapter>.md``.

    Args:
        chapter: the chapter's folder name (``05_quasi_newton``).
        profile: the profile's name, for the title.
        records: the chapter's `item_records`, in the inventory's order.
        others: the chapter's check records of items the inventory does not list.
        linked: the file kinds present beside the page (a rehearsal's snapshot has no PNG).
        placed: the chapter's entry in ``placement.json``, if this machine skipped parts.

    Returns:
        The page's Markdown.
    """
    checks = [c for r in records for c in r["checks"]] + list(others)
    claims, sanity = split_sanity(checks)
    present = sum(bool(r["files"]) for r in records)
    lines = [f"# {chapter} · profile `{profile}`", "",
             (f"Back to [REPORT.md](REPORT.md). {len(records)} source items, {present} with "
              f"outputs; claim tests: {tally(claims)}; {len(sanity)} sanity checks."), ""]
    if any(c.get("rehearsal") for c in checks):
        lines += [("**Rehearsal: no number on this page is a result**; the verdicts only "
                   "show that the checks ran."), ""]
    lines += [("Each check reads: verdict, what we test: our estimate [95% interval], its "
               f"replicates; the source's number. \"{DETAILS_SUMMARY}\" unfolds the source's "
               "sentence and the method."), ""]
    lines += _not_run_here(placed)
    for rec in records:
        lines += item_section(rec, linked)
    by_item: dict[str, list[dict]] = {}
    for c in others:
        by_item.setdefault(c["item_id"], []).append(c)
    if by_item:
        lines += ["## Checks of items not in the inventory", ""]
    for item_id, mine in by_item.items():
        lines += [_heading(item_id, "not in the inventory", 3), ""] + _checks_part(mine)
    return "\n".join(lines).rstrip("\n") + "\n"


def chapter_pages(profile: str, records: list[dict], others: list[dict] = (), *,
                  linked=FILE_KINDS, placement: dict | None = None) -> dict[str, str]:
    """Every chapter's page: file name (`page_name`) -> text, for the chapters of the
    inventory's `records` in their order, then those only ``others`` (check records of items
    the inventory does not list) name. ``placement``: ``placement.json``, keyed by the
    chapter's id (``05`` for ``05_quasi_newton``)."""
    chapters = list(dict.fromkeys([r["chapter"] for r in records] +
                                  [c["chapter"] for c in others]))
    placed = (placement or {}).get("chapters", {})
    return {page_name(ch): chapter_page(
        ch, profile, [r for r in records if r["chapter"] == ch],
        [c for c in others if c["chapter"] == ch], linked=linked,
        placed=placed.get(ch.split("_")[0])) for ch in chapters}
