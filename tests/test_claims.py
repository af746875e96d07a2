"""Claims as data (`lalr_core.core.results.claims`): validation, judging, findings, power."""

import math

import pytest

from lalr_core.core.results.claims import DETERMINISTIC, Claim, Finding, underpowered
from lalr_core.core.results.evidence import Evidence, paired_difference
from lalr_core.core.results.writer import FigureWriter


def test_a_claim_validates_itself_and_defaults_its_item():
    c = Claim("fig4.6-lower", "QN ends lower than SGD", threshold=0.0, side="less",
              item="fig4.6", source_effect=-5.0, unit="points")
    assert c.item == "fig4.6" and Claim("L-C8", "order").item == "L-C8"
    for bad in ({"kind": "proxy"}, {"side": "up", "threshold": 0.0}, {"threshold": 1.0}):
        with pytest.raises(ValueError):
            Claim("x", "y", **bad)
    with pytest.raises(ValueError, match="non-empty"):
        Claim("x", " ")


def test_judge_applies_the_claims_threshold_and_side():
    c = Claim("c", "A beats B by more than 1 point", threshold=1.0, side="greater")
    ev = paired_difference([0.90, 0.92, 0.91, 0.93, 0.91], [0.87, 0.88, 0.89, 0.90, 0.88],
                           scale=100)
    judged = c.judge(ev)
    assert (judged.threshold, judged.side, judged.verdict) == (1.0, "greater", "PASS")
    assert c.judge(paired_difference([0.9, 0.905, 0.9, 0.9, 0.905, 0.9],
                                       [0.9, 0.9, 0.905, 0.9, 0.9, 0.905], scale=100)).verdict \
        == "FAIL"
    flat = c.judge(paired_difference([0.9, 0.9, 0.9], [0.9, 0.9, 0.9], scale=100))
    assert flat.verdict == "FAIL" and flat.claim_verdict == "INCONCLUSIVE"  # zero width
    with pytest.raises(ValueError, match="no threshold"):
        Claim("d", "no interval").judge(ev)


def test_findings_give_verdicts_and_need_a_reason_for_na():
    assert Finding(True).verdict == "PASS" and Finding(False).verdict == "FAIL"
    assert Finding(Evidence(0.5, -1, 2)).verdict == "INCONCLUSIVE"
    assert Finding(None, detail="no pulled step").verdict == "N/A"
    with pytest.raises(ValueError, match="detail"):
        Finding(None)
    with pytest.raises(ValueError, match="evidence"):
        Finding(0.3)


def test_underpowered_compares_the_sources_effect_with_the_half_width():
    ev = Evidence(1.0, -2.0, 4.0, threshold=0.0, side="greater")   # half-width 3
    assert ev.half_width == 3.0
    assert underpowered(ev, 2.5) and not underpowered(ev, 3.5)
    assert underpowered(ev, -2.9) and not underpowered(ev, None)
    assert underpowered(Evidence(0.0, -0.6, 0.6, threshold=0.5, side="within"), None)
    assert not underpowered(Evidence(0.0, -0.4, 0.4, threshold=0.5, side="within"), None)
    assert math.isinf(Evidence(0.0, -math.inf, math.inf).half_width)


def test_record_stores_kind_half_width_and_power(tmp_path):
    out = FigureWriter("05_quasi_newton", "smoke", "05_quasi_newton.ipynb", root=tmp_path)
    c = Claim("fig4.6-lower", "QN ends lower than SGD", item="fig4.6", threshold=0.0,
              side="less", source_effect=-5.0, quote="QN ends lower")
    ev = c.judge(paired_difference([0.80, 0.86], [0.90, 0.91], scale=100))
    rec = out.record(c, Finding(ev, ours={"QN - SGD": ev.text()}))
    assert rec["kind"] == "claim" and rec["item_id"] == "fig4.6" and rec["quote"]
    assert rec["half_width"] == pytest.approx(ev.half_width)
    assert rec["underpowered"] is (abs(-5.0) <= ev.half_width)
    with pytest.raises(ValueError, match="judged"):
        out.check_claim(c, paired_difference([0.8, 0.86], [0.9, 0.91], scale=100))
    sanity = Claim("fig4.6-sum", "the rows sum to one", item="fig4.6", kind="sanity")
    assert out.record(sanity, Finding(True))["kind"] == "sanity"


def test_record_all_records_each_finding_under_its_claim_and_refuses_strangers(tmp_path):
    from lalr_core.core.results.claims import ItemFindings
    out = FigureWriter("07_signal_propagation", "smoke", "07.ipynb", root=tmp_path)
    claims = {"E1-a": Claim("E1-a", "holds", item="E1", replicate=DETERMINISTIC),
              "E1-b": Claim("E1-b", "sums to one", item="E1", kind="sanity")}
    item = ItemFindings({"E1-a": Finding(False), "E1-b": Finding(True)}, {"n": 3})
    assert out.record_all(claims, item, **{"E1-a": {"source": "1.76"}}) is item
    recs = out.checks()
    assert [(r["claim"], r["kind"], r["verdict"]) for r in recs] == [
        ("holds", "claim", "FAIL"), ("sums to one", "sanity", "PASS")]
    assert recs[0]["source"] == "1.76"
    with pytest.raises(ValueError, match="unknown claims"):
        out.record_all(claims, ItemFindings({"E9": Finding(True)}))
    assert len(out.checks()) == 2


def test_a_bare_pass_or_fail_decides_only_on_replicates_or_a_deterministic_computation(tmp_path):
    out = FigureWriter("05_quasi_newton", "smoke", "05.ipynb", root=tmp_path)
    one_run = Claim("fig4.7-a", "q is small", item="fig4.7")
    rec = out.record(one_run, Finding(True, detail="one run"))
    assert rec["verdict"] == "INCONCLUSIVE" and rec["passed"] is None
    assert rec["interval_verdict"] == "PASS" and "undeclared number" in rec["refusal"]
    assert out.record(one_run, Finding(False, replicates=2))["verdict"] == "INCONCLUSIVE"
    every_seed = out.record(one_run, Finding(False, replicates=3))
    assert every_seed["verdict"] == "FAIL" and every_seed["replicates"] == 3
    exact = Claim("fig4.14-a", "D rises", item="fig4.14", replicate=DETERMINISTIC,
                  null="the same flow without the method")
    rec = out.record(exact, Finding(True))
    assert rec["verdict"] == "PASS" and rec["null"] == "the same flow without the method"
    assert out.record(exact, Finding(None, detail="cannot show it"))["verdict"] == "N/A"
    # a sanity check's bool stands as it is
    sanity = Claim("fig4.7-s", "sums to one", item="fig4.7", kind="sanity")
    assert out.record(sanity, Finding(True))["verdict"] == "PASS"


def test_the_report_says_why_a_claim_test_was_not_decided(tmp_path):
    from lalr_core.core.results.pages import check_details, check_line
    out = FigureWriter("05_quasi_newton", "smoke", "05.ipynb", root=tmp_path)
    c = Claim("fig4.7-a", "q is small", item="fig4.7", replicate="a network trained from its "
              "own seed", null="the network at initialisation")
    record = out.record(c, Finding(True, detail="one run", replicates=1))
    assert check_line(record).startswith("**INCONCLUSIVE** q is small")
    text = "\n".join(check_details(record))
    assert "alone it would read PASS" in text
    assert "on 1 independent replicate:" in text and "null: the network at initialisation" in text
