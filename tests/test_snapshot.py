"""``make snapshot`` (`lalr_core.snapshot`) and the committed ``results/`` it writes.

The smoke-run test snapshots the session's ``make figures`` at smoke (conftest's `smoke_run`,
which the book's test shares: no run of its own) and reads every page as a code host would.
"""

import json
import re
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt
from PIL import Image

from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.core.results.pages import WIDTH
from lalr_core.snapshot import (
    FIGURE_BYTES,
    FIGURE_PX,
    PRESENTATION_PATHS,
    downscale_png,
    main,
    snapshot,
)

REPO = Path(__file__).resolve().parents[1]


def _figure(path: Path, size=(2400, 800), noise: bool = False) -> None:
    """A PNG as matplotlib writes one: RGBA on white, a few lines (or noise, which no palette
    compresses)."""
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (size[1], size[0], 4), dtype=np.uint8) if noise else \
        np.full((size[1], size[0], 4), 255, dtype=np.uint8)
    pixels[..., 3] = 255
    for row in range(0, size[1], 40):
        pixels[row:row + 3, :, :3] = (31, 119, 180)
    Image.fromarray(pixels, "RGBA").save(path)


def _profile(root: Path, name: str, verdicts: list[str], commit: str = "a" * 40) -> None:
    folder = root / name / "04_directedness"
    folder.mkdir(parents=True)
    checks = [{"item_id": "fig3.8", "claim": f"c{i}", "kind": "claim", "verdict": v,
               "chapter": "04_directedness", "commit": commit, "dirty": False,
               "timestamp_utc": "2026-11-28T12:00:00+00:00"} for i, v in enumerate(verdicts)]
    (folder / "checks.json").write_text(json.dumps(checks))
    (folder / "E13.md").write_text("| a |\n|---|\n| 1 |\n")
    (folder / "E13.csv").write_text("a\n1\n")
    _figure(folder / "fig3.8.png")
    (folder / "fig3.8.pdf").write_bytes(b"%PDF")
    (root / name / "REPORT.md").write_text("# Report as the run wrote it\n")


def test_snapshot_renders_the_pages_with_figures_and_indexes_every_profile(tmp_path):
    figures, results = tmp_path / "figures", tmp_path / "results"
    _profile(figures, "quick", ["PASS", "FAIL", "INCONCLUSIVE"])
    _profile(figures, "rehearsal/paper", ["PASS"], commit="b" * 40)
    rows = snapshot(figures, results)
    assert [r["name"] for r in rows] == ["quick", "rehearsal/paper"]
    quick = results / "quick"
    for name in ("checks.json", "E13.md", "E13.csv"):
        assert (quick / "04_directedness" / name).is_file()
    with Image.open(quick / "04_directedness/fig3.8.png") as png:
        assert max(png.size) == FIGURE_PX  # downscaled from 2400 x 800
    assert not list(results.rglob("*.pdf"))
    # REPORT.md is rendered from the records, not copied; the pages beside it show the figure
    report = (quick / "REPORT.md").read_text()
    assert "as the run wrote it" not in report
    assert "[png](04_directedness/fig3.8.png); pdf not in the snapshot" in report
    assert "[md](04_directedness/E13.md)" in report
    page = (quick / "04_directedness.md").read_text()
    assert "(04_directedness/fig3.8.png)" in page and "- **FAIL** c1" in page
    # a rehearsal stays text only, and says so
    assert not list((results / "rehearsal").rglob("*.png"))
    assert "png, pdf not in the snapshot" in (results / "rehearsal/paper/REPORT.md").read_text()
    assert "![" not in (results / "rehearsal/paper/04_directedness.md").read_text()
    index = (results / "README.md").read_text()
    # items present are counted from the outputs (fig3.8: png; E13: md, csv), not from REPORT.md
    n_items = len(read_inventory(default_inventory()))
    assert f"| 1 / 1 / 1 / 0 | 0 | 2 of {n_items} |" in index
    assert "rehearsal: the profile's grid" in index and "bbbbbbb" in index
    # and a table of chapters per profile, each linked to its page
    n_chapter = sum(r["chapter"] == "04_directedness" for r in read_inventory(default_inventory()))
    assert "## quick: by chapter" in index and "## rehearsal/paper: by chapter" in index
    assert f"| [04_directedness](quick/04_directedness.md) | 1 / 1 / 1 / 0 | 0 | 2 of {n_chapter} |" \
        in index
    # a profile absent from figures/ later keeps its snapshot; one present is replaced
    (figures / "quick/REPORT.md").unlink()
    _profile(figures, "paper", ["FAIL"])
    names = [r["name"] for r in snapshot(figures, results)]
    assert names == ["paper", "quick", "rehearsal/paper"]


def test_a_figure_keeps_full_colour_when_it_fits_and_takes_a_palette_when_not(tmp_path):
    _figure(tmp_path / "plain.png", (1200, 300))
    _figure(tmp_path / "noise.png", (1200, 300), noise=True)
    assert downscale_png(tmp_path / "plain.png", tmp_path / "plain.small.png") <= FIGURE_BYTES
    downscale_png(tmp_path / "noise.png", tmp_path / "noise.small.png")
    with Image.open(tmp_path / "plain.small.png") as plain, \
            Image.open(tmp_path / "noise.small.png") as noise:
        assert plain.mode == "RGB" and plain.size == (1000, 250)
        assert noise.mode == "P" and noise.size == (1000, 250)  # the budget forced a palette


