"""scripts/compare_checks.py finds a changed verdict, number or table, and nothing else."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("compare_checks", ROOT / "scripts/compare_checks.py")
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)


def _tree(root: Path, verdict="PASS", ours=1.5, table="a,b\n1,2\n", commit="abc"):
    (root / "04_x").mkdir(parents=True)
    (root / "04_x/checks.json").write_text(json.dumps([
        {"item_id": "fig1", "claim": "c", "verdict": verdict, "passed": verdict == "PASS",
         "detail": "", "ours": ours, "source": None, "commit": commit}]))
    (root / "04_x/t.csv").write_text(table)
    return root


def test_identical_runs_compare_equal_despite_provenance(tmp_path):
    before = cc.snapshot(_tree(tmp_path / "a", commit="abc"))
    assert cc.differences(before, cc.snapshot(_tree(tmp_path / "b", commit="def"))) == []


def test_changed_verdict_number_and_table_are_reported(tmp_path, capsys):
    before = cc.snapshot(_tree(tmp_path / "a"))
    (tmp_path / "before.json").write_text(json.dumps(before))
    diffs = cc.differences(before, cc.snapshot(_tree(tmp_path / "b", "FAIL", 1.25, "a,b\n1,3\n")))
    assert len(diffs) == 2 and "verdict" in diffs[0] and "1.25" in diffs[0]
    assert diffs[1] == "table 04_x/t.csv: content differs"
    assert cc.main(["compare", str(tmp_path / "before.json"), str(tmp_path / "b")]) == 1
    assert cc.main(["compare", str(tmp_path / "before.json"), str(tmp_path / "a")]) == 0


def test_counts_split_claim_tests_from_sanity_checks(tmp_path):
    before = cc.snapshot(_tree(tmp_path / "a"))
    after = cc.snapshot(_tree(tmp_path / "b", "FAIL"))
    rows = json.loads((tmp_path / "b/04_x/checks.json").read_text())
    rows[0]["kind"] = "claim"
    rows.append({**rows[0], "claim": "sums to one", "kind": "sanity", "verdict": "PASS"})
    (tmp_path / "b/04_x/checks.json").write_text(json.dumps(rows))
    table = cc.counts_table(before, cc.snapshot(tmp_path / "b"))
    assert "| 04_x | unclassified | 1/0/0/0 | 0/0/0/0 |" in table
    assert "| 04_x | claim | 0/0/0/0 | 0/1/0/0 |" in table
    assert "| 04_x | sanity | 0/0/0/0 | 1/0/0/0 |" in table
    assert after["checks"]["04_x"][0]["verdict"] == "FAIL"


def test_a_committed_results_folder_is_a_before(tmp_path):
    # `make compare`: results/<profile> has the figures' layout, so it is read as a snapshot
    _tree(tmp_path / "results")
    _tree(tmp_path / "same")
    _tree(tmp_path / "changed", "FAIL")
    assert cc.main(["compare", str(tmp_path / "results"), str(tmp_path / "same")]) == 0
    assert cc.main(["compare", str(tmp_path / "results"), str(tmp_path / "changed")]) == 1
