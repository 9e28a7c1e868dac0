"""User evaluators in the LangSmith/openevals and pydantic-evals idioms (ADK custom metrics: `metrics.custom`).

A criterion carrying the option `custom_metric` = `{"code_config": {"name": PATH}}` names user code, `PATH`
being `pkg.module.attr` or `pkg.module:attr`. What the object is decides how it is called (`idiom`):

- a class, or an instance, with an `evaluate` method → **pydantic-evals**: the class is instantiated without
  arguments and `evaluate(ctx)` is called with an `EvaluatorContext` (`inputs`, `output`, `expected_output`,
  `metadata`, `duration`, `name`, empty `attributes` and `metrics`, plus `tool_calls` and
  `expected_tool_calls`; no `span_tree`). It returns a bool, a number,
  a string (a label: informational), an object or dict with `value` and `reason`, or a mapping
  `{name: one of those}` (one result per name, named `<criterion>.<name>`);
- a callable with a parameter named `inputs`, `outputs`, `reference_outputs`, `run` or `example` →
  **LangSmith/openevals**: called with those by keyword (`run` / `example` are dicts whose keys also read as
  attributes: `run.outputs`, `example.outputs`, `example.inputs`). `inputs` = the first
  turn's `inputs` (or `{"query": ...}` when the format has none); `outputs` = `{"response", "tool_calls",
  **the agent's outputs}` of the last answered turn; `reference_outputs` = `{"response", "tool_calls",
  **expected outputs}` of the same turn. It returns a bool, a number, a dict `{key?, score | value,
  comment?}`, a list of such dicts or `{"results": [...]}` (several: named `<criterion>.<key>`);
- anything else callable → an ADK custom metric (`metrics.custom`).

Sync or async: an async function (or `evaluate`) is awaited, a sync one runs in a worker thread.

Scores: `True`/`False` → 1.0 passed / 0.0 failed; a number passes when ≥ the criterion's threshold (fails
below it), and is informational without a threshold; a string or `None` score is informational. The
comment/reason is the result's explanation (shown in reports); an exception or an unusable return value is
an `error` result for that case, naming the evaluator.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalward.model import AgentOutput, EvalCase, MetricResult, MetricSpec, MetricStatus

Idiom = Literal["adk", "langsmith", "pydantic_evals"]

LANGSMITH_PARAMETERS = ("inputs", "outputs", "reference_outputs", "run", "example")


class Record(dict[str, Any]):
    """A dict whose keys read as attributes too: the `run` / `example` of a LangSmith evaluator (`run.outputs`
    or `run["outputs"]`)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class EvaluatorError(Exception):
    """An evaluator returned something that cannot be read as a score."""


@dataclass
class EvaluatorContext:
    """What a pydantic-evals-style evaluator's `evaluate(ctx)` receives (pydantic-evals' `EvaluatorContext`)."""

    name: str
    inputs: Any
    output: Any
    expected_output: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    expected_tool_calls: list[dict[str, Any]] | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


def idiom(target: Any) -> Idiom:
    """Which idiom the resolved object is written in (module docstring)."""
    if inspect.isclass(target):
        return "pydantic_evals" if callable(getattr(target, "evaluate", None)) else "adk"
    if not inspect.isroutine(target) and callable(getattr(target, "evaluate", None)):
        return "pydantic_evals"
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return "adk"
    return "langsmith" if any(name in parameters for name in LANGSMITH_PARAMETERS) else "adk"


def instantiate(target: Any) -> Any:
    """A pydantic-evals evaluator instance: a class is called without arguments."""
    return target() if inspect.isclass(target) else target


def _calls(calls: Sequence[Any] | None) -> list[dict[str, Any]]:
    return [{"name": c.name, "args": dict(c.args)} for c in calls or []]


def _inputs(case: EvalCase) -> dict[str, Any]:
    turn = case.turns[0]
    return dict(turn.inputs) if turn.inputs else {"query": turn.query}


def langsmith_arguments(case: EvalCase, outputs: Sequence[AgentOutput], wanted: Sequence[str]) -> dict[str, Any]:
    """The keyword arguments of a LangSmith/openevals evaluator (module docstring)."""
    index = min(len(outputs), len(case.turns)) - 1
    output, turn = outputs[index], case.turns[index]
    actual = {"response": output.response, "tool_calls": _calls(output.tool_calls), **output.outputs}
    reference = {
        "response": turn.expected_response,
        "tool_calls": None if turn.expected_tool_calls is None else _calls(turn.expected_tool_calls),
        **turn.expected_outputs,
    }
    values: dict[str, Any] = {
        "inputs": _inputs(case),
        "outputs": actual,
        "reference_outputs": reference,
        "run": Record(inputs=_inputs(case), outputs=actual),
        "example": Record(id=case.case_id, inputs=_inputs(case), outputs=reference),
    }
    return {name: values[name] for name in wanted}


def pydantic_context(case: EvalCase, outputs: Sequence[AgentOutput], latencies: Sequence[float | None]) -> Any:
    """The `EvaluatorContext` of the last answered turn (module docstring)."""
    index = min(len(outputs), len(case.turns)) - 1
    output, turn = outputs[index], case.turns[index]
    metadata: dict[str, Any] = {}
    if case.description:
        metadata["description"] = case.description
    if case.tags:
        metadata["tags"] = list(case.tags)
    if case.cluster is not None:
        metadata["cluster"] = case.cluster
    return EvaluatorContext(
        name=case.case_id,
        inputs=dict(turn.inputs) if turn.inputs else turn.query,
        output={"response": output.response, **output.outputs} if output.outputs else output.response,
        expected_output=(
            {"response": turn.expected_response, **turn.expected_outputs}
            if turn.expected_outputs
            else turn.expected_response
        ),
        metadata=metadata,
        duration=sum(x for x in latencies if x is not None),
        tool_calls=_calls(output.tool_calls),
        expected_tool_calls=None if turn.expected_tool_calls is None else _calls(turn.expected_tool_calls),
    )


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


def _result(spec: MetricSpec, name: str, value: Any, comment: str, path: str, key: str | None) -> MetricResult:
    """One score (bool, number, string label or None) → MetricResult."""
    details: dict[str, Any] = {"evaluator": path}
    status: MetricStatus
    if key is not None:
        details["key"] = key
    if isinstance(value, bool):
        score: float | None = 1.0 if value else 0.0
        status = "passed" if value else "failed"
    elif isinstance(value, int | float):
        if not math.isfinite(value):
            raise EvaluatorError(f"score must be finite, found {value!r}")
        score = float(value)
        threshold = spec.threshold
        status = "informational" if threshold is None else ("passed" if score >= threshold else "failed")
    elif value is None or isinstance(value, str):
        score, status = None, "informational"
        if isinstance(value, str):
            details["label"] = value
            comment = f"{value}: {comment}" if comment else value
    else:
        raise EvaluatorError(f"a score must be a bool, a number or a string, found {type(value).__name__} {value!r}")
    return MetricResult(
        name=name,
        score=score,
        threshold=spec.threshold,
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
        if not returned:
            raise EvaluatorError("returned an empty mapping")
        return [one(f"{spec.name}.{key}", value, str(key)) for key, value in returned.items()]
    return [one(spec.name, returned, None)]
