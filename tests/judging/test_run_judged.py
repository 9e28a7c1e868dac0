"""`evalward run` end to end with judges, single-step and step-by-step evaluation, against the fake server.

The CLI runs as a subprocess (as users run it); the fake OpenAI server answers on a real socket from this
process, so request counts prove what the run asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCallReply

ROOT = Path(__file__).resolve().parents[2]
MUSIC = ROOT / "examples" / "music_store"


def evalward(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALWARD_"))},
        "EVALWARD_DB": f"sqlite:///{tmp_path}/history.db",
        "MUSIC_STORE_DB": str(tmp_path / "music.db"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "evalward", "run", *args],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )


def grader(body: dict[str, Any]) -> Reply:
    """Judges like a strict teacher: correct iff the student's answer contains the reference's key number/name."""
    user = body["messages"][1]["content"]
    truth = user.split("GROUND TRUTH RESPONSE: ")[1].split("\nSTUDENT RESPONSE: ")[0]
    student = user.split("\nSTUDENT RESPONSE: ")[1]
    key = next((w for w in ("20", "Pink Floyd", "$2.97") if w in truth), truth)
    return Reply.json({"reasoning": f"looked for {key!r} in the student response", "is_correct": key in student})


def test_judged_music_store_runs_and_a_rerun_makes_no_judge_calls(tmp_path: Path) -> None:
    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = grader
        args = [str(MUSIC / "judged.json"), "--agent", f"{MUSIC}/agent.py:run_graph", "--judge-model", "judge-model"]
        first = evalward([*args, "--json", str(tmp_path / "run.json")], tmp_path, OPENAI_BASE_URL=fake.base_url)
        calls_after_first = len(fake.completions())
        second = evalward(args, tmp_path, OPENAI_BASE_URL=fake.base_url)
        calls_after_second = len(fake.completions())

    assert first.returncode in (0, 1), first.stdout + first.stderr
    # 4 cases x 1 sample (answer_correctness defaults to one) = 4 judge requests
    assert calls_after_first == 4
    assert calls_after_second == 4  # the re-run was served from the cache
    assert "judge: 4 replies (0 cached), 4 requests" in first.stdout
    assert "judge: 4 replies (4 cached), 0 requests" in second.stdout
    run = json.loads((tmp_path / "run.json").read_text())
    by_case = {c["case_id"]: c for c in run["cases"]}
    verdict = next(m for m in by_case["james-brown-song-count"]["metric_results"] if m["name"] == "answer_correctness")
    assert verdict["details"]["reasoning"] == "looked for '20' in the student response"
    # The judge's identity is recorded with the criteria, so the gate never compares different judges.
    criteria = {c["name"]: c for c in run["eval_sets"][0]["criteria"]}
    assert criteria["answer_correctness"]["options"]["judge"]["model"] == "judge-model"


def test_a_different_judge_model_changes_the_fingerprint(tmp_path: Path) -> None:
    fingerprints = []
    with FakeOpenAI(models=["a", "b"]) as fake:
        fake.responder = grader
        for model in ("a", "b"):
            out = tmp_path / f"{model}.json"
            args = [str(MUSIC / "judged.json"), "--agent", f"{MUSIC}/agent.py:run_graph", "--judge-model", model]
            evalward([*args, "--no-history", "--json", str(out)], tmp_path, OPENAI_BASE_URL=fake.base_url)
            fingerprints.append(json.loads(out.read_text())["fingerprint"])
    assert fingerprints[0] != fingerprints[1]


def test_unreachable_judge_stops_before_running(tmp_path: Path) -> None:
    marker = tmp_path / "agent_ran"
    agent = tmp_path / "agent.py"
    agent.write_text(f"def run(request):\n    open({str(marker)!r}, 'w').close()\n    return 'hi'\n")
    completed = evalward(
        [str(MUSIC / "judged.json"), "--agent", f"{agent}:run", "--judge-model", "m"],
        tmp_path,
        EVALWARD_JUDGE_BASE_URL="http://127.0.0.1:9/v1",
        OPENAI_API_KEY="sk-never-printed",
    )
    assert completed.returncode == 3, completed.stdout + completed.stderr
    assert "criteria answer_correctness need a judge, and the judge is unreachable" in completed.stderr
    assert "sk-never-printed" not in completed.stdout + completed.stderr
    assert not marker.exists()


def test_judged_example_against_a_configured_endpoint(tmp_path: Path) -> None:
    """Runs only when OPENAI_BASE_URL points at a real OpenAI-compatible endpoint (and a judge model is named)."""
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        pytest.skip("OPENAI_BASE_URL is not set: the judged music-store example needs an OpenAI-compatible endpoint")
    model = os.environ.get("EVALWARD_JUDGE_MODEL", "gpt-4o-mini")
    completed = evalward(
        [str(MUSIC / "judged.json"), "--agent", f"{MUSIC}/agent.py:run_graph", "--judge-model", model, "--no-history"],
        tmp_path,
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY", ""),
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    assert "answer_correctness" in completed.stdout


def test_router_single_step_prints_a_confusion_table(tmp_path: Path) -> None:
    markdown = tmp_path / "comment.md"
    completed = evalward(
        [
            str(MUSIC / "router.jsonl"),
            "--agent",
            f"{MUSIC}/agent.py:classify_intent",
            "--step",
            "--markdown",
            str(markdown),
        ],
        tmp_path,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert (
        "route: 4/4 correct (100.0%)\n"
        "  expected \\ actual         question_answering_agent  refund_agent  recall\n"
        "  question_answering_agent                         3             0  3/3\n"
        "  refund_agent                                     0             1  1/1\n"
    ) in completed.stdout
    assert "| refund\\_agent | 0 | 1 | 1/1 |" in markdown.read_text()


def test_step_mode_shows_a_wrong_route(tmp_path: Path) -> None:
    agent = tmp_path / "router.py"
    agent.write_text("def route(request):\n    return {'route': 'refund_agent'}\n")
    completed = evalward([str(MUSIC / "router.jsonl"), "--agent", f"{agent}:route", "--step", "--no-history"], tmp_path)
    assert completed.returncode == 1
    # hand calculation: only the one refund case is right -> 1/4; all 3 QA cases went to refund
    assert "route: 1/4 correct (25.0%)" in completed.stdout
    assert "  question_answering_agent                         0             3  0/3\n" in completed.stdout


TOOLS = [
    {
        "name": "search",
        "description": "Web search.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "results": [
            {"args": {"query": "dune 2 director"}, "result": {"results": ["Denis Villeneuve"]}},
            {"args": {"query": "Denis Villeneuve brother"}, "result": {"results": ["Martin Villeneuve"]}},
        ],
        "default": {"results": []},
    }
]

EVAL = {
    "evalward": 1,
    "eval_set_id": "dune",
    "metrics": [{"name": "stepwise_score", "threshold": 0.5}],
    "cases": [
        {
            "id": "brother",
            "query": "Who is the Dune 2 director's brother?",
            "expect": {"response": "Martin Villeneuve"},
            "reference_messages": [
                {"role": "user", "content": "Who is the Dune 2 director's brother?"},
                {
                    "role": "assistant",
                    "tool_calls": [{"name": "search", "args": {"query": "dune 2 director"}, "id": "c1"}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": '{"results": ["Denis Villeneuve"]}'},
                {
                    "role": "assistant",
                    "tool_calls": [{"name": "search", "args": {"query": "Denis Villeneuve brother"}, "id": "c2"}],
                },
                {"role": "tool", "tool_call_id": "c2", "content": '{"results": ["Martin Villeneuve"]}'},
                {"role": "assistant", "content": "Martin Villeneuve"},
            ],
        }
    ],
}


def model(body: dict[str, Any]) -> Reply:
    """Searches the director, then (wrongly) the cast, and answers from whatever the last result says."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return Reply.calls(ToolCallReply("search", {"query": "dune 2 director"}))
    if "Denis" in last["content"]:
        return Reply.calls(ToolCallReply("search", {"query": "Dune 2 cast"}))
    if "Martin" in last["content"]:
        return Reply.text("Martin Villeneuve")
    return Reply.text("I could not find it.")


