"""A pydantic-evals `SpanTree` rebuilt from what evalward recorded, for span evaluators (`ctx.span_tree`).

pydantic-evals' span evaluators — `HasMatchingSpan` and the agentic built-ins `ToolCorrectness`,
`TrajectoryMatch`, `ArgumentCorrectness`, `MaxToolCalls`, `MaxModelRequests` — read the OpenTelemetry spans
pydantic-ai's instrumentation writes while the task runs. evalward does not capture those spans (the agent
may be any process, in any language), but it holds the facts they carry: each turn's tool calls in order with
their arguments, results, status and agent, and how many model requests the turn made. `recorded_span_tree`
writes those facts as the spans pydantic-ai (instrumentation version 3 and later, the installed default being
5) would have written for the same conversation, so the built-ins count what they would count on a real run.

Per turn (each turn is one `agent.run`, and pydantic-ai opens one root span per run):

- `invoke_agent {agent}`: the agent is the first of `output.agents`, else the agent of the first call that
  names one, else `agent` (pydantic-ai's name for an unnamed agent). Attributes `gen_ai.operation.name` =
  `invoke_agent`, `gen_ai.agent.name`, `agent_name`, `model_name`, `logfire.msg` = `{agent} run`,
  `final_result` (the response, when there is one) and `gen_ai.aggregated_usage.input_tokens` /
  `output_tokens` (the turn's totals, when non-zero: pydantic-ai writes the run's totals there). Status
  `error` when the agent reported the turn failed (`output.error`), as a run that raised is marked.
- `chat {model}`, one per model request when the agent reported how many it made (`usage.model_requests`,
  what `inference_call_count_v1` reads; none otherwise), children of the root: `gen_ai.operation.name` =
  `chat`, `gen_ai.request.model` (the `model` argument: evalward does not know the agent's model) and
  `gen_ai.agent.name`. These are what `MaxModelRequests` and pydantic-evals' `requests` metric count.
- `execute_tool {name}`, one per tool call in call order, children of the root: `gen_ai.operation.name` =
  `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id` (when recorded), `gen_ai.tool.call.arguments`
  (compact JSON in the dict's key order, as pydantic-ai's `ToolCallPart.args_as_json_str()` writes it, which
  `ArgumentCorrectness` decodes; absent when the call's args are `None`, as with `include_content=False`),
  `gen_ai.tool.call.result` (a string as it is, anything else as compact JSON, as pydantic-ai writes it;
  absent when no result was recorded), `gen_ai.agent.name` (the calling agent) and `logfire.msg` =
  `running tool: {name}`. A call reported with status `error` has span status `error` (pydantic-ai marks a
  tool that raised, asked for a retry or failed validation so; the built-ins leave such attempts out unless
  `include_failed`); a `deferred` call carries `pydantic_ai.tool.deferral.name` = `CallDeferred` (which
  deferral it was is not recorded), the marker that makes the built-ins skip it.
- A call issued by another agent than the root's is placed inside an `invoke_agent {that agent}` span
  (child of the root, one per consecutive run of that agent's calls), and an agent of `output.agents` that
  issued no call gets an empty one after the turn's calls: `HasMatchingSpan` finds the agents that took part.

Order and timing: with `k` model requests, the calls of model step `s` follow `chat` number `s`, as in a
pydantic-ai run (request, its tool calls, next request, …, final request). The step is `ToolCall.step`; when
unrecorded, the root agent's calls take one step each until the last non-final request, and another agent's
call takes the step of the call before it (it ran inside that call). Start times strictly increase in that
order (the built-ins order calls by start time) from a fixed epoch, so the tree is deterministic; each turn's
root spans the turn's latency (one microsecond per span when unknown), split evenly among its spans, and the
next turn starts where it ends.

What a real run has and this tree cannot (the tests pin each): the model's name (unless given) and
per-request usage on `chat` spans; a sub-agent's run nested under the tool span that delegated to it, with
its own `chat` spans and its own usage on its span (here the root holds the turn's total); per-call
durations; the retry attributes (`pydantic_ai.tool.retry.*`) and the `invalid tool call: …` message of a
validation failure; run and conversation ids. A call waiting for approval (`requires_approval`) has no span
in pydantic-ai, where a call that deferred itself has the marked one written here. Span queries on those
differ from a real run; the agentic built-ins do not read them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pydantic_core

from evalward.model import AgentOutput, EvalCase, ToolCall

if TYPE_CHECKING:
    from pydantic_evals.otel.span_tree import SpanTree

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
"""Where the first turn's spans start: fixed, so the same record always gives the same tree."""

