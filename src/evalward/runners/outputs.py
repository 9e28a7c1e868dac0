"""Turn whatever an agent answered into an `AgentOutput`, or an `AgentFailure` saying what is wrong with it.

Every runner funnels its agent's answer through `coerce_output`, so the same answer is accepted or rejected
the same way whether it came from a Python function, a subprocess line or an HTTP body.

Besides the agent protocol's own shape, the langchain-benchmarks agent contract (a LangChain `AgentExecutor`
with `return_intermediate_steps=True`) is read as such: an object with `intermediate_steps` or
`actual_steps`, or with `output` and none of `response`, `tool_calls`, `trajectory` (`benchmark_output`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from evalward.model import AgentOutput
from evalward.model.text import compact_json
from evalward.runners.agent_contract import AgentFailure

MAX_SHOWN_ERRORS = 3
"""How many pydantic errors a malformed-output message lists before `… and N more`."""

SNIPPET_CHARS = 120
"""How much of an offending value is quoted in a message."""


def snippet(value: Any, limit: int = SNIPPET_CHARS) -> str:
    """A short, single-line rendering of `value` for error messages (JSON where possible)."""
    if isinstance(value, str | bytes):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        text = json.dumps(text, ensure_ascii=False)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _location(loc: tuple[int | str, ...]) -> str:
    """pydantic `('tool_calls', 0, 'name')` → `tool_calls[0].name`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the output)"


def describe_validation_error(error: ValidationError) -> str:
    """One line per problem: the field (pydantic loc), what was wrong, and what was found."""
    problems = error.errors(include_url=False)
    lines = [
        f"{_location(p['loc'])}: {p['msg']} (found {snippet(p.get('input'))})" for p in problems[:MAX_SHOWN_ERRORS]
    ]
    if len(problems) > MAX_SHOWN_ERRORS:
        lines.append(f"… and {len(problems) - MAX_SHOWN_ERRORS} more")
    return "; ".join(lines)


def coerce_output(value: Any) -> AgentOutput:
    """An agent's answer as an `AgentOutput`.

    Accepted: an `AgentOutput`; a dict/JSON object in the agent protocol's shape (unknown keys go to
    `outputs`) or in the langchain-benchmarks shape (`benchmark_output`); a str (the response alone). Anything else raises `AgentFailure("malformed_output")` naming
    the bad field and what was found. An output carrying `error` raises `AgentFailure("agent_error")`,
    retryable when the output says `retryable: true`.
    """
    if isinstance(value, AgentOutput):
        output = value
    elif isinstance(value, str):
        output = AgentOutput(response=value)
    elif isinstance(value, dict):
        if is_benchmark_shape(value):
            value = benchmark_output(value)
        try:
            output = AgentOutput.model_validate(value)
        except ValidationError as exc:
            raise AgentFailure(
                "malformed_output", f"malformed agent output: {describe_validation_error(exc)}"
            ) from None
    else:
        raise AgentFailure(
            "malformed_output",
            'malformed agent output: expected an object like {"response": ..., "tool_calls": [...]}, '
            f"an AgentOutput or a string; found {type(value).__name__} {snippet(value)}",
        )
    if output.error is not None:
        raise AgentFailure("agent_error", f"the agent reported an error: {output.error}", retryable=output.retryable)
    return output


# --- the langchain-benchmarks agent contract ------------------------------------------------------------------

_PROTOCOL_KEYS = ("response", "tool_calls", "trajectory")
_BENCHMARK_STEP_KEYS = ("intermediate_steps", "actual_steps")


def is_benchmark_shape(value: Mapping[str, Any]) -> bool:
    """An object in the langchain-benchmarks agent contract: it has `intermediate_steps` or `actual_steps`, or
    it has `output` and none of the protocol's `response`, `tool_calls`, `trajectory`."""
    if any(key in value for key in _BENCHMARK_STEP_KEYS):
        return True
    return "output" in value and not any(key in value for key in _PROTOCOL_KEYS)


