"""Notebook hygiene: stored without outputs, exactly one `parameters` cell defaulting to smoke,
and in step with its jupytext-paired percent-format source in notebooks/src/."""

import json
import os
import shutil
from pathlib import Path

import jupytext
import jupytext.cli
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
PAIRING = "ipynb,src//py:percent"


def source_of(path: Path) -> Path:
    return path.parent / "src" / (path.stem + ".py")


def cells(nb) -> list[tuple[str, str, list[str]]]:
    """(type, source, tags) of each cell; `nb` is a parsed .ipynb (dict) or a jupytext notebook."""
    out = []
    for c in nb["cells"]:
        src = c["source"]
        out.append((c["cell_type"], src if isinstance(src, str) else "".join(src),
                    list(c.get("metadata", {}).get("tags", []))))
    return out


def out_of_step(path: Path) -> list[str]:
    """What differs between the notebook at `path` and its paired source; empty when in step."""
    stored = cells(json.loads(path.read_text()))
    paired = cells(jupytext.read(source_of(path)))
    problems = []
    if len(stored) != len(paired):
        problems.append(f"{len(stored)} cells in the notebook, {len(paired)} in the source")
    for i, (a, b) in enumerate(zip(stored, paired)):
        for what, x, y in zip(("type", "source", "tags"), a, b):
            if x != y:
                problems.append(f"cell {i}: {what} differs")
    return problems


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_clean_with_one_parameters_cell(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    assert 'profile = "smoke"' in "".join(params[0]["source"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_in_step_with_source(path):
    src = source_of(path)
    assert src.exists(), f"missing paired source {src.relative_to(ROOT)}"
    assert json.loads(path.read_text())["metadata"].get("jupytext", {}).get("formats") == PAIRING
    text = jupytext.read(src)
    assert text.metadata.get("jupytext", {}).get("formats") == PAIRING
    assert text.metadata["jupytext"]["text_representation"]["format_name"] == "percent"
    problems = out_of_step(path)
    assert not problems, (f"{path.name} and {src.relative_to(ROOT)} are out of step "
                          f"({'; '.join(problems[:5])}); run: .venv/bin/jupytext --sync "
                          f"{path.relative_to(ROOT)}")


def _copy_pair(path: Path, tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    nb = Path(shutil.copy2(path, tmp_path / path.name))
    shutil.copy2(source_of(path), tmp_path / "src" / source_of(path).name)
    return nb


@pytest.mark.parametrize("edit", ["code", "markdown", "tag"])
def test_unsynced_source_edit_is_caught(edit, tmp_path):
    path = NOTEBOOKS[0]
    nb = _copy_pair(path, tmp_path)
    src = source_of(nb)
    assert out_of_step(nb) == []
    text = src.read_text()
    if edit == "code":
        new = text.replace('profile = "smoke"', 'profile = "quick"', 1)
    elif edit == "markdown":
        i = text.index("# %% [markdown]\n") + len("# %% [markdown]\n")
        new = text[:i] + "# An edited line.\n" + text[i:]
    else:
        new = text.replace('# %% tags=["parameters"]\n', "# %%\n", 1)
    assert new != text
    src.write_text(new)
    assert out_of_step(nb), "an unsynced edit of the source went unnoticed"

    # and `jupytext --sync` (source now the newer file) brings the notebook back in step
    stat = nb.stat()
    os.utime(src, (stat.st_atime + 10, stat.st_mtime + 10))
    assert jupytext.cli.jupytext(["--sync", "--quiet", str(nb)]) == 0
    assert out_of_step(nb) == []
    stored = json.loads(nb.read_text())
    assert all(not c.get("outputs") for c in stored["cells"] if c["cell_type"] == "code")
    assert [c["id"] for c in stored["cells"]] == [c["id"] for c in json.loads(path.read_text())["cells"]]
