"""The single-step confusion table: counts from output_match details, markdown (escaped) and plain text."""

from __future__ import annotations

from typing import Any

from evalward.model import CaseResult, InvocationResult, MetricResult, RunResult
from evalward.report.confusion import confusions, render_confusion_markdown, render_confusion_text


def case(case_id: str, expected: str, actual: Any) -> CaseResult:
    details: dict[str, Any] = {"keys": ["route"], "expected": {"route": expected}, "actual": {}}
    if actual is not None:
        details["actual"]["route"] = actual
    score = 1.0 if actual == expected else 0.0
    metric = MetricResult(
        name="output_match", score=score, threshold=1.0, status="passed" if score else "failed", details=details
    )
    return CaseResult(
        eval_set_id="router",
        case_id=case_id,
        status=metric.status,  # type: ignore[arg-type]
        metric_results=[metric],
        invocations=[InvocationResult(turn=0, query="q", metric_results=[metric])],
    )


def run() -> RunResult:
    return RunResult(
        run_id="r",
        passed=False,
        cases=[
            case("a", "refund_agent", "refund_agent"),
            case("b", "question_answering_agent", "question_answering_agent"),
            case("c", "question_answering_agent", "refund_agent"),
            case("d", "question_answering_agent", None),
        ],
    )


def test_counts() -> None:
    (table,) = confusions(run())
    assert table.key == "route"
    # hand calculation: a and b right, c wrong label, d no route -> 2/4
    assert (table.correct, table.total) == (2, 4)
    assert table.actual_labels == ["question_answering_agent", "refund_agent", "(missing)"]


def test_markdown() -> None:
    assert render_confusion_markdown(confusions(run())) == (
        "### Single-step evaluation\n\n"
        "**route**: 2/4 correct (50.0%)\n\n"
        "| expected \\ actual | question\\_answering\\_agent | refund\\_agent | (missing) | recall |\n"
        "| --- | ---: | ---: | ---: | ---: |\n"
        "| question\\_answering\\_agent | 1 | 1 | 1 | 1/3 |\n"
        "| refund\\_agent | 0 | 1 | 0 | 1/1 |\n"
    )


def test_plain_text() -> None:
    assert render_confusion_text(confusions(run())) == (
        "route: 2/4 correct (50.0%)\n"
        "  expected \\ actual         question_answering_agent  refund_agent  (missing)  recall\n"
        "  question_answering_agent                         1             1          1  1/3\n"
        "  refund_agent                                     0             1          0  1/1\n"
    )


def test_hostile_labels_are_escaped() -> None:
    hostile = RunResult(run_id="r", passed=False, cases=[case("x", "<!-- @admin | ::error::", "a")])
    markdown = render_confusion_markdown(confusions(hostile))
    assert "<!--" not in markdown and "@admin" not in markdown and "| ::error" not in markdown
    text = render_confusion_text(confusions(hostile))
    assert "::error::" not in text


def test_no_single_step_metric_no_table() -> None:
    assert render_confusion_markdown(confusions(RunResult(run_id="r", passed=True))) == ""
