"""`evalward ci`: what the GitHub Action's container runs, and what a laptop runs with the same variables.

Inputs. The runner exports each action input as `INPUT_<NAME>` (upper-cased, dashes kept, GITHUB.md §2)
and enforces neither `required` nor types; `apply_action_inputs` validates every given input at once and
copies it onto the `EVALWARD_*` variable the CLI option reads, so the Action, a laptop and the daemon share
one code path (an empty input means "not given"; a given input wins over the same `EVALWARD_*` variable):

| input | variable | | input | variable |
| --- | --- | --- | --- | --- |
| eval-paths | EVALWARD_PATHS | | fail-on | EVALWARD_FAIL_ON |
| agent | EVALWARD_AGENT | | comment | EVALWARD_COMMENT |
| config | EVALWARD_CONFIG | | commit-status | EVALWARD_COMMIT_STATUS |
| test-config | EVALWARD_TEST_CONFIG | | check-run | EVALWARD_CHECK_RUN |
| repeat | EVALWARD_REPEAT | | name | EVALWARD_NAME |
| concurrency | EVALWARD_CONCURRENCY | | shard | EVALWARD_SHARD |
| database-url | EVALWARD_DB | | results-artifact | EVALWARD_RESULTS_ARTIFACT |
| baseline | EVALWARD_BASELINE | | merge-shards | EVALWARD_MERGE_SHARDS |
| base-branch | EVALWARD_BASE_BRANCH | | server-url / server-token | EVALWARD_SERVER_URL / _TOKEN |

The token is `INPUT_GITHUB-TOKEN`, else `GITHUB_TOKEN`; the API root is `GITHUB_API_URL` (never hard-coded).

Mode by event (`GITHUB_EVENT_NAME` and the payload at `GITHUB_EVENT_PATH`):
1. `pull_request`/`pull_request_target`: run, store, gate against the baseline of `pull_request.base`,
   report (sticky comment, commit status, check run) on `pull_request.head.sha`, not the merge commit.
2. `push`: run and store (the baseline of later PRs), gate against the commit before the push, and put a
   status and a check run on the pushed commit.
3. anything else (`workflow_dispatch`, `schedule`, a laptop): run, store, gate, report to the job summary.
With `shard: I/N` the run is one shard: stored and saved to the artifact, not gated (exit 0 unless it could
not run); `merge-shards: DIR` merges the shard artifacts found under DIR, failing closed when one is missing,
then gates and reports as above.

Every mode writes the job summary (≤ 1 MiB), log annotations (10 per level, then a notice), the results
artifact (run, verdict, baseline JSON + PR number + head SHA, for `evalward report --from-artifact`) and the
step outputs. Reporting is best effort: a read-only token (fork PRs, Dependabot) or a GitHub failure after
the client's retries becomes a `::warning::` and a note in the job summary, and never changes the exit code.

Exit codes (GATE.md §6): 0 the gate passed or failed only on what `fail-on` does not name; 1 it failed on a
named class — `regression` (regression, cost, latency findings), `threshold` (threshold, must-pass),
`inconclusive` (turns on the policy's `strict`) — or on a hard gate (errors, missing cases, mismatches, no
baseline under `on_missing_baseline = "fail"`) unless `fail-on` is `none`; 2 bad input; 3 infrastructure.
"""

from __future__ import annotations

import asyncio
import io
import re
import sys
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import (
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_OK,
    EvalFileError,
    EvalwardError,
    FileProblem,
    InfrastructureError,
    UsageError,
)
from evalward.github.actions import ActionsEnv, LogAnnotation, append_step_summary, read_inputs, write_outputs

if TYPE_CHECKING:
    from evalward.gating import GateOutcome, RemoteSearch
    from evalward.github.client import GitHubClient
    from evalward.model import RunResult
    from evalward.model.verdict import Verdict
    from evalward.report.check_run import CaseAnnotation
    from evalward.store import BaselineSearch, Store

ACTION_INPUTS: dict[str, str] = {
    "eval-paths": "EVALWARD_PATHS",
    "agent": "EVALWARD_AGENT",
    "config": "EVALWARD_CONFIG",
    "test-config": "EVALWARD_TEST_CONFIG",
    "repeat": "EVALWARD_REPEAT",
    "concurrency": "EVALWARD_CONCURRENCY",
    "database-url": "EVALWARD_DB",
    "baseline": "EVALWARD_BASELINE",
    "base-branch": "EVALWARD_BASE_BRANCH",
    "fail-on": "EVALWARD_FAIL_ON",
    "comment": "EVALWARD_COMMENT",
    "commit-status": "EVALWARD_COMMIT_STATUS",
    "check-run": "EVALWARD_CHECK_RUN",
    "name": "EVALWARD_NAME",
    "shard": "EVALWARD_SHARD",
    "results-artifact": "EVALWARD_RESULTS_ARTIFACT",
    "merge-shards": "EVALWARD_MERGE_SHARDS",
    "server-url": "EVALWARD_SERVER_URL",
    "server-token": "EVALWARD_SERVER_TOKEN",
}
"""Action input → the `EVALWARD_*` variable of the matching `evalward ci` option."""

