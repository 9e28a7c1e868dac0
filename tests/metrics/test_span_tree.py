"""`recorded_span_tree` against the real packages: a pydantic-ai agent (scripted by a `FunctionModel`) runs each
conversation under `pydantic_evals.Dataset.evaluate_sync` with the span evaluators, which score pydantic-ai's own
spans; the same conversations, read from the runs' messages as evalward `AgentOutput`s, are scored by the same
evaluators on the tree evalward rebuilds. Every evaluator must give the same value and reason on every case.

Spans are captured with an OpenTelemetry SDK `TracerProvider` of the test's own: pydantic-ai is given it
explicitly, and pydantic-evals' lookup of the global provider is patched for the test (monkeypatch), so no
global tracer provider is set and nothing leaks into other tests.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

pytest.importorskip("pydantic_evals")
pytest.importorskip("pydantic_ai")
pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, ModelRetry, RunContext, ToolFailed
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import (
    ArgumentCorrectness,
    EvaluationReason,
    Evaluator,
    EvaluatorContext,
    HasMatchingSpan,
    MaxModelRequests,
    MaxToolCalls,
    ToolCorrectness,
    TrajectoryMatch,
)
from pydantic_evals.otel import _context_in_memory_span_exporter
from pydantic_evals.otel.span_tree import SpanTree

from evalward.metrics.span_tree import recorded_metrics, recorded_span_tree
from evalward.model import AgentOutput, EvalCase, Invocation, ToolCall, Usage

T = TypeVar("T")

MODEL = "function:scripted:"
"""The model name `FunctionModel` reports, given to `recorded_span_tree` so the `chat` spans match."""

NESTED = {
    "to": "Zürich",
    "legs": [{"from": "Paris", "day": 1}, {"from": "Bern", "day": 2.5, "tags": ["rail", None]}],
    "meta": {"z": 1, "a": None, "ok": True},
}

Step = list[tuple[str, dict[str, Any]]] | str
"""One model response: the tool calls it makes, or its final text."""

# What the model answers after the user's message of each turn: one entry per model request.
SCRIPTS: dict[str, list[Step]] = {
    "no tools": ["Hello."],
    "one tool": [[("lookup", {"city": "Paris"})], "Paris is 20."],
    "repeated": [
        [("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"})],
        [("lookup", {"city": "Paris"})],
        "Done.",
    ],
    "retry": [[("flaky", {"x": 1})], [("flaky", {"x": 2})], "Done."],
    "failed": [[("broken", {"reason": "down"})], [("lookup", {"city": "Oslo", "unit": "F"})], "Oslo."],
    "invalid": [[("lookup", {"city": 3})], [("lookup", {"city": "Lima"})], "Lima."],
    "nested": [[("book", {"trip": NESTED})], "Booked."],
    "delegated": [[("delegate", {"question": "refund A1"})], "Refunded."],
    "refund A1": [[("refund", {"order": "A1"})], "A1 refunded."],
    "approval": [[("approve", {"amount": 5})]],
    "deferred": [[("later", {"job": "j1"})]],
    "turn one": [[("lookup", {"city": "Paris"})], "Paris."],
    "turn two": [[("lookup", {"city": "Rome"})], [("lookup", {"city": "Rome", "unit": "F"})], "Rome."],
}

CONVERSATIONS: dict[str, list[str]] = {
    "no_tools": ["no tools"],
    "one_tool": ["one tool"],
    "repeated": ["repeated"],
    "retry": ["retry"],
    "tool_failed": ["failed"],
    "invalid_args": ["invalid"],
    "nested_args": ["nested"],
    "delegated": ["delegated"],
    "approval": ["approval"],
    "deferred": ["deferred"],
    "two_turns": ["turn one", "turn two"],
}


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted response: the script of the turn's user message, at the number of responses since it."""
    start = max(
        i
        for i, m in enumerate(messages)
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    )
    prompt = next(p.content for p in messages[start].parts if isinstance(p, UserPromptPart))
    assert isinstance(prompt, str)
    done = sum(isinstance(m, ModelResponse) for m in messages[start:])
    step = SCRIPTS[prompt][done]
    if isinstance(step, str):
        return ModelResponse(parts=[TextPart(step)])
    return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])


