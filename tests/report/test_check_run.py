"""`report.check_run.case_annotations`: the annotation's words follow whether the gate failed on the case."""

from __future__ import annotations

from evalward.model import CaseResult, EvalSetInfo, RunResult
from evalward.model.verdict import CaseDiagnostic, Finding, Verdict
from evalward.report.check_run import case_annotations

REVIEW = "Case s/{case} likely regressed: m 1.000 → 0.000 (drop ≥ 0.5); shown for review, not gated."
"""A review-only flag as verdicts recorded before the flags stopped saying "not gated" worded it."""


def _run() -> RunResult:
    cases = [
        CaseResult(eval_set_id="s", case_id="blocked", status="failed", must_pass=True),
        CaseResult(eval_set_id="s", case_id="noted", status="passed"),
    ]
    sources = {case: {"path": "evals/s.eval.yaml", "line": line} for case, line in (("blocked", 3), ("noted", 9))}
    info = EvalSetInfo(
        eval_set_id="s", format="native", path="evals/s.eval.yaml", content_hash="0" * 64, case_sources=sources
    )
    return RunResult(run_id="r", passed=False, eval_sets=[info], cases=cases)


def _review(case: str) -> Finding:
    return Finding(kind="regression", severity="info", message=REVIEW.format(case=case), eval_set_id="s", case_id=case)


def test_a_blocked_case_says_why_and_a_noted_case_says_not_gated() -> None:
    must_pass = Finding(
        kind="must_pass",
        severity="blocking",
        message="Must-pass case s/blocked failed or errored in 1 of 1 repetitions (allowed: 0).",
        eval_set_id="s",
        case_id="blocked",
    )
    verdict = Verdict(
        outcome="fail",
        reason="Failed.",
        findings=[must_pass, _review("blocked"), _review("noted")],
        cases=[
            CaseDiagnostic(eval_set_id="s", case_id="blocked", label="regressed"),
            CaseDiagnostic(eval_set_id="s", case_id="noted", label="stable_pass"),
        ],
    )
    blocked, noted = case_annotations(_run(), verdict)

    # The gate failed on `blocked` (a must-pass case): its blocking reason, not the review flag's "not gated".
    assert (blocked.level, blocked.title) == ("failure", "evalward: case blocked: must pass")
    assert blocked.message == (
        "- Must-pass case s/blocked failed or errored in 1 of 1 repetitions (allowed: 0).\n"
        "1 of 1 repetitions did not pass."
    )
    # `noted` passed and only its review flag names it: a notice, for review, not gated.
    assert (noted.level, noted.title) == ("notice", "evalward: case noted: regression (for review, not gated)")
    assert noted.message == "- " + REVIEW.format(case="noted")
