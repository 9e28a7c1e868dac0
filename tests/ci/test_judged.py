"""An ADK eval set judged by `final_response_match_v2`, run by `evalward ci` with the Action's judge inputs.

`evalward ci` used to drop every judge setting; here the judge model, endpoint and key variable come in as
`INPUT_JUDGE-*`, the fake OpenAI-compatible server answers as ADK's grader does (`is_correct`, 5 samples,
majority), and the key — read from the variable the input names — is sent to the judge and never printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply

from .conftest import PR_HEAD, REPO, Workspace, outputs, pull_request_payload, summary

SECRET = "sk-judge-never-printed-5f2a"
CASES = {"capital-fr": ("What is the capital of France?", "Paris is the capital of France."),
         "capital-jp": ("What is the capital of Japan?", "Tokyo is the capital of Japan.")}  # fmt: skip

AGENT = """
ANSWERS = {"What is the capital of France?": "It's Paris.", "What is the capital of Japan?": "Kyoto, I think."}


def run(request):
    return ANSWERS[request["query"]]
"""


def adk_eval_set() -> dict[str, Any]:
    return {
        "eval_set_id": "capitals",
        "eval_cases": [
            {
                "eval_id": case_id,
                "conversation": [
                    {
                        "invocation_id": "inv-1",
                        "user_content": {"role": "user", "parts": [{"text": query}]},
                        "final_response": {"role": "model", "parts": [{"text": answer}]},
                        "intermediate_data": {"tool_uses": []},
                    }
                ],
            }
            for case_id, (query, answer) in CASES.items()
        ],
    }


def grader(body: dict[str, Any]) -> Reply:
    """Correct iff the student's answer names the reference's city (ADK's VALID)."""
    user = body["messages"][-1]["content"]
    reference = user.split("GROUND TRUTH RESPONSE: ")[1].split("\n")[0]
    student = user.split("STUDENT RESPONSE: ")[1]
    city = reference.split(" ")[0]
    return Reply.json({"reasoning": f"looked for {city}", "is_correct": city in student})


def test_judge_inputs_reach_evalward_ci_and_the_key_stays_secret(workspace: Workspace) -> None:
    folder = workspace.root / "judged"
    folder.mkdir()
    (folder / "capitals.evalset.json").write_text(json.dumps(adk_eval_set(), indent=2))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": 0.8}}))
    (workspace.root / "capitals_agent.py").write_text(AGENT)

    with FakeOpenAI(models=["judge-model"]) as judge:
        judge.responder = grader
        env = workspace.env("pull_request", pull_request_payload())
        env.update(
            {
                "INPUT_EVAL-PATHS": "judged",
                "INPUT_AGENT": "capitals_agent.py:run",
                "INPUT_JUDGE-MODEL": "judge-model",
                "INPUT_JUDGE-BASE-URL": judge.base_url,
                "INPUT_JUDGE-API-KEY-ENV": "CAPITALS_JUDGE_KEY",
                "INPUT_JUDGE-CONCURRENCY": "2",
                "INPUT_BASELINE": "none",
                "INPUT_DATABASE-URL": f"sqlite:///{workspace.root / 'history.db'}",
                "CAPITALS_JUDGE_KEY": SECRET,
            }
        )
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "GITHUB_", "INPUT_", "OPENAI_"))}
        completed = subprocess.run(
            [sys.executable, "-m", "evalward", "ci"],
            cwd=workspace.root,
            env={**keep, **env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        completions = judge.completions()

    log = completed.stdout + completed.stderr
    # Kyoto is not Tokyo: that case misses its threshold, which fails the step.
    assert completed.returncode == 1, log
    # 2 cases x 5 samples (final_response_match_v2's default), every request with the key from the variable.
    assert len(completions) == 10 and all(r.authorized for r in completions)
    assert {r.body["model"] for r in completions if r.body} == {"judge-model"}
    run = json.loads((workspace.root / "evalward-results" / "run.json").read_text())
    scores = {
        c["case_id"]: m["score"]
        for c in run["cases"]
        for m in c["metric_results"]
        if m["name"] == "final_response_match_v2"
    }
    assert scores == {"capital-fr": 1.0, "capital-jp": 0.0}
    [criterion] = [c for c in run["eval_sets"][0]["criteria"] if c["name"] == "final_response_match_v2"]
    assert criterion["options"]["judge"]["model"] == "judge-model"  # the judge is part of the fingerprint
    comment = workspace.fake.comments_on(REPO, int(pull_request_payload()["number"]))[0]["body"]
    assert "capital-jp" in comment and "final_response_match_v2" in comment
    assert [c["conclusion"] for c in workspace.fake.check_runs.values() if c["head_sha"] == PR_HEAD] == ["failure"]
    # The key is never printed, posted or written.
    written = [Path(env["GITHUB_OUTPUT"]), *(workspace.root / "evalward-results").iterdir()]
    everything = log + summary(env) + json.dumps([r.body for r in workspace.fake.requests])
    everything += "".join(p.read_text(encoding="utf-8") for p in written)
    assert SECRET not in everything
    assert outputs(env)["verdict"] == "fail"
