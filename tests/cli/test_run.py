"""`evalward run` and `evalward validate` through click's runner: exit codes and exact messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli_process import run_cli

ROOT = Path(__file__).resolve().parents[2]
DICE = ROOT / "examples" / "dice_agent"


def test_dice_example_passes_and_writes_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [
            "run",
            str(DICE),
            "--agent",
            f"{DICE}/agent.py:root_agent",
            "--json",
            str(out / "run.json"),
            "--junit",
            str(out / "junit.xml"),
            "--markdown",
            str(out / "comment.md"),
        ],
        tmp_path,
    )
    assert code == 0, stdout + stderr
    run = json.loads((out / "run.json").read_text())
    assert run["schema_version"] == 1
    assert {c["eval_set"] for c in run["cases"]} == {"dice", "dice_basic"}
    assert run["passed"] is True
    # 2 eval sets: the legacy test file (1 case) and the current eval set (2 cases).
    assert sorted(c["case_id"] for c in run["cases"]) == sorted(
        [
            "examples/dice_agent/dice.test.json",  # its path in the repository, however it was typed
            "roll_16_sided_dice_and_then_check_if_6151953_is_prime",
            "roll_17_sided_dice_twice",
        ]
    )
    assert set(run["summary"]) >= {"tool_trajectory_avg_score", "response_match_score"}
    assert run["summary"]["tool_trajectory_avg_score"]["mean"] == 1.0
    assert "<testsuite" in (out / "junit.xml").read_text()
    assert (out / "comment.md").read_text().strip()


def test_wrong_agent_fails_with_exit_1(tmp_path: Path) -> None:
    agent = tmp_path / "lazy_agent.py"
    agent.write_text("def run(request):\n    return {'response': 'no idea'}\n")
    code, stdout, stderr = run_cli(["run", str(DICE / "dice.evalset.json"), "--agent", f"{agent}:run"], tmp_path)
    assert code == 1, stdout + stderr


def test_agent_that_cannot_start_is_infrastructure_exit_3(tmp_path: Path) -> None:
    code, _, stderr = run_cli(["run", str(DICE), "--agent", "no_such_module_xyz:run"], tmp_path)
    assert code == 3
    assert "no_such_module_xyz" in stderr


def test_bad_input_is_exit_2_with_location(tmp_path: Path) -> None:
    bad = tmp_path / "bad.test.json"
    bad.write_text('[{"query": "hi",\n  "expected_tool_use": [}\n]')
    code, _, stderr = run_cli(["validate", str(bad)], tmp_path)
    assert code == 2
    assert f"{bad}:2:" in stderr


def test_judge_criteria_stop_before_running(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "a.test.json").write_text((DICE / "dice.test.json").read_text())
    (tmp_path / "evals" / "test_config.json").write_text(
        json.dumps({"criteria": {"final_response_match_v2": {"threshold": 0.8}}})
    )
    code, _, stderr = run_cli(["run", str(tmp_path / "evals"), "--agent", f"{DICE}/agent.py:root_agent"], tmp_path)
    assert code == 3
    assert "final_response_match_v2 need a judge model" in stderr


def test_validate_lists_sets(tmp_path: Path) -> None:
    code, stdout, _ = run_cli(["validate", str(DICE)], tmp_path)
    assert code == 0
    assert "[adk_legacy_test]" in stdout and "[adk_evalset]" in stdout


@pytest.mark.parametrize("shard", ["0/2", "3/2", "x"])
def test_bad_shard_is_usage_error(shard: str, tmp_path: Path) -> None:
    code, _, stderr = run_cli(["run", str(DICE), "--agent", f"{DICE}/agent.py:root_agent", "--shard", shard], tmp_path)
    assert code == 2
    assert "expected I/N" in stderr


def test_answers_evalward_cannot_read_are_one_warning_in_the_report(tmp_path: Path) -> None:
    agent = tmp_path / "shapeless_agent.py"
    agent.write_text("def run(request):\n    return {'answer': '6.2', 'tools_used': ['add']}\n")
    dataset = ROOT / "tests/loaders/fixtures/benchmarks/multiverse_math.eval.json"
    code, stdout, stderr = run_cli(["run", str(dataset), "--agent", f"{agent}:run", "--no-history"], tmp_path)
    assert code == 1, stdout + stderr
    [line] = [line for line in stdout.splitlines() if line.startswith("warning: agent output")]
    assert line == (
        "warning: agent output: 4 of 4 case runs had an answer with no response, tool calls or steps (scored as "
        "empty); evalward reads `response`/`tool_calls`, a string, or `output`/`intermediate_steps` (langchain); "
        "first: case '0b3e0f5c-5a1d-4c52-9d0e-2f1c8a7b6e01' turn 0, keys 'answer', 'tools_used'"
    )


# --- run control: FILE:IDS, --case, --sample ---------------------------------------------------------------------

DICE_IDS = ["roll_16_sided_dice_and_then_check_if_6151953_is_prime", "roll_17_sided_dice_twice"]


def run_json(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = tmp_path / "run.json"
    agent = f"{DICE}/agent.py:root_agent"
    completed = subprocess.run(
        [sys.executable, "-m", "evalward", "run", *args, "--agent", agent, "--json", str(out), "--no-history", "-q"],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    data: dict[str, object] = json.loads(out.read_text())
    return data


def case_ids(run: dict[str, object]) -> list[str]:
    cases = run["cases"]
    assert isinstance(cases, list)
    return [c["case_id"] for c in cases]


def test_adk_file_colon_ids_selects_those_cases(tmp_path: Path) -> None:
    run = run_json(tmp_path, f"{DICE}/dice.evalset.json:{DICE_IDS[1]}")
    assert case_ids(run) == [DICE_IDS[1]]
    assert run["case_selection"] == f"{DICE}/dice.evalset.json:{DICE_IDS[1]}"


def test_unknown_ids_exit_2_listing_the_ids_the_file_has(tmp_path: Path) -> None:
    code, _, stderr = run_cli(
        ["run", f"{DICE}/dice.evalset.json:roll_6_sided", "--agent", f"{DICE}/agent.py:root_agent"], tmp_path
    )
    assert code == 2
    assert f"no case 'roll_6_sided' in this file (selected with {DICE}/dice.evalset.json:IDS)" in stderr
    assert f"ids of its cases: {DICE_IDS[0]!r}, {DICE_IDS[1]!r}" in stderr


def test_case_patterns_and_a_sample_choose_the_same_cases_every_run(tmp_path: Path) -> None:
    run = run_json(tmp_path, str(DICE), "--case", "roll_1*", "--case", "*prime")
    assert sorted(case_ids(run)) == DICE_IDS
    assert run["case_selection"] == "--case 'roll_1*' --case '*prime' (2 of 3 cases)"
    sampled = [case_ids(run_json(tmp_path, str(DICE), "--sample", "2", "--repeat", "2")) for _ in range(2)]
    assert sampled[0] == sampled[1] and len(set(sampled[0])) == 2 and len(sampled[0]) == 4  # 2 cases × 2 repetitions
    # EVALWARD_CASE holds several patterns separated by spaces, as the Action's `case` input passes them
    from_env = run_json(tmp_path, str(DICE), env={"EVALWARD_CASE": "roll_17* *prime"})
    assert sorted(case_ids(from_env)) == DICE_IDS


def test_a_case_pattern_matching_nothing_exits_2(tmp_path: Path) -> None:
    code, _, stderr = run_cli(
        ["run", str(DICE), "--case", "roll_99*", "--agent", f"{DICE}/agent.py:root_agent"], tmp_path
    )
    assert code == 2
    assert "--case 'roll_99*': no case id matches; the case ids are: " in stderr
