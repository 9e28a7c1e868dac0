"""Posting a verdict to GitHub: the sticky PR comment, the commit status and the check run, for the Action
(`evalward ci`, `evalward report --from-artifact`) and the daemon (`evalward serve`) alike.

What is posted comes in two parts: `Message`, the strings `report/` rendered (escaped there), and
`GateStates`, what the verdict means for this step — the one map from a verdict to GitHub's states:

| verdict | failing the step | check-run conclusion | commit status |
| --- | --- | --- | --- |
| error (no baseline could be made: exit 3) | yes | `failure` | `error` |
| any other | yes | `failure` | `failure` |
| pass | no | `success` | `success` |
| fail (only on what the step does not fail on), inconclusive | no | `neutral` | `success` |

The sticky comment body is two marker lines, then the report: `<!-- evalward:{marker_id} -->` (found again
only when the author is our bot, see `sticky`) and `<!-- evalward-verdict: {outcome} -->`, which the
`on-change` and `on-failure` comment modes read back.

Order: check run, commit status, comment. A GitHub failure is a note (`Posted.notes`) — reporting never
decides the verdict — unless `raise_errors` (the daemon, which retries the job). After GitHub did not answer
at all (network errors after the client's retries), the remaining posts are skipped, so an outage costs one
request's retries, not three.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from evalward.github.checks import Annotation, post_check_run, post_commit_status
from evalward.github.client import GitHubClient, GitHubError, GitHubPermissionError
from evalward.github.sticky import DEFAULT_BOT_LOGINS, find_ours, marker_for, upsert_sticky_comment

CommentMode = Literal["always", "on-change", "on-failure", "never"]
COMMENT_MODES: tuple[CommentMode, ...] = ("always", "on-change", "on-failure", "never")
VERDICT_LINE = re.compile(r"^<!-- evalward-verdict: (pass|fail|inconclusive|error) -->$")

T = TypeVar("T")


@dataclass(frozen=True)
class GateStates:
    """How a verdict shows on GitHub (the table in the module docstring)."""

    outcome: str
    """pass, fail, inconclusive or error."""
    failing: bool
    """The step fails on this verdict."""

    @property
    def conclusion(self) -> str:
        """Check-run conclusion: failure (failing), success (pass), neutral (otherwise)."""
        return "failure" if self.failing else "success" if self.outcome == "pass" else "neutral"

    @property
    def state(self) -> str:
        """Commit status state: `error` when no comparison could be made, failure when failing, else success (an
        inconclusive gate does not block)."""
        if self.outcome == "error":
            return "error"
        return "failure" if self.failing else "success"


@dataclass(frozen=True)
class Message:
    """The rendered strings to post (all escaping done by `report/`)."""

    comment_body: str
    """The sticky comment below its marker line: the verdict line (`verdict_marker_line`), then the report."""
    check_title: str
    check_summary: str
    check_text: str | None
    status_description: str
    annotations: Sequence[Annotation] = ()


@dataclass(frozen=True)
class Target:
    """Where a verdict is posted."""

    repository: str
    head_sha: str
    """The commit that gets the status and the check run: a PR's head, never its test merge commit."""
    pr_number: int | None
    marker_id: str
    """One sticky comment per marker id: `{workflow}/{suite}` for the Action, `{check name}/{suite}` for the daemon."""
    check_name: str
    status_context: str | None
    """The commit status context; None posts no status (the daemon reports with its check run only)."""
    details_url: str | None = None
    external_id: str | None = None
    """The check run's `external_id` (a fresh one when None), so a retried create finds its run."""


@dataclass
class Posted:
    """What was posted, and what went wrong (as notes for the log and the job summary)."""

    comment_url: str | None = None
    comment_id: int | None = None
    comment_action: str | None = None
    check_run_id: int | None = None
    notes: list[str] = field(default_factory=list)
    read_only: bool = False
    unreachable: bool = False


def verdict_marker_line(outcome: str) -> str:
    """The hidden second line of the sticky comment: the verdict it shows, read back by `on-change`."""
    return f"<!-- evalward-verdict: {outcome} -->"


def recorded_verdict(body: str) -> str | None:
    """The verdict a sticky comment of ours records (its second line), or None."""
    lines = body.splitlines()
    if len(lines) < 2:
        return None
    match = VERDICT_LINE.match(lines[1].strip())
    return match.group(1) if match else None


