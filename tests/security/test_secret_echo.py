"""An agent that echoes every secret it can see leaves none anywhere evalward writes.

The agent reads the job's secrets from its environment (the GitHub token, an OpenAI key, a password that
has no known shape, a database URL's password) and puts them, plus token shapes it invented, into its
answer, its tool-call arguments, its state and — for one case — an exception message. `evalward ci` runs it
against the fake GitHub, and `evalward run --json --junit --markdown --db` runs it again; then every
request GitHub received, every file in the workspace, the history database's bytes and both commands'
output are searched for each secret.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from ci.conftest import PR_NUMBER, REPO, Workspace, outputs, pull_request_payload, summary
from fakes.github_server import Identity

GITHUB_TOKEN = "ghs_" + secrets.token_hex(18)
OPENAI_KEY = "sk-proj-" + secrets.token_hex(24)
SHAPELESS_PASSWORD = secrets.token_hex(10)
DB_PASSWORD = "pw" + secrets.token_hex(8)
INVENTED_PAT = "ghp_" + "Q7" * 18
INVENTED_JWT = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxMjM0NSJ9.c2lnbmVkLWJ5LWFuLWFwcA"
LEAKS = [GITHUB_TOKEN, OPENAI_KEY, SHAPELESS_PASSWORD, DB_PASSWORD, INVENTED_PAT, INVENTED_JWT]

ECHO_AGENT = """
import os
from urllib.parse import urlsplit

def _leak():
    db = urlsplit(os.environ.get("AGENT_DB_URL", "")).password or ""
    seen = [os.environ.get(n, "") for n in ("GITHUB_TOKEN", "OPENAI_API_KEY", "SERVICE_PASSWORD")]
    # LEAK_SHAPES is not a secret-named variable: only the token shapes can give these away.
    return " ".join([*seen, db, os.environ.get("LEAK_SHAPES", "")])

def run(request):
    city = request["query"].rsplit(" ", 1)[-1].rstrip("?")
    leak = _leak()
    if city == "Paris":
        raise RuntimeError("upstream refused Authorization: Bearer " + leak)
    return {
        "response": "It is sunny in " + city + ". Debug: " + leak,
        "tool_calls": [{"name": "get_weather", "args": {"city": city, "auth": leak}}],
        "state": {"credentials": leak},
    }