class _Rendered(HTMLParser):
    """The links, images, ids and tables of a Markdown text as markdown-it renders it."""

    def __init__(self, text: str):
        super().__init__()
        self.hrefs, self.imgs, self.ids, self.tables = [], [], set(), 0
        self.feed(MarkdownIt("commonmark", {"html": True}).enable("table").render(text))

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids.add(a.get("id"))
        self.tables += tag == "table"
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if tag == "img":
            self.imgs.append(a.get("src") or "")


def _table_cells(text: str) -> list[str]:
    """The text a reader sees in every table cell of a Markdown text (a link as its label)."""
    cells, inside = [], False
    for token in MarkdownIt("commonmark").enable("table").parse(text):
        inside = token.type in ("th_open", "td_open") or (
            inside and token.type not in ("th_close", "td_close"))
        if inside and token.type == "inline":
            cells.append("".join(c.content for c in token.children or ()
                                 if c.type in ("text", "code_inline")))
    return cells


def _broken(page: Path, rendered: dict[Path, _Rendered]) -> list[str]:
    """The relative links and images of ``page`` whose file, or whose anchor in a Markdown
    file, does not exist (``rendered``: the pages rendered so far, by path)."""
    def of(path: Path) -> _Rendered:
        return rendered.setdefault(path, _Rendered(path.read_text()))

    bad = []
    for link in of(page).hrefs + of(page).imgs:
        target, _, anchor = link.partition("#")
        if target.startswith(("https://", "http://")):
            continue
        path = (page.parent / target).resolve() if target else page
        if not path.is_file() or (anchor and path.suffix == ".md" and anchor not in of(path).ids):
            bad.append(link)
    return bad


def test_a_snapshot_of_a_smoke_run_renders_and_links_every_file(smoke_run, tmp_path):
    t0 = time.perf_counter()
    results = tmp_path / "results"
    snapshot(smoke_run / "figures", results)
    print(f"snapshot of the smoke run: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    smoke = results / "smoke"
    written = sorted(p.resolve() for p in results.rglob("*.md"))
    rendered: dict[Path, _Rendered] = {}
    bad = {str(p.relative_to(results.resolve())): b for p in written
           if (b := _broken(p, rendered))}
    assert bad == {}
    pages = [p for p in written if p.parent == smoke.resolve() and p.name != "REPORT.md"]
    assert {p.stem for p in pages} == {r["chapter"] for r in read_inventory(default_inventory())}
    shown = 0
    for page in pages:  # every image line is an <img>, and nothing else is
        assert len(rendered[page].imgs) == page.read_text().count("\n![")
        assert all(src.endswith(".png") for src in rendered[page].imgs)
        shown += len(rendered[page].imgs)
    pngs = list(smoke.rglob("*.png"))
    assert shown and pngs
    for png in pngs:
        with Image.open(png) as image:
            assert max(image.size) <= FIGURE_PX, png
    report = (smoke / "REPORT.md").read_text()
    assert _Rendered(report).tables >= 2  # the items and the sanity checks
    assert max(map(len, _table_cells(report))) <= WIDTH
    index = _Rendered((results / "README.md").read_text())
    assert index.tables == 2 and "smoke/04_directedness.md" in index.hrefs


def test_snapshot_without_reports_says_what_to_run(tmp_path, capsys):
    assert main(["--figures", str(tmp_path), "--results", str(tmp_path / "r")]) == 2
    assert "run `make figures` first" in capsys.readouterr().err


def test_the_committed_results_index_links_only_files_that_exist():
    index = REPO / "results" / "README.md"
    if not index.is_file():
        pytest.skip("no results/ snapshot committed")
    links = re.findall(r"\]\(([^)]+)\)", index.read_text())
    assert links and all((index.parent / link).is_file() for link in links)
    reports = {str(p.relative_to(index.parent)) for p in index.parent.rglob("REPORT.md")}
    assert reports == {link for link in links if link.endswith("/REPORT.md")}


def _git(repo: Path, *args: str) -> str:
    import subprocess
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_snapshot_refuses_outputs_that_head_did_not_make(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / "lalr_core").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@t")
    _git(repo, "config", "user.name", "t")
    (repo / "lalr_core/m.py").write_text("x = 1\n")
    for path in PRESENTATION_PATHS:
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("how = 1\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    made_at = _git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("docs only\n")  # outside CODE_PATHS: still fresh
    for path in PRESENTATION_PATHS:  # code that only presents the records: still fresh
        (repo / path).write_text("how = 2\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "docs and presentation")
    figures, results = tmp_path / "figures", tmp_path / "results"
    _profile(figures, "quick", ["PASS"], commit=made_at)
    assert [r["name"] for r in snapshot(figures, results, repo=repo)] == ["quick"]
    # code changed since the records were made: refused, nothing rewritten
    (repo / "lalr_core/m.py").write_text("x = 2\n")
    _git(repo, "commit", "-qam", "code")
    shutil_before = (results / "README.md").read_text()
    with pytest.raises(ValueError, match=r"whose code differs from HEAD in 1 files \(lalr_core/m.py\)"):
        snapshot(figures, results, repo=repo)
    assert (results / "README.md").read_text() == shutil_before
    # a dirty record and an unknown commit are refused too
    rows = json.loads((figures / "quick/04_directedness/checks.json").read_text())
    rows[0].update(dirty=True, commit=_git(repo, "rev-parse", "HEAD"))
    rows.append({**rows[0], "dirty": False, "commit": "f" * 40})
    (figures / "quick/04_directedness/checks.json").write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="dirty") as err:
        snapshot(figures, results, repo=repo)
    assert "which this repository does not hold" in str(err.value)