def _attempt(label: str, posted: Posted, action: Callable[[], T], *, raise_errors: bool) -> T | None:
    """Run one GitHub write; a failure becomes a note unless `raise_errors` (see the module docstring)."""
    if posted.unreachable:
        posted.notes.append(f"skipped the {label}: GitHub did not answer the previous request")
        return None
    try:
        return action()
    except GitHubPermissionError as exc:
        if raise_errors:
            raise
        posted.read_only = True
        posted.notes.append(
            f"could not post the {label}: the token may not write here ({exc.message}). Fork pull requests "
            "and Dependabot get a read-only token; the results artifact holds everything for "
            "`evalward report --from-artifact` in a `workflow_run` workflow (examples/workflows/evals-report.yml)."
        )
    except GitHubError as exc:
        if raise_errors:
            raise
        if exc.status is None:
            posted.unreachable = True
        posted.notes.append(f"could not post the {label}: {exc}")
    except ValueError as exc:  # a limit the renderer should have kept (e.g. comment size)
        if raise_errors:
            raise
        posted.notes.append(f"could not post the {label}: {exc}")
    return None


def _upsert_comment(
    client: GitHubClient,
    target: Target,
    message: Message,
    states: GateStates,
    mode: CommentMode,
    bot_logins: Sequence[str],
    posted: Posted,
) -> str | None:
    assert target.pr_number is not None
    if mode in ("on-change", "on-failure"):
        comments = client.list_issue_comments(target.repository, target.pr_number)
        ours = find_ours(comments, marker_for(target.marker_id), bot_logins)
        previous = recorded_verdict(str(ours[0].get("body") or "")) if ours else None
        existing_url = str(ours[0].get("html_url", "")) if ours else None
        if mode == "on-change" and ours and previous == states.outcome:
            return existing_url
        if mode == "on-failure" and not states.failing and previous != "fail":
            return existing_url
    result = upsert_sticky_comment(
        client,
        target.repository,
        target.pr_number,
        message.comment_body,
        marker_id=target.marker_id,
        bot_logins=bot_logins,
    )
    posted.comment_id, posted.comment_action = result.id, result.action
    return result.url


def publish(
    client: GitHubClient | None,
    target: Target,
    message: Message,
    states: GateStates,
    *,
    comment: CommentMode = "always",
    commit_status: bool = True,
    check_run: bool = True,
    bot_logins: Sequence[str] = DEFAULT_BOT_LOGINS,
    check_run_id: int | None = None,
    raise_errors: bool = False,
) -> Posted:
    """Check run (completing `check_run_id` when given), commit status and sticky comment (PRs) on
    `target.head_sha`; see the module docstring for failures."""
    posted = Posted()
    wants_comment = comment != "never" and target.pr_number is not None
    if client is None:
        if wants_comment or commit_status or check_run:
            posted.notes.append(
                "no GitHub token (input `github-token` or GITHUB_TOKEN): no comment, status or check run was posted"
            )
        return posted
    if check_run:
        answer = _attempt(
            "check run",
            posted,
            lambda: post_check_run(
                client,
                target.repository,
                target.head_sha,
                name=target.check_name,
                conclusion=states.conclusion,
                title=message.check_title,
                summary=message.check_summary,
                text=message.check_text,
                annotations=list(message.annotations),
                details_url=target.details_url,
                external_id=target.external_id,
                check_run_id=check_run_id,
            ),
            raise_errors=raise_errors,
        )
        posted.check_run_id = int(answer["id"]) if answer else None
    if commit_status and target.status_context:
        context = target.status_context
        _attempt(
            "commit status",
            posted,
            lambda: post_commit_status(
                client,
                target.repository,
                target.head_sha,
                state=states.state,
                context=context,
                description=message.status_description,
                target_url=target.details_url,
            ),
            raise_errors=raise_errors,
        )
    if wants_comment:
        posted.comment_url = _attempt(
            "PR comment",
            posted,
            lambda: _upsert_comment(client, target, message, states, comment, bot_logins, posted),
            raise_errors=raise_errors,
        )
    return posted


def post_error_status(client: GitHubClient, target: Target, description: str, posted: Posted | None = None) -> Posted:
    """An `error` commit status: evalward could not reach a verdict (failures become notes)."""
    posted = posted or Posted()
    if target.status_context:
        context = target.status_context
        _attempt(
            "commit status",
            posted,
            lambda: post_commit_status(
                client,
                target.repository,
                target.head_sha,
                state="error",
                context=context,
                description=description,
                target_url=target.details_url,
            ),
            raise_errors=False,
        )
    return posted
