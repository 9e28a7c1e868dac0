"""Multi-agent checks (docs/metrics.md §7; the TypeScript evaluator of guide 002).

Both compare **sets**, as the seed does (its collector de-duplicates tools per agent):
- `agents_match`: missed = expected agents that did not take part, extra = agents that took part
  without being expected; 1 iff both are empty.
- `agent_tools_match`: per agent, missed = expected tools the agent never called, extra = tools it
  called that were not expected for it (tools of an agent absent from the expectation are all extra);
  1 iff nothing is missed or extra anywhere. Per-agent precision = |E∩A|/|A| and recall = |E∩A|/|E| over
  tool-name sets go into details (both empty → 1, exactly one empty → 0, as docs/metrics.md §2).
Deferred calls do not count; calls without an agent are grouped under "" (as `AgentOutput.tools_by_agent`).

`handoff_match` compares **sequences** (docs/metrics.md §7): the handoffs are a trajectory of agent names, scored
by the trajectory engine under any §2 mode (`mode`, default `exact`) with string equality as M. Expected:
the turn's `expected_agents`, in order. Actual: the agents the output reports (`agents`, in order), else the
agents that issued the calls in order with consecutive repeats collapsed (A, A, B, A → A, B, A).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evalward.metrics.base import Metric, Score, TurnContext
from evalward.metrics.matching import compat_matrix
from evalward.metrics.metric_options import StrictOptions
from evalward.metrics.registry import register_metric
from evalward.metrics.trajectory import (
    TrajectoryAnyOrder,
    TrajectoryExact,
    TrajectoryF1,
    TrajectoryInOrder,
    TrajectoryMetric,
    TrajectoryOrderedF1,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySameMultiset,
    TrajectorySubset,
)
from evalward.metrics.trajectory_alignment import Alignment
from evalward.metrics.trajectory_options import TrajectoryOptions
from evalward.model import AgentOutput
from evalward.model.text import ratio


def _unique(items: list[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


@register_metric
class AgentsMatch(Metric):
    """1 iff set(expected_agents) = set(actual agents); details list missed and extra agents."""

    name = "agents_match"
    description = "agents that took part equal the expected set (missed/extra); 1/0"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        expected = ctx.expected.expected_agents
        if expected is None:
            return None
        actual = ctx.actual.agent_names()
        missed = [a for a in _unique(expected) if a not in actual]
        extra = [a for a in _unique(actual) if a not in expected]
        passed = not missed and not extra
        explanation = f"agents: {len(missed)} missed, {len(extra)} extra → {int(passed)}"
        if missed:
            explanation += f"; missed {', '.join(missed)}"
        if extra:
            explanation += f"; extra {', '.join(extra)}"
        details = {"expected": list(expected), "actual": actual, "missed": missed, "extra": extra}
        return Score(1.0 if passed else 0.0, explanation, details)


def _set_pr(expected: list[str], actual: list[str]) -> tuple[float, float]:
    if not expected and not actual:
        return 1.0, 1.0
    if not expected or not actual:
        return 0.0, 0.0
    common = len(set(expected) & set(actual))
    return common / len(set(actual)), common / len(set(expected))


@register_metric
class AgentToolsMatch(Metric):
    """1 iff every agent called exactly the expected set of tools; details list missed/extra per agent,
    as `{agent, tool}` pairs, and per-agent precision/recall."""

    name = "agent_tools_match"
    description = "each agent called exactly its expected set of tools (missed/extra per agent); 1/0"

    def score_turn(self, ctx: TurnContext[Any]) -> Score | None:
        expected = ctx.expected.expected_agent_tools
        if expected is None:
            return None
        actual: dict[str, list[str]] = {}
        for call in ctx.actual.tool_calls:
            if call.status != "deferred":
                actual.setdefault(call.agent or "", []).append(call.name)
        actual = {agent: _unique(tools) for agent, tools in actual.items()}
        missed: list[dict[str, str]] = []
        extra: list[dict[str, str]] = []
        per_agent: dict[str, dict[str, Any]] = {}
        for agent in _unique([*expected, *actual]):
            exp_tools = _unique(expected.get(agent, []))
            act_tools = actual.get(agent, [])
            agent_missed = [t for t in exp_tools if t not in act_tools]
            agent_extra = [t for t in act_tools if t not in exp_tools]
            missed.extend({"agent": agent, "tool": t} for t in agent_missed)
            extra.extend({"agent": agent, "tool": t} for t in agent_extra)
            precision, recall = _set_pr(exp_tools, act_tools)
            common = len(set(exp_tools) & set(act_tools))
            per_agent[agent] = {
                "expected": exp_tools,
                "actual": act_tools,
                "missed": agent_missed,
                "extra": agent_extra,
                "precision": precision,
                "recall": recall,
                "arithmetic": f"P={ratio(common, len(act_tools))}, R={ratio(common, len(exp_tools))}",
            }
        passed = not missed and not extra
        explanation = f"agent tools: {len(missed)} missed, {len(extra)} extra → {int(passed)}"
        if missed:
            explanation += "; missed " + ", ".join(f"{m['agent']}.{m['tool']}" for m in missed)
        if extra:
            explanation += "; extra " + ", ".join(f"{e['agent']}.{e['tool']}" for e in extra)
        details = {"missed": missed, "extra": extra, "per_agent": per_agent}
        return Score(1.0 if passed else 0.0, explanation, details)


HandoffMode = Literal[
    "exact", "in_order", "any_order", "superset", "subset", "same_multiset", "precision", "recall", "f1", "ordered_f1"
]

_HANDOFF_ENGINES: dict[str, type[TrajectoryMetric]] = {
    "exact": TrajectoryExact,
    "in_order": TrajectoryInOrder,
    "any_order": TrajectoryAnyOrder,
    "superset": TrajectoryAnyOrder,
    "subset": TrajectorySubset,
    "same_multiset": TrajectorySameMultiset,
    "precision": TrajectoryPrecision,
    "recall": TrajectoryRecall,
    "f1": TrajectoryF1,
    "ordered_f1": TrajectoryOrderedF1,
}


class HandoffOptions(StrictOptions):
    mode: HandoffMode = Field(default="exact", description="Any docs/metrics.md §2 mode.")
    both_empty_score: float = Field(default=1.0, ge=0.0, le=1.0)


def actual_handoffs(output: AgentOutput) -> list[str]:
    """The reported `agents` in order, else the issuing agents of the calls with consecutive repeats collapsed."""
    if output.agents is not None:
        return list(output.agents)
    sequence: list[str] = []
    for call in output.tool_calls:
        if call.agent is not None and call.status != "deferred" and (not sequence or sequence[-1] != call.agent):
            sequence.append(call.agent)
    return sequence


@register_metric
class HandoffMatch(Metric):
    """The agent handoff sequence as a trajectory: actual handoffs (module docstring) vs `expected_agents`
    under `mode` (default `exact`: n = m and a_i = e_i ∀ i; `in_order`, `any_order`/`superset`, `subset`,
    `same_multiset` are 1/0; `precision` = k*/n, `recall` = k*/m, `f1`, `ordered_f1` with the LCS), M being
    name equality. Not applicable without `expected_agents`."""

    name = "handoff_match"
    description = "agent handoff sequence vs expected agents under a trajectory mode (default exact)"
    Options = HandoffOptions

    def score_turn(self, ctx: TurnContext[HandoffOptions]) -> Score | None:
        expected = ctx.expected.expected_agents
        if expected is None:
            return None
        options = ctx.options
        actual = actual_handoffs(ctx.actual)
        alignment = Alignment(
            over="handoffs",
            actual=actual,
            expected=list(expected),
            compat=compat_matrix(actual, list(expected), lambda a, e: a == e),
            labels_actual=list(actual),
            labels_expected=list(expected),
            notes=[],
            diff=lambda i, j: [],
        )
        engine = _HANDOFF_ENGINES[options.mode]()
        result = engine.score_alignment(alignment, TrajectoryOptions(both_empty_score=options.both_empty_score))
        explanation = f"handoffs [{', '.join(actual)}] vs expected [{', '.join(expected)}], {result.explanation}"
        return Score(result.value, explanation, {**result.details, "mode": options.mode})


MULTI_AGENT_METRICS: tuple[type[Metric], ...] = (AgentsMatch, AgentToolsMatch, HandoffMatch)
