"""The metric registry: names, judge metrics, spec checking."""

from __future__ import annotations

import subprocess
import sys

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


def test_the_index_is_what_the_families_register() -> None:
    """Each built-in metric registers itself (`@register_metric`); the index a run reads to find a metric's
    family without importing every family is generated from them and must say the same."""
    from evalward.metrics import registry
    from evalward.metrics.builtin_names import BUILT_IN_METRICS

    index = registry.built_in_index()
    assert index == BUILT_IN_METRICS, "stale: regenerate it with `python -m evalward.metrics.registry`"
    assert set(index) >= NATIVE
    for name, module in index.items():
        cls = type(get_metric(name))
        assert (cls.name, cls.__module__) == (name, module)


def test_a_lookup_imports_only_the_family_of_the_metric() -> None:
    probe = (
        "import sys\n"
        "from evalward.metrics.registry import get_metric, known_metric_names\n"
        "assert len(known_metric_names()) > 40\n"
        "get_metric('state_exact')\n"
        "families = ('adk', 'response', 'trajectory', 'tools', 'multi_agent', 'state', 'usage')\n"
        "print(sorted(f for f in families if f'evalward.metrics.{f}' in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "['state']"


def test_registering_refuses_a_second_class_for_a_name_and_options_that_are_not_a_model() -> None:
    from pydantic import BaseModel

    from evalward.metrics.registry import register_metric

    class Again(Metric):
        name = "response_exact"

    get_metric("response_exact")  # its family registers it
    with pytest.raises(ValueError, match=r"metric 'response_exact' is registered twice: .*ResponseExact and .*Again"):
        register_metric(Again)

    class Loose(BaseModel):
        prefix: str = ""

    class LooseOptions(Metric):
        name = "loose_options_for_a_test"
        Options = Loose

    with pytest.raises(TypeError, match="`Options` must refuse unknown keys"):
        register_metric(LooseOptions)
    assert "loose_options_for_a_test" not in known_metric_names()