@dataclass
class Agents:
    """The agents of one test, instrumented with its tracer provider; `sub_runs` holds the delegated runs."""

    support: Agent[None, str | DeferredToolRequests]
    billing: Agent[None, str]
    sub_runs: dict[str, AgentRunResult[str]]


def make_agents(provider: TracerProvider) -> Agents:
    settings = InstrumentationSettings(tracer_provider=provider, meter_provider=NoOpMeterProvider())
    sub_runs: dict[str, AgentRunResult[str]] = {}
    billing: Agent[None, str] = Agent(
        FunctionModel(scripted), name="billing", capabilities=[Instrumentation(settings=settings)]
    )
    support: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(scripted),
        name="support",
        output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=settings)],
    )

    @billing.tool_plain
    def refund(order: str) -> str:
        return f"refunded {order}"

    @support.tool_plain
    def lookup(city: str, unit: str = "C") -> dict[str, Any]:
        return {"city": city, "temp": 20, "unit": unit}

    @support.tool(retries=2)
    def flaky(ctx: RunContext[None], x: int) -> str:
        if ctx.retry == 0:
            raise ModelRetry("try again")
        return f"ok {x}"

    @support.tool_plain
    def broken(reason: str) -> str:
        raise ToolFailed(reason)

    @support.tool_plain
    def book(trip: dict[str, Any]) -> str:
        return "booked"

    @support.tool_plain(requires_approval=True)
    def approve(amount: int) -> str:
        return "approved"

    @support.tool_plain
    def later(job: str) -> str:
        raise CallDeferred

    @support.tool
    async def delegate(ctx: RunContext[None], question: str) -> str:
        # Usage is shared, as pydantic-ai's agent delegation docs do, so the parent's usage counts the
        # sub-agent's requests (the tree pydantic-evals sees holds the sub-agent's `chat` spans too).
        result = await billing.run(question, usage=ctx.usage)
        assert ctx.tool_call_id is not None
        sub_runs[ctx.tool_call_id] = result
        return result.output

    return Agents(support, billing, sub_runs)


def to_output(result: AgentRunResult[Any], agent: str, sub_runs: dict[str, AgentRunResult[str]]) -> AgentOutput:
    """What an evalward agent would report for the run: its tool calls read from the run's new messages
    (results and error outcomes joined by call id; a call without a return was deferred), the calls of a
    delegated run right after the call that delegated (they ran inside it), and the run's usage."""
    messages = result.new_messages()
    returns = {
        part.tool_call_id: part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    calls: list[ToolCall] = []
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    for step, response in enumerate(responses):
        for part in response.parts:
            if not isinstance(part, ToolCallPart):
                continue
            answer = returns.get(part.tool_call_id)
            status = "deferred" if answer is None else "error" if answer.outcome in ("failed", "retried") else "ok"
            calls.append(
                ToolCall(
                    name=part.tool_name,
                    args=part.args_as_dict(),
                    agent=agent,
                    id=part.tool_call_id,
                    result=None if answer is None else answer.content,
                    status=status,
                    step=step,
                )
            )
            sub = sub_runs.get(part.tool_call_id)
            if sub is not None:
                calls.extend(
                    call.model_copy(update={"step": None}) for call in to_output(sub, "billing", {}).tool_calls
                )
    usage = result.usage
    agents = [agent, *(["billing"] if any(c.agent == "billing" for c in calls) else [])]
    return AgentOutput(
        response=result.output if isinstance(result.output, str) else None,
        tool_calls=calls,
        agents=agents,
        usage=Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, model_requests=usage.requests),
    )


