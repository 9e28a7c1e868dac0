"""The `adk eval` comparison benchmark, reduced: its generated project is one both tools accept and score
the same way, and it refuses a run that did not score every case. (The timing: `python benchmarks/vs_adk_eval.py`.)"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("vs_adk_eval")


def test_both_agents_answer_every_generated_case_as_expected(bench: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("google.adk")
    from evalward.loaders.load import load_file
    from evalward.model import AgentRequest
    from evalward.runners import make_agent

    bench.write_project(tmp_path, 3)
    eval_set = load_file(tmp_path / "orders.evalset.json")
    assert [c.case_id for c in eval_set.cases] == ["order_1", "order_2", "order_3"]
    targets = [f"adk:{tmp_path / 'shop_agent'}", f"{tmp_path / 'shop_callable.py'}:answer"]

    async def answers(target: str) -> list[tuple[str | None, list[tuple[str, object]]]]:
        agent = make_agent(target)
        await agent.start()
        try:
            found = []
            for case in eval_set.cases:
                request = AgentRequest(case_id=case.case_id, turn=0, query=case.turns[0].query, session_id=case.case_id)
                output = await agent.run_turn(request)
                found.append((output.response, [(c.name, c.args) for c in output.tool_calls]))
            return found
        finally:
            await agent.aclose()

    expected = [
        (case.turns[0].expected_response, [(c.name, c.args) for c in case.turns[0].expected_tool_calls or []])
        for case in eval_set.cases
    ]
    assert [asyncio.run(answers(target)) for target in targets] == [expected, expected]


def test_a_run_counts_only_when_every_case_passed(bench: ModuleType) -> None:
    assert bench.scored_cases("adk eval", "orders:\n  Tests passed: 5\n  Tests failed: 0\n") == 5
    assert bench.scored_cases("adk eval", "orders:\n  Tests passed: 4\n  Tests failed: 1\n") == 0
    assert bench.scored_cases("evalward adk:", "PASSED: 5 passed, 0 failed, 0 errors\n") == 5
    assert bench.scored_cases("evalward adk:", "FAILED: 4 passed, 0 failed, 1 errors\n") == 0
    assert bench.scored_cases("evalward callable", "Traceback ...") == 0
