"""The chapter pages (`lalr_core.core.results.pages`) and REPORT.md's short cells, from
hand-made records; the snapshot's smoke-run test reads the pages of a real run."""

import ast
from pathlib import Path

from markdown_it import MarkdownIt

from lalr_core.core.results import pages, report
from lalr_core.core.results.evidence import paired_difference
from lalr_core.core.results.writer import FigureWriter

PAGES_PY = Path(pages.__file__)
CLAIM = {"item_id": "figB", "chapter": "09_toy", "kind": "claim", "verdict": "PASS",
         "claim": "B rises", "detail": "paired by seed", "quote": "B clearly rises",
         "source": 1.2, "replicate_unit": "a run from its own seed", "null": "SGD",
         "interval": {"estimate": 1.0, "low": 0.5, "high": 1.5, "threshold": 0.0,
                      "side": "greater", "n": 5, "method": "paired t over 5 seeds"}}
SANITY = {"item_id": "figB", "chapter": "09_toy", "kind": "sanity", "verdict": "PASS",
          "claim": "weights sum to one", "ours": 1.0}


def _record(item_id, files=None, checks=(), caption="a caption"):
    return {"chapter": "09_toy", "item_id": item_id, "kind": "figure", "caption": caption,
            "source_claim": f"the source's claim of {item_id}", "source_numbers": "",
            "files": files or {}, "checks": list(checks)}


def _render(text: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def test_a_page_lists_items_in_the_inventorys_order_one_short_line_per_check():
    long_claim = {**CLAIM, "verdict": "FAIL", "claim": "B rises " + "and rises " * 20,
                  "source": None, "source_effect": 2.0}
    records = [_record("figB", {"png": "09_toy/figB.png", "pdf": "09_toy/figB.pdf"},
                       [CLAIM, long_claim, SANITY]),
               _record("figA")]  # the inventory lists figB first: the page keeps that order
    text = pages.chapter_page("09_toy", "smoke", records)
    lines = text.splitlines()
    assert text.index('id="figB"') < text.index('id="figA"')
    assert "![figB: a caption](09_toy/figB.png)" in lines
    assert "Ours: [png](09_toy/figB.png) [pdf](09_toy/figB.pdf)" in lines
    # the claim test: verdict, claim, estimate [interval], replicates, the source's number
    assert "- **PASS** B rises: +1.00 [+0.50, +1.50], 5 seeds; claim > 0; source: 1.2" in lines
    # its long text folds under the line, inside the list item
    at = lines.index("- **PASS** B rises: +1.00 [+0.50, +1.50], 5 seeds; claim > 0; source: 1.2")
    assert lines[at + 2] == f"  <details><summary>{pages.DETAILS_SUMMARY}</summary>"
    block = lines[at + 2:lines.index("  </details>", at)]
    assert "  - The source: “B clearly rises”" in block and "  - How: paired by seed" in block
    assert "  - Replicate: a run from its own seed; null: SGD" in block
    # a long claim is cut on its line and given whole in its details
    [cut] = [x for x in lines if x.startswith("- **FAIL**")]
    assert "…" in cut and cut.endswith("; source: effect +2")
    assert f"  - Claim: {long_claim['claim'].strip()}" in lines
    # sanity checks apart, after the claim tests
    assert text.index("Sanity checks") > text.index("- **FAIL**")
    assert "- **PASS** weights sum to one: 1.0" in lines
    # an item without outputs says so in one line
    assert "No outputs at this profile: no figure, table or check." in lines
    assert "1 with outputs; claim tests: 1 PASS, 1 FAIL, 0 INCONCLUSIVE, 0 N/A; 1 sanity" in text
    assert _render(text).count("<img") == 1
    folds = [t for t in MarkdownIt("commonmark").parse(text)
             if t.type == "html_block" and "<details>" in t.content]
    assert len(folds) == 2 and all(t.level > 0 for t in folds)  # each inside its check's item


def test_a_snapshot_page_names_what_it_left_out_and_pages_follow_the_chapters():
    files = {"png": "09_toy/figB.png", "pdf": "09_toy/figB.pdf", "md": "09_toy/figB.md"}
    text = pages.chapter_page("09_toy", "smoke", [_record("figB", files)],
                              linked=("csv", "md"))
    assert "![" not in text and "Ours: [md](09_toy/figB.md); png, pdf not in the snapshot" in text
    other = {**CLAIM, "chapter": "10_more", "item_id": "figZ"}
    records = [_record("figB"), {**_record("figC"), "chapter": "08_first"}]
    out = pages.chapter_pages("smoke", records, [other],
                              placement={"chapters": {"09": {"run": "part", "skipped_cells": 3,
                                                             "reasons": {"figB": "needs a GPU"}}}})
    assert list(out) == ["09_toy.md", "08_first.md", "10_more.md"]
    assert "Not run on this machine: 3 cells" in out["09_toy.md"]
    assert "- figB: needs a GPU" in out["09_toy.md"]
    assert "### <a id=\"figZ\"></a>figZ · not in the inventory" in out["10_more.md"]


def test_report_cells_are_cut_short_and_link_the_page(tmp_path):
    out = FigureWriter("02_tempbalance", "smoke", "02_tempbalance.ipynb", root=tmp_path)
    claim = "TB | beats the baseline " + "by a margin " * 20
    out.check("fig2.1", claim, paired_difference([0.9, 0.92, 0.91], [0.85, 0.86, 0.86]),
              kind="claim", quote="TB improves accuracy " * 20)
    text = report.render_report("smoke", tmp_path / "smoke", [])
    [row] = [x for x in text.splitlines() if x.startswith("| 02_tempbalance | [fig2.1]")]
    assert "(02_tempbalance.md#fig2.1)" in row and "TB \\| beats" in row
    cells = [c.strip() for c in row.replace("\\|", "¦").strip("|").split("|")]
    assert max(map(len, cells)) <= pages.WIDTH and any(c.endswith("…") for c in cells)
    assert "improves" not in row  # the source's sentence is on the page only


def _imports_outside_core(path: Path) -> list[str]:
    """The ``lalr_core`` modules a file imports that are not under ``lalr_core.core``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.append(node.module or "")
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))  # relative: not allowed either
    return [n for n in names if n.startswith((".", "lalr_core")) and
            not n.startswith("lalr_core.core.")]


def test_pages_imports_only_from_the_core(tmp_path):
    assert _imports_outside_core(PAGES_PY) == []
    demo = tmp_path / "demo.py"
    demo.write_text("import json\nfrom lalr_core.core.results import records\n"
                    "from lalr_core.methods import spectra\nimport lalr_core.book\n")
    assert _imports_outside_core(demo) == ["lalr_core.methods", "lalr_core.book"]
