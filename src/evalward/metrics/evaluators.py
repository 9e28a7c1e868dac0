"""User evaluators in the LangSmith/openevals/agentevals and pydantic-evals idioms (ADK custom metrics:
`metrics.custom`).

A criterion carrying the option `custom_metric` = `{"code_config": {"name": PATH}, "args"?: ARGS}` names user
code, `PATH` being `pkg.module.attr` or `pkg.module:attr` (`metrics.custom.evaluator_spec` builds it). What the
object is decides how it is called (`idiom`):

- a class, or an instance, with an `evaluate` method → **pydantic-evals**: a class is created with `ARGS`
  (keywords for a mapping, positional for a list; none when absent) and `evaluate(ctx)` is called with an
  `EvaluatorContext` — pydantic-evals' own class when the package is installed, else one with the same fields:
  - `inputs`: the first turn's `inputs` mapping, or its query text when the case has none;
  - `output` / `expected_output`: one type per case shape, whatever the agent returns. A turn expecting
    outputs (`expected_outputs`: LangSmith keys, a pydantic-evals mapping) gives mappings: the agent's outputs
    and the expected ones, each with `"response"` when the turn expects a response; any other turn gives the
    answer text and the expected response text;
  - `metadata`: the case's own metadata with its description, tags and cluster, or None when it has none;
    `duration`: the turns' wall-clock seconds; `name`: the case id; `attributes`: the agent's other output
    keys; `metrics`: the model requests, token counts and cost the agent reported, under pydantic-evals' names
    (`metrics.span_tree.recorded_metrics`);
  - `span_tree`: the agent's tool calls and turns as spans with the GenAI semantic-convention attributes the
    span evaluators read (`metrics.span_tree`);
  - also `tool_calls` and `expected_tool_calls` as `[{"name", "args"}]`.
  It returns a bool, a number, a string (a label: informational), an object or dict with `value` and `reason`,
  or a mapping `{name: one of those}` (one result per name, named `<criterion>.<name>`); an empty mapping is
  pydantic-evals' "does not apply to this case": a `not_applicable` result.
- a callable with a parameter named `inputs`, `outputs`, `reference_outputs`, `run` or `example`, or a LangSmith
  `RunEvaluator` (`@run_evaluator`) → **LangSmith/openevals**: called with those by keyword. `inputs` = the first
  turn's `inputs` (or `{"query": ...}`). `outputs` and `reference_outputs` take the shape the dataset's
  reference uses (`_reference_shape`): for a LangSmith dataset or a turn expecting outputs, mappings — what the
  agent returned (`response`, `tool_calls`, `trajectory` when reported, its other keys) and the example's outputs
  (`response`, `trajectory`, the expected keys); otherwise the answer text and the expected response text, as
  openevals' text evaluators take them. An **agentevals** evaluator gets trajectories instead: `{"messages":
  [...]}` in OpenAI format (`trajectory_messages`). `run` / `example` are `langsmith.schemas.Run` / `Example`
  when langsmith is installed (ids, names, timestamps, dataset id, metadata; outputs always as mappings), else
  objects with the same attributes. It returns a bool, a number, a dict `{key?, score | value, comment?}`, a
  list of such dicts or `{"results": [...]}` (several: named `<criterion>.<key>`), or an `EvaluationResult`;
- anything else callable → an ADK custom metric (`metrics.custom`).

Sync or async: an async function (or `evaluate`) is awaited, a sync one runs in a worker thread.

Scores: `True`/`False` → 1.0 passed / 0.0 failed; a number passes when ≥ the criterion's threshold (fails
below it), and is informational without a threshold; a string or `None` score is informational (a label). The
comment/reason is the result's explanation (shown in reports); an exception or an unusable return value is
an `error` result for that case, naming the evaluator.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from evalward.model import AgentOutput, EvalCase, Invocation, MetricResult, MetricSpec, MetricStatus, ToolCall

Idiom = Literal["adk", "langsmith", "pydantic_evals"]

LANGSMITH_PARAMETERS = ("inputs", "outputs", "reference_outputs", "run", "example")

ReferenceShape = Literal["text", "mapping"]

_ID_NAMESPACE = uuid.UUID("6f1d1a0e-4c55-5b7e-9a57-2f0e3c9b8d41")
"""Namespace of the stable UUIDs given to cases, sets and runs where LangSmith objects need UUIDs."""


class Record(dict[str, Any]):
    """A dict whose keys read as attributes too: the `run` / `example` of a LangSmith evaluator when langsmith is
    not installed (`run.outputs` or `run["outputs"]`)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class EvaluatorError(Exception):
    """An evaluator returned something that cannot be read as a score."""


class SpanTreeUnavailable(Exception):
    """`ctx.span_tree` without pydantic-evals installed: the span tree is pydantic-evals' own type."""


