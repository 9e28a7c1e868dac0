"""What a new repository meets first: setup commands, a working directory, refused events, a checkout without
history, bad inputs — each ends in a clear message, the right exit code and `verdict=error`, never a traceback
or a silent guess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    PR_BASE,
    PR_HEAD,
    PR_NUMBER,
    REPO,
    TEMPLATE,
    Workspace,
    git,
    outputs,
    pull_request_payload,
    push_payload,
    summary,
)


def statuses_on(workspace: Workspace, sha: str) -> list[dict[str, Any]]:
    return [s for s in workspace.fake.statuses if s["sha"] == sha]


def evalward_ci(workspace: Workspace, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`evalward ci` as the image runs it: a process with the runner's variables and nothing of ours."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "GITHUB_", "INPUT_"))}
    return subprocess.run(
        [sys.executable, "-m", "evalward", "ci"],
        cwd=cwd or workspace.root,
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# ------------------------------------------------------------------------------------------------ setup


def test_setup_runs_first_folded_in_a_log_group_without_our_tokens(workspace: Workspace) -> None:
    script = (
        "echo hello from setup\n"
        'python -c "import os, json; print(json.dumps(dict(os.environ)))" > setup-env.json\n'
        "git rev-parse HEAD > setup-head.txt"
    )
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run({**env, "EVALWARD_SERVER_TOKEN": "ewt_secret"}, setup=script)

    assert result.exit_code == 0, log
    group = log.split("::group::evalward setup\n", 1)[1].split("::endgroup::", 1)[0]
    assert group.startswith("::stop-commands::") and "hello from setup" in group
    seen = json.loads((workspace.root / "setup-env.json").read_text())
    assert "INPUT_GITHUB-TOKEN" not in seen and "EVALWARD_SERVER_TOKEN" not in seen
    assert seen["GITHUB_REPOSITORY"] == REPO  # the action's environment otherwise
    # git trusts the checkout in the setup commands too (the container's ownership mismatch).
    assert (workspace.root / "setup-head.txt").read_text().strip() == PR_HEAD
    assert seen[f"GIT_CONFIG_KEY_{int(seen['GIT_CONFIG_COUNT']) - 1}"] == "safe.directory"
    # ... and only then the evals ran.
    assert log.index("::endgroup::") < log.index("evalward: gate")


def test_a_failing_setup_command_is_error_exit_3_naming_it(workspace: Workspace) -> None:
    marker = workspace.root / "agent-ran"
    (workspace.root / "agent.py").write_text(
        f"def run(request):\n    open({str(marker)!r}, 'w').close()\n    return 'x'\n"
    )
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(
        env, setup="echo installing\npip-that-does-not-exist install -r requirements.txt\necho never"
    )

    assert result.exit_code == 3
    assert outputs(env)["verdict"] == "error" and outputs(env)["passed"] == "false"
    why = "the `setup` commands failed at line 2 (`pip-that-does-not-exist install -r requirements.txt`) with exit code 127"
    assert why in log and "::error title=evalward could not run::" + why in log
    assert "failed at line 2" in summary(env) and "pip-that-does-not-exist install" in summary(env)
    assert "never" not in log.split("::group::evalward setup", 1)[1].split("::endgroup::", 1)[0]
    assert not marker.exists()  # the evals did not run
    assert statuses_on(workspace, PR_HEAD)[-1]["state"] == "error"


# ----------------------------------------------------------------------------------- pull_request_target


def test_pull_request_target_is_refused_before_any_pr_code_runs(workspace: Workspace) -> None:
    env = workspace.env("pull_request_target", pull_request_payload())
    result, log = workspace.run(env, setup="touch setup-ran")

    assert result.exit_code == 2
    assert outputs(env)["verdict"] == "error"
    assert "refusing to run on `pull_request_target`" in log and "pwn request" in log
    assert "allow-pull-request-target: i-understand-this-runs-untrusted-code" in log
    assert "refusing to run on" in summary(env)
    assert not (workspace.root / "setup-ran").exists()
    assert workspace.fake.comments_on(REPO, PR_NUMBER) == []


def test_pull_request_target_runs_when_the_workflow_opted_in(workspace: Workspace) -> None:
    workspace.push()
    env = workspace.env("pull_request_target", pull_request_payload())
    result, log = workspace.run(env, allow_pull_request_target="i-understand-this-runs-untrusted-code")
    assert result.exit_code == 0, log
    assert outputs(env)["verdict"] == "pass"


def test_an_invalid_consent_is_bad_input() -> None:
    from evalward._ci import CiOptions
    from evalward.errors import UsageError

    with pytest.raises(UsageError, match="expected exactly 'i-understand-this-runs-untrusted-code'"):
        CiOptions.from_values({"allow_pull_request_target": "yes"})


# ------------------------------------------------------------------------------------------ merge-base


def test_a_shallow_checkout_fails_loudly_instead_of_guessing_the_merge_base(
    workspace: Workspace, tmp_path: Path
) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "--quiet", "--depth", "1", "--branch", "changes", f"file://{TEMPLATE}", str(shallow))
    for name in ("agent_mode.txt",):
        shutil.copy(workspace.root / name, shallow / name)
    os.chdir(shallow)
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env, root=shallow)

    assert result.exit_code == 3 and result.run is None  # nothing ran on a guessed baseline
    assert outputs(env)["verdict"] == "error"
    assert (
        f"cannot compute the merge-base of the pull request (head {PR_HEAD[:12]}, base master at {PR_BASE[:12]})" in log
    )
    assert (
        "the checkout is shallow; fix: check the repository out with its history: `actions/checkout` with `fetch-depth: 0`"
        in log
    )
    assert "does not fall back to the base commit" in summary(env)
    assert statuses_on(workspace, PR_HEAD)[-1]["state"] == "error"


def test_the_merge_base_is_computed_by_git_and_recorded_with_the_run(workspace: Workspace) -> None:
    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env)
    assert result.run is not None
    assert result.run.context.merge_base == PR_BASE  # git's answer for PR_HEAD and PR_BASE (its parent)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the checkout another owner (as on GitHub) needs root")
def test_a_checkout_owned_by_another_user_is_trusted(workspace: Workspace) -> None:
    subprocess.run(["chown", "-R", "1001:1001", str(workspace.root)], check=True)
    refused = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace.root, capture_output=True, text=True)
    assert "dubious ownership" in refused.stderr  # the situation is real: plain git refuses this checkout
    workspace.push()
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)
    assert result.exit_code == 0, log
    assert result.verdict is not None and result.verdict.baseline is not None
    assert result.verdict.baseline.chosen_by.startswith(f"merge-base {PR_BASE[:7]} on master")


# ----------------------------------------------------------------------------------- working directory


def test_the_working_directory_holds_the_settings_evals_setup_and_results(workspace: Workspace) -> None:
    service = workspace.root / "services" / "weather"
    service.mkdir(parents=True)
    shutil.move(workspace.root / "evals", service / "evals")
    shutil.move(workspace.root / "agent.py", service / "agent.py")
    (service / "agent_mode.txt").write_text("allbad")
    (service / "evalward.toml").write_text('paths = ["evals"]\nagent = "agent.py:run"\n')
    env = workspace.env("pull_request", pull_request_payload())
    env.update(
        {
            "INPUT_WORKING-DIRECTORY": "services/weather",
            "INPUT_SETUP": "pwd > setup-cwd.txt",
            "INPUT_BASELINE": "none",
            "INPUT_DATABASE-URL": f"sqlite:///{workspace.root / 'history.db'}",
        }
    )
    completed = evalward_ci(workspace, env)

    assert completed.returncode == 1, completed.stdout + completed.stderr  # every case fails its threshold
    assert (service / "setup-cwd.txt").read_text().strip() == str(service)
    assert (service / "evalward-results" / "meta.json").is_file()
    assert (service / "evalward-results" / "report.html").is_file()
    # Annotations are relative to the repository, not to the working directory.
    [check] = [c for c in workspace.fake.check_runs.values() if c["head_sha"] == PR_HEAD]
    paths = {a["path"] for a in workspace.fake.annotations_of(int(check["id"]))}
    assert paths == {"services/weather/evals/weather.eval.json"}
    assert "::error file=services/weather/evals/weather.eval.json," in completed.stdout


def test_a_missing_working_directory_is_bad_input(workspace: Workspace) -> None:
    env = workspace.env("pull_request", pull_request_payload())
    env["INPUT_WORKING-DIRECTORY"] = "no/such/folder"
    completed = evalward_ci(workspace, env)
    assert completed.returncode == 2
    assert "input `working-directory` (INPUT_WORKING-DIRECTORY, EVALWARD_WORKING_DIRECTORY)" in completed.stderr
    assert outputs(env)["verdict"] == "error"


# ------------------------------------------------------------------------------------- verdict=error


@pytest.mark.parametrize(
    ("inputs", "code", "says", "summary_says"),
    [
        ({"INPUT_REPEAT": "three"}, 2, "input `repeat` (INPUT_REPEAT): expected a whole number of at least 1", "three"),
        ({"INPUT_CONFIG": "broken.toml"}, 2, "broken.toml", "invalid TOML"),
        ({"INPUT_JUDGE-PRICES": "no-such-prices.json"}, 2, "no-such-prices.json", "does not exist"),
        (
            {"INPUT_DATABASE-URL": "postgresql+psycopg://nobody@127.0.0.1:9/none"},
            3,
            "cannot open the history database",
            "cannot open the history database",
        ),
    ],
    ids=["bad input", "bad settings file", "bad option value", "unreachable database"],
)
def test_every_failure_before_a_verdict_sets_verdict_error(
    workspace: Workspace, inputs: dict[str, str], code: int, says: str, summary_says: str
) -> None:
    (workspace.root / "broken.toml").write_text("paths = [\n")
    env = workspace.env("push", push_payload())
    env.update({"INPUT_EVAL-PATHS": "evals", "INPUT_AGENT": "agent.py:run", **inputs})
    completed = evalward_ci(workspace, env)

    assert completed.returncode == code, completed.stdout + completed.stderr
    assert says in completed.stderr
    assert outputs(env) == {
        "verdict": "error",
        "passed": "false",
        "run-id": "",
        "regressions": "0",
        "results-json": "",
        "comment-url": "",
    }
    assert "could not run" in summary(env) and summary_says in summary(env)
    assert "::error title=evalward could not run::" in completed.stdout
