"""`evalward record`: run an agent on inputs and turn what it did into expectations, for a human to review.

Inputs (`read_inputs`), detected by content:
- any eval file evalward reads: its cases' queries, inputs and session state are used, its expectations
  are ignored (re-recording an eval set refreshes its expectations);
- JSON lines: a string (one query) or `{"id"?, "query"?, "inputs"?, "turns"?: [query | {query, inputs}],
  "session_state"?}` per case;
- plain text: one query per non-empty line.
Cases without an id are named `case_001`, `case_002`, … in order.

Expectations (`recorded_set`), per completed turn: the response, the tool calls as `name(args)` with their
agent (ids, results and statuses are dropped: ids change every run), and the sub-agents' intermediate
responses; for the native format also the reported step trajectory, the agents reported explicitly,
other output keys, and the final state of the case. A case whose run failed is left out and reported.
Criteria: ADK's defaults for the ADK format (no `test_config.json` is written); the native format's
expectation-driven defaults (`loaders.native.default_metrics`), written out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from evalward.errors import EvalFileError, FileProblem
from evalward.loaders import detect_format, load_paths
from evalward.loaders.documents import DocumentError, read_document
from evalward.loaders.native import default_metrics
from evalward.model import (
    AgentOutput,
    Criteria,
    EvalCase,
    EvalSet,
    Invocation,
    RunResult,
    SessionInput,
    ToolCall,
)
from evalward.reading import read_text_file

RecordFormat = Literal["adk", "native"]


@dataclass
class Recorded:
    """The recorded eval set, and the cases that could not be recorded (with why)."""

    eval_set: EvalSet
    failures: list[str] = field(default_factory=list)


def _case_from_line(data: Any, position: int, source: str, number: int) -> EvalCase:
    default_id = f"case_{position:03d}"
    if isinstance(data, str):
        return EvalCase(case_id=default_id, turns=[Invocation(query=data)])
    if not isinstance(data, dict):
        raise EvalFileError(
            [FileProblem(source, "not an input", line=number, expected="a string or an object", found=repr(data)[:60])]
        )
    unknown = sorted(set(data) - {"id", "query", "inputs", "turns", "session_state"})
    if unknown:
        raise EvalFileError(
            [
                FileProblem(
                    source,
                    f"unknown keys {unknown}",
                    line=number,
                    expected="id, query, inputs, turns, session_state",
                )
            ]
        )
    turns_raw = data.get("turns")
    if turns_raw is None:
        turns_raw = [{"query": data.get("query", ""), "inputs": data.get("inputs") or {}}]
    turns = []
    for raw in turns_raw:
        if isinstance(raw, str):
            turns.append(Invocation(query=raw))
        elif isinstance(raw, dict) and (raw.get("query") or raw.get("inputs")):
            turns.append(Invocation(query=str(raw.get("query", "")), inputs=dict(raw.get("inputs") or {})))
        else:
            raise EvalFileError(
                [FileProblem(source, "a turn needs a query or inputs", line=number, found=repr(raw)[:60])]
            )
    state = data.get("session_state")
    return EvalCase(
        case_id=str(data.get("id", default_id)),
        turns=turns,
        session_input=SessionInput(state=state) if isinstance(state, dict) else None,
    )


def read_inputs(path: str | Path, *, eval_set_id: str) -> EvalSet:
    """The cases to record (sources in the module docstring), expectations cleared."""
    file = Path(path)
    shown = str(path)
    if not file.is_file():
        raise EvalFileError([FileProblem(shown, "inputs file not found", expected="an existing file")])
    document = None
    if file.suffix in (".json", ".jsonl", ".yaml", ".yml"):
        try:
            document = read_document(file, shown)
        except DocumentError:
            document = None
    if document is not None and detect_format(document.data) is not None:
        loaded = load_paths([file]).sets
        cases = [_without_expectations(c) for s in loaded for c in s.cases]
        return EvalSet(eval_set_id=eval_set_id, format="native", cases=cases)
    text = read_text_file(file, shown)
    cases = []
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    as_json = file.suffix == ".jsonl" or all(line.lstrip().startswith(("{", '"')) for _, line in lines[:1])
    for position, (number, line) in enumerate(lines, start=1):
        if as_json:
            try:
                data: Any = json.loads(line)
            except json.JSONDecodeError as exc:
                raise EvalFileError(
                    [FileProblem(shown, f"not valid JSON: {exc.msg}", line=number, column=exc.colno)]
                ) from None
            cases.append(_case_from_line(data, position, shown, number))
        else:
            cases.append(EvalCase(case_id=f"case_{position:03d}", turns=[Invocation(query=line.strip())]))
    if not cases:
        raise EvalFileError([FileProblem(shown, "no inputs found", expected="at least one query")])
    seen: set[str] = set()
    for case in cases:
        if case.case_id in seen:
            raise EvalFileError([FileProblem(shown, f"duplicate case id {case.case_id!r}", case_id=case.case_id)])
        seen.add(case.case_id)
    return EvalSet(eval_set_id=eval_set_id, format="native", cases=cases)


def _without_expectations(case: EvalCase) -> EvalCase:
    turns = [Invocation(invocation_id=t.invocation_id, query=t.query, inputs=t.inputs) for t in case.turns]
    return EvalCase(case_id=case.case_id, description=case.description, turns=turns, session_input=case.session_input)


def _expected_call(call: ToolCall) -> ToolCall:
    return ToolCall(name=call.name, args=call.args, agent=call.agent)


def _observed_turn(turn: Invocation, output: AgentOutput, target: RecordFormat) -> Invocation:
    update: dict[str, Any] = {
        "expected_response": output.response if output.response is not None else "",
        "expected_tool_calls": [_expected_call(c) for c in output.tool_calls],
        "expected_intermediate_responses": list(output.intermediate_responses) or None,
    }
    if target == "native":
        update["expected_trajectory"] = list(output.trajectory) if output.trajectory is not None else None
        update["expected_agents"] = list(output.agents) if output.agents is not None else None
        update["expected_outputs"] = dict(output.outputs)
    return turn.model_copy(update=update)


def recorded_set(inputs: EvalSet, run: RunResult, *, target: RecordFormat, agent_label: str) -> Recorded:
    """`inputs` with the run's observed outputs as expectations (rules in the module docstring)."""
    by_case = {c.case_id: c for c in run.cases}
    cases: list[EvalCase] = []
    failures: list[str] = []
    for case in inputs.cases:
        result = by_case.get(case.case_id)
        if result is None:
            failures.append(f"case {case.case_id!r}: did not run")
            continue
        if result.error is not None:
            turn = f" turn {result.error.turn}" if result.error.turn is not None else ""
            failures.append(f"case {case.case_id!r}{turn}: {result.error.kind}: {result.error.message}")
            continue
        outputs = [i.output for i in result.invocations]
        turns = [
            _observed_turn(turn, output, target)
            for turn, output in zip(case.turns, outputs, strict=True)
            if output is not None
        ]
        expected_state = result.final_state if target == "native" else None
        if target == "adk" and isinstance(result.final_state, dict) and result.final_state:
            expected_state = result.final_state
        cases.append(case.model_copy(update={"turns": turns, "expected_state": expected_state}))
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    recorded = EvalSet(
        eval_set_id=inputs.eval_set_id,
        name=inputs.name or inputs.eval_set_id,
        description=f"Recorded by evalward from {agent_label} on {when}: review every expectation before use.",
        format="adk_evalset" if target == "adk" else "native",
        cases=cases,
    )
    if target == "adk":
        recorded.criteria = Criteria(origin="adk_defaults")
    else:
        recorded.criteria = Criteria(metrics=default_metrics(cases), origin="native")
    return Recorded(eval_set=recorded, failures=failures)