@dataclass
class EvaluatorContext:
    """What a pydantic-evals-style evaluator's `evaluate(ctx)` receives when pydantic-evals is not installed (the
    same fields as pydantic-evals' `EvaluatorContext`)."""

    name: str
    inputs: Any
    output: Any
    expected_output: Any
    metadata: dict[str, Any] | None = None
    duration: float = 0.0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    expected_tool_calls: list[dict[str, Any]] | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def span_tree(self) -> Any:
        raise SpanTreeUnavailable("ctx.span_tree is pydantic-evals' SpanTree: install pydantic-evals to use it")


@dataclass(frozen=True)
class Played:
    """One case × repetition as an evaluator sees it: the case, the answered turns and where they come from."""

    case: EvalCase
    outputs: Sequence[AgentOutput]
    latencies: Sequence[float | None] = ()
    eval_set_id: str = ""
    eval_format: str | None = None
    repetition: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def last(self) -> int:
        """The index of the last answered turn (evaluators see it)."""
        return min(len(self.outputs), len(self.case.turns)) - 1

    @property
    def output(self) -> AgentOutput:
        return self.outputs[self.last]

    @property
    def turn(self) -> Invocation:
        return self.case.turns[self.last]


def idiom(target: Any) -> Idiom:
    """Which idiom the resolved object is written in (module docstring)."""
    if inspect.isclass(target):
        return "pydantic_evals" if callable(getattr(target, "evaluate", None)) else "adk"
    if not inspect.isroutine(target) and callable(getattr(target, "aevaluate_run", None)):
        return "langsmith"  # a LangSmith RunEvaluator (`@run_evaluator`)
    if not inspect.isroutine(target) and callable(getattr(target, "evaluate", None)):
        return "pydantic_evals"
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return "adk"
    return "langsmith" if any(name in parameters for name in LANGSMITH_PARAMETERS) else "adk"


def instantiate(target: Any, args: dict[str, Any] | list[Any] | None = None) -> Any:
    """A pydantic-evals evaluator instance: a class is created with `args` (keywords for a mapping, positional
    for a list, none when None); an instance is used as it is, and cannot take arguments."""
    if inspect.isclass(target):
        if args is None:
            return target()
        return target(*args) if isinstance(args, list) else target(**args)
    if args is not None:
        raise TypeError(f"{type(target).__name__} is an instance already: arguments apply to a class")
    return target


def _calls(calls: Sequence[ToolCall] | None) -> list[dict[str, Any]]:
    return [{"name": c.name, "args": None if c.args is None else dict(c.args)} for c in calls or []]


def _inputs(case: EvalCase) -> dict[str, Any]:
    turn = case.turns[0]
    return dict(turn.inputs) if turn.inputs else {"query": turn.query}


def _reference_shape(played: Played) -> ReferenceShape:
    """LangSmith datasets write every reference as a mapping; elsewhere a turn expecting outputs has a mapping
    for a reference and any other turn a text."""
    if played.eval_format in ("langsmith", "langchain_benchmarks") or played.turn.expected_outputs:
        return "mapping"
    return "text"


def actual_mapping(output: AgentOutput) -> dict[str, Any]:
    """What the agent returned, as the mapping its target function would have: its other output keys, with
    `response`, `tool_calls` and `trajectory` when it reported them."""
    actual: dict[str, Any] = dict(output.outputs)
    if output.response is not None:
        actual["response"] = output.response
    if output.tool_calls:
        actual["tool_calls"] = _calls(output.tool_calls)
    if output.trajectory is not None:
        actual["trajectory"] = list(output.trajectory)
    return actual


def expected_mapping(turn: Invocation) -> dict[str, Any]:
    """The turn's reference as the example's outputs mapping: the expected keys, with `response`, `tool_calls`
    and `trajectory` when the turn expects them."""
    expected: dict[str, Any] = dict(turn.expected_outputs)
    if turn.expected_response is not None:
        expected["response"] = turn.expected_response
    if turn.expected_tool_calls is not None:
        expected["tool_calls"] = _calls(turn.expected_tool_calls)
    if turn.expected_trajectory is not None:
        expected["trajectory"] = list(turn.expected_trajectory)
    return expected


