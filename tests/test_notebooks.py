"""Notebook hygiene: stored without outputs, exactly one `parameters` cell defaulting to smoke,
and in step with its percent-format source in notebooks/src/."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))


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
def test_in_step_with_source(path, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbbuild", ROOT / "scripts" / "nbbuild.py")
    nbbuild = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbbuild)
    src = ROOT / "notebooks" / "src" / (path.stem + ".py")
    nbbuild.main(str(src), str(tmp_path / path.name))
    built = json.loads((tmp_path / path.name).read_text())
    stored = json.loads(path.read_text())
    assert [c["source"] for c in built["cells"]] == [c["source"] for c in stored["cells"]], (
        f"rebuild with: python scripts/nbbuild.py {src.relative_to(ROOT)} {path.relative_to(ROOT)}")