DEFAULT_AGENT = "agent"
"""pydantic-ai's name for an agent that has none (`Instrumentation.for_run`)."""

DEFAULT_MODEL = "unknown"
"""`gen_ai.request.model` of the `chat` spans when the caller does not say: the attribute must be present
for pydantic-evals to count the span as a model request, and evalward does not know the agent's model."""

DEFERRAL = "CallDeferred"
"""`pydantic_ai.tool.deferral.name` of a deferred call: pydantic-ai writes the exception's class name
(`CallDeferred` or `ApprovalRequired`); evalward records only that the call was deferred."""


@dataclass
class _Span:
    """A span before its timing is known; `children` in start order."""

    name: str
    attributes: dict[str, Any]
    status: str = "unset"
    children: list[_Span] = field(default_factory=list)


def _json(value: Any) -> str:
    # pydantic-ai serialises tool arguments with `pydantic_core.to_json` (compact, key order kept, non-ASCII
    # as is) and results with a `TypeAdapter(Any, ser_json_bytes='base64')`, the same serialiser;
    # `serialize_unknown` keeps an odd value from failing the whole tree.
    return pydantic_core.to_json(value, bytes_mode="base64", serialize_unknown=True).decode()


def _root_agent(output: AgentOutput) -> str:
    if output.agents:
        return output.agents[0]
    return next((call.agent for call in output.tool_calls if call.agent), DEFAULT_AGENT)


def _agent_span(agent: str, model: str) -> _Span:
    return _Span(
        f"invoke_agent {agent}",
        {
            "model_name": model,
            "agent_name": agent,
            "gen_ai.agent.name": agent,
            "gen_ai.operation.name": "invoke_agent",
            "logfire.msg": f"{agent} run",
        },
    )


def _tool_span(call: ToolCall, agent: str) -> _Span:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
    if call.id is not None:
        attributes["gen_ai.tool.call.id"] = call.id
    if call.args is not None:
        attributes["gen_ai.tool.call.arguments"] = _json(call.args)
    attributes["gen_ai.agent.name"] = agent
    attributes["logfire.msg"] = f"running tool: {call.name}"
    if call.status == "deferred":
        attributes["pydantic_ai.tool.deferral.name"] = DEFERRAL
    elif call.result is not None:
        attributes["gen_ai.tool.call.result"] = call.result if isinstance(call.result, str) else _json(call.result)
    return _Span(f"execute_tool {call.name}", attributes, "error" if call.status == "error" else "unset")


def _steps(calls: Sequence[ToolCall], requests: int, agent: str) -> list[int]:
    """The model request each call follows: its recorded step; else, for the root agent's calls, one call per
    request up to the last request before the final one, and for another agent's call the step of the call
    before it (a sub-agent runs inside the call that handed over to it); never before the previous call's
    (call order is start order)."""
    steps: list[int] = []
    own = 0  # the root agent's calls so far
    for call in calls:
        if call.step is not None:
            step = call.step
        elif (call.agent or agent) != agent and steps:
            step = steps[-1]
        else:
            step = min(own, max(requests - 2, 0))
        if (call.agent or agent) == agent:
            own += 1
        step = min(max(step, steps[-1] if steps else 0), max(requests - 1, 0))
        steps.append(step)
    return steps


