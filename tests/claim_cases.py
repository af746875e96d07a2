"""Every claim test can fail: the shared harness of the chapters' claim-case tests.

A chapter's test module (``tests/test_<chapter>_claims.py``) defines

    CHAPTER = "ch05_quasi_newton"            # the package under lalr_core.chapters
    CASES = {claim_id: {"PASS": make, "FAIL": make, "INCONCLUSIVE": make}}

where each ``make`` is a zero-argument function that builds small synthetic results, calls
the chapter's function for that claim and returns its `Finding` (or `Evidence`). The case's
key is the verdict it must give. ``test_claim_cases.py`` runs every case and checks that every
claim test of every chapter has a PASS and a FAIL case (and an INCONCLUSIVE case when it is
judged on an interval); a claim for which no FAIL case can be built is a sanity check.
"""

from __future__ import annotations

from lalr_core.core.results.claims import Claim, Finding, bool_refusal
from lalr_core.core.results.evidence import Evidence


def verdict_of(result, claim: Claim | None = None) -> str:
    """The verdict of a case's result: a `Finding`, an `Evidence` or a bool. With the claim
    test's ``claim``, the verdict ``FigureWriter.record`` would store: INCONCLUSIVE where the
    interval rests on fewer than 3 independent replicates or has zero width
    (`Evidence.claim_verdict`), or where a bare bool is neither deterministic nor declared to
    hold over >= 3 replicates (`bool_refusal`)."""
    judged = claim is not None and claim.kind == "claim"
    if isinstance(result, Finding):
        if judged and isinstance(result.evidence, bool) and \
                bool_refusal(claim.replicate, result.replicates):
            return "INCONCLUSIVE"
        result = result.evidence if isinstance(result.evidence, Evidence) else result
    if isinstance(result, Evidence):
        return result.claim_verdict if judged else result.verdict
    if isinstance(result, Finding):
        return {True: "PASS", False: "FAIL", None: "N/A"}[result.evidence]
    if isinstance(result, bool) or result is None:
        if judged and result is not None and bool_refusal(claim.replicate, None):
            return "INCONCLUSIVE"
        return {True: "PASS", False: "FAIL", None: "N/A"}[result]
    raise TypeError(f"a claim case must return a Finding, Evidence or bool, got "
                    f"{type(result).__name__}")


def uses_interval(result) -> bool:
    """The result is judged on an interval (so an INCONCLUSIVE case is owed)."""
    ev = result.evidence if isinstance(result, Finding) else result
    return isinstance(ev, Evidence)