# Every evaluator scores every case; each has its own name, the key of its result in the report.
EVALUATORS: list[Evaluator[object, object, object]] = [
    ToolCorrectness(["lookup"], evaluation_name="tc_lookup"),
    ToolCorrectness(["lookup"], allow_extra=True, evaluation_name="tc_lookup_extra"),
    ToolCorrectness(["lookup", "lookup"], include_failed=True, evaluation_name="tc_lookup2_failed"),
    ToolCorrectness([], evaluation_name="tc_none"),
    ToolCorrectness(["flaky"], evaluation_name="tc_flaky"),
    ToolCorrectness(["flaky", "flaky"], include_failed=True, evaluation_name="tc_flaky2_failed"),
    ToolCorrectness(["delegate", "refund"], evaluation_name="tc_delegated"),
    TrajectoryMatch(["lookup", "lookup", "lookup"], order="exact", evaluation_name="tm_exact"),
    TrajectoryMatch(["lookup", "lookup", "lookup"], order="in_order", evaluation_name="tm_in_order"),
    TrajectoryMatch(["lookup", "flaky"], order="any_order", evaluation_name="tm_any_order"),
    TrajectoryMatch(["flaky", "flaky"], include_failed=True, evaluation_name="tm_flaky_failed"),
    TrajectoryMatch(["broken", "lookup"], order="exact", include_failed=True, evaluation_name="tm_broken_failed"),
    TrajectoryMatch(["lookup"], order="exact", evaluation_name="tm_lookup_exact"),
    TrajectoryMatch(["delegate", "refund"], order="exact", evaluation_name="tm_delegated"),
    TrajectoryMatch([], evaluation_name="tm_empty"),
    ArgumentCorrectness("lookup", {"city": "Paris"}, evaluation_name="ac_paris"),
    ArgumentCorrectness("lookup", {"city": "Paris"}, occurrence="last", evaluation_name="ac_paris_last"),
    ArgumentCorrectness("lookup", {"city": "Rome"}, occurrence=1, evaluation_name="ac_rome_1"),
    ArgumentCorrectness("lookup", {"city": "Paris"}, match_mode="exact", evaluation_name="ac_paris_exact"),
    ArgumentCorrectness("lookup", {"city": 3}, include_failed=True, evaluation_name="ac_invalid_failed"),
    ArgumentCorrectness("lookup", {"city": "Oslo", "unit": "F"}, match_mode="exact", evaluation_name="ac_oslo"),
    ArgumentCorrectness("flaky", {"x": 2}, evaluation_name="ac_flaky_2"),
    ArgumentCorrectness("flaky", {"x": 1}, include_failed=True, evaluation_name="ac_flaky_1_failed"),
    ArgumentCorrectness("book", {"trip": NESTED}, match_mode="exact", evaluation_name="ac_nested"),
    ArgumentCorrectness("refund", {"order": "A1"}, evaluation_name="ac_refund"),
    ArgumentCorrectness("approve", {"amount": 5}, evaluation_name="ac_approval"),
    ArgumentCorrectness("later", {"job": "j1"}, include_failed=True, evaluation_name="ac_deferred"),
    MaxToolCalls(1, evaluation_name="mtc_1"),
    MaxToolCalls(2, evaluation_name="mtc_2"),
    MaxToolCalls(1, include_failed=False, evaluation_name="mtc_1_ok_only"),
    MaxModelRequests(2, evaluation_name="mmr_2"),
    MaxModelRequests(3, evaluation_name="mmr_3"),
    HasMatchingSpan({"name_equals": "execute_tool lookup"}, evaluation_name="hms_lookup"),
    HasMatchingSpan(
        {"has_attributes": {"gen_ai.tool.name": "flaky"}, "has_status": "error"}, evaluation_name="hms_err"
    ),
    HasMatchingSpan({"has_status": "error"}, evaluation_name="hms_any_error"),
    HasMatchingSpan({"has_attributes": {"gen_ai.tool.call.arguments": {"city": "Paris"}}}, evaluation_name="hms_args"),
    HasMatchingSpan({"has_attributes": {"gen_ai.tool.call.arguments": {"trip": NESTED}}}, evaluation_name="hms_nested"),
    HasMatchingSpan(
        {"has_attributes": {"gen_ai.tool.call.result": {"city": "Paris", "temp": 20, "unit": "C"}}},
        evaluation_name="hms_result",
    ),
    HasMatchingSpan({"has_attributes": {"gen_ai.tool.call.result": "down"}}, evaluation_name="hms_failed_result"),
    HasMatchingSpan({"has_attributes": {"gen_ai.tool.call.result": "try again"}}, evaluation_name="hms_retry_result"),
    HasMatchingSpan({"name_equals": "invoke_agent billing"}, evaluation_name="hms_sub_agent"),
    HasMatchingSpan(
        {"has_attributes": {"gen_ai.agent.name": "billing", "gen_ai.tool.name": "refund"}}, evaluation_name="hms_by"
    ),
    HasMatchingSpan(
        {"name_equals": "execute_tool refund", "some_ancestor_has": {"name_equals": "invoke_agent billing"}},
        evaluation_name="hms_in_sub_agent",
    ),
    HasMatchingSpan(
        {"name_contains": "execute_tool", "some_ancestor_has": {"name_equals": "invoke_agent support"}},
        evaluation_name="hms_under_root",
    ),
    HasMatchingSpan({"name_equals": "invoke_agent support", "min_child_count": 4}, evaluation_name="hms_children"),
    HasMatchingSpan({"name_equals": f"chat {MODEL}", "max_depth": 1}, evaluation_name="hms_chat"),
    HasMatchingSpan({"name_equals": "execute_tool later", "has_status": "unset"}, evaluation_name="hms_later"),
    HasMatchingSpan({"has_attribute_keys": ["pydantic_ai.tool.deferral.name"]}, evaluation_name="hms_deferral"),
    HasMatchingSpan({"has_attributes": {"final_result": "Paris is 20."}}, evaluation_name="hms_final"),
    HasMatchingSpan(
        {"name_matches_regex": "^invoke_agent", "has_attributes": {"gen_ai.aggregated_usage.input_tokens": 51}},
        evaluation_name="hms_usage",
    ),
]


