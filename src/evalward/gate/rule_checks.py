"""The checks that use no p-value (docs/gate.md §2): steps 0–3 of `gate.decide` and the `still_failing` cases.

Quarantine (step 7's entries, reported first), completeness (step 0), the thresholds (step 1), the `must_pass`
cases (step 2) and the missing baseline (step 3). Each function reads the `GateContext` and returns its findings.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from evalward.gate.findings import case_name, finding, fmt_num
from evalward.gate.gate_context import GateContext
from evalward.gate.scores import ScoredResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import Finding, Severity

ThresholdMode = Literal["block", "warn", "change", "off"]


def quarantine_findings(ctx: GateContext) -> list[Finding]:
    """Each quarantined case (info: reported, not gated) and each expired entry (a warning) (docs/gate.md §8)."""
    findings: list[Finding] = []
    for key in sorted(ctx.quarantined):
        entry = next(q for q in ctx.policy.quarantine if q.until >= ctx.today and q.matches(*key))
        results = ctx.cur.get(key, [])
        passes = sum(r.status == "passed" for r in results)
        findings.append(
            finding(
                "quarantined",
                "info",
                f"Case {case_name(key)} is quarantined until {entry.until.isoformat()} ({entry.reason}): "
                f"reported ({passes}/{len(results)} repetitions passed), not gated.",
                key=key,
            )
        )
    for entry in ctx.policy.quarantine:
        if entry.until < ctx.today:
            where = f"{entry.eval_set_id}/{entry.case_id}" if entry.eval_set_id else entry.case_id
            expired = finding(
                "quarantined",
                "warning",
                f"Quarantine of case {where} expired on {entry.until.isoformat()} ({entry.reason}): "
                "the case is gated again; extend or remove the entry.",
            )
            findings.append(expired.model_copy(update={"eval_set_id": entry.eval_set_id, "case_id": entry.case_id}))
    return findings


def completeness_findings(ctx: GateContext) -> list[Finding]:
    """Step 0, fail-closed: the run's status, an empty run, errored cases (per `errors`), missing cases."""
    findings: list[Finding] = []
    run = ctx.current
    if run.status != "complete":
        findings.append(
            finding(
                "error",
                "blocking",
                f"Run {run.run_id} has status {run.status!r}, not 'complete': its results are incomplete.",
            )
        )
    if not ctx.current_results:
        findings.append(
            finding(
                "error",
                "blocking",
                f"Run {run.run_id} has no case results: nothing was evaluated, so nothing can pass.",
            )
        )
    severities: dict[str, Severity] = {
        "compare": "info",
        "fail": "blocking",
        "count_as_failure": "warning",
        "ignore": "info",
    }
    severity = severities[ctx.policy.errors]
    consequence = {
        "compare": "left out of the scores on both sides; the error rate is compared with the baseline's "
        "(errors=compare)",
        "fail": "errors fail the gate (errors=fail)",
        "count_as_failure": "counted as failures (errors=count_as_failure)",
        "ignore": "left out of the comparison (errors=ignore)",
    }[ctx.policy.errors]
    for key, results in ctx.cur.items():
        errored = [r for r in results if r.status == "error"]
        if not errored:
            continue
        first = errored[0].error
        what = f"{first.kind}: {first.message}" if first is not None else "no error details recorded"
        findings.append(
            finding(
                "error",
                severity,
                f"Case {case_name(key)} errored in {len(errored)} of {len(results)} repetitions ({what}); "
                f"{consequence}.",
                key=key,
                current_value=float(len(errored)),
            )
        )
    missing_severity: Severity = "blocking" if ctx.policy.missing_cases == "fail" else "warning"
    expected = max(1, run.repetitions)
    for info in sorted(run.eval_sets, key=lambda i: i.eval_set_id):
        for case_id in sorted(info.case_hashes):
            key = (info.eval_set_id, case_id)
            found = len(ctx.cur.get(key, []))
            if found < expected:
                findings.append(
                    finding(
                        "missing_case",
                        missing_severity,
                        f"Case {case_name(key)} has {found} of {expected} expected results "
                        f"(missing_cases={ctx.policy.missing_cases}).",
                        key=key,
                        current_value=float(found),
                    )
                )
    return findings


def threshold_mode(ctx: GateContext) -> ThresholdMode:
    """How step 1 treats thresholds: the policy's mode, with `change` falling back to ADK's absolute rule
    when there is nothing to compare with — except under `on_missing_baseline="error"`, where the missing
    comparison is the verdict and failing thresholds are shown as warnings."""
    mode = ctx.policy.thresholds
    if mode != "change" or ctx.baseline is not None:
        return mode
    assert ctx.absence is not None
    if ctx.judged_absolutely() or ctx.policy.on_missing_baseline in ("neutral", "fail"):
        return "block"
    return "warn"


