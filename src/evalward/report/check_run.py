"""The gate's outcome as a check run (title, summary, text, annotations) and a commit status description.

- `check_title`: one line, no untrusted text: `❌ gate failed: 2 blocking findings (regression, threshold)`.
- `status_description`: the same facts within GitHub's 140 characters (no untrusted text either).
- `check_summary` / `check_text`: the verdict markdown and the run markdown, each cut by whole sections
  to `OUTPUT_MAX_CHARS` by their renderers (GitHub's limit is 65,535 per field).
- `case_annotations`: one annotation per flagged case, on its eval file at the line the case starts —
  `failure` when the gate failed on the case (a blocking finding names it, or it is the evidence of one: a
  newly broken case, a case behind a blocking pass-rate regression), `warning` for warnings or a case that did
  not pass, `notice` for a case the gate only noted (e.g. likely regressed). Most severe first. The words follow
  the level: a failure says why the gate failed on the case and leaves out the review-only flags (so it never
  reads "not gated"); a notice's title says it is for review and not gated.

Annotation text is plain text in GitHub's UI; untrusted parts (case ids, finding messages quoting them)
go through `escape.workflow_command_safe` and `escape.neutralise_references` (they are also written to the
log as workflow commands), then are cut to GitHub's limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from evalward.model import RunResult
from evalward.model.verdict import CaseDiagnostic, Finding, Verdict
from evalward.report import formatting as fmt
from evalward.report.escape import neutralise_references, truncate, workflow_command_safe
from evalward.report.markdown import render_run_markdown
from evalward.report.verdict_markdown import render_verdict_markdown

OUTPUT_MAX_CHARS = 60_000
"""Check-run summary and text, and the PR comment: 60k leaves room under GitHub's 65,535 / 65,536."""
STATUS_DESCRIPTION_MAX = 140
TITLE_MAX = 255
MESSAGE_MAX_CHARS = 4_000
MAX_FINDINGS_PER_CASE = 5

AnnotationLevel = Literal["failure", "warning", "notice"]
_LEVEL_ORDER: dict[str, int] = {"failure": 0, "warning": 1, "notice": 2}
_OUTCOME_WORDS = {"pass": "passed", "fail": "failed", "inconclusive": "inconclusive", "error": "could not compare"}
_OUTCOME_MARKS = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "error": "💥"}


@dataclass(frozen=True)
class CaseAnnotation:
    """One annotation on an eval file: `path` is repository-relative (POSIX), `line` ≥ 1."""

    path: str
    line: int
    level: AnnotationLevel
    title: str
    message: str


def plain_text(text: str, max_len: int) -> str:
    """Untrusted text for an annotation or a log line: no workflow commands, mentions or references, cut."""
    return truncate(neutralise_references(workflow_command_safe(text)), max_len)


def _kinds(findings: list[Finding]) -> str:
    return ", ".join(dict.fromkeys(f.kind.replace("_", " ") for f in findings))


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def check_title(verdict: Verdict, *, failing: bool) -> str:
    """`❌ gate failed: 2 blocking findings (regression, threshold)`; `(report only)` when not failing the step."""
    outcome = verdict.outcome
    text = f"{_OUTCOME_MARKS[outcome]} gate {_OUTCOME_WORDS[outcome]}"
    blocking = verdict.blocking()
    if blocking:
        text += f": {_plural(len(blocking), 'blocking finding')} ({_kinds(blocking)})"
    elif outcome == "inconclusive":
        text += ": no regression shown, and no non-inferiority either"
    elif outcome == "error":
        text += ": no baseline could be stored or run"
    else:
        text += f": {_plural(verdict.counts.compared, 'case')} compared"
    if outcome == "fail" and not failing:
        text += " (report only)"
    return truncate(text, TITLE_MAX)


def status_description(verdict: Verdict, *, failing: bool) -> str:
    """The commit status line: outcome and counts only (≤ 140 characters, no untrusted text)."""
    blocking = verdict.blocking()
    counts = verdict.counts
    if verdict.outcome == "error":
        if any(f.kind == "nothing_compared" for f in blocking):
            text = "Could not compare: no case was comparable with the baseline"
        else:
            text = "Could not compare: no baseline could be stored or run"
    elif blocking:
        text = f"Failed: {_plural(len(blocking), 'blocking finding')} ({_kinds(blocking)})"
        if not failing:
            text += ", report only"
    elif verdict.outcome == "inconclusive":
        text = "Inconclusive: no regression shown, non-inferiority not shown either"
    else:
        text = f"Passed: {_plural(counts.compared, 'case')} compared"
    if verdict.baseline is None:
        text += "; no baseline"
    if counts.errored:
        text += f"; {counts.errored} errored"
    return truncate(text, STATUS_DESCRIPTION_MAX)


def check_summary(
    current: RunResult,
    verdict: Verdict,
    *,
    baseline: RunResult | None,
    title: str,
    details_url: str | None,
    max_chars: int = OUTPUT_MAX_CHARS,
) -> str:
    """The verdict markdown (the same body as the PR comment, without its markers)."""
    return render_verdict_markdown(
        current, verdict, baseline=baseline, title=title, max_chars=max_chars, details_url=details_url
    )


def check_text(run: RunResult, *, title: str, details_url: str | None, max_chars: int = OUTPUT_MAX_CHARS) -> str:
    """The run's own report: every failing case with its turns, diffs and responses."""
    return render_run_markdown(run, title=title, max_chars=max_chars, details_url=details_url)


