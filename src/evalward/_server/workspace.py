"""A job's workspace: the repository cloned at the head SHA with the installation token kept out of URLs,
command lines and logs, and `evalward run` started in it under the sandbox's limits with a wall-clock
timeout and an environment stripped of every server variable."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalward._server.sandbox import limited_command
from evalward._server.settings import ServerSettings
from evalward._server.worker import JobAborted, JobContext, RetryableJobError

if TYPE_CHECKING:
    from evalward.model import RunResult

STDERR_TAIL_CHARS = 3000
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "TMPDIR")


def git_env(token: str | None, *, allow_file: bool = False) -> dict[str, str]:
    """Environment for git: no prompts, no user/system config, the token as an Authorization header, and
    only the https transport (plus `file` when the settings allow local clones), so neither a clone URL nor
    a submodule or redirect can make git run a command through `ext::` or another helper."""
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": tempfile.gettempdir(),
            "GIT_ALLOW_PROTOCOL": "https:file" if allow_file else "https",
        }
    )
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
        env.update(
            {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        )
    return env


def _git(args: list[str], cwd: Path | None, env: Mapping[str, str], secrets: list[str]) -> None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=600, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RetryableJobError(f"git {args[0]}: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.strip()[-1000:]
        for secret in secrets:
            message = message.replace(secret, "***")
        raise RetryableJobError(f"git {args[0]} failed ({done.returncode}): {message}")


def checkout(settings: ServerSettings, repo: str, sha: str, token: str | None, into: Path) -> Path:
    """Clone `repo` and check out `sha` (detached) in `into/checkout`; return the checkout folder.

    The job's values came from a webhook that was checked where it entered, but the job row sits in a
    database between there and here, so the SHA and repository name are checked again right before git sees
    them, and every positional argument follows `--end-of-options`: nothing can be read as an option."""
    from evalward.identifiers import check_repo_full_name, check_sha

    check_sha(sha, "job payload head_sha")
    check_repo_full_name(repo, "job payload repo")
    url = clone_url(settings, repo)
    env = git_env(token, allow_file=settings.allow_file_clone_urls)
    secrets = [token] if token else []
    target = into / "checkout"
    _git(["clone", "--quiet", "--no-checkout", "--end-of-options", url, str(target)], None, env, secrets)
    _git(["fetch", "--quiet", "--end-of-options", "origin", sha], target, env, secrets)
    switch = ["-c", "advice.detachedHead=false", "switch", "--quiet", "--detach", "--end-of-options", sha]
    _git(switch, target, env, secrets)
    return target


def clone_url(settings: ServerSettings, repo: str) -> str:
    """The URL the worker clones `repo` from, checked again as the settings were (ValueError when refused)."""
    from evalward._server.settings import check_clone_url

    url = settings.clone_url_template.format(repo=repo)
    return check_clone_url(url, api_url=settings.github_api_url, allow_file=settings.allow_file_clone_urls)


# -- running the evals ---------------------------------------------------------------------------------


@dataclass
class EvalProcess:
    exit_code: int
    stderr: str
    run: RunResult | None
    timed_out: bool = False


def run_evals(ctx: JobContext, settings: ServerSettings, workdir: Path, repo_dir: Path, args: list[str]) -> EvalProcess:
    """`evalward run ARGS --json FILE` in `repo_dir` under the sandbox; see the module docstring."""
    from evalward.run_json import load_run_json

    out = workdir / "run.json"
    stderr_path = workdir / "stderr.txt"
    command = [sys.executable, "-m", "evalward", "run", *args, "--json", str(out), "--no-history", "--quiet"]
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update({"HOME": str(workdir), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    with stderr_path.open("wb") as err:
        process = subprocess.Popen(
            limited_command(command, memory_mb=settings.job_memory_mb, cpu_s=settings.job_cpu_s),
            cwd=repo_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,  # its own process group, so a timeout kills the agent's children too
        )
        deadline = time.monotonic() + settings.job_timeout_s
        timed_out = False
        while process.poll() is None:
            if ctx.aborted or time.monotonic() > deadline:
                timed_out = not ctx.aborted
                _kill_group(process)
                break
            time.sleep(0.2)
    if ctx.aborted:
        raise JobAborted
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    run = None
    if out.is_file() and not timed_out:
        run = load_run_json(out.read_text(encoding="utf-8"), source=str(out))
    return EvalProcess(exit_code=process.returncode, stderr=stderr, run=run, timed_out=timed_out)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
