"""Job handlers: `evaluate` (clone, run, store, gate, report), `notice` (a held fork PR), `installation`.

`evaluate`, step by step:
1. An installation token for the job's installation (cached until 5 min before expiry, `app_auth`).
2. `git clone` of `clone_url_template.format(repo=…)` into a fresh folder under `work_dir`, then a detached
   checkout of the head SHA. The token travels as an `http.extraHeader` set through `GIT_CONFIG_*`
   variables — never in the URL, the command line, a file or a log line.
3. The repository's own settings (`evalward.toml` or `[tool.evalward]`) name the eval paths and the agent;
   without them the check run says how to add them (conclusion `neutral`).
4. `evalward run … --json` in a subprocess in the checkout, under `sandbox.py`'s limits, with a wall-clock
   timeout and an environment stripped of every server variable (no secrets reach repository code).
   Exit 0/1 are verdicts (data); other exits become a `failure` check run showing the tail of stderr.
5. The run is stored (`Store.import_run`, idempotent by run id), gated against its baseline
   (`gating.gate_run` in the checkout, so merge-base and first-parent ancestors come from git), and
   reported like the Action does: one check run on the head SHA and the sticky PR comment, both from
   `report/` (`render_verdict_markdown`, else `render_run_markdown`). A `baseline` job (push to a base
   branch) is stored and gets a check run, no comment.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward.server.sandbox import limited_command
from evalward.server.settings import ServerSettings
from evalward.server.worker import Handler, JobAborted, JobContext, RetryableJobError

if TYPE_CHECKING:
    from evalward.github.client import GitHubClient
    from evalward.model import RunResult
    from evalward.server.queue import JobQueue
    from evalward.store import Store

log = logging.getLogger("evalward.server.evaluate")

STDERR_TAIL_CHARS = 3000
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "SYSTEMROOT", "TMPDIR")
CONCLUSION_BY_OUTCOME = {"pass": "success", "fail": "failure", "inconclusive": "neutral"}


@dataclass
class GitHubAccess:
    """How a worker talks to GitHub: installation tokens from the App's key, or a fixed token (tests, GHES PAT)."""

    settings: ServerSettings
    transport_factory: Callable[[], Any] | None = None
    _cache: Any = None
    _bot_login: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _client(self, token: str | None) -> GitHubClient:
        from evalward.github.client import GitHubClient

        transport = self.transport_factory() if self.transport_factory else None
        return GitHubClient(token, api_url=self.settings.github_api_url, transport=transport, max_retries=3)

    def token(self, installation_id: int | None) -> str | None:
        """An installation token, or None when the App is not configured or the job names no installation."""
        if not self.settings.app_configured or installation_id is None:
            return None
        from evalward.github.app_auth import InstallationTokenCache
        from evalward.server.logs import REDACTOR

        with self._lock:
            if self._cache is None:
                key = self.settings.private_key_pem() or ""
                REDACTOR.add(key)
                self._cache = InstallationTokenCache(lambda: self._client(None), str(self.settings.github_app_id), key)
        token: str = self._cache.token_for(installation_id)
        REDACTOR.add(token)
        return token

    def bot_login(self) -> str | None:
        """`{slug}[bot]`, the author of our sticky comments (asked once with the App's JWT)."""
        if not self.settings.app_configured:
            return None
        with self._lock:
            if self._bot_login is None:
                from evalward.github.app_auth import app_jwt

                jwt = app_jwt(str(self.settings.github_app_id), self.settings.private_key_pem() or "")
                with self._client(None) as client:
                    self._bot_login = client.get_authenticated_app_login(jwt)
            return self._bot_login

    def client(self, token: str) -> GitHubClient:
        return self._client(token)


# -- git -------------------------------------------------------------------------------------------------


def git_env(token: str | None) -> dict[str, str]:
    """Environment for git: no prompts, no user/system config, and the token as an Authorization header."""
    env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "HOME": tempfile.gettempdir()})
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
    """Clone `repo` and check out `sha` (detached) in `into/checkout`; return the checkout folder."""
    url = settings.clone_url_template.format(repo=repo)
    env = git_env(token)
    secrets = [token] if token else []
    target = into / "checkout"
    _git(["clone", "--quiet", "--no-checkout", url, str(target)], None, env, secrets)
    _git(["fetch", "--quiet", "origin", sha], target, env, secrets)
    _git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", sha], target, env, secrets)
    return target