@contextmanager
def capturing_provider() -> Iterator[TracerProvider]:
    """A tracer provider of the test's own, which pydantic-evals finds where it looks for the global one
    (patched for the duration only: no global provider is set), shut down afterwards."""
    tracer_provider = TracerProvider()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_context_in_memory_span_exporter, "get_tracer_provider", lambda: tracer_provider)
        try:
            yield tracer_provider
        finally:
            tracer_provider.shutdown()


def in_own_thread(function: Callable[[], T]) -> T:
    """`function()` in a thread of its own with an event loop of its own, closed afterwards: `evaluate_sync`
    runs on the thread's current loop, creating and setting one when there is none, and never closes it (an
    unclosed loop would warn in whichever later test collects it)."""

    def run() -> T:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            return function()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            asyncio.set_event_loop(None)
            loop.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


@dataclass
class Played:
    """A conversation as pydantic-evals saw it and as evalward records it."""

    results: dict[str, Any]  # evaluator name → the value pydantic-evals reported
    reasons: dict[str, str | None]
    metrics: dict[str, int | float]
    tree: SpanTree
    outputs: list[AgentOutput]


@pytest.fixture(scope="module")
def played() -> dict[str, Played]:
    """Every conversation run once under `Dataset.evaluate_sync`, with its report and evalward's record."""
    with capturing_provider() as provider:
        return play(make_agents(provider))