CommentMode = Literal["always", "on-change", "on-failure", "never"]
COMMENT_MODES: tuple[CommentMode, ...] = ("always", "on-change", "on-failure", "never")
FAIL_CLASSES: dict[str, frozenset[str]] = {
    "regression": frozenset({"regression", "newly_broken", "cost", "latency"}),
    "threshold": frozenset({"threshold", "must_pass"}),
    "inconclusive": frozenset({"inconclusive"}),
}
"""Which blocking finding kinds each `fail-on` value covers; other blocking kinds (errors, missing cases,
mismatches, no baseline) fail the step whenever `fail-on` is not `none`."""
DEFAULT_FAIL_ON = frozenset({"regression", "threshold"})
DEFAULT_NAME = "evals"
DEFAULT_ARTIFACT_DIR = "evalward-results"
DEFAULT_BOT_LOGINS = ("github-actions[bot]",)
ARTIFACT_SCHEMA_VERSION = 1
ARTIFACT_MAX_FILE_BYTES = 64 * 1024 * 1024
"""A results artifact file above this is refused (it is untrusted input in the `workflow_run` workflow)."""
SUMMARY_MAX_CHARS = 900_000
"""The job summary's report; `append_step_summary` keeps the file within GitHub's 1 MiB."""
VERDICT_LINE = re.compile(r"^<!-- evalward-verdict: (pass|fail|inconclusive|error) -->$")
ZERO_SHA = "0" * 40
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._/-]{0,99}$")
_SHA_OK = re.compile(r"^[0-9a-f]{7,64}$")
_REPO_OK = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_BOOLEANS = {"true": "true", "false": "false", "yes": "true", "no": "false", "1": "true", "0": "false"}

T = TypeVar("T")


# ------------------------------------------------------------------------------------------ inputs


def parse_fail_on(text: str | None) -> frozenset[str]:
    """`regression,threshold` (commas or spaces) → the set; `none` → empty (report only); unknown → UsageError."""
    if text is None or not text.strip():
        return DEFAULT_FAIL_ON
    items = [item for item in re.split(r"[,\s]+", text.strip().lower()) if item]
    unknown = [item for item in items if item not in (*FAIL_CLASSES, "none")]
    if unknown:
        raise UsageError(
            f"fail-on {text!r}: unknown {', '.join(unknown)}; expected a comma-separated subset of "
            "regression, threshold, inconclusive, or none"
        )
    if "none" in items and len(items) > 1:
        raise UsageError(f"fail-on {text!r}: `none` cannot be combined with other values")
    return frozenset(item for item in items if item != "none")


