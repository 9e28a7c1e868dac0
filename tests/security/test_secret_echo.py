"""An agent that echoes every secret it can see leaves none anywhere evalward writes.

The agent reads the job's secrets from its environment (the GitHub token, an OpenAI key, a password that
has no known shape, a database URL's password) and puts them, plus token shapes it invented, into its
answer, its tool-call arguments, its state and — for one case — an exception message. It also spells three
secrets (a GitHub PAT `ghp_…`, the OpenAI key `sk-…`, a custom token of no known shape) the seven ways of
issue #31 row 6: base64, hex, reversed, spaced, split over two lines, their first 16 characters, URL-encoded.
`evalward ci` runs it against the fake GitHub, and `evalward run --json --junit --markdown --db` runs it
again; then every request GitHub received, the log, the job summary, the step outputs, every file in the
workspace (reports, the results artifact with its HTML report, the history database's bytes) and both
commands' output are searched for each secret and each spelling.

The other tests here are issue #31's rows 5 and 7 through the real CLI: a secret in an id is refused before
anything is stored, and secrets in variables of every common naming are masked.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sqlite3
import string
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

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
GITHUB_PAT = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
# No known shape, and characters URL encoding escapes: its URL-encoded spelling is not the value itself.
CUSTOM_TOKEN = f"svc:{secrets.token_hex(6)}/{secrets.token_hex(5)}+{secrets.token_hex(4)}@x"
SPELLED = {"GITHUB_PAT": GITHUB_PAT, "OPENAI_API_KEY": OPENAI_KEY, "MY_SERVICE_TOKEN": CUSTOM_TOKEN}
"""The secrets the agent spells the seven ways of `spellings`."""


def spellings(value: str) -> dict[str, str]:
    """Issue #31 row 6: the seven ways an agent echoed a secret past the redactor (the agent spells them alike)."""
    half = len(value) // 2
    return {
        "base64": base64.b64encode(value.encode()).decode(),
        "hex": value.encode().hex(),
        "reversed": value[::-1],
        "spaced": " ".join(value),
        "two lines": f"{value[:half]}\n{value[half:]}",
        "first 16": value[:16],
        "URL-encoded": quote(value, safe=""),
    }


ECHO_AGENT = """
import base64
import os
from urllib.parse import quote, urlsplit

def _spellings(value):
    half = len(value) // 2
    return [
        base64.b64encode(value.encode()).decode(), value.encode().hex(), value[::-1], " ".join(value),
        value[:half] + "\\n" + value[half:], value[:16], quote(value, safe=""),
    ]

def _leak():
    db = urlsplit(os.environ.get("AGENT_DB_URL", "")).password or ""
    seen = [os.environ.get(n, "") for n in ("GITHUB_TOKEN", "OPENAI_API_KEY", "SERVICE_PASSWORD")]
    spelled = [s for n in ("GITHUB_PAT", "OPENAI_API_KEY", "MY_SERVICE_TOKEN") for s in _spellings(os.environ[n])]
    # LEAK_SHAPES is not a secret-named variable: only the token shapes can give these away.
    return " ".join([*seen, db, os.environ.get("LEAK_SHAPES", ""), " | ".join(spelled)])

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
        "GITHUB_PAT": GITHUB_PAT,
        "MY_SERVICE_TOKEN": CUSTOM_TOKEN,
    }


def _everything_written(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".git/" not in str(p)}


# How surfaces write a line break, and escapes that would hide a leak from a plain search (markdown writes
# `ghp\\_…`): all left out, with spaces, of both the surface and the spelling searched for.
_HIDING = [b"\\n", b"\\r", b"\\t", b"&#10;", b"&#13;", b"&#xA;", b"&#xa;", b"<br>", b"<br/>", b"<br />", b"\\"]
_HIDING += [b" ", b"\n", b"\r", b"\t"]


def _flattened(data: bytes) -> bytes:
    for hiding in _HIDING:
        data = data.replace(hiding, b"")
    return data


_SPELLINGS = {
    f"{name} {kind}": _flattened(text.encode()) for name, v in SPELLED.items() for kind, text in spellings(v).items()
}


def _leaks(data: bytes | str) -> list[str]:
    """What `data` gives away: each secret value as it is, and each spelling of `SPELLED` (line breaks, spaces
    and escapes left out of both)."""
    blob = data.encode("utf-8", "replace") if isinstance(data, str) else data
    flat = _flattened(blob)
    return [f"value {i}" for i, secret in enumerate(LEAKS) if secret.encode() in blob] + [
        what for what, spelled in _SPELLINGS.items() if spelled in flat
    ]


class Surfaces:
    """Every surface's leaks, gathered before one assertion: a failure lists each surface and its count."""

    def __init__(self) -> None:
        self.leaks: dict[str, list[str]] = {}
        self.searched: list[str] = []

    def search(self, where: str, data: bytes | str) -> None:
        self.searched.append(where)
        if found := _leaks(data):
            self.leaks[where] = found

    def assert_clean(self) -> None:
        count = sum(len(found) for found in self.leaks.values())
        report = "\n".join(f"  {where}: {len(found)} ({', '.join(found)})" for where, found in self.leaks.items())
        assert not self.leaks, f"{count} leaks over {len(self.leaks)} of {len(self.searched)} surfaces:\n{report}"


