"""The outcome of `gate.decide` and the reason that states the deciding statistics (docs/gate.md §6).

`fail` if any finding is blocking (other than a missing baseline under `error`, or no comparable case); else
`error` when the baseline is missing under `on_missing_baseline="error"`, or a baseline exists and no case was
comparable with it (fail-closed: zero comparable results is never "no regressions"); else `inconclusive` if a
gated metric is inconclusive or there is no baseline (neutral policy); else `pass`. With `strict`, inconclusive
fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evalward.gate.findings import finding, fmt_signed, plural
from evalward.gate.gate_context import GateContext
from evalward.gate.rule_checks import missing_baseline_is_error
from evalward.model.cases import CaseKey
from evalward.model.verdict import BaselineInfo, Finding, MetricComparison

Outcome = Literal["pass", "fail", "inconclusive", "error"]

NO_VERDICT_KINDS = frozenset({"no_baseline", "nothing_compared"})
"""The blocking findings that can leave a run without a verdict (`error`): nothing could be compared."""


@dataclass(frozen=True)
class Conclusion:
    outcome: Outcome
    reason: str
    findings: tuple[Finding, ...]
    """Added by the conclusion itself: the `strict` finding that fails an inconclusive verdict."""


def conclude(
    ctx: GateContext,
    comparisons: Sequence[MetricComparison],
    findings: Sequence[Finding],
    compared: Sequence[CaseKey],
) -> Conclusion:
    """The outcome and its reason, from the metric comparisons and every finding of steps 0–7."""
    gated_inconclusive = [m for m in comparisons if m.gated and not m.guard and m.verdict == "inconclusive"]
    nothing_compared = ctx.baseline is not None and not compared
    no_baseline = ctx.baseline is None
    baseline_error = missing_baseline_is_error(ctx)
    blocking = [f for f in findings if f.severity == "blocking"]
    no_verdict = baseline_error or nothing_compared
    real_blocking = [f for f in blocking if not (no_verdict and f.kind in NO_VERDICT_KINDS)]
    added: list[Finding] = []
    outcome: Outcome
    if real_blocking:
        outcome = "fail"
        extra = len(real_blocking) - 1
        more = f" (and {plural(extra, 'more blocking finding')})" if extra else ""
        reason = f"Failed: {real_blocking[0].message.rstrip('.')}{more}."
    elif no_verdict:
        outcome = "error"
        if nothing_compared:
            reason = "Error: no case was comparable with the baseline, so nothing was compared and there is no verdict."
        else:
            reason = f"Error: {blocking[0].message.rstrip('.')}."
    elif no_baseline or gated_inconclusive:
        outcome = "inconclusive"
        if no_baseline:
            reason = (
                "Inconclusive: there is no baseline to compare with (on_missing_baseline=neutral), "
                "and every absolute check passed."
            )
            if ctx.judged_absolutely() and ctx.policy.thresholds in ("change", "block"):
                outcome = "pass"
                reason = (
                    "Passed on the absolute thresholds alone: there is no base side to compare with, and every "
                    "case met every threshold."
                )
        else:
            m = gated_inconclusive[0]
            reason = (
                f"Inconclusive: {m.metric} moved {fmt_signed(m.delta)} over {m.n_cases} cases, which is neither a "
                f"significant regression nor shown to be within {m.delta_ni:g} of the baseline"
                + (f"; {m.advice}." if m.advice else ".")
            )
        if ctx.policy.strict and outcome == "inconclusive":
            added.append(finding("inconclusive", "blocking", "strict: an inconclusive verdict fails the gate."))
            outcome = "fail"
            reason = "Failed (strict): " + reason.removeprefix("Inconclusive: ")
    else:
        outcome = "pass"
        gated = [m.metric for m in comparisons if m.gated and not m.guard]
        reason = (
            f"Passed: no gated metric ({', '.join(gated)}) regressed over "
            f"{plural(len(compared), 'compared case')}, each shown within its margin, and every hard "
            "check passed."
        )
    return Conclusion(outcome=outcome, reason=reason, findings=tuple(added))


def baseline_info(ctx: GateContext) -> BaselineInfo | None:
    """The baseline run as the verdict records it (`chosen_by` is the caller's to fill)."""
    run = ctx.baseline
    if run is None:
        return None
    created = run.finished_at or run.started_at
    started = ctx.current.started_at
    age = (started - created).total_seconds() if created is not None and started is not None else None
    return BaselineInfo(
        run_id=run.run_id,
        commit=run.context.commit,
        branch=run.context.branch,
        created_at=created,
        age_s=age,
        chosen_by="",
    )
