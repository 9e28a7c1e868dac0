"""`evalward record` and `evalward convert` through the real CLI entry point (exit codes, files, messages)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner

from evalward._cli.main import cli
from evalward.loaders import load_paths
from evalward.model import ToolCall

FIXTURES = Path(__file__).resolve().parents[1] / "loaders" / "fixtures"

AGENT = textwrap.dedent(
    """\
    def agent(request):
        query = request["query"]
        if query == "explode":
            raise RuntimeError("kaboom")
        if query.startswith("weather"):
            city = query.split()[-1]
            return {"response": f"Sunny in {city}.", "tool_calls": [
                {"name": "get_weather", "args": {"city": city}, "id": "call-xyz", "result": {"sky": "clear"}}]}
        return {"response": f"echo: {query}", "state": {"seen": query}}
    """
)


def invoke(args: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_record_writes_an_adk_eval_set_with_observed_calls_and_lists_failures(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    inputs = tmp_path / "inputs.txt"
    inputs.write_text("weather in Paris\nhello\nexplode\n", encoding="utf-8")
    out = tmp_path / "evals" / "shop.evalset.json"
    code, stdout, stderr = invoke(
        ["record", "--agent", f"{tmp_path / 'agent.py'}:agent", "--inputs", str(inputs), "--out", str(out)]
    )
    assert code == 1  # one case failed; the others are still written
    assert stdout == f"recorded 2 of 3 case(s) to {out}; review the expectations before committing them\n"
    assert stderr.startswith("not recorded: case 'case_003' turn 0: agent_error: RuntimeError: kaboom (at ")
    document = json.loads(out.read_text())
    assert document["eval_set_id"] == "shop"
    assert document["description"].startswith(f"Recorded by evalward from {tmp_path / 'agent.py'}:agent on ")
    first = document["eval_cases"][0]
    assert first["eval_id"] == "case_001"
    # The call id and result are dropped: ids change every run, results are not expectations.
    assert first["conversation"][0]["intermediate_data"] == {
        "tool_uses": [{"args": {"city": "Paris"}, "name": "get_weather"}]
    }
    # The recorded file loads as an ADK eval set and replays to itself.
    [loaded] = load_paths([out]).sets
    assert loaded.format == "adk_evalset"
    assert loaded.cases[0].turns[0].expected_tool_calls == [ToolCall(name="get_weather", args={"city": "Paris"})]
    assert loaded.cases[1].turns[0].expected_response == "echo: hello"
    assert loaded.cases[1].expected_state == {"seen": "hello"}


def test_record_from_an_eval_file_to_native_keeps_ids_and_refreshes_expectations(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    inputs = tmp_path / "old.eval.yaml"
    inputs.write_text(
        "evalward: 1\ncases:\n  - id: paris\n    query: weather in Paris\n    expect: {response: Rainy.}\n",
        encoding="utf-8",
    )
    out = tmp_path / "new.eval.yaml"
    code, stdout, _ = invoke(
        ["record", "-a", f"{tmp_path / 'agent.py'}:agent", "--inputs", str(inputs), "--out", str(out)]
    )
    assert code == 0, stdout
    [loaded] = load_paths([out]).sets
    assert loaded.eval_set_id == "new"
    turn = loaded.cases[0].turns[0]
    assert (loaded.cases[0].case_id, turn.expected_response) == ("paris", "Sunny in Paris.")
    # Native criteria follow the recorded expectations: calls → trajectory, response → ROUGE (informational).
    assert [m.describe() for m in loaded.criteria.metrics] == ["tool_trajectory_avg_score>=1", "response_rouge1"]


def test_convert_legacy_adk_to_current_adk_writes_the_set_and_its_criteria(tmp_path: Path) -> None:
    out = tmp_path / "out" / "trip.evalset.json"
    code, stdout, stderr = invoke(
        ["convert", str(FIXTURES / "adk/trip_planner_agent/trip_inquiry.test.json"), "--to", "adk", "--out", str(out)]
    )
    assert code == 0, stderr
    assert stdout == ""
    assert stderr == f"wrote {out}\nwrote {out.parent / 'test_config.json'}\n"
    [loaded] = load_paths([out]).sets
    assert loaded.format == "adk_evalset"
    assert json.loads((out.parent / "test_config.json").read_text()) == {"criteria": {"response_match_score": 0.5}}


def test_convert_to_stdout_lists_what_adk_cannot_express_and_strict_fails(tmp_path: Path) -> None:
    source = str(FIXTURES / "multi_agent/agents.eval.json")
    code, stdout, stderr = invoke(["convert", source, "--to", "adk"])
    assert code == 0
    assert json.loads(stdout)["eval_cases"]
    lines = stderr.splitlines()
    assert lines[0].startswith("not expressible in adk (agents): case ")
    assert lines[-1].endswith("item(s) could not be expressed in adk (listed above)")
    code, _, _ = invoke(["convert", source, "--to", "adk", "--strict"])
    assert code == 1


def test_convert_langsmith_to_native_json_in_a_directory(tmp_path: Path) -> None:
    code, _, stderr = invoke(
        [
            "convert",
            str(FIXTURES / "langsmith/router.eval.jsonl"),
            "--to",
            "native",
            "--syntax",
            "json",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0, stderr
    [written] = list(tmp_path.glob("*.eval.json"))
    assert json.loads(written.read_text())["evalward"] == 1
    assert load_paths([written]).sets[0].format == "native"


def test_the_commands_are_registered() -> None:
    code, stdout, _ = invoke(["--help"])
    assert code == 0
    for name in ("record", "convert", "import-traces"):
        assert f"  {name} " in stdout
