"""Which module registers each built-in metric: generated, never edited by hand.

`python -m evalward.metrics.registry` rewrites it from the classes the modules of `evalward.metrics` register
(`@register_metric`); tests/metrics/test_registry.py fails while it differs from them.

Why a list at all: every run asks for the names evalward can score before it reads its files
(`registry.known_metric_names`), and a criterion's metric is found by importing its family only. Importing every
family to learn the names would build every metric's option models: ~75 M instructions beyond the ADK families,
over 5% of a 1-case run's start-up, for metrics a run mostly does not score.
"""

BUILT_IN_METRICS: dict[str, str] = {
    "agent_tools_match": "evalward.metrics.multi_agent",
    "agents_match": "evalward.metrics.multi_agent",
    "allowed_tools": "evalward.metrics.tools",
    "cost_usd": "evalward.metrics.usage",
    "error_calls": "evalward.metrics.tools",
    "handoff_match": "evalward.metrics.multi_agent",
    "inference_call_count_v1": "evalward.metrics.usage",
    "invocation_duration_v1": "evalward.metrics.usage",
    "latency_s": "evalward.metrics.usage",
    "max_tool_calls": "evalward.metrics.tools",
    "output_match": "evalward.metrics.response",
    "redundant_calls": "evalward.metrics.tools",
    "response_contains": "evalward.metrics.response",
    "response_exact": "evalward.metrics.response",
    "response_match_score": "evalward.metrics.adk",
    "response_regex": "evalward.metrics.response",
    "response_rouge1": "evalward.metrics.response",
    "state_contains": "evalward.metrics.state",
    "state_exact": "evalward.metrics.state",
    "state_unchanged": "evalward.metrics.state",
    "step_ratio": "evalward.metrics.tools",
    "token_usage_v1": "evalward.metrics.usage",
    "tool_call_count": "evalward.metrics.tools",
    "tool_call_count_v1": "evalward.metrics.usage",
    "tool_called": "evalward.metrics.tools",
    "tool_not_called": "evalward.metrics.tools",
    "tool_order": "evalward.metrics.tools",
    "tool_trajectory_avg_score": "evalward.metrics.adk",
    "total_tokens": "evalward.metrics.usage",
    "trajectory_any_order": "evalward.metrics.trajectory",
    "trajectory_exact": "evalward.metrics.trajectory",
    "trajectory_f1": "evalward.metrics.trajectory",
    "trajectory_in_order": "evalward.metrics.trajectory",
    "trajectory_ordered_f1": "evalward.metrics.trajectory",
    "trajectory_precision": "evalward.metrics.trajectory",
    "trajectory_recall": "evalward.metrics.trajectory",
    "trajectory_same_multiset": "evalward.metrics.trajectory",
    "trajectory_subsequence": "evalward.metrics.trajectory",
    "trajectory_subset": "evalward.metrics.trajectory",
    "trajectory_superset": "evalward.metrics.trajectory",
    "trajectory_weighted_f1": "evalward.metrics.trajectory_weighted",
    "trajectory_weighted_ordered_f1": "evalward.metrics.trajectory_weighted",
    "trajectory_weighted_precision": "evalward.metrics.trajectory_weighted",
    "trajectory_weighted_recall": "evalward.metrics.trajectory_weighted",
}
