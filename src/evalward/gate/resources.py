"""Step 6 of `gate.decide`: cost and latency by the log-ratio rule (docs/gate.md §7).

Per compared case, the mean cost (`usage.cost_usd`) and the median latency (`latency_s`) on each side; the
ratio is the geometric mean of the per-case ratios, regressed when exp(L) > 1 + τ. A warning unless the
policy sets `gate: true`, then blocking. Cases with a zero or missing value on either side are excluded and
counted (`stats.log_ratio_rule`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from evalward.gate import stats
from evalward.gate.findings import finding, plural
from evalward.gate.gate_context import GateContext, sub_seed
from evalward.gate.scores import ScoredResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import Finding, Severity

INFORMATIONAL_RESAMPLES = 2_000
"""Bootstrap draws for cost/latency ratios that are reported but not gated (`cost.gate`/`latency.gate` off)."""


def resource_findings(ctx: GateContext, compared: Sequence[CaseKey]) -> list[Finding]:
    """One finding for cost and one for latency, when either side recorded any."""
    findings: list[Finding] = []
    kinds: tuple[Literal["cost", "latency"], ...] = ("cost", "latency")
    for kind in kinds:
        gate = ctx.policy.cost if kind == "cost" else ctx.policy.latency
        before: list[float | None] = []
        after: list[float | None] = []
        for key in compared:
            before.append(_resource(ctx.base[key], kind))
            after.append(_resource(ctx.cur[key], kind))
        if all(v is None for v in before) and all(v is None for v in after):
            continue
        # An informational ratio's interval only colours a message, so it takes fewer resamples; a gated
        # one gets the policy's full count. (Keeps `decide` under half a second on 1000-case runs.)
        draws = ctx.policy.resamples if gate.gate else min(ctx.policy.resamples, INFORMATIONAL_RESAMPLES)
        result = stats.log_ratio_rule(
            before,
            after,
            tau=gate.tau,
            alpha=ctx.level,
            seed=sub_seed(ctx.seed, f"log_ratio:{kind}"),
            resamples=draws,
        )
        what = "mean cost per case" if kind == "cost" else "median latency per case"
        if result is None:
            findings.append(
                finding(
                    kind,
                    "info",
                    f"{kind.capitalize()}: no case has a positive {what} on both sides; not compared.",
                )
            )
            continue
        verdict = (
            f"exp(L) = {result.ci_low:.3f} > 1 + τ = {1 + gate.tau:.2f} → regressed"
            if result.regressed
            else f"exp(L) = {result.ci_low:.3f} ≤ 1 + τ = {1 + gate.tau:.2f} → not a regression"
        )
        severity: Severity = "info"
        if result.regressed:
            severity = "blocking" if gate.gate else "warning"
        level = f"{100 * (1 - ctx.level):.4g}"
        findings.append(
            finding(
                kind,
                severity,
                f"{kind.capitalize()} ratio ×{result.ratio:.3f} (geometric mean of the per-case ratios of {what} "
                f"over {plural(result.n, 'case')}, {result.excluded} excluded for zero or missing values; one-sided "
                f"{level}% bounds [{result.ci_low:.3f}, {result.ci_high:.3f}]): {verdict}"
                f"{'' if gate.gate else ' (informational)'}.",
                effect=result.ratio,
                ci=(result.ci_low, result.ci_high),
                test="log_ratio_bootstrap",
            )
        )
    return findings


def _resource(results: Sequence[ScoredResult], kind: str) -> float | None:
    if kind == "cost":
        costs = [r.cost_usd for r in results if r.cost_usd is not None]
        return statistics.fmean(costs) if costs else None
    latencies = [r.latency_s for r in results if r.latency_s is not None]
    return statistics.median(latencies) if latencies else None
