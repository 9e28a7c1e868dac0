"""ADK `conversation_scenario` cases end to end: `evalward validate` and `evalward run` (as a subprocess, as users
run it) on an ADK eval set that mixes a scripted case with two scenario cases, the fake OpenAI server playing
both the simulated user and the judge of `per_turn_user_simulator_quality_v1`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "fakes" / "data" / "scenario"
AGENT = ROOT / "tests" / "fakes" / "trip_agent.py"


def evalward(command: str, args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALWARD_"))},
        "EVALWARD_DB": f"sqlite:///{tmp_path}/history.db",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "evalward", command, *args],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )


def user_turns(body: dict[str, Any]) -> int:
    """How many user messages the simulator has seen in the conversation so far."""
    return body["messages"][-1]["content"].count("\nuser: ") + body["messages"][-1]["content"].count(":\nuser: ")


def fake_model(body: dict[str, Any]) -> Reply:
    """Plays the simulated user (asks for Paris, then ends) and judges every simulated user turn valid."""
    system = body["messages"][0]["content"]
    if system.startswith("You check the quality of a USER SIMULATOR"):
        return Reply.json({"reasoning": "follows the plan", "is_valid": True})
    history = body["messages"][-1]["content"].split("CONVERSATION SO FAR:\n", 1)[1]
    if "Here is your plan" in history:
        return Reply.text("Great, thank you! </finished>")
    return Reply.text("A 3 day trip to Paris, please.")


def copy_data(tmp_path: Path) -> Path:
    folder = tmp_path / "evals"
    shutil.copytree(DATA, folder)
    return folder


def test_validate_accepts_a_file_mixing_scripted_and_scenario_cases(tmp_path: Path) -> None:
    result = evalward("validate", [str(copy_data(tmp_path))], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trip_planner" in result.stdout


def test_a_simulated_conversation_runs_end_to_end(tmp_path: Path) -> None:
    evals = copy_data(tmp_path)
    with FakeOpenAI(models=["user-model", "judge-model"]) as fake:
        fake.responder = fake_model
        args = [str(evals), "--agent", f"{AGENT}:run", "--user-model", "user-model", "-j", "1"]
        result = evalward("run", [*args, "--json", str(tmp_path / "run.json")], tmp_path, OPENAI_BASE_URL=fake.base_url)
        requests = fake.completions()

    assert result.returncode == 0, result.stdout + result.stderr
    # Per scenario case: 2 simulator calls (after turns 1 and 2) + 2 judge calls (turn 2 and the ending).
    simulator_calls = [r for r in requests if r.body and r.body["model"] == "user-model"]
    judge_calls = [r for r in requests if r.body and r.body["model"] == "judge-model"]
    assert (len(simulator_calls), len(judge_calls)) == (4, 4)
    assert "user simulator: 4 replies, 4 requests, 40 in / 20 out tokens" in result.stdout

    run = json.loads((tmp_path / "run.json").read_text())
    cases = {c["case_id"]: c for c in run["cases"]}
    assert {c: cases[c]["status"] for c in cases} == {
        "greeting": "passed",
        "paris_weekend": "passed",
        "paris_novice": "passed",
    }
    weekend = cases["paris_weekend"]
    # The conversation as played is stored like scripted turns: what the user said, what the agent did.
    assert [t["query"] for t in weekend["invocations"]] == ["I want to plan a trip.", "A 3 day trip to Paris, please."]
    assert [t["actual_response"] for t in weekend["invocations"]] == [
        "Where would you like to go, and for how many days?",
        "Here is your plan: 3 days in Paris with the Louvre, Orsay and Montmartre.",
    ]
    assert weekend["invocations"][1]["actual_tool_calls"][0]["name"] == "plan_trip"
    simulation = weekend["simulation"]
    assert (simulation["ended_by"], simulation["user_turns"], simulation["max_turns"]) == ("stop_signal", 2, 4)
    assert simulation["model"] == "user-model" and simulation["last_reply"] == "Great, thank you! </finished>"
    metrics = {m["name"]: m for m in weekend["metric_results"]}
    # No reference conversation: ADK's reference metrics do not apply (never a 0).
    assert metrics["tool_trajectory_avg_score"]["status"] == "not_applicable"
    assert metrics["response_match_score"]["status"] == "not_applicable"
    quality = metrics["per_turn_user_simulator_quality_v1"]
    assert (quality["score"], quality["status"]) == (1.0, "passed")
    assert quality["explanation"].startswith("valid simulated-user turns: (1 + 1)/2 = 1.000")
    # The scripted case is scored as before, and the simulator's judge does not apply to it.
    greeting = {m["name"]: m for m in cases["greeting"]["metric_results"]}
    assert greeting["response_match_score"]["score"] == 1.0
    assert greeting["per_turn_user_simulator_quality_v1"]["status"] == "not_applicable"
    assert cases["greeting"]["simulation"] is None
    # The NOVICE persona reaches the simulator.
    novice_prompt = simulator_calls[-1].body["messages"][0]["content"] if simulator_calls[-1].body else ""
    assert "PERSONA" in novice_prompt and "novice" in novice_prompt.lower()


def test_without_a_user_model_scenario_cases_error_and_scripted_ones_still_run(tmp_path: Path) -> None:
    evals = copy_data(tmp_path)
    config = json.loads((evals / "test_config.json").read_text())
    del config["criteria"]["per_turn_user_simulator_quality_v1"]
    (evals / "test_config.json").write_text(json.dumps(config))
    result = evalward("run", [str(evals), "--agent", f"{AGENT}:run", "--json", str(tmp_path / "run.json")], tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    cases = {c["case_id"]: c for c in json.loads((tmp_path / "run.json").read_text())["cases"]}
    assert cases["greeting"]["status"] == "passed"
    for case_id in ("paris_weekend", "paris_novice"):
        assert cases[case_id]["status"] == "error"
        assert cases[case_id]["error"]["kind"] == "simulator_error"
        assert "pass --user-model" in cases[case_id]["error"]["message"]


def test_the_turn_limit_is_recorded(tmp_path: Path) -> None:
    evals = copy_data(tmp_path)
    with FakeOpenAI(models=["user-model", "judge-model"]) as fake:
        fake.responder = lambda body: (
            fake_model(body) if body["model"] == "judge-model" else Reply.text("Hmm, what else?")
        )
        args = [str(evals), "--agent", f"{AGENT}:run", "--user-model", "user-model", "--user-max-turns", "3"]
        result = evalward("run", [*args, "--json", str(tmp_path / "run.json")], tmp_path, OPENAI_BASE_URL=fake.base_url)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = {c["case_id"]: c for c in json.loads((tmp_path / "run.json").read_text())["cases"]}
    simulation = cases["paris_weekend"]["simulation"]
    assert (simulation["ended_by"], simulation["user_turns"], simulation["max_turns"]) == ("turn_limit", 3, 3)
    assert len(cases["paris_weekend"]["invocations"]) == 3


def test_resuming_a_run_does_not_replay_finished_conversations(tmp_path: Path) -> None:
    """A run whose scenario case never finished (the process was killed) resumes only that case."""
    evals = copy_data(tmp_path)
    with FakeOpenAI(models=["user-model", "judge-model"]) as fake:
        fake.responder = fake_model
        args = [str(evals), "--agent", f"{AGENT}:run", "--user-model", "user-model", "--commit", "a" * 40]
        first = evalward("run", args, tmp_path, OPENAI_BASE_URL=fake.base_url)
        assert first.returncode == 0, first.stdout + first.stderr
        # As if killed before paris_novice was stored: drop its result and reopen the run.
        with sqlite3.connect(tmp_path / "history.db") as conn:
            run_id = conn.execute("SELECT run_id FROM runs").fetchone()[0]
            conn.execute("DELETE FROM case_results WHERE case_id = 'paris_novice'")
            conn.execute("DELETE FROM metric_scores WHERE case_id = 'paris_novice'")
            conn.execute("UPDATE runs SET status = 'running'")
        before = len(fake.completions())
        resumed = evalward("run", [*args, "--resume", run_id], tmp_path, OPENAI_BASE_URL=fake.base_url)
        asked = fake.completions()[before:]
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # Only paris_novice is played again: 2 simulator calls (its judge verdicts come from the judge cache, since
    # the simulated conversation came out the same).
    assert [r.body["model"] for r in asked if r.body] == ["user-model"] * 2
    assert "judge: 2 replies (2 cached), 0 requests" in resumed.stdout
    with sqlite3.connect(tmp_path / "history.db") as conn:
        rows = conn.execute("SELECT case_id FROM case_results WHERE run_id = ?", (run_id,)).fetchall()
    assert sorted(r[0] for r in rows) == ["greeting", "paris_novice", "paris_weekend"]
