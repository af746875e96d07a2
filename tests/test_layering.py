"""The library's shape: imports point down only (driver -> chapters -> methods -> core), no
chapter imports another, and no module imports another module's ``_private`` names.

The first two are import-linter contracts declared in pyproject.toml; the third is an AST scan
(import-linter has no rule for imported names).
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lalr_core"


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), str(ROOT / "pyproject.toml")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout and "3 kept" in done.stdout, done.stdout


def _private_imports(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lalr_core"):
            found += [f"{path.relative_to(root)}: {node.module}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_module_imports_private_names_of_another():
    bad = [hit for p in sorted(PACKAGE.rglob("*.py")) for hit in _private_imports(p)]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_private_name_scan_finds_a_violation(tmp_path):
    demo = tmp_path / "demo.py"
    demo.write_text("from lalr_core.core.data import _generator_for, DATASETS\n"
                    "from lalr_core.core import __version__\n")
    assert _private_imports(demo, tmp_path) == ["demo.py: lalr_core.core.data._generator_for"]
