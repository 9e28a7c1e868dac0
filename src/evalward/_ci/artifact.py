"""The results artifact: everything a later job needs to post or merge a run, written by every `evalward ci`.

Files in the folder (`results-artifact`, default `evalward-results/`): `meta.json` (`ArtifactMeta`: where the
results belong — repository, head SHA, PR number — and how the evals workflow wanted them reported),
`run.json`, `verdict.json` and `baseline.json` when the run was gated, and `report.html`, the self-contained
HTML report (`report.html.render_html`) to open from the workflow run's artifacts.

In the `workflow_run` workflow the artifact is untrusted input: `read_artifact` caps every file's size,
validates every model and checks the ids before anything is posted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward._ci.inputs import DEFAULT_FAIL_ON, DEFAULT_NAME, FAIL_CLASSES, NAME_OK
from evalward._pipeline import finalize, new_run_id
from evalward.errors import EvalFileError, FileProblem, GateInputError, UsageError
from evalward.github.publish import CommentMode
from evalward.model.verdict import Verdict
from evalward.report.html import render_html
from evalward.run_json import load_run_json, render_json

if TYPE_CHECKING:
    from evalward.model import RunResult
    from evalward.model.verdict import Verdict
    from evalward.store import Store

ARTIFACT_SCHEMA_VERSION = 1
ARTIFACT_MAX_FILE_BYTES = 64 * 1024 * 1024
"""A results artifact file above this is refused (it is untrusted input in the `workflow_run` workflow)."""
HTML_REPORT = "report.html"
_SHA_OK = re.compile(r"^[0-9a-f]{7,64}$")
_REPO_OK = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class ArtifactMeta(BaseModel):
    """`meta.json` of the results artifact: where the results belong, so a `workflow_run` job can post them."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

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
    """Write `meta.json`, `run.json`, `report.html` and, when gated, `verdict.json` (+ `baseline.json`); return
    run.json's path."""

    directory.mkdir(parents=True, exist_ok=True)
    meta = meta.model_copy(update={"has_verdict": verdict is not None, "has_baseline": baseline is not None})
    run_path = directory / "run.json"
    run_path.write_text(render_json(run), encoding="utf-8")
    title = f"evalward: {meta.name}"
    (directory / HTML_REPORT).write_text(render_html(run, verdict=verdict, baseline=baseline, title=title), "utf-8")
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
    if not NAME_OK.match(meta.name):
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


def merge_shard_artifacts(store: Store, directory: str, *, run_id: str | None = None) -> RunResult:
    """Import every shard's `run.json` found under `directory` and merge them; fails closed (GateInputError)."""

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
