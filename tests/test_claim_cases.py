"""Claims you can trust: every chapter keeps its claims as data (``<chapter>.claims.CLAIMS``)
and every claim test has synthetic cases on which it gives PASS and FAIL (and INCONCLUSIVE
when judged on an interval); the notebooks record claim tests only through those claims."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import pkgutil

import pytest
from claim_cases import uses_interval, verdict_of

from lalr_core import chapters
from lalr_core.core.results.claims import Claim

REPO = pathlib.Path(__file__).resolve().parents[1]
CASE_MODULES = sorted(REPO.glob("tests/test_*_claims.py"))


def _chapter_packages() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(chapters.__path__) if m.ispkg)


def _case_module(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _all_cases() -> dict[str, dict]:
    out = {}
    for path in CASE_MODULES:
        module = _case_module(path)
        assert module.CHAPTER not in out, f"two case modules for {module.CHAPTER}"
        out[module.CHAPTER] = module.CASES
    return out


def _claims(package: str) -> dict[str, Claim] | None:
    try:
        module = importlib.import_module(f"lalr_core.chapters.{package}.claims")
    except ModuleNotFoundError:
        return None
    return module.CLAIMS


CASES = _all_cases()
RUNNABLE = [(ch, cid, verdict) for ch, cases in CASES.items() for cid, by in cases.items()
            for verdict in by]


@pytest.mark.parametrize("chapter, claim_id, verdict", RUNNABLE)
def test_each_case_gives_its_verdict(chapter, claim_id, verdict):
    claims = _claims(chapter)
    assert claims is not None and claim_id in claims, f"{chapter} has no claim {claim_id}"
    result = CASES[chapter][claim_id][verdict]()
    assert verdict_of(result, claims[claim_id]) == verdict


@pytest.mark.parametrize("package", _chapter_packages())
def test_every_claim_test_can_pass_and_fail(package):
    claims = _claims(package)
    assert claims is not None, f"{package} keeps no claims as data (claims.py with CLAIMS)"
    assert all(isinstance(c, Claim) and cid == c.id for cid, c in claims.items())
    cases = CASES.get(package, {})
    missing = []
    for cid, claim in claims.items():
        by = cases.get(cid, {})
        if claim.kind != "claim" or set(by) == {"N/A"}:
            continue  # a sanity check, or a claim the source leaves untestable (N/A only)
        if not (claim.replicate.strip() and claim.null.strip()):
            missing.append(f"{cid}: its replicate unit and null (Claim.replicate, Claim.null)")
        owed = {"PASS", "FAIL"}
        if "PASS" in by and uses_interval(by["PASS"]()):
            owed.add("INCONCLUSIVE")
        if owed - set(by):
            missing.append(f"{cid}: {sorted(owed - set(by))}")
    assert not missing, f"{package}: claim tests without these cases: {missing}"


def _claim_checks(text: str) -> list[int]:
    """Lines of ``<writer>.check(..., kind="claim")`` calls in a notebook's source."""
    return [node.lineno for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "check"
            and any(k.arg == "kind" and isinstance(k.value, ast.Constant)
                    and k.value.value == "claim" for k in node.keywords)]


@pytest.mark.parametrize("source", sorted(REPO.glob("notebooks/src/*.py")), ids=lambda p: p.stem)
def test_notebooks_record_claim_tests_only_through_claims(source):
    """``out.check(..., kind="claim")`` would bypass the chapter's claims; claim tests go
    through ``out.record(CLAIMS[id], finding)`` or ``out.check_claim``."""
    lines = _claim_checks(source.read_text(encoding="utf-8"))
    assert not lines, f"{source.name} records claim tests outside CLAIMS at lines {lines}"


def test_the_notebook_reader_finds_a_claim_check_outside_claims():
    text = 'out.check("fig1", "goes up", every({"a": f(g(1))}), kind="claim")\n' \
           'out.check("fig1", "sums to one", True, kind="sanity")\n'
    assert _claim_checks(text) == [1]
