"""`evalward validate` needs no judge model (issue #30, row 11).

ADK's conversation_scenario fixture asks for `hallucinations_v1` in its test_config.json and names no judge model.
Validating it used to stop with the run's error, exit 3 ("criteria hallucinations_v1 need a judge model"); now it
is valid (exit 0) with a warning that `evalward run` will need a judge, while the run itself still refuses to start
without one. No configuration of a judged criterion makes `validate` exit 3 or report an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# ADK's format (docs/formats.md §3): a case with a conversation_scenario instead of scripted turns, and
# `"session_input": null` as ADK's own fixture writes it.
SCENARIO_SET = {
    "eval_set_id": "trip_scenarios",
    "eval_cases": [
        {
            "eval_id": "weekend_in_lisbon",
            "conversation_scenario": {
                "starting_prompt": "Hello, can you help me plan a trip?",
                "conversation_plan": "Ask for a two-night weekend in Lisbon in May, then accept the first plan.",
            },
            "session_input": None,
        }
    ],
}
SCENARIO_CONFIG = {
    "criteria": {"hallucinations_v1": {"threshold": 0.8}},
    "user_simulator_config": {"model": "gemini-2.5-flash", "max_allowed_invocations": 10},
}
HOW = (
    "pass --judge-model (EVALWARD_JUDGE_MODEL) with --judge-base-url (or OPENAI_BASE_URL) pointing at an "
    "OpenAI-compatible endpoint, set judge_model_options.judge_model in the criteria, or remove them"
)


def evalward(cwd: Path, *args: str) -> tuple[int, str, str]:
    # No judge anywhere: neither the judge's variables nor a debug switch that would print tracebacks.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "OPENAI_"))}
    completed = subprocess.run(
        [sys.executable, "-m", "evalward", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    return completed.returncode, completed.stdout, completed.stderr


def write_scenario(folder: Path, config: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conversation_scenario.test.json").write_text(json.dumps(SCENARIO_SET, indent=2), encoding="utf-8")
    (folder / "test_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def test_the_scenario_fixture_is_valid_with_a_warning_that_the_run_needs_a_judge(tmp_path: Path) -> None:
    write_scenario(tmp_path / "scenario", SCENARIO_CONFIG)
    code, stdout, stderr = evalward(tmp_path, "validate", "scenario")
    assert code == 0, stdout + stderr
    assert stdout.splitlines() == [
        "ok  scenario/conversation_scenario.test.json  [adk_evalset]  set 'trip_scenarios': 1 cases, 1 turns; "
        "criteria (test_config): hallucinations_v1>=0.8"
    ]
    assert stderr.splitlines() == [
        "warning: scenario/test_config.json: criteria hallucinations_v1 are scored by an LLM judge and name no judge "
        f"model; `evalward run` will need one: {HOW}"
    ]


def test_the_run_still_refuses_to_start_without_a_judge(tmp_path: Path) -> None:
    write_scenario(tmp_path / "scenario", SCENARIO_CONFIG)
    (tmp_path / "agent.py").write_text("def run(request):\n    return {'response': 'ok'}\n", encoding="utf-8")
    code, stdout, stderr = evalward(tmp_path, "run", "scenario", "--agent", "agent.py:run", "--no-history")
    assert code == 3, stdout + stderr
    assert stderr.splitlines()[-1] == (
        f"error: criteria hallucinations_v1 need a judge model, and no judge is configured; {HOW}"
    )


def test_a_criterion_naming_its_judge_model_gets_no_warning(tmp_path: Path) -> None:
    config = {
        "criteria": {"hallucinations_v1": {"threshold": 0.8, "judge_model_options": {"judge_model": "gpt-4o-mini"}}}
    }
    write_scenario(tmp_path / "scenario", config)
    code, stdout, stderr = evalward(tmp_path, "validate", "scenario")
    assert (code, stderr) == (0, "")
    assert stdout.startswith("ok  scenario/conversation_scenario.test.json  [adk_evalset]")


def test_each_set_is_warned_about_at_the_file_that_asks_for_the_judge(tmp_path: Path) -> None:
    write_scenario(tmp_path / "scenario", {"criteria": {"safety_v1": 1.0, "per_turn_user_simulator_quality_v1": 1.0}})
    (tmp_path / "native.eval.yaml").write_text(
        "evalward: 1\n"
        "cases:\n"
        "  - {id: plain, query: hi, expect: {response: hi}}\n"
        "  - id: judged\n"
        "    query: hi\n"
        "    metrics: [{name: llm_judge, threshold: 0.5, rubric: 'Is the answer polite?'}]\n",
        encoding="utf-8",
    )
    (tmp_path / "plain.eval.yaml").write_text(
        "evalward: 1\ncases:\n  - {id: a, query: hi, expect: {response: hi}}\n", encoding="utf-8"
    )
    code, stdout, stderr = evalward(tmp_path, "validate", "scenario", "native.eval.yaml", "plain.eval.yaml")
    assert code == 0, stdout + stderr
    assert len(stdout.splitlines()) == 3
    assert stderr.splitlines() == [
        "warning: scenario/test_config.json: criteria per_turn_user_simulator_quality_v1, safety_v1 are scored by an "
        f"LLM judge and name no judge model; `evalward run` will need one: {HOW}",
        "warning: native.eval.yaml: criteria llm_judge are scored by an LLM judge and name no judge model; "
        f"`evalward run` will need one: {HOW}",
    ]


@pytest.mark.parametrize(
    ("criterion", "code", "said"),
    [
        ({"hallucinations_v1": 0.8}, 0, "criteria hallucinations_v1 are scored by an LLM judge"),
        ({"hallucinations_v1": {"threshold": 0.8, "judge_model_options": None}}, 0, "name no judge model"),
        ({"hallucinations_v1": {"threshold": 0.8, "judge_model_options": {"judge_model": 3}}}, 2, "valid string"),
        ({"hallucinations_v1": {"threshold": 0.8, "judge_model_options": {"judge_model": ""}}}, 2, "non-empty"),
        ({"hallucinations_v1": {"threshold": 0.8, "judge_model_options": {"num_samples": 0}}}, 2, "greater than"),
        ({"hallucinations_v1": {"threshold": 0.8, "judge_model_options": "gpt-4o"}}, 2, "valid dictionary"),
        ({"hallucinations_v1": {}}, 2, "needs a threshold"),
        ({"hallucinations_v1": {"threshold": 2}}, 2, "between 0 and 1"),
        ({"rubric_based_final_response_quality_v1": {"threshold": 0.8}}, 2, "need 'rubrics'"),
        ({"per_turn_user_simulator_quality_v1": {"threshold": 1.0, "stop_signal": 5}}, 2, "valid string"),
        ({"multi_turn_task_success_v1": 1.0}, 2, "needs Vertex AI"),
    ],
)
def test_no_judge_configuration_is_exit_3_or_an_internal_error(
    tmp_path: Path, criterion: dict[str, Any], code: int, said: str
) -> None:
    write_scenario(tmp_path / "scenario", {"criteria": criterion})
    got, stdout, stderr = evalward(tmp_path, "validate", "scenario")
    assert (got, "internal error" in stderr) == (code, False), stdout + stderr
    assert said in stderr
