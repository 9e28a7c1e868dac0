"""`EvalSet` → ADK's current eval-set JSON (docs/formats.md §3), plus what ADK cannot express.

Written as ADK writes eval sets (§3.4): snake_case keys, indent 2, default, unset and null values left
out, `EvalSet`'s own keys never camelCased. Mapping per case (`eval_id` = case id) and turn:
- `user_content` = one user text part with the query; `final_response` = one model text part with the
  expected response (left out when there is none);
- expected calls → `intermediate_data.tool_uses` `{name, args}` (absent args stay absent); when any
  expected call or intermediate response names its agent, `intermediate_data.invocation_events` instead:
  one event per call (`author` = its agent, else the set's first agent) and one per intermediate
  response, which ADK's trajectory metric reads from any author;
- a simulated-user case → `conversation_scenario` (starting prompt, plan, the persona as an object);
- an empty expected call list → `intermediate_data: {}`; `session_input` keeps `app_name` and `user_id`
  (ADK requires them: default the eval set id and `test_user`) and the state; a dict `expected_state` →
  `final_session_state`; a description is kept (ADK's EvalCase keeps extra keys).

Criteria: ADK-named criteria become a `test_config.json` (`criteria: {name: threshold | {threshold,
match_type, ignore_args}}`); ADK's always-on efficiency metrics are implied.

Everything else cannot be expressed in ADK and is listed, one line per item with its case and turn:
turns that leave tool calls unchecked (ADK always checks them and would expect none), structured
`inputs`, step trajectories, expected agents and per-agent tools, other expected outputs, reference
messages, per-case metrics, `must_pass`, tags, cluster labels, non-object expected states, and non-ADK criteria.
"""

from __future__ import annotations

from typing import Any

from evalward.loaders.test_config import ADK_CRITERIA, EFFICIENCY_CRITERIA
from evalward.model import EvalCase, EvalSet, Invocation, MetricSpec, ToolCall

ADK_TRAJECTORY_OPTIONS = ("match_type", "ignore_args")


# Keys are written in the order of ADK's (and genai's) model fields, so ADK re-writes the file unchanged.


def _content(role: str, text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}], "role": role}


def _function_call(call: ToolCall) -> dict[str, Any]:
    written: dict[str, Any] = {}
    if call.id is not None:
        written["id"] = call.id
    if call.args is not None:
        written["args"] = call.args
    written["name"] = call.name
    return written


def _where(case: EvalCase, turn: int | None = None) -> str:
    return f"case {case.case_id!r}" + (f" turn {turn}" if turn is not None and len(case.turns) > 1 else "")


def _invocation(case: EvalCase, index: int, turn: Invocation, lost: list[str]) -> dict[str, Any]:
    where = _where(case, index)
    written: dict[str, Any] = {}
    if turn.invocation_id:
        written["invocation_id"] = turn.invocation_id
    written["user_content"] = _content("user", turn.query)
    if turn.expected_response is not None:
        written["final_response"] = _content("model", turn.expected_response)
    calls = turn.expected_tool_calls
    responses = turn.expected_intermediate_responses or []
    if calls is None:
        lost.append(f"{where}: tool calls are unchecked here, but ADK always checks them (it would expect none)")
        calls = []
    if any(c.agent for c in calls):
        default_author = next((c.agent for c in calls if c.agent), "agent")
        events: list[dict[str, Any]] = [
            {
                "author": call.agent or default_author,
                "content": {"parts": [{"function_call": _function_call(call)}], "role": "model"},
            }
            for call in calls
        ]
        events.extend({"author": r.author, "content": _content("model", r.text)} for r in responses)
        written["intermediate_data"] = {"invocation_events": events}
    else:
        data: dict[str, Any] = {}
        if calls:
            data["tool_uses"] = [_function_call(c) for c in calls]
        if responses:
            data["intermediate_responses"] = [[r.author, [{"text": r.text}]] for r in responses]
        written["intermediate_data"] = data
    only_the_query = len(turn.inputs) == 1 and next(iter(turn.inputs.values())) == turn.query
    if turn.inputs and not only_the_query:
        lost.append(f"{where}: structured inputs {sorted(turn.inputs)} (ADK sends the query text only)")
    if turn.expected_trajectory is not None:
        lost.append(f"{where}: expected step trajectory {turn.expected_trajectory}")
    if turn.expected_agents is not None:
        lost.append(f"{where}: expected agents {turn.expected_agents}")
    if turn.expected_agent_tools is not None:
        lost.append(f"{where}: expected tools per agent {turn.expected_agent_tools}")
    if turn.expected_outputs:
        lost.append(f"{where}: expected outputs {sorted(turn.expected_outputs)}")
    if turn.reference_messages is not None:
        lost.append(f"{where}: reference messages ({len(turn.reference_messages)})")
    return written


