"""Commit statuses and check runs (GITHUB.md §8), with GitHub's limits applied before sending.

A check run is created completed, with the first 50 annotations; the rest follow in PATCHes of 50 each,
which GitHub appends. `summary` and `text` are cut to 65,535 characters with a closing note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from evalward.github.client import GitHubClient

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
    max_annotations: int = DEFAULT_MAX_ANNOTATIONS,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Create a completed check run on `head_sha` with every annotation, 50 per request; return the last answer.

    Requests = 1 + ⌈(min(n, max_annotations) − 50) / 50⌉ for n > 50 annotations (120 → create + 2 PATCH).
    Annotations beyond `max_annotations` are dropped and counted in a line appended to the summary.
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
    completed_at = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload: dict[str, Any] = {
        "name": name,
        "head_sha": head_sha,
        "status": "completed",
        "conclusion": conclusion,
        "completed_at": completed_at,
        "output": {**output, "annotations": items[:ANNOTATIONS_PER_REQUEST]},
    }
    if details_url is not None:
        payload["details_url"] = details_url
    if external_id is not None:
        payload["external_id"] = external_id
    run = client.create_check_run(repo, payload)
    for start in range(ANNOTATIONS_PER_REQUEST, len(items), ANNOTATIONS_PER_REQUEST):
        batch = items[start : start + ANNOTATIONS_PER_REQUEST]
        # The output is sent whole each time (title, summary, text) so a PATCH never blanks it; only
        # `annotations` accumulates.
        run = client.update_check_run(repo, int(run["id"]), {"output": {**output, "annotations": batch}})
    return run
