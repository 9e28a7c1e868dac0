"""A new repository adopts the Action in one step — checked as GitHub runs it, without Docker.

Both variants start from a fresh Python (a new virtual environment, no system site-packages) holding only what
the action installs, and run on a user repository whose agent imports a package of its own, listed in its
`requirements.txt` — which the image does not have, so the run works only if that is installed first:

1. **The Docker action** (`action.yml`): the Dockerfile's own install command (read from the Dockerfile,
   `/opt/evalward` being this checkout) builds the environment; the ENTRYPOINT `evalward ci` runs with
   action.yml's inputs as `INPUT_*` variables (dashes kept) and `setup: pip install -r requirements.txt`; the
   workspace belongs to another user than the one running evalward (uid 1001 vs root, as on GitHub), so
   git's dubious-ownership check is in play.
2. **The composite action** (`run/action.yml`): a fresh Python stands for the job's `setup-python`; the
   action's install step runs in it, then its `evalward ci` step with the environment mapping read from
   run/action.yml, so a wrong mapping fails here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import CITIES, REPO, Workspace, eval_set, git, outputs, summary

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ["Paris", "Tokyo", "Lima"]
PR_NUMBER = 2

AGENT = """
from weather_tools import forecast

BROKEN = set({broken!r})


def run(request):
    city = request["query"].rsplit(" ", 1)[-1].rstrip("?")
    if city in BROKEN:
        return {{"response": "I do not know.", "tool_calls": []}}
    return {{"response": forecast(city), "tool_calls": [{{"name": "get_weather", "args": {{"city": city}}}}]}}
"""
PACKAGE = {
    "mypkg/pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "weather-tools"\nversion = "1.0.0"\n'
    ),
    "mypkg/weather_tools/__init__.py": 'def forecast(city):\n    return f"It is sunny in {city}."\n',
    "requirements.txt": "./mypkg\n",
}


def fresh_python(folder: Path) -> Path:
    """A new virtual environment (no system site-packages); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    return folder / "bin" / "python"


def runner_env(python: Path, home: Path) -> dict[str, str]:
    """What a job's process sees of the machine: this Python first on PATH, git and bash, pip's settings."""
    tools = {str(Path(shutil.which(tool) or "/usr/bin").parent) for tool in ("git", "bash")}
    env = {"PATH": os.pathsep.join([str(python.parent), *sorted(tools), "/usr/bin", "/bin"]), "HOME": str(home)}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"))})
    return env


def pip_freeze(python: Path) -> dict[str, str]:
    out = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--all"], check=True, capture_output=True, text=True
    ).stdout
    pins = {}
    for line in out.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            pins[name.lower().replace("_", "-")] = version
    return pins


def lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints" / "action.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name] = version
    return pins


