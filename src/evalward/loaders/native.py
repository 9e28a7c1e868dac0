"""evalward's own eval format (YAML or JSON with `evalward: 1`) → `EvalSet`, and its JSON Schema.

```yaml
evalward: 1
eval_set_id: music_store            # optional; default: the file name without its eval suffixes
name: Music store support           # optional
description: ...                    # optional
metrics:                            # optional; the set's criteria (origin "native"), replacing the defaults
  - trajectory_subsequence                          # a bare name: threshold 1.0
  - {name: response_rouge1, threshold: null}        # threshold null: informational
  - {name: tool_trajectory_avg_score, threshold: 1.0, match_type: in-order}  # other keys are options
  - {name: polite, evaluator: "evals.checks:Polite"}  # your own evaluator (`metrics.evaluators`), any idiom
  - {name: paris, evaluator: "pydantic_evals.evaluators:Contains", args: {value: Paris}}  # a class, created with args
cases:
  - id: refund_invoice              # required, unique in the file
    description: ...
    must_pass: true                 # hard gate: must pass on every repetition
    tags: [refund]
    metadata: {difficulty: hard}    # anything else, for your evaluators (`ctx.metadata`, `example.metadata`)
    cluster: invoice-237            # optional: cases sharing a label (same template, same document) are
                                    #   resampled and sign-flipped together by the gate
    session_state: {customer_id: 7}
    expected_state: {refunded: [237]}
    metrics: [...]                  # per-case additions, replacing set metrics of the same name
    query: Refund invoice 237       # single-turn shorthand: query and/or inputs, with expect
    inputs: {...}
    expect: {response, tool_calls: [{name, args, agent, id}], trajectory, order_matters, agents,
             agent_tools, outputs, intermediate_responses: [{author, text}]}
  - id: two_turns
    turns:                          # multi-turn; a case has either `turns` or the shorthand, not both
      - {id, query, inputs, expect, reference_messages: [{role, content, tool_calls, tool_call_id, name}]}
```

Rules:
1. Every object forbids unknown keys except a metric entry, whose extra keys are its options.
2. A metric is a bare name (threshold 1.0) or `{name, threshold?, ...options}`; an omitted threshold is 1.0,
   `null` makes it informational. ADK's efficiency metrics default to informational and take no threshold.
   `match_type`/`ignore_args` are checked and normalised as in `test_config.json`.
3. A turn needs `query` or `inputs`. Within `expect`, an omitted key is not scored; `tool_calls: []`
   expects no calls. The agent's `query` (`turn_query`) is `query` as written (even `""`); without it, it
   comes from `inputs`:
   a. the first string among `question`, `query`, `input`, `text`, `prompt`, `message`, else the text of
      the last user message in `messages` (`langsmith.find_query`: the rule LangSmith examples follow);
   b. else, when `inputs` has exactly one key and its value is a string, that string (`{topic: refunds}`);
   c. else `inputs` as compact JSON with sorted keys (`{"a": 1, "b": [2]}`), so an agent that reads only
      the query still gets everything the turn says.
   `inputs: {}` without `query` is an error: the agent would get nothing to answer. `inputs` always reach
   the agent unchanged.
4. Without `metrics`, criteria follow the expectations present (origin `format_defaults`):
   `tool_calls` → `tool_trajectory_avg_score` ≥ 1.0; `trajectory` → `trajectory_subsequence` ≥ 1.0;
   `agents` → `agents_match` ≥ 1.0; `agent_tools` → `agent_tools_match` ≥ 1.0; each `outputs` key K →
   `output_match {key: K}` ≥ 1.0; `expected_state` → `state_exact` ≥ 1.0; `response` → `response_rouge1`
   (informational).
5. Metric names are checked against ADK's criteria and the caller's `known_metrics` when given, except for
   a metric with `evaluator`: a path to user code, run by `metrics.custom.score_evaluator`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from evalward.loaders.criterion_checks import record_spec_problems
from evalward.loaders.langsmith import find_query
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems, describe_value
from evalward.loaders.test_config import ADK_CRITERIA, EFFICIENCY_CRITERIA, criterion_options
from evalward.metrics.custom import CUSTOM_OPTION, evaluator_spec, split_path
from evalward.metrics.registry import is_plugin_metric
from evalward.model import (
    Criteria,
    EvalCase,
    EvalSet,
    IntermediateResponse,
    Invocation,
    Message,
    MetricSpec,
    SessionInput,
    ToolCall,
)
from evalward.model.text import compact_json

_STRICT = ConfigDict(extra="forbid", loc_by_alias=False)
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class NativeToolCall(BaseModel):
    """An expected tool call."""

    model_config = _STRICT

    name: str = Field(description="Tool (or agent) name, case-sensitive.")
    args: dict[str, Any] | None = Field(default=None, description="Expected arguments; omit to leave them unset.")
    agent: str | None = Field(default=None, description="The agent expected to issue the call.")
    id: str | None = Field(default=None, description="Provider call id (reference messages).")


class NativeIntermediateResponse(BaseModel):
    model_config = _STRICT

    author: str
    text: str


class NativeExpect(BaseModel):
    """What a turn should produce; an omitted key is not scored."""

    model_config = _STRICT

    response: str | None = Field(default=None, description="Reference final response.")
    tool_calls: list[NativeToolCall] | None = Field(default=None, description="Expected calls in order; [] = none.")
    trajectory: list[str] | None = Field(default=None, description="Expected step names in order.")
    order_matters: bool | None = Field(default=None, description="Whether the trajectory's order matters.")
    agents: list[str] | None = Field(default=None, description="Agents expected to take part.")
    agent_tools: dict[str, list[str]] | None = Field(default=None, description="Tool names expected per agent.")
    outputs: dict[str, Any] = Field(default_factory=dict, description="Other output keys compared exactly.")
    intermediate_responses: list[NativeIntermediateResponse] | None = None


class NativeMessage(BaseModel):
    """A message of a recorded reference trajectory (OpenAI shape)."""

    model_config = _STRICT

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[NativeToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class NativeMetric(BaseModel):
    """A metric with a threshold (default 1.0; null = informational); extra keys are its options."""

    model_config = ConfigDict(defer_build=True, extra="allow", loc_by_alias=False)

    name: str
    threshold: float | None = Field(default=1.0, allow_inf_nan=False)
    evaluator: str | None = Field(
        default=None,
        description="Your own evaluator, `pkg.module:attr` or `pkg.module.attr` (LangSmith/openevals, "
        "pydantic-evals or ADK idiom); `name` is then free.",
    )
    args: dict[str, Any] | list[Any] | None = Field(
        default=None,
        description="With `evaluator` naming a class: the arguments it is created with (keywords or positional).",
    )


def _metric_kind(value: Any) -> str:
    return "str" if isinstance(value, str) else "NativeMetric"


MetricEntry = Annotated[
    Annotated[str, Tag("str")] | Annotated[NativeMetric, Tag("NativeMetric")],
    Discriminator(_metric_kind),
]
"""A bare metric name or a metric object; a discriminator keeps errors to the shape actually written."""


NO_QUERY_IN_EMPTY_INPUTS = "without 'query', 'inputs' needs at least one key: the agent would get an empty query"


def turn_query(query: str | None, inputs: dict[str, Any] | None) -> str:
    """The query a turn sends to the agent: rule 3 of the module docstring.

    Without this, a turn written with `inputs: {question: …}` and no `query` sent `"query": ""`, and an agent
    that reads the query (ADK, `openai:`, most `cmd:` and HTTP agents) was asked nothing."""
    if query is not None:
        return query
    if not inputs:
        return ""  # refused by the models' validators; kept total for callers building turns themselves
    found = find_query(inputs)
    if found is not None:
        return found
    if len(inputs) == 1:
        (only,) = inputs.values()
        if isinstance(only, str):
            return only
    return compact_json(inputs)


class NativeTurn(BaseModel):
    """One turn of a multi-turn case."""

    model_config = _STRICT

    id: str | None = Field(default=None, description="Stable turn id (invocation id).")
    query: str | None = Field(
        default=None,
        description="The user's message. Without it, taken from `inputs`: its question, query, input, text, prompt "
        "or message (or the last user message of its messages), else its only string value, else its JSON.",
    )
    inputs: dict[str, Any] | None = Field(default=None, description="Structured inputs handed to the agent.")
    expect: NativeExpect = Field(default_factory=NativeExpect)
    reference_messages: list[NativeMessage] | None = None

    @model_validator(mode="after")
    def _needs_input(self) -> NativeTurn:
        if self.query is None and self.inputs is None:
            raise ValueError("a turn needs 'query' or 'inputs'")
        if self.query is None and not self.inputs:
            raise ValueError(NO_QUERY_IN_EMPTY_INPUTS)
        return self


class NativeCase(BaseModel):
    """One case: either the single-turn shorthand (`query`/`inputs`/`expect`) or `turns`."""

    model_config = _STRICT

    id: str = Field(description="Stable case id, unique in the file.")
    description: str | None = None
    must_pass: bool = Field(default=False, description="Hard gate: must pass on every repetition.")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Anything else about the case, for your evaluators (`ctx.metadata`)."
    )
    cluster: str | None = Field(
        default=None,
        min_length=1,
        description="Cluster label (same template, same document): the gate treats cases sharing it as one "
        "correlated unit (clustered standard error, one sign flip per cluster, whole-cluster bootstrap).",
    )
    session_state: dict[str, Any] | None = Field(default=None, description="Initial session state.")
    expected_state: Any = Field(default=None, description="Expected state after the run.")
    metrics: list[MetricEntry] = Field(default_factory=list, description="Per-case metrics.")
    query: str | None = None
    inputs: dict[str, Any] | None = None
    expect: NativeExpect | None = None
    reference_messages: list[NativeMessage] | None = None
    turns: list[NativeTurn] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_shape(self) -> NativeCase:
        shorthand = [k for k in ("query", "inputs", "expect", "reference_messages") if getattr(self, k) is not None]
        if self.turns is not None and shorthand:
            raise ValueError(
                f"a case has either 'turns' or the single-turn keys, not both (found {', '.join(shorthand)})"
            )
        if self.turns is None and self.query is None and self.inputs is None:
            raise ValueError("a case needs 'query' (or 'inputs') or 'turns'")
        if self.turns is None and self.query is None and not self.inputs:
            raise ValueError(NO_QUERY_IN_EMPTY_INPUTS)
        return self


class NativeFile(BaseModel):
    """An evalward eval file."""

    model_config = ConfigDict(defer_build=True, extra="forbid", loc_by_alias=False, title="evalward eval file")

    evalward: Literal[1] = Field(description="Format version.")
    eval_set_id: str | None = Field(default=None, description="Default: the file name without eval suffixes.")
    name: str | None = None
    description: str | None = None
    metrics: list[MetricEntry] | None = Field(default=None, description="The set's criteria.")
    cases: list[NativeCase]


class _NativeHeader(BaseModel):
    """`NativeFile` with cases left unparsed, so each case is validated with its id attached to problems."""

    model_config = ConfigDict(defer_build=True, extra="forbid", loc_by_alias=False)

    evalward: Literal[1]
    eval_set_id: str | None = None
    name: str | None = None
    description: str | None = None
    metrics: list[Any] | None = None
    cases: list[Any]


def native_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the native format, generated from the boundary models."""
    schema = NativeFile.model_json_schema()
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "evalward eval file",
        **{k: v for k, v in schema.items() if k != "title"},
    }


