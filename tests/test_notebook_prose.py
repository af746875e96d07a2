"""A notebook's prose states no number its run did not produce.

Numbers a reader takes as results must come from the execution: a rendered cell (Markdown built
by code from the run's values) or none. The notebooks' static Markdown may still name settings,
the sources' own numbers and references: a number is allowed there only where it is *known
before the run*, i.e. it appears in the notebook's code (its parameters and settings), in the
chapter's package (settings, claims, the sources' quotes), in the chapter's rows of the sources'
inventory, in REFERENCES.md or in the intervals' confidence level. References (fig 4.6, eq. 4.33, sec. 1.2, §3, E-3.1, L-C10),
inline code, formulas and links are not read as numbers.
"""

from __future__ import annotations

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted(REPO.glob("notebooks/src/*.py"))

_REF = (r"(?:figs?\.?|figures?|tables?|tabs?\.?|eqs?\.?|equations?|secs?\.?|sections?|§+|"
        r"appendix|appendices|app\.?|chapters?|ch\.?|listings?|algorithms?|alg\.?|lines?|pages?|"
        r"pp?\.|theorems?|lemmas?|propositions?|prop\.?|definitions?|def\.?|corollary|"
        r"cor\.?|remarks?|steps?|notebooks?|issues?|panels?|rows?|columns?|exercises?|"
        r"examples?|items?|parts?|version|v)")
# a reference: a keyword then one or more numbers ("figs 4.7-4.9", "eqs. 4.33-4.35, 4.40")
_REFERENCE = re.compile(_REF + r"\s*(?:[A-Z]?\d+(?:\.\d+)*[a-z]?(?:\s*(?:[-–—,/]|and|or|to|&)\s*)?)+",
                        re.IGNORECASE)
_LABEL = re.compile(r"\b[A-Z][A-Za-z]{0,3}[-.]?\d+(?:[-.]\d+)*[a-z]?\b")  # E-3.1, L-C10, X-L3, E9
_CODE = re.compile(r"`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)
_LINK = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]?\d)")


def _cells(text: str) -> tuple[list[str], list[str]]:
    """(markdown cells, code cells) of a jupytext percent file."""
    markdown, code = [], []
    for block in re.split(r"^# %%", text, flags=re.MULTILINE)[1:]:
        header, _, body = block.partition("\n")
        if "[markdown]" in header:
            markdown.append("\n".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                                      for line in body.splitlines()))
        else:
            code.append(body)
    return markdown, code


def _numbers(text: str) -> set[float]:
    return {float(m) for m in _NUMBER.findall(text)}


def _prose_numbers(markdown: str) -> list[tuple[str, str]]:
    """``(number, its sentence)`` for each number of ``markdown`` read as a statement."""
    out = []
    for paragraph in re.split(r"\n\s*\n", markdown):
        if paragraph.lstrip().startswith("#"):
            continue  # a heading names a section
        clean = paragraph
        for pattern in (_CODE, _MATH, _LINK, _REFERENCE, _LABEL, _YEAR):
            clean = pattern.sub(" ", clean)
        for m in _NUMBER.finditer(clean):
            context = clean[max(0, m.start() - 60):m.end() + 40].replace("\n", " ")
            out.append((m.group(), context))
    return out


def _chapter_package(stem: str) -> list[pathlib.Path]:
    prefix = "ch" + stem.split("_")[0]
    chapters = REPO / "lalr_core" / "chapters"
    hits = [p for p in chapters.iterdir() if p.name.split("_")[0] == prefix]
    return [f for p in hits for f in ([p] if p.is_file() else sorted(p.glob("*.py")))]


def known_numbers(source: pathlib.Path) -> set[float]:
    """Numbers known before the run: the notebook's code, its chapter's package, its
    inventory rows, REFERENCES.md and the intervals' confidence (95 %)."""
    _, code = _cells(source.read_text(encoding="utf-8"))
    texts = code + [p.read_text(encoding="utf-8") for p in _chapter_package(source.stem)]
    chapter = source.stem
    inventory = (REPO / "data" / "reference" / "inventory.csv").read_text(encoding="utf-8")
    texts += [line for line in inventory.splitlines() if line.startswith(chapter + ",")]
    texts.append((REPO / "REFERENCES.md").read_text(encoding="utf-8"))
    texts.append((REPO / "lalr_core" / "core" / "results" / "evidence.py").read_text("utf-8"))
    known = set().union(*(_numbers(t) for t in texts))
    return known | {round(100 * v, 10) for v in known if v < 1}  # 0.95 is also "95 %"


def unproduced_numbers(source: pathlib.Path) -> list[tuple[str, str]]:
    """The prose's numbers that are not known before the run."""
    known = known_numbers(source)
    markdown, _ = _cells(source.read_text(encoding="utf-8"))
    return [(n, ctx) for cell in markdown for n, ctx in _prose_numbers(cell)
            if float(n) not in known]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_prose_states_only_numbers_known_before_the_run(source):
    found = unproduced_numbers(source)
    assert not found, (f"{source.name}: {len(found)} numbers in Markdown that no setting, source "
                       "or reference gives; state results in a rendered cell:\n"
                       + "\n".join(f"  {n}: ...{ctx}..." for n, ctx in found))


def test_the_prose_reader_flags_a_result_and_spares_references(tmp_path):
    nb = tmp_path / "09_toy.py"
    nb.write_text("# %% [markdown]\n# As fig 4.6 and eq. 4.33 show (`lr=0.25`), accuracy rose "
                  "to 71.3 % at lr 0.5.\n\n# %%\nlr = 0.5\n", encoding="utf-8")
    assert [n for n, _ in unproduced_numbers(nb)] == ["71.3"]