def threshold_findings(ctx: GateContext, mode: ThresholdMode) -> list[Finding]:
    """Step 1 under `block` and `warn` (ADK's absolute rule); `change` is judged after pairing.

    Any check that fails a case is a threshold (docs/gate.md §2): a metric with a threshold; a pass/fail check
    without one (a boolean evaluator: each failed repetition counts); and, when no metric could pass the case at
    all (its expectations scored only informationally, or none applied), the case itself. A case whose status
    is `failed` is therefore never judged to have met its thresholds."""
    if mode in ("off", "change"):
        return []
    findings: list[Finding] = []
    severity: Severity = "blocking" if mode == "block" else "warning"
    for key, results in ctx.cur.items():
        if key in ctx.quarantined:
            continue
        findings += _case_threshold_findings(ctx, key, results, severity)
    return findings


def _case_threshold_findings(
    ctx: GateContext, key: CaseKey, results: Sequence[ScoredResult], severity: Severity
) -> list[Finding]:
    """The case's misses: one finding per thresholded metric or pass/fail check that failed it, else one for
    the repetitions no metric could pass."""
    findings: list[Finding] = []
    rule = ctx.current.pass_rule
    for name in _thresholded_names(results):
        metric_results = [m for r in results if (m := r.metric(name)) is not None]
        scores = [m.score for m in metric_results if m.score is not None]
        mean = statistics.fmean(scores) if scores else None
        threshold = next(m.threshold for m in metric_results if m.threshold is not None)
        lower = not metric_results[0].higher_is_better
        if rule == "per_run":
            failed = sum(m.status == "failed" for m in metric_results)
            if failed == 0:
                continue
            why = f"failed in {failed} of {len(results)} repetitions (pass_rule=per_run: every one must pass)"
        else:
            if mean is None or (mean <= threshold if lower else mean >= threshold):
                continue
            why = f"mean over {len(scores)} repetitions {fmt_num(mean)} misses it (pass_rule=mean_over_runs)"
        direction = "<=" if lower else ">="
        findings.append(
            finding(
                "threshold",
                severity,
                f"Case {case_name(key)}: {name} must be {direction} {threshold:g}; {why}.",
                key=key,
                metric=name,
                current_value=mean,
            )
        )
    for name in _verdict_only_names(results):
        failed = sum(m.status == "failed" for r in results if (m := r.metric(name)) is not None)
        if failed:
            findings.append(
                finding(
                    "threshold",
                    severity,
                    f"Case {case_name(key)}: the pass/fail check {name} failed in {failed} of {len(results)} "
                    "repetitions (a check without a threshold fails the case as one that misses its threshold).",
                    key=key,
                    metric=name,
                    current_value=float(len(results) - failed),
                )
            )
    unpassable = [r for r in results if _nothing_could_pass(r)]
    if unpassable and not findings:
        findings.append(
            finding(
                "threshold",
                severity,
                f"Case {case_name(key)} failed in {len(unpassable)} of {len(results)} repetitions: no metric could "
                f"pass it ({_why_nothing_passed(unpassable)}); a case passes only when a metric with a threshold, "
                "or a pass/fail check, passes it.",
                key=key,
                current_value=float(len(results) - len(unpassable)),
            )
        )
    return findings


def _thresholded_names(results: Sequence[ScoredResult]) -> list[str]:
    """The case's metrics that carry a threshold."""
    return sorted({m.name for r in results for m in r.metric_results if m.threshold is not None})


def _verdict_only_names(results: Sequence[ScoredResult]) -> list[str]:
    """The case's pass/fail checks without a threshold: metrics that passed or failed a repetition on their own
    (a boolean evaluator, a custom metric's PASSED/FAILED)."""
    thresholded = set(_thresholded_names(results))
    return sorted(
        {
            m.name
            for r in results
            for m in r.metric_results
            if m.status in ("passed", "failed") and m.name not in thresholded
        }
    )


def _nothing_could_pass(result: ScoredResult) -> bool:
    """A repetition that failed although no metric failed it: nothing passed it either (`metrics.evaluation`,
    rule 3: never a silent pass)."""
    return result.status == "failed" and not any(m.status == "failed" for m in result.metric_results)


def _why_nothing_passed(results: Sequence[ScoredResult]) -> str:
    """`response_rouge1 is informational, without a threshold; tool_trajectory_avg_score did not apply`."""
    statuses: dict[str, set[str]] = {}
    for result in results:
        for metric in result.metric_results:
            statuses.setdefault(metric.name, set()).add(metric.status)
    if not statuses:
        return "no metric scored it"
    words = {"informational": "is informational, without a threshold", "not_applicable": "did not apply"}
    parts = [
        f"{name} {' and '.join(words.get(s, s) for s in sorted(found))}" for name, found in sorted(statuses.items())
    ]
    return "; ".join(parts)


