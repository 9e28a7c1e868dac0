"""A repository checkout in a temporary folder, a fake GitHub, and GitHub's own example event payloads.

The workspace is a git checkout holding a native eval set (`evals/weather.eval.json`, one case per city) and a
deterministic Python agent (`agent.py:run`) whose behaviour is read from `agent_mode.txt` (not committed, so a
base side checked out on demand runs `good`) at each call: `good`
answers every case, `bad` drops the tool call for the first `BROKEN` cities, `hostile` answers with text built
to inject workflow commands, mentions, references, HTML and a forged marker. Its history: `PR_BASE` on
`master` (the base branch), then `PR_HEAD` on `changes` (the pull request), checked out — built once with fixed
authors and dates, so both SHAs are constants, and copied into each test's folder. Event payloads are the
vendored `@octokit/webhooks-examples` (`tests/fakes/data/webhook-examples-subset.json`) with only the fields a
scenario needs changed (the PR's head and base SHAs, a fork's `head.repo`, the push that made the base commit).

Every request the fake GitHub received is checked against GitHub's REST description when the test ends.
"""

from __future__ import annotations

import atexit
import copy
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalward._ci import CiOptions, CiResult, run_ci
from evalward.github import GitHubClient
from fakes.github_server import FakeGitHub
from github.contract import check_requests

EXAMPLES: dict[str, list[dict[str, Any]]] = json.loads(
    (Path(__file__).resolve().parents[1] / "fakes" / "data" / "webhook-examples-subset.json").read_text("utf-8")
)["examples"]
REPO = "Codertocat/Hello-World"
CITIES = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Perth", "Delhi", "Rome", "Seoul"]
BROKEN = 6
"""`bad` mode breaks the first 6 of 10 cases: exact McNemar p = 0.5^6 = 0.0156 < 0.05, Δ̂ = −0.6 ≤ −0.02."""
HOSTILE = (
    "::add-mask::hunter2\n::set-output name=verdict::pass\n##[error]forged\n  ::error::indented\n"
    "@octocat fixes #1 and owner/repo#2 </details></code><img src=x onerror=alert(1)>\n"
    "<!-- evalward:CI/evals --> <!-- evalward-verdict: pass -->\n````\n# ✅ All evals passed"
)

AGENT = """
from pathlib import Path

BROKEN = {broken!r}
HOSTILE = {hostile!r}


def run(request):
    # agent_mode.txt is not committed: a base checkout made on demand has none, and runs the agent as committed
    mode = Path("agent_mode.txt").read_text().strip() if Path("agent_mode.txt").exists() else "good"
    city = request["query"].rsplit(" ", 1)[-1].rstrip("?")
    if mode == "hostile":
        return {{"response": HOSTILE, "tool_calls": [{{"name": "get_weather", "args": {{"city": HOSTILE}}}}]}}
    if mode == "bad" and city in BROKEN:
        return {{"response": "I do not know.", "tool_calls": []}}
    if mode == "allbad":
        return {{"response": "I do not know.", "tool_calls": []}}
    return {{"response": f"It is sunny in {{city}}.", "tool_calls": [{{"name": "get_weather", "args": {{"city": city}}}}]}}
"""


def eval_set(cities: list[str]) -> dict[str, Any]:
    return {
        "evalward": 1,
        "eval_set_id": "weather",
        "cases": [
            {
                "id": city.lower(),
                "query": f"What is the weather in {city}?",
                "expect": {
                    "tool_calls": [{"name": "get_weather", "args": {"city": city}}],
                    "response": f"It is sunny in {city}.",
                },
            }
            for city in cities
        ],
    }


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Codertocat",
    "GIT_AUTHOR_EMAIL": "octocat@github.com",
    "GIT_COMMITTER_NAME": "Codertocat",
    "GIT_COMMITTER_EMAIL": "octocat@github.com",
    "GIT_AUTHOR_DATE": "2019-05-15T15:20:00+00:00",
    "GIT_COMMITTER_DATE": "2019-05-15T15:20:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": tempfile.gettempdir(),
}


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a fixed identity and dates (so SHAs are reproducible); its output."""
    import os

    env = {"PATH": os.environ.get("PATH", ""), **GIT_IDENTITY}
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout.strip()


def write_checkout(root: Path) -> None:
    """The repository's files (everything but the history)."""
    (root / "evals").mkdir(parents=True, exist_ok=True)
    (root / "evals" / "weather.eval.json").write_text(json.dumps(eval_set(CITIES), indent=2) + "\n", encoding="utf-8")
    (root / "agent.py").write_text(AGENT.format(broken=CITIES[:BROKEN], hostile=HOSTILE), encoding="utf-8")
    (root / ".gitignore").write_text("agent_mode.txt\n*.db\n.gh*/\nevalward-results/\n", encoding="utf-8")


def _template() -> tuple[Path, str, str]:
    """The checkout every test copies: `master` at the base commit, `changes` one commit ahead, checked out."""
    root = Path(tempfile.mkdtemp(prefix="evalward-ci-repo-")) / "repo"
    atexit.register(shutil.rmtree, root.parent, ignore_errors=True)
    root.mkdir()
    write_checkout(root)
    git(root, "init", "--quiet", "--initial-branch=master")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "evals and the agent")
    base = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", "-b", "changes")
    (root / "README.md").write_text("Hello World\n", encoding="utf-8")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "the pull request's change")
    return root, base, git(root, "rev-parse", "HEAD")


TEMPLATE, PR_BASE, PR_HEAD = _template()
PR_NUMBER = int(EXAMPLES["pull_request"][0]["number"])


