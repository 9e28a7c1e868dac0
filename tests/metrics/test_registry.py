"""The metric registry: names, judge metrics, spec checking."""

from __future__ import annotations

import pytest

from evalward.metrics.base import Metric
from evalward.metrics.registry import (
    JUDGE_METRICS,
    check_specs,
    get_metric,
    known_metric_names,
    metric_for,
    requires_judge,
)
from evalward.model import MetricSpec

NATIVE = {
    "trajectory_exact",
    "trajectory_in_order",
    "trajectory_any_order",
    "trajectory_superset",
    "trajectory_subset",
    "trajectory_same_multiset",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_f1",
    "trajectory_ordered_f1",
    "trajectory_subsequence",
    "trajectory_weighted_precision",
    "trajectory_weighted_recall",
    "trajectory_weighted_f1",
    "trajectory_weighted_ordered_f1",
    "tool_called",
    "tool_not_called",
    "allowed_tools",
    "tool_call_count",
    "tool_order",
    "max_tool_calls",
    "step_ratio",
    "redundant_calls",
    "error_calls",
    "agents_match",
    "agent_tools_match",
    "handoff_match",
    "state_exact",
    "state_contains",
    "state_unchanged",
    "latency_s",
    "total_tokens",
    "cost_usd",
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
    "tool_trajectory_avg_score",
    "response_match_score",
}


def test_known_names_are_sorted_and_cover_the_native_family() -> None:
    names = known_metric_names()
    assert names == sorted(names)
    assert set(names) >= NATIVE
    assert not JUDGE_METRICS & set(names)


def test_every_known_metric_instantiates_with_a_docstring() -> None:
    for name in known_metric_names():
        metric = get_metric(name)
        assert isinstance(metric, Metric)
        assert metric.name == name
        assert metric.scope in ("turn", "case")
        assert (metric.description or type(metric).__doc__ or "").strip(), name


def test_get_metric_errors_name_the_known_metrics() -> None:
    with pytest.raises(KeyError, match="unknown metric 'nope'; known metrics: agent_tools_match, agents_match"):
        get_metric("nope")
    # a judged metric is scored by the judge batch's metric, never as an outputs metric
    with pytest.raises(KeyError, match="scored by its batch's metric: use metric_for"):
        get_metric("final_response_match_v2")
    assert metric_for(MetricSpec(name="final_response_match_v2")).batch == "judge"


def test_requires_judge() -> None:
    assert requires_judge("final_response_match_v2")
    assert requires_judge("rubric_based_tool_use_quality_v1")
    assert requires_judge("safety_v1")
    assert not requires_judge("trajectory_f1")


def test_check_specs_collects_every_problem() -> None:
    specs = [
        MetricSpec(name="trajectory_f1", threshold=0.8),
        MetricSpec(name="trajectroy_f1"),
        MetricSpec(name="trajectory_exact", threshold=1.5),
        MetricSpec(name="tool_called", options={}),
        MetricSpec(name="hallucinations_v1", threshold=0.5),
        MetricSpec(name="latency_s", threshold=30),
    ]
    assert check_specs(specs) == [
        "unknown metric 'trajectroy_f1'; did you mean trajectory_f1?",
        "trajectory_exact: threshold must be between 0 and 1, found 1.5",
        "tool_called: option tool: Field required",
    ]


def test_the_lazy_table_names_every_metric_class_under_its_own_name() -> None:
    """The registry imports a metric's module on first use, from a table of names: the table must list every
    class of every metric family, each under the name the class declares, and nothing else."""
    from evalward.metrics import registry
    from evalward.metrics.adk import ResponseMatchScore, ToolTrajectoryAvgScore
    from evalward.metrics.multi_agent import MULTI_AGENT_METRICS
    from evalward.metrics.response import OutputMatch, ResponseContains, ResponseExact, ResponseRegex, ResponseRouge1
    from evalward.metrics.state import STATE_METRICS
    from evalward.metrics.tools import TOOL_METRICS
    from evalward.metrics.trajectory import TRAJECTORY_METRICS
    from evalward.metrics.trajectory_weighted import WEIGHTED_TRAJECTORY_METRICS
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
        *WEIGHTED_TRAJECTORY_METRICS,
        *TOOL_METRICS,
        *MULTI_AGENT_METRICS,
        *STATE_METRICS,
        *USAGE_METRICS,
    ]
    by_name = {cls.name: cls for cls in classes}
    assert len(by_name) == len(classes)  # no two classes share a name
    assert set(registry._HOMES) == set(by_name)
    for name, cls in by_name.items():
        assert registry._HOMES[name] == (cls.__module__, cls.__name__)
        assert type(get_metric(name)) is cls
