"""Turn whatever an agent answered into an `AgentOutput`, or an `AgentFailure` saying what is wrong with it.

Every runner funnels its agent's answer through `coerce_output`, so the same answer is accepted or rejected
the same way whether it came from a Python function, a subprocess line or an HTTP body.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from evalward.model import AgentOutput
from evalward.runners.base import AgentFailure

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
    `outputs`); a str (the response alone). Anything else raises `AgentFailure("malformed_output")` naming
    the bad field and what was found. An output carrying `error` raises `AgentFailure("agent_error")`,
    retryable when the output says `retryable: true`.
    """
    if isinstance(value, AgentOutput):
        output = value
    elif isinstance(value, str):
        output = AgentOutput(response=value)
    elif isinstance(value, dict):
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