def load_native(problems: Problems, default_id: str, known_metrics: Collection[str] = ()) -> EvalSet | None:
    header = problems.validate(_NativeHeader, problems.document.data)
    if header is None:
        return None
    known = {*ADK_CRITERIA, *known_metrics} if known_metrics else None
    failed = False
    set_metrics: list[MetricSpec] | None = None
    if header.metrics is not None:
        set_metrics = _metrics(problems, header.metrics, ("metrics",), known, case_id=None)
        failed = set_metrics is None
    cases: list[EvalCase] = []
    for position, raw in enumerate(header.cases):
        at: PathKey = ("cases", position)
        given = raw.get("id") if isinstance(raw, dict) else None
        case_id = given if isinstance(given, str) else None
        parsed = problems.validate(NativeCase, raw, at, case_id=case_id)
        if parsed is None:
            failed = True
            continue
        case = _case(problems, parsed, raw, at, known)
        if case is None:
            failed = True
            continue
        cases.append(case)
    if failed:
        return None
    if set_metrics is not None:
        criteria = Criteria(metrics=set_metrics, origin="native")
    else:
        criteria = Criteria(metrics=default_metrics(cases), origin="format_defaults")
    return EvalSet(
        eval_set_id=header.eval_set_id or default_id,
        name=header.name,
        description=header.description,
        format="native",
        cases=cases,
        criteria=criteria,
    )


