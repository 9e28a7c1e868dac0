"""langchain-benchmarks tool-usage datasets → `EvalSet` (recognised by `expected_steps` in the outputs).

Each example `{input|inputs: {question, ...}, output|outputs: {reference, expected_steps, order_matters,
state}}` is a one-turn case (`case_id` = `id`/`example_id`, else the `ex-` hash of the inputs, as for
LangSmith):
- `query` = the question (see `langsmith.query_from_inputs`), `Invocation.inputs` = the inputs;
- `reference` → `expected_response`: text as is, any other JSON value as its JSON text (multiverse_math's
  references are numbers: `-11.13` becomes `"-11.13"`); `expected_steps` → `expected_trajectory`; `order_matters` →
  `expected_order_matters`; `state` (when present and not null) → `EvalCase.expected_state`; any other
  output key → `expected_outputs`.

Per-case metrics mirror the benchmark's evaluator: `trajectory_exact` when `order_matters` is true or
missing, `trajectory_same_multiset` when false, both with `{"over": "steps"}` and threshold 1.0;
`state_exact` ≥ 1.0 when a state is expected. The set adds `response_rouge1` (informational) when any
example has a reference.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalward.loaders.langsmith import Reference, example_case_id, query_from_inputs, reference_text
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems
from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec


class _Example(BaseModel):
    model_config = ConfigDict(extra="ignore", loc_by_alias=False)

    input: dict[str, Any] | None = None
    inputs: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    id: str | int | None = None
    example_id: str | int | None = None


class _Output(BaseModel):
    model_config = ConfigDict(extra="allow", loc_by_alias=False)

    reference: Reference = None
    expected_steps: list[str]
    order_matters: bool | None = None
    state: Any = None


def load_benchmarks(problems: Problems, default_id: str) -> EvalSet | None:
    cases: list[EvalCase] = []
    failed = False
    for position, raw in enumerate(problems.document.data):
        at: PathKey = (position,)
        example = problems.validate(_Example, raw, at)
        if example is None:
            failed = True
            continue
        inputs_key = "inputs" if example.inputs is not None else "input"
        inputs = example.inputs if example.inputs is not None else example.input
        if inputs is None:
            problems.add("an example needs 'input' (or 'inputs')", at, expected="an object with 'question'")
            failed = True
            continue
        given_id = example.id if example.id is not None else example.example_id
        case_id = str(given_id) if given_id is not None else example_case_id(inputs)
        output_key = "outputs" if example.outputs is not None else "output"
        raw_output = example.outputs if example.outputs is not None else example.output
        if raw_output is None:
            problems.add(
                "an example needs 'output' (or 'outputs')",
                at,
                case_id=case_id,
                expected="an object with 'expected_steps'",
            )
            failed = True
            continue
        output = problems.validate(_Output, raw_output, (*at, output_key), case_id=case_id)
        if output is None:
            failed = True
            continue
        if not query_from_inputs(inputs):
            problems.warn(f"case {case_id!r} has no question in its {inputs_key}", (*at, inputs_key))
        order_matters = output.order_matters
        trajectory_metric = "trajectory_same_multiset" if order_matters is False else "trajectory_exact"
        metrics = [MetricSpec(name=trajectory_metric, threshold=1.0, options={"over": "steps"})]
        if output.state is not None:
            metrics.append(MetricSpec(name="state_exact", threshold=1.0))
        turn = Invocation(
            query=query_from_inputs(inputs),
            inputs=inputs,
            expected_response=reference_text(output.reference),
            expected_trajectory=output.expected_steps,
            expected_order_matters=order_matters,
            expected_outputs=dict(output.model_extra or {}),
            source=problems.source(at),
        )
        cases.append(
            EvalCase(
                case_id=case_id, turns=[turn], expected_state=output.state, metrics=metrics, source=problems.source(at)
            )
        )
    if failed:
        return None
    set_metrics = [MetricSpec(name="response_rouge1")] if any(c.turns[0].expected_response for c in cases) else []
    return EvalSet(
        eval_set_id=default_id,
        format="langchain_benchmarks",
        cases=cases,
        criteria=Criteria(metrics=set_metrics, origin="format_defaults"),
    )