def _case(eval_set: EvalSet, case: EvalCase, lost: list[str]) -> dict[str, Any]:
    written: dict[str, Any] = {"eval_id": case.case_id}
    if case.scenario is not None:
        # ADK's own field (a case has a conversation or a scenario): the plan and the persona, which a
        # conversation of the starting prompt alone would lose. A persona is written whole, not as the id of
        # one of ADK's prebuilt ones, so the file says exactly what the simulated user is told.
        written["conversation_scenario"] = case.scenario.model_dump(mode="json", exclude_none=True)
    else:
        written["conversation"] = [_invocation(case, i, turn, lost) for i, turn in enumerate(case.turns)]
    if case.session_input is not None:
        session = case.session_input
        session_written: dict[str, Any] = {
            "app_name": session.app_name or eval_set.eval_set_id,
            "user_id": session.user_id or "test_user",
        }
        if session.session_id:
            session_written["session_id"] = session.session_id
        if session.state:
            session_written["state"] = session.state
        session_written.update(session.model_extra or {})  # ADK's SessionInput keeps extra keys too
        written["session_input"] = session_written
    if case.expected_state is not None:
        if isinstance(case.expected_state, dict) and case.expected_state:
            written["final_session_state"] = case.expected_state
        else:
            lost.append(f"{_where(case)}: expected state that is not a non-empty object")
    if case.description:
        written["description"] = case.description  # an extra key: ADK writes those after its fields
    if case.metrics:
        lost.append(f"{_where(case)}: per-case metrics {[m.describe() for m in case.metrics]}")
    if case.must_pass:
        lost.append(f"{_where(case)}: must_pass")
    if case.tags:
        lost.append(f"{_where(case)}: tags {case.tags}")
    if case.cluster is not None:
        lost.append(f"{_where(case)}: cluster {case.cluster!r}")
    return written


def adk_criterion(spec: MetricSpec) -> Any:
    """The `test_config.json` value of an ADK-named criterion: a bare threshold, or an object with options."""
    options = {k: v for k, v in spec.options.items() if k in ADK_TRAJECTORY_OPTIONS}
    if not options:
        return spec.threshold
    match_type = options.get("match_type")
    if isinstance(match_type, str):
        options["match_type"] = match_type.upper().replace("-", "_").replace(" ", "_")
    return {"threshold": spec.threshold, **options}


def adk_test_config(eval_set: EvalSet, lost: list[str]) -> dict[str, Any] | None:
    """ADK criteria of the set as a `test_config.json`, None when the set uses ADK's defaults."""
    if eval_set.criteria.origin == "adk_defaults":
        return None
    criteria: dict[str, Any] = {}
    for spec in eval_set.criteria.metrics:
        if spec.name in EFFICIENCY_CRITERIA:
            continue  # always on in ADK; naming one would make its evaluator fail
        if spec.name not in ADK_CRITERIA or spec.threshold is None:
            lost.append(f"criterion {spec.describe()}: not an ADK criterion with a threshold")
            continue
        extra = sorted(set(spec.options) - set(ADK_TRAJECTORY_OPTIONS))
        if extra:
            lost.append(f"criterion {spec.name}: options {extra} have no ADK equivalent")
        criteria[spec.name] = adk_criterion(spec)
    return {"criteria": criteria}


def to_adk(eval_set: EvalSet) -> tuple[dict[str, Any], dict[str, Any] | None, list[str]]:
    """(ADK eval set, its test_config or None, what could not be expressed)."""
    lost: list[str] = []
    written: dict[str, Any] = {"eval_set_id": eval_set.eval_set_id}
    if eval_set.name:
        written["name"] = eval_set.name
    if eval_set.description:
        written["description"] = eval_set.description
    written["eval_cases"] = [_case(eval_set, case, lost) for case in eval_set.cases]
    config = adk_test_config(eval_set, lost)
    return written, config, lost