def default_metrics(cases: list[EvalCase]) -> list[MetricSpec]:
    """Rule 4 of the module docstring: criteria that follow the expectations the cases carry."""
    turns = [turn for case in cases for turn in case.turns]
    metrics: list[MetricSpec] = []
    if any(t.expected_tool_calls is not None for t in turns):
        metrics.append(MetricSpec(name="tool_trajectory_avg_score", threshold=1.0))
    if any(t.expected_trajectory is not None for t in turns):
        metrics.append(MetricSpec(name="trajectory_subsequence", threshold=1.0))
    if any(t.expected_agents is not None for t in turns):
        metrics.append(MetricSpec(name="agents_match", threshold=1.0))
    if any(t.expected_agent_tools is not None for t in turns):
        metrics.append(MetricSpec(name="agent_tools_match", threshold=1.0))
    keys: list[str] = []
    for turn in turns:
        keys.extend(k for k in turn.expected_outputs if k not in keys)
    metrics.extend(MetricSpec(name="output_match", threshold=1.0, options={"key": k}) for k in keys)
    if any(c.expected_state is not None for c in cases):
        metrics.append(MetricSpec(name="state_exact", threshold=1.0))
    if any(t.expected_response is not None for t in turns):
        metrics.append(MetricSpec(name="response_rouge1"))
    return metrics


