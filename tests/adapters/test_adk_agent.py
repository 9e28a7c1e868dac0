"""`adk:` targets (runners/adk_agent.py): parity with ADK's own evaluation on model-free ADK agents.

ADK's side twice: what `AgentEvaluator` does in-process (`EvaluationGenerator` runs the agent package
through ADK's Runner, and ADK's `TrajectoryEvaluator` / `RougeEvaluator` score the actual invocations), and
the `adk eval` command itself (from the `google-adk[eval]` test dependency) in a subprocess. evalward's side
is `evalward run --agent adk:…` on the same files.
ADK's evaluation stack imports in seconds, so it is loaded once for the module.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalward.model import AgentRequest, ToolCall
from evalward.runners import AgentStartError, make_agent
from evalward.runners.adk_agent import AdkAgent

pytestmark = pytest.mark.adk

PROJECT = Path(__file__).resolve().parent / "adk_project"
TRAVEL = PROJECT / "travel_agent"
EVAL_SET = TRAVEL / "travel.evalset.json"
CONFIG = TRAVEL / "test_config.json"


@pytest.fixture(scope="module")
def adk_scores() -> dict[str, dict[str, Any]]:
    """Per case: ADK's scores, actual calls and responses for the travel eval set (one run)."""
    pytest.importorskip("google.adk.evaluation.evaluation_generator")
    from google.adk.evaluation._efficiency_evaluators import (
        _InferenceCallCountV1Evaluator,
        _TokenUsageV1Evaluator,
        _ToolCallCountV1Evaluator,
    )
    from google.adk.evaluation.eval_case import get_all_tool_calls
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    if str(PROJECT) not in sys.path:
        sys.path.insert(0, str(PROJECT))
    criteria = json.loads(CONFIG.read_text())["criteria"]
    eval_set = EvalSet.model_validate_json(EVAL_SET.read_text())
    generated = asyncio.run(EvaluationGenerator.generate_responses(eval_set, "travel_agent", repeat_num=1))
    scores: dict[str, dict[str, Any]] = {}
    for case in generated:
        actual, expected = case.responses[0], case.eval_case.conversation
        trajectory = TrajectoryEvaluator(threshold=criteria["tool_trajectory_avg_score"])
        rouge = RougeEvaluator(
            EvalMetric(metric_name="response_match_score", threshold=criteria["response_match_score"])
        )
        scores[case.eval_case.eval_id] = {
            "tool_trajectory_avg_score": trajectory.evaluate_invocations(actual, expected).overall_score,
            "response_match_score": rouge.evaluate_invocations(actual, expected).overall_score,
            # ADK appends its informational efficiency metrics to every eval; evalward does for ADK sets.
            "tool_call_count_v1": _ToolCallCountV1Evaluator().evaluate_invocations(actual).overall_score,
            "inference_call_count_v1": _InferenceCallCountV1Evaluator().evaluate_invocations(actual).overall_score,
            "token_usage_v1": _TokenUsageV1Evaluator().evaluate_invocations(actual).overall_score,
            "calls": [
                [(c.name, c.args) for c in get_all_tool_calls(invocation.intermediate_data)] for invocation in actual
            ],
            "responses": [
                "\n".join(p.text for p in invocation.final_response.parts if p.text) for invocation in actual
            ],
        }
    return scores


