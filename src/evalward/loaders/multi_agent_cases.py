"""Multi-agent test cases `{id, description, input, expected: {agents, tools: {agent: [tool]}}}` → `EvalSet`.

Each element is a one-turn case: `query` = `input`, `expected.agents` → `expected_agents`,
`expected.tools` → `expected_agent_tools`; `case_id` = `id` (else the `ex-` hash of `{"input": input}`).
Default criteria (origin `format_defaults`): `agents_match` ≥ 1.0 and `agent_tools_match` ≥ 1.0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalward.loaders.langsmith import example_case_id
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems
from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec


class _Expected(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid", loc_by_alias=False)

    agents: list[str] | None = None
    tools: dict[str, list[str]] | None = None


class _AgentCase(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="ignore", loc_by_alias=False)

    id: str | int | None = None
    description: str | None = None
    input: str
    expected: _Expected


def load_multi_agent(problems: Problems, default_id: str) -> EvalSet | None:
    cases = [
        case
        for position, raw in enumerate(problems.document.data)
        if (case := map_agent_case(problems, raw, (position,))) is not None
    ]
    if problems.items:
        return None
    return multi_agent_set(default_id, cases)


def map_agent_case(problems: Problems, raw: Any, at: PathKey) -> EvalCase | None:
    """One test case (found at `at`) as a one-turn `EvalCase`; None after recording its problems."""
    given = raw.get("id") if isinstance(raw, dict) else None
    parsed = problems.validate(_AgentCase, raw, at, case_id=str(given) if given is not None else None)
    if parsed is None:
        return None
    case_id = str(parsed.id) if parsed.id is not None else example_case_id({"input": parsed.input})
    turn = Invocation(
        query=parsed.input,
        expected_agents=parsed.expected.agents,
        expected_agent_tools=parsed.expected.tools,
        source=problems.source(at),
    )
    return EvalCase(case_id=case_id, description=parsed.description, turns=[turn], source=problems.source(at))


def multi_agent_set(default_id: str, cases: list[EvalCase]) -> EvalSet:
    """The eval set of mapped test cases, with the format's default criteria."""
    return EvalSet(
        eval_set_id=default_id,
        format="multi_agent",
        cases=cases,
        criteria=Criteria(
            metrics=[
                MetricSpec(name="agents_match", threshold=1.0),
                MetricSpec(name="agent_tools_match", threshold=1.0),
            ],
            origin="format_defaults",
        ),
    )
