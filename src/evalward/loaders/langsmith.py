"""LangSmith-style examples (a JSON list or JSONL of `{inputs, outputs}`) → `EvalSet`.

Each example is a one-turn case:
- `query` = `inputs.question` | `inputs.query` | `inputs.input` | `inputs.text` | `inputs.prompt` |
  `inputs.message` (the first that is a string) | the content of the last user message in `inputs.messages`
  (`find_query`, the rule the native format shares), else `""`; `Invocation.inputs` = the whole `inputs`;
- `outputs.response` → `expected_response` (a number, boolean, object or list as its JSON text,
  `reference_text`);
  `outputs.trajectory` (step names) → `expected_trajectory`;
  every other `outputs` key → `expected_outputs` (e.g. `{"route": "refund_agent"}`);
- `case_id` = `id` (or `example_id`) when given, else `"ex-"` + the first 12 hex digits of the sha256 of
  the canonical `inputs`, so ids survive reordering;
- `metadata` → the case's metadata (what LangSmith evaluators read as `example.metadata`); `metadata.cluster`
  (a non-empty string, or an integer taken as its decimal text) is also the case's cluster label, which the gate
  uses to analyse correlated cases (same template, same document) as one unit.
- `inputs.trajectory`, a list of LangChain messages (guide 001's recorded trajectories: HumanMessage, AIMessage
  with `additional_kwargs.tool_calls`, ToolMessage with `tool_call_id`, in any shape `loaders.lc_messages`
  reads) → the turn's `reference_messages`, scored step by step (teacher forcing); it is not handed to the
  agent (`inputs` without it), and the query defaults to its last user message before the first AI message.

Default criteria (origin `format_defaults`): `trajectory_subsequence` ≥ 1.0 when any example has a
trajectory; `output_match` with `{"key": K}` ≥ 1.0 for each other expected output key K (in order of first
appearance); `response_rouge1` (informational, no threshold) when any example has a response.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalward.loaders.lc_messages import lc_message, looks_like_messages
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems, describe_value
from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec, canonical_hash
from evalward.model.text import compact_json

_QUERY_KEYS = ("question", "query", "input", "text", "prompt", "message")
"""Keys whose string value is the user's text, first found wins. `prompt` and `message` come last so that an
`inputs` holding one of the first four keeps the query it always had (the query is part of a case's input hash)."""
_USER_ROLES = ("user", "human")


class _Example(BaseModel):
    model_config = ConfigDict(extra="ignore", loc_by_alias=False)

    inputs: dict[str, Any]
    outputs: dict[str, Any] | None = None
    id: str | int | None = None
    example_id: str | int | None = None
    metadata: dict[str, Any] | None = None


Reference = Any
"""An expected answer as datasets write it: text, or any other JSON value (multiverse_math's are numbers)."""


def reference_text(value: Reference) -> str | None:
    """The expected response for a reference: a string as is; a number or boolean as its JSON text (`42`,
    `-11.13`, `true`), which is what an agent would write, so the response metrics (exact, contains, ROUGE)
    compare it as text; an object or list as compact JSON (sorted keys); None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    return compact_json(value)


class _Outputs(BaseModel):
    model_config = ConfigDict(extra="allow", loc_by_alias=False)

    response: Reference = None
    trajectory: list[str] | None = None


def example_case_id(inputs: dict[str, Any]) -> str:
    """`ex-` + 12 hex digits of sha256(canonical JSON of the inputs): stable under reordering."""
    return "ex-" + canonical_hash(inputs)[:12]


def query_from_inputs(inputs: dict[str, Any]) -> str:
    """The user's text in a LangSmith `inputs` dict (see the module docstring); `""` when there is none."""
    return find_query(inputs) or ""


def find_query(inputs: dict[str, Any]) -> str | None:
    """The user's text in an `inputs` dict: the first string among `_QUERY_KEYS`, else the text of the last
    user message in `inputs.messages`; None when neither is there (an empty string found is returned as is).

    The one definition of this rule: the LangSmith and langchain-benchmarks loaders use it through
    `query_from_inputs`, and the native loader (`loaders.native.turn_query`) before its own fallbacks."""
    for key in _QUERY_KEYS:
        value = inputs.get(key)
        if isinstance(value, str):
            return value
    messages = inputs.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            role: Any = None
            content: Any = None
            if isinstance(message, dict):
                role = message.get("role", message.get("type"))
                content = message.get("content")
            elif isinstance(message, list | tuple) and len(message) == 2:
                role, content = message
            if role in _USER_ROLES:
                return _message_text(content)
    return None


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: [{"type": "text", "text": ...}, ...]
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _cluster(problems: Problems, metadata: dict[str, Any] | None, at: PathKey, case_id: str) -> tuple[bool, str | None]:
    """(usable, label) from `metadata.cluster`: (True, None) when absent; (False, None) after recording a
    problem when it is neither a non-empty string nor an integer."""
    if metadata is None or metadata.get("cluster") is None:
        return True, None
    value = metadata["cluster"]
    if isinstance(value, int) and not isinstance(value, bool):
        return True, str(value)
    if isinstance(value, str) and value:
        return True, value
    problems.add(
        "a cluster label must be a non-empty string",
        (*at, "metadata", "cluster"),
        case_id=case_id,
        expected="a non-empty string (or an integer)",
        found=describe_value(value),
    )
    return False, None


def load_langsmith(problems: Problems, default_id: str) -> EvalSet | None:
    cases: list[EvalCase] = []
    defaults = DefaultCriteria()
    for position, raw in enumerate(problems.document.data):
        case = map_example(problems, raw, (position,))
        if case is not None:
            defaults.add(case)
            cases.append(case)
    if problems.items:
        return None
    return langsmith_set(default_id, cases, defaults)


def langsmith_set(default_id: str, cases: list[EvalCase], defaults: DefaultCriteria) -> EvalSet:
    """The eval set of mapped examples, with the default criteria gathered from them."""
    return EvalSet(eval_set_id=default_id, format="langsmith", cases=cases, criteria=defaults.criteria())


class DefaultCriteria:
    """The default criteria (module docstring), gathered case by case: a file read one case at a time keeps
    these three facts instead of its cases."""

    def __init__(self) -> None:
        self._trajectory = False
        self._output_keys: dict[str, None] = {}  # in order of first appearance
        self._response = False

    def add(self, case: EvalCase) -> None:
        turn = case.turns[0]
        self._trajectory = self._trajectory or turn.expected_trajectory is not None
        self._output_keys.update(dict.fromkeys(turn.expected_outputs))
        self._response = self._response or turn.expected_response is not None

    def criteria(self) -> Criteria:
        metrics: list[MetricSpec] = []
        if self._trajectory:
            metrics.append(MetricSpec(name="trajectory_subsequence", threshold=1.0))
        metrics.extend(MetricSpec(name="output_match", threshold=1.0, options={"key": k}) for k in self._output_keys)
        if self._response:
            metrics.append(MetricSpec(name="response_rouge1"))
        return Criteria(metrics=metrics, origin="format_defaults")


def map_example(problems: Problems, raw: Any, at: PathKey) -> EvalCase | None:
    """One example (found at `at`) as a one-turn `EvalCase`; None after recording its problems."""
    example = problems.validate(_Example, raw, at)
    if example is None:
        return None
    given_id = example.id if example.id is not None else example.example_id
    case_id = str(given_id) if given_id is not None else example_case_id(example.inputs)
    outputs = problems.validate(_Outputs, example.outputs or {}, (*at, "outputs"), case_id=case_id)
    if outputs is None:
        return None
    inputs, reference = example.inputs, None
    if looks_like_messages(inputs.get("trajectory")):
        try:
            reference = [lc_message(m, f"inputs.trajectory[{k}]") for k, m in enumerate(inputs["trajectory"])]
        except ValueError as exc:
            problems.add(str(exc), (*at, "inputs", "trajectory"), case_id=case_id)
            return None
        inputs = {k: v for k, v in inputs.items() if k != "trajectory"}
    query = query_from_inputs(inputs)
    if not query and reference is not None:
        lead = []
        for message in reference:
            if message.role == "assistant":
                break
            lead.append(message)
        query = next((m.content or "" for m in reversed(lead) if m.role == "user"), "")
    turn = Invocation(
        query=query,
        inputs=inputs,
        reference_messages=reference,
        expected_response=reference_text(outputs.response),
        expected_trajectory=outputs.trajectory,
        expected_outputs=dict(outputs.model_extra or {}),
        source=problems.source(at),
    )
    usable, cluster = _cluster(problems, example.metadata, at, case_id)
    if not usable:
        return None
    metadata = dict(example.metadata or {})
    return EvalCase(case_id=case_id, turns=[turn], cluster=cluster, metadata=metadata, source=problems.source(at))
