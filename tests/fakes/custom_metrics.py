"""ADK-style custom metric functions for the `custom_metrics` tests (`tests.fakes.custom_metrics.<name>`).

Each takes `(eval_metric, actual_invocations, expected_invocations, conversation_scenario)` as ADK 2.13 calls
custom metrics, with google-adk objects.

| name | behaviour |
| --- | --- |
| `tool_count_match` | sync; per invocation 1.0 when actual and expected have as many tool calls, else 0.0; mean; PASSED iff 1.0 |
| `async_has_response` | async; per invocation 1.0 when the actual final response has text; PASSED iff the mean ≥ the criterion's threshold |
| `lower_is_better` | sync; score = number of actual tool calls; PASSED iff ≤ the criterion's threshold |
| `as_mapping` | sync; returns a plain dict `{"overall_score": 0.25, "overall_eval_status": "FAILED"}` |
| `returns_float` | returns 0.5 (not an EvaluationResult) |
| `bad_status` | returns an EvaluationResult-like object whose status is "MAYBE" |
| `raises` | raises `ValueError("metric exploded")` |
| `records_arguments` | PASSED with score 1.0; stores its arguments in `RECORDED` |
| `NOT_A_FUNCTION` | a number |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

NOT_A_FUNCTION = 5
RECORDED: list[tuple[Any, ...]] = []


def tool_count_match(
    eval_metric: Any, actual_invocations: list[Any], expected_invocations: Any, conversation_scenario: Any
) -> EvaluationResult:
    expected_invocations = expected_invocations or []
    results = []
    for actual, expected in zip(actual_invocations, expected_invocations, strict=True):
        same = len(get_all_tool_calls(actual.intermediate_data)) == len(get_all_tool_calls(expected.intermediate_data))
        results.append(
            PerInvocationResult(
                actual_invocation=actual,
                expected_invocation=expected,
                score=1.0 if same else 0.0,
                eval_status=EvalStatus.PASSED if same else EvalStatus.FAILED,
            )
        )
    overall = sum(r.score or 0.0 for r in results) / len(results)
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall == 1.0 else EvalStatus.FAILED,
        per_invocation_results=results,
    )


async def async_has_response(
    eval_metric: Any, actual_invocations: list[Any], expected_invocations: Any, conversation_scenario: Any
) -> EvaluationResult:
    scores = [
        1.0 if a.final_response is not None and any(p.text for p in a.final_response.parts or []) else 0.0
        for a in actual_invocations
    ]
    overall = sum(scores) / len(scores)
    threshold = eval_metric.criterion.threshold
    return EvaluationResult(
        overall_score=overall,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
    )


def lower_is_better(
    eval_metric: Any, actual_invocations: list[Any], expected_invocations: Any, conversation_scenario: Any
) -> EvaluationResult:
    calls = sum(len(get_all_tool_calls(a.intermediate_data)) for a in actual_invocations)
    threshold = eval_metric.criterion.threshold
    return EvaluationResult(
        overall_score=float(calls),
        overall_eval_status=EvalStatus.PASSED if calls <= threshold else EvalStatus.FAILED,
    )


def as_mapping(*args: Any) -> dict[str, Any]:
    return {"overall_score": 0.25, "overall_eval_status": "FAILED"}


def returns_float(*args: Any) -> float:
    return 0.5


@dataclass
class _Odd:
    overall_score: float = 1.0
    overall_eval_status: str = "MAYBE"


def bad_status(*args: Any) -> _Odd:
    return _Odd()


def raises(*args: Any) -> EvaluationResult:
    raise ValueError("metric exploded")


def records_arguments(*args: Any) -> EvaluationResult:
    RECORDED.append(args)
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)