@pytest.fixture(scope="module")
def evalward_run(adk_scores: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from evalward._cli.main import cli

    out = tmp_path_factory.mktemp("adk") / "run.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(EVAL_SET),
            "--agent",
            f"adk:{TRAVEL}",
            "--test-config",
            str(CONFIG),
            "--no-history",
            "--json",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 1, result.output  # rome_two_turns fails its trajectory in both tools
    run: dict[str, Any] = json.loads(out.read_text())
    return run


def test_per_case_scores_are_identical_to_adks(adk_scores: dict[str, Any], evalward_run: dict[str, Any]) -> None:
    compared = (
        "tool_trajectory_avg_score",
        "response_match_score",
        "tool_call_count_v1",
        "inference_call_count_v1",
        "token_usage_v1",
    )
    ours = {c["case_id"]: {k: v for k, v in c["metrics"].items() if k in compared} for c in evalward_run["cases"]}
    theirs = {case_id: {k: v for k, v in found.items() if k in compared} for case_id, found in adk_scores.items()}
    assert ours == theirs
    # Hand calculation, rome_two_turns: turn 1 trajectory [] = [] → 1.0; turn 2 search_flights(to=CDG) ≠
    # (to=FCO) → 0.0; mean 0.5. ROUGE turn 1 = 1.0; turn 2 "Flights from home to Rome found." (6 tokens) vs
    # "I found flights from home to Rome for you." (9): overlap 6, P = 1, R = 6/9, F = 0.8; mean 0.9.
    # Efficiency (ADK's per-turn averages): tool calls = mean calls per turn; the scripted agent calls no
    # model → 0 model requests and no token counts (n/a, None — never a fake 0).
    for case_id, found in adk_scores.items():
        per_turn = [len(calls) for calls in found["calls"]]
        assert ours[case_id]["tool_call_count_v1"] == sum(per_turn) / len(per_turn)
        assert (ours[case_id]["inference_call_count_v1"], ours[case_id]["token_usage_v1"]) == (0.0, None)
    assert (ours["rome_two_turns"]["tool_trajectory_avg_score"], ours["rome_two_turns"]["response_match_score"]) == (
        0.5,
        0.9,
    )
    assert ours["book_lisbon"]["tool_trajectory_avg_score"] == ours["book_lisbon"]["response_match_score"] == 1.0
    # informational: recorded without a threshold, never passed or failed
    for case in evalward_run["cases"]:
        efficiency = [m for m in case["metric_results"] if m["name"].endswith("_v1")]
        assert [m["name"] for m in efficiency] == [
            "tool_call_count_v1",
            "inference_call_count_v1",
            "token_usage_v1",
            "invocation_duration_v1",
        ]
        assert {m["status"] for m in efficiency} <= {"informational", "not_applicable"}
        assert all(m["threshold"] is None for m in efficiency)


def test_calls_and_responses_are_the_ones_adk_extracts(
    adk_scores: dict[str, Any], evalward_run: dict[str, Any]
) -> None:
    for case in evalward_run["cases"]:
        ours_calls = [[(c["name"], c["args"]) for c in i["actual_tool_calls"]] for i in case["invocations"]]
        assert ours_calls == adk_scores[case["case_id"]]["calls"]
        assert [i["actual_response"] for i in case["invocations"]] == adk_scores[case["case_id"]]["responses"]


def test_sub_agent_calls_are_attributed_and_the_session_state_is_seeded(evalward_run: dict[str, Any]) -> None:
    book = next(c for c in evalward_run["cases"] if c["case_id"] == "book_lisbon")
    [turn] = book["invocations"]
    assert [(c["name"], c["agent"], c["result"]) for c in turn["actual_tool_calls"]] == [
        ("transfer_to_agent", "travel_root", {"result": None}),
        ("search_flights", "flights", {"flights": 2}),
        ("book_flight", "flights", {"ok": True}),
    ]
    # `home` comes from the case's session_input.state.
    assert turn["actual_response"] == "Flights from SFO to Lisbon booked."
    # said after transfer_to_agent and search_flights, before book_flight
    assert turn["output"]["intermediate_responses"] == [
        {"author": "flights", "text": "Found 2 flights to LIS.", "calls_before": 2}
    ]
    assert turn["output"]["agents"] == ["travel_root", "flights"]
    assert turn["output"]["state"] == {"home": "SFO"}


def test_calls_inside_an_agent_tool_are_recorded(adk_scores: dict[str, Any]) -> None:
    agent = AdkAgent(f"adk:{PROJECT / 'helper_agent'}")

    async def go() -> Any:
        await agent.start()
        try:
            return await agent.run_turn(AgentRequest(case_id="c", turn=0, query="tide?", session_id="s"))
        finally:
            await agent.aclose()

    output = asyncio.run(go())
    # `search_web` ran inside the `researcher` agent tool's own runner: ADK's evaluation would list only
    # `researcher`; the observer plugin records both, in the order they happened.
    assert output.tool_calls == [
        ToolCall(
            name="researcher",
            args={"request": "when is high tide?"},
            agent="helper",
            id="r1",
            result={"result": "High tide at 6am."},
        ),
        ToolCall(name="search_web", args={"q": "tides"}, agent="researcher", id="w1", result={"r": "6am"}),
    ]
    assert output.response == "Answer: {'result': 'High tide at 6am.'}"  # the caller's answer, not the tool's


def test_make_agent_selects_the_adk_runner() -> None:
    agent = make_agent("adk:agents/shop")
    assert isinstance(agent, AdkAgent)
    assert agent.target.kind == "adk"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("adk:/no/such/dir_xyz", "importing /no/such/dir_xyz failed"),
        (f"adk:{PROJECT}", "has neither __init__.py nor agent.py"),
        (f"adk:{TRAVEL}:missing_agent", "no 'missing_agent' in"),
    ],
)
def test_bad_targets_fail_to_start_with_a_reason(target: str, message: str, adk_scores: dict[str, Any]) -> None:
    with pytest.raises(AgentStartError, match=message):
        asyncio.run(AdkAgent(target).start())


