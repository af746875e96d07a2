"""scripts/compare_checks.py finds a changed verdict, number or table, and nothing else."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("compare_checks", ROOT / "scripts/compare_checks.py")
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)


def _tree(root: Path, verdict="PASS", ours=1.5, table="a,b\n1,2\n", commit="abc", cpu="X"):
    (root / "04_x").mkdir(parents=True)
    (root / "04_x/checks.json").write_text(json.dumps([
        {"item_id": "fig1", "claim": "c", "verdict": verdict, "passed": verdict == "PASS",
         "detail": "", "ours": ours, "source": None, "commit": commit,
         "environment": {"cpu": cpu, "cpu_capability": "AVX2", "torch": "2.14.1"}}]))
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


def test_wall_clock_numbers_are_not_compared_but_their_verdicts_are(tmp_path):
    def tree(root, verdict, r, seconds):
        (root / "01_lalr").mkdir(parents=True)
        (root / "01_lalr/checks.json").write_text(json.dumps([
            {"item_id": "L-C7", "claim": "the metric overhead is negligible next to an epoch",
             "verdict": verdict, "ours": {"r_range": r}, "detail": ""},
            {"item_id": "L-C8", "claim": "other", "verdict": "PASS", "ours": r, "detail": ""}]))
        (root / "01_lalr/X-L1.csv").write_text(f"n_blocks,t_epoch_s,r\n2,{seconds},{r}\n")
        return cc.snapshot(root)

    base = tree(tmp_path / "a", "FAIL", 0.08, 0.05)
    slower = tree(tmp_path / "b", "FAIL", 0.09, 0.07)
    diffs = cc.differences(base, slower)
    assert len(diffs) == 1 and "L-C8" in diffs[0]   # the same number in an ordinary check differs
    flipped = cc.differences(base, tree(tmp_path / "c", "PASS", 0.08, 0.05))
    assert len(flipped) == 1 and "L-C7" in flipped[0] and "verdict" in flipped[0]
    grid = tmp_path / "d"
    tree(grid, "FAIL", 0.08, 0.05)
    (grid / "01_lalr/X-L1.csv").write_text("n_blocks,t_epoch_s,r\n4,0.05,0.08\n")
    assert cc.differences(base, cc.snapshot(grid)) == ["table 01_lalr/X-L1.csv: content differs"]


def test_a_verdict_tables_wall_clock_row_keeps_its_verdict_not_its_numbers(tmp_path):
    head = "claim,kind,what we test,experiment,our numbers,paired statistic,verdict\n"
    row = "L-C7,claim,the metric overhead is negligible next to an epoch,X-L1,r {},,{}\n"
    other = "L-C8,claim,other,X-L2,{},,PASS\n"

    def tree(root, r, verdict, n):
        (root / "01_lalr").mkdir(parents=True)
        (root / "01_lalr/checks.json").write_text("[]")
        (root / "01_lalr/verdicts.csv").write_text(head + row.format(r, verdict)
                                                   + other.format(n))
        return cc.snapshot(root)

    base = tree(tmp_path / "a", 0.08, "FAIL", 1.5)
    assert cc.differences(base, tree(tmp_path / "b", 0.07, "FAIL", 1.5)) == []
    for i, (r, verdict, n) in enumerate([(0.08, "PASS", 1.5), (0.08, "FAIL", 1.25)]):
        assert cc.differences(base, tree(tmp_path / f"c{i}", r, verdict, n)) == [
            "table 01_lalr/verdicts.csv: content differs"]


def test_the_summary_names_a_machine_change_and_counts_changed_verdicts(tmp_path):
    before = cc.snapshot(_tree(tmp_path / "a"))
    same_verdict = cc.snapshot(_tree(tmp_path / "b", ours=1.25, cpu="Y"))
    lines = cc.summary_lines(before, same_verdict, cc.differences(before, same_verdict))
    assert lines[0].startswith("machines differ: before X (AVX2)") and "after Y (AVX2)" in lines[0]
    assert lines[1] == "1 differences; verdicts changed: 0 of 1 checks"
    flipped = cc.snapshot(_tree(tmp_path / "c", verdict="FAIL"))
    lines = cc.summary_lines(before, flipped, cc.differences(before, flipped))
    assert lines[0] == "1 differences; verdicts changed: 1 of 1 checks"  # one machine: no line
    assert lines[1].strip().startswith("04_x #0 fig1: PASS -> FAIL")
