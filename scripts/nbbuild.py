"""Build a chapter notebook from a percent-format source (``# %%`` code, ``# %% [markdown]``).

Usage: ``python scripts/nbbuild.py notebooks/src/04_directedness.py notebooks/04_directedness.ipynb``.
A cell whose first line is ``# parameters`` gets the papermill ``parameters`` tag. The output is
stored without outputs, as the collection requires. Editing the .ipynb in JupyterLab directly
is fine too; this script only exists so the notebook's source diff reads as plain Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def parse(text: str) -> list:
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "markdown":
            body = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(body))
        else:
            cell = nbformat.v4.new_code_cell(body)
            if body.startswith("# parameters"):
                cell.metadata["tags"] = ["parameters"]
            cells.append(cell)

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def main(src: str, dst: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = parse(Path(src).read_text())
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"  # stable ids keep rebuilds diff-free
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, dst)


if __name__ == "__main__":
    main(*sys.argv[1:3])
