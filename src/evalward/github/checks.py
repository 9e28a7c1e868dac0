"""Commit statuses and check runs (docs/github.md §8), with GitHub's limits applied before sending.

A check run is completed with the first 50 annotations — created that way (`post_check_run`), or by
updating the run a worker started (`start_check_run` → `in_progress`, then `post_check_run(check_run_id=…)`);
the rest follow in PATCHes of 50 each, which GitHub appends. `summary` and `text` are cut to 65,535
characters with a closing note.

**No second check run from a retried create.** Every create carries an `external_id` (ours, unique to the
logical check run) and is sent with `replay_safe=False`. When its answer is lost (timeout, dropped
connection, 5xx) the POST may have been applied, so before sending it again `create_check_run_once` lists
the head SHA's check runs of that name (`checks/list-for-ref`, `filter=all`) and, if one carries the
`external_id`, updates that run instead. A completed run cannot be set back to `in_progress`, so
`start_check_run` reuses a run with its `external_id` only while it is not completed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from evalward.github.client import GitHubClient, send_once

ANNOTATIONS_PER_REQUEST = 50
OUTPUT_TEXT_MAX = 65_535
"""`output.summary` and `output.text`: at most 65,535 characters each."""
ANNOTATION_TEXT_MAX_BYTES = 64 * 1024
"""`message` and `raw_details`: at most 64 KB each (UTF-8)."""
ANNOTATION_TITLE_MAX = 255
DEFAULT_MAX_ANNOTATIONS = 1000
"""20 requests at most per check run: the rest is noted in the summary (content-creation limits, §9)."""
ANNOTATION_LEVELS = ("notice", "warning", "failure")
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out")
"""`stale` is left out: only GitHub may set it."""

AnnotationLevel = Literal["notice", "warning", "failure"]


@dataclass(frozen=True)
class Annotation:
    """One check-run annotation; the constructor rejects what GitHub would reject (ValueError)."""

    path: str
    start_line: int
    end_line: int
    level: AnnotationLevel
    message: str
    title: str | None = None
    raw_details: str | None = None
    start_column: int | None = None
    end_column: int | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []
        if not self.path:
            problems.append("path: expected a repository-relative path, found ''")
        if self.start_line < 1:
            problems.append(f"start_line: expected ≥ 1, found {self.start_line}")
        if self.end_line < self.start_line:
            problems.append(f"end_line: expected ≥ start_line {self.start_line}, found {self.end_line}")
        if self.level not in ANNOTATION_LEVELS:
            problems.append(f"level: expected one of {', '.join(ANNOTATION_LEVELS)}, found {self.level!r}")
        if not self.message:
            problems.append("message: expected text, found ''")
        for name, value in (("message", self.message), ("raw_details", self.raw_details)):
            if value is not None and len(value.encode()) > ANNOTATION_TEXT_MAX_BYTES:
                problems.append(f"{name}: expected ≤ {ANNOTATION_TEXT_MAX_BYTES} bytes, found {len(value.encode())}")
        if self.title is not None and len(self.title) > ANNOTATION_TITLE_MAX:
            problems.append(f"title: expected ≤ {ANNOTATION_TITLE_MAX} characters, found {len(self.title)}")
        has_columns = self.start_column is not None or self.end_column is not None
        if has_columns and self.start_line != self.end_line:
            problems.append("start_column/end_column: only allowed when start_line == end_line")
        if problems:
            raise ValueError(f"invalid check-run annotation for {self.path}: " + "; ".join(problems))

    def to_api(self) -> dict[str, Any]:
        """The `output.annotations[]` object of the Checks API."""
        item: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "annotation_level": self.level,
            "message": self.message,
        }
        optional = {
            "title": self.title,
            "raw_details": self.raw_details,
            "start_column": self.start_column,
            "end_column": self.end_column,
        }
        item.update({key: value for key, value in optional.items() if value is not None})
        return item


def cut_output_text(text: str, *, limit: int = OUTPUT_TEXT_MAX) -> str:
    """`text` within `limit` characters: cut at the last line break that leaves room for a closing note."""
    if len(text) <= limit:
        return text
    note = f"\n\n… cut: {len(text):,} characters exceed GitHub's {limit:,}; the full report is in the job summary."
    room = limit - len(note)
    head = text[:room]
    newline = head.rfind("\n")
    if newline > room // 2:
        head = head[:newline]
    return head + note


def post_commit_status(
    client: GitHubClient,
    repo: str,
    sha: str,
    *,
    state: str,
    context: str,
    description: str | None = None,
    target_url: str | None = None,
) -> dict[str, Any]:
    """A commit status on `sha` (use the PR head SHA, not the merge commit, §4); description cut to 140.

    The client validates `state` and cuts the description, so every caller gets the same checks."""
    return client.create_commit_status(repo, sha, state, context, description, target_url)


def _timestamp(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_external_id(prefix: str = "evalward") -> str:
    """A fresh `external_id` for a check run nobody else will claim (`prefix:` + 32 random hex digits)."""
    return f"{prefix}:{uuid.uuid4().hex}"


def find_check_runs(
    client: GitHubClient, repo: str, head_sha: str, *, name: str, external_id: str
) -> list[dict[str, Any]]:
    """Check runs named `name` on `head_sha` that carry `external_id`, newest (highest id) first."""
    runs = client.list_check_runs_for_ref(repo, head_sha, check_name=name, filter="all")
    ours = [r for r in runs if r.get("external_id") == external_id and r.get("name") == name]
    return sorted(ours, key=lambda r: int(r["id"]), reverse=True)


def create_check_run_once(client: GitHubClient, repo: str, payload: dict[str, Any]) -> dict[str, Any]:
    """`checks/create` that never leaves two runs: see the module docstring. `payload` needs an `external_id`.

    After an uncertain answer: back off, look for the run by `external_id`; found → PATCH it with `payload`
    (its annotations left out: the POST that made the run already added them); not found → POST again.
    At most `client.max_retries` re-sends, then the last `GitHubUncertainError` is raised.
    """
    external_id = payload.get("external_id")
    if not isinstance(external_id, str) or not external_id:
        raise ValueError("create_check_run_once needs an external_id to recognise its own check run")

    def landed() -> dict[str, Any] | None:
        found = find_check_runs(client, repo, str(payload["head_sha"]), name=str(payload["name"]),
                                external_id=str(external_id))  # fmt: skip
        if not found:
            return None
        update = {k: v for k, v in payload.items() if k != "head_sha"}
        if isinstance(update.get("output"), dict):
            update["output"] = {k: v for k, v in update["output"].items() if k != "annotations"}
        return client.update_check_run(repo, int(found[0]["id"]), update)

    return send_once(client, lambda: client.create_check_run(repo, payload, replay_safe=False), landed)


def start_check_run(
    client: GitHubClient,
    repo: str,
    head_sha: str,
    *,
    name: str,
    external_id: str,
    title: str,
    summary: str,
    details_url: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Mark the check run `in_progress` with `started_at`: the newest not-completed run with `external_id`
    (an earlier attempt of the same job) is updated, else one is created (`create_check_run_once`)."""
    body: dict[str, Any] = {
        "name": name,
        "status": "in_progress",
        "started_at": _timestamp(now),
        "external_id": external_id,
        "output": {"title": title, "summary": cut_output_text(summary)},
    }
    if details_url is not None:
        body["details_url"] = details_url
    open_runs = [
        r
        for r in find_check_runs(client, repo, head_sha, name=name, external_id=external_id)
        if r.get("status") != "completed"
    ]
    if open_runs:
        return client.update_check_run(repo, int(open_runs[0]["id"]), body)
    return create_check_run_once(client, repo, {**body, "head_sha": head_sha})


