"""The Action as GitHub runs it, without Docker: action.yml's inputs and the Dockerfile's ENTRYPOINT.

Docker cannot run here, so this reads `action.yml` (inputs with their defaults, exported by the runner as
`INPUT_<NAME>` with dashes kept) and the Dockerfile (`ENTRYPOINT ["/usr/local/bin/evalward", "ci"]`),
then runs that command in a subprocess — the installed `evalward` console script is this interpreter's
`-m evalward` — on GitHub's `pull_request` example event, against the fake GitHub.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .conftest import PR_HEAD, PR_NUMBER, REPO, Workspace, outputs, pull_request_payload, summary

ROOT = Path(__file__).resolve().parents[2]


def entrypoint() -> list[str]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", text, flags=re.MULTILINE)
    assert match, "the Dockerfile needs an exec-form ENTRYPOINT"
    command: list[str] = json.loads(match.group(1))
    return command


def input_environment(action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """What the runner exports: every declared input, `given` or its default (or ""), as INPUT_<NAME>."""
    env = {}
    for name, spec in action["inputs"].items():
        value = given.get(name, str((spec or {}).get("default", "")))
        env["INPUT_" + name.replace(" ", "_").upper()] = value
    return env


def test_dockerfile_follows_githubs_container_rules() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert not re.search(r"^USER\b", text, flags=re.MULTILINE)  # the workspace must be writable as root
    command = entrypoint()
    assert command[0].startswith("/") and command[1:] == ["ci"]
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "docker" and action["runs"]["image"] == "Dockerfile"
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert set(action["outputs"]) == {"verdict", "passed", "run-id", "regressions", "results-json", "comment-url"}


def test_the_image_entrypoint_runs_a_pull_request_outside_docker(workspace: Workspace) -> None:
    workspace.push()
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    command = entrypoint()
    assert Path(command[0]).name == "evalward"
    argv = [sys.executable, "-m", "evalward", *command[1:]]

    env = workspace.env("pull_request", pull_request_payload(), token="")
    env.update(
        input_environment(
            action,
            {
                "eval-paths": "evals",
                "agent": "agent.py:run",
                "database-url": f"sqlite:///{workspace.root / 'history.db'}",
                "github-token": "ghs_actions",  # what `${{ github.token }}` expands to
            },
        )
    )
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "GITHUB_", "INPUT_"))}
    completed = subprocess.run(
        argv, cwd=workspace.root, env={**keep, **env}, capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # The default policy on ten unchanged cases at one repetition: nothing got worse, but ten passing repetitions
    # cannot show that nothing did within 5 points, so the first look cannot pass. The top-up runs the PR side five
    # more times (60 repetitions, none failing: ZF(60, 0.05) = 0.0487 ≤ 0.05) and the second look passes.
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "gate passed" in comment["body"]
    assert "Decided at the second look: 10 cases 5 more times on this side only (50 agent runs)" in comment["body"]
    assert [s["sha"] for s in workspace.fake.statuses][-1] == PR_HEAD
    out = outputs(env)
    assert out["verdict"] == "pass" and out["comment-url"] == comment["html_url"]
    assert "gate passed" in summary(env)
    assert (workspace.root / "evalward-results" / "meta.json").is_file()