def _metrics(
    problems: Problems, entries: list[Any], at: PathKey, known: set[str] | None, *, case_id: str | None
) -> list[MetricSpec] | None:
    specs: list[MetricSpec] = []
    ok = True
    for position, entry in enumerate(entries):
        entry_at = (*at, position)
        parsed = problems.validate(
            NativeMetric, {"name": entry} if isinstance(entry, str) else entry, entry_at, case_id=case_id
        )
        if parsed is None:
            ok = False
            continue
        if parsed.evaluator is not None:
            module, attribute = split_path(parsed.evaluator)
            if not module or not attribute:
                problems.add(
                    f"metric {parsed.name!r}: evaluator must be the path of a function or evaluator class",
                    (*entry_at, "evaluator"),
                    case_id=case_id,
                    expected="'package.module:function' or 'package.module.function'",
                    found=repr(parsed.evaluator),
                )
                ok = False
                continue
            config = evaluator_spec(parsed.name, parsed.evaluator, args=parsed.args).options[CUSTOM_OPTION]
            extra = {**(parsed.model_extra or {}), CUSTOM_OPTION: config}
            specs.append(MetricSpec(name=parsed.name, threshold=parsed.threshold, options=extra))
            continue
        if parsed.args is not None:
            problems.add(
                f"metric {parsed.name!r}: args are the arguments of an evaluator class, and no evaluator is named",
                (*entry_at, "args"),
                case_id=case_id,
                expected="'evaluator: package.module:Class' beside 'args'",
                found="args without evaluator",
            )
            ok = False
            continue
        if known is not None and parsed.name not in known and not is_plugin_metric(parsed.name):
            problems.add(
                f"unknown metric {parsed.name!r}",
                entry_at,
                case_id=case_id,
                expected="one of " + ", ".join(sorted(known)),
                found=repr(parsed.name),
            )
            ok = False
            continue
        threshold = parsed.threshold
        if parsed.name in EFFICIENCY_CRITERIA:
            if isinstance(entry, dict) and entry.get("threshold") is not None:
                problems.add(
                    f"{parsed.name} takes no threshold: it is reported as information only",
                    (*entry_at, "threshold"),
                    on_key=True,
                    case_id=case_id,
                    found=describe_value(entry["threshold"]),
                )
                ok = False
                continue
            threshold = None
        options = criterion_options(parsed.name, dict(parsed.model_extra or {}), entry_at, problems)
        if options is None:
            ok = False
            continue
        spec = MetricSpec(name=parsed.name, threshold=threshold, options=options)
        record_spec_problems(problems, spec, entry_at, entry, case_id=case_id)
        specs.append(spec)
    return specs if ok else None


