"""GitHub webhooks (docs/github.md §10): signature check, then a plan of what to enqueue — no I/O here.

Signature: `X-Hub-Signature-256: sha256=<hex>` where hex = HMAC-SHA256(secret, raw body bytes); compared
in constant time against every configured secret (several during a rotation). A request without a
well-formed header is refused before its body is read; otherwise the body is streamed up to the cap and
verified before it is parsed, so a forged request costs one HMAC and never a JSON parse.

What each event becomes (dispatch on `X-GitHub-Event` + `action`; anything else is ignored with 202):

| event / action | plan |
| --- | --- |
| `pull_request` opened, synchronize, reopened, ready_for_review | `evaluate` job keyed `evaluate:{repo}:{head_sha}:{suite}`, which the worker runs only once the author's write access is confirmed; other open jobs of the PR with another head are cancelled — unless a newer push of the PR (by `pull_request.updated_at`) or its close is known: then the job is recorded cancelled and cancels nothing. Drafts wait for ready_for_review. |
| … from a fork | the same job `held`, plus a `notice` job that posts a check run saying a maintainer must approve |
| `pull_request` labeled with the run label | the job, approved by the label (releases a held one); the worker confirms the labeller's write access |
| … synchronize / reopened while the run label is on the PR | the label approved an older head: not an approval. A fork PR is held again (the `notice` job removes the label and says so); another PR runs once the author's write access is confirmed, else the label is removed the same way |
| `pull_request` closed | the PR's open jobs are cancelled, and the close recorded (a `pull_request_closed` row born `done`) so an older push delivered late starts nothing |
| `push` to the default branch (or a configured base branch) | `evaluate` job in baseline mode keyed `baseline:{repo}:{sha}:{suite}` |
| `merge_group` checks_requested | `evaluate` job keyed `merge_group:{repo}:{head_sha}:{suite}`: the queue's temporary commit gated against the queue's base (`base_sha`), its check run on `head_sha`; approved (only users with write access can queue a merge) |
| `check_run` / `check_suite` rerequested | held jobs at the head are released; if none, a `rerun` job keyed by the body's SHA-256 |
| `installation`, `installation_repositories` | an `installation` record (a job born `done`) keyed by the body's SHA-256 |
| `ping` | nothing (200) |

**Write access** is never read from `author_association` (it says nothing about the permission: a
CONTRIBUTOR may have write access, an org MEMBER may only read). Deciding it needs an API call
(`GET /repos/{owner}/{repo}/collaborators/{username}/permission`), which has no place in a handler that
must answer within 10 s, so the job carries `verify_write_access` — the login whose permission the worker
must confirm before it runs anything (`evaluate.py`); `None` means approved already (a re-run, which only
users with write access can request), `""` a login the payload did not give (held). A fork PR is held
here without a call: its code is not in the repository, whoever wrote it.

**Out of order.** Deliveries of one PR can arrive in another order than their events happened (redeliveries,
GitHub's and the daemon's start-up one; requests overtaking each other). The head SHA says nothing about
order, so each PR job carries `pull_request.updated_at` (`pr_updated_at`) and the queue lets the newest *push*
win, not the newest delivery (`store/job_supersede.py`). A run label applies to the head it was added at, with
the label's own time, so a late label on a head pushed over since runs nothing either; a maintainer's re-run
(`check_run`/`check_suite` rerequested) runs the head it names, whatever is newer. A PR back at a head whose job
was cancelled (reopened at it, force-pushed back to it) runs that job again when the delivery is the PR's newest.

**Replays.** The signature covers the body, not the headers: `X-GitHub-Delivery` can be changed on a
captured delivery without breaking it. So the jobs that have no natural key (re-runs, installation
records) are keyed by the SHA-256 of the signed body, never by the delivery id: replaying one signed body
makes at most one job, while a genuine new re-run is a new body (another check run id, new timestamps).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalward.github.events import (
    CheckRerequestEvent,
    InstallationEvent,
    MergeGroupEvent,
    PullRequestEvent,
    PushEvent,
    parse_event,
)
from evalward.identifiers import is_sha
from evalward.store.job_queue import JobSpec
from evalward.store.job_supersede import CLOSED_KIND

SIGNATURE_PREFIX = "sha256="
_SIGNATURE = re.compile(r"sha256=[0-9a-fA-F]{64}")
PR_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
HEAD_MOVING_ACTIONS = frozenset({"synchronize", "reopened"})
"""Actions after which the head may be a commit no maintainer has seen: a run label approves no such head."""
DEFAULT_SUITE = "default"
_NULL_SHA = "0" * 40


def signature(secret: str, body: bytes) -> str:
    """`sha256=` + hex HMAC-SHA256(secret, body): what GitHub puts in `X-Hub-Signature-256`."""
    return SIGNATURE_PREFIX + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def well_formed_signature(header: str | None) -> bool:
    """True when `header` has the shape of `X-Hub-Signature-256` (`sha256=` and 64 hex digits): anything else
    cannot verify, so the body need not be read to refuse it."""
    return header is not None and _SIGNATURE.fullmatch(header.strip()) is not None


def verify_signature(secrets: Iterable[str], body: bytes, header: str | None) -> bool:
    """True when `header` is `sha256=<hex>` of `body` under one of `secrets` (constant-time compare)."""
    if not header or not header.startswith(SIGNATURE_PREFIX):
        return False
    presented = header.strip().encode("ascii", errors="replace")
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(presented, signature(secret, body).encode("ascii"))
    return matched


@dataclass
class WebhookPlan:
    """What one delivery asks for; carried out by the app in one or two short transactions."""

    note: str
    jobs: list[JobSpec] = field(default_factory=list)
    cancel_pr: tuple[str, int, str | None] | None = None
    """(repo, pr_number, keep_head_sha): cancel that PR's other open jobs, only when the job is new."""
    release: tuple[str, str] | None = None
    """(repo, head_sha): release held jobs; `jobs` are enqueued only when nothing was held."""
    release_updates: dict[str, Any] = field(default_factory=dict)
    """Merged into the released jobs' payloads: how they were approved and whose write access to confirm."""
    closed: JobSpec | None = None
    """With `cancel_pr` of a close: the close's record, so a push made before it but delivered after starts nothing."""