def _assert_clean(where: str, data: bytes | str) -> None:
    found = _leaks(data)
    assert not found, f"{where} holds {len(found)} secret value(s) or spelling(s)"


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
    surfaces = Surfaces()
    for request in workspace.fake.requests:
        surfaces.search(f"{request.method} {request.path}", json.dumps(request.body) + json.dumps(request.query))
    # `::add-mask::VALUE` lines are the runner's to consume (it shows neither them nor VALUE afterwards).
    surfaces.search("the log", "\n".join(line for line in log.splitlines() if not line.startswith("::add-mask::")))
    surfaces.search("the job summary", summary(env))
    surfaces.search("the step outputs", json.dumps(outputs(env)))
    written = _everything_written(workspace.root)
    assert {"evalward-results/report.html", "history.db"} <= set(written)
    for name, data in written.items():
        surfaces.search(name, data)
    surfaces.assert_clean()


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
    # every value, and each of the 21 spellings, is one marker
    assert paris["error"]["message"].count("[redacted") >= len(LEAKS) + 7 * len(SPELLED)
    assert json.loads((out / "run.json").read_text(encoding="utf-8"))  # still valid JSON after redaction
    surfaces = Surfaces()
    surfaces.search("the terminal", log)
    written = _everything_written(workspace.root)
    assert {"out/run.json", "out/junit.xml", "out/report.md", "run-history.db"} <= set(written)
    for name, data in written.items():
        surfaces.search(name, data)
    surfaces.assert_clean()


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


