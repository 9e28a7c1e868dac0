"""Environment-state comparison (docs/metrics.md §8), case scope, each scoring 1 or 0 with a path-level diff.

- `state_exact`: deep JSON-typed equality of the final state and `case.expected_state` after removing
  `ignore_paths` from both (timestamps, generated ids); lists `ordered` (default) or `unordered`.
- `state_contains`: expected ⊆ actual recursively (every expected key present with a matching value;
  §4 `contains` rules, lists per `list_policy`, default `exact`).
- `state_unchanged`: final state == initial session state (read-only tasks), after `ignore_paths`.
Value matchers (`{"$any": true}`, `$regex`, …) may appear inside the expected state.

`ignore_paths` are dot paths (`order.updated_at`, `rows.0.id`, `$.rows[0].id`); `*` matches any key or
list index (`rows.*.id`). Not applicable when `expected_state` is None (except `state_unchanged`). An
expectation with no final state reported by the agent fails (the state could not be checked).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from evalward.metrics.args import ArgDiff, ArgsRule, ListPolicy, check_matchers, diff_values, normalize_json, split_path
from evalward.metrics.base import CaseContext, Metric, Score
from evalward.metrics.metric_options import StrictOptions
from evalward.metrics.registry import register_metric


class StateOptions(StrictOptions):
    ignore_paths: list[str] = Field(default_factory=list)
    list_policy: Literal["ordered", "unordered", "exact", "contains"] | None = None


def remove_paths(value: Any, paths: list[str]) -> Any:
    """A deep copy of `value` without the nodes at `paths` (`*` matches any key or index)."""
    result = copy.deepcopy(value)
    for path in paths:
        _remove(result, split_path(path))
    return result


def _remove(node: Any, parts: list[str]) -> None:
    if not parts:
        return
    head, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        keys = list(node) if head == "*" else [head] if head in node else []
        for key in keys:
            if rest:
                _remove(node[key], rest)
            else:
                del node[key]
    elif isinstance(node, list):
        if head == "*":
            indices = list(range(len(node)))
        elif head.isdigit() and int(head) < len(node):
            indices = [int(head)]
        else:
            indices = []
        for index in reversed(indices):
            if rest:
                _remove(node[index], rest)
            else:
                del node[index]


def _diff_summary(diffs: list[ArgDiff], limit: int = 3) -> str:
    shown = "; ".join(d.render() for d in diffs[:limit])
    more = f"; … {len(diffs) - limit} more" if len(diffs) > limit else ""
    return shown + more


class _StateMetric(Metric):
    scope: ClassVar[Literal["turn", "case"]] = "case"
    mode: ClassVar[Literal["exact", "contains"]] = "exact"
    default_list_policy: ClassVar[ListPolicy] = "exact"
    Options = StateOptions

    def _rule(self, options: StateOptions) -> ArgsRule:
        policy = options.list_policy or self.default_list_policy
        mapped: ListPolicy = "exact" if policy == "ordered" else policy
        return ArgsRule(mode=self.mode, list_policy=mapped)

    def _compare(self, actual: Any, expected: Any, options: StateOptions, label: str) -> Score:
        act = normalize_json(remove_paths(actual, options.ignore_paths))
        exp = normalize_json(remove_paths(expected, options.ignore_paths))
        problems = check_matchers(exp, "$")
        if problems:
            raise ValueError("; ".join(problems))
        diffs = diff_values(act, exp, self._rule(options))
        details: dict[str, Any] = {"diffs": [d.as_dict() for d in diffs], "ignored_paths": list(options.ignore_paths)}
        if not diffs:
            return Score(1.0, f"{label}: no differences → 1", details)
        return Score(0.0, f"{label}: {len(diffs)} difference(s) → 0: {_diff_summary(diffs)}", details)


@register_metric
class StateExact(_StateMetric):
    """1 iff final state == expected state (deep, JSON-typed) after removing `ignore_paths`, else 0."""

    name = "state_exact"
    description = "final state equals the expected state (ignore_paths, path-level diff); 1/0"

    def score_case(self, ctx: CaseContext[StateOptions]) -> Score | None:
        expected = ctx.case.expected_state
        if expected is None:
            return None
        if ctx.final_state is None:
            return Score(0.0, "state_exact: the agent reported no final state → 0", {"diffs": []})
        return self._compare(ctx.final_state, expected, ctx.options, "state_exact")


@register_metric
class StateContains(_StateMetric):
    """1 iff expected state ⊆ final state recursively (after `ignore_paths`), else 0."""

    name = "state_contains"
    description = "final state contains the expected state recursively; 1/0"
    mode = "contains"

    def score_case(self, ctx: CaseContext[StateOptions]) -> Score | None:
        expected = ctx.case.expected_state
        if expected is None:
            return None
        if ctx.final_state is None:
            return Score(0.0, "state_contains: the agent reported no final state → 0", {"diffs": []})
        return self._compare(ctx.final_state, expected, ctx.options, "state_contains")


@register_metric
class StateUnchanged(_StateMetric):
    """1 iff final state == initial session state (after `ignore_paths`), else 0. Applies to every case."""

    name = "state_unchanged"
    description = "final state equals the initial session state; 1/0"

    def score_case(self, ctx: CaseContext[StateOptions]) -> Score | None:
        if ctx.final_state is None:
            return Score(0.0, "state_unchanged: the agent reported no final state → 0", {"diffs": []})
        initial: Mapping[str, Any] = ctx.initial_state or {}
        return self._compare(ctx.final_state, dict(initial), ctx.options, "state_unchanged")


STATE_METRICS: tuple[type[Metric], ...] = (StateExact, StateContains, StateUnchanged)
