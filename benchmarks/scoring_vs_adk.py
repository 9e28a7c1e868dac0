"""Scoring speed: evalward's ADK-named metrics against google-adk 2.13.0's own evaluators.

1000 single-turn cases, each with ~3 tool calls (actual vs expected, sometimes reordered or with an extra
call) and a ROUGE sentence pair, are scored with `tool_trajectory_avg_score` (IN_ORDER) and
`response_match_score`: by evalward (`ToolTrajectoryAvgScore`, `ResponseMatchScore`, one `score_turn`
per case and metric) and by ADK (`TrajectoryEvaluator`, `RougeEvaluator`, one `evaluate_invocations`
per case and metric, as ADK's eval service calls them). Inputs are built before timing on both sides;
evaluators are built once per side; ADK (and the nltk it stems with) is imported before timing;
evalward's stem cache starts empty. Every case's scores must agree, so the speed is measured on
identical work. Both sides run in this process, after a warm-up call each (so no import or first-use
compile falls inside a timing), and take turns, repeat by repeat; the load average is printed at the start
and the end of the timed repeats.

Goal: evalward ≥ 5× faster. Run: `python benchmarks/scoring_vs_adk.py [--cases N] [--repeat R]`.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

from google.adk.evaluation.eval_case import IntermediateData
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator
from google.genai import types as genai_types

from evalward.metrics.adk import ResponseMatchScore, ToolTrajectoryAvgScore
from evalward.metrics.base import TurnContext
from evalward.metrics.rouge import stem
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import IN_PROCESS, load_average  # a sibling script, found through the path above

Call = tuple[str, dict[str, Any]]

SENTENCE_WORDS = (
    "the order was shipped yesterday and should arrive within three business days please contact support "
    "if your package is delayed refunds are processed automatically after we receive the returned items "
    "weather forecast shows sunny skies running dogs connected flights booking policies cities"
)
WORDS = SENTENCE_WORDS.split()
TOOLS = ["lookup_order", "get_status", "send_email", "refund", "search_flights"]


def make_case(rng: random.Random) -> tuple[list[Call], list[Call], str, str]:
    """(actual calls, expected calls, response, reference) for one case."""
    expected: list[Call] = [
        (rng.choice(TOOLS), {"id": rng.randint(1, 50), "opts": {"fast": rng.random() < 0.5}}) for _ in range(3)
    ]
    actual = list(expected)
    if rng.random() < 0.3:
        rng.shuffle(actual)
    if rng.random() < 0.3:
        actual.insert(rng.randint(0, len(actual)), ("log", {"level": "info"}))
    reference = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    response = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
    return actual, expected, response, reference


def adk_invocation(text: str, calls: list[Call]) -> AdkInvocation:
    return AdkInvocation(
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="question")]),
        final_response=genai_types.Content(role="model", parts=[genai_types.Part(text=text)]),
        intermediate_data=IntermediateData(tool_uses=[genai_types.FunctionCall(name=n, args=a) for n, a in calls]),
    )


def time_evalward(contexts: list[tuple[TurnContext, TurnContext]]) -> tuple[float, list[tuple[float, float]]]:
    trajectory, response = ToolTrajectoryAvgScore(), ResponseMatchScore()
    stem.cache_clear()
    scores: list[tuple[float, float]] = []
    start = time.perf_counter()
    for trajectory_ctx, response_ctx in contexts:
        t = trajectory.score_turn(trajectory_ctx)
        r = response.score_turn(response_ctx)
        assert t is not None and r is not None
        scores.append((t.value, r.value))
    return time.perf_counter() - start, scores


def time_adk(pairs: list[tuple[AdkInvocation, AdkInvocation]]) -> tuple[float, list[tuple[float, float]]]:
    criterion = ToolTrajectoryCriterion(threshold=1.0, match_type="IN_ORDER")
    trajectory = TrajectoryEvaluator(
        eval_metric=EvalMetric(metric_name="tool_trajectory_avg_score", criterion=criterion)
    )
    rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5))
    scores: list[tuple[float, float]] = []
    start = time.perf_counter()
    for actual, expected in pairs:
        t = trajectory.evaluate_invocations([actual], [expected]).overall_score
        r = rouge.evaluate_invocations([actual], [expected]).overall_score
        scores.append((t, r))
    return time.perf_counter() - start, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="best of R timings per side")
    args = parser.parse_args()

    rng = random.Random(1000)
    raw = [make_case(rng) for _ in range(args.cases)]
    spec_t = MetricSpec(name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": "IN_ORDER"})
    spec_r = MetricSpec(name="response_match_score", threshold=0.5)
    contexts: list[tuple[TurnContext, TurnContext]] = []
    adk_pairs: list[tuple[AdkInvocation, AdkInvocation]] = []
    for i, (actual, expected, response, reference) in enumerate(raw):
        turn = Invocation(
            query="question",
            expected_response=reference,
            expected_tool_calls=[ToolCall(name=n, args=a) for n, a in expected],
        )
        output = AgentOutput(response=response, tool_calls=[ToolCall(name=n, args=a) for n, a in actual])
        case = EvalCase(case_id=f"case-{i}", turns=[turn])
        contexts.append(
            (
                TurnContext(case=case, turn=0, expected=turn, actual=output, spec=spec_t),
                TurnContext(case=case, turn=0, expected=turn, actual=output, spec=spec_r),
            )
        )
        adk_pairs.append((adk_invocation(response, actual), adk_invocation(reference, expected)))

    # Warm both sides up (nltk import, first-call costs) before timing.
    time_evalward(contexts[:5])
    time_adk(adk_pairs[:5])

    load_at_start = load_average()
    evalward_runs: list[tuple[float, list[tuple[float, float]]]] = []
    adk_runs: list[tuple[float, list[tuple[float, float]]]] = []
    for _ in range(args.repeat):  # in turns, so a noisy neighbour slows both sides alike
        evalward_runs.append(time_evalward(contexts))
        adk_runs.append(time_adk(adk_pairs))
    load_at_end = load_average()
    ours_scores, adk_scores = evalward_runs[0][1], adk_runs[0][1]
    mismatches = sum(1 for a, b in zip(ours_scores, adk_scores, strict=True) if a != b)
    evalward_s = min(seconds for seconds, _ in evalward_runs)
    adk_s = min(seconds for seconds, _ in adk_runs)

    print(f"cases: {args.cases} (tool_trajectory_avg_score IN_ORDER + response_match_score), best of {args.repeat}")
    print(f"{IN_PROCESS}; {load_at_start} at the start, {load_at_end} at the end")
    print(f"score mismatches: {mismatches}")
    print(f"evalward: {evalward_s:.3f} s ({evalward_s / args.cases * 1e6:.0f} µs/case)")
    print(f"google-adk 2.13.0: {adk_s:.3f} s ({adk_s / args.cases * 1e6:.0f} µs/case)")
    print(f"ratio: evalward is {adk_s / evalward_s:.1f}× faster (goal ≥ 5×)")


if __name__ == "__main__":
    main()