def test_adk_eval_cli_and_evalward_run_agree_per_case(evalward_run: dict[str, Any], tmp_path: Path) -> None:
    """The issue's proof as a user would run it: `adk eval` (ADK's own CLI) and `evalward run --agent adk:…`
    on the same agent, eval set and test_config give the same score per case and metric."""
    import re
    import shutil
    import subprocess

    adk = Path(sys.executable).parent / "adk"
    if not adk.exists():
        pytest.skip("the `adk` command (google-adk[eval]) is not installed")
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)  # adk eval writes .adk/eval_history under the agent folder
    completed = subprocess.run(
        [
            str(adk),
            "eval",
            str(project / "travel_agent"),
            str(project / "travel_agent" / "travel.evalset.json"),
            "--config_file_path",
            str(project / "travel_agent" / "test_config.json"),
            "--print_detailed_results",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=project,
    )
    output = completed.stdout + completed.stderr
    adk_cli: dict[str, dict[str, float]] = {}
    current = ""
    for line in output.splitlines():
        if match := re.match(r"\s*Eval Id: (\S+)", line):
            current = match.group(1)
        elif match := re.match(r"\s*Metric: (\w+), Status: \w+, Score: ([0-9.]+)", line):
            adk_cli.setdefault(current, {})[match.group(1)] = float(match.group(2))
    ours = {case["case_id"]: case["metrics"] for case in evalward_run["cases"]}
    assert set(adk_cli) == set(ours), output
    for case_id, metrics in ours.items():
        for name in ("tool_trajectory_avg_score", "response_match_score"):
            # adk eval prints scores rounded by Python's repr; compare at that precision
            assert adk_cli[case_id][name] == pytest.approx(metrics[name], abs=1e-9), (case_id, name, output)


# --- one Runner for every case -------------------------------------------------------------------------------
# `adk eval` builds a Runner per case; evalward builds one per run and gives each case × repetition a fresh
# session (its own id, seeded with the case's state). These tests prove that changes nothing a case can see.


def _outputs_by_case(runs: list[Any]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    return {
        (run.item.case.case_id, run.item.repetition): [output.model_dump() for output in run.outputs] for run in runs
    }


def test_one_shared_runner_gives_what_a_fresh_runner_per_case_gives() -> None:
    from evalward.loaders.load import load_file
    from evalward.runners.executor import ExecutorOptions, execute, plan_work

    eval_set = load_file(EVAL_SET)
    # book_lisbon seeds `home` from session_input.state; rome_two_turns has two turns in one session.
    assert [(c.case_id, len(c.turns)) for c in eval_set.cases] == [("book_lisbon", 1), ("rome_two_turns", 2)]
    items = plan_work([eval_set], repeat=4)

    async def shared() -> list[Any]:
        agent = AdkAgent(f"adk:{TRAVEL}")
        await agent.start()
        return (await execute(items, agent, ExecutorOptions(concurrency=8, repeat=4))).completed

    async def fresh_per_case() -> list[Any]:
        runs: list[Any] = []
        for item in items:  # one agent, so one Runner and one session service, per case, as `adk eval` does
            agent = AdkAgent(f"adk:{TRAVEL}")
            await agent.start()
            runs.extend((await execute([item], agent, ExecutorOptions(concurrency=1))).completed)
        return runs

    ours, theirs = asyncio.run(shared()), asyncio.run(fresh_per_case())
    assert all(run.error is None for run in [*ours, *theirs])
    assert _outputs_by_case(ours) == _outputs_by_case(theirs)
    book = _outputs_by_case(ours)[("book_lisbon", 3)]
    assert (book[0]["response"], book[0]["state"]) == ("Flights from SFO to Lisbon booked.", {"home": "SFO"})


def _diary_agent() -> Any:
    """An ADK agent that notes each query in its session state and answers with every note it sees."""
    from collections.abc import AsyncGenerator

    from google.adk.agents import BaseAgent
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.events import Event, EventActions
    from google.genai import types

    turns = itertools.count()

    class Diary(BaseAgent):
        async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
            query = " ".join(p.text or "" for p in (ctx.user_content.parts if ctx.user_content else None) or [])
            notes = [*ctx.session.state.get("notes", []), query]
            for _ in range(next(turns) % 3):  # let other cases' turns overtake this one, unevenly
                await asyncio.sleep(0)
            yield Event(
                invocation_id=ctx.invocation_id,
                author=self.name,
                content=types.Content(role="model", parts=[types.Part(text=" | ".join(notes))]),
                actions=EventActions(state_delta={"notes": notes}),
            )

    return Diary(name="diary")


def test_state_written_by_one_case_is_never_seen_by_another() -> None:
    from evalward.model import EvalCase, EvalSet, Invocation, SessionInput
    from evalward.runners.executor import ExecutorOptions, execute, plan_work

    cases = [
        EvalCase(
            case_id=f"c{n}",
            turns=[Invocation(query=f"c{n} first"), Invocation(query=f"c{n} second")],
            session_input=SessionInput(state={"notes": [f"c{n} seeded"]}) if n % 2 else None,
        )
        for n in range(12)
    ]
    items = plan_work([EvalSet(eval_set_id="diary", format="adk_evalset", cases=cases)], repeat=2)

    async def go() -> list[Any]:
        agent = AdkAgent("adk:unused", agent=_diary_agent())
        await agent.start()
        return (await execute(items, agent, ExecutorOptions(concurrency=8, repeat=2))).completed

    runs = asyncio.run(go())
    assert len(runs) == 24 and all(run.error is None for run in runs)
    for run in runs:
        n = run.item.case.case_id
        seeded = [f"{n} seeded"] if int(n[1:]) % 2 else []
        # Each case × repetition sees its own seed and its own earlier turn, and nothing of any other.
        assert [output.response for output in run.outputs] == [
            " | ".join([*seeded, f"{n} first"]),
            " | ".join([*seeded, f"{n} first", f"{n} second"]),
        ]
        assert run.final_state == {"notes": [*seeded, f"{n} first", f"{n} second"]}
