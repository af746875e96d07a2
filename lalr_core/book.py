"""``make book``: a static HTML site from a profile's executed notebooks and REPORT.md.

``python -m lalr_core.book --profile smoke`` writes ``<root>/<profile>/book/``:

- ``<chapter>.html``, one per executed notebook in ``<root>/<profile>/notebooks/``, converted
  with nbconvert's HTMLExporter (lab template) from the executed copy, with an anchor
  ``#item-<item_id>`` at the cell that makes each inventory item;
- ``index.html``: per chapter, every inventory item with its kind, caption, verdicts, a
  thumbnail (figures) or links to the Markdown/CSV (tables), each linking to its cell;
- ``report.html``: REPORT.md rendered (markdown-it-py), its links to the chapter pages
  (``<chapter>.md#<item>``) pointing at the item's row of the index instead;
- ``<chapter>/<item>.png|pdf|csv|md``: copies of the items' files, in REPORT.md's layout, so
  every link is relative and the folder can be zipped and opened anywhere.

Nothing is executed: the book reads what ``make figures`` wrote (driver.py). The item rows
come from :func:`lalr_core.core.results.records.item_records`, the same rows REPORT.md renders; a
chapter's folder and its notebook share a name (``04_directedness`` and
``04_directedness.ipynb``), as every notebook's ``FigureWriter`` is created.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import html
import json
import logging
import re
import shutil
from collections import Counter
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt  # via jupytext; nbconvert's mistune breaks REPORT.md's tables
from nbconvert import HTMLExporter

from lalr_core.core.results.evidence import VERDICTS
from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.core.results.records import item_records, load_checks, split_sanity
from lalr_core.core.results.writer import default_root, validate_profile

BOOK_DIR = "book"
INDEX, REPORT_PAGE = "index.html", "report.html"
_VERDICT_CLASS = {"PASS": "pass", "FAIL": "fail", "INCONCLUSIVE": "inconclusive", "N/A": "na"}
# FigureWriter.savefig(fig, "id") / save_table(df, "id"); the first argument has no comma
_SAVE_CALL = r"\b(?:savefig|save_table)\(\s*[^,]*?,\s*"
_CHECK_CALL = r"\bcheck\(\s*"  # FigureWriter.check("id", ...) and a notebook's own check("id", ...)
# REPORT.md's link to a chapter page, pages.item_link: "](05_quasi_newton.md#fig4.6)"
_PAGE_LINK = re.compile(r"\]\((?P<chapter>[^)/#\s]+)\.md(?:#(?P<item>[^)\s]+))?\)")
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 80rem; color: #222; }
nav a, .nav a { margin-right: 1rem; }
table { border-collapse: collapse; width: 100%; margin-bottom: 2rem; }
th, td { border-bottom: 1px solid #ddd; padding: .4rem; vertical-align: top; text-align: left; }
td.thumb img { max-width: 220px; max-height: 160px; border: 1px solid #eee; }
.verdict { display: inline-block; padding: 0 .4em; border-radius: 3px; font-weight: 600;
           font-size: .85em; margin: 1px; color: #fff; }
.pass { background: #2e7d32; } .fail { background: #c62828; }
.inconclusive { background: #ef8f00; } .na, .nocheck { background: #757575; }
.missing { color: #c62828; font-weight: 600; }
details { font-size: .85em; } small { color: #666; }
"""
_CELL_CSS = """
.lalr-item { margin: .8rem 0 .2rem; padding: .2rem .5rem; border-left: 4px solid #1f77b4;
             background: #f3f7fb; font-family: system-ui, sans-serif; font-size: .9rem; }
.lalr-item a { margin-right: .6rem; }
"""


