"""The metric registry: every name usable in test_config.json, native files and `--metric`.

- `get_metric(name)` returns a fresh metric instance (KeyError listing the known names otherwise);
- `known_metric_names()` lists the names evalward can score (sorted);
- `check_specs(specs)` returns every problem with a list of `MetricSpec`s (unknown names, bad options);
- `JUDGE_METRICS` / `requires_judge(name)`: LLM-judge metrics (ADK's and evalward's `answer_correctness`,
  `llm_judge`) and ADK's Vertex metrics; scored by `evalward.judging` after the agent ran, never by
  `get_metric` (a run with one and no reachable judge stops before running, never a silent skip);
- `STEPWISE_METRICS` / `is_stepwise(name)`: the teacher-forcing metrics (`metrics.stepwise`), computed by the
  pipeline for turns with `reference_messages`; with `match: judge` their steps are judged, so
  `needs_judge(spec)` is true for them too (`metrics.step_judge`);
- `is_custom(spec)`: ADK custom metrics (`custom_metrics` in test_config.json, `metrics.custom`), run by the
  pipeline after the agent ran (they may be async); `check_specs` imports their functions up front.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalward.metrics.adk import ResponseMatchScore, ToolTrajectoryAvgScore
from evalward.metrics.base import Metric
from evalward.metrics.multi_agent import MULTI_AGENT_METRICS
from evalward.metrics.response import OutputMatch, ResponseContains, ResponseExact, ResponseRegex, ResponseRouge1
from evalward.metrics.state import STATE_METRICS
from evalward.metrics.stepwise import BOUNDED_METRICS as _BOUNDED_STEP_METRICS
from evalward.metrics.stepwise import STEPWISE_ALIASES as _STEPWISE_ALIASES
from evalward.metrics.stepwise import STEPWISE_METRICS as _STEPWISE_NAMES
from evalward.metrics.tools import TOOL_METRICS
from evalward.metrics.trajectory import TRAJECTORY_METRICS
from evalward.model import MetricSpec

JUDGE_METRICS: frozenset[str] = frozenset(
    {
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "rubric_based_multi_turn_trajectory_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "response_evaluation_score",
        "per_turn_user_simulator_quality_v1",
        "multi_turn_task_success_v1",
        "multi_turn_trajectory_quality_v1",
        "multi_turn_tool_use_quality_v1",
        "answer_correctness",
        "llm_judge",
    }
)
"""Metrics that need an LLM judge (or Vertex AI); `metrics.judge.JUDGED_METRICS` lists those evalward judges."""

STEPWISE_METRICS: frozenset[str] = frozenset({*_STEPWISE_NAMES, *_STEPWISE_ALIASES})
"""Teacher-forcing metrics (and their aliases), computed outside `score_case` from extra agent calls."""


def _build() -> dict[str, type[Metric]]:
    from evalward.metrics.usage import USAGE_METRICS

    classes: list[type[Metric]] = [
        ToolTrajectoryAvgScore,
        ResponseMatchScore,
        ResponseExact,
        ResponseContains,
        ResponseRegex,
        ResponseRouge1,
        OutputMatch,
        *TRAJECTORY_METRICS,
        *TOOL_METRICS,
        *MULTI_AGENT_METRICS,
        *STATE_METRICS,
        *USAGE_METRICS,
    ]
    registry: dict[str, type[Metric]] = {}
    for cls in classes:
        if cls.name in registry:  # pragma: no cover - guards against a copy-paste name clash
            raise RuntimeError(f"metric name {cls.name!r} registered twice")
        registry[cls.name] = cls
    return registry


_REGISTRY: dict[str, type[Metric]] = _build()


def known_metric_names() -> list[str]:
    """Every metric name evalward can score, sorted (judge metrics are not included; see JUDGE_METRICS)."""
    return sorted(_REGISTRY)


def requires_judge(name: str) -> bool:
    """True for LLM-judge / Vertex metric names."""
    return name in JUDGE_METRICS


def needs_judge(spec: MetricSpec) -> bool:
    """True for a criterion scored with a judge: a judge metric, or a step metric with `match: judge`."""
    from evalward.metrics.step_judge import judges_steps

    return requires_judge(spec.name) or judges_steps(spec)


def is_stepwise(name: str) -> bool:
    """True for the teacher-forcing metric names."""
    return name in STEPWISE_METRICS


def is_custom(spec: MetricSpec) -> bool:
    """True for an ADK custom metric (a criterion declared under `custom_metrics`)."""
    from evalward.metrics.custom import is_custom as _is_custom

    return _is_custom(spec)


def get_metric(name: str) -> Metric:
    """A new instance of the metric registered as `name`."""
    cls = _REGISTRY.get(name)
    if cls is None:
        if requires_judge(name):
            raise KeyError(f"metric {name!r} needs a judge model, which evalward does not provide yet")
        raise KeyError(f"unknown metric {name!r}; known metrics: {', '.join(known_metric_names())}")
    return cls()


def check_specs(specs: Sequence[MetricSpec]) -> list[str]:
    """Problems with the given specs: unknown names (with a suggestion), bad options or thresholds.

    Judge metrics have their options checked here; whether a judge is available is the caller's question.
    """
    from evalward.metrics.custom import check_custom_spec

    problems: list[str] = []
    for spec in specs:
        if is_custom(spec):
            problems.extend(check_custom_spec(spec))
            continue
        if requires_judge(spec.name):
            from evalward.metrics.judge import check_judge_options

            problems.extend(check_judge_options(spec))
            continue
        if is_stepwise(spec.name):
            from evalward.metrics.step_judge import check_step_options

            problems.extend(check_step_options(spec))
            bounded = spec.name in _BOUNDED_STEP_METRICS
            if bounded and spec.threshold is not None and not 0.0 <= spec.threshold <= 1.0:
                problems.append(f"{spec.name}: threshold must be between 0 and 1, found {spec.threshold:g}")
            continue
        cls = _REGISTRY.get(spec.name)
        if cls is None:
            problems.append(_unknown(spec.name))
            continue
        metric = cls()
        problems.extend(metric.check_options(spec))
        if spec.threshold is not None and metric.higher_is_better and not 0.0 <= spec.threshold <= 1.0:
            problems.append(f"{spec.name}: threshold must be between 0 and 1, found {spec.threshold:g}")
    return problems


def _unknown(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, [*_REGISTRY, *JUDGE_METRICS, *STEPWISE_METRICS], n=3, cutoff=0.8)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known metrics: {', '.join(known_metric_names())}"
    return f"unknown metric {name!r}{hint}"
