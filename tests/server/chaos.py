"""Tools for the tests that break the daemon on purpose: a git that hangs in its clone, real worker processes
to kill, a repository whose agent tries to read what it must not, and deadline polls.

`GitShim` puts a `git` first on PATH that, while its `block` file exists, answers `clone` by writing 1 MiB
into the clone's target folder (a checkout's worth of bytes), recording its pid and sleeping 60 s — long
enough that a test only sees it gone if someone killed it; without `block` it runs the real git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(cwd), "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def wait_until(probe: Callable[[], T | None], *, timeout_s: float = 20, what: str = "the condition") -> T:
    """Poll `probe` every 20 ms until it returns something truthy; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s} s")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@dataclass
class GitShim:
    folder: Path

    @classmethod
    def install(cls, root: Path) -> GitShim:
        real = shutil.which("git")
        assert real is not None, "git is needed"
        folder = root / "shim"
        folder.mkdir(parents=True)
        script = folder / "git"
        script.write_text(
            "#!/bin/sh\n"
            'here=$(dirname "$0")\n'
            'if [ "$1" = clone ] && [ -e "$here/block" ]; then\n'
            "  for target; do :; done\n"
            '  mkdir -p "$target" && head -c 1048576 /dev/zero > "$target/pack"\n'
            '  echo $$ > "$here/clone.tmp" && mv "$here/clone.tmp" "$here/clone.pid"\n'
            "  exec sleep 60\n"
            "fi\n"
            f'exec {real} "$@"\n'
        )
        script.chmod(0o755)
        (folder / "block").touch()
        return cls(folder)

    @property
    def path(self) -> str:
        """PATH with the shim first."""
        return f"{self.folder}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"

    def wait_blocked(self) -> int:
        """The pid of the clone that is hanging (waits for it to start)."""
        marker = self.folder / "clone.pid"
        wait_until(lambda: marker.is_file(), what="a blocked git clone")
        return int(marker.read_text())

    def release(self) -> None:
        """Later clones run the real git."""
        (self.folder / "block").unlink(missing_ok=True)


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`evalward serve --role worker` as a process of its own (its log in `log`)."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "evalward", "serve", "--role", "worker", "--workers", "1"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )


def probe_repo(root: Path, repo: str, reads: dict[str, Path], *, port: int, outside: Path) -> tuple[str, str]:
    """A bare repository at root/git/{repo}.git (main, and a feature commit) whose agent tries to read each
    of `reads`, to connect to 127.0.0.1:`port` and to write `outside`; it answers with what it managed, as
    JSON (`read:<length>` / `denied:<error>` — never the contents). Returns (main SHA, feature SHA)."""
    work = root / "probe-work"
    (work / "evals").mkdir(parents=True)
    (work / "evalward.toml").write_text('paths = ["evals"]\nagent = "agent.py:root_agent"\nbase_branch = "main"\n')
    (work / "evals" / "probe.test.json").write_text(
        json.dumps([{"query": "what can you read?", "expected_tool_use": [], "reference": "nothing"}])
    )
    (work / "evals" / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.1}}))
    targets = {name: str(path) for name, path in reads.items()}
    (work / "agent.py").write_text(
        "import json, socket\n\n"
        f"READS = {targets!r}\nPORT = {port}\nOUTSIDE = {str(outside)!r}\n\n\n"
        "def attempt(action):\n"
        "    try:\n"
        "        return 'read:' + str(action())\n"
        "    except Exception as exc:\n"
        "        return 'denied:' + type(exc).__name__\n\n\n"
        "def read(path):\n"
        "    with open(path, 'rb') as handle:\n"
        "        return len(handle.read())\n\n\n"
        "def connect():\n"
        "    socket.create_connection(('127.0.0.1', PORT), timeout=3).close()\n"
        "    return 'connected'\n\n\n"
        "def write():\n"
        "    with open(OUTSIDE, 'w') as handle:\n"
        "        return handle.write('escaped')\n\n\n"
        "def root_agent(request):\n"
        "    found = {name: attempt(lambda path=path: read(path)) for name, path in READS.items()}\n"
        "    found['network'] = attempt(connect)\n"
        "    found['outside'] = attempt(write)\n"
        "    return {'response': json.dumps(found, sort_keys=True), 'tool_calls': []}\n"
    )
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "probe agent")
    main_sha = git(work, "rev-parse", "HEAD")
    git(work, "commit", "-q", "--allow-empty", "-m", "a pull request")
    feature_sha = git(work, "rev-parse", "HEAD")
    bare = root / "git" / f"{repo}.git"
    bare.parent.mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    return main_sha, feature_sha


def agent_answer(run: Any) -> dict[str, str]:
    """What the probe agent answered in a stored run (its one case, one turn)."""
    [case] = run.cases
    answer: dict[str, str] = json.loads(case.invocations[0].actual_response)
    return answer


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox jobs here, or None when it can."""
    from tests.server.conftest import make_settings

    from evalward._server import sandbox

    try:
        sandbox.resolve(make_settings("sqlite:////nonexistent/x.db"))
    except sandbox.SandboxUnavailable as exc:
        return str(exc)
    return None


def sandbox_setting() -> str:
    """`bwrap` where bubblewrap works (or EVALWARD_REQUIRE_SANDBOX says it must), else `unsandboxed`: the tests
    that run real evals through the daemon use the production default wherever the machine allows it."""
    if os.environ.get("EVALWARD_REQUIRE_SANDBOX") or bwrap_problem() is None:
        return "bwrap"
    return "unsandboxed"
