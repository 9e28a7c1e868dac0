"""metrics: score turns and cases (`scoring`), fold repetitions and cases (`aggregate`).

The public names are loaded on first use, so importing `evalward.metrics.base` (which every metric
module does) stays cheap and free of import cycles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward.metrics.aggregate import RunSummary, pass_at_k, pass_hat_k, summarize_run
    from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
    from evalward.metrics.registry import JUDGE_METRICS, check_specs, get_metric, known_metric_names, requires_judge
    from evalward.metrics.scoring import ScoredCase, score_case

_EXPORTS: dict[str, str] = {
    "CaseContext": "evalward.metrics.base",
    "Metric": "evalward.metrics.base",
    "Score": "evalward.metrics.base",
    "TurnContext": "evalward.metrics.base",
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
    "Metric",
    "RunSummary",
    "Score",
    "ScoredCase",
    "TurnContext",
    "check_specs",
    "get_metric",
    "known_metric_names",
    "pass_at_k",
    "pass_hat_k",
    "requires_judge",
    "score_case",
    "summarize_run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalward.metrics' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