def repository_path(path: str, root: Path | None, cwd: Path | None = None) -> str | None:
    """`path` relative to the repository `root`, POSIX style; None when it lies outside (no annotation). A
    relative `path` starts from `cwd` when given (the folder the run was made in), else from `root`."""
    candidate = Path(path)
    if not candidate.is_absolute() and cwd is not None and root is not None:
        candidate = cwd / candidate
    if candidate.is_absolute():
        if root is None:
            return None
        try:
            candidate = candidate.resolve().relative_to(root.resolve())
        except ValueError:
            return None
    posix = PurePosixPath(candidate.as_posix())
    if not posix.parts or ".." in posix.parts:
        return None
    return str(posix).removeprefix("./")


def _case_level(findings: list[Finding], not_passed: bool, evidence: bool = False) -> AnnotationLevel:
    if evidence or any(f.severity == "blocking" for f in findings):
        return "failure"
    if not_passed or any(f.severity == "warning" for f in findings):
        return "warning"
    return "notice"


def _passes(d: CaseDiagnostic) -> str:
    """`passed 3 of 3 at the baseline, 0 of 3 now`."""

    def shown(count: int | None) -> str:
        return fmt.MISSING if count is None else str(count)

    return (
        f"passed {shown(d.baseline_passes)} of {shown(d.baseline_k)} at the baseline, "
        f"{shown(d.current_passes)} of {shown(d.current_k)} now"
    )


def _blocking_evidence(verdict: Verdict) -> dict[tuple[str, str], tuple[str, str]]:
    """The cases behind a blocking finding that names no case, each with (its kind, why the gate failed on it): the
    newly broken ones when that test blocked, and the cases whose pass rate fell by half or more when a gated
    metric regressed. Their annotations are failures: they are why the check failed, though no finding names them
    one by one."""
    cases: dict[tuple[str, str], tuple[str, str]] = {}
    broken = verdict.newly_broken
    if broken is not None and broken.significant:
        named = set(broken.cases)
        for d in verdict.cases:
            if f"{d.eval_set_id}/{d.case_id}" in named:
                why = f"The gate failed on this case: it is newly broken ({_passes(d)})."
                cases[(d.eval_set_id, d.case_id)] = ("newly broken", why)
    regression = next(
        (f for f in verdict.findings if f.kind == "regression" and f.severity == "blocking" and f.case_id is None),
        None,
    )
    if regression is not None:
        metric = regression.metric or "a gated metric"
        for d in verdict.cases:
            if d.label == "regressed":
                why = f"The gate failed on this case: it is behind the blocking regression of {metric} ({_passes(d)})."
                cases.setdefault((d.eval_set_id, d.case_id), ("regression", why))
    return cases


def case_annotations(
    run: RunResult, verdict: Verdict, *, root: Path | None = None, cwd: Path | None = None
) -> list[CaseAnnotation]:
    """One annotation per flagged case (see the module docstring), most severe first, then in run order; paths
    relative to the repository `root` (`repository_path`)."""
    sources = {
        (info.eval_set_id, case_id): source for info in run.eval_sets for case_id, source in info.case_sources.items()
    }
    order: list[tuple[str, str]] = []
    by_case: dict[tuple[str, str], list[Finding]] = {}
    for finding in verdict.findings:
        if not finding.case_id:
            continue
        if finding.severity == "info" and finding.kind != "regression":
            continue
        key = (finding.eval_set_id or _set_of(run, finding.case_id), finding.case_id)
        if key not in by_case:
            order.append(key)
        by_case.setdefault(key, []).append(finding)

    evidence = _blocking_evidence(verdict)
    not_passed: dict[tuple[str, str], list[int]] = {}
    repetitions: dict[tuple[str, str], int] = {}
    for case in run.cases:
        key = (case.eval_set_id, case.case_id)
        repetitions[key] = repetitions.get(key, 0) + 1
        if case.status != "passed":
            if key not in by_case and key not in not_passed:
                order.append(key)
            not_passed.setdefault(key, []).append(case.repetition)

    items: list[CaseAnnotation] = []
    for key in order:
        source = sources.get(key)
        if not source or not source.get("path"):
            continue
        path = repository_path(str(source["path"]), root, cwd)
        if path is None:
            continue
        line = source.get("line")
        findings = by_case.get(key, [])
        failed = not_passed.get(key, [])
        level = _case_level(findings, bool(failed), key in evidence)
        if level == "failure":
            # The gate failed on the case: its review-only flags would only say what does not gate.
            findings = [f for f in findings if f.severity != "info"]
        lines = [evidence[key][1]] if key in evidence else []
        lines += [f"- {f.message}" for f in findings[:MAX_FINDINGS_PER_CASE]]
        if len(findings) > MAX_FINDINGS_PER_CASE:
            lines.append(f"- … and {len(findings) - MAX_FINDINGS_PER_CASE} more")
        if failed:
            failing_metrics = sorted(
                {name for c in run.cases if (c.eval_set_id, c.case_id) == key for name in fmt.failing_metric_names(c)}
            )
            why = f" ({', '.join(failing_metrics)})" if failing_metrics else ""
            lines.append(f"{len(failed)} of {repetitions.get(key, len(failed))} repetitions did not pass{why}.")
        kinds = [f.kind.replace("_", " ") for f in findings]
        kinds += [evidence[key][0]] if key in evidence else []
        label = ", ".join(dict.fromkeys(kinds)) or "did not pass"
        if level == "notice":
            label += " (for review, not gated)"
        items.append(
            CaseAnnotation(
                path=path,
                line=line if isinstance(line, int) and line >= 1 else 1,
                level=level,
                title=plain_text(f"evalward: case {key[1]}: {label}", TITLE_MAX),
                message=plain_text("\n".join(lines), MESSAGE_MAX_CHARS),
            )
        )
    items.sort(key=lambda a: _LEVEL_ORDER[a.level])
    return items


def _set_of(run: RunResult, case_id: str) -> str:
    for case in run.cases:
        if case.case_id == case_id:
            return case.eval_set_id
    return ""