def _job_key(prefix: str, repo: str, sha: str, suite: str = DEFAULT_SUITE) -> str:
    return f"{prefix}:{repo}:{sha}:{suite}"


def event_time(payload: Mapping[str, Any]) -> datetime | None:
    """`pull_request.updated_at` in UTC: when GitHub last changed the PR — for a push, when it moved the head — the
    same in every delivery of the event, so it orders a PR's events whatever order their deliveries arrive in.
    None when absent or not ISO 8601: the queue then lets the newest delivery win, as before."""
    pr = payload.get("pull_request")
    value = pr.get("updated_at") if isinstance(pr, Mapping) else None
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):  # not a time, or out of range once in UTC
        return None


def _pull_request(pr: PullRequestEvent, payload: Mapping[str, Any], delivery: str, *, run_label: str) -> WebhookPlan:
    repo = pr.base_repo or pr.repository
    if not repo:
        return WebhookPlan(note="ignored: pull_request without a repository")
    updated_at = event_time(payload)
    stamp = updated_at.isoformat() if updated_at is not None else None
    if pr.action == "closed":
        closed = None
        if updated_at is not None:
            closed = JobSpec(
                kind=CLOSED_KIND,
                dedupe_key=f"closed:{repo}:{pr.number}:{stamp}",
                payload={"event": "pull_request", "action": "closed", "delivery": delivery, "repo": repo,
                         "pr_number": pr.number, "head_sha": pr.head_sha, "pr_updated_at": stamp},
                repo=repo, head_sha=pr.head_sha, status="done", pr_number=pr.number, pr_updated_at=updated_at,
            )  # fmt: skip
        return WebhookPlan(
            note=f"closed: cancel open jobs of #{pr.number}", cancel_pr=(repo, pr.number, None), closed=closed
        )
    labeled = pr.action == "labeled" and (_label_name(payload) == run_label)
    if pr.action not in PR_ACTIONS and not labeled:
        return WebhookPlan(note=f"ignored: pull_request action {pr.action!r}")
    if pr.draft and not labeled:
        return WebhookPlan(note=f"ignored: #{pr.number} is a draft (runs when marked ready for review)")
    # Approval is per head SHA: the run label approves the head it was added at. After a push (or a
    # reopen, which may bring pushes made while closed) a label still on the PR approved an older head.
    stale_label = run_label in pr.labels and not labeled and pr.action in HEAD_MOVING_ACTIONS
    approval = "label" if labeled or (run_label in pr.labels and not stale_label) else None
    trusted = approval is not None or not pr.is_fork
    # Whose write access the worker confirms first: the labeller's for this label, nobody's when the label
    # was already on the PR (added by someone earlier), else the author's.
    verify: str | None = (pr.sender_login or "") if labeled else (None if approval else (pr.author_login or ""))
    job_payload: dict[str, Any] = {
        "event": "pull_request",
        "action": pr.action,
        "delivery": delivery,
        "mode": "pull_request",
        "installation_id": pr.installation_id,
        "repo": repo,
        "pr_number": pr.number,
        "head_sha": pr.head_sha,
        "head_ref": pr.head_ref,
        "head_repo": pr.head_repo,
        "base_ref": pr.base_ref,
        "base_sha": pr.base_sha,
        "is_fork": pr.is_fork,
        "author": pr.author_login,
        "author_association": pr.author_association,
        "suite": DEFAULT_SUITE,
        "approval": approval,
        "verify_write_access": verify,
        # When set, a worker that does not run this head takes the label off and says why (evaluate.py).
        "stale_run_label": run_label if stale_label else None,
        "pr_updated_at": stamp,
    }
    evaluate = JobSpec(
        kind="evaluate",
        dedupe_key=_job_key("evaluate", repo, pr.head_sha),
        payload=job_payload,
        repo=repo,
        head_sha=pr.head_sha,
        status="queued" if trusted else "held",
        pr_number=pr.number,
        pr_updated_at=updated_at,
    )
    plan = WebhookPlan(note="", jobs=[evaluate], cancel_pr=(repo, pr.number, pr.head_sha))
    if trusted:
        plan.note = f"evaluate #{pr.number} at {pr.head_sha[:12]}" + (
            f" once @{verify} is confirmed to have write access" if verify else ""
        )
    else:
        why = "comes from a fork"
        if stale_label:
            why = (
                f"comes from a fork and has new commits since a maintainer approved it with the label {run_label!r} "
                "(an approval holds for the commit it was given on)"
            )
        plan.note = f"held #{pr.number} at {pr.head_sha[:12]}: {why}; waiting for label {run_label!r} or a re-run"
        plan.jobs.append(
            JobSpec(
                kind="notice",
                dedupe_key=_job_key("notice", repo, pr.head_sha),
                payload={**job_payload, "reason": why, "run_label": run_label},
                repo=repo,
                head_sha=pr.head_sha,
            )
        )
    return plan