def _plain_environment(**secret_values: str) -> dict[str, str]:
    """The process's environment without evalward's, GitHub's and the Action's variables, plus `secret_values`."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("EVALWARD_", "GITHUB_", "INPUT_"))}
    return {**keep, **secret_values}


def _evalward(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _stored_runs(db: Path) -> list[tuple[str, str]]:
    """(run id, status) of every run in the history database (none when it was never created)."""
    if not db.exists():
        return []
    with sqlite3.connect(db) as connection:
        return list(connection.execute("SELECT run_id, status FROM runs"))


def test_a_secret_in_an_identifier_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    """Issue #31 row 5: a case id holding a secret's value crashed `evalward run --db` (the two ids, masked
    alike, collided in the database), left the run `running` and stored the secret. Now every id holding a
    secret is named, with its file, line and the variable — never the value — and the run exits 2 before the
    database is opened. The run id and the branch are refused alike."""
    secret = "svc" + secrets.token_hex(8)
    evals = tmp_path / "e.eval.json"
    cases = [{"id": f"case-{secret}-one", "query": "q"}, {"id": f"case-{secret}-two", "query": "q"}]
    evals.write_text(json.dumps({"evalward": 1, "cases": [*cases, {"id": "plain", "query": "q"}]}, indent=1))
    (tmp_path / "agent.py").write_text("def run(request):\n    return {'response': 'ok'}\n", encoding="utf-8")
    db = tmp_path / "history.db"
    env = _plain_environment(MY_SERVICE_TOKEN=secret)
    run = ["run", "e.eval.json", "--agent", "agent.py:run", "--db", f"sqlite:///{db}"]
    for attempt in ([], ["--resume", "latest"]):  # a second try fails alike: there is nothing to resume
        completed = _evalward(tmp_path, env, *run, *attempt)
        output = completed.stdout + completed.stderr
        assert completed.returncode == 2, output
        assert "Traceback" not in output and "internal error" not in output
        assert secret not in output
        if not attempt:
            lines = completed.stderr.splitlines()
            assert lines[0] == "error: 2 problems in eval files:"
            for index, (line, case) in enumerate(((4, "one"), (8, "two"))):
                assert lines[index + 1] == (
                    f"  e.eval.json:{line}: case id 'case-[redacted MY_SERVICE_TOKEN]-{case}' contains the value of "
                    "MY_SERVICE_TOKEN: ids are stored and shown as they are, so a secret in one cannot be masked; "
                    f"rename it; at $.cases[{index}]"
                )
        assert _stored_runs(db) == []
    plain = {"id": "plain", "query": "q", "expect": {"response": "ok"}}
    evals.write_text(json.dumps({"evalward": 1, "cases": [plain]}), encoding="utf-8")
    for option, value, what in (("--branch", f"feature/{secret}", "branch"), ("--run-id", f"run-{secret}", "run id")):
        completed = _evalward(tmp_path, env, *run, option, value)
        assert completed.returncode == 2, completed.stderr
        shown = value.replace(secret, "[redacted MY_SERVICE_TOKEN]")
        assert completed.stderr.startswith(
            f"error: the {what} ({option}) {shown!r} contains the value of MY_SERVICE_TOKEN: it would be stored "
            "and shown as it is, so a secret in it cannot be masked; use another"
        ), completed.stderr
        assert secret not in completed.stdout + completed.stderr
        assert _stored_runs(db) == []
    # the same run without a secret in any id is stored
    completed = _evalward(tmp_path, env, *run, "--metric", "response_rouge1=0.5")
    assert completed.returncode == 0, completed.stderr
    assert [status for _, status in _stored_runs(db)] == ["complete"]


# Issue #31 row 7: the 12 names the issue lists and 8 more of the same kinds; the first rule (a name ending in
# `TOKEN`, `KEY`, `SECRET` or `PASSWORD`) knew 6 of these 20.
ROW_7_NAMES = [
    "MY_SERVICE_TOKENS",
    "OPENAI_API_KEY_2",
    "API_KEYS",
    "DB_PASS",
    "DB_PWD",
    "SERVICE_AUTH",
    "CLIENT_SECRET_ID",
    "GOOGLE_APPLICATION_CREDENTIALS_JSON",
    "AUTH_HEADER",
    "SESSION_COOKIE",
    "PRIVATE_KEY_PEM",
    "WEBHOOK_SECRET_V2",
    "GH_PAT",
    "X_API_KEY",
    "REFRESH_TOKEN_V1",
    "SESSION_SECRET",
    "HTTP_AUTHORIZATION",
    "APIKEY",
    "DB_PASSWORDS",
    "SIGNING_KEY2",
]
# Variables that are not secrets, whose values must stay readable.
CONTROLS = {
    "KEYBOARD_LAYOUT": "us-international-qwerty",
    "PASSAGE_TITLE": "the-long-passage-title",
    "TOKENIZER_NAME": "cl100k_base_tokenizer",
    "JUDGE_API_KEY_ENV": "OPENAI_API_KEY",
}


def test_secrets_in_variables_of_every_common_naming_are_masked(tmp_path: Path) -> None:
    values = {name: f"{name[:2].lower()}{secrets.token_hex(9)}" for name in ROW_7_NAMES}
    values["GOOGLE_APPLICATION_CREDENTIALS_JSON"] = json.dumps(
        {"type": "service_account", "private_key_id": secrets.token_hex(20), "client_email": "bot@example.iam"}
    )
    evals = tmp_path / "e.eval.json"
    evals.write_text(json.dumps({"evalward": 1, "cases": [{"id": "echo", "query": "q"}]}), encoding="utf-8")
    names = [*ROW_7_NAMES, *CONTROLS]
    agent = f"import os\n\ndef run(request):\n    return {{'response': ' '.join(os.environ[n] for n in {names!r})}}\n"
    (tmp_path / "agent.py").write_text(agent, encoding="utf-8")
    out = tmp_path / "out"
    completed = _evalward(
        tmp_path,
        _plain_environment(**values, **CONTROLS),
        *("run", "e.eval.json", "--agent", "agent.py:run", "--db", f"sqlite:///{tmp_path / 'history.db'}"),
        *("--json", str(out / "run.json"), "--junit", str(out / "junit.xml"), "--markdown", str(out / "report.md")),
    )
    assert completed.returncode == 1, completed.stderr  # the case has no expectations: no metric passes
    [case] = json.loads((out / "run.json").read_text(encoding="utf-8"))["cases"]
    response = case["invocations"][0]["actual_response"]
    assert response == " ".join([*(f"[redacted {name}]" for name in ROW_7_NAMES), *CONTROLS.values()])
    surfaces = {"the terminal": (completed.stdout + completed.stderr).encode()}
    surfaces.update({str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()})
    leaks = {
        where: [name for name, value in values.items() if _flattened(value.encode()) in _flattened(data)]
        for where, data in surfaces.items()
    }
    assert {where: found for where, found in leaks.items() if found} == {}


def test_variables_named_by_the_settings_or_evalward_secret_names_are_secrets(tmp_path: Path) -> None:
    """`secret_names` in evalward.toml and `EVALWARD_SECRET_NAMES` name secrets no rule could know."""
    values = {"LEGACY_SIGNER": "ls-" + secrets.token_hex(8), "ACME_MATERIAL": "am-" + secrets.token_hex(8)}
    (tmp_path / "evalward.toml").write_text('secret_names = ["legacy_*"]\n', encoding="utf-8")
    evals = tmp_path / "e.eval.json"
    evals.write_text(json.dumps({"evalward": 1, "cases": [{"id": "echo", "query": "q"}]}), encoding="utf-8")
    agent = "import os\n\ndef run(request):\n    return {'response': os.environ['LEGACY_SIGNER'] + ' ' + os.environ['ACME_MATERIAL']}\n"
    (tmp_path / "agent.py").write_text(agent, encoding="utf-8")
    env = _plain_environment(**values, EVALWARD_SECRET_NAMES="ACME_MATERIAL")
    completed = _evalward(
        tmp_path, env, "run", "e.eval.json", "--agent", "agent.py:run", "--no-history", "--json", "run.json"
    )
    assert completed.returncode == 1, completed.stderr  # the case has no expectations: no metric passes
    [case] = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cases"]
    assert case["invocations"][0]["actual_response"] == "[redacted LEGACY_SIGNER] [redacted ACME_MATERIAL]"