# ----------------------------------------------------------------------------- inputs
def _inputs(profile_dir: Path, profile: str) -> list[Path]:
    """The executed notebooks; raises if they or REPORT.md are missing."""
    how = f"run `make figures PROFILE={profile}` first"
    notebooks = sorted((profile_dir / "notebooks").glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no executed notebooks in {profile_dir / 'notebooks'}: {how}")
    if not (profile_dir / "REPORT.md").is_file():
        raise ValueError(f"no REPORT.md in {profile_dir}: {how}")
    return notebooks


# ----------------------------------------------------------------------------- anchors
def _seconds(stamp: str) -> float:
    return _dt.datetime.fromisoformat(stamp).timestamp()  # papermill's "...Z" or "+00:00"


def _first_match(cells, pattern: str) -> int | None:
    return next((i for i, c in enumerate(cells)
                 if c.cell_type == "code" and re.search(pattern, c.source)), None)


def _shared_prefix(source: str, item_id: str) -> int:
    """Length of the longest start of ``item_id`` found in ``source`` (``fig3.17`` for
    ``fig3.17A`` made by ``f"fig3.17{panel}"``)."""
    return next((k for k in range(len(item_id), 0, -1) if item_id[:k] in source), 0)


def _ran_at(cells, stamp: str | None, call: str, item_id: str) -> int | None:
    """The code cell that ran at ``stamp``: of those, one whose source has ``call`` and names
    most of ``item_id``.

    ``stamp`` is to the second (provenance.utc_timestamp) and papermill stores each cell's start
    and end, so the cell that wrote a sidecar or check record ran at that second (cells that
    took under a second share it, hence the tie-break).
    """
    if not stamp:
        return None
    t = _seconds(stamp)
    hits = []
    for i, c in enumerate(cells):
        pm = c.get("metadata", {}).get("papermill", {})
        if (c.cell_type == "code" and pm.get("start_time") and pm.get("end_time")
                and int(_seconds(pm["start_time"])) <= t <= _seconds(pm["end_time"])):
            hits.append(i)
    hits = [i for i in hits if call in cells[i].source] or hits
    return max(hits, key=lambda i: (_shared_prefix(cells[i].source, item_id), -i), default=None)


def find_cell(cells, item_id: str, made_at: str | None = None,
              checked_at: str | None = None) -> int | None:
    """Index of the cell that makes ``item_id``, or ``None``.

    Tried in order: a ``savefig``/``save_table`` call naming the id; the cell that ran when
    its sidecar was written (``made_at``: ids built at run time, e.g. ``f"fig3.7{panel}"``);
    a ``check`` call naming it; any code naming it in quotes; the cell that ran when its
    first check was recorded (``checked_at``).
    """
    quoted = rf"[\"']{re.escape(item_id)}[\"']"
    ladder = (
        lambda: _first_match(cells, _SAVE_CALL + quoted),
        lambda: _ran_at(cells, made_at, "save", item_id),
        lambda: _first_match(cells, _CHECK_CALL + quoted),
        lambda: _first_match(cells, quoted),
        lambda: _ran_at(cells, checked_at, "check(", item_id),
    )
    return next((i for step in ladder if (i := step()) is not None), None)


def _made_at(profile_dir: Path, record: dict) -> str | None:
    """``timestamp_utc`` of the item's own sidecar (not a claim's borrowed verdict table)."""
    path = profile_dir / record["chapter"] / f"{record['item_id']}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("timestamp_utc")
    except (OSError, ValueError, AttributeError):
        return None


# ----------------------------------------------------------------------------- HTML bits
def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _badge(verdict: str, n: int | None = None) -> str:
    label = verdict if n is None else f"{verdict} {n}"
    return f'<span class="verdict {_VERDICT_CLASS.get(verdict, "na")}">{_e(label)}</span>'


def _verdict_badges(checks: list[dict]) -> str:
    """The claim tests' verdicts (one badge for one test, else a count per verdict) and the
    number of sanity checks apart; ``no check`` for none."""
    claims, sanity = split_sanity(checks)
    n_sanity = len(sanity)
    sanity = f' <span class="verdict na">sanity {n_sanity}</span>' if n_sanity else ""
    if not claims:
        return (sanity.strip() if sanity else '<span class="verdict nocheck">no check</span>')
    if len(claims) == 1:
        return _badge(claims[0].get("verdict", "?")) + sanity
    counts = Counter(c.get("verdict") for c in claims)
    return " ".join(_badge(v, counts[v]) for v in VERDICTS if counts.get(v)) + sanity


def _index_anchor(chapter: str, item_id: str) -> str:
    return f"{chapter}.{item_id}"


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n"
            f'<nav><a href="{INDEX}">index</a><a href="{REPORT_PAGE}">REPORT.md</a></nav>\n'
            f"{body}\n</body></html>\n")