def _turn(output: AgentOutput, model: str) -> _Span:
    agent = _root_agent(output)
    root = _agent_span(agent, model)
    if output.response is not None:
        root.attributes["final_result"] = output.response
    usage = output.usage
    if usage is not None:
        # pydantic-ai writes a usage attribute only when non-zero (`RunUsage.opentelemetry_attributes`).
        if usage.input_tokens:
            root.attributes["gen_ai.aggregated_usage.input_tokens"] = usage.input_tokens
        if usage.output_tokens:
            root.attributes["gen_ai.aggregated_usage.output_tokens"] = usage.output_tokens
    if output.error is not None:
        root.status = "error"
    requests = usage.model_requests if usage is not None and usage.model_requests is not None else 0
    steps = _steps(output.tool_calls, requests, agent)
    segment: _Span | None = None  # the open sub-agent span, for consecutive calls of one other agent
    seen = {agent}
    position = 0
    for step in range(max(requests, 1)):
        if step < requests:
            root.children.append(
                _Span(
                    f"chat {model}",
                    {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.agent.name": agent},
                )
            )
            segment = None
        while position < len(steps) and steps[position] == step:
            call = output.tool_calls[position]
            caller = call.agent or agent
            span = _tool_span(call, caller)
            if caller == agent:
                segment = None
                root.children.append(span)
            else:
                if segment is None or segment.attributes["gen_ai.agent.name"] != caller:
                    segment = _agent_span(caller, model)
                    root.children.append(segment)
                    seen.add(caller)
                segment.children.append(span)
            position += 1
    for other in output.agents or []:
        if other not in seen:
            seen.add(other)
            root.children.append(_agent_span(other, model))
    return root


def _preorder(span: _Span) -> list[_Span]:
    order = [span]
    for child in span.children:
        order.extend(_preorder(child))
    return order


def recorded_span_tree(
    case: EvalCase,
    outputs: Sequence[AgentOutput],
    latencies: Sequence[float | None],
    *,
    model: str = DEFAULT_MODEL,
) -> SpanTree:
    """The span tree of a pydantic-ai run of the case's conversation, rebuilt from its recorded turns
    (module docstring): one `invoke_agent` root per answered turn (`outputs[i]`, `latencies[i]` seconds),
    with its `chat` and `execute_tool` spans. `model` names the model on the `chat` spans.

    Needs pydantic-evals (imported here, so evalward runs without it)."""
    from pydantic_evals.otel.span_tree import SpanNode, SpanStatus, SpanTree

    # One trace per case, its id derived from the case id: deterministic, and distinct between cases.
    trace_id = int.from_bytes(hashlib.sha256(case.case_id.encode()).digest()[:16], "big") or 1
    nodes: list[SpanNode] = []
    start_us = 0
    for index, output in enumerate(outputs):
        latency = latencies[index] if index < len(latencies) else None
        order = _preorder(_turn(output, model))
        total_us = round(latency * 1_000_000) if latency is not None and latency > 0 else 0
        # Every span starts at least a microsecond (datetime's resolution) after the one before it.
        slot_us = max(total_us // len(order), 1)
        end_us = start_us + max(total_us, slot_us * len(order))
        starts = {id(span): start_us + position * slot_us for position, span in enumerate(order)}
        ends: dict[int, int] = {}
        for position in range(len(order) - 1, -1, -1):
            span = order[position]
            if position == 0:
                ends[id(span)] = end_us
            elif span.children:
                ends[id(span)] = max(ends[id(child)] for child in span.children)
            else:
                ends[id(span)] = starts[id(order[position + 1])] if position + 1 < len(order) else end_us
        span_ids = {id(span): len(nodes) + position + 1 for position, span in enumerate(order)}
        parents = {id(child): span_ids[id(span)] for span in order for child in span.children}
        for span in order:
            status: SpanStatus = "error" if span.status == "error" else "unset"
            nodes.append(
                SpanNode(
                    name=span.name,
                    trace_id=trace_id,
                    span_id=span_ids[id(span)],
                    parent_span_id=parents.get(id(span)),
                    start_timestamp=EPOCH + timedelta(microseconds=starts[id(span)]),
                    end_timestamp=EPOCH + timedelta(microseconds=ends[id(span)]),
                    attributes=dict(span.attributes),
                    status=status,
                )
            )
        start_us = end_us
    tree = SpanTree()
    tree.add_spans(nodes)
    return tree


def recorded_metrics(outputs: Sequence[AgentOutput]) -> dict[str, int | float]:
    """The `ctx.metrics` pydantic-evals derives from a real run's spans (`requests`, `input_tokens`,
    `output_tokens`, `cost`: sums over the model-request spans, a metric that stays zero being left out),
    from the usage the agent reported for its turns. `MaxModelRequests` reads `requests` from here first."""
    totals: dict[str, int | float] = {}
    for output in outputs:
        usage = output.usage
        if usage is None:
            continue
        for name, value in (
            ("requests", usage.model_requests),
            ("input_tokens", usage.input_tokens),
            ("output_tokens", usage.output_tokens),
            ("cost", usage.cost_usd),
        ):
            if value:
                totals[name] = totals.get(name, 0) + value
    return totals
