"""`replay:FILE` (runners/replay.py): recorded outputs re-scored by the pipeline without running the agent."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest
from tests.traces.otlp_builders import export, multi_agent_turn

from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.model import AgentRequest, RunResult
from evalward.run_json import render_json
from evalward.runners import AgentFailure, make_agent
from evalward.runners.replay import ReplayAgent, eval_set_of

EVAL_SET = textwrap.dedent(
    """\
    evalward: 1
    eval_set_id: shop
    metrics:
      - tool_trajectory_avg_score
      - agents_match
    cases:
      - id: refund_42
        query: Refund invoice 42
        expect:
          tool_calls:
            - {name: transfer_to_agent, args: {agent_name: billing}, agent: coordinator}
            - {name: refund, args: {invoice: 42}, agent: billing}
          agents: [coordinator, billing]
      - id: never_recorded
        query: hello
        expect: {tool_calls: []}
    """
)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def run(paths: list[Path], agent: str, repeat: int = 1) -> RunResult:
    prepared = prepare(RunOptions(paths=[str(p) for p in paths], agent=agent, repeat=repeat))
    return asyncio.run(run_prepared(prepared))


def test_make_agent_selects_the_replay_runner() -> None:
    agent = make_agent("replay:runs/last.json")
    assert isinstance(agent, ReplayAgent)
    assert agent.target.kind == "replay"
    assert agent.target.target == "replay:runs/last.json"


def test_otel_traces_are_scored_with_per_agent_attribution_and_missing_cases_error(tmp_path: Path) -> None:
    evals = write(tmp_path / "shop.evalward.yaml", EVAL_SET)
    traces = write(tmp_path / "traces.json", json.dumps(export(multi_agent_turn("1" * 32, case_id="refund_42"))))
    result = run([evals], f"replay:{traces}")
    by_case = {c.case_id: c for c in result.cases}
    refund = by_case["refund_42"]
    assert refund.status == "passed"
    assert refund.metrics == {"tool_trajectory_avg_score": 1.0, "agents_match": 1.0}
    missing = by_case["never_recorded"]
    assert missing.status == "error"
    assert missing.error.kind == "agent_error"
    assert missing.error.message == (f"no recorded output for case 'never_recorded' turn 0 repetition 0 in {traces}")


def test_replaying_a_run_json_reproduces_its_scores(tmp_path: Path) -> None:
    evals = write(tmp_path / "shop.evalward.yaml", EVAL_SET)
    agent_file = write(
        tmp_path / "agent.py",
        textwrap.dedent(
            """\
            def agent(request):
                if request["case_id"] == "refund_42":
                    # Half right: the refund is called by the wrong agent and the transfer is missing.
                    return {"response": "ok", "tool_calls": [{"name": "refund", "args": {"invoice": 42},
                            "agent": "coordinator"}]}
                return {"response": "hi"}
            """
        ),
    )
    original = run([evals], f"{agent_file}:agent", repeat=2)
    run_json = write(tmp_path / "run.json", render_json(original))
    replayed = run([evals], f"replay:{run_json}", repeat=2)

    def scores(result: RunResult) -> list[tuple[str, int, str, dict[str, float | None]]]:
        return [(c.case_id, c.repetition, c.status, c.metrics) for c in result.cases]

    assert scores(replayed) == scores(original)
    assert len(replayed.cases) == 4  # 2 cases x 2 repetitions, each replayed from its own recording
    # never_recorded: no calls expected, none made → 1.0; no agents expected → agents_match not applicable.
    assert scores(replayed)[0] == (
        "never_recorded",
        0,
        "passed",
        {"tool_trajectory_avg_score": 1.0, "agents_match": None},
    )
    # refund_42: EXACT trajectory 0.0 (1 call vs 2 expected); agents {coordinator} vs {coordinator, billing} → 0.
    assert scores(replayed)[2] == ("refund_42", 0, "failed", {"tool_trajectory_avg_score": 0.0, "agents_match": 0.0})


def test_a_recorded_failure_replays_as_the_same_kind_of_failure(tmp_path: Path) -> None:
    evals = write(tmp_path / "shop.evalward.yaml", EVAL_SET)
    agent_file = write(tmp_path / "agent.py", "def agent(request):\n    raise RuntimeError('db down')\n")
    original = run([evals], f"{agent_file}:agent")
    run_json = write(tmp_path / "run.json", render_json(original))
    replayed = run([evals], f"replay:{run_json}")
    errors = [
        (c.case_id, c.error.kind, c.error.message.startswith("recorded failure: RuntimeError: db down"))
        for c in replayed.cases
    ]
    assert errors == [("never_recorded", "agent_error", True), ("refund_42", "agent_error", True)]


def test_the_eval_set_is_read_from_the_executor_session_id() -> None:
    def request(session_id: str, case_id: str = "a/b", repetition: int = 1) -> AgentRequest:
        return AgentRequest(case_id=case_id, turn=0, query="", session_id=session_id, repetition=repetition)

    assert eval_set_of(request("my/set/a/b/r1/abc123")) == "my/set"
    assert eval_set_of(request("other-session")) is None
    assert eval_set_of(request("set/a/b/r0/abc")) is None  # repetition mismatch: not the executor's shape


def test_a_missing_recording_file_is_a_start_error(tmp_path: Path) -> None:
    from evalward.runners import AgentStartError

    agent = ReplayAgent(f"replay:{tmp_path / 'nope.json'}")
    with pytest.raises(AgentStartError, match="recording file not found"):
        asyncio.run(agent.start())


def test_cli_run_with_replay_exits_1_on_a_missing_case_and_names_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from evalward._cli.main import cli

    evals = write(tmp_path / "shop.evalward.yaml", EVAL_SET)
    traces = write(tmp_path / "traces.json", json.dumps(export(multi_agent_turn("1" * 32, case_id="refund_42"))))
    out = tmp_path / "run.json"
    result = CliRunner().invoke(
        cli, ["run", str(evals), "--agent", f"replay:{traces}", "--no-history", "--json", str(out), "-q"]
    )
    assert result.exit_code == 1, result.output
    assert "FAILED: 1 passed, 0 failed, 1 errors" in result.output
    assert json.loads(out.read_text())["agent"]["kind"] == "replay"


def test_replay_agent_raises_agent_failure_for_unknown_turns(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", '{"case_id": "c", "output": "x"}\n')
    agent = ReplayAgent(f"replay:{path.name}", cwd=tmp_path)
    request = AgentRequest(case_id="c", turn=1, query="", session_id="s")
    with pytest.raises(AgentFailure, match="no recorded output for case 'c' turn 1 repetition 0"):
        asyncio.run(agent.run_turn(request))