# ----------------------------------------------------------------------------- chapter pages
def _chapter_page(nb_path: Path, records: list[dict], profile_dir: Path) -> tuple[str, dict]:
    """The notebook as HTML with item anchors; returns ``(html, item_id -> anchor or None)``."""
    nb = nbformat.read(nb_path, as_version=4)
    cells = list(nb.cells)
    at: dict[int, list[dict]] = {}
    anchors = {}
    for rec in records:
        checked = min((c.get("timestamp_utc", "") for c in rec["checks"]), default=None)
        i = find_cell(cells, rec["item_id"], _made_at(profile_dir, rec), checked or None)
        anchors[rec["item_id"]] = None if i is None else f"item-{rec['item_id']}"
        if i is not None:
            at.setdefault(i, []).append(rec)
    new_cells = [_raw_html(f'<div class="lalr-item"><a href="{INDEX}#{_e(nb_path.stem)}">'
                           f'index</a><a href="{REPORT_PAGE}">REPORT.md</a></div>')]
    for i, cell in enumerate(cells):
        for rec in at.get(i, []):
            back = f"{INDEX}#{_index_anchor(rec['chapter'], rec['item_id'])}"
            new_cells.append(_raw_html(
                f'<div class="lalr-item" id="item-{_e(rec["item_id"])}"><a href="{_e(back)}">'
                f'{_e(rec["item_id"])}</a>{_e(rec["caption"])}</div>'))
        new_cells.append(cell)
    nb.cells = new_cells
    quiet = logging.getLogger(__name__ + ".nbconvert")  # not "images lack alt text" per page
    quiet.setLevel(logging.ERROR)
    body, _ = HTMLExporter(template_name="lab", log=quiet).from_notebook_node(nb)
    return body.replace("</head>", f"<style>{_CELL_CSS}</style></head>", 1), anchors


def _raw_html(source: str):
    return nbformat.v4.new_raw_cell(source, metadata={"raw_mimetype": "text/html"})


# ----------------------------------------------------------------------------- index
def _item_row(rec: dict, page: str, anchor: str | None) -> str:
    chapter, item_id, files = rec["chapter"], rec["item_id"], rec["files"]
    target = f"{page}#{anchor}" if anchor else page
    name = f'<a href="{_e(target)}">{_e(item_id)}</a>'
    if anchor is None:
        name += " <small>(cell not located)</small>"
    links = " ".join(f'<a href="{_e(rel)}">{kind}</a>' for kind, rel in files.items())
    if "png" in files:
        img = f'<img src="{_e(files["png"])}" alt="{_e(item_id)}" loading="lazy">'
        ours = f'<a href="{_e(target)}">{img}</a><br>{links}'
    else:
        ours = links or '<span class="missing">missing</span>'
    claims = "".join(f"<li>{_badge(c.get('verdict', '?'))} {_e(c.get('claim', ''))}</li>"
                     for c in rec["checks"] if c.get("claim") != rec["caption"])
    details = f"<details><summary>claims</summary><ul>{claims}</ul></details>" if claims else ""
    return (f'<tr id="{_e(_index_anchor(chapter, item_id))}"><td>{name}</td>'
            f'<td>{_e(rec["kind"])}</td><td>{_e(rec["caption"])}</td>'
            f'<td>{_verdict_badges(rec["checks"])}{details}</td><td class="thumb">{ours}</td></tr>')


