"""metrics: every criterion scored through one contract (`base.Metric.evaluate`, `evaluation`), turns and cases
scored from outputs (`scoring`), repetitions and cases folded (`aggregate`).

The public names are loaded on first use, so importing `evalward.metrics.base` (which every metric
module does) stays cheap and free of import cycles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward.metrics.aggregate import RunSummary, pass_at_k, pass_hat_k, summarize_run
    from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
    from evalward.metrics.evaluation import score_case_run
    from evalward.metrics.registry import (
        JUDGE_METRICS,
        check_specs,
        get_metric,
        known_metric_names,
        metric_for,
        requires_judge,
    )
    from evalward.metrics.scoring import ScoredCase, score_case
    from evalward.metrics.scoring_context import CaseScores, ScoringContext

_EXPORTS: dict[str, str] = {
    "CaseContext": "evalward.metrics.base",
    "Metric": "evalward.metrics.base",
    "Score": "evalward.metrics.base",
    "TurnContext": "evalward.metrics.base",
    "CaseScores": "evalward.metrics.scoring_context",
    "ScoringContext": "evalward.metrics.scoring_context",
    "score_case_run": "evalward.metrics.evaluation",
    "metric_for": "evalward.metrics.registry",
    "JUDGE_METRICS": "evalward.metrics.registry",
    "check_specs": "evalward.metrics.registry",
    "get_metric": "evalward.metrics.registry",
    "known_metric_names": "evalward.metrics.registry",
    "requires_judge": "evalward.metrics.registry",
    "ScoredCase": "evalward.metrics.scoring",
    "score_case": "evalward.metrics.scoring",
    "RunSummary": "evalward.metrics.aggregate",
    "pass_at_k": "evalward.metrics.aggregate",
    "pass_hat_k": "evalward.metrics.aggregate",
    "summarize_run": "evalward.metrics.aggregate",
}

__all__ = [
    "JUDGE_METRICS",
    "CaseContext",
    "CaseScores",
    "Metric",
    "RunSummary",
    "Score",
    "ScoredCase",
    "ScoringContext",
    "TurnContext",
    "check_specs",
    "get_metric",
    "known_metric_names",
    "metric_for",
    "pass_at_k",
    "pass_hat_k",
    "requires_judge",
    "score_case",
    "score_case_run",
    "summarize_run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalward.metrics' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