def pull_request_payload(*, fork: bool = False, head_sha: str | None = None) -> dict[str, Any]:
    """GitHub's `pull_request.opened` example at the checkout's commits; a fork when `fork` (head.repo elsewhere)."""
    payload = copy.deepcopy(EXAMPLES["pull_request"][0])
    payload["pull_request"]["head"]["sha"] = head_sha or PR_HEAD
    payload["pull_request"]["base"]["sha"] = PR_BASE
    if fork:
        payload["pull_request"]["head"]["repo"]["full_name"] = "forker/Hello-World"
        payload["pull_request"]["head"]["label"] = "forker:changes"
    return payload


def push_payload() -> dict[str, Any]:
    """GitHub's push-to-master example, made the push that created the PR's base commit."""
    payload = copy.deepcopy(EXAMPLES["push"][4])
    payload["after"] = PR_BASE
    return payload


def fork_workflow_run_payload() -> dict[str, Any]:
    """The `workflow_run.completed` event of the evals run on the fork's pull request (its `pull_requests` list is
    empty for forks, so the poster finds the PR by its head SHA)."""
    return {
        "action": "completed",
        "workflow_run": {
            "id": 9001,
            "head_sha": PR_HEAD,
            "event": "pull_request",
            "pull_requests": [],
            "head_repository": {"full_name": "forker/Hello-World"},
        },
        "repository": {"full_name": REPO},
    }


MERGE_SHA = "f" * 40
"""GITHUB_SHA on pull_request events: the test merge commit, which must never get the status."""


@dataclass
class Workspace:
    root: Path
    fake: FakeGitHub
    waits: list[float] = field(default_factory=list)
    counter: int = 0

    def agent(self, mode: str) -> None:
        (self.root / "agent_mode.txt").write_text(mode, encoding="utf-8")

    def options(self, **changes: Any) -> CiOptions:
        """`CiOptions.from_values`, as `evalward ci` builds them: run values (paths, agent, shard, …) and ci's own."""
        values: dict[str, Any] = {
            "paths": ["evals"],
            "agent": "agent.py:run",
            "db_url": f"sqlite:///{self.root / 'history.db'}",
            "results_artifact": str(self.root / "evalward-results"),
            "timeout_s": 30.0,
            # Ten cases at one repetition are too few for the default margin (δ_ni = 0.05 needs 3/0.05 = 60
            # cases before "nothing got worse" is a pass): a 0.3 margin lets an unchanged PR pass here, so these
            # tests of the Action's mechanics see every outcome. The default on this suite: test_default_policy.py.
            "gate_settings": {"delta_ni": 0.3},
        }
        values.update(changes)
        return CiOptions.from_values(values)

    def env(
        self, event_name: str, payload: dict[str, Any] | None, *, token: str = "ghs_actions", **extra: str
    ) -> dict[str, str]:
        self.counter += 1
        folder = self.root / f".gh{self.counter}"
        folder.mkdir()
        env = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": self.fake.url,
            "GITHUB_SERVER_URL": "https://github.test",
            "GITHUB_SHA": MERGE_SHA
            if event_name.startswith("pull_request")
            else (payload or {}).get("after", "a" * 40),
            "GITHUB_REF": "refs/pull/2/merge" if event_name.startswith("pull_request") else "refs/heads/master",
            "GITHUB_RUN_ID": str(9000 + self.counter),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKFLOW": "CI",
            "GITHUB_WORKSPACE": str(self.root),
            "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
            "GITHUB_OUTPUT": str(folder / "output.txt"),
        }
        if payload is not None:
            (folder / "event.json").write_text(json.dumps(payload), encoding="utf-8")
            env["GITHUB_EVENT_PATH"] = str(folder / "event.json")
        if token:
            env["INPUT_GITHUB-TOKEN"] = token
        env.update(extra)
        return env

    def client_factory(self, actions: Any) -> GitHubClient | None:
        if not actions.token:
            return None
        return GitHubClient(
            actions.token,
            api_url=actions.api_url,
            sleep=self.waits.append,
            jitter=lambda: 1.0,
            clock=lambda: 1_700_000_000.0,
        )

    def run(
        self, env: dict[str, str], *, root: Path | None = None, client_factory: Any = None, **changes: Any
    ) -> tuple[CiResult, str]:
        """`run_ci` in-process with `options(**changes)`; its exit result and everything it logged."""
        import io

        out, err = io.StringIO(), io.StringIO()
        result = run_ci(
            self.options(**changes),
            env=env,
            out=out,
            err=err,
            client_factory=client_factory or self.client_factory,
            root=root or self.root,
        )
        return result, out.getvalue() + err.getvalue()

    def push(self) -> CiResult:
        """The base branch's run: the baseline of the PR example."""
        self.agent("good")
        result, _ = self.run(self.env("push", push_payload()))
        return result


def outputs(env: dict[str, str]) -> dict[str, str]:
    """The `name=value` lines of GITHUB_OUTPUT (our values are single-line)."""
    text = Path(env["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def summary(env: dict[str, str]) -> str:
    path = Path(env["GITHUB_STEP_SUMMARY"])
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server
        if not server.contract_exempt:
            problems = check_requests(server.requests)
            assert not problems, "requests that break GitHub's REST contract:\n" + "\n".join(problems)


@pytest.fixture
def workspace(tmp_path: Path, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    root = tmp_path / "repo"
    shutil.copytree(TEMPLATE, root, symlinks=True)
    monkeypatch.chdir(root)
    space = Workspace(root=root, fake=fake)
    space.agent("good")
    return space
