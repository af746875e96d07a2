"""``figures/<profile>/REPORT.md``: every source item, where ours is, and our verdicts.

Reads the inventory of the sources' figures and tables (``data/reference/inventory.csv``,
columns ``chapter,item_id,kind,caption,source_claim,source_numbers``), the files and
``checks.json`` written by :class:`lalr_core.core.results.writer.FigureWriter`, and, if present,
``timings.json`` (a list of ``{notebook, seconds, status}``) written by the notebook
runner. See DESIGN.md, "Runs, cache and provenance".

Command line: ``python -m lalr_core.core.results.report --profile quick``.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from lalr_core.core import rehearsal
from lalr_core.core.atomic_io import atomic_write_text
from lalr_core.core.results.evidence import VERDICTS, Evidence
from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.core.results.provenance import git_info, repo_root, utc_timestamp
from lalr_core.core.results.records import (
    check_kind_of,
    item_records,
    items_present,
    load_checks,
    split_sanity,
)
from lalr_core.core.results.writer import CHECKS_FILE, validate_profile

_VERDICTS = VERDICTS  # PASS, FAIL, INCONCLUSIVE, N/A


def _cell(text) -> str:
    """Text safe inside one Markdown table cell."""
    return str(text).replace("|", r"\|").replace("\r", "").replace("\n", "<br>")


def _value(value) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _verdict_text(check: dict) -> str:
    verdict = check["verdict"]
    if check.get("underpowered") and verdict == "INCONCLUSIVE":
        verdict += " (underpowered at this profile)"
    if check.get("rehearsal"):  # a few steps of training: not a result
        verdict += " (rehearsal)"
    text = f"**{verdict}** {check['claim']}"
    if check.get("interval"):  # the estimate, its 95% interval and what it rests on
        ev = Evidence.from_record(check["interval"])
        rel = {"greater": ">", "less": "<", "within": "within ±"}[ev.side]
        text += f" [{ev.text()}; claim {rel} {ev.threshold:g}"
        if check.get("half_width") is not None:
            text += f"; decides effects beyond ±{check['half_width']:.3g}"
        if check.get("source_effect") is not None:
            text += f"; source's effect {check['source_effect']:+.3g}"
            if check.get("underpowered"):
                text += ", underpowered at this profile"
        if check.get("replicates_needed") and check.get("verdict") == "INCONCLUSIVE":
            text += f"; ~{check['replicates_needed']} replicates would decide it"
        text += "]"
    if check.get("refusal") and check.get("verdict") == "INCONCLUSIVE":
        # the data alone would read PASS or FAIL, but may not decide
        would = check.get("interval_verdict")
        text += f" (not decided: {check['refusal']}" + \
            (f"; alone it would read {would})" if would in ("PASS", "FAIL") else ")")
    if check.get("replicate_unit") or check.get("null"):
        text += f" (replicate: {check.get('replicate_unit') or '?'}; null: " \
                f"{check.get('null') or 'not stated'})"
    if check.get("detail"):
        text += f": {check['detail']}"
    if check.get("ours") is not None or check.get("source") is not None:
        text += f" (ours: {_value(check.get('ours'))}; source: {_value(check.get('source'))})"
    if check.get("quote"):
        text += f" Source: “{check['quote']}”"
    return _cell(text)


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


def _item_table(records: list[dict]) -> tuple[list[str], int]:
    lines = [
        ("| chapter | item | kind | caption | ours | source's claim | source's numbers "
         "| our checks |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        links = [f"[{kind}]({rel})" for kind, rel in rec["files"].items()]
        claims, sanity = split_sanity(rec["checks"])
        n_sanity = len(sanity)
        verdicts = "<br>".join(_verdict_text(c) for c in claims) or (
            f"no claim test ({n_sanity} sanity checks below)" if n_sanity else "no check")
        cells = [rec["chapter"], rec["item_id"], rec["kind"], rec["caption"],
                 " ".join(links) or "missing", rec["source_claim"], rec["source_numbers"]]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + f" | {verdicts} |")
    return lines, items_present(records)


def _other_checks(others: list[dict]) -> list[str]:
    if not others:
        return []
    lines = ["", "## Other checks", "", "Claim tests for items not in the inventory.", "",
             "| chapter | item | check |", "|---|---|---|"]
    for c in others:
        lines.append(f"| {_cell(c['chapter'])} | {_cell(c['item_id'])} | {_verdict_text(c)} |")
    return lines


def _sanity_section(sanity: list[dict]) -> list[str]:
    if not sanity:
        return []
    held = sum(c.get("verdict") == "PASS" for c in sanity)
    lines = ["", "## Sanity checks", "",
             (f"{len(sanity)} checks that hold by construction or guard the code (identities, "
              f"mechanics, bug demonstrations); {held} hold. They are not verdicts on the "
              "sources."), "", "| chapter | item | check |", "|---|---|---|"]
    for c in sanity:
        lines.append(f"| {_cell(c['chapter'])} | {_cell(c['item_id'])} | {_verdict_text(c)} |")
    return lines


def verdict_counts(checks: list[dict]) -> list[str]:
    """REPORT.md's count lines: claim tests by verdict (and how many of the INCONCLUSIVE are
    underpowered), overall and per chapter; sanity checks and unclassified records apart."""
    claims = [c for c in checks if check_kind_of(c) == "claim"]
    sanity = [c for c in checks if check_kind_of(c) == "sanity"]
    loose = [c for c in checks if check_kind_of(c) == "unclassified"]

    def counts(cs):
        n = Counter(c.get("verdict") for c in cs)
        weak = sum(c.get("verdict") == "INCONCLUSIVE" and bool(c.get("underpowered")) for c in cs)
        parts = [f"{n.get(v, 0)} {v}" + (f" ({weak} underpowered)" if v == "INCONCLUSIVE"
                                            and weak else "") for v in _VERDICTS]
        return ", ".join(parts)

    lines = [f"- claim tests (the verdicts): {len(claims)}: {counts(claims)}"]
    for ch in sorted({c["chapter"] for c in checks}):
        mine = [c for c in claims if c["chapter"] == ch]
        n_sanity = sum(c["chapter"] == ch for c in sanity)
        lines.append(f"  - {ch}: {len(mine)} claim tests: {counts(mine)}; "
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


def _placement_section(profile_dir: Path) -> list[str]:
    """What this machine did not run (``placement.json``), and why, per chapter."""
    path = profile_dir / PLACEMENT_FILE
    if not path.is_file():
        return []
    placed = json.loads(path.read_text())
    skipped = {c: p for c, p in placed["chapters"].items() if p["run"] != "all"}
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
              "copied in) counted as no time."), "",
             "| chapter | skipped | section: why |", "|---|---|---|"]
    for c, p in sorted(skipped.items()):
        what = "the whole notebook" if p["run"] == "none" else f"{p['skipped_cells']} cells"
        if p.get("unmarked"):  # why a part placed elsewhere took the notebook with it
            what += f" (no cells marked for {', '.join(p['unmarked'])})"
        why = "<br>".join(f"{s}: {w}" for s, w in p["reasons"].items())
        lines.append(f"| {c} | {what} | {_cell(why)} |")
    return lines


REHEARSAL_NOTE = ("**Rehearsal: no number below is a result.** The notebooks ran (an item "
                  f"missing below is one a notebook did not reach) on {rehearsal.DESCRIPTION}; "
                  "the verdicts only show that the checks ran.")


def render_report(profile: str, profile_dir: Path, rows: list[dict]) -> str:
    """The text of ``REPORT.md`` for ``rows`` of the inventory and ``profile_dir``'s outputs."""
    checks = load_checks(profile_dir)
    judged, sanity = split_sanity(checks)
    known = {(r["chapter"], r["item_id"]) for r in rows}
    others = [c for c in judged if (c["chapter"], c["item_id"]) not in known]
    table, present = _item_table(item_records(profile_dir, rows, checks))
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
        ("A claim test judges the source's claim, in the source's direction, against a null or "
         "a control; a sanity check holds by construction and is listed apart. PASS and FAIL: "
         "the evidence decides the claim (for comparisons of runs, the 95% interval in "
         "brackets lies on one side of the claim's threshold); INCONCLUSIVE: the interval "
         "covers the threshold (\"underpowered at this profile\": even the source's own effect "
         "would lie within one half-width of the threshold); N/A: this setting cannot show the "
         "effect (the reason follows). \"Decides effects beyond ±h\": the interval's "
         "half-width h, the smallest effect this profile can decide."),
        "",
        "## Items",
        "",
    ]
    body = (table + _other_checks(others) + _sanity_section(sanity)
            + _placement_section(profile_dir) + _timings_section(_load_timings(profile_dir)))
    return "\n".join(head + body) + "\n"


def build_report(profile: str, root=None, inventory=None) -> Path:
    """Write ``<root>/<profile>/REPORT.md`` and return its path.

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
    profile_dir = root / profile
    path = profile_dir / "REPORT.md"
    atomic_write_text(path, render_report(profile, profile_dir, rows))
    return path


def main(argv=None) -> int:
    """Command line: ``python -m lalr_core.core.results.report --profile quick [--root R] [--inventory I]``."""
    parser = argparse.ArgumentParser(description="Write figures/<profile>/REPORT.md")
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