def post_check_run(
    client: GitHubClient,
    repo: str,
    head_sha: str,
    *,
    name: str,
    conclusion: str,
    title: str,
    summary: str,
    text: str | None = None,
    annotations: Sequence[Annotation] = (),
    details_url: str | None = None,
    external_id: str | None = None,
    check_run_id: int | None = None,
    max_annotations: int = DEFAULT_MAX_ANNOTATIONS,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A completed check run on `head_sha` with every annotation, 50 per request; return the last answer.

    With `check_run_id` (a run `start_check_run` began) that run is completed by PATCH; otherwise one is
    created with `create_check_run_once` (`external_id` defaults to a fresh random one, so a retried POST
    is still recognised). Requests = 1 + ⌈(min(n, max_annotations) − 50) / 50⌉ for n > 50 annotations
    (120 → create + 2 PATCH). Annotations beyond `max_annotations` are dropped and counted in a line
    appended to the summary.
    """
    if conclusion not in CONCLUSIONS:
        raise ValueError(f"check run conclusion must be one of {', '.join(CONCLUSIONS)}, found {conclusion!r}")
    if not title or not summary:
        raise ValueError("a check run output needs a title and a summary")
    items = [a.to_api() for a in annotations]
    if len(items) > max_annotations:
        dropped = len(items) - max_annotations
        items = items[:max_annotations]
        summary += f"\n\n{dropped:,} more annotations were not posted (limit {max_annotations:,} per check run)."

    output: dict[str, Any] = {"title": title, "summary": cut_output_text(summary)}
    if text is not None:
        output["text"] = cut_output_text(text)
    payload: dict[str, Any] = {
        "name": name,
        "status": "completed",
        "conclusion": conclusion,
        "completed_at": _timestamp(now),
        "output": {**output, "annotations": items[:ANNOTATIONS_PER_REQUEST]},
    }
    if details_url is not None:
        payload["details_url"] = details_url
    if check_run_id is not None:
        if external_id is not None:
            payload["external_id"] = external_id
        run = client.update_check_run(repo, int(check_run_id), payload)
    else:
        payload.update(head_sha=head_sha, external_id=external_id or new_external_id())
        run = create_check_run_once(client, repo, payload)
    for start in range(ANNOTATIONS_PER_REQUEST, len(items), ANNOTATIONS_PER_REQUEST):
        batch = items[start : start + ANNOTATIONS_PER_REQUEST]
        # The output is sent whole each time (title, summary, text) so a PATCH never blanks it; only
        # `annotations` accumulates.
        run = _append_annotations(
            client, repo, head_sha, name, int(run["id"]), {"output": {**output, "annotations": batch}}, start
        )
    return run


def _append_annotations(
    client: GitHubClient, repo: str, head_sha: str, name: str, run_id: int, payload: dict[str, Any], before: int
) -> dict[str, Any]:
    """PATCH one batch of annotations without duplicating it: GitHub appends annotations on every PATCH, so
    one whose answer was lost is not re-sent blindly. After an uncertain answer, back off and read the run's
    `output.annotations_count`: at least `before` + the batch → it landed; otherwise send it again (at most
    `client.max_retries` times, then the last `GitHubUncertainError` is raised)."""
    batch = len(payload["output"]["annotations"])

    def landed() -> dict[str, Any] | None:
        runs = client.list_check_runs_for_ref(repo, head_sha, check_name=name, filter="all")
        ours = [r for r in runs if int(r["id"]) == run_id]
        if ours and int((ours[0].get("output") or {}).get("annotations_count") or 0) >= before + batch:
            return ours[0]
        return None

    return send_once(client, lambda: client.update_check_run(repo, run_id, payload, replay_safe=False), landed)
