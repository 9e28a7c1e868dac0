"""`EvalSet` → evalward's native eval file (`evalward: 1`, see `loaders/native.py`), as YAML or JSON.

The native format holds almost everything the shared model holds; what it cannot (listed, never dropped
silently): a case's ADK session `app_name` / `user_id` / `session_id` (only the state is kept) and a
simulated-user scenario; not listed: call results and statuses on expected calls, and source positions. Mapping: a one-turn case without a turn id uses the shorthand (`query`,
`inputs`, `expect`), any other `turns`; the set's criteria become `metrics` (a threshold of `None` is written
as `threshold: null`, i.e. informational; ADK's efficiency metrics are written by name alone).
Keys with nothing to say are left out, so the file reads like one written by hand.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from evalward.loaders.test_config import EFFICIENCY_CRITERIA
from evalward.metrics.custom import CUSTOM_OPTION, evaluator_args, function_path, is_custom
from evalward.model import EvalCase, EvalSet, Invocation, MetricSpec, ToolCall

NativeSyntax = Literal["yaml", "json"]


def _metric(spec: MetricSpec) -> Any:
    if spec.name in EFFICIENCY_CRITERIA and not spec.options:
        return spec.name

    written: dict[str, Any] = {"name": spec.name, "threshold": spec.threshold}
    if is_custom(spec):  # your evaluator, as the native format names one
        written["evaluator"] = function_path(spec)
        args = evaluator_args(spec)
        if args is not None:
            written["args"] = args
        written.update({key: value for key, value in spec.options.items() if key != CUSTOM_OPTION})
        return written
    written.update(spec.options)
    return written


def _call(call: ToolCall) -> dict[str, Any]:
    written: dict[str, Any] = {"name": call.name}
    if call.args is not None:
        written["args"] = call.args
    if call.agent is not None:
        written["agent"] = call.agent
    if call.id is not None:
        written["id"] = call.id
    return written


def _expect(turn: Invocation) -> dict[str, Any]:
    expect: dict[str, Any] = {}
    if turn.expected_response is not None:
        expect["response"] = turn.expected_response
    if turn.expected_tool_calls is not None:
        expect["tool_calls"] = [_call(c) for c in turn.expected_tool_calls]
    if turn.expected_trajectory is not None:
        expect["trajectory"] = list(turn.expected_trajectory)
    if turn.expected_order_matters is not None:
        expect["order_matters"] = turn.expected_order_matters
    if turn.expected_agents is not None:
        expect["agents"] = list(turn.expected_agents)
    if turn.expected_agent_tools is not None:
        expect["agent_tools"] = {k: list(v) for k, v in turn.expected_agent_tools.items()}
    if turn.expected_outputs:
        expect["outputs"] = dict(turn.expected_outputs)
    if turn.expected_intermediate_responses is not None:
        expect["intermediate_responses"] = [
            {"author": r.author, "text": r.text} for r in turn.expected_intermediate_responses
        ]
    return expect


def _turn_fields(turn: Invocation) -> dict[str, Any]:
    written: dict[str, Any] = {}
    if turn.query or not turn.inputs:
        written["query"] = turn.query
    if turn.inputs:
        written["inputs"] = turn.inputs
    expect = _expect(turn)
    if expect:
        written["expect"] = expect
    if turn.reference_messages is not None:
        written["reference_messages"] = [
            {
                k: v
                for k, v in {
                    "role": m.role,
                    "content": m.content,
                    "tool_calls": [_call(c) for c in m.tool_calls] if m.tool_calls is not None else None,
                    "tool_call_id": m.tool_call_id,
                    "name": m.name,
                }.items()
                if v is not None
            }
            for m in turn.reference_messages
        ]
    return written


def _case(case: EvalCase, lost: list[str]) -> dict[str, Any]:
    written: dict[str, Any] = {"id": case.case_id}
    if case.description:
        written["description"] = case.description
    if case.must_pass:
        written["must_pass"] = True
    if case.tags:
        written["tags"] = list(case.tags)
    if case.metadata:
        written["metadata"] = dict(case.metadata)
    if case.cluster is not None:
        written["cluster"] = case.cluster
    if case.session_input is not None:
        written["session_state"] = dict(case.session_input.state)
        dropped = [k for k in ("app_name", "user_id", "session_id") if getattr(case.session_input, k)]
        if dropped:
            lost.append(f"case {case.case_id!r}: session {', '.join(dropped)} (native keeps the state only)")
    if case.expected_state is not None:
        written["expected_state"] = case.expected_state
    if case.metrics:
        written["metrics"] = [_metric(m) for m in case.metrics]
    if case.scenario is not None:
        lost.append(
            f"case {case.case_id!r}: a simulated-user scenario (its plan and persona; the native format has "
            "none, so the case is its starting prompt alone: convert to adk to keep it)"
        )
    if len(case.turns) == 1 and not case.turns[0].invocation_id:
        written.update(_turn_fields(case.turns[0]))
    else:
        written["turns"] = [({"id": t.invocation_id} if t.invocation_id else {}) | _turn_fields(t) for t in case.turns]
    return written


def to_native(eval_set: EvalSet) -> tuple[dict[str, Any], list[str]]:
    """(native document, what could not be expressed)."""
    lost: list[str] = []
    written: dict[str, Any] = {"evalward": 1, "eval_set_id": eval_set.eval_set_id}
    if eval_set.name:
        written["name"] = eval_set.name
    if eval_set.description:
        written["description"] = eval_set.description
    written["metrics"] = [_metric(m) for m in eval_set.criteria.metrics]
    written["cases"] = [_case(case, lost) for case in eval_set.cases]
    return written, lost


def dump_native(document: dict[str, Any], syntax: NativeSyntax) -> str:
    """The document as YAML (block style, keys in written order, Unicode kept) or indented JSON."""
    if syntax == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    import yaml

    text: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    return text
