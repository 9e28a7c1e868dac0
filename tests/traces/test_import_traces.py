"""`evalward import-traces` (cli/import_traces_cmd.py): traces → a stored, scored run in the history."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from click.testing import CliRunner
from tests.traces.otlp_builders import export, multi_agent_turn

from evalward._cli.import_traces_cmd import import_traces_command
from evalward.store import open_store

EVAL_SET = textwrap.dedent(
    """\
    evalward: 1
    eval_set_id: shop
    metrics: [tool_trajectory_avg_score, agents_match]
    cases:
      - id: refund_42
        query: Refund invoice 42
        expect:
          tool_calls:
            - {name: transfer_to_agent, args: {agent_name: billing}}
            - {name: refund, args: {invoice: 42}}
          agents: [coordinator, billing]
      - id: not_in_traces
        query: hello
        expect: {tool_calls: []}
    """
)


def setup_files(tmp_path: Path) -> tuple[Path, Path]:
    evals = tmp_path / "shop.evalward.yaml"
    evals.write_text(EVAL_SET, encoding="utf-8")
    traces = tmp_path / "traces.json"
    first = multi_agent_turn("1" * 32, case_id="refund_42")
    stray = multi_agent_turn("2" * 32, case_id="some_production_session")
    traces.write_text(json.dumps(export(first, stray)), encoding="utf-8")
    return evals, traces


def test_traces_become_a_stored_run_scored_with_the_eval_sets_criteria(tmp_path: Path) -> None:
    evals, traces = setup_files(tmp_path)
    db = f"sqlite:///{tmp_path}/h.db"
    result = CliRunner().invoke(
        import_traces_command,
        [str(traces), "--eval-set", str(evals), "--db", db, "--run-id", "prod-1", "--commit", "abc123"],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["FAILED: 1 passed, 0 failed, 1 errors", "run id: prod-1"]
    assert result.stderr == (
        "note: 1 recorded case id(s) match no eval case and are ignored: some_production_session\n"
    )
    with open_store(db) as store:
        run = store.load_run("prod-1")
    assert run.agent is not None and run.agent.kind == "replay"
    assert run.context.commit == "abc123"
    by_case = {c.case_id: c for c in run.cases}
    assert by_case["refund_42"].metrics == {"tool_trajectory_avg_score": 1.0, "agents_match": 1.0}
    assert by_case["not_in_traces"].error is not None
    assert by_case["not_in_traces"].error.message.startswith("no recorded output for case 'not_in_traces'")


def test_only_recorded_leaves_out_cases_without_traces(tmp_path: Path) -> None:
    evals, traces = setup_files(tmp_path)
    out = tmp_path / "run.json"
    result = CliRunner().invoke(
        import_traces_command,
        [
            str(traces),
            "--eval-set",
            str(evals),
            "--db",
            f"sqlite:///{tmp_path}/h.db",
            "--only-recorded",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "PASSED: 1 passed, 0 failed, 0 errors"
    assert [c["case_id"] for c in json.loads(out.read_text())["cases"]] == ["refund_42"]


def test_a_case_attribute_that_matches_nothing_is_a_usage_error(tmp_path: Path) -> None:
    evals, traces = setup_files(tmp_path)
    result = CliRunner().invoke(
        import_traces_command,
        [
            str(traces),
            "--eval-set",
            str(evals),
            "--db",
            f"sqlite:///{tmp_path}/h.db",
            "--only-recorded",
            "--case-attribute",
            "app.case",
        ],
    )
    assert result.exit_code != 0
    # Without app.case the conversation id (conv-1 for both traces) names the case.
    assert "none of the 1 recorded case id(s) is a case of the eval sets: conv-1" in str(result.exception)


def test_case_ids_are_counted_and_the_first_few_shown_without_holding_them_all() -> None:
    from evalward._cli.import_traces_cmd import first_sorted

    assert first_sorted(iter(["e", "b", "g", "a", "f", "c", "d"]), shown=3) == (7, ["a", "b", "c"])
    assert first_sorted(iter([])) == (0, [])


def test_traces_in_json_lines_are_imported_line_by_line(tmp_path: Path) -> None:
    evals, _ = setup_files(tmp_path)
    traces = tmp_path / "traces.jsonl"
    first = export(multi_agent_turn("1" * 32, case_id="refund_42"))
    stray = export(multi_agent_turn("2" * 32, case_id="some_production_session"))
    traces.write_text(json.dumps(first) + "\n" + json.dumps(stray) + "\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path}/h.db"
    result = CliRunner().invoke(import_traces_command, [str(traces), "--eval-set", str(evals), "--db", db])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "FAILED: 1 passed, 0 failed, 1 errors"
    assert result.stderr == (
        "note: 1 recorded case id(s) match no eval case and are ignored: some_production_session\n"
    )