def _index(profile: str, chapters: dict, not_run: list[str]) -> str:
    """``chapters``: chapter -> (page, records, anchors)."""
    toc = " ".join(f'<a href="#{_e(ch)}">{_e(ch)}</a>' for ch in chapters)
    parts = [f"<h1>Profile <code>{_e(profile)}</code></h1>", f'<p class="nav">{toc}</p>']
    if not_run:
        parts.append(f"<p>Inventory chapters without an executed notebook: {_e(', '.join(not_run))}"
                     "; their items are listed in REPORT.md.</p>")
    for ch, (page, records, anchors) in chapters.items():
        checks = [c for r in records for c in r["checks"]]
        claims, sanity = split_sanity(checks)
        counts = Counter(c.get("verdict") for c in claims)
        summary = " ".join(_badge(v, counts[v]) for v in VERDICTS if counts.get(v))
        present = sum(bool(r["files"]) for r in records)
        parts.append(f'<h2 id="{_e(ch)}"><a href="{_e(page)}">{_e(ch)}</a></h2>'
                     f"<p>{len(records)} items, {present} with outputs; claim tests: "
                     f"{summary or 'none'}; sanity checks: {len(sanity)}</p>")
        if records:
            rows = "\n".join(_item_row(r, page, anchors.get(r["item_id"])) for r in records)
            parts.append("<table><tr><th>item</th><th>kind</th><th>caption</th><th>verdict</th>"
                         f"<th>ours</th></tr>\n{rows}</table>")
    return _page(f"Book: {profile}", "\n".join(parts))


def _report_page(profile_dir: Path, ids: set[str]) -> str:
    """REPORT.md as HTML; a link to a chapter page goes to the item's row of the index (the
    chapter's heading, or the index, for an item or a chapter the index lacks)."""
    def on_index(m: re.Match) -> str:
        row = f"{m['chapter']}.{m['item']}"
        anchor = row if m["item"] and row in ids else m["chapter"]
        return f"]({INDEX}#{anchor})" if anchor in ids else f"]({INDEX})"

    text = _PAGE_LINK.sub(on_index, (profile_dir / "REPORT.md").read_text(encoding="utf-8"))
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    return _page("REPORT.md", body)


# ----------------------------------------------------------------------------- entry point
def build_book(profile: str, root=None, inventory=None) -> Path:
    """Write ``<root>/<profile>/book/`` from the executed notebooks and REPORT.md.

    Args:
        profile: one of ``smoke``, ``quick``, ``paper``.
        root: the figures root; defaults to ``$LALR_FIGURES_ROOT`` or ``<repo>/figures``.
        inventory: the inventory CSV; defaults to ``data/reference/inventory.csv``.

    Returns:
        Path of ``index.html``.

    Raises:
        ValueError: unknown profile; no executed notebooks or no REPORT.md (run
            ``make figures PROFILE=<profile>``); a malformed inventory or checks file.
    """
    validate_profile(profile)
    profile_dir = (Path(root) if root is not None else default_root()) / profile
    notebooks = _inputs(profile_dir, profile)
    rows = read_inventory(inventory if inventory is not None else default_inventory())
    records = item_records(profile_dir, rows, load_checks(profile_dir))
    tmp = profile_dir / f".{BOOK_DIR}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    chapters = {}
    for nb_path in notebooks:
        chapter = nb_path.stem
        mine = [r for r in records if r["chapter"] == chapter]
        page_html, anchors = _chapter_page(nb_path, mine, profile_dir)
        (tmp / f"{chapter}.html").write_text(page_html, encoding="utf-8")
        chapters[chapter] = (f"{chapter}.html", mine, anchors)
    for rel in sorted({rel for r in records for rel in r["files"].values()}):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(profile_dir / rel, tmp / rel)
    not_run = sorted({r["chapter"] for r in rows} - set(chapters))
    (tmp / INDEX).write_text(_index(profile, chapters, not_run), encoding="utf-8")
    ids = set(chapters) | {_index_anchor(ch, r["item_id"]) for ch, (_, mine, _) in
                           chapters.items() for r in mine}
    (tmp / REPORT_PAGE).write_text(_report_page(profile_dir, ids), encoding="utf-8")
    book = profile_dir / BOOK_DIR
    shutil.rmtree(book, ignore_errors=True)
    tmp.rename(book)
    return book / INDEX


def main(argv=None) -> int:
    """Command line: ``python -m lalr_core.book --profile smoke [--out ROOT]``."""
    parser = argparse.ArgumentParser(prog="python -m lalr_core.book",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--out", default=None,
                        help="figures root, as the driver's --out (default $LALR_FIGURES_ROOT "
                             "or <repo>/figures)")
    parser.add_argument("--inventory", default=None, help="inventory CSV")
    args = parser.parse_args(argv)
    try:
        path = build_book(args.profile, root=args.out, inventory=args.inventory)
    except ValueError as err:
        parser.error(str(err))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
