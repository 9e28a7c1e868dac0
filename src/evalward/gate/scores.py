"""What the gate reads of a case result: its scores and statuses, not its turns.

A `CaseResult` carries every turn the agent played (outputs, tool calls, per-turn scores): tens of kilobytes
as objects. The gate's steps read a handful of fields per result (status, the case-level metric results,
error, cost, latency, hashes, the case's cluster and must_pass flag), so `decide` reads each run's results
once, keeps a `ScoredResult` of each (about a kilobyte with six metrics) and lets the full results go: a run
of 100,000 cases read back from the history database (which keeps them in a temporary file) is gated in
~100 MB instead of gigabytes. The reports read the few full results they show from the run itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from evalward.model import CaseError, CaseResult


class ScoredMetric(NamedTuple):
    """One case-level metric result, as the gate reads it."""

    name: str
    score: float | None
    status: str
    threshold: float | None
    higher_is_better: bool


@dataclass(slots=True, kw_only=True)
class ScoredResult:
    """One case × repetition, as the gate reads it (see the module docstring); built by `scored`."""

    eval_set_id: str
    case_id: str
    repetition: int
    status: str
    metric_results: tuple[ScoredMetric, ...]
    """The case-level metric results."""
    error: CaseError | None
    cost_usd: float | None
    latency_s: float | None
    content_hash: str
    must_pass: bool
    cluster: str | None

    def metric(self, name: str) -> ScoredMetric | None:
        """The first case-level result of metric `name` (as `CaseResult.metric`)."""
        return next((m for m in self.metric_results if m.name == name), None)


def scored(results: Iterable[CaseResult]) -> list[ScoredResult]:
    """`ScoredResult`s of `results`, in their order. Names, statuses and ids repeat across thousands of results:
    each distinct string is kept once (`sys.intern`)."""
    intern = sys.intern
    kept: list[ScoredResult] = []
    for result in results:
        usage = result.usage
        kept.append(
            ScoredResult(
                eval_set_id=intern(result.eval_set_id),
                case_id=intern(result.case_id),
                repetition=result.repetition,
                status=intern(result.status),
                metric_results=tuple(
                    ScoredMetric(intern(m.name), m.score, intern(m.status), m.threshold, m.higher_is_better)
                    for m in result.metric_results
                ),
                error=result.error,
                cost_usd=usage.cost_usd if usage is not None else None,
                latency_s=result.latency_s,
                content_hash=intern(result.content_hash),
                must_pass=result.must_pass,
                cluster=intern(result.cluster) if result.cluster is not None else None,
            )
        )
    return kept