def play(agents: Agents) -> dict[str, Played]:
    runs: dict[str, list[AgentRunResult[Any]]] = {}
    trees: dict[str, SpanTree] = {}

    class KeepTree(Evaluator[object, object, object]):
        """Keeps pydantic-evals' own tree of each case, to compare spans with it."""

        def evaluate(self, ctx: EvaluatorContext[object, object, object]) -> bool:
            assert ctx.name is not None
            trees[ctx.name] = ctx.span_tree
            return True

    async def task(name: str) -> str:
        history: list[ModelMessage] = []
        for prompt in CONVERSATIONS[name]:
            result = await agents.support.run(prompt, message_history=history)
            runs.setdefault(name, []).append(result)
            history = result.all_messages()
        return name

    dataset: Dataset[str, str, None] = Dataset(
        name="span_tree",
        cases=[Case(name=name, inputs=name) for name in CONVERSATIONS],
        evaluators=[*EVALUATORS, KeepTree()],
    )
    report = in_own_thread(lambda: dataset.evaluate_sync(task, progress=False, max_concurrency=1))
    assert not report.failures, [f.error_message for f in report.failures]
    played: dict[str, Played] = {}
    for case in report.cases:
        assert not case.evaluator_failures, case.evaluator_failures
        found = {**case.scores, **case.assertions}
        played[case.name] = Played(
            results={name: result.value for name, result in found.items()},
            reasons={name: result.reason for name, result in found.items()},
            metrics=dict(case.metrics),
            tree=trees[case.name],
            outputs=[to_output(run, "support", agents.sub_runs) for run in runs[case.name]],
        )
    return played


def eval_case(name: str) -> EvalCase:
    return EvalCase(case_id=name, turns=[Invocation(query=prompt) for prompt in CONVERSATIONS[name]])


def context(name: str, tree: SpanTree, metrics: dict[str, int | float]) -> EvaluatorContext[object, object, object]:
    return EvaluatorContext(
        name=name,
        inputs=name,
        metadata=None,
        expected_output=None,
        output=name,
        duration=1.0,
        _span_tree=tree,
        attributes={},
        metrics=metrics,
    )


def score(evaluator: Evaluator[object, object, object], ctx: EvaluatorContext[object, object, object]) -> Any:
    returned = evaluator.evaluate(ctx)
    assert not isinstance(returned, dict)
    if isinstance(returned, EvaluationReason):
        return returned.value, returned.reason
    return returned, None


# Where the rebuilt tree cannot agree, by construction (module docstring of `evalward.metrics.span_tree`):
# (case, evaluator) → why. The test asserts that exactly these disagree.
CANNOT_AGREE = {
    ("delegated", "hms_children"): "pydantic-ai runs the sub-agent inside the delegating tool's span (root "
    "children: chat, execute_tool delegate, chat); evalward records flat calls, so the sub-agent's run and its "
    "chat spans are children of the root",
    ("approval", "hms_deferral"): "a `requires_approval` call gets no span in pydantic-ai; evalward writes every "
    "deferred call as a span with the deferral marker (a deferral raised by the tool does get that span)",
    ("approval", "hms_under_root"): "as above: the deferred `approve` call is an `execute_tool` span here",
}


def test_every_evaluator_agrees_with_pydantic_evals_on_every_case(played: dict[str, Played]) -> None:
    agreed: list[tuple[str, str]] = []
    disagreements: dict[tuple[str, str], str] = {}
    for name, run in played.items():
        tree = recorded_span_tree(eval_case(name), run.outputs, [0.25] * len(run.outputs), model=MODEL)
        # As pydantic-evals' context has it (`requests` etc. from the spans), and with no metrics (then
        # `MaxModelRequests` counts the tree's `chat` spans).
        for metrics in (recorded_metrics(run.outputs), {}):
            ctx = context(name, tree, metrics)
            for evaluator in EVALUATORS:
                key = evaluator.get_default_evaluation_name()
                value, reason = score(evaluator, ctx)
                real_value, real_reason = run.results[key], run.reasons[key]
                if not metrics and isinstance(evaluator, MaxModelRequests):
                    # The reason names where the count came from: the span tree rather than ctx.metrics.
                    assert reason is not None and real_reason is not None
                    real_reason = real_reason.replace("ctx.metrics['requests']", "span tree")
                if (value, reason) == (real_value, real_reason) and type(value) is type(real_value):
                    agreed.append((name, key))
                else:
                    disagreements[name, key] = (
                        f"pydantic-evals {real_value!r} {real_reason!r}, evalward {value!r} {reason!r}"
                    )
    assert set(disagreements) == set(CANNOT_AGREE), "\n".join(f"{k}: {v}" for k, v in disagreements.items())
    assert len(agreed) == 2 * len(played) * len(EVALUATORS) - 2 * len(CANNOT_AGREE)