def _input_problem(name: str, value: str) -> str | None:
    """Why the value of input `name` is unusable, or None."""
    if name in ("repeat", "concurrency"):
        if not value.isdigit() or int(value) < 1:
            return f"expected a whole number of at least 1, found {value!r}"
    elif name == "fail-on":
        try:
            parse_fail_on(value)
        except UsageError as exc:
            return str(exc).split(": ", 1)[1]
    elif name == "comment":
        if value.lower() not in COMMENT_MODES:
            return f"expected one of {', '.join(COMMENT_MODES)}, found {value!r}"
    elif name in ("commit-status", "check-run"):
        if value.lower() not in _BOOLEANS:
            return f"expected true or false, found {value!r}"
    elif name == "shard":
        index, sep, count = value.partition("/")
        if not (sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
            return f"expected I/N with 1 <= I <= N (e.g. ${{{{ matrix.shard }}}}/4), found {value!r}"
    elif name == "name" and not _NAME_OK.match(value):
        return f"expected letters, digits, spaces and . _ / - (at most 100, starting with a letter or digit), found {value!r}"
    return None


def apply_action_inputs(env: MutableMapping[str, str]) -> dict[str, str]:
    """Validate every given `INPUT_*` at once, then copy each onto its `EVALWARD_*` variable; return them.

    Eval paths may be separated by spaces or newlines; booleans accept true/false/yes/no/1/0.
    Raises UsageError (exit 2) naming each bad input, its variable, what was expected and what was found.
    """
    given = read_inputs(env, ACTION_INPUTS)
    problems = [
        f"input `{name}` (INPUT_{name.upper()}): {problem}"
        for name, value in given.items()
        if (problem := _input_problem(name, value)) is not None
    ]
    if problems:
        raise UsageError("invalid action inputs:\n" + "\n".join("  " + p for p in problems))
    for name, value in given.items():
        if name == "eval-paths":
            value = " ".join(value.split())
        elif name in ("commit-status", "check-run"):
            value = _BOOLEANS[value.lower()]
        elif name == "comment":
            value = value.lower()
        env[ACTION_INPUTS[name]] = value
    return given


# ----------------------------------------------------------------------------------------- options


@dataclass
class CiOptions:
    """Everything `evalward ci` can be told (flags, `EVALWARD_*` variables, action inputs, evalward.toml)."""

    paths: list[str] = field(default_factory=list)
    agent: str | None = None
    test_config: str | None = None
    metrics: list[str] = field(default_factory=list)
    metrics_mode: str = "add"
    repeat: int = 1
    concurrency: int = 4
    timeout_s: float | None = 120.0
    rate_limit: str | None = None
    retries: int = 2
    pass_rule: str = "per-run"
    agent_processes: int = 1
    db_url: str | None = None
    baseline: str = "auto"
    base_branch: str | None = None
    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    comment: CommentMode = "always"
    commit_status: bool = True
    check_run: bool = True
    name: str = DEFAULT_NAME
    shard: str | None = None
    results_artifact: str | None = DEFAULT_ARTIFACT_DIR
    merge_shards: str | None = None
    json_path: str | None = None
    junit_path: str | None = None
    markdown_path: str | None = None
    comment_authors: tuple[str, ...] = DEFAULT_BOT_LOGINS
    server_url: str | None = None
    run_id: str | None = None
    group_id: str | None = None
    gate_settings: dict[str, Any] = field(default_factory=dict)
    config_path: str | None = None


Mode = Literal["pull_request", "push", "other"]


def event_mode(actions: ActionsEnv) -> Mode:
    """`pull_request` (also `pull_request_target`), `push` (not a branch deletion), else `other`."""
    if actions.pull_request is not None:
        return "pull_request"
    push = actions.push
    if push is not None and not push.deleted:
        return "push"
    return "other"


# --------------------------------------------------------------------------------------- decision


@dataclass(frozen=True)
class Decision:
    """What the verdict means for this step under `fail-on`."""

    outcome: str
    failing: bool
    exit_code: int
    conclusion: str
    """Check-run conclusion: failure (failing), success (pass), neutral (otherwise)."""
    state: str
    """Commit status state: failure when failing, else success (an inconclusive gate does not block)."""
    regressions: int
    failed_on: tuple[str, ...]


def decide_exit(verdict: Verdict, fail_on: Collection[str]) -> Decision:
    """Map the verdict onto the step's exit code and GitHub states (see the module docstring)."""
    if verdict.outcome == "error":
        # No comparison could be made: infrastructure (exit 3), shown as a failed check and an `error` status,
        # never a pass (GATE.md §9).
        return Decision(
            outcome="error",
            failing=True,
            exit_code=EXIT_INFRASTRUCTURE,
            conclusion="failure",
            state="error",
            regressions=0,
            failed_on=("no_baseline",),
        )
    named = set().union(*(FAIL_CLASSES[c] for c in fail_on)) if fail_on else set()
    every_class = set().union(*FAIL_CLASSES.values())
    failed_on: list[str] = []
    if verdict.outcome == "fail" and fail_on:
        for finding in verdict.blocking():
            if finding.kind in named or finding.kind not in every_class:
                failed_on.append(finding.kind)
    failing = bool(failed_on)
    conclusion = "failure" if failing else "success" if verdict.outcome == "pass" else "neutral"
    regressions = sum(1 for f in verdict.findings if f.kind in FAIL_CLASSES["regression"] and f.severity == "blocking")
    return Decision(
        outcome=verdict.outcome,
        failing=failing,
        exit_code=EXIT_FAILED if failing else EXIT_OK,
        conclusion=conclusion,
        state="failure" if failing else "success",
        regressions=regressions,
        failed_on=tuple(dict.fromkeys(failed_on)),
    )


# -------------------------------------------------------------------------------------- artifacts


class ArtifactMeta(BaseModel):
    """`meta.json` of the results artifact: where the results belong, so a `workflow_run` job can post them."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = ARTIFACT_SCHEMA_VERSION
    repository: str = Field(description="owner/name the run evaluated.")
    head_sha: str = Field(description="The commit the results are for (the PR head, not the merge commit).")
    pr_number: int | None = Field(default=None, description="The pull request, when the event was one.")
    event_name: str = ""
    workflow: str = ""
    name: str = DEFAULT_NAME
    details_url: str | None = None
    fail_on: list[str] = Field(default_factory=lambda: sorted(DEFAULT_FAIL_ON))
    comment: CommentMode = "always"
    commit_status: bool = True
    check_run: bool = True
    shard: str | None = None
    has_verdict: bool = False
    has_baseline: bool = False


@dataclass
class Artifact:
    meta: ArtifactMeta
    run: RunResult
    verdict: Verdict | None
    baseline: RunResult | None


def write_artifact(
    directory: Path, meta: ArtifactMeta, run: RunResult, verdict: Verdict | None, baseline: RunResult | None
) -> Path:
    """Write `meta.json`, `run.json` and, when gated, `verdict.json` (+ `baseline.json`); return run.json's path."""
    from evalward.report.json_report import render_json

    directory.mkdir(parents=True, exist_ok=True)
    meta = meta.model_copy(update={"has_verdict": verdict is not None, "has_baseline": baseline is not None})
    run_path = directory / "run.json"
    run_path.write_text(render_json(run), encoding="utf-8")
    if verdict is not None:
        (directory / "verdict.json").write_text(verdict.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if baseline is not None:
        (directory / "baseline.json").write_text(render_json(baseline), encoding="utf-8")
    (directory / "meta.json").write_text(meta.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return run_path


def _read_capped(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise EvalFileError([FileProblem(str(path), f"cannot read: {exc.strerror}")]) from exc
    if size > ARTIFACT_MAX_FILE_BYTES:
        raise EvalFileError(
            [FileProblem(str(path), "too large", expected=f"≤ {ARTIFACT_MAX_FILE_BYTES:,} bytes", found=f"{size:,}")]
        )
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalFileError([FileProblem(str(path), f"cannot read as UTF-8 text: {exc}")]) from exc


def _model_problems(path: Path, exc: ValidationError) -> EvalFileError:
    return EvalFileError(
        [
            FileProblem(
                str(path),
                "unknown key" if e["type"] == "extra_forbidden" else e["msg"],
                json_path="$." + ".".join(str(p) for p in e["loc"]),
            )
            for e in exc.errors()
        ]
    )


def read_artifact(directory: Path) -> Artifact:
    """Read and validate a results artifact (untrusted: sizes capped, every model validated, IDs checked)."""
    from evalward.model.verdict import Verdict
    from evalward.report.json_report import load_run_json

    if not directory.is_dir():
        raise UsageError(f"{directory}: no such results artifact folder")
    meta_path = directory / "meta.json"
    try:
        meta = ArtifactMeta.model_validate_json(_read_capped(meta_path))
    except ValidationError as exc:
        raise _model_problems(meta_path, exc) from exc
    problems: list[FileProblem] = []
    if meta.schema_version != ARTIFACT_SCHEMA_VERSION:
        problems.append(FileProblem(str(meta_path), "unsupported artifact", json_path="$.schema_version", expected="1"))
    if not _REPO_OK.match(meta.repository):
        problems.append(FileProblem(str(meta_path), "bad repository", json_path="$.repository", expected="owner/name"))
    if not _SHA_OK.match(meta.head_sha):
        problems.append(FileProblem(str(meta_path), "bad commit", json_path="$.head_sha", expected="a hex SHA"))
    if not _NAME_OK.match(meta.name):
        problems.append(FileProblem(str(meta_path), "bad suite name", json_path="$.name"))
    if meta.pr_number is not None and meta.pr_number < 1:
        problems.append(FileProblem(str(meta_path), "bad PR number", json_path="$.pr_number", expected="≥ 1"))
    unknown = [c for c in meta.fail_on if c not in FAIL_CLASSES]
    if unknown:
        problems.append(FileProblem(str(meta_path), f"unknown fail-on {unknown}", json_path="$.fail_on"))
    if problems:
        raise EvalFileError(problems)
    run_path = directory / "run.json"
    run = load_run_json(_read_capped(run_path), source=str(run_path))
    verdict = None
    if meta.has_verdict:
        verdict_path = directory / "verdict.json"
        try:
            verdict = Verdict.model_validate_json(_read_capped(verdict_path))
        except ValidationError as exc:
            raise _model_problems(verdict_path, exc) from exc
        if verdict.current_run_id and verdict.current_run_id != run.run_id:
            raise EvalFileError(
                [
                    FileProblem(
                        str(verdict_path),
                        "verdict of another run",
                        json_path="$.current_run_id",
                        expected=run.run_id,
                        found=verdict.current_run_id,
                    )
                ]
            )
    baseline = None
    if meta.has_baseline:
        baseline_path = directory / "baseline.json"
        baseline = load_run_json(_read_capped(baseline_path), source=str(baseline_path))
    return Artifact(meta=meta, run=run, verdict=verdict, baseline=baseline)


# --------------------------------------------------------------------------------------- rendering


@dataclass
class Rendered:
    """Everything posted or written for one verdict."""

    comment_body: str
    summary: str
    check_title: str
    check_summary: str
    check_text: str
    status_description: str
    annotations: list[CaseAnnotation]


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


def render_outcome(
    run: RunResult,
    verdict: Verdict,
    baseline: RunResult | None,
    decision: Decision,
    *,
    name: str,
    details_url: str | None,
    root: Path | None,
) -> Rendered:
    """The comment, job summary, check-run text and annotations for a gated run (all escaping in report/)."""
    from evalward.report.check_run import (
        OUTPUT_MAX_CHARS,
        case_annotations,
        check_summary,
        check_text,
        check_title,
        status_description,
    )

    title = f"evalward: {name}"
    summary_md = check_summary(run, verdict, baseline=baseline, title=title, details_url=details_url)
    comment = verdict_marker_line(verdict.outcome) + "\n" + summary_md
    full = check_summary(
        run, verdict, baseline=baseline, title=title, details_url=details_url, max_chars=SUMMARY_MAX_CHARS
    )
    full_summary = (
        full + "\n" + check_text(run, title=f"{title} (all cases)", details_url=None, max_chars=SUMMARY_MAX_CHARS)
    )
    return Rendered(
        comment_body=comment,
        summary=full_summary,
        check_title=check_title(verdict, failing=decision.failing),
        check_summary=summary_md,
        check_text=check_text(run, title=title, details_url=details_url, max_chars=OUTPUT_MAX_CHARS),
        status_description=status_description(verdict, failing=decision.failing),
        annotations=case_annotations(run, verdict, root=root),
    )


# ---------------------------------------------------------------------------------------- posting


@dataclass(frozen=True)
class Target:
    """Where results are posted."""

    repository: str
    head_sha: str
    pr_number: int | None
    name: str
    workflow: str
    details_url: str | None

    @property
    def marker_id(self) -> str:
        """One sticky comment per workflow and suite name."""
        return f"{self.workflow}/{self.name}" if self.workflow else self.name


@dataclass
class Posted:
    comment_url: str | None = None
    notes: list[str] = field(default_factory=list)
    read_only: bool = False


def _attempt(label: str, posted: Posted, action: Callable[[], T]) -> T | None:
    """Run one GitHub write; a failure becomes a note (reporting never decides the verdict)."""
    from evalward.github.client import GitHubError, GitHubPermissionError

    try:
        return action()
    except GitHubPermissionError as exc:
        posted.read_only = True
        posted.notes.append(
            f"could not post the {label}: the token may not write here ({exc.message}). Fork pull requests "
            "and Dependabot get a read-only token; the results artifact holds everything for "
            "`evalward report --from-artifact` in a `workflow_run` workflow (examples/workflows/evals-report.yml)."
        )
    except GitHubError as exc:
        posted.notes.append(f"could not post the {label}: {exc}")
    except ValueError as exc:  # a limit the renderer should have kept (e.g. comment size)
        posted.notes.append(f"could not post the {label}: {exc}")
    return None


def _upsert_comment(
    client: GitHubClient,
    target: Target,
    rendered: Rendered,
    decision: Decision,
    mode: CommentMode,
    bot_logins: Sequence[str],
) -> str | None:
    from evalward.github.sticky import find_ours, marker_for, upsert_sticky_comment

    assert target.pr_number is not None
    if mode in ("on-change", "on-failure"):
        comments = client.list_issue_comments(target.repository, target.pr_number)
        ours = find_ours(comments, marker_for(target.marker_id), bot_logins)
        previous = recorded_verdict(str(ours[0].get("body") or "")) if ours else None
        existing_url = str(ours[0].get("html_url", "")) if ours else None
        if mode == "on-change" and ours and previous == decision.outcome:
            return existing_url
        if mode == "on-failure" and not decision.failing and previous != "fail":
            return existing_url
    result = upsert_sticky_comment(
        client,
        target.repository,
        target.pr_number,
        rendered.comment_body,
        marker_id=target.marker_id,
        bot_logins=bot_logins,
    )
    return result.url


def publish(
    client: GitHubClient | None,
    target: Target,
    rendered: Rendered,
    decision: Decision,
    *,
    comment: CommentMode,
    commit_status: bool,
    check_run: bool,
    bot_logins: Sequence[str] = DEFAULT_BOT_LOGINS,
) -> Posted:
    """Sticky comment (PRs), commit status and check run on `target.head_sha`; failures become notes."""
    from evalward.github.checks import Annotation, post_check_run, post_commit_status

    posted = Posted()
    wants = (comment != "never" and target.pr_number is not None) or commit_status or check_run
    if client is None:
        if wants:
            posted.notes.append(
                "no GitHub token (input `github-token` or GITHUB_TOKEN): no comment, status or check run was posted"
            )
        return posted
    if comment != "never" and target.pr_number is not None:
        posted.comment_url = _attempt(
            "PR comment",
            posted,
            lambda: _upsert_comment(client, target, rendered, decision, comment, bot_logins),
        )
    context = f"evalward/{target.name}"
    if commit_status:
        _attempt(
            "commit status",
            posted,
            lambda: post_commit_status(
                client,
                target.repository,
                target.head_sha,
                state=decision.state,
                context=context,
                description=rendered.status_description,
                target_url=target.details_url,
            ),
        )
    if check_run:
        annotations = [
            Annotation(path=a.path, start_line=a.line, end_line=a.line, level=a.level, message=a.message, title=a.title)
            for a in rendered.annotations
        ]
        _attempt(
            "check run",
            posted,
            lambda: post_check_run(
                client,
                target.repository,
                target.head_sha,
                name=context,
                conclusion=decision.conclusion,
                title=rendered.check_title,
                summary=rendered.check_summary,
                text=rendered.check_text,
                annotations=annotations,
                details_url=target.details_url,
            ),
        )
    return posted


def default_client(actions: ActionsEnv) -> GitHubClient | None:
    """A client for `GITHUB_API_URL` with the job's token, or None without a token."""
    from evalward.github.client import GitHubClient

    if not actions.token or not actions.repository:
        return None
    return GitHubClient(actions.token, api_url=actions.api_url)


ClientFactory = Callable[[ActionsEnv], "GitHubClient | None"]


# ---------------------------------------------------------------------------------------- the log


def log_annotations(rendered: Rendered | None, notes: Sequence[str]) -> list[LogAnnotation]:
    """Reporting problems first (they are warnings), then one annotation per flagged case."""
    items = [LogAnnotation("warning", note, title="evalward reporting") for note in notes]
    levels = {"failure": "error", "warning": "warning", "notice": "notice"}
    if rendered is not None:
        for a in rendered.annotations:
            items.append(
                LogAnnotation(levels[a.level], a.message, file=a.path, line=a.line, title=a.title)  # type: ignore[arg-type]
            )
    return items


def print_untrusted(text: str, out: TextIO) -> None:
    """Agent output and case names go to the log between `::stop-commands::TOKEN` and `::TOKEN::`."""
    from evalward.github.actions import untrusted_block

    out.write(untrusted_block(text))
    out.flush()


def terminal_report(run: RunResult, outcome: GateOutcome | None) -> str:
    """The terminal rendering (verdict when gated, else the run), 120 columns, no colours."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=120, highlight=False, color_system=None, soft_wrap=False)
    if outcome is not None:
        try:
            from evalward.report.comparison import print_verdict

            print_verdict(outcome.current, outcome.verdict, console, baseline=outcome.baseline)
            return buffer.getvalue()
        except (ImportError, AttributeError, NotImplementedError):  # still being finished elsewhere
            buffer = io.StringIO()
            console = Console(file=buffer, width=120, highlight=False, color_system=None, soft_wrap=False)
    from evalward.report.terminal import print_run

    print_run(run, console)
    return buffer.getvalue()


# ----------------------------------------------------------------------------------------- running


def ci_context(options: CiOptions, actions: ActionsEnv, env: Mapping[str, str]) -> Any:
    """The RunContext: PR head SHA and base from the payload, push `after`/`before`, else env and git."""
    from evalward.context import detect_context

    pr = actions.pull_request
    push = actions.push if pr is None else None
    commit = branch = base_sha = None
    base_branch = options.base_branch
    pr_number = None
    if pr is not None:
        commit, branch, base_sha, pr_number = pr.head_sha, pr.head_ref, pr.base_sha, pr.number
        base_branch = base_branch or pr.base_ref
    elif push is not None and not push.deleted:
        commit, branch = push.after, push.branch
        base_sha = push.before if push.before and push.before != ZERO_SHA else None
        base_branch = base_branch or push.branch
    group_id = options.group_id
    if options.shard and not group_id and actions.run_id:
        group_id = f"gha-{actions.run_id}-{actions.run_attempt or '1'}-{options.name}"
    return detect_context(
        repository=actions.repository or None,
        commit=commit,
        branch=branch,
        base_branch=base_branch,
        base_sha=base_sha,
        pr_number=pr_number,
        group_id=group_id,
        env=env,
    )


def _run_evals(options: CiOptions, context: Any, store: Store) -> tuple[RunResult, list[str]]:
    from evalward.cli.run_cmd import parse_rate, parse_shard
    from evalward.pipeline import RunOptions, parse_metric_option, prepare, run_prepared

    if not options.paths:
        raise UsageError(
            "no eval files: set the `eval-paths` input (INPUT_EVAL-PATHS), EVALWARD_PATHS, pass PATHS, "
            "or put `paths` in evalward.toml"
        )
    if not options.agent:
        raise UsageError(
            "no agent: set the `agent` input (INPUT_AGENT), EVALWARD_AGENT, --agent, or `agent` in evalward.toml"
        )
    overrides = [parse_metric_option(text) for item in options.metrics for text in item.split()]
    run_options = RunOptions(
        paths=list(options.paths),
        agent=options.agent,
        metric_overrides=overrides,
        metrics_mode="replace" if options.metrics_mode == "replace" else "add",
        config_path=options.test_config,
        repeat=options.repeat,
        concurrency=options.concurrency,
        timeout_s=options.timeout_s if options.timeout_s and options.timeout_s > 0 else None,
        rate_limit_per_s=parse_rate(options.rate_limit),
        max_retries=options.retries,
        shard=parse_shard(options.shard),
        pass_rule="mean_over_runs" if options.pass_rule == "mean-over-runs" else "per_run",
        run_id=options.run_id,
        agent_processes=options.agent_processes,
        context=context,
    )
    prepared = prepare(run_options)
    run = asyncio.run(run_prepared(prepared, store=store))
    if run.status == "cancelled":
        raise KeyboardInterrupt
    return run, list(prepared.warnings)


def merge_shard_artifacts(store: Store, directory: str, *, run_id: str | None = None) -> RunResult:
    """Import every shard's `run.json` found under `directory` and merge them; fails closed (GateInputError)."""
    from evalward.errors import GateInputError
    from evalward.pipeline import finalize, new_run_id
    from evalward.report.json_report import load_run_json

    root = Path(directory)
    files = sorted(root.rglob("run.json")) if root.is_dir() else []
    if not files:
        raise GateInputError(f"merge-shards {directory!r}: no shard results (run.json) found; did a shard job fail?")
    run_ids = []
    for file in files:
        shard = load_run_json(_read_capped(file), source=str(file))
        store.import_run(shard)
        run_ids.append(shard.run_id)
    return store.merge_runs(
        run_ids,
        new_run_id=run_id or new_run_id(),
        finalize=lambda run: finalize(run, run.cases, status="complete"),
    )


def _server_history(
    options: CiOptions, env: Mapping[str, str], run: RunResult
) -> tuple[RemoteSearch | None, Callable[[Verdict], list[str]] | None, list[str]]:
    """With `server-url`: upload the run to the evalward server and gate against the server's history
    (see `evalward.remote_history`). Returns the remote baseline search for `gate_run`, a function that
    records the resulting verdict on the server (returning notes), and notes for the log; (None, None, [])
    without a server. An upload failure leaves the gate without a baseline, saying why."""
    from evalward.remote_history import BaselineQuery, RemoteHistory

    if not options.server_url:
        return None, None, []
    token = env.get("EVALWARD_SERVER_TOKEN")
    if not token:
        note = "server-url is set but server-token (EVALWARD_SERVER_TOKEN) is not: the run was not uploaded"
        reason = InfrastructureError(note)

        def refused(_query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
            raise reason

        return refused, None, [note]
    history = RemoteHistory(options.server_url, token)
    try:
        history.upload(run)
    except InfrastructureError as exc:
        history.close()
        failure = exc

        def unavailable(_query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
            raise failure

        return unavailable, None, [str(exc)]

    def search(query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
        return history.search_baseline(run.run_id, query)

    def publish(verdict: Verdict) -> list[str]:
        try:
            history.record_verdict(verdict)
        except InfrastructureError as exc:
            return [str(exc)]
        finally:
            history.close()
        return []

    return search, publish, []


@dataclass
class CiResult:
    """What `run_ci` did, for callers and tests."""

    exit_code: int
    run: RunResult | None = None
    verdict: Verdict | None = None
    comment_url: str | None = None
    notes: list[str] = field(default_factory=list)
    artifact: Path | None = None


def _target(actions: ActionsEnv, options: CiOptions, mode: Mode) -> Target:
    return Target(
        repository=actions.repository,
        head_sha=actions.head_sha,
        pr_number=actions.pr_number if mode == "pull_request" else None,
        name=options.name,
        workflow=actions.workflow,
        details_url=actions.run_url,
    )


def _meta(actions: ActionsEnv, options: CiOptions, target: Target) -> ArtifactMeta:
    return ArtifactMeta(
        repository=target.repository or "unknown/unknown",
        head_sha=target.head_sha or "0000000",
        pr_number=target.pr_number,
        event_name=actions.event_name,
        workflow=actions.workflow,
        name=options.name,
        details_url=target.details_url,
        fail_on=sorted(options.fail_on),
        comment=options.comment,
        commit_status=options.commit_status,
        check_run=options.check_run,
        shard=options.shard,
    )


def _finish_log(actions: ActionsEnv, rendered: Rendered | None, notes: Sequence[str], out: TextIO) -> None:
    from evalward.github.actions import emit_annotations

    where = "the job summary" + (f" ({actions.run_url})" if actions.run_url else "")
    emit_annotations(log_annotations(rendered, notes), out.write, more_at=where)
    if actions.step_summary_path is not None and notes:
        lines = "\n".join(f"- {_md(note)}" for note in notes)
        append_step_summary(actions.step_summary_path, f"\n\n#### ⚠️ evalward reporting problems\n\n{lines}\n")


def _md(text: str) -> str:
    from evalward.report.escape import md_inline

    return md_inline(text, max_len=1000)


def _write_outputs(actions: ActionsEnv, values: Mapping[str, str]) -> None:
    if actions.output_path is not None:
        write_outputs(actions.output_path, values)


def run_ci(
    options: CiOptions,
    *,
    env: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    client_factory: ClientFactory | None = None,
    root: Path | None = None,
) -> CiResult:
    """Run → store → gate → report for the event in `env` (see the module docstring); the history database
    is closed afterwards whatever happened."""
    opened: list[Store] = []
    try:
        return _run_ci(options, env=env, out=out, err=err, client_factory=client_factory, root=root, opened=opened)
    finally:
        for store in opened:
            store.close()


def _run_ci(
    options: CiOptions,
    *,
    env: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    client_factory: ClientFactory | None = None,
    root: Path | None = None,
    opened: list[Store],
) -> CiResult:
    """Run → store → gate → report for the event in `env` (see the module docstring); never raises for
    reporting problems. An EvalwardError while running or gating is summarised, marked on the commit when
    possible, and returned as its exit code."""
    from evalward.cli.run_cmd import open_history
    from evalward.gating import gate_run, load_policy

    out = out or sys.stdout
    err = err or sys.stderr
    factory = client_factory or default_client
    root = root or Path(env.get("GITHUB_WORKSPACE") or Path.cwd())
    actions = ActionsEnv.from_environ(env)
    mode = event_mode(actions)
    target = _target(actions, options, mode)
    artifact_dir = Path(options.results_artifact) if options.results_artifact else None

    try:
        context = ci_context(options, actions, env)
        store = open_history(options.db_url)
        opened.append(store)
        warnings: list[str] = []
        if options.merge_shards:
            run = merge_shard_artifacts(store, options.merge_shards, run_id=options.run_id)
        else:
            run, warnings = _run_evals(options, context, store)
        for warning in warnings:
            err.write(f"warning: {_log_safe(warning)}\n")
        run_path = None
        if artifact_dir is not None:
            run_path = write_artifact(artifact_dir, _meta(actions, options, target), run, None, None)
        from evalward.cli.run_cmd import write_reports

        write_reports(run, json_path=options.json_path, junit_path=options.junit_path, markdown_path=None)

        if options.shard and not options.merge_shards:
            return _finish_shard(run, actions, options, run_path, out)

        overrides = {"strict": True} if "inconclusive" in options.fail_on else {}
        policy = load_policy(options.gate_settings, config_path=options.config_path, overrides=overrides)
        remote, publish_verdict, server_notes = _server_history(options, env, run)
        outcome = gate_run(
            store,
            run,
            policy,
            baseline_spec=options.baseline,
            base_branch=options.base_branch or run.context.base_branch,
            repo_dir=root,
            remote=remote,
            record="ci",
        )
        if publish_verdict is not None:
            server_notes.extend(publish_verdict(outcome.verdict))
    except EvalwardError as exc:
        return _report_error(exc, actions, options, target, factory, out, err)

    verdict = outcome.verdict
    decision = decide_exit(verdict, options.fail_on)
    print_untrusted(terminal_report(run, outcome), out)
    rendered = render_outcome(
        run, verdict, outcome.baseline, decision, name=options.name, details_url=target.details_url, root=root
    )
    if options.markdown_path:
        Path(options.markdown_path).parent.mkdir(parents=True, exist_ok=True)
        Path(options.markdown_path).write_text(rendered.comment_body.split("\n", 1)[1], encoding="utf-8")
    if artifact_dir is not None:
        run_path = write_artifact(artifact_dir, _meta(actions, options, target), run, verdict, outcome.baseline)
    if actions.step_summary_path is not None:
        append_step_summary(actions.step_summary_path, rendered.summary)

    posted = Posted()
    if mode in ("pull_request", "push") and target.repository and target.head_sha:
        client = factory(actions)
        try:
            posted = publish(
                client,
                target,
                rendered,
                decision,
                comment=options.comment,
                commit_status=options.commit_status,
                check_run=options.check_run,
                bot_logins=options.comment_authors,
            )
        finally:
            if client is not None:
                client.close()
    posted.notes.extend(server_notes)
    _finish_log(actions, rendered, posted.notes, out)
    out.write(f"evalward: gate {verdict.outcome}; run id {run.run_id}; exit {decision.exit_code}\n")
    _write_outputs(
        actions,
        {
            "verdict": verdict.outcome,
            "passed": "true" if verdict.outcome == "pass" else "false",
            "run-id": run.run_id,
            "regressions": str(decision.regressions),
            "results-json": str(run_path) if run_path else "",
            "comment-url": posted.comment_url or "",
        },
    )
    return CiResult(
        exit_code=decision.exit_code,
        run=run,
        verdict=verdict,
        comment_url=posted.comment_url,
        notes=posted.notes,
        artifact=artifact_dir,
    )


def _finish_shard(
    run: RunResult, actions: ActionsEnv, options: CiOptions, run_path: Path | None, out: TextIO
) -> CiResult:
    """A shard is stored and saved, not gated: the merge-and-gate job decides."""
    from evalward.report.markdown import render_run_markdown

    print_untrusted(terminal_report(run, None), out)
    if actions.step_summary_path is not None:
        title = f"evalward: {options.name}, shard {options.shard}"
        append_step_summary(
            actions.step_summary_path, render_run_markdown(run, title=title, max_chars=SUMMARY_MAX_CHARS)
        )
    out.write(f"evalward: shard {options.shard} stored as run {run.run_id}; the merge job gates it\n")
    _write_outputs(
        actions,
        {
            "verdict": "",
            "passed": "true" if run.passed else "false",
            "run-id": run.run_id,
            "regressions": "0",
            "results-json": str(run_path) if run_path else "",
            "comment-url": "",
        },
    )
    return CiResult(exit_code=EXIT_OK, run=run, artifact=Path(options.results_artifact or "."))


def _report_error(
    exc: EvalwardError,
    actions: ActionsEnv,
    options: CiOptions,
    target: Target,
    factory: ClientFactory,
    out: TextIO,
    err: TextIO,
) -> CiResult:
    """The run could not finish: say so on the log, the summary and (best effort) the commit; keep the code."""
    from evalward.github.actions import format_annotation_command

    message = str(exc)
    err.write(f"error: {_log_safe(message)}\n")
    out.write(format_annotation_command("error", message, title="evalward could not run") + "\n")
    if actions.step_summary_path is not None:
        append_step_summary(
            actions.step_summary_path,
            f"### 💥 evalward: {_md(options.name)} could not run\n\n{_md(message)}\n\n"
            f"Exit code {exc.exit_code} ({'bad input' if exc.exit_code == 2 else 'infrastructure'}); "
            "no verdict was reached.\n",
        )
    notes: list[str] = []
    if options.commit_status and target.repository and target.head_sha and event_mode(actions) != "other":
        client = factory(actions)
        if client is not None:
            from evalward.github.checks import post_commit_status
            from evalward.report.check_run import STATUS_DESCRIPTION_MAX

            posted = Posted()
            description = f"Could not run (exit {exc.exit_code}); see the job summary"
            _attempt(
                "commit status",
                posted,
                lambda: post_commit_status(
                    client,
                    target.repository,
                    target.head_sha,
                    state="error",
                    context=f"evalward/{options.name}",
                    description=description[:STATUS_DESCRIPTION_MAX],
                    target_url=target.details_url,
                ),
            )
            client.close()
            notes = posted.notes
    for note in notes:
        out.write(format_annotation_command("warning", note, title="evalward reporting") + "\n")
    _write_outputs(
        actions,
        {
            "verdict": "error",
            "passed": "false",
            "run-id": "",
            "regressions": "0",
            "results-json": "",
            "comment-url": "",
        },
    )
    return CiResult(exit_code=exc.exit_code, notes=notes)


def _log_safe(text: str) -> str:
    from evalward.report.escape import workflow_command_safe

    return workflow_command_safe(text)


# --------------------------------------------------------------------------------- from an artifact


def report_from_artifact(
    directory: Path,
    *,
    env: Mapping[str, str],
    out: TextIO | None = None,
    client_factory: ClientFactory | None = None,
    comment: CommentMode | None = None,
    commit_status: bool | None = None,
    check_run: bool | None = None,
    bot_logins: Sequence[str] = DEFAULT_BOT_LOGINS,
    root: Path | None = None,
) -> CiResult:
    """Post a results artifact's comment, status and check run from a `workflow_run` job (no PR code runs).

    Checks, all before anything is posted: the artifact validates; its repository is `GITHUB_REPOSITORY`;
    when the event is `workflow_run`, `workflow_run.head_sha` equals the artifact's head SHA; the PR's
    current head (`GET pulls/N`) equals it too — if the PR has moved on since, the status and check still
    go on the evaluated commit but the comment is skipped (it would describe old code). Returns exit 0 when
    everything was posted, 3 when GitHub refused or failed (the eval verdict itself is not re-decided here).
    """
    out = out or sys.stdout
    factory = client_factory or default_client
    actions = ActionsEnv.from_environ(env)
    artifact = read_artifact(directory)
    meta = artifact.meta
    if artifact.verdict is None:
        raise UsageError(
            f"{directory}: the artifact holds no verdict (a shard, or a run that could not finish): nothing to post"
        )
    if actions.repository and meta.repository != actions.repository:
        raise UsageError(
            f"{directory}/meta.json: results for {meta.repository!r}, but this workflow runs in {actions.repository!r}"
        )
    trusted_sha: str | None = None
    head_repo: str | None = None
    if actions.event_name == "workflow_run":
        workflow_run = actions.event.get("workflow_run")
        if isinstance(workflow_run, Mapping):
            sha = workflow_run.get("head_sha")
            trusted_sha = sha if isinstance(sha, str) and sha else None
            repo_obj = workflow_run.get("head_repository")
            if isinstance(repo_obj, Mapping) and isinstance(repo_obj.get("full_name"), str):
                head_repo = repo_obj["full_name"]
        if trusted_sha is None:
            raise UsageError("workflow_run event payload: at workflow_run.head_sha: expected the evaluated commit")
        if trusted_sha != meta.head_sha:
            raise UsageError(
                f"{directory}/meta.json: head_sha {meta.head_sha} is not the commit the evals workflow ran on "
                f"(workflow_run.head_sha {trusted_sha}); refusing to post results for another commit"
            )
    client = factory(actions)
    if client is None:
        raise UsageError("no GitHub token: set the `github-token` input or GITHUB_TOKEN to post results")
    posted = Posted()
    moved_on: list[str] = []
    try:
        pr_number = meta.pr_number
        if pr_number is not None:
            pull = client.get_pull(meta.repository, pr_number)
            head = pull.get("head") or {}
            pr_head = head.get("sha")
            pr_head_repo = (head.get("repo") or {}).get("full_name") if isinstance(head.get("repo"), dict) else None
            if head_repo is not None and pr_head_repo is not None and pr_head_repo != head_repo:
                raise UsageError(
                    f"PR #{pr_number} comes from {pr_head_repo!r}, but the evals ran on {head_repo!r}: "
                    "the artifact names another pull request"
                )
            if pr_head != meta.head_sha:
                if trusted_sha is None:
                    raise UsageError(
                        f"PR #{pr_number} is at {pr_head}, but the artifact holds results for {meta.head_sha}; "
                        "refusing to post them on the pull request"
                    )
                moved_on.append(
                    f"PR #{pr_number} has moved on to {str(pr_head)[:12]} since {meta.head_sha[:12]} was evaluated: "
                    "the comment was not updated (the status and check run are on the evaluated commit)"
                )
                pr_number = None
        decision = decide_exit(artifact.verdict, meta.fail_on)
        target = Target(
            repository=meta.repository,
            head_sha=meta.head_sha,
            pr_number=pr_number,
            name=meta.name,
            workflow=meta.workflow,
            details_url=meta.details_url if (meta.details_url or "").startswith("https://") else actions.run_url,
        )
        rendered = render_outcome(
            artifact.run,
            artifact.verdict,
            artifact.baseline,
            decision,
            name=meta.name,
            details_url=target.details_url,
            root=root or Path.cwd(),
        )
        result = publish(
            client,
            target,
            rendered,
            decision,
            comment=comment or meta.comment,
            commit_status=meta.commit_status if commit_status is None else commit_status,
            check_run=meta.check_run if check_run is None else check_run,
            bot_logins=bot_logins,
        )
        posted.comment_url = result.comment_url
        posted.notes.extend(result.notes)
        posted.read_only = result.read_only
    finally:
        client.close()
    _finish_log(actions, None, [*moved_on, *posted.notes], out)
    if actions.step_summary_path is not None:
        append_step_summary(actions.step_summary_path, rendered.summary)
    _write_outputs(
        actions,
        {
            "verdict": artifact.verdict.outcome,
            "passed": "true" if artifact.verdict.outcome == "pass" else "false",
            "run-id": artifact.run.run_id,
            "regressions": str(decision.regressions),
            "results-json": str(directory / "run.json"),
            "comment-url": posted.comment_url or "",
        },
    )
    failed = bool(posted.notes)  # a GitHub refusal or failure: the poster job shows it
    out.write(f"evalward: posted the {artifact.verdict.outcome} verdict of run {artifact.run.run_id}\n")
    return CiResult(
        exit_code=EXIT_INFRASTRUCTURE if failed else EXIT_OK,
        run=artifact.run,
        verdict=artifact.verdict,
        comment_url=posted.comment_url,
        notes=[*moved_on, *posted.notes],
        artifact=directory,
    )