def user_repository(root: Path) -> dict[str, str]:
    """The user's repository: `master` (base), `changes` with a no-change commit, then one breaking 3 cases."""
    root.mkdir(parents=True)
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "evals").mkdir()
    (root / "evals" / "weather.eval.json").write_text(json.dumps(eval_set(CITIES), indent=2) + "\n")
    (root / "agent.py").write_text(AGENT.format(broken=[]))
    (root / ".gitignore").write_text(".evalward/\nevalward-results/\nmypkg/build/\n*.egg-info/\n")
    git(root, "init", "--quiet", "--initial-branch=master")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "an agent and its evals")
    shas = {"base": git(root, "rev-parse", "HEAD")}
    git(root, "checkout", "--quiet", "-b", "changes")
    (root / "README.md").write_text("A weather agent.\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "docs only")
    shas["unchanged"] = git(root, "rev-parse", "HEAD")
    (root / "agent.py").write_text(AGENT.format(broken=BROKEN))
    git(root, "commit", "--quiet", "-am", "a change that breaks the weather tool call for three cities")
    shas["broken"] = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", shas["unchanged"])
    return shas


def pull_request(shas: dict[str, str], head: str) -> dict[str, Any]:
    return {
        "action": "synchronize",
        "number": PR_NUMBER,
        "pull_request": {
            "number": PR_NUMBER,
            "head": {"sha": shas[head], "ref": "changes", "repo": {"full_name": REPO}},
            "base": {"sha": shas["base"], "ref": "master", "repo": {"full_name": REPO}},
        },
        "repository": {"full_name": REPO},
    }


def push(shas: dict[str, str]) -> dict[str, Any]:
    return {"ref": "refs/heads/master", "before": "0" * 40, "after": shas["base"], "repository": {"full_name": REPO}}


def action_inputs(path: str, given: dict[str, str]) -> dict[str, str]:
    """What the runner exports for a Docker action: every declared input, given or its default, as INPUT_<NAME>."""
    inputs = yaml.safe_load((ROOT / path).read_text())["inputs"]
    assert set(given) <= set(inputs), f"not inputs of {path}: {set(given) - set(inputs)}"
    values = {name: given.get(name, str((spec or {}).get("default", ""))) for name, spec in inputs.items()}
    return {"INPUT_" + name.replace(" ", "_").upper(): value for name, value in values.items()}


def comments(workspace: Workspace) -> list[dict[str, Any]]:
    return workspace.fake.comments_on(REPO, PR_NUMBER)


def checks_on(workspace: Workspace, sha: str) -> list[dict[str, Any]]:
    return [c for c in workspace.fake.check_runs.values() if c["head_sha"] == sha]


@pytest.fixture
def user_repo(tmp_path: Path, fake: Any) -> Iterator[tuple[Workspace, dict[str, str]]]:
    root = tmp_path / "workspace"
    shas = user_repository(root)
    yield Workspace(root=root, fake=fake), shas


# ---------------------------------------------------------------------------------------- the Docker action


def image_install_command() -> list[str]:
    """The Dockerfile's `RUN python -m pip install …` (up to `&&`), with /opt/evalward (COPY .) as this checkout."""
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY . /opt/evalward" in text
    match = re.search(r"^RUN (python -m pip install .*?)(?:\s*\\\n\s*&&|\n)", text, flags=re.MULTILINE)
    assert match, "the Dockerfile installs evalward with `RUN python -m pip install …`"
    return [arg.replace("/opt/evalward", str(ROOT)) for arg in shlex.split(match.group(1))]


def entrypoint() -> list[str]:
    match = re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    assert match, "the Dockerfile needs an exec-form ENTRYPOINT"
    command: list[str] = json.loads(match.group(1))
    return command


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0, reason="the workspace must belong to another user than evalward's, as on GitHub: needs root"
)
def test_the_docker_action_in_a_fresh_image_environment(
    user_repo: tuple[Workspace, dict[str, str]], tmp_path: Path
) -> None:
    workspace, shas = user_repo
    python = fresh_python(tmp_path / "image")
    command = image_install_command()
    assert command[:4] == ["python", "-m", "pip", "install"]
    subprocess.run([str(python), *command[1:]], check=True, capture_output=True, timeout=300)
    # The image holds exactly the locked packages (plus pip's own).
    installed = pip_freeze(python)
    unlocked = set(installed) - set(lock()) - {"pip", "setuptools", "evalward"}
    assert unlocked == set(), f"installed but not in constraints/action.txt: {unlocked}"
    assert all(installed[name] == version for name, version in lock().items() if name in installed)
    assert subprocess.run([str(python), "-m", "pip", "check"], capture_output=True).returncode == 0
    # The workspace belongs to the runner's user; evalward runs as root, as in the container.
    subprocess.run(["chown", "-R", "1001:1001", str(workspace.root)], check=True)
    refused = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace.root, capture_output=True, text=True)
    assert "dubious ownership" in refused.stderr
    argv = [str(python.parent / Path(entrypoint()[0]).name), *entrypoint()[1:]]
    home = tmp_path / "github-home"
    home.mkdir()

    def action(
        event: str, payload: dict[str, Any], database: str
    ) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
        env = workspace.env(event, payload)
        del env["INPUT_GITHUB-TOKEN"]
        env.update(runner_env(python, home))
        env.update(
            action_inputs(
                "action.yml",
                {
                    "eval-paths": "evals",
                    "agent": "agent.py:run",
                    "setup": "pip install -r requirements.txt",
                    "repeat": "3",
                    "database-url": f"sqlite:///{tmp_path / database}",
                    "github-token": "ghs_actions",  # what `${{ github.token }}` expands to
                },
            )
        )
        completed = subprocess.run(argv, cwd=workspace.root, env=env, capture_output=True, text=True, timeout=300)
        return completed, env

    # 1. A pull request in a repository with no history at all (a fresh database): the base side is run on
    # demand in the same job, so the no-change pull request is compared — not failed, and not "no baseline".
    first, env = action("pull_request", pull_request(shas, "unchanged"), "fresh.db")
    log = first.stdout + first.stderr
    assert first.returncode == 0, log
    setup_log = log.split("::group::evalward setup\n", 1)[1].split("::endgroup::", 1)[0]
    assert "Successfully installed weather-tools-1.0.0" in setup_log  # the setup ran, in the action's Python
    run = json.loads((workspace.root / "evalward-results" / "run.json").read_text())
    assert run["context"]["merge_base"] == shas["base"]  # git worked despite the ownership
    assert len(run["cases"]) == 3 * len(CITIES) and all(c["status"] == "passed" for c in run["cases"])
    assert outputs(env)["run-id"] == run["run_id"]
    verdict = json.loads((workspace.root / "evalward-results" / "verdict.json").read_text())
    assert verdict["outcome"] != "fail" and outputs(env)["verdict"] == verdict["outcome"]
    assert verdict["baseline"]["on_demand_cases"] == len(CITIES)  # the merge-base's agent, in a worktree
    assert verdict["baseline"]["commit"] == shas["base"]
    [comment] = comments(workspace)
    assert comment["body"].startswith("<!-- evalward:CI/evals -->\n<!-- evalward-verdict: ")
    assert "no baseline" not in comment["body"].lower()
    assert [s["sha"] for s in workspace.fake.statuses] == [shas["unchanged"]]

    # 2. The pull request that breaks the tool call for three cities, on a fresh database too: it fails, and the
    # comment names the three cases (each passed 3/3 on the base side and fails 3/3 now: newly broken).
    git(workspace.root, "-c", "safe.directory=*", "checkout", "--quiet", shas["broken"])
    broken, env = action("pull_request", pull_request(shas, "broken"), "fresh-2.db")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert outputs(env)["verdict"] == "fail" and int(outputs(env)["regressions"]) >= 1
    [comment] = comments(workspace)
    first_line = comment["body"].split("\n")[2]
    assert first_line.startswith("### ❌ 3 cases passed 3 of 3, now 0 of 3: weather/")
    for city in BROKEN:
        assert city.lower() in comment["body"]
    assert [c["conclusion"] for c in checks_on(workspace, shas["broken"])] == ["failure"]
    assert "gate failed" in summary(env)
    assert (workspace.root / "evalward-results" / "report.html").is_file()

    # 3. With the base branch's run stored (the push to master), the stored run is the baseline: no base side.
    git(workspace.root, "-c", "safe.directory=*", "checkout", "--quiet", shas["unchanged"])
    pushed, _ = action("push", push(shas), "history.db")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    unchanged, env = action("pull_request", pull_request(shas, "unchanged"), "history.db")
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    verdict = json.loads((workspace.root / "evalward-results" / "verdict.json").read_text())
    assert verdict["baseline"]["chosen_by"].startswith(f"merge-base {shas['base'][:7]} on master")
    assert verdict["baseline"]["on_demand_cases"] == 0