def test_the_cases_exercise_both_outcomes_of_the_evaluators(played: dict[str, Played]) -> None:
    # Agreement means little if an evaluator gives one answer everywhere: each must give two answers at least,
    # except those a single answer is all these conversations can give.
    constant = {
        key for key in played["no_tools"].results if len({json.dumps(run.results[key]) for run in played.values()}) == 1
    }
    # A deferred call is never counted (`approve` waits for approval, `later` defers itself); every run makes a
    # model request.
    assert constant == {"KeepTree", "ac_approval", "ac_deferred", "hms_chat"}


def test_metrics_are_what_pydantic_evals_derives_from_the_spans(played: dict[str, Played]) -> None:
    for run in played.values():
        assert recorded_metrics(run.outputs) == run.metrics


def _tool_spans(tree: SpanTree) -> list[tuple[str, str, dict[str, Any]]]:
    spans = sorted((n for n in tree if n.name.startswith("execute_tool")), key=lambda n: n.start_timestamp)
    return [(n.name, n.status, dict(n.attributes)) for n in spans]


def test_tool_spans_carry_what_pydantic_ai_writes(played: dict[str, Played]) -> None:
    """Span by span, every attribute the rebuilt tree sets has pydantic-ai's value (and name, and status)."""
    for name, run in played.items():
        ours = _tool_spans(recorded_span_tree(eval_case(name), run.outputs, [None] * len(run.outputs), model=MODEL))
        theirs = _tool_spans(run.tree)
        if name == "approval":  # CANNOT_AGREE: a call waiting for approval has no span in pydantic-ai
            assert theirs == [] and [(n, a["pydantic_ai.tool.deferral.name"]) for n, _, a in ours] == [
                ("execute_tool approve", "CallDeferred")
            ]
            continue
        assert [(n, s) for n, s, _ in ours] == [(n, s) for n, s, _ in theirs], name
        for (span, _, mine), (_, _, real) in zip(ours, theirs, strict=True):
            if real.get("logfire.msg", "").startswith("invalid tool call"):
                # A validation failure: pydantic-ai says so in the message; evalward records only "error".
                assert mine["logfire.msg"] == f"running tool: {real['gen_ai.tool.name']}"
                mine = {k: v for k, v in mine.items() if k != "logfire.msg"}
            if "pydantic_ai.tool.deferral.name" in real:
                assert mine["pydantic_ai.tool.deferral.name"] == "CallDeferred", "which deferral is not recorded"
                mine = {k: v for k, v in mine.items() if k != "pydantic_ai.tool.deferral.name"}
            differing = {k: (v, real.get(k)) for k, v in mine.items() if real.get(k) != v}
            assert not differing, f"{name} {span}: {differing}"


def test_chat_and_agent_spans_match_the_real_run(played: dict[str, Played]) -> None:
    for name, run in played.items():
        tree = recorded_span_tree(eval_case(name), run.outputs, [None] * len(run.outputs), model=MODEL)
        assert [r.name for r in tree.roots] == [r.name for r in run.tree.roots], name
        for kind in ("chat ", "invoke_agent "):
            assert sorted(n.name for n in tree if n.name.startswith(kind)) == sorted(
                n.name for n in run.tree if n.name.startswith(kind)
            ), name
        for ours, theirs, output in zip(tree.roots, run.tree.roots, run.outputs, strict=True):
            for key in ("gen_ai.agent.name", "gen_ai.operation.name", "agent_name", "model_name", "logfire.msg"):
                assert ours.attributes[key] == theirs.attributes[key]
            if output.response is None:  # a structured output (deferred calls), which evalward has no text for
                assert "final_result" not in ours.attributes and "final_result" in theirs.attributes
            else:
                assert ours.attributes["final_result"] == theirs.attributes["final_result"]
            for key in ("gen_ai.aggregated_usage.input_tokens", "gen_ai.aggregated_usage.output_tokens"):
                if name == "delegated":
                    # A run span counts its own run's usage, a nested run's is on the nested span; evalward has
                    # the turn's total (the sub-agent's included, as the agent reported it): the root holds the sum.
                    nested = [n.attributes[key] for n in theirs.descendants if n.name.startswith("invoke_agent")]
                    assert nested and ours.attributes[key] == theirs.attributes[key] + sum(nested)
                else:
                    assert ours.attributes.get(key) == theirs.attributes.get(key), (name, key)