def benchmark_output(value: Mapping[str, Any]) -> dict[str, Any]:
    """`{output, intermediate_steps, actual_steps, state, ...}` → the agent protocol's object.

    - `output` → `response`: a string as is; a list of content blocks (`[{"type": "text", "text": ...}]`, as
      Anthropic models answer) → their texts joined by newlines; null → no response; any other value → its
      JSON text. It also stays in `outputs.output`, so datasets that compare that key still can;
    - `intermediate_steps` → `tool_calls`: each step an `(action, observation)` pair (tuple or list, or
      LangChain's `AgentStep`, or `{"action", "observation"}`), or an action alone. An action is a LangChain `AgentAction` (attributes `tool`, `tool_input`, and
      `tool_call_id` on tool-calling agents), its dict form `{"tool", "tool_input", ...}`, or its LangChain
      serialisation `{"lc": 1, "kwargs": {...}}`. `tool` → the call's name; a dict `tool_input` → its
      arguments; any other `tool_input` (a string, as single-input tools take) → `{"input": value}`; the
      observation → the call's result (its `str()` when it is not JSON); `tool_call_id` → the call's id;
    - `actual_steps` (tool names; the benchmark's alternative to `intermediate_steps`) → `trajectory`;
    - `state` → `state`; the protocol's `agents`, `intermediate_responses`, `usage`, `error` and `retryable`
      as they are; every other key (e.g. the `question` an `AgentExecutor` echoes) → `outputs`.

    Raises `AgentFailure("malformed_output")` naming the step that is none of these."""
    data = dict(value)
    converted: dict[str, Any] = {}
    if "output" in data:
        converted["response"] = _output_text(data["output"])
    steps = data.pop("intermediate_steps", None)
    if steps is not None:
        if not isinstance(steps, list | tuple):
            raise AgentFailure(
                "malformed_output",
                "malformed agent output: intermediate_steps: expected a list of (action, observation) pairs, "
                f"found {type(steps).__name__} {snippet(steps)}",
            )
        converted["tool_calls"] = [_step_call(step, index) for index, step in enumerate(steps)]
    if "actual_steps" in data:
        converted["trajectory"] = data.pop("actual_steps")
    if "state" in data:
        converted["state"] = data.pop("state")
    for key in ("agents", "intermediate_responses", "usage", "error", "retryable"):  # the protocol's own keys
        if key in data:
            converted[key] = data.pop(key)
    nested = _as_dict(data.pop("outputs", None))
    converted["outputs"] = {**data, **nested}
    return converted


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _output_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, Mapping) for part in value):
        texts = [part["text"] for part in value if isinstance(part.get("text"), str)]
        if texts or not value:
            return "\n".join(texts)
    return compact_json(_jsonable(value))


def _jsonable(value: Any) -> Any:
    """`value` if it survives JSON encoding, else its `str()` (a tool may return any object)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value


_NO_OBSERVATION = object()


def _step_call(step: Any, index: int) -> dict[str, Any]:
    """One intermediate step → a `ToolCall` dict (see `benchmark_output`)."""
    action: Any = step
    observation: Any = _NO_OBSERVATION
    if isinstance(step, list | tuple):
        if len(step) != 2:
            raise _bad_step(index, step)
        action, observation = step
    elif isinstance(step, Mapping) and "action" in step:  # {"action": ..., "observation": ...}
        action, observation = step["action"], step.get("observation")
    elif hasattr(step, "action") and hasattr(step, "observation"):  # LangChain's AgentStep
        action, observation = step.action, step.observation
    tool, tool_input, call_id = _action_parts(action)
    if not isinstance(tool, str) or not tool:
        raise _bad_step(index, step)
    call: dict[str, Any] = {"name": tool}
    if isinstance(tool_input, Mapping):
        call["args"] = {str(key): _jsonable(item) for key, item in tool_input.items()}
    elif tool_input is not None:
        call["args"] = {"input": _jsonable(tool_input)}
    if isinstance(call_id, str) and call_id:
        call["id"] = call_id
    if observation is not _NO_OBSERVATION:
        call["result"] = _jsonable(observation)
    return call


def _action_parts(action: Any) -> tuple[Any, Any, Any]:
    """(tool, tool_input, tool_call_id) of an `AgentAction`, its dict or its LangChain serialisation."""
    if isinstance(action, Mapping):
        nested = action.get("kwargs")
        fields: Mapping[str, Any] = nested if isinstance(nested, Mapping) else action
        return fields.get("tool"), fields.get("tool_input"), fields.get("tool_call_id")
    return getattr(action, "tool", None), getattr(action, "tool_input", None), getattr(action, "tool_call_id", None)


def _bad_step(index: int, step: Any) -> AgentFailure:
    return AgentFailure(
        "malformed_output",
        f"malformed agent output: intermediate_steps[{index}]: expected an (action, observation) pair whose "
        "action has `tool` and `tool_input` (a LangChain AgentAction or its dict), "
        f"found {type(step).__name__} {snippet(_jsonable(step))}",
    )
