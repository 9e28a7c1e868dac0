"""Multi-agent checks (guide 002): agents and per-agent tools, missed and extra."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.base import Score, TurnContext
from evalward.metrics.registry import check_specs, get_metric
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall


def run(metric: str, output: AgentOutput, **expectation: Any) -> Score | None:
    turn = Invocation(query="q", **expectation)
    spec = MetricSpec(name=metric, threshold=1.0)
    ctx = TurnContext(case=EvalCase(case_id="c", turns=[turn]), turn=0, expected=turn, actual=output, spec=spec)
    return get_metric(metric).score_turn(ctx)


def call(name: str, agent: str | None, status: str = "ok") -> ToolCall:
    return ToolCall(name=name, agent=agent, status=status)  # type: ignore[arg-type]


OUTPUT = AgentOutput(
    tool_calls=[
        call("read_file", "editor"),
        call("read_file", "editor"),
        call("write_file", "editor"),
        call("search", "researcher"),
        call("shell", "editor", status="deferred"),
    ]
)


def test_agents_match_reports_missed_and_extra() -> None:
    # expected {editor, reviewer}, actual {editor, researcher}: missed reviewer, extra researcher
    result = run("agents_match", OUTPUT, expected_agents=["editor", "reviewer"])
    assert result is not None
    assert result.value == 0.0
    assert result.details == {
        "expected": ["editor", "reviewer"],
        "actual": ["editor", "researcher"],
        "missed": ["reviewer"],
        "extra": ["researcher"],
    }
    assert result.explanation == "agents: 1 missed, 1 extra → 0; missed reviewer; extra researcher"


def test_agents_match_is_a_set_comparison() -> None:
    # order and repetition do not matter
    reported = AgentOutput(agents=["researcher", "editor", "editor"])
    result = run("agents_match", reported, expected_agents=["editor", "researcher"])
    assert result is not None
    assert result.value == 1.0


def test_agent_tools_match_per_agent_missed_extra_and_pr() -> None:
    expected = {"editor": ["read_file", "lint"], "researcher": ["search"], "reviewer": []}
    result = run("agent_tools_match", OUTPUT, expected_agent_tools=expected)
    assert result is not None
    # editor: expected {read_file, lint}, actual {read_file, write_file} (shell deferred, not counted)
    # → missed lint, extra write_file; P = 1/2, R = 1/2
    assert result.value == 0.0
    assert result.details["missed"] == [{"agent": "editor", "tool": "lint"}]
    assert result.details["extra"] == [{"agent": "editor", "tool": "write_file"}]
    editor = result.details["per_agent"]["editor"]
    assert (editor["precision"], editor["recall"], editor["arithmetic"]) == (0.5, 0.5, "P=1/2=0.500, R=1/2=0.500")
    # researcher exact → P = R = 1; reviewer both empty → 1 (docs/metrics.md §2 empty rule)
    assert result.details["per_agent"]["researcher"]["precision"] == 1.0
    assert result.details["per_agent"]["reviewer"]["recall"] == 1.0
    assert result.explanation == "agent tools: 1 missed, 1 extra → 0; missed editor.lint; extra editor.write_file"


def test_agent_tools_of_an_unexpected_agent_are_all_extra() -> None:
    result = run("agent_tools_match", OUTPUT, expected_agent_tools={"editor": ["read_file", "write_file"]})
    assert result is not None
    assert result.details["extra"] == [{"agent": "researcher", "tool": "search"}]
    assert result.details["per_agent"]["researcher"]["precision"] == 0.0


def test_agent_tools_pass_and_not_applicable() -> None:
    expected = {"editor": ["write_file", "read_file"], "researcher": ["search"]}
    result = run("agent_tools_match", OUTPUT, expected_agent_tools=expected)
    assert result is not None
    assert result.value == 1.0
    assert run("agent_tools_match", OUTPUT) is None
    assert run("agents_match", OUTPUT) is None


def test_options_are_rejected() -> None:
    spec = MetricSpec(name="agents_match", options={"mode": "x"})
    assert check_specs([spec]) == ["agents_match: unknown option 'mode'; it takes no options"]


# --- handoff_match -------------------------------------------------------------------------------------------


def handoff(output: AgentOutput, expected: list[str] | None, **options: Any) -> Score | None:
    turn = Invocation(query="q", expected_agents=expected)
    spec = MetricSpec(name="handoff_match", threshold=1.0, options=options)
    ctx = TurnContext(case=EvalCase(case_id="c", turns=[turn]), turn=0, expected=turn, actual=output, spec=spec)
    return get_metric("handoff_match").score_turn(ctx)


def test_handoff_match_reported_agents_exact() -> None:
    result = handoff(AgentOutput(agents=["router", "simple_agent"]), ["router", "simple_agent"])
    assert result is not None
    assert result.value == 1.0
    assert result.explanation == (
        "handoffs [router, simple_agent] vs expected [router, simple_agent], exact: n=m=2, all 2 positions match → 1"
    )
    assert result.details["mode"] == "exact"


def test_handoff_sequence_from_calls_collapses_consecutive_repeats() -> None:
    output = AgentOutput(
        tool_calls=[
            call("plan", "triage"),
            call("plan", "triage"),
            call("refund", "billing"),
            call("skip", "auditor", status="deferred"),
            call("close", "triage"),
        ]
    )
    # actual handoffs: triage, billing, triage (deferred auditor call ignored); expected triage → billing
    exact = handoff(output, ["triage", "billing"])
    assert exact is not None
    assert exact.value == 0.0
    assert exact.explanation == "handoffs [triage, billing, triage] vs expected [triage, billing], exact: n=3 ≠ m=2 → 0"
    assert exact.details["unexpected"] == [{"index": 2, "item": "triage"}]
    in_order = handoff(output, ["triage", "billing"], mode="in_order")
    assert in_order is not None and in_order.value == 1.0
    # hand calculation: k* = 2 of n = 3, m = 2 → P = 2/3
    precision = handoff(output, ["triage", "billing"], mode="precision")
    assert precision is not None
    assert precision.value == pytest.approx(2 / 3)
    assert precision.explanation.endswith("k*=2, P=2/3=0.667")
    # the reverse order is not a subsequence, but the same multiset of one each is contained
    reverse = handoff(AgentOutput(agents=["billing", "triage"]), ["triage", "billing"], mode="in_order")
    superset = handoff(AgentOutput(agents=["billing", "triage"]), ["triage", "billing"], mode="superset")
    assert reverse is not None and superset is not None
    assert (reverse.value, superset.value) == (0.0, 1.0)


def test_handoff_match_not_applicable_and_options() -> None:
    assert handoff(AgentOutput(agents=["a"]), None) is None
    assert check_specs([MetricSpec(name="handoff_match", options={"mode": "sideways"})]) == [
        "handoff_match: option mode: Input should be 'exact', 'in_order', 'any_order', 'superset', 'subset', "
        "'same_multiset', 'precision', 'recall', 'f1' or 'ordered_f1', found 'sideways'"
    ]