def test_openai_agent_with_teacher_forcing(tmp_path: Path) -> None:
    (tmp_path / "dune.json").write_text(json.dumps(EVAL))
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    (tmp_path / "prompt.txt").write_text("Answer with search.")
    out = tmp_path / "run.json"
    with FakeOpenAI(models=["agent-model"]) as fake:
        fake.responder = model
        completed = evalward(
            [
                str(tmp_path / "dune.json"),
                "--agent",
                "openai:agent-model",
                "--tools",
                str(tmp_path / "tools.json"),
                "--system-prompt",
                str(tmp_path / "prompt.txt"),
                "--max-steps",
                "5",
                "--no-history",
                "--json",
                str(out),
            ],
            tmp_path,
            OPENAI_BASE_URL=fake.base_url,
        )
        requests = len(fake.completions())
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    case = json.loads(out.read_text())["cases"][0]
    scores = {m["name"]: m["score"] for m in case["metric_results"]}
    # Free run: director (ok), cast (diverges), empty result -> "I could not find it." = 3 requests.
    # Teacher forcing: step 1 after [user] -> director = r_1 (1); step 2 after r_1, o_1 -> cast != r_2 (0);
    # step 3 after r_1, o_1, r_2, o_2 -> "Martin Villeneuve", no call, answered (1). 3 more requests.
    assert requests == 6
    # hand calculation: c = (1, 0, 1) -> 2/3; j* = 2 -> (2 - 1)/3 = 1/3; free run s = 1 of m = 2 -> 1/2
    assert scores["stepwise_score"] == pytest.approx(2 / 3)
    assert scores["first_error_step"] == 2
    assert scores["survived_until"] == pytest.approx(1 / 3)
    assert scores["free_running_survival"] == 0.5
    assert scores["divergence_index"] == 2
    stepwise = next(m for m in case["metric_results"] if m["name"] == "stepwise_score")
    assert stepwise["status"] == "passed"  # 0.667 >= 0.5
    assert stepwise["details"]["steps"][1]["note"] == (
        'step 2: [search(query="Dune 2 cast")] != [search(query="Denis Villeneuve brother")] -> 0'
    )