def _label_name(payload: Mapping[str, Any]) -> str | None:
    label = payload.get("label")
    name = label.get("name") if isinstance(label, Mapping) else None
    return name if isinstance(name, str) else None


def _push(push: PushEvent, payload: Mapping[str, Any], delivery: str, *, base_branches: Iterable[str]) -> WebhookPlan:
    repo = push.repository
    branch = push.branch
    if not repo or branch is None:
        return WebhookPlan(note=f"ignored: push to {push.ref!r} (not a branch)")
    if push.deleted or push.after == _NULL_SHA:
        return WebhookPlan(note=f"ignored: branch {branch!r} deleted")
    repository = payload.get("repository")
    default_branch = repository.get("default_branch") if isinstance(repository, Mapping) else None
    bases = set(base_branches) | ({default_branch} if isinstance(default_branch, str) else set())
    if branch not in bases:
        return WebhookPlan(
            note=f"ignored: push to {branch!r}, not a base branch ({', '.join(sorted(bases)) or 'none'})"
        )
    job_payload: dict[str, Any] = {
        "event": "push",
        "delivery": delivery,
        "mode": "baseline",
        "installation_id": push.installation_id,
        "repo": repo,
        "head_sha": push.after,
        "head_ref": branch,
        "base_ref": branch,
        "suite": DEFAULT_SUITE,
    }
    if push.before and push.before != _NULL_SHA and is_sha(push.before):
        # The commit the branch pointed at before: its stored run is what this push is gated against.
        job_payload["base_sha"] = push.before
    return _one_evaluation(f"baseline run of {branch} at {push.after[:12]}", "baseline", repo, push.after, job_payload)


def _one_evaluation(note: str, prefix: str, repo: str, sha: str, payload: dict[str, Any]) -> WebhookPlan:
    """A plan of one `evaluate` job at `sha`, keyed `{prefix}:{repo}:{sha}:{suite}`."""
    job = JobSpec(kind="evaluate", dedupe_key=_job_key(prefix, repo, sha), payload=payload, repo=repo, head_sha=sha)
    return WebhookPlan(note=note, jobs=[job])