def must_pass_findings(ctx: GateContext) -> list[Finding]:
    """Step 2, the hard gates: pass^k unless the policy allows failures."""
    findings: list[Finding] = []
    allowed = ctx.policy.must_pass_allowed_failures
    for key, results in ctx.cur.items():
        if key in ctx.quarantined or not any(r.must_pass for r in results):
            continue
        failures = sum(r.status != "passed" for r in results)
        if failures > allowed:
            findings.append(
                finding(
                    "must_pass",
                    "blocking",
                    f"Must-pass case {case_name(key)} failed or errored in {failures} of {len(results)} "
                    f"repetitions (allowed: {allowed}); hard gates are not statistical.",
                    key=key,
                    current_value=float(len(results) - failures),
                )
            )
    return findings


def missing_baseline_is_error(ctx: GateContext) -> bool:
    """No baseline under `on_missing_baseline="error"`: the outcome is `error` unless something else blocks."""
    return ctx.baseline is None and not ctx.judged_absolutely() and ctx.policy.on_missing_baseline == "error"


def missing_baseline_findings(ctx: GateContext) -> list[Finding]:
    """Step 3: the `no_baseline` finding, by `on_missing_baseline`."""
    assert ctx.absence is not None
    why = ctx.absence.reason.rstrip(".")
    if ctx.judged_absolutely():
        judged = (
            "judged by the absolute thresholds alone (ADK semantics)"
            if ctx.policy.thresholds in ("change", "block")
            else f"only the absolute checks ran (thresholds={ctx.policy.thresholds})"
        )
        return [finding("no_baseline", "warning", f"No baseline to compare with ({why}): {judged}.")]
    policy = ctx.policy.on_missing_baseline
    if policy == "error":
        return [
            finding(
                "no_baseline",
                "blocking",
                f"No baseline could be made ({why}), so nothing was compared: no verdict "
                "(on_missing_baseline=error: exit 3, never a silent pass).",
            )
        ]
    if policy == "fail":
        return [
            finding(
                "no_baseline", "blocking", f"No baseline run to compare with ({why}), and on_missing_baseline=fail."
            )
        ]
    return [
        finding(
            "no_baseline",
            "warning",
            f"No baseline run to compare with ({why}): no regression check was possible "
            "(on_missing_baseline=neutral, so the verdict is inconclusive unless an absolute check failed).",
        )
    ]


def still_failing(ctx: GateContext, compared: Sequence[CaseKey]) -> tuple[list[CaseKey], list[Finding]]:
    """Cases that miss their thresholds now and did at the baseline too: shown, not blocking (step 1)."""
    assert ctx.baseline is not None
    keys: list[CaseKey] = []
    findings: list[Finding] = []
    for key in compared:
        if case_passes(ctx.cur[key], ctx.current.pass_rule):
            continue
        if case_passes(ctx.base[key], ctx.baseline.pass_rule):
            continue
        keys.append(key)
        now = sum(r.status == "passed" for r in ctx.cur[key])
        before = sum(r.status == "passed" for r in ctx.base[key])
        findings.append(
            finding(
                "still_failing",
                "warning",
                f"Case {case_name(key)} still fails its thresholds ({now}/{len(ctx.cur[key])} repetitions pass; "
                f"{before}/{len(ctx.base[key])} at the baseline): not new, so not blocking.",
                key=key,
                baseline_value=before / len(ctx.base[key]),
                current_value=now / len(ctx.cur[key]),
            )
        )
    return keys, findings


def case_passes(results: Sequence[ScoredResult], pass_rule: str) -> bool:
    """Whether a case passes over its repetitions under the run's pass rule (errors never pass).

    `per_run`: every repetition has status `passed`. `mean_over_runs`: no repetition errored, none failed with
    nothing able to pass it, every pass/fail check without a threshold passed every repetition, and, for every
    thresholded metric, the mean over the scored repetitions meets the threshold."""
    if not results or any(r.status == "error" for r in results):
        return False
    if pass_rule != "mean_over_runs":
        return all(r.status == "passed" for r in results)
    if any(_nothing_could_pass(r) for r in results):
        return False
    for name in _verdict_only_names(results):
        if any((m := r.metric(name)) is not None and m.status == "failed" for r in results):
            return False
    for name in _thresholded_names(results):
        metric_results = [m for r in results if (m := r.metric(name)) is not None]
        scores = [m.score for m in metric_results if m.score is not None]
        threshold = next(m.threshold for m in metric_results if m.threshold is not None)
        if not scores:
            continue
        mean = statistics.fmean(scores)
        lower = not metric_results[0].higher_is_better
        if (mean > threshold) if lower else (mean < threshold):
            return False
    return True
