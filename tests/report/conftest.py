"""Hand-built runs for the report tests, and the snapshot comparison.

`sample_run` covers: a passing case, a failing trajectory case with argument differences, an error case
(timeout on turn 2 after 3 attempts), a multi-turn case failing on its second turn, and a unicode case
failing on its step names. `hostile_run` puts attacker-shaped text in every untrusted field.

Snapshots: `snapshot(name, text)` compares `text` whole with `tests/report/snapshots/<name>`;
`EVALWARD_UPDATE_SNAPSHOTS=1` rewrites the file instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalward.model import (
    AgentOutput,
    AgentTarget,
    CaseError,
    CaseResult,
    EvalSetInfo,
    InvocationResult,
    MetricResult,
    MetricSpec,
    MetricSummary,
    RunContext,
    RunResult,
    ToolCall,
)

SNAPSHOTS = Path(__file__).parent / "snapshots"

HOSTILE = (
    "@octocat see #1 and octo/repo#2 GH-3 </details> ```\n"
    "<!-- evalward:x --> <img src=x> ![pixel](https://evil.example/p.png)\n"
    "::set-output name=x::y\n"
    "  ::error::forged ##[warning]legacy\n"
    "\u202eevil\u2066 [bold]x[/bold] | col | \x1b[31mred\x07"
)
"""Every injection the reports must neutralise, in one string."""


@pytest.fixture
def snapshot() -> Callable[[str, str], None]:
    def check(name: str, text: str) -> None:
        path = SNAPSHOTS / name
        if os.environ.get("EVALWARD_UPDATE_SNAPSHOTS") == "1":
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            return
        if not path.exists():
            pytest.fail(f"no snapshot {path}; create it with EVALWARD_UPDATE_SNAPSHOTS=1")
        with open(path, encoding="utf-8", newline="") as handle:
            expected = handle.read()
        assert text == expected, f"{name} differs from its snapshot; review, then EVALWARD_UPDATE_SNAPSHOTS=1"

    return check


def _metric(name: str, score: float | None, threshold: float | None, explanation: str = "") -> MetricResult:
    if threshold is None:
        status = "informational"
    elif score is None:
        status = "error"
    else:
        status = "passed" if score >= threshold else "failed"
    return MetricResult(name=name, score=score, threshold=threshold, status=status, explanation=explanation)


STARTED = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def _passing_case() -> CaseResult:
    return CaseResult(
        eval_set_id="travel",
        case_id="greeting",
        status="passed",
        metric_results=[_metric("response_match_score", 0.9, 0.5, "ROUGE-1 F1=0.900")],
        invocations=[
            InvocationResult(
                turn=0,
                query="Hi!",
                expected_response="Hello, how can I help?",
                actual_response="Hello! How can I help?",
                expected_tool_calls=[],
                metric_results=[_metric("response_match_score", 0.9, 0.5, "ROUGE-1 F1=0.900")],
                latency_s=0.4,
            )
        ],
        latency_s=0.41,
    )


def _trajectory_case() -> CaseResult:
    expected = [
        ToolCall(name="search_flights", args={"destination": "Paris", "date": "2025-06-01"}),
        ToolCall(name="book_flight", args={"flight_id": "AF123", "seat": "aisle", "extras": {"bags": 1}}),
    ]
    actual = [
        ToolCall(name="search_flights", args={"destination": "Paris", "date": "2025-06-01"}),
        ToolCall(name="book_flight", args={"flight_id": "AF123", "seat": "window", "extras": {"bags": 2}}),
        ToolCall(name="send_email", args={"to": "traveller"}),
    ]
    trajectory = _metric("tool_trajectory_avg_score", 0.0, 1.0, "exact match: calls differ at index 1; 0/1=0.000")
    response = _metric("response_match_score", 0.62, 0.5, "ROUGE-1 F1=0.620")
    return CaseResult(
        eval_set_id="travel",
        case_id="book_flight",
        status="failed",
        metric_results=[trajectory, response],
        invocations=[
            InvocationResult(
                turn=0,
                query="Book me an aisle seat to Paris on June 1st.",
                expected_response="Booked AF123, seat aisle.",
                actual_response="Booked AF123 with a window seat. I also emailed you.",
                expected_tool_calls=expected,
                actual_tool_calls=actual,
                metric_results=[trajectory, response],
                latency_s=1.25,
            )
        ],
        latency_s=1.3,
        must_pass=True,
    )


def _error_case() -> CaseResult:
    return CaseResult(
        eval_set_id="travel",
        case_id="slow_lookup",
        status="error",
        invocations=[
            InvocationResult(
                turn=0,
                query="What's the weather in Oslo?",
                actual_response="Cold.",
                expected_response="It is cold in Oslo.",
                metric_results=[_metric("response_match_score", 0.5, 0.5, "ROUGE-1 F1=0.500")],
            ),
            InvocationResult(turn=1, query="And tomorrow?", expected_response="Colder."),
        ],
        error=CaseError(kind="timeout", message="turn 2 exceeded the 30s timeout", turn=1, attempts=3),
        latency_s=90.0,
    )


def _multi_turn_case() -> CaseResult:
    low = _metric("response_match_score", 0.25, 0.5, "ROUGE-1: precision=1/4=0.250, recall=1/4=0.250, F1=0.250")
    return CaseResult(
        eval_set_id="travel",
        case_id="multi_turn",
        status="failed",
        metric_results=[_metric("response_match_score", 0.625, 0.5, "mean over 2 turns: (1.000+0.250)/2=0.625")],
        invocations=[
            InvocationResult(
                turn=0,
                query="I need a hotel in Rome.",
                expected_response="For which dates?",
                actual_response="For which dates?",
                metric_results=[_metric("response_match_score", 1.0, 0.5, "F1=1.000")],
            ),
            InvocationResult(
                turn=1,
                query="From the 3rd to the 5th.",
                expected_response="Booked Hotel Roma, 3rd to 5th.",
                actual_response="Which part of\nthe city do you prefer?",
                expected_tool_calls=[ToolCall(name="book_hotel", args={"city": "Rome", "nights": 2})],
                actual_tool_calls=[],
                metric_results=[low],
            ),
        ],
        latency_s=2.5,
    )


def _unicode_case() -> CaseResult:
    steps = _metric("trajectory_in_order", 0.5, 1.0, "LCS=2, recall=2/4=0.500")
    return CaseResult(
        eval_set_id="travel",
        case_id="réservation_東京",
        status="failed",
        metric_results=[steps],
        invocations=[
            InvocationResult(
                turn=0,
                query="Réserve un vol pour 東京 🚀 — « vite »",
                expected_response="予約しました ✈️",
                actual_response="予約できませんでした",
                expected_trajectory=["router", "flight_agent", "payment_agent", "router"],
                actual_trajectory=["router", "flight_agent", "router"],
                metric_results=[steps],
            )
        ],
        latency_s=0.75,
    )


def _summary() -> dict[str, MetricSummary]:
    return {
        # hand calculation: book_flight scored 0.0; the other cases carry no expected calls → n=1
        "tool_trajectory_avg_score": MetricSummary(
            mean=0.0, threshold=1.0, passed=False, n=1, ci_low=0.0, ci_high=0.0, pass_rate=0.0
        ),
        # hand calculation: greeting 0.9, book_flight 0.62, multi_turn 0.625 → mean 2.145/3 = 0.715
        "response_match_score": MetricSummary(
            mean=0.715, threshold=0.5, passed=True, n=3, ci_low=0.52, ci_high=0.91, pass_rate=1.0
        ),
        "trajectory_in_order": MetricSummary(mean=0.5, threshold=1.0, passed=False, n=1, pass_rate=0.0),
        "latency_s": MetricSummary(mean=1.24, threshold=None, passed=None, n=4, higher_is_better=False),
    }


def _run(cases: list[CaseResult], **overrides: object) -> RunResult:
    fields: dict[str, object] = {
        "run_id": "run-2025-06-01-abc",
        "passed": all(c.status == "passed" for c in cases),
        "started_at": STARTED,
        "finished_at": datetime(2025, 6, 1, 12, 1, 35, tzinfo=UTC),
        "agent": AgentTarget(kind="python", target="travel_agent.agent:root_agent", config_hash="f" * 64),
        "eval_sets": [
            EvalSetInfo(
                eval_set_id="travel",
                format="adk_evalset",
                path="evals/travel.evalset.json",
                content_hash="a" * 64,
                criteria=[MetricSpec(name="tool_trajectory_avg_score", threshold=1.0)],
                case_sources={"book_flight": {"path": "evals/travel.evalset.json", "line": 42}},
            )
        ],
        "context": RunContext(repository="acme/travel", commit="0123456789abcdef0123", pr_number=7),
        "evalward_version": "0.1.0",
        "cases": cases,
    }
    fields.update(overrides)
    return RunResult.model_validate(fields)


@pytest.fixture
def sample_run() -> RunResult:
    cases = [_passing_case(), _trajectory_case(), _error_case(), _multi_turn_case(), _unicode_case()]
    return _run(cases, summary=_summary(), warnings=["2 cases have no expected tool calls"])


@pytest.fixture
def passing_run() -> RunResult:
    return _run([_passing_case()], summary={"response_match_score": _summary()["response_match_score"]})


@pytest.fixture
def hostile_run() -> RunResult:
    calls = [ToolCall(name=f"lookup{HOSTILE}", args={HOSTILE: HOSTILE, "q": 1})]
    bad = _metric(f"judge {HOSTILE}", 0.1, 0.5, f"the judge said: {HOSTILE}")
    failed = CaseResult(
        eval_set_id="travel",
        case_id=f"case {HOSTILE}",
        status="failed",
        metric_results=[bad],
        invocations=[
            InvocationResult(
                turn=0,
                query=HOSTILE,
                expected_response=HOSTILE,
                actual_response=HOSTILE,
                expected_tool_calls=calls,
                actual_tool_calls=[ToolCall(name=f"lookup{HOSTILE}", args={HOSTILE: "other"})],
                expected_trajectory=[HOSTILE],
                actual_trajectory=["x"],
                metric_results=[bad],
            )
        ],
    )
    errored = CaseResult(
        eval_set_id="travel",
        case_id=f"error {HOSTILE}",
        status="error",
        error=CaseError(kind="agent_error", message=HOSTILE, turn=0),
        invocations=[InvocationResult(turn=0, query=HOSTILE, output=AgentOutput(error=HOSTILE))],
    )
    summary = {f"metric {HOSTILE}": MetricSummary(mean=0.1, threshold=0.5, passed=False, n=1, pass_rate=0.0)}
    return _run([failed, errored], summary=summary, warnings=[HOSTILE], run_id=f"run {HOSTILE}")


@pytest.fixture
def failing_run_factory() -> Callable[[int], RunResult]:
    """A run of `n` failing trajectory cases with long responses (for the size limit)."""

    def build(n: int) -> RunResult:
        cases = []
        for index in range(n):
            case = _trajectory_case()
            case.case_id = f"case_{index:03d}"
            case.must_pass = False
            case.invocations[0].actual_response = "word " * 300
            cases.append(case)
        return _run(cases, summary=_summary())

    return build


@pytest.fixture
def hostile_text() -> str:
    return HOSTILE