def test_what_cannot_agree_a_sub_agent_is_not_nested_under_the_call_that_delegated(
    played: dict[str, Played],
) -> None:
    """pydantic-ai runs a delegated agent inside the delegating tool's span; evalward records a flat list of
    calls with their agents, so the sub-agent's run is a child of the turn's root instead."""
    query: dict[str, Any] = {
        "name_equals": "execute_tool refund",
        "some_ancestor_has": {"name_equals": "execute_tool delegate"},
    }
    run = played["delegated"]
    tree = recorded_span_tree(eval_case("delegated"), run.outputs, [None], model=MODEL)
    assert run.tree.any(query) and not tree.any(query)
    [sub] = tree.find({"name_equals": "invoke_agent billing"})
    assert sub.parent is not None and sub.parent.name == "invoke_agent support"
    # The sub-agent's requests are counted (usage is shared), but its `chat` spans sit under the root.
    assert len(tree.find({"name_equals": f"chat {MODEL}"})) == len(run.tree.find({"name_equals": f"chat {MODEL}"}))
    assert not tree.any({"name_equals": f"chat {MODEL}", "some_ancestor_has": {"name_equals": "invoke_agent billing"}})


# Unit behaviour of the tree without the real runs.


def test_timestamps_are_deterministic_strictly_increasing_and_spread_over_each_turn() -> None:
    outputs = [
        AgentOutput(
            response="a",
            tool_calls=[ToolCall(name="t", args={}), ToolCall(name="u", args={"k": 1})],
            usage=Usage(model_requests=3),
        ),
        AgentOutput(response="b", tool_calls=[ToolCall(name="v", args=None)]),
    ]
    case = EvalCase(case_id="c", turns=[Invocation(query="q1"), Invocation(query="q2")])
    tree = recorded_span_tree(case, outputs, [2.0, None])
    again = recorded_span_tree(case, outputs, [2.0, None])
    assert tree.repr_xml(include_span_id=True, include_start_timestamp=True, include_duration=True) == again.repr_xml(
        include_span_id=True, include_start_timestamp=True, include_duration=True
    )
    nodes = list(tree)
    starts = [n.start_timestamp for n in nodes]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    first, second = tree.roots
    assert first.duration.total_seconds() == 2.0
    assert second.start_timestamp == first.end_timestamp
    assert [c.name for c in first.children] == [
        "chat unknown",
        "execute_tool t",
        "chat unknown",
        "execute_tool u",
        "chat unknown",
    ]
    assert all(n.end_timestamp > n.start_timestamp for n in nodes)
    assert all(c.end_timestamp <= first.end_timestamp for c in first.children)
    # No model requests reported: no chat span (never counted as zero requests of a known count).
    assert [c.name for c in second.children] == ["execute_tool v"]
    [v] = second.children
    assert "gen_ai.tool.call.arguments" not in v.attributes  # arguments not recorded, as with include_content=False


def test_recorded_steps_place_parallel_calls_after_their_request() -> None:
    calls = [ToolCall(name="a", args={}, step=0), ToolCall(name="b", args={}, step=0), ToolCall(name="c", args={})]
    output = AgentOutput(tool_calls=calls, usage=Usage(model_requests=3))
    tree = recorded_span_tree(EvalCase(case_id="c", turns=[Invocation(query="q")]), [output], [1.0])
    [root] = tree.roots
    assert [c.name for c in root.children] == [
        "chat unknown",
        "execute_tool a",
        "execute_tool b",
        "chat unknown",
        "execute_tool c",
        "chat unknown",
    ]
    assert root.name == "invoke_agent agent"  # pydantic-ai's name for an agent that has none


