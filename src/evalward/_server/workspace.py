"""A job's workspace: the repository cloned at the head SHA with the installation token kept out of URLs,
command lines and logs, and `evalward run` started in it in the sandbox (`sandbox.py`), under its limits,
with a wall-clock timeout and an environment stripped of every server variable.

Every child process — each git command, each eval run — is started through the launcher in a session (so a
process group) of its own and watched: when the job is cancelled or the worker shuts down
(`ctx.aborted`) the whole group is killed at once (SIGTERM, then SIGKILL) and `JobAborted` raised; a
worker killed outright takes its children with it (the launcher's parent-death signal, bubblewrap's
`--die-with-parent`). A job's folder is `work_dir/job-{id}-{attempt}-…`, so a worker can tell which
folders belong to jobs nobody holds any more (`job_folders`, `Handlers.remove_stale_folders`) and remove them."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from evalward._server.sandbox import Sandbox, launcher_command
from evalward._server.settings import ServerSettings, check_clone_url
from evalward._server.worker import JobAborted, JobContext, RetryableJobError
from evalward.identifiers import check_repo_full_name, check_sha
from evalward.run_json import load_run_json

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


GIT_TIMEOUT_S = 600.0
"""One git command's wall-clock limit (a clone that hangs is retried, not waited for forever)."""
_WATCH_S = 0.05
"""How often a running child is checked for the job's abort."""


def supervise(
    ctx: JobContext | None,
    command: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    timeout_s: float,
    stderr: IO[bytes] | int,
) -> tuple[int, bool]:
    """Run `command` in a session of its own until it exits; (exit code, timed out).

    Its process group is killed when `timeout_s` passes (timed out) or the job is aborted (then `JobAborted`)."""
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,  # its own process group: killing it reaches every child
    )
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                return process.wait(timeout=_WATCH_S), False
            except subprocess.TimeoutExpired:
                pass
            if ctx is not None and ctx.aborted:
                raise JobAborted
            if time.monotonic() > deadline:
                kill_group(process)
                return process.returncode, True
    except BaseException:
        kill_group(process)
        raise


def _git(ctx: JobContext | None, args: list[str], cwd: Path | None, env: Mapping[str, str], secrets: list[str]) -> None:
    with tempfile.TemporaryFile() as err:
        try:
            code, timed_out = supervise(
                ctx, launcher_command(["git", *args]), cwd=cwd, env=env, timeout_s=GIT_TIMEOUT_S, stderr=err
            )
        except OSError as exc:
            raise RetryableJobError(f"git {args[0]}: {exc}") from exc
        if timed_out:
            raise RetryableJobError(f"git {args[0]}: no answer within {GIT_TIMEOUT_S:.0f} s")
        if code == 0:
            return
        err.seek(0)
        message = err.read().decode("utf-8", errors="replace").strip()[-1000:]
    for secret in secrets:
        message = message.replace(secret, "***")
    raise RetryableJobError(f"git {args[0]} failed ({code}): {message}")


def checkout(
    settings: ServerSettings, repo: str, sha: str, token: str | None, into: Path, ctx: JobContext | None = None
) -> Path:
    """Clone `repo` and check out `sha` (detached) in `into/checkout`; return the checkout folder.

    The job's values came from a webhook that was checked where it entered, but the job row sits in a
    database between there and here, so the SHA and repository name are checked again right before git sees
    them, and every positional argument follows `--end-of-options`: nothing can be read as an option.
    With `ctx`, an abort of the job kills the git command that is running (`supervise`)."""
    check_sha(sha, "job payload head_sha")
    check_repo_full_name(repo, "job payload repo")
    url = clone_url(settings, repo)
    env = git_env(token, allow_file=settings.allow_file_clone_urls)
    secrets = [token] if token else []
    target = into / "checkout"
    _git(ctx, ["clone", "--quiet", "--no-checkout", "--end-of-options", url, str(target)], None, env, secrets)
    _git(ctx, ["fetch", "--quiet", "--end-of-options", "origin", sha], target, env, secrets)
    switch = ["-c", "advice.detachedHead=false", "switch", "--quiet", "--detach", "--end-of-options", sha]
    _git(ctx, switch, target, env, secrets)
    return target


def clone_url(settings: ServerSettings, repo: str) -> str:
    """The URL the worker clones `repo` from, checked again as the settings were (ValueError when refused)."""
    url = settings.clone_url_template.format(repo=repo)
    return check_clone_url(url, api_url=settings.github_api_url, allow_file=settings.allow_file_clone_urls)


# -- running the evals ---------------------------------------------------------------------------------


@dataclass
class EvalProcess:
    exit_code: int
    stderr: str
    run: RunResult | None
    timed_out: bool = False


def run_evals(
    ctx: JobContext,
    settings: ServerSettings,
    workdir: Path,
    repo_dir: Path,
    args: list[str],
    *,
    sandbox: Sandbox,
    writable: Sequence[Path] = (),
) -> EvalProcess:
    """`evalward run ARGS --json FILE` in `repo_dir` in `sandbox`, which lets it write to `workdir` and `writable`
    only (bubblewrap); see the module docstring."""
    out = workdir / "run.json"
    stderr_path = workdir / "stderr.txt"
    command = [sys.executable, "-m", "evalward", "run", *args, "--json", str(out), "--no-history", "--quiet"]
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update({"HOME": str(workdir), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"})
    boxed = sandbox.command(command, cwd=repo_dir, writable=[workdir, *writable])
    with stderr_path.open("wb") as err:
        code, timed_out = supervise(
            ctx,
            launcher_command(boxed, memory_mb=settings.job_memory_mb, cpu_s=settings.job_cpu_s),
            cwd=repo_dir,
            env=sandbox.environment(env),
            timeout_s=settings.job_timeout_s,
            stderr=err,
        )
    stderr = stderr_path.read_text(encoding="utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    run = None
    if out.is_file() and not timed_out:
        run = load_run_json(out.read_text(encoding="utf-8"), source=str(out))
    return EvalProcess(exit_code=code, stderr=stderr, run=run, timed_out=timed_out)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    """End the process group of `process` (its own session): SIGTERM, up to 2 s for its leader to exit, then
    SIGKILL for whatever is left in the group; the leader is reaped."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        if sig == signal.SIGTERM:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2.0)
    with contextlib.suppress(subprocess.TimeoutExpired):  # a process stuck in uninterruptible I/O stays a zombie
        process.wait(timeout=10.0)


# -- job folders ---------------------------------------------------------------------------------------

_JOB_FOLDER = re.compile(r"^job-(\d+)-(?:(\d+)-)?")
"""`job-{id}-{attempt}-…`, or `job-{id}-…` as folders were named before the attempt was part of the name."""


def job_folder(settings: ServerSettings, job_id: int, attempt: int) -> Path:
    """A fresh folder for this attempt of the job under `work_dir` (`job-{id}-{attempt}-…`)."""
    root = Path(settings.work_dir)
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"job-{job_id}-{attempt}-", dir=root))


def job_folders(settings: ServerSettings) -> list[tuple[Path, int, int | None]]:
    """(folder, job id, attempt — None for an old-style name) of every job folder under `work_dir`."""
    root = Path(settings.work_dir)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    found: list[tuple[Path, int, int | None]] = []
    for entry in entries:
        match = _JOB_FOLDER.match(entry.name)
        if match and entry.is_dir() and not entry.is_symlink():
            attempt = int(match.group(2)) if match.group(2) else None
            found.append((entry, int(match.group(1)), attempt))
    return found