"""


def _environment(workspace: Workspace, env: dict[str, str]) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "GITHUB_", "INPUT_"))}
    return {
        **keep,
        **env,
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "INPUT_GITHUB-TOKEN": GITHUB_TOKEN,
        "OPENAI_API_KEY": OPENAI_KEY,
        "SERVICE_PASSWORD": SHAPELESS_PASSWORD,
        "AGENT_DB_URL": f"postgresql://app:{DB_PASSWORD}@db.internal/agent",
        "LEAK_SHAPES": f"{INVENTED_PAT} {INVENTED_JWT}",
    }


def _everything_written(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git/" not in str(p)}


def _assert_clean(where: str, data: bytes | str) -> None:
    blob = data.encode("utf-8", "replace") if isinstance(data, str) else data
    found = [secret for secret in LEAKS if secret.encode() in blob]
    assert not found, f"{where} holds {len(found)} secret value(s)"


@pytest.fixture
def echo_workspace(workspace: Workspace) -> Workspace:
    (workspace.root / "echo_agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    workspace.fake.identities[GITHUB_TOKEN] = Identity("github-actions[bot]", "Bot", 41898282)
    return workspace


def test_a_secret_echoing_agent_through_evalward_ci_publishes_no_secret(echo_workspace: Workspace) -> None:
    workspace = echo_workspace
    workspace.push()  # the base branch's run, with the well-behaved agent: the PR's baseline
    env = workspace.env("pull_request", pull_request_payload(), token="")
    env.update({"EVALWARD_PATHS": "evals", "EVALWARD_AGENT": "echo_agent.py:run"})
    env["EVALWARD_DB"] = f"sqlite:///{workspace.root / 'history.db'}"
    env["EVALWARD_RESULTS_ARTIFACT"] = str(workspace.root / "evalward-results")
    completed = subprocess.run(
        [sys.executable, "-m", "evalward", "ci"],
        cwd=workspace.root,
        env=_environment(workspace, env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = completed.stdout + completed.stderr
    assert completed.returncode in (0, 1), log[-3000:]
    assert "Traceback" not in log
    # The agent's text did arrive (the comment quotes it), only without the secrets.
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "[redacted" in comment["body"]
    assert workspace.fake.requests, "evalward ci sent nothing to GitHub"
    for request in workspace.fake.requests:
        _assert_clean(f"{request.method} {request.path}", json.dumps(request.body) + json.dumps(request.query))
    # `::add-mask::VALUE` lines are the runner's to consume (it shows neither them nor VALUE afterwards).
    _assert_clean("the log", "\n".join(line for line in log.splitlines() if not line.startswith("::add-mask::")))
    _assert_clean("the job summary", summary(env))
    _assert_clean("the step outputs", json.dumps(outputs(env)))
    for name, data in _everything_written(workspace.root).items():
        _assert_clean(name, data)


def test_a_secret_echoing_agent_through_evalward_run_writes_no_secret(echo_workspace: Workspace) -> None:
    workspace = echo_workspace
    out = workspace.root / "out"
    argv = [
        sys.executable,
        "-m",
        "evalward",
        "run",
        "evals",
        "--agent",
        "echo_agent.py:run",
        "--db",
        f"sqlite:///{workspace.root / 'run-history.db'}",
        "--json",
        str(out / "run.json"),
        "--junit",
        str(out / "junit.xml"),
        "--markdown",
        str(out / "report.md"),
    ]
    completed = subprocess.run(
        argv,
        cwd=workspace.root,
        env=_environment(workspace, {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = completed.stdout + completed.stderr
    assert completed.returncode == 1, log[-3000:]  # Paris errored, the others echo their secrets
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    paris = next(c for c in run["cases"] if c["case_id"] == "paris")
    assert paris["error"]["message"].count("[redacted") >= len(LEAKS)
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))  # still valid JSON after redaction
    _assert_clean("the terminal", log)
    for name, data in _everything_written(workspace.root).items():
        _assert_clean(name, data)


def test_a_database_password_is_never_printed(tmp_path: Path) -> None:
    """In the URL's userinfo or as `?password=`, for an unreachable server: the error names the database
    with the password masked."""
    evals = tmp_path / "e.eval.json"
    evals.write_text(json.dumps({"evalward": 1, "cases": [{"id": "a", "query": "q"}]}), encoding="utf-8")
    for url in (
        f"postgresql+psycopg://postgres:{DB_PASSWORD}@127.0.0.1:1/test",
        f"postgresql+psycopg://postgres@127.0.0.1:1/test?password={DB_PASSWORD}",
    ):
        completed = subprocess.run(
            [sys.executable, "-m", "evalward", "run", str(evals), "--agent", "cmd:true", "--db", url],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert completed.returncode == 3, completed.stderr
        assert "cannot open the history database" in completed.stderr
        assert "[redacted" in completed.stderr
        _assert_clean("the error", completed.stdout + completed.stderr)


def test_evalward_ci_has_the_runner_mask_passwords_inside_urls(workspace: Workspace) -> None:
    """The runner masks a secret's whole value; a password inside a URL variable is masked on its own."""
    env = workspace.env("push", None, AGENT_DB_URL=f"postgresql://app:{DB_PASSWORD}@db.internal/agent")
    _result, log = workspace.run(env)
    masks = [line for line in log.splitlines() if line.startswith("::add-mask::")]
    assert masks == [f"::add-mask::{DB_PASSWORD}"]
    assert log.count(DB_PASSWORD) == 1
