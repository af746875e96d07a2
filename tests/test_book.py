"""Tests of lalr_core.book: the static site built from a profile's executed notebooks.

The smoke-run test builds from the session's ``make figures`` at smoke of a few chapters
(conftest's `smoke_run`, minutes; the kill-and-resume test compares against the same run).
The unit tests build a book from a hand-made root in seconds.
"""

import json
import shutil
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import nbformat
import pandas as pd
import pytest

from lalr_core import book
from lalr_core.core.results import inventory as inventory_module
from lalr_core.core.results import records as records_module
from lalr_core.core.results import report, writer

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- helpers
class _Page(HTMLParser):
    """The ids, link targets and image sources of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.ids, self.hrefs, self.imgs, self.row_imgs = set(), [], [], {}
        self._row = None
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "tr":
            self._row = a.get("id")
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if tag == "img" and a.get("src"):
            self.imgs.append(a["src"])
            self.row_imgs.setdefault(self._row, []).append(a["src"])


def _broken_links(book_dir: Path, page: str) -> list[str]:
    """Relative links of ``page`` whose file, or whose ``#anchor`` in it, does not exist
    (REPORT.md's links to the sources' papers are left out)."""
    parsed = {page: _Page(book_dir / page)}
    bad = []
    for href in parsed[page].hrefs + parsed[page].imgs:
        target, _, anchor = href.partition("#")
        target = target or page
        if target.startswith(("https://", "http://")):
            continue
        if not (book_dir / target).is_file():
            bad.append(href)
            continue
        if anchor:
            if target not in parsed:
                parsed[target] = _Page(book_dir / target)
            if anchor not in parsed[target].ids:
                bad.append(href)
    return bad


def _check_book(profile_dir: Path) -> tuple[list[dict], _Page]:
    """Build the book and assert every inventory item of the chapters present is on the
    index, every link resolves, and every item with a PNG shows it."""
    index = book.build_book(profile_dir.name, root=profile_dir.parent)
    book_dir = index.parent
    chapters = {p.stem for p in (profile_dir / "notebooks").glob("*.ipynb")}
    rows = [r for r in inventory_module.read_inventory(inventory_module.default_inventory())
            if r["chapter"] in chapters]
    records = records_module.item_records(profile_dir, rows)
    page = _Page(index)
    assert not [r["item_id"] for r in records if f"{r['chapter']}.{r['item_id']}" not in page.ids]
    assert _broken_links(book_dir, "index.html") == []
    assert _broken_links(book_dir, "report.html") == []
    no_img = [r["item_id"] for r in records if "png" in r["files"]
              and not page.row_imgs.get(f"{r['chapter']}.{r['item_id']}")]
    assert no_img == []
    return records, page


# ----------------------------------------------------------------------------- smoke run
@pytest.fixture(scope="module")
def smoke_dir(smoke_run):
    """``<tmp>/figures/smoke`` of the session's smoke run (conftest's `smoke_run`)."""
    return smoke_run / "figures" / "smoke"


def test_book_from_a_smoke_run_links_every_item(smoke_dir):
    t0 = time.perf_counter()
    records, page = _check_book(smoke_dir)
    print(f"build + checks: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    assert records
    book_dir = smoke_dir / book.BOOK_DIR
    for rec in records:  # the anchor is on the chapter's page, and the page is not re-run
        assert (book_dir / f"{rec['chapter']}.html").is_file()
    located = {h for h in page.hrefs if "#item-" in h}
    assert len(located) >= 0.9 * len(records), "most items should be found in their cell"


# ----------------------------------------------------------------------------- unit tests
def _cell(source, start=None, end=None):
    cell = nbformat.v4.new_code_cell(source)
    if start:
        cell.metadata["papermill"] = {"start_time": start, "end_time": end}
    return cell


def test_find_cell_prefers_the_saving_cell_then_the_time_it_ran():
    cells = [nbformat.v4.new_markdown_cell("Fig 1 shows 'fig1'"),
             _cell('out.check("fig1", "claim", True)'),
             _cell('out.savefig(fig, "fig1")'),
             _cell('out.savefig(fig, "fig2")', "2026-01-01T00:00:00Z", "2026-01-01T00:00:04.5Z"),
             _cell('out.savefig(fig, f"fig3{p}")', "2026-01-01T00:00:04.6Z",
                   "2026-01-01T00:00:09Z")]
    assert book.find_cell(cells, "fig1") == 2
    # written at second 4: both cells ran then; the one naming "fig3" wins
    assert book.find_cell(cells, "fig3A", made_at="2026-01-01T00:00:04+00:00") == 4
    assert book.find_cell(cells, "fig3A") is None
    assert book.find_cell(cells, "claim9", checked_at="2026-01-01T00:00:08+00:00") == 4


@pytest.fixture
def toy_dir(tmp_path):
    """A hand-made smoke root: one executed notebook, its outputs, checks and REPORT.md."""
    out = writer.FigureWriter("09_toy", "smoke", "09_toy.ipynb", root=tmp_path)
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    out.savefig(fig, "figX")
    made = out.savefig(fig, "figZA")["json"]  # under an id built at run time: found by time
    plt.close(fig)
    out.save_table(pd.DataFrame({"a": [1, 2]}), "tabY")
    out.check("figX", "goes up", True, kind="claim", replicates=3)
    out.check("figX", "goes down", False, kind="claim", replicates=3)
    out.check("tabY", "has two rows", True, kind="sanity")
    made = json.loads(made.read_text())["timestamp_utc"]  # to the second
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 09 · toy"),
        _cell('out.savefig(fig, "figX")\nout.check("figX", "goes up", True)'),
        _cell('out.save_table(df, "tabY")'),
        _cell('for p in "A":\n    out.savefig(fig, f"figZ{p}")', made, made.replace("+00:00", ".9Z")),
    ])
    (tmp_path / "smoke" / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "smoke" / "notebooks" / "09_toy.ipynb")
    inventory = tmp_path / "inventory.csv"
    rows = [("09_toy", "figX", "figure", "a line"), ("09_toy", "tabY", "table", "a table"),
            ("09_toy", "figZA", "figure", "panel A"), ("09_toy", "figW", "figure", "never made"),
            ("10_other", "figV", "figure", "a chapter not run")]
    pd.DataFrame([(*r, "", "") for r in rows], columns=inventory_module.INVENTORY_COLUMNS).to_csv(
        inventory, index=False)
    report.build_report("smoke", root=tmp_path, inventory=inventory)
    return tmp_path / "smoke", inventory


def test_toy_book_anchors_items_and_lists_the_missing(toy_dir):
    profile_dir, inventory = toy_dir
    index = book.build_book("smoke", root=profile_dir.parent, inventory=inventory)
    book_dir = index.parent
    assert _broken_links(book_dir, "index.html") == []
    assert _broken_links(book_dir, "report.html") == []
    page = _Page(index)
    assert {"09_toy.figX", "09_toy.tabY", "09_toy.figZA", "09_toy.figW"} <= page.ids
    assert {"09_toy.html#item-figX", "09_toy.html#item-tabY", "09_toy.html#item-figZA"} \
        <= set(page.hrefs)
    assert page.row_imgs["09_toy.figX"] == ["09_toy/figX.png"]
    assert {"09_toy/tabY.md", "09_toy/tabY.csv"} <= set(page.hrefs)
    text = index.read_text()
    row = text[text.index('id="09_toy.figW"'):].split("</tr>")[0]
    assert "missing" in row and "09_toy.html" in row  # listed, linked to its chapter's page
    assert "PASS 1" in text and "FAIL 1" in text and "10_other" in text
    chapter = (book_dir / "09_toy.html").read_text()
    # each anchor sits just before the cell that makes the item
    assert chapter.index('id="item-figX"') < chapter.index("save_table") \
        < chapter.index('id="item-figZA"')
    assert 'id="item-tabY"' in chapter and "item-figW" not in chapter


def test_missing_notebooks_or_report_is_a_clear_error(toy_dir):
    profile_dir, inventory = toy_dir
    (profile_dir / "REPORT.md").unlink()
    with pytest.raises(ValueError, match=r"REPORT.md.*make figures PROFILE=smoke"):
        book.build_book("smoke", root=profile_dir.parent, inventory=inventory)
    shutil.rmtree(profile_dir / "notebooks")
    with pytest.raises(ValueError, match=r"notebooks.*make figures PROFILE=smoke"):
        book.build_book("smoke", root=profile_dir.parent, inventory=inventory)


def test_book_cli_names_the_missing_folder(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        book.main(["--profile", "smoke", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "smoke" / "notebooks") in err and "make figures PROFILE=smoke" in err
