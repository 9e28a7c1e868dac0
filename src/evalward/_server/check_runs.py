"""The check run of each job, from `in_progress` to completed: the check-run half of `evaluate.Handlers`.

An `evaluate` job's check run goes `in_progress` (with `started_at`) before the evals run (`_start_check`);
every later outcome completes that same check run by id. An earlier attempt's run is reused while it is not
completed (`checks.start_check_run`, `external_id` = `evalward:{suite}:job{id}`). The job row records it
(`check_run_state` `opening` before the request, `open` with its id after, `closed` once completed; see
`store.job_check_runs`), so **every check run the daemon opens is completed** whatever ends the job, each
with one line of why:
- a verdict or a problem (no configuration, the evals did not run) completes it as reported;
- a final failed attempt or an unexpected error: `failure` with the error (`_close_failed`);
- a shutdown (SIGTERM past the grace period): `cancelled`, "the daemon stopped"; the job is queued again
  and its next attempt opens a new check run (`_close_interrupted`);
- ended without its worker — cancelled by a newer head ("superseded by <sha>") or a closed PR, failed
  because its worker stopped heartbeating on the last attempt ("the worker stopped; re-run with the
  label or re-request"), or a completion GitHub refused — `sweep_check_runs` completes it: workers
  run it after every job, at start and every `sweep_s` while idle (`Handlers.maintenance`).

Whoever completes a check run first claims it in the job row (`claim_check_run_close`), so two workers never
both complete it; a completion GitHub refuses gives the claim back for the sweeper.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalward._server.worker import JobContext, RetryableJobError
from evalward.errors import EvalwardError
from evalward.github.checks import find_check_runs, post_check_run, start_check_run
from evalward.github.client import GitHubError, GitHubPermissionError
from evalward.store.job_queue import LEASE_EXPIRED

if TYPE_CHECKING:
    from evalward._server.github_access import GitHubAccess
    from evalward._server.settings import ServerSettings
    from evalward.store.job_check_runs import OpenCheckRun
    from evalward.store.job_queue import JobQueue

log = logging.getLogger("evalward._server.evaluate")
"""The job handlers' logger: these lines are the `evaluate` handler's."""


class CheckRuns:
    """Opening, completing and sweeping the jobs' check runs (a mixin: `Handlers` provides the settings, the
    queue, GitHub access and the sweeper's retry times)."""

    settings: ServerSettings
    queue: JobQueue
    github: GitHubAccess
    _sweep_retry: dict[int, tuple[int, float]]

    def _external_prefix(self, p: Mapping[str, Any]) -> str:
        return f"evalward:{p.get('suite', 'default')}"

    def _post_check(
        self,
        p: Mapping[str, Any],
        conclusion: str,
        title: str,
        summary: str,
        *,
        token: str | None = None,
        details_url: str | None = None,
        check_run_id: int | None = None,
        external_id: str | None = None,
    ) -> int | None:
        """Complete `check_run_id`, or create a completed check run (`external_id` recognises a retried create);
        None when there is no GitHub access (no App configured)."""
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
                    external_id=external_id,
                    check_run_id=check_run_id,
                )
        except GitHubPermissionError:
            raise
        except GitHubError as exc:
            raise RetryableJobError(str(exc)) from exc
        return int(answer["id"])

    def _start_check(self, ctx: JobContext, p: Mapping[str, Any], token: str | None) -> int | None:
        """The job's check run, now `in_progress` (None without GitHub access)."""
        if token is None:
            return None
        sha = str(p["head_sha"])
        self.queue.record_check_run(ctx.job, None)
        try:
            with self.github.client(token) as client:
                run = start_check_run(
                    client,
                    str(p["repo"]),
                    sha,
                    name=self.settings.check_name,
                    external_id=f"{self._external_prefix(p)}:job{ctx.job.id}",
                    title="Running the evals",
                    summary=f"evalward is running the evals at `{sha[:12]}` (attempt {ctx.job.attempt}).",
                    details_url=f"{self.settings.base_url.rstrip('/')}/jobs" if self.settings.base_url else None,
                )
        except GitHubPermissionError:
            raise
        except GitHubError as exc:
            raise RetryableJobError(str(exc)) from exc
        self.queue.record_check_run(ctx.job, int(run["id"]))
        return int(run["id"])

    def _close_interrupted(
        self, ctx: JobContext, p: Mapping[str, Any], token: str | None, check_id: int | None
    ) -> None:
        """A job stopped by a shutdown (still ours) completes its check run `cancelled`, "the daemon stopped"; one
        that ended meanwhile (cancelled by a newer head, failed by a lost lease) is completed as the sweeper
        would; one another worker took over keeps its run (that worker reuses it)."""
        if check_id is None:
            return
        if ctx.shutting_down.is_set() and self.queue.still_ours(ctx.job):
            self._close_check(
                ctx.job.id, p, token, check_id, "cancelled", "Interrupted",
                "The evalward daemon stopped before the evals finished; the job is queued again and reports in a "
                "new check run when a worker takes it.",
            )  # fmt: skip
            return
        for row in self.queue.open_check_runs(job_id=ctx.job.id):
            self._close_swept(row)

    def _close_failed(
        self, ctx: JobContext, p: Mapping[str, Any], token: str | None, check_id: int | None, message: str
    ) -> None:
        self._close_check(ctx.job.id, p, token, check_id, "failure", "The evals did not run", message)

    def _close_check(
        self,
        job_id: int,
        p: Mapping[str, Any],
        token: str | None,
        check_id: int | None,
        conclusion: str,
        title: str,
        summary: str,
    ) -> None:
        """Complete the job's check run unless someone already has (the claim in the job row); when GitHub
        refuses, give the claim back for the sweeper."""
        if check_id is None or not self.queue.claim_check_run_close(job_id):
            return
        try:
            self._post_check(p, conclusion, title, summary, token=token, check_run_id=check_id)
        except (GitHubError, RetryableJobError) as exc:
            self.queue.reopen_check_run(job_id)
            log.warning("could not complete check run %s: %s", check_id, exc, extra={"repo": p.get("repo")})

    # -- the sweeper

    def sweep_check_runs(self, *, limit: int = 20) -> int:
        """Complete the check runs of jobs that ended while theirs was open (see the module docstring); the
        number completed. A completion GitHub refused for a reason worth retrying (5xx, no answer, a rate
        limit) ends this sweep — so an outage costs one request's retries per sweep — and that run waits
        `sweep_s`, then twice as long after each further failure (at most an hour), letting the others pass."""
        import time

        done = 0
        now = time.monotonic()
        for row in self.queue.open_check_runs(limit=limit):
            failures, due = self._sweep_retry.get(row.job_id, (0, now))
            if due > now:
                continue
            closed = self._close_swept(row)
            if closed is None:
                delay = min(3600.0, self.settings.sweep_s * 2**failures)
                self._sweep_retry[row.job_id] = (failures + 1, time.monotonic() + delay)
                break
            self._sweep_retry.pop(row.job_id, None)
            done += closed
        return done

    def _final_words(self, row: OpenCheckRun) -> tuple[str, str, str]:
        """(conclusion, title, summary) for a check run whose job ended as `row` says."""
        error = (row.last_error or "").strip()
        if row.status == "cancelled":
            return "cancelled", "Cancelled", f"This run was cancelled: {error or 'cancelled'}."
        if error.startswith(LEASE_EXPIRED):
            label = row.payload.get("run_label") or self.settings.run_label
            return (
                "failure",
                "The worker stopped",
                f"The worker running these evals stopped (attempt {row.attempts} of {self.queue.max_attempts}, "
                f"its lease expired); re-run with the label `{label}` or re-request this check.",
            )
        return "failure", "The evals did not run", f"The job failed: {error or 'no reason recorded'}."

    def _close_swept(self, row: OpenCheckRun) -> int | None:
        """Complete one left-open check run: 1 when done, 0 when there was nothing to do, None to retry later."""
        if row.status == "done":  # its handler completed it with the verdict; only the note was missed
            self.queue.check_run_closed(row.job_id)
            return 0
        if row.repo is None or row.head_sha is None or not self.queue.claim_check_run_close(row.job_id):
            return 0
        conclusion, title, summary = self._final_words(row)
        extra = {"job": row.job_id, "repo": row.repo}
        try:
            token = self.github.token(row.payload.get("installation_id"))
            if token is None:
                return 0
            with self.github.client(token) as client:
                if row.state == "open" and row.check_run_id is not None:
                    ids = [row.check_run_id]
                else:  # the worker died around the create request: look the run up by its external_id
                    external_id = f"{self._external_prefix(row.payload)}:job{row.job_id}"
                    found = find_check_runs(
                        client, row.repo, row.head_sha, name=self.settings.check_name, external_id=external_id
                    )
                    ids = [int(r["id"]) for r in found if r.get("status") != "completed"]
                for check_id in ids:
                    post_check_run(
                        client, row.repo, row.head_sha, name=self.settings.check_name, conclusion=conclusion,
                        title=title, summary=summary, check_run_id=check_id,
                    )  # fmt: skip
        except GitHubPermissionError as exc:
            log.warning("cannot complete the check run of job %s: %s", row.job_id, exc, extra=extra)
            return 0
        except GitHubError as exc:
            if exc.status is not None and 400 <= exc.status < 500 and exc.status not in (403, 429):
                log.warning("GitHub refused to complete the check run of job %s: %s", row.job_id, exc, extra=extra)
                return 0
            self.queue.reopen_check_run(row.job_id, row.state)
            log.warning("could not complete the check run of job %s; retrying later: %s", row.job_id, exc, extra=extra)
            return None
        except EvalwardError as exc:  # no installation token
            self.queue.reopen_check_run(row.job_id, row.state)
            log.warning("could not complete the check run of job %s; retrying later: %s", row.job_id, exc, extra=extra)
            return None
        log.info("completed the check run of job %s (%s): %s", row.job_id, row.status, summary, extra=extra)
        return 1