def test_a_sub_agents_calls_follow_the_call_that_handed_over_to_it() -> None:
    calls = [
        ToolCall(name="delegate", args={}, agent="root"),
        ToolCall(name="refund", args={}, agent="billing"),
        ToolCall(name="lookup", args={}, agent="root"),
    ]
    output = AgentOutput(tool_calls=calls, usage=Usage(model_requests=5))
    [root] = recorded_span_tree(EvalCase(case_id="c", turns=[Invocation(query="q")]), [output], [None]).roots
    assert [(c.name, [g.name for g in c.children]) for c in root.children] == [
        ("chat unknown", []),
        ("execute_tool delegate", []),
        ("invoke_agent billing", ["execute_tool refund"]),
        ("chat unknown", []),
        ("execute_tool lookup", []),
        ("chat unknown", []),
        ("chat unknown", []),
        ("chat unknown", []),
    ]


def test_agents_without_calls_a_failed_turn_and_deferred_calls() -> None:
    output = AgentOutput(
        tool_calls=[
            ToolCall(name="route", args={}, agent="root"),
            ToolCall(name="pay", args={"n": 1}, agent="payer", status="deferred", result="ignored"),
        ],
        agents=["root", "payer", "silent"],
        error="boom",
    )
    tree = recorded_span_tree(EvalCase(case_id="c", turns=[Invocation(query="q")]), [output], [None])
    [root] = tree.roots
    assert root.status == "error" and "final_result" not in root.attributes
    assert [c.name for c in root.children] == ["execute_tool route", "invoke_agent payer", "invoke_agent silent"]
    [pay] = root.children[1].children
    assert pay.attributes["pydantic_ai.tool.deferral.name"] == "CallDeferred"
    assert "gen_ai.tool.call.result" not in pay.attributes
    assert MaxToolCalls(0).evaluate(context("c", tree, {})).value is False  # route counts, pay does not
    assert MaxToolCalls(1).evaluate(context("c", tree, {})).value is True


def test_arguments_and_results_are_serialised_as_pydantic_ai_does() -> None:
    call = ToolCall(name="t", args={"b": "é", "a": [1, 2.0, None]}, result={"ok": True}, status="error", id="x")
    tree = recorded_span_tree(
        EvalCase(case_id="c", turns=[Invocation(query="q")]), [AgentOutput(tool_calls=[call])], [1]
    )
    [span] = tree.find({"name_equals": "execute_tool t"})
    assert span.attributes["gen_ai.tool.call.arguments"] == ToolCallPart("t", call.args).args_as_json_str()
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"b":"é","a":[1,2.0,null]}'
    assert span.attributes["gen_ai.tool.call.result"] == '{"ok":true}'
    assert span.attributes["gen_ai.tool.call.id"] == "x"
    assert span.status == "error"


def test_evalward_imports_without_pydantic_evals(monkeypatch: pytest.MonkeyPatch) -> None:
    # The module imports pydantic-evals only when a tree is built (sys.modules entries are restored after).
    for name in [m for m in sys.modules if m == "pydantic_evals" or m.startswith("pydantic_evals.")]:
        monkeypatch.setitem(sys.modules, name, None)  # None: importing it raises ImportError
    monkeypatch.delitem(sys.modules, "evalward.metrics.span_tree")
    fresh = importlib.import_module("evalward.metrics.span_tree")
    assert fresh.recorded_metrics([AgentOutput(usage=Usage(model_requests=2))]) == {"requests": 2}
    with pytest.raises(ImportError):
        fresh.recorded_span_tree(EvalCase(case_id="c", turns=[Invocation(query="q")]), [AgentOutput()], [None])