def _case(
    problems: Problems, parsed: NativeCase, raw: dict[str, Any], at: PathKey, known: set[str] | None
) -> EvalCase | None:
    metrics = _metrics(problems, raw.get("metrics") or [], (*at, "metrics"), known, case_id=parsed.id)
    if metrics is None:
        return None
    source = problems.source(at)
    if parsed.turns is not None:
        # A turn's own position only where a problem can be reported at it after loading: its reference messages
        # (`_pipeline.options`); walking into the case's text for every turn cost a large set's load ~15 µs a turn.
        turns = [
            _turn(
                t.id,
                t.query,
                t.inputs,
                t.expect,
                t.reference_messages,
                None if t.reference_messages is None else problems.source((*at, "turns", i)),
            )
            for i, t in enumerate(parsed.turns)
        ]
    else:
        turns = [_turn(None, parsed.query, parsed.inputs, parsed.expect, parsed.reference_messages, source)]
    return EvalCase(
        case_id=parsed.id,
        description=parsed.description,
        turns=turns,
        session_input=SessionInput(state=parsed.session_state) if parsed.session_state is not None else None,
        expected_state=parsed.expected_state,
        metrics=metrics,
        must_pass=parsed.must_pass,
        tags=parsed.tags,
        metadata=parsed.metadata,
        cluster=parsed.cluster,
        source=source,
    )


def _call(call: NativeToolCall) -> ToolCall:
    return ToolCall(name=call.name, args=call.args, agent=call.agent, id=call.id)


def _turn(
    turn_id: str | None,
    query: str | None,
    inputs: dict[str, Any] | None,
    expect: NativeExpect | None,
    reference: list[NativeMessage] | None,
    source: Any,
) -> Invocation:
    expect = expect or NativeExpect()
    return Invocation(
        invocation_id=turn_id or "",
        query=turn_query(query, inputs),
        inputs=inputs or {},
        expected_response=expect.response,
        expected_tool_calls=[_call(c) for c in expect.tool_calls] if expect.tool_calls is not None else None,
        expected_intermediate_responses=(
            [IntermediateResponse(author=r.author, text=r.text) for r in expect.intermediate_responses]
            if expect.intermediate_responses is not None
            else None
        ),
        expected_trajectory=expect.trajectory,
        expected_order_matters=expect.order_matters,
        expected_agents=expect.agents,
        expected_agent_tools=expect.agent_tools,
        expected_outputs=expect.outputs,
        reference_messages=(
            [
                Message(
                    role=m.role,
                    content=m.content,
                    tool_calls=[_call(c) for c in m.tool_calls] if m.tool_calls is not None else None,
                    tool_call_id=m.tool_call_id,
                    name=m.name,
                )
                for m in reference
            ]
            if reference is not None
            else None
        ),
        source=source,
    )
