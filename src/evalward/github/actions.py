"""The GitHub Actions runtime as a container action sees it (docs/github.md §2, §3, §5, §6).

- `ActionsEnv.from_environ`: the `GITHUB_*` variables and the parsed event payload. For pull requests the
  commit to report on is `pull_request.head.sha` from the payload — `GITHUB_SHA` is the test merge commit.
- `read_inputs`: `INPUT_` + name with spaces → `_`, upper-cased, dashes kept (`INPUT_EVAL-SET`); an empty
  value means "not given" (a `with:` key set to `""` is exported as `""`).
- `write_outputs`, `append_step_summary`: the `GITHUB_OUTPUT` / `GITHUB_STEP_SUMMARY` file commands.
- `format_annotation_command`, `emit_annotations`: `::error file=…::message` lines; the runner keeps 10 per
  level per step and drops the rest silently, so we emit 10 and say how many were left out.
- `untrusted_block`: untrusted text between `::stop-commands::TOKEN` and `::TOKEN::`.

Escaping of annotation text is `report.escape`'s (`annotation_message`, `annotation_property`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evalward.errors import UsageError
from evalward.github.events import (
    MergeGroupEvent,
    PullRequestEvent,
    PushEvent,
    parse_merge_group,
    parse_pull_request,
    parse_push,
)
from evalward.redact import redact
from evalward.report.escape import annotation_message, annotation_property

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
STEP_SUMMARY_MAX_BYTES = 1024 * 1024
"""1 MiB per step; above it the summary upload fails (with an error annotation only)."""
ANNOTATIONS_PER_LEVEL = 10
LogLevel = Literal["error", "warning", "notice"]
LOG_LEVELS: tuple[LogLevel, ...] = ("error", "warning", "notice")
_PR_EVENTS = ("pull_request", "pull_request_target")


@dataclass(frozen=True)
class ActionsEnv:
    """What a workflow run tells the action about itself. `token` never shows in a repr."""

    event_name: str
    event: Mapping[str, Any]
    repository: str
    api_url: str
    server_url: str
    sha: str
    ref: str
    run_id: str
    run_attempt: str
    workflow: str
    step_summary_path: Path | None
    output_path: Path | None
    base_ref_env: str | None = None
    token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environ(cls, env: Mapping[str, str]) -> ActionsEnv:
        """Read the runner's variables; the event file (`GITHUB_EVENT_PATH`) must be readable JSON when set."""
        event: Mapping[str, Any] = {}
        event_path = env.get("GITHUB_EVENT_PATH")
        if event_path:
            try:
                loaded = json.loads(Path(event_path).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UsageError(
                    f"{event_path}: cannot read the GitHub event payload (GITHUB_EVENT_PATH): {exc}"
                ) from exc
            if not isinstance(loaded, dict):
                raise UsageError(f"{event_path}: expected a JSON object, found {type(loaded).__name__}")
            event = loaded

        def path(name: str) -> Path | None:
            value = env.get(name)
            return Path(value) if value else None

        return cls(
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event=event,
            repository=env.get("GITHUB_REPOSITORY", ""),
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            sha=env.get("GITHUB_SHA", ""),
            ref=env.get("GITHUB_REF", ""),
            run_id=env.get("GITHUB_RUN_ID", ""),
            run_attempt=env.get("GITHUB_RUN_ATTEMPT", ""),
            workflow=env.get("GITHUB_WORKFLOW", ""),
            step_summary_path=path("GITHUB_STEP_SUMMARY"),
            output_path=path("GITHUB_OUTPUT"),
            base_ref_env=env.get("GITHUB_BASE_REF") or None,
            token=env.get("INPUT_GITHUB-TOKEN") or env.get("GITHUB_TOKEN") or None,
        )

    @property
    def pull_request(self) -> PullRequestEvent | None:
        """The PR fields of a `pull_request`/`pull_request_target` payload; None for other events."""
        if self.event_name not in _PR_EVENTS or "pull_request" not in self.event:
            return None
        return parse_pull_request(self.event, self.event_name)

    @property
    def push(self) -> PushEvent | None:
        return parse_push(self.event) if self.event_name == "push" and self.event else None

    @property
    def merge_group(self) -> MergeGroupEvent | None:
        """A merge queue's `merge_group` payload; None for other events."""
        if self.event_name != "merge_group" or "merge_group" not in self.event:
            return None
        return parse_merge_group(self.event)

    @property
    def is_pull_request(self) -> bool:
        return self.pull_request is not None

    @property
    def pr_number(self) -> int | None:
        pr = self.pull_request
        return pr.number if pr else None

    @property
    def head_sha(self) -> str:
        """The commit to put statuses and check runs on: the PR head for PRs (not the merge commit), the merge
        group's head in a merge queue (the commit the queue waits for)."""
        pr = self.pull_request
        if pr:
            return pr.head_sha
        group = self.merge_group
        if group:
            return group.head_sha
        push = self.push
        return push.after if push and not push.deleted else self.sha

    @property
    def base_ref(self) -> str | None:
        pr = self.pull_request
        group = self.merge_group if pr is None else None
        return (pr.base_ref if pr else group.base_branch if group else None) or self.base_ref_env

    @property
    def base_sha(self) -> str | None:
        pr = self.pull_request
        if pr:
            return pr.base_sha
        group = self.merge_group
        return group.base_sha if group else None

    @property
    def is_fork(self) -> bool:
        """A PR from another repository (or from a deleted fork): the token is read-only there (§7)."""
        pr = self.pull_request
        return pr.is_fork if pr else False

    @property
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"


def input_env_name(name: str) -> str:
    """The runner's variable for input `name`: `INPUT_` + name, spaces → `_`, upper-cased, dashes kept."""
    return "INPUT_" + name.replace(" ", "_").upper()


def read_inputs(env: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """{name: value} for each input given a non-blank value (trimmed, as actions/toolkit `getInput` does)."""
    found: dict[str, str] = {}
    for name in names:
        value = env.get(input_env_name(name), "").strip()
        if value:
            found[name] = value
    return found


def _delimiter(value: str) -> str:
    while True:
        candidate = f"ghadelimiter_{secrets.token_hex(16)}"
        if candidate not in value:
            return candidate


def format_outputs(mapping: Mapping[str, str]) -> str:
    """The `GITHUB_OUTPUT` lines: `name=value`, or `name<<DELIM`/value/`DELIM` for multi-line values."""
    lines: list[str] = []
    for name, value in mapping.items():
        if not name or any(c in name for c in "=<\r\n"):
            raise ValueError(f"output name must be non-empty without '=', '<' or line breaks, found {name!r}")
        if "\n" in value or "\r" in value:
            delimiter = _delimiter(value)
            lines += [f"{name}<<{delimiter}", value, delimiter]
        else:
            lines.append(f"{name}={value}")
    return "".join(line + "\n" for line in lines)


def write_outputs(path: Path | str, mapping: Mapping[str, str]) -> None:
    """Append step outputs to the `GITHUB_OUTPUT` file (values redacted: later steps may print them)."""
    with Path(path).open("a", encoding="utf-8", newline="") as handle:
        handle.write(format_outputs({name: redact(value) for name, value in mapping.items()}))


def append_step_summary(path: Path | str, markdown: str, *, max_bytes: int = STEP_SUMMARY_MAX_BYTES) -> bool:
    """Append markdown to `GITHUB_STEP_SUMMARY`, keeping the file within 1 MiB; True when it had to be cut.

    The cut falls on a line break and a closing note says how much was left out, so the summary still
    uploads (past 1 MiB GitHub drops the whole step summary).
    """
    target = Path(path)
    existing = target.stat().st_size if target.exists() else 0
    markdown = redact(markdown)
    data = markdown if markdown.endswith("\n") else markdown + "\n"
    encoded = data.encode("utf-8")
    cut = existing + len(encoded) > max_bytes
    if cut:
        note = (
            f"\n\n> **Summary cut**: {len(encoded):,} bytes did not fit GitHub's {max_bytes:,}-byte step summary"
            " limit; the full report is in the run's artifacts.\n"
        ).encode()
        room = max(max_bytes - existing - len(note), 0)
        head = encoded[:room].decode("utf-8", errors="ignore")
        newline = head.rfind("\n")
        if newline > 0:
            head = head[: newline + 1]
        encoded = head.encode("utf-8") + note if existing + len(note) <= max_bytes else b""
    with target.open("ab") as handle:
        handle.write(encoded)
    return cut


def format_annotation_command(
    level: LogLevel,
    message: str,
    file: str | None = None,
    line: int | None = None,
    end_line: int | None = None,
    title: str | None = None,
) -> str:
    """`::level file=…,line=…,endLine=…,title=…::message`, escaped by `report.escape` (actions/toolkit rules)."""
    if level not in LOG_LEVELS:
        raise ValueError(f"annotation level must be one of {', '.join(LOG_LEVELS)}, found {level!r}")
    properties = [
        f"{key}={annotation_property(str(value))}"
        for key, value in (("file", file), ("line", line), ("endLine", end_line), ("title", title))
        if value is not None and value != ""
    ]
    head = f"::{level} {','.join(properties)}" if properties else f"::{level}"
    return f"{head}::{annotation_message(message)}"


@dataclass(frozen=True)
class LogAnnotation:
    """One log annotation to emit; order items by importance (the first 10 per level are kept)."""

    level: LogLevel
    message: str
    file: str | None = None
    line: int | None = None
    end_line: int | None = None
    title: str | None = None


def emit_annotations(
    items: Iterable[LogAnnotation], write: Callable[[str], object], *, more_at: str = "the job summary"
) -> dict[str, int]:
    """Write at most 10 annotations per level, then one notice counting what was left out; return that count per level.

    The closing notice counts against the 10 notices itself, so when anything is left out at most 9
    notices are written before it (a 10th would make GitHub drop our notice silently).
    """
    by_level: dict[str, list[LogAnnotation]] = {level: [] for level in LOG_LEVELS}
    for item in items:
        by_level[item.level].append(item)
    over = any(len(group) > ANNOTATIONS_PER_LEVEL for group in by_level.values())
    left_out: dict[str, int] = {}
    for level in LOG_LEVELS:
        group = by_level[level]
        cap = ANNOTATIONS_PER_LEVEL - 1 if over and level == "notice" else ANNOTATIONS_PER_LEVEL
        for item in group[:cap]:
            write(
                format_annotation_command(item.level, item.message, item.file, item.line, item.end_line, item.title)
                + "\n"
            )
        if len(group) > cap:
            left_out[level] = len(group) - cap
    if left_out:
        counts = ", ".join(f"{n} {level}{'s' if n != 1 else ''}" for level, n in left_out.items())
        total = sum(left_out.values())
        write(
            format_annotation_command(
                "notice",
                f"{total} more annotation{'s' if total != 1 else ''} not shown ({counts}): GitHub keeps "
                f"{ANNOTATIONS_PER_LEVEL} per level per step. See {more_at}.",
                title="More annotations",
            )
            + "\n"
        )
    return left_out


def untrusted_block(text: str) -> str:
    """`text` framed by `::stop-commands::TOKEN` … `::TOKEN::` (fresh random token), so the runner runs none of it."""
    while True:
        token = secrets.token_hex(16)
        if token not in text:
            break
    body = text if text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"
