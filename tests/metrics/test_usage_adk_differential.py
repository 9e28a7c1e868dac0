"""Differential tests: ADK's efficiency metrics against google-adk 2.13's own `_efficiency_evaluators`.

The same ADK event streams go two ways: ADK's evaluators read them as `InvocationEvents`; evalward reads them
with the ADK runner's `extract_output` and scores `tool_call_count_v1`, `inference_call_count_v1` and
`token_usage_v1` through `score_case`. Case values (including n/a = None and ADK's token averaging over every
invocation) must be equal.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from evalward.metrics.scoring import score_case
from evalward.model import EvalCase, Invocation, MetricSpec
from evalward.runners.adk_agent import extract_output

pytestmark = pytest.mark.adk

adk_case = pytest.importorskip("google.adk.evaluation.eval_case")
adk_efficiency = pytest.importorskip("google.adk.evaluation._efficiency_evaluators")
adk_events = pytest.importorskip("google.adk.events")
genai_types = pytest.importorskip("google.genai.types")

NAMES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1")


def _event(rng: random.Random, index: int) -> Any:
    parts = [
        genai_types.Part(function_call=genai_types.FunctionCall(name=rng.choice("fg"), args={"x": rng.randint(0, 3)}))
        for _ in range(rng.randint(0, 2))
    ]
    if not parts:
        parts = [genai_types.Part(text=f"text {index}")]
    usage = None
    if rng.random() < 0.6:

        def count() -> int | None:
            return rng.choice([None, 0, rng.randint(1, 500)])

        usage = genai_types.GenerateContentResponseUsageMetadata(
            prompt_token_count=count(),
            tool_use_prompt_token_count=count(),
            candidates_token_count=count(),
            thoughts_token_count=count(),
        )
    return adk_events.Event(
        author="agent",
        invocation_id="inv",
        content=genai_types.Content(role="model", parts=parts),
        usage_metadata=usage,
        model_version="gemini-x" if rng.random() < 0.3 else None,
    )


def _adk_invocation(events: list[Any]) -> Any:
    return adk_case.Invocation(
        user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="q")]),
        intermediate_data=adk_case.InvocationEvents(
            invocation_events=[
                adk_case.InvocationEvent(
                    author=e.author, content=e.content, usage_metadata=e.usage_metadata, model_version=e.model_version
                )
                for e in events
            ]
        ),
    )


def _adk_scores(turns: list[list[Any]]) -> dict[str, float | None]:
    invocations = [_adk_invocation(events) for events in turns]
    evaluators = {
        "tool_call_count_v1": adk_efficiency._ToolCallCountV1Evaluator(),
        "inference_call_count_v1": adk_efficiency._InferenceCallCountV1Evaluator(),
        "token_usage_v1": adk_efficiency._TokenUsageV1Evaluator(),
    }
    return {name: evaluator.evaluate_invocations(invocations).overall_score for name, evaluator in evaluators.items()}


def _our_scores(turns: list[list[Any]]) -> dict[str, float | None]:
    case = EvalCase(case_id="c", turns=[Invocation(query="q") for _ in turns])
    outputs = [extract_output(events) for events in turns]
    scored = score_case(case, [MetricSpec(name=name) for name in NAMES], outputs)
    assert {r.status for r in scored.metric_results} <= {"informational", "not_applicable"}
    return {r.name: r.score for r in scored.metric_results}


def test_crafted_streams_match_adk() -> None:
    rng = random.Random(0)
    with_usage = [_event(rng, 0) for _ in range(3)]
    # no usage metadata anywhere: ADK reports 0 model calls but no token count (n/a, not 0)
    bare = [
        adk_events.Event(author="agent", content=genai_types.Content(role="model", parts=[genai_types.Part(text="hi")]))
    ]
    for turns in ([bare], [bare, bare], [with_usage, bare], [bare, with_usage]):
        ours, theirs = _our_scores(turns), _adk_scores(turns)
        assert ours == pytest.approx(theirs, abs=1e-12)
    assert _our_scores([bare])["token_usage_v1"] is None
    assert _our_scores([bare])["inference_call_count_v1"] == 0.0


@pytest.mark.parametrize("seed", range(40))
def test_random_streams_match_adk(seed: int) -> None:
    rng = random.Random(seed)
    turns = [[_event(rng, i) for i in range(rng.randint(0, 4))] for _ in range(rng.randint(1, 4))]
    ours, theirs = _our_scores(turns), _adk_scores(turns)
    assert ours.keys() == theirs.keys()
    for name in NAMES:
        if theirs[name] is None:
            assert ours[name] is None, name
        else:
            assert ours[name] == pytest.approx(theirs[name], abs=1e-9), name