def trajectory_messages(query: str, calls: Sequence[ToolCall], answer: str | None) -> dict[str, Any]:
    """A turn as agentevals reads a trajectory: `{"messages": [...]}` in OpenAI chat format — the user message,
    one assistant message per tool call (`function.arguments` as JSON) followed by its tool message, and the
    final assistant message (content "" when there is no answer, so both sides have the same message count)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": query}]
    for index, call_ in enumerate(calls):
        call_id = call_.id or f"call_{index}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call_.name, "arguments": json.dumps(call_.args, sort_keys=True)},
                    }
                ],
            }
        )
        result = call_.result
        content = result if isinstance(result, str) else ("" if result is None else json.dumps(result, sort_keys=True))
        messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
    messages.append({"role": "assistant", "content": answer or ""})
    return {"messages": messages}


def _is_agentevals(target: Any) -> bool:
    """agentevals evaluators take trajectories as messages: their functions live in the `agentevals` package."""
    function = getattr(target, "__wrapped__", target)
    module = getattr(function, "__module__", None) or ""
    return module == "agentevals" or module.startswith("agentevals.")


def _stable_uuid(*parts: str) -> uuid.UUID:
    try:
        return uuid.UUID(parts[-1])  # a LangSmith dataset's example ids are UUIDs already
    except ValueError:
        return uuid.uuid5(_ID_NAMESPACE, "/".join(parts))


def langsmith_records(played: Played) -> tuple[Any, Any]:
    """The `run` and `example` of a LangSmith evaluator: `langsmith.schemas.Run` / `Example` when langsmith is
    installed, else `Record`s with the same attributes."""
    case = played.case
    example_id = _stable_uuid(played.eval_set_id, case.case_id)
    run_id = uuid.uuid5(_ID_NAMESPACE, f"{played.eval_set_id}/{case.case_id}/{played.repetition}")
    started = played.started_at or datetime.now(UTC)
    finished = played.finished_at or started + timedelta(seconds=sum(x for x in played.latencies if x is not None))
    run_fields: dict[str, Any] = {
        "id": run_id,
        "trace_id": run_id,
        "name": "evalward",
        "run_type": "chain",
        "start_time": started,
        "end_time": finished,
        "inputs": _inputs(case),
        "outputs": actual_mapping(played.output),
        "reference_example_id": example_id,
        "error": played.output.error,
        "extra": {"metadata": {"repetition": played.repetition}},
        "tags": list(case.tags),
    }
    example_fields: dict[str, Any] = {
        "id": example_id,
        "dataset_id": _stable_uuid(played.eval_set_id or "evalward", "dataset"),
        "inputs": _inputs(case),
        "outputs": expected_mapping(played.turn),
        "metadata": case.described_metadata() or None,
        "created_at": started,
    }
    try:
        from langsmith.schemas import Example, Run
    except ImportError:
        return Record(run_fields), Record(example_fields)
    return Run(**run_fields), Example(**example_fields)


def langsmith_arguments(played: Played, wanted: Sequence[str], *, agentevals: bool = False) -> dict[str, Any]:
    """The keyword arguments of a LangSmith/openevals/agentevals evaluator (module docstring)."""
    output, turn = played.output, played.turn
    if agentevals:
        actual: Any = trajectory_messages(turn.query, output.tool_calls, output.response)
        reference: Any = trajectory_messages(turn.query, turn.expected_tool_calls or [], turn.expected_response)
    elif _reference_shape(played) == "mapping":
        actual, reference = actual_mapping(output), expected_mapping(turn)
    else:
        actual, reference = output.response, turn.expected_response
    values: dict[str, Any] = {"inputs": _inputs(played.case), "outputs": actual, "reference_outputs": reference}
    if "run" in wanted or "example" in wanted:
        values["run"], values["example"] = langsmith_records(played)
    return {name: values[name] for name in wanted}


def pydantic_context(played: Played) -> Any:
    """The `EvaluatorContext` of the last answered turn (module docstring)."""
    from evalward.metrics.span_tree import recorded_metrics  # start-up: span trees, only for evaluators that read them

    output, turn, case = played.output, played.turn, played.case
    if turn.expected_outputs:
        actual: Any = dict(output.outputs)
        expected: Any = dict(turn.expected_outputs)
        if turn.expected_response is not None:
            actual["response"], expected["response"] = output.response, turn.expected_response
        attributes: dict[str, Any] = {}
    else:
        actual, expected = output.response, turn.expected_response
        attributes = dict(output.outputs)
    fields: dict[str, Any] = {
        "name": case.case_id,
        "inputs": dict(turn.inputs) if turn.inputs else turn.query,
        "output": actual,
        "expected_output": expected,
        "metadata": case.described_metadata() or None,
        "duration": sum(x for x in played.latencies if x is not None),
        "attributes": attributes,
        "metrics": recorded_metrics(played.outputs),
    }
    extras: dict[str, Any] = {
        "tool_calls": _calls(output.tool_calls),
        "expected_tool_calls": None if turn.expected_tool_calls is None else _calls(turn.expected_tool_calls),
    }
    try:
        from pydantic_evals.evaluators import EvaluatorContext as PydanticEvaluatorContext
    except ImportError:
        return EvaluatorContext(**fields, **extras)
    context = PydanticEvaluatorContext(**fields, _span_tree=_span_tree(played))
    for name, value in extras.items():  # evalward's additions, as the fallback context has them
        setattr(context, name, value)
    return context


def _span_tree(played: Played) -> Any:
    """pydantic-evals' span tree of the played case, or the recording error its `span_tree` raises."""
    from pydantic_evals.otel._errors import SpanTreeRecordingError

    from evalward.metrics.span_tree import (
        recorded_span_tree,  # start-up: span trees, only for evaluators that read them
    )

    try:
        return recorded_span_tree(played.case, played.outputs, played.latencies)
    except Exception as exc:  # odd recorded data makes span evaluators fail on this case, never the run
        return SpanTreeRecordingError(f"evalward could not build the span tree: {type(exc).__name__}: {exc}")