# -- running the evals ---------------------------------------------------------------------------------


@dataclass
class EvalProcess:
    exit_code: int
    stderr: str
    run: RunResult | None
    timed_out: bool = False


def run_evals(ctx: JobContext, settings: ServerSettings, workdir: Path, repo_dir: Path, args: list[str]) -> EvalProcess:
    """`evalward run ARGS --json FILE` in `repo_dir` under the sandbox; see the module docstring."""
    from evalward.report.json_report import load_run_json

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


# -- the handlers ------------------------------------------------------------------------------------------


@dataclass
class Handlers:
    """The production handlers, sharing the store, the queue and GitHub access."""

    settings: ServerSettings
    store: Store
    queue: JobQueue
    github: GitHubAccess

    def table(self) -> dict[str, Handler]:
        return {"evaluate": self.evaluate, "notice": self.notice, "installation": lambda ctx: None}

    # -- notice

    def notice(self, ctx: JobContext) -> dict[str, Any]:
        """A held PR: a `neutral` check run telling maintainers how to approve it."""
        p = ctx.job.payload
        label = p.get("run_label") or self.settings.run_label
        summary = (
            f"This pull request {p.get('reason', 'is not trusted')}, so evalward has not run its code.\n\n"
            f"A maintainer can run the evals by adding the label `{label}` to the pull request, or by "
            "re-running this check."
        )
        posted = self._post_check(p, "neutral", "Waiting for a maintainer", summary)
        return {"conclusion": "neutral", "check_run": posted}

    # -- evaluate

    def evaluate(self, ctx: JobContext) -> dict[str, Any]:
        from evalward.config import find_config, load_config
        from evalward.errors import EvalwardError

        p = dict(ctx.job.payload)
        repo, sha = str(p["repo"]), str(p["head_sha"])
        if p.get("pr_number") is None and p.get("mode") != "baseline":
            p.update(
                {k: v for k, v in (self.queue.context_for(repo, sha) or {}).items() if k not in ("delivery", "event")}
            )
        try:
            token = self.github.token(p.get("installation_id"))
        except EvalwardError as exc:
            raise RetryableJobError(f"no installation token: {exc}") from exc
        Path(self.settings.work_dir).mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix=f"job-{ctx.job.id}-", dir=self.settings.work_dir))
        try:
            ctx.check()
            repo_dir = checkout(self.settings, repo, sha, token, workdir)
            ctx.check()
            try:
                found = find_config(repo_dir)
                config = load_config(found) if found else None
            except EvalwardError as exc:
                return self._report_problem(p, token, "evalward configuration is invalid", str(exc))
            if config is None or not config.settings.paths or not config.settings.agent:
                return self._report_problem(
                    p,
                    token,
                    "No evalward configuration",
                    "Add an `evalward.toml` (or `[tool.evalward]` in pyproject.toml) with `paths` and `agent` "
                    "to the repository so evalward knows what to run.",
                    conclusion="neutral",
                )
            run_id = f"job{ctx.job.id}-{ctx.job.attempt}-{sha[:12]}"
            args = [*config.settings.paths, "--agent", config.settings.agent, "--run-id", run_id, "--repo", repo,
                    "--commit", sha]  # fmt: skip
            if p.get("head_ref"):
                args += ["--branch", str(p["head_ref"])]
            base_branch = p.get("base_ref") or config.settings.base_branch
            if base_branch:
                args += ["--base-branch", str(base_branch)]
            if p.get("base_sha"):
                args += ["--base-sha", str(p["base_sha"])]
            if p.get("pr_number") is not None:
                args += ["--pr", str(p["pr_number"])]
            result = run_evals(ctx, self.settings, workdir, repo_dir, args)
            if result.run is None:
                why = (
                    f"the evals did not finish within {self.settings.job_timeout_s:.0f} s"
                    if result.timed_out
                    else f"`evalward run` exited with code {result.exit_code} and wrote no run"
                )
                return self._report_problem(p, token, "The evals did not run", why, stderr=result.stderr)
            ctx.check()
            self.store.import_run(result.run)
            return self._gate_and_report(ctx, p, token, result.run, config.settings, found, repo_dir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _gate_and_report(
        self,
        ctx: JobContext,
        p: dict[str, Any],
        token: str | None,
        run: RunResult,
        repo_settings: Any,
        config_path: Path | None,
        repo_dir: Path,
    ) -> dict[str, Any]:
        from evalward.gating import gate_run, load_policy

        details = f"{self.settings.base_url.rstrip('/')}/runs/{run.run_id}" if self.settings.base_url else None
        if p.get("mode") == "baseline":
            from evalward.report.markdown import render_run_markdown

            conclusion = "success" if run.passed else "failure"
            markdown = render_run_markdown(run, title=self.settings.check_name, details_url=details)
            title = f"Baseline run {'passed' if run.passed else 'failed'}"
            check = self._post_check(p, conclusion, title, markdown, token=token, details_url=details)
            return {"run_id": run.run_id, "conclusion": conclusion, "check_run": check}
        policy = load_policy(repo_settings.gate, config_path=str(config_path) if config_path else None)
        outcome = gate_run(
            self.store, run, policy, base_branch=p.get("base_ref"), repo_dir=repo_dir, allow_mismatch=True
        )
        verdict = outcome.verdict
        markdown = render_verdict(run, verdict, outcome.baseline, title=self.settings.check_name, details_url=details)
        conclusion = CONCLUSION_BY_OUTCOME.get(verdict.outcome, "neutral")
        ctx.check()
        check = self._post_check(p, conclusion, f"{verdict.outcome}: {verdict.reason}"[:200], markdown, token=token,
                                 details_url=details)  # fmt: skip
        comment = None
        if token is not None and p.get("pr_number") is not None:
            from evalward.github.sticky import upsert_sticky_comment

            bot = self.github.bot_login()
            with self.github.client(token) as client:
                posted = upsert_sticky_comment(
                    client,
                    str(p["repo"]),
                    int(p["pr_number"]),
                    markdown,
                    marker_id=f"{self.settings.check_name}/{p.get('suite', 'default')}",
                    bot_logins=(bot,) if bot else (),
                )
            comment = {"id": posted.id, "action": posted.action}
        return {"run_id": run.run_id, "conclusion": conclusion, "outcome": verdict.outcome, "check_run": check,
                "comment": comment}  # fmt: skip

    def _report_problem(
        self,
        p: dict[str, Any],
        token: str | None,
        title: str,
        message: str,
        *,
        stderr: str | None = None,
        conclusion: str = "failure",
    ) -> dict[str, Any]:
        from evalward.report.escape import md_code_block

        summary = message + (f"\n\n{md_code_block(stderr)}" if stderr else "")
        check = self._post_check(p, conclusion, title, summary, token=token)
        return {"conclusion": conclusion, "problem": message[:500], "check_run": check}

    def _post_check(
        self,
        p: Mapping[str, Any],
        conclusion: str,
        title: str,
        summary: str,
        *,
        token: str | None = None,
        details_url: str | None = None,
    ) -> int | None:
        """Post the check run; None when there is no GitHub access (no App configured)."""
        from evalward.github.checks import post_check_run
        from evalward.github.client import GitHubError, GitHubPermissionError

        token = token or self.github.token(p.get("installation_id"))
        if token is None:
            return None
        try:
            with self.github.client(token) as client:
                answer = post_check_run(
                    client,
                    str(p["repo"]),
                    str(p["head_sha"]),
                    name=self.settings.check_name,
                    conclusion=conclusion,
                    title=title,
                    summary=summary,
                    details_url=details_url,
                    external_id=f"evalward:{p.get('suite', 'default')}",
                )
        except GitHubPermissionError:
            raise
        except GitHubError as exc:
            raise RetryableJobError(str(exc)) from exc
        return int(answer["id"])


def render_verdict(
    run: RunResult, verdict: Any, baseline: RunResult | None, *, title: str, details_url: str | None
) -> str:
    """The PR comment body: the Action's verdict markdown (report.comparison), else the run's markdown."""
    try:
        from evalward.report.comparison import render_verdict_markdown
    except ImportError:  # report.comparison not shipped yet: the run report is still correct, if less detailed
        from evalward.report.markdown import render_run_markdown

        return render_run_markdown(run, title=title, details_url=details_url)
    return render_verdict_markdown(run, verdict, baseline=baseline, title=title, details_url=details_url)