def _merge_group(group: MergeGroupEvent, delivery: str) -> WebhookPlan:
    """A merge queue asks for the checks of its temporary commit: evaluate it as a pull request's head against the
    queue's base, as the Action does (docs/github.md §4). No write-access check: GitHub only lets users with write
    access add a pull request to the queue, and the delivery is signed."""
    repo = group.repository
    if not repo:
        return WebhookPlan(note="ignored: merge_group without a repository")
    if group.action != "checks_requested":
        return WebhookPlan(note=f"ignored: merge_group action {group.action!r}")
    payload: dict[str, Any] = {
        "event": "merge_group",
        "action": group.action,
        "delivery": delivery,
        "mode": "merge_group",
        "installation_id": group.installation_id,
        "repo": repo,
        "head_sha": group.head_sha,
        "head_ref": group.head_branch,
        "base_ref": group.base_branch,
        "base_sha": group.base_sha,
        "suite": DEFAULT_SUITE,
        "approval": "merge_queue",
        "verify_write_access": None,
    }
    note = f"evaluate the merge queue's {group.head_sha[:12]} against {group.base_branch} at {group.base_sha[:12]}"
    return _one_evaluation(note, "merge_group", repo, group.head_sha, payload)


def _rerequest(
    check: CheckRerequestEvent, payload: Mapping[str, Any], delivery: str, *, check_name: str, body_digest: str
) -> WebhookPlan:
    repo = check.repository
    if not repo:
        return WebhookPlan(note=f"ignored: {check.kind} without a repository")
    if check.action != "rerequested":
        return WebhookPlan(note=f"ignored: {check.kind} action {check.action!r}")
    if check.kind == "check_run":
        run = payload.get("check_run")
        name = run.get("name") if isinstance(run, Mapping) else None
        if isinstance(name, str) and name != check_name:
            return WebhookPlan(note=f"ignored: re-run of another check ({name!r})")
    job_payload: dict[str, Any] = {
        "event": check.kind,
        "action": check.action,
        "delivery": delivery,
        "mode": "pull_request" if check.pull_requests else "rerun",
        "installation_id": check.installation_id,
        "repo": repo,
        "head_sha": check.head_sha,
        "head_ref": check.head_branch,
        "pr_number": check.pull_requests[0] if check.pull_requests else None,
        "suite": DEFAULT_SUITE,
    }
    return WebhookPlan(
        note=f"re-run at {check.head_sha[:12]}",
        release=(repo, check.head_sha),
        release_updates={"approval": "rerequest", "verify_write_access": None},
        jobs=[
            JobSpec(
                kind="evaluate",
                dedupe_key=f"rerun:{repo}:{check.head_sha}:{DEFAULT_SUITE}:{body_digest}",
                payload=job_payload,
                repo=repo,
                head_sha=check.head_sha,
            )
        ],
    )


def _installation(event: InstallationEvent, delivery: str, *, body_digest: str) -> WebhookPlan:
    return WebhookPlan(
        note=f"{event.kind} {event.action} (installation {event.installation_id})",
        jobs=[
            JobSpec(
                kind="installation",
                dedupe_key=f"installation:{body_digest}",
                payload={
                    "event": event.kind,
                    "action": event.action,
                    "delivery": delivery,
                    "installation_id": event.installation_id,
                    "account": event.account_login,
                    "repositories": list(event.repositories),
                    "repositories_added": list(event.repositories_added),
                    "repositories_removed": list(event.repositories_removed),
                },
                status="done",
            )
        ],
    )


def plan_delivery(
    event: str,
    delivery: str,
    payload: Mapping[str, Any],
    *,
    run_label: str = "evalward:run",
    check_name: str = "evalward",
    base_branches: Iterable[str] = (),
    body_digest: str | None = None,
) -> WebhookPlan:
    """The plan for one verified delivery. Raises `EventPayloadError` when a field we need is missing.

    `body_digest` (hex SHA-256 of the raw body) keys the jobs that have no natural key (re-runs,
    installation records); without it the delivery id stands in (tests of the plan alone)."""
    if event == "ping":
        return WebhookPlan(note="pong")
    digest = body_digest or delivery
    parsed = parse_event(event, payload)
    if isinstance(parsed, PullRequestEvent):
        return _pull_request(parsed, payload, delivery, run_label=run_label)
    if isinstance(parsed, PushEvent):
        return _push(parsed, payload, delivery, base_branches=base_branches)
    if isinstance(parsed, MergeGroupEvent):
        return _merge_group(parsed, delivery)
    if isinstance(parsed, CheckRerequestEvent):
        return _rerequest(parsed, payload, delivery, check_name=check_name, body_digest=digest)
    if isinstance(parsed, InstallationEvent):
        return _installation(parsed, delivery, body_digest=digest)
    return WebhookPlan(note=f"ignored: event {event!r}")