async def call(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Await an async function; run a sync one in a worker thread (awaiting what it returns if awaitable)."""
    if inspect.iscoroutinefunction(function):
        return await function(*args, **kwargs)
    result = await asyncio.to_thread(function, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _get(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


ResultKind = Literal["assertion", "score", "label"]
"""What an evaluator's value is, in pydantic-evals' words: a bool is an assertion, a number a score, a string a
label (`details.kind` of the result)."""


def _result(spec: MetricSpec, name: str, value: Any, comment: str, path: str, key: str | None) -> MetricResult:
    """One value (bool, number, string label or None) → MetricResult. A bool is a pass/fail check whatever the
    criterion's threshold (its status says passed or failed; the run summary counts it as gated)."""
    details: dict[str, Any] = {"evaluator": path}
    status: MetricStatus
    threshold = spec.threshold
    kind: ResultKind
    if key is not None:
        details["key"] = key
    if isinstance(value, bool):
        score: float | None = 1.0 if value else 0.0
        status, kind = ("passed" if value else "failed"), "assertion"
    elif isinstance(value, int | float):
        if not math.isfinite(value):
            raise EvaluatorError(f"score must be finite, found {value!r}")
        score, kind = float(value), "score"
        status = "informational" if threshold is None else ("passed" if score >= threshold else "failed")
    elif value is None or isinstance(value, str):
        score, status, kind = None, "informational", "label"
        if isinstance(value, str):
            details["label"] = value
            comment = f"{value}: {comment}" if comment else value
    else:
        raise EvaluatorError(f"a score must be a bool, a number or a string, found {type(value).__name__} {value!r}")
    details["kind"] = kind
    return MetricResult(
        name=name,
        score=score,
        threshold=threshold,
        status=status,
        explanation=comment,
        details=details,
    )


def _comment(value: Any) -> str:
    return "" if value is None else str(value)


def read_langsmith(spec: MetricSpec, returned: Any, path: str) -> list[MetricResult]:
    """A LangSmith/openevals return value → results (module docstring)."""
    if isinstance(returned, Mapping) and "results" in returned and isinstance(returned["results"], list):
        returned = returned["results"]
    items: list[Any] = list(returned) if isinstance(returned, list | tuple) else [returned]
    if not items:
        raise EvaluatorError("returned no results")
    results: list[MetricResult] = []
    for position, item in enumerate(items):
        if isinstance(item, Mapping) or (not isinstance(item, bool | int | float | str) and hasattr(item, "score")):
            key = _get(item, "key")
            value = _get(item, "score")
            if value is None:
                value = _get(item, "value")
            comment = _comment(_get(item, "comment"))
        else:
            key, value, comment = None, item, ""
        suffix = key if isinstance(key, str) and key else str(position)
        name = spec.name if len(items) == 1 else f"{spec.name}.{suffix}"
        results.append(_result(spec, name, value, comment, path, key if isinstance(key, str) else None))
    return results


def _is_reason(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "value" in value
    return not isinstance(value, bool | int | float | str) and value is not None and hasattr(value, "value")


def read_pydantic(spec: MetricSpec, returned: Any, path: str) -> list[MetricResult]:
    """A pydantic-evals return value → results (module docstring)."""

    def one(name: str, value: Any, key: str | None) -> MetricResult:
        if _is_reason(value):
            return _result(spec, name, _get(value, "value"), _comment(_get(value, "reason")), path, key)
        return _result(spec, name, value, "", path, key)

    if isinstance(returned, Mapping) and not _is_reason(returned):
        if not returned:  # pydantic-evals' way to say the evaluator does not apply to this case
            return [
                MetricResult(
                    name=spec.name,
                    score=None,
                    threshold=spec.threshold,
                    status="not_applicable",
                    explanation=f"{path} returned no result: it does not apply to this case",
                    details={"evaluator": path},
                )
            ]
        return [one(f"{spec.name}.{key}", value, str(key)) for key, value in returned.items()]
    return [one(spec.name, returned, None)]
