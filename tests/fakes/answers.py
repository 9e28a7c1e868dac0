"""The default answer of every fake agent flavour, scripted by the turn's `inputs`.

The same case therefore behaves the same whether it runs through a Python, subprocess or HTTP fake:

| `inputs` key | effect |
| --- | --- |
| `output` (object) | returned verbatim as the AgentOutput (so a case can script any answer, even a malformed one) |
| `response` (str) | the final response (default: `echo: <query>`) |
| `tool_calls` (list) | tool calls to report; each gets `result: "result of <name>"` unless it has one |
| `state` (object) | reported as `state` |
| `usage` (object) | reported as `usage` |

This module is imported by the subprocess fake as a plain file, so it depends on the standard library only.
"""

from __future__ import annotations

from typing import Any


def scripted_answer(request: dict[str, Any]) -> dict[str, Any]:
    """The AgentOutput (as a dict) a fake agent gives for `request` (rules in the module docstring)."""
    inputs = request.get("inputs") or {}
    if isinstance(inputs.get("output"), dict):
        return dict(inputs["output"])
    answer: dict[str, Any] = {"response": inputs.get("response", f"echo: {request.get('query', '')}")}
    calls = inputs.get("tool_calls")
    if isinstance(calls, list):
        answer["tool_calls"] = [
            {**call, "result": call.get("result", f"result of {call.get('name')}")} if isinstance(call, dict) else call
            for call in calls
        ]
    for key in ("state", "usage"):
        if key in inputs:
            answer[key] = inputs[key]
    return answer
