"""``figures/<profile>/REPORT.md`` and the chapter pages: every source item, where ours is, and
our verdicts.

Reads the inventory of the sources' figures and tables (``data/reference/inventory.csv``,
columns ``chapter,item_id,kind,caption,source_claim,source_numbers``), the files and
``checks.json`` written by :class:`lalr_core.core.results.writer.FigureWriter`, and, if present,
``timings.json`` (a list of ``{notebook, seconds, status}``) written by the notebook runner and
``placement.json``. REPORT.md is a table of one short line per check (no cell over
`lalr_core.core.results.pages.WIDTH` characters); each item links to its chapter's page
(:mod:`lalr_core.core.results.pages`), which holds the figure and the long texts. It only
presents: every number comes from the check records. See DESIGN.md, "Runs, cache and
provenance".

Command line: ``python -m lalr_core.core.results.report --profile quick``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lalr_core.core import rehearsal
from lalr_core.core.atomic_io import atomic_write_text
from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.core.results.pages import (
    WIDTH,
    chapter_pages,
    estimate_text,
    file_links,
    item_link,
    page_name,
    shorten,
    source_text,
    tally,
    verdict_label,
)
from lalr_core.core.results.provenance import git_info, repo_root, utc_timestamp
from lalr_core.core.results.records import (
    FILE_KINDS,
    check_kind_of,
    item_records,
    items_present,
    load_checks,
    split_sanity,
    uninventoried,
)
from lalr_core.core.results.writer import CHECKS_FILE, validate_profile

CAPTION_WIDTH = 60  # characters of an item's caption in the table (its page has all of it)


def _cell(text, width: int = WIDTH) -> str:
    """Text safe inside one Markdown table cell, on one line and at most ``width``
    characters; a longer text is cut and ends in "…"."""
    cut = width
    while True:
        escaped = shorten(text, cut).replace("|", r"\|")
        if len(escaped) <= width:
            return escaped
        cut -= len(escaped) - width  # each escaped "|" took one more character


def _check_cells(check: dict) -> list[str]:
    """A check's verdict, claim, our estimate and the source's number, as table cells."""
    return [f"**{verdict_label(check)}**", _cell(check.get("claim", "")),
            _cell(estimate_text(check)), _cell(source_text(check))]


def _load_timings(profile_dir: Path) -> list[dict]:
    path = profile_dir / "timings.json"
    if not path.is_file():
        return []
    try:
        timings = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"corrupt timings file {path}: {err}") from err
    if not isinstance(timings, list):
        raise ValueError(f"timings file {path} is not a JSON list")  # noqa: TRY004
    return timings


def _sidecar_commits(profile_dir: Path) -> list[str]:
    """Distinct ``commit (dirty)`` strings found in the figure/table sidecars."""
    seen = set()
    for path in profile_dir.glob("*/*.json"):
        if path.name == CHECKS_FILE:
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, OSError):
            continue
        if isinstance(record, dict) and "commit" in record:
            seen.add(f"{record['commit']}" + (" (dirty)" if record.get("dirty") else ""))
    return sorted(seen)


_ITEM_HEADER = ("| chapter | item | caption | ours | verdict | claim test | our estimate [95% "
                "interval], replicates | source's number |")


def _item_table(records: list[dict], linked) -> list[str]:
    """One row per claim test (an item without one: one row saying so); an item's caption
    and files only on its first row."""
    lines = [_ITEM_HEADER, "|---|---|---|---|---|---|---|---|"]
    for rec in records:
        claims, sanity = split_sanity(rec["checks"])
        item = f"[{rec['item_id']}]({item_link(rec['chapter'], rec['item_id'])})"
        first = [_cell(rec["caption"], CAPTION_WIDTH), file_links(rec["files"], linked) or "missing"]
        if not claims:
            none = f"no claim test ({len(sanity)} sanity checks below)" if sanity else "no check"
            claims_cells = [["", none, "", ""]]
        else:
            claims_cells = [_check_cells(c) for c in claims]
        for i, cells in enumerate(claims_cells):
            row = [rec["chapter"], item, *(first if i == 0 else ["", ""]), *cells]
            lines.append("| " + " | ".join(row) + " |")
    return lines


def _other_checks(others: list[dict]) -> list[str]:
    if not others:
        return []
    lines = ["", "## Other checks", "", "Claim tests for items not in the inventory.", "",
             "| chapter | item | verdict | claim test | our estimate | source's number |",
             "|---|---|---|---|---|---|"]
    for c in others:
        item = f"[{_cell(c['item_id'])}]({item_link(c['chapter'], c['item_id'])})"
        lines.append("| " + " | ".join([c["chapter"], item, *_check_cells(c)]) + " |")
    return lines


def _sanity_section(sanity: list[dict]) -> list[str]:
    if not sanity:
        return []
    held = sum(c.get("verdict") == "PASS" for c in sanity)
    lines = ["", "## Sanity checks", "",
             (f"{len(sanity)} checks that hold by construction or guard the code (identities, "
              f"mechanics, bug demonstrations); {held} hold. They are not verdicts on the "
              "sources."), "", "| chapter | item | verdict | sanity check | ours | source's number |",
             "|---|---|---|---|---|---|"]
    for c in sanity:
        item = f"[{_cell(c['item_id'])}]({item_link(c['chapter'], c['item_id'])})"
        lines.append("| " + " | ".join([c["chapter"], item, *_check_cells(c)]) + " |")
    return lines


def verdict_counts(checks: list[dict]) -> list[str]:
    """REPORT.md's count lines: claim tests by verdict (and how many of the INCONCLUSIVE are
    underpowered), overall and per chapter (linked to its page); sanity checks and
    unclassified records apart."""
    claims = [c for c in checks if check_kind_of(c) == "claim"]
    sanity = [c for c in checks if check_kind_of(c) == "sanity"]
    loose = [c for c in checks if check_kind_of(c) == "unclassified"]
    lines = [f"- claim tests (the verdicts): {len(claims)}: {tally(claims)}"]
    for ch in sorted({c["chapter"] for c in checks}):
        mine = [c for c in claims if c["chapter"] == ch]
        n_sanity = sum(c["chapter"] == ch for c in sanity)
        lines.append(f"  - [{ch}]({page_name(ch)}): {len(mine)} claim tests: {tally(mine)}; "
                     f"{n_sanity} sanity checks")
    held = sum(c.get("verdict") == "PASS" for c in sanity)
    lines.append(f"- sanity checks (not verdicts): {len(sanity)}, {held} hold")
    if loose:
        lines.append(f"- unclassified checks (recorded without a kind): {len(loose)}")
    return lines


def _timings_section(timings: list[dict]) -> list[str]:
    if not timings:
        return []
    lines = ["", "## Notebook run times", "", "| notebook | seconds | status |", "|---|---:|---|"]
    for t in timings:
        seconds = t.get("seconds")
        shown = f"{seconds:.1f}" if isinstance(seconds, (int, float)) else _cell(seconds)
        cells = (_cell(t.get("notebook", "?")), shown, _cell(t.get("status", "")))
        lines.append("| " + " | ".join(cells) + " |")
    total = sum(t["seconds"] for t in timings if isinstance(t.get("seconds"), (int, float)))
    lines.append(f"| **total** | {total:.1f} | |")
    return lines


PLACEMENT_FILE = "placement.json"  # written by the driver's placement (lalr_core.placement)


def read_placement(profile_dir: Path) -> dict | None:
    """``placement.json``: what this machine did not run, per chapter id; ``None`` if absent."""
    path = profile_dir / PLACEMENT_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _placement_section(placed: dict | None) -> list[str]:
    """What this machine did not run, and why: one row per skipped section."""
    skipped = {c: p for c, p in (placed or {}).get("chapters", {}).items() if p["run"] != "all"}
    if not skipped:
        return []
    budgets = sorted({p.get("budget_cpu_min", placed["budget_cpu_min"])
                      for p in skipped.values()})
    budget = f"{budgets[0]:g}" if len(budgets) == 1 else \
        " or ".join(f"{b:g}" for b in budgets) + " (the budget each chapter ran with)"
    lines = ["", "## Not run on this machine", "",
             (f"Without a GPU, a notebook part whose training runs were estimated above "
              f"{budget} CPU minutes, or whose data is missing, was skipped "
              "(its items are missing above); the rest of the notebook ran. Runs the run cache "
              "already held (trained earlier, here or on a GPU machine whose entries were "
              "copied in) counted as no time. The chapter's page gives each reason in full."),
             "", "| chapter | skipped | section | why |", "|---|---|---|---|"]
    for c, p in sorted(skipped.items()):
        what = "the whole notebook" if p["run"] == "none" else f"{p['skipped_cells']} cells"
        if p.get("unmarked"):  # why a part placed elsewhere took the notebook with it
            what += f" (no cells marked for {', '.join(p['unmarked'])})"
        for i, (section, why) in enumerate(p["reasons"].items() or [("", "")]):
            cells = [c, _cell(what) if i == 0 else "", _cell(section), _cell(why)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


REHEARSAL_NOTE = ("**Rehearsal: no number below is a result.** The notebooks ran (an item "
                  f"missing below is one a notebook did not reach) on {rehearsal.DESCRIPTION}; "
                  "the verdicts only show that the checks ran.")
_HOW_TO_READ = (
    "A claim test judges the source's claim, in the source's direction, against a null or a "
    "control; a sanity check holds by construction and is listed apart. PASS and FAIL: the "
    "evidence decides the claim (for comparisons of runs, the 95% interval in brackets lies on "
    "one side of the claim's threshold); INCONCLUSIVE: the interval covers the threshold "
    "(\"underpowered\": even the source's own effect would lie within one half-width of the "
    "threshold); N/A: this setting cannot show the effect. One line per check; a cell cut "
    "short ends in \"…\": the item's link opens its chapter's page, with the figure, the full "
    "texts and how each check was judged (the interval's half-width h decides effects beyond "
    "±h, the smallest effect this profile can decide).")


def render_report(profile: str, profile_dir: Path, rows: list[dict],
                  linked=FILE_KINDS) -> str:
    """The text of ``REPORT.md`` for ``rows`` of the inventory and ``profile_dir``'s outputs;
    ``linked``: the file kinds that lie beside it (a snapshot leaves some out)."""
    checks = load_checks(profile_dir)
    records = item_records(profile_dir, rows, checks)
    others = split_sanity(uninventoried(records, checks))[0]
    present = items_present(records)
    git = git_info()
    made_at = ", ".join(_sidecar_commits(profile_dir)) or "none"
    rehearsed = any(c.get("rehearsal") for c in checks)
    head = [
        f"# Report: profile `{profile}`" + (" (REHEARSAL)" if rehearsed else ""),
        "",
        *([REHEARSAL_NOTE, ""] if rehearsed else []),
        f"Built {utc_timestamp()} at commit `{git['commit']}`"
        + (" (dirty)" if git["dirty"] else "") + f"; outputs made at commit(s): {made_at}.",
        "",
        f"- items: {len(rows)} in the inventory, {present} present, {len(rows) - present} missing",
        *verdict_counts(checks),
        "",
        _HOW_TO_READ,
        "",
        "## Items",
        "",
    ]
    body = (_item_table(records, linked) + _other_checks(others)
            + _sanity_section(split_sanity(checks)[1])
            + _placement_section(read_placement(profile_dir))
            + _timings_section(_load_timings(profile_dir)))
    return "\n".join(head + body) + "\n"


def write_report(profile: str, profile_dir: Path, rows: list[dict], out_dir: Path | None = None,
                 linked=FILE_KINDS) -> Path:
    """Write REPORT.md and every chapter's page into ``out_dir`` (default ``profile_dir``)
    from ``profile_dir``'s records; returns REPORT.md's path.

    Args:
        profile: the profile's name, for the titles.
        profile_dir: the folder the notebooks wrote (``figures/<profile>``).
        rows: inventory rows.
        out_dir: where the texts go (a snapshot's ``results/<profile>``).
        linked: the file kinds that lie in ``out_dir`` beside the texts.
    """
    out_dir = Path(out_dir) if out_dir is not None else Path(profile_dir)
    checks = load_checks(profile_dir)
    records = item_records(profile_dir, rows, checks)
    pages = chapter_pages(profile, records, uninventoried(records, checks), linked=linked,
                          placement=read_placement(profile_dir))
    for name, text in pages.items():
        atomic_write_text(out_dir / name, text)
    path = out_dir / "REPORT.md"
    atomic_write_text(path, render_report(profile, profile_dir, rows, linked))
    return path


def build_report(profile: str, root=None, inventory=None) -> Path:
    """Write ``<root>/<profile>/REPORT.md`` and the chapter pages; return REPORT.md's path.

    Args:
        profile: one of ``smoke``, ``quick``, ``paper``.
        root: the figures root; defaults to ``<repo>/figures``.
        inventory: the inventory CSV; defaults to :func:`default_inventory`.

    Returns:
        Path of the written report.

    Raises:
        ValueError: unknown profile, or a missing or malformed inventory/checks/timings file.
    """
    validate_profile(profile)
    root = Path(root) if root is not None else repo_root() / "figures"
    rows = read_inventory(inventory if inventory is not None else default_inventory())
    return write_report(profile, root / profile, rows)


def main(argv=None) -> int:
    """Command line: ``python -m lalr_core.core.results.report --profile quick [--root R] [--inventory I]``."""
    parser = argparse.ArgumentParser(description="Write figures/<profile>/REPORT.md and the chapter pages")
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--root", default=None, help="figures root (default <repo>/figures)")
    parser.add_argument("--inventory", default=None, help="inventory CSV")
    args = parser.parse_args(argv)
    try:
        path = build_report(args.profile, root=args.root, inventory=args.inventory)
    except ValueError as err:
        parser.error(str(err))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
