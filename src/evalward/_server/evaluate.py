"""Job handlers: `evaluate` (clone, run, store, gate, report), `notice` (a held fork PR), `installation`.

`evaluate`, step by step:
1. An installation token for the job's installation (cached until 5 min before expiry, `app_auth`).
1a. **Write access.** When the job names a login in `verify_write_access` (the PR author, or whoever added
   the run label), `GET /repos/{owner}/{repo}/collaborators/{login}/permission` must answer `admin`,
   `maintain` or `write` (404 = no access); answers are cached `permission_cache_s` per (repo, login).
   Otherwise — or when GitHub cannot tell us after the client's retries with back-off — the job is
   **held**, never run: a neutral check run says why and how a maintainer approves (the run label, or
   re-running the check), and the job waits in `held`.
1b. The job's check run goes `in_progress` (with `started_at`); every later outcome completes that same
   check run by id, and **every check run the daemon opens is completed** whatever ends the job, each with
   one line of why — the check runs' bookkeeping and their sweeper are `check_runs.py`.
1c. **The sandbox** (`sandbox.resolve`): bubblewrap, probed once; when it cannot run here and the operator
   has not set `sandbox = "unsandboxed"`, the job is refused (`JobRefused`, the check run says why).
2. `git clone` of `clone_url_template.format(repo=…)` into a fresh folder `work_dir/job-{id}-{attempt}-…`,
   then a detached checkout of the head SHA. The token travels as an `http.extraHeader` set through
   `GIT_CONFIG_*` variables — never in the URL, the command line, a file or a log line. A cancelled job's
   git is killed at once (`workspace.supervise`); folders of jobs nobody holds any more (a worker killed
   with `kill -9`) are removed by `maintenance`.
3. The repository's own settings (`evalward.toml` or `[tool.evalward]`) name the eval paths and the agent;
   without them the check run says how to add them (conclusion `neutral`).
4. `evalward run … --json` in a subprocess in the checkout, in the sandbox and under `sandbox.py`'s limits,
   with a wall-clock timeout and an environment stripped of every server variable (no secrets reach
   repository code). Exit 0/1 are verdicts (data); other exits become a `failure` check run showing the
   tail of stderr.
5. The run is stored (`Store.import_run`, idempotent by run id). When no stored run at the PR's merge-base
   covers its cases, the base side is run on demand (`_run_base_side`): the merge-base in a git worktree of
   the job's clone, its agent on the PR's eval files, in the same sandbox, stored at the merge-base.
6. The run is gated against its baseline
   (`_gating.gate_run` in the checkout, so merge-base and first-parent ancestors come from git), and
   reported exactly as the Action reports: rendered by `_ci.render.render_outcome` and posted by
   `github.publish` — the job's check run completed with the verdict and its annotations, and on a PR the
   sticky comment (marker `<!-- evalward:{check_name}/{suite} -->`, then the verdict line). A `baseline` job
   (push to a base branch) is stored and gets a check run, no comment: gated against the commit before the push
   when that commit's run is stored (recorded, as a PR's verdict is), else judged by its thresholds alone.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalward._ci.exit_code import ALL_FAIL_CLASSES, decide_exit
from evalward._ci.render import render_outcome
from evalward._gating import base_side as bs
from evalward._gating import gate_run, load_policy, plan_baseline
from evalward._options.option import command_line, option_fields
from evalward._options.run_values import RunValues
from evalward._server import sandbox as sandboxes
from evalward._server.check_runs import CheckRuns
from evalward._server.github_access import GitHubAccess
from evalward._server.settings import ServerSettings
from evalward._server.worker import Handler, JobAborted, JobContext, JobHeld, JobRefused, RetryableJobError
from evalward._server.workspace import checkout, job_folder, job_folders, run_evals
from evalward.config import find_config, load_config
from evalward.errors import EvalwardError
from evalward.github.client import WRITE_PERMISSIONS, GitHubError, GitHubPermissionError
from evalward.github.publish import Target, publish
from evalward.report.escape import md_code_block
from evalward.report.markdown import render_run_markdown

if TYPE_CHECKING:
    from evalward._gating import GateOutcome
    from evalward._server.sandbox import Sandbox
    from evalward.model import RunResult
    from evalward.store import Store
    from evalward.store.job_queue import JobQueue

log = logging.getLogger("evalward._server.evaluate")

_FILE_OPTIONS = frozenset(item.name for item in option_fields(RunValues) if item.option.path == "existing_file")
"""Run options naming a file (`--test-config`, …): relative to the repository's checkout."""
_APPROVAL_KEYS = ("approval", "verify_write_access", "result")
"""Payload keys a re-run must not inherit from the earlier job at the same head (re-running approves it)."""