# ------------------------------------------------------------------------------------- the composite action


def composite_step_env(given: dict[str, str], token: str) -> dict[str, str]:
    """run/action.yml's `evalward ci` step environment, its `${{ inputs.X }}` replaced as the runner would."""
    action = yaml.safe_load((ROOT / "run" / "action.yml").read_text())
    inputs = action["inputs"]
    assert set(given) <= set(inputs)
    [step] = [s for s in action["runs"]["steps"] if s.get("id") == "evalward"]
    values = {name: given.get(name, str((spec or {}).get("default", ""))) for name, spec in inputs.items()}
    values = {name: token if value == "${{ github.token }}" else value for name, value in values.items()}
    env = {}
    for key, expression in step["env"].items():
        match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", expression)
        assert match, f"{key}: {expression}"
        env[key] = values[match.group(1)]
    return env


@pytest.mark.slow
def test_the_composite_action_in_the_jobs_own_python(
    user_repo: tuple[Workspace, dict[str, str]], tmp_path: Path
) -> None:
    workspace, shas = user_repo
    python = fresh_python(tmp_path / "setup-python")
    home = tmp_path / "home"
    home.mkdir()
    base_env = runner_env(python, home)
    action = yaml.safe_load((ROOT / "run" / "action.yml").read_text())
    install, run_step = action["runs"]["steps"]
    assert install["shell"] == "bash" and install["env"] == {"EVALWARD_ACTION_PATH": "${{ github.action_path }}"}
    # The job installs its agent's dependencies itself, then uses the action.
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", "requirements.txt"], cwd=workspace.root,
                   env=base_env, check=True, capture_output=True, timeout=300)  # fmt: skip
    installed = subprocess.run(
        ["bash", "-c", install["run"]],
        cwd=workspace.root,
        env={**base_env, "EVALWARD_ACTION_PATH": str(ROOT / "run")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert all(pip_freeze(python)[name] == version for name, version in lock().items() if name != "uv")
    script = tmp_path / "evalward-step.py"
    script.write_text(run_step["run"])
    assert run_step["shell"] == "python {0}"

    def step(event: str, payload: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
        env = workspace.env(event, payload, token="")
        env.update(base_env)
        env.update(
            composite_step_env(
                {
                    "eval-paths": "evals",
                    "agent": "agent.py:run",
                    "repeat": "3",
                    "database-url": f"sqlite:///{tmp_path / 'h.db'}",
                },
                token="ghs_actions",
            )
        )
        completed = subprocess.run(
            [str(python), str(script)], cwd=workspace.root, env=env, capture_output=True, text=True, timeout=300
        )
        return completed, env

    # A fresh history: the base side runs on demand; the no-change pull request is compared, not failed.
    completed, env = step("pull_request", pull_request(shas, "unchanged"))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert outputs(env)["verdict"] in ("pass", "inconclusive")
    [comment] = comments(workspace)
    assert "no baseline" not in comment["body"].lower() and outputs(env)["comment-url"] == comment["html_url"]
    assert [s["state"] for s in workspace.fake.statuses if s["sha"] == shas["unchanged"]] == ["success"]
    # The pull request breaking three cases fails, and the comment names them.
    git(workspace.root, "checkout", "--quiet", shas["broken"])
    completed, env = step("pull_request", pull_request(shas, "broken"))
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert outputs(env)["verdict"] == "fail"
    [comment] = comments(workspace)
    for city in BROKEN:
        assert city.lower() in comment["body"]
    assert [c["conclusion"] for c in checks_on(workspace, shas["broken"])] == ["failure"]