@dataclass(frozen=True)
class Published:
    """What `_publish` posted for a verdict (ids are None when there was no GitHub access)."""

    conclusion: str
    check_run_id: int | None = None
    comment_id: int | None = None
    comment_action: str | None = None


# -- the handlers ------------------------------------------------------------------------------------------


@dataclass
class Handlers(CheckRuns):
    """The production handlers, sharing the store, the queue and GitHub access (their check runs: `CheckRuns`)."""

    settings: ServerSettings
    store: Store
    queue: JobQueue
    github: GitHubAccess
    _sandbox_checked: bool = field(default=False, init=False, repr=False)
    _sweep_retry: dict[int, tuple[int, float]] = field(default_factory=dict, init=False, repr=False)
    """{job id: (failed completions, when to try again)} for check runs GitHub would not let us complete."""

    def table(self) -> dict[str, Handler]:
        return {"evaluate": self.evaluate, "notice": self.notice, "installation": lambda ctx: None}

    # -- notice

    def notice(self, ctx: JobContext) -> dict[str, Any]:
        """A held PR: a `neutral` check run telling maintainers how to approve it."""
        p = ctx.job.payload
        label = p.get("run_label") or self.settings.run_label
        removed = self._remove_stale_label(p, None)
        summary = (
            f"This pull request {p.get('reason', 'is not trusted')}, so evalward has not run its code.{removed}\n\n"
            f"A maintainer can run the evals at this commit by adding the label `{label}` to the pull request, or "
            "by re-running this check."
        )
        posted = self._post_check(
            p,
            "neutral",
            "Waiting for a maintainer",
            summary,
            external_id=f"{self._external_prefix(p)}:notice{ctx.job.id}",
        )
        return {"conclusion": "neutral", "check_run": posted}

    def _remove_stale_label(self, p: Mapping[str, Any], token: str | None) -> str:
        """Take the run label off a PR whose head moved since it was added (`stale_run_label`), so that the
        label on a PR always means "this head is approved" and adding it again is how to approve the new one.
        Returns a sentence for the check run ("" when there was nothing to remove or no GitHub access)."""
        label, number = p.get("stale_run_label"), p.get("pr_number")
        if not label or not isinstance(number, int):
            return ""
        token = token or self.github.token(p.get("installation_id"))
        if token is None:
            return ""
        try:
            with self.github.client(token) as client:
                client.remove_issue_label(str(p["repo"]), number, str(label))
        except GitHubError as exc:
            # The job stays held either way; a label left behind only means the PR looks approved when it is not.
            log.warning("could not remove the stale run label: %s", exc, extra={"repo": p.get("repo")})
            return f" The label `{label}` could not be removed ({exc.message}); remove and add it again to approve."
        return (
            f" The label `{label}` was removed: it approved an earlier commit, and every new commit pushed by "
            "someone without write access needs its own approval."
        )

    # -- write access

    def _confirm_write_access(self, ctx: JobContext, p: Mapping[str, Any], token: str | None) -> None:
        """Return when the job may run; else post a neutral check run saying why and raise `JobHeld`."""
        who = p.get("verify_write_access")
        if who is None:
            return
        repo = str(p["repo"])
        whose = "the label was added by" if p.get("approval") == "label" else "the pull request author is"
        if not who:
            reason = "the webhook did not name the user, so their write access could not be checked"
        elif token is None:
            reason = f"no GitHub App is configured, so the write access of `{who}` could not be checked"
        else:
            try:
                permission = self.github.permission(repo, str(who), token)
            except GitHubError as exc:
                reason = (
                    f"GitHub did not say whether `{who}` has write access to {repo} "
                    f"({exc.status if exc.status is not None else 'no answer'}: {exc.message}), and evalward "
                    "does not run code it could not vouch for"
                )
            else:
                if permission in WRITE_PERMISSIONS:
                    return
                reason = f"{whose} `{who}`, whose permission on {repo} is `{permission}` (write access is needed)"
        label = self.settings.run_label
        removed = ""
        if p.get("stale_run_label"):
            reason += f"; the label `{p['stale_run_label']}` approved an earlier commit, not this one"
            removed = self._remove_stale_label(p, token)
        summary = (
            f"evalward has not run this pull request's code: {reason}.{removed}\n\n"
            f"A maintainer can run the evals at this commit by adding the label `{label}` to the pull request, or "
            "by re-running this check."
        )
        try:
            self._post_check(
                p, "neutral", "Waiting for a maintainer", summary, token=token,
                external_id=f"{self._external_prefix(p)}:hold{ctx.job.id}.{ctx.job.attempt}",
            )  # fmt: skip
        except (GitHubError, RetryableJobError) as exc:
            # Held either way: failing to say so must not turn into running the code.
            log.warning("could not post the held check run: %s", exc, extra={"job": ctx.job.id})
        log.info("job held: %s", reason, extra={"job": ctx.job.id, "repo": repo})
        raise JobHeld(reason)

    # -- evaluate

    def evaluate(self, ctx: JobContext) -> dict[str, Any]:
        p = dict(ctx.job.payload)
        repo, sha = str(p["repo"]), str(p["head_sha"])
        if p.get("pr_number") is None and p.get("mode") != "baseline":
            context = self.queue.context_for(repo, sha) or {}
            skip = ("delivery", "event", *_APPROVAL_KEYS)
            p.update({k: v for k, v in context.items() if k not in skip})
        try:
            token = self.github.token(p.get("installation_id"))
        except EvalwardError as exc:
            raise RetryableJobError(f"no installation token: {exc}") from exc
        self._confirm_write_access(ctx, p, token)
        check_id = self._start_check(ctx, p, token)
        try:
            try:
                sandbox = sandboxes.resolve(self.settings)
            except sandboxes.SandboxUnavailable as exc:
                self._close_check(ctx.job.id, p, token, check_id, "failure", "The evals did not run", str(exc))
                raise JobRefused(str(exc)) from exc
            result = self._evaluate(ctx, p, token, check_id, sandbox)
        except JobAborted:
            self._close_interrupted(ctx, p, token, check_id)
            raise
        except (JobHeld, JobRefused):
            raise
        except RetryableJobError as exc:
            if ctx.job.attempt >= self.queue.max_attempts:
                self._close_failed(ctx, p, token, check_id, f"Giving up after {ctx.job.attempt} attempts: {exc}")
            raise
        except Exception as exc:
            self._close_failed(
                ctx, p, token, check_id, f"evalward hit an internal error ({type(exc).__name__}); see the server log."
            )
            raise
        if check_id is not None:
            self.queue.check_run_closed(ctx.job.id)  # completed with the verdict or the problem
        return result

    # -- housekeeping

    def maintenance(self) -> None:
        """What a worker does between jobs: `sweep_check_runs`, then `remove_stale_folders` (and, the first time,
        find out whether repository code can be sandboxed here, so an operator sees it in the log at start)."""
        if not self._sandbox_checked:
            self._sandbox_checked = True
            try:
                found = sandboxes.resolve(self.settings)
            except sandboxes.SandboxUnavailable as exc:
                log.error("every job that runs repository code will be refused: %s", exc)
            else:
                log.info("repository code runs %s", "in bubblewrap" if found.mode == "bwrap" else "UNSANDBOXED")
        self.sweep_check_runs()
        self.remove_stale_folders()

    def remove_stale_folders(self) -> list[str]:
        """Remove the job folders under `work_dir` whose (job, attempt) no worker holds any more — left by a
        worker that was killed, or that stopped before removing them; the names removed."""
        folders = job_folders(self.settings)
        if not folders:
            return []
        held = self.queue.running_attempts(job_id for _, job_id, _ in folders)
        removed = []
        for folder, job_id, attempt in folders:
            if job_id in held and attempt in (held[job_id], None):
                continue
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
        if removed:
            log.info("removed %d stale job folders", len(removed), extra={"folders": removed[:20]})
        return removed

    def _evaluate(
        self, ctx: JobContext, p: dict[str, Any], token: str | None, check_id: int | None, sandbox: Sandbox
    ) -> dict[str, Any]:
        repo, sha = str(p["repo"]), str(p["head_sha"])
        workdir = job_folder(self.settings, ctx.job.id, ctx.job.attempt)
        try:
            ctx.check()
            repo_dir = checkout(self.settings, repo, sha, token, workdir, ctx)
            ctx.check()
            try:
                found = find_config(repo_dir)
                config = load_config(found) if found else None
            except EvalwardError as exc:
                return self._report_problem(p, token, "evalward configuration is invalid", str(exc), check_id=check_id)
            if config is None or not config.settings.run.paths or not config.settings.run.agent:
                return self._report_problem(
                    p,
                    token,
                    "No evalward configuration",
                    "Add an `evalward.toml` (or `[tool.evalward]` in pyproject.toml) with `paths` and `agent` "
                    "to the repository so evalward knows what to run.",
                    conclusion="neutral",
                    check_id=check_id,
                )
            run_id = f"job{ctx.job.id}-{ctx.job.attempt}-{sha[:12]}"
            args = [*config.settings.run.paths, "--agent", config.settings.run.agent, "--run-id", run_id, "--repo", repo,
                    "--commit", sha]  # fmt: skip
            if p.get("head_ref"):
                args += ["--branch", str(p["head_ref"])]
            base_branch = p.get("base_ref") or config.settings.recording.base_branch
            if base_branch:
                args += ["--base-branch", str(base_branch)]
            if p.get("base_sha"):
                args += ["--base-sha", str(p["base_sha"])]
            if p.get("pr_number") is not None:
                args += ["--pr", str(p["pr_number"])]
            result = run_evals(ctx, self.settings, workdir, repo_dir, args, sandbox=sandbox)
            if result.run is None:
                why = (
                    f"the evals did not finish within {self.settings.job_timeout_s:.0f} s"
                    if result.timed_out
                    else f"`evalward run` exited with code {result.exit_code} and wrote no run"
                )
                return self._report_problem(
                    p, token, "The evals did not run", why, stderr=result.stderr, check_id=check_id
                )
            ctx.check()
            self.store.import_run(result.run)
            if p.get("mode") != "baseline":
                self._run_base_side(ctx, p, result.run, config.settings, repo_dir, workdir, sandbox)
            return self._gate_and_report(ctx, p, token, result.run, config.settings, found, repo_dir, check_id)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run_base_side(
        self,
        ctx: JobContext,
        p: Mapping[str, Any],
        run: RunResult,
        settings: Any,
        repo_dir: Path,
        workdir: Path,
        sandbox: Sandbox,
    ) -> None:
        """The base side on demand, as `evalward ci` makes it (docs/gate.md §9), in the job's sandbox: when no stored
        run at the merge-base covers the PR's cases, the merge-base is checked out beside the PR's checkout and
        `evalward run` runs its agent there on the PR's eval files (absolute paths, the PR's criteria), and the
        run is stored at the merge-base for the gate to find. Sequential here (each run is a sandboxed process of
        its own); any failure leaves the gate without that baseline, which it reports."""
        base_branch = p.get("base_ref") or settings.recording.base_branch
        plan = plan_baseline(
            self.store,
            run,
            baseline_spec="auto",
            base_branch=str(base_branch) if base_branch else None,
            repo_dir=repo_dir,
            remote=None,
            baseline_run="missing",
            can_run_base_side=True,
        )
        if not plan.base_side_cases or plan.merge_base is None:
            return
        try:
            with bs.base_checkout(repo_dir, plan.merge_base) as base:
                target = bs.base_agent_target(base, str(settings.run.agent))
                args = [str(repo_dir / path) for path in settings.run.paths]
                args += ["--agent", target, "--run-id", f"{run.run_id}-base", "--commit", plan.merge_base]
                if run.context.repository:
                    args += ["--repo", run.context.repository]
                if base_branch:
                    args += ["--branch", str(base_branch)]
                # The head's settings apply to the base side too (its criteria, repetitions, judge…), with
                # the files they name read from the head's checkout.
                given = {
                    name: str(repo_dir / value) if name in _FILE_OPTIONS else value
                    for name, value in settings.given.items()
                    if name not in ("paths", "agent")
                }
                args += command_line(given, RunValues)
                folder = workdir / "base-side"
                folder.mkdir(exist_ok=True)
                result = run_evals(
                    ctx, self.settings, folder, base.cwd, args, sandbox=sandbox, writable=[workdir, base.root]
                )
        except bs.BaseSideUnavailable as exc:
            log.info("no base side for job %s: %s", ctx.job.id, exc, extra={"job": ctx.job.id})
            return
        if result.run is None:
            log.info("the base side of job %s wrote no run (exit %s)", ctx.job.id, result.exit_code)
            return
        context = result.run.context.model_copy(update={"base_side_for": run.context.commit or "unknown"})
        self.store.import_run(result.run.model_copy(update={"context": context}))

    def _gate_and_report(
        self,
        ctx: JobContext,
        p: dict[str, Any],
        token: str | None,
        run: RunResult,
        repo_settings: Any,
        config_path: Path | None,
        repo_dir: Path,
        check_id: int | None = None,
    ) -> dict[str, Any]:
        details = f"{self.settings.base_url.rstrip('/')}/runs/{run.run_id}" if self.settings.base_url else None
        if p.get("mode") == "baseline" and not self._previous_push_stored(run):
            conclusion = "success" if run.passed else "failure"
            markdown = render_run_markdown(run, title=self.settings.check_name, details_url=details)
            title = f"Baseline run {'passed' if run.passed else 'failed'}"
            check = self._post_check(
                p, conclusion, title, markdown, token=token, details_url=details, check_run_id=check_id
            )
            return {"run_id": run.run_id, "conclusion": conclusion, "check_run": check}
        policy = load_policy(repo_settings.gate, config_path=str(config_path) if config_path else None)
        outcome = gate_run(
            self.store,
            run,
            policy,
            base_branch=p.get("base_ref"),
            repo_dir=repo_dir,
            allow_mismatch=True,
            record="serve",
        )
        ctx.check()
        posted = self._publish(p, token, outcome, repo_dir, details, check_id)
        comment = None if posted.comment_id is None else {"id": posted.comment_id, "action": posted.comment_action}
        return {"run_id": run.run_id, "conclusion": posted.conclusion, "outcome": outcome.verdict.outcome,
                "check_run": posted.check_run_id, "comment": comment}  # fmt: skip

    def _previous_push_stored(self, run: RunResult) -> bool:
        """A push to a base branch is gated as `evalward ci` gates one, against the commit the branch pointed at
        before (its `base_sha`), when that commit's complete run is stored: a regression on the base branch is
        then a finding at its first bad commit. Without one (the first push, a run that failed) the thresholds
        alone judge the run, as before."""
        before = run.context.base_sha
        if not before or not run.context.repository:
            return False
        stored = self.store.list_runs(repository=run.context.repository, commit=before, status="complete", limit=1)
        return bool(stored)

    def _publish(
        self,
        p: Mapping[str, Any],
        token: str | None,
        outcome: GateOutcome,
        repo_dir: Path,
        details_url: str | None,
        check_id: int | None,
    ) -> Published:
        """The verdict posted as the Action posts it (`_ci.render` + `github.publish`): the job's check run
        completed by id, and the sticky comment `<!-- evalward:{check_name}/{suite} -->` on a PR. Every blocking
        finding fails the check (`ALL_FAIL_CLASSES`). GitHub failures retry the job."""
        decision = decide_exit(outcome.verdict, ALL_FAIL_CLASSES)
        if token is None:
            return Published(conclusion=decision.conclusion)
        suite = str(p.get("suite", "default"))
        rendered = render_outcome(
            outcome.current,
            outcome.verdict,
            outcome.baseline,
            decision,
            name=suite,
            details_url=details_url,
            root=repo_dir,
            cwd=repo_dir,
        )
        target = Target(
            repository=str(p["repo"]),
            head_sha=str(p["head_sha"]),
            pr_number=int(p["pr_number"]) if p.get("pr_number") is not None else None,
            marker_id=f"{self.settings.check_name}/{suite}",
            check_name=self.settings.check_name,
            status_context=None,
            details_url=details_url,
        )
        bot = self.github.bot_login() if target.pr_number is not None else None
        try:
            with self.github.client(token) as client:
                posted = publish(
                    client,
                    target,
                    rendered.message(),
                    decision,
                    comment="always",
                    commit_status=False,
                    check_run=True,
                    bot_logins=(bot,) if bot else (),
                    check_run_id=check_id,
                    raise_errors=True,
                )
        except GitHubPermissionError:
            raise
        except GitHubError as exc:
            raise RetryableJobError(str(exc)) from exc
        return Published(
            conclusion=decision.conclusion,
            check_run_id=posted.check_run_id,
            comment_id=posted.comment_id,
            comment_action=posted.comment_action,
        )

    def _report_problem(
        self,
        p: dict[str, Any],
        token: str | None,
        title: str,
        message: str,
        *,
        stderr: str | None = None,
        conclusion: str = "failure",
        check_id: int | None = None,
    ) -> dict[str, Any]:
        summary = message + (f"\n\n{md_code_block(stderr)}" if stderr else "")
        check = self._post_check(p, conclusion, title, summary, token=token, check_run_id=check_id)
        return {"conclusion": conclusion, "problem": message[:500], "check_run": check}
