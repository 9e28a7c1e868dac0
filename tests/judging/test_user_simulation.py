"""`per_turn_user_simulator_quality_v1`: the judge of the simulated user, over the fake server."""

from __future__ import annotations

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.judging.scored import judge_case

from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_case import Judging
from evalward.loaders.adk_personas import PREBUILT_PERSONAS
from evalward.metrics.judge.prompts import prompt_identity, user_turn_prompt
from evalward.metrics.judge.spec import check_judge_options, judge_spec
from evalward.model import AgentOutput, CaseResult, ConversationScenario, EvalCase, Invocation, MetricSpec

SCENARIO = ConversationScenario(starting_prompt="I want a trip.", conversation_plan="3 days in Paris; accept the plan.")
METRIC = "per_turn_user_simulator_quality_v1"


def played(*queries: str, scenario: ConversationScenario = SCENARIO) -> EvalCase:
    case = EvalCase(case_id="trip", turns=[Invocation(query=scenario.starting_prompt)], scenario=scenario)
    return case.played(list(queries))


def outputs(n: int) -> list[AgentOutput]:
    return [AgentOutput(response=f"agent answer {i + 1}") for i in range(n)]


def verdict(valid: bool) -> Reply:
    return Reply.json({"reasoning": "valid" if valid else "breaks the plan", "is_valid": valid})


def judging_for(fake: FakeOpenAI) -> Judging:
    return Judging(JudgeConfig(model="judge-model", base_url=fake.base_url), environ={})


async def judge(fake: FakeOpenAI, case: EvalCase, spec: MetricSpec) -> CaseResult:
    judging = judging_for(fake)
    try:
        return await judge_case(case, [spec], outputs(len(case.turns)), judging)
    finally:
        await judging.aclose()


def test_spec_defaults_follow_adk() -> None:
    spec = judge_spec(MetricSpec(name=METRIC, threshold=1.0))
    assert (spec.kind, spec.num_samples, spec.aggregate, spec.stop_signal) == (
        "user_simulation",
        5,
        "majority",
        "</finished>",
    )
    custom = judge_spec(MetricSpec(name=METRIC, threshold=1.0, options={"stop_signal": "<bye>"}))
    assert custom.stop_signal == "<bye>" and prompt_identity(custom) != prompt_identity(spec)
    assert check_judge_options(MetricSpec(name=METRIC, options={"stop_signal": ""})) == [
        f"{METRIC}: stop_signal must be a non-empty string, found ''"
    ]


def test_the_prompt_shows_plan_history_message_and_persona_violations() -> None:
    spec = judge_spec(MetricSpec(name=METRIC, threshold=1.0))
    novice = SCENARIO.model_copy(update={"user_persona": PREBUILT_PERSONAS["NOVICE"]})
    prompt = user_turn_prompt(spec, novice, [("I want a trip.", AgentOutput(response="Where to?"))], "Paris, 3 days.")
    system, user = prompt.messages
    assert "</finished>" in system["content"] and "PERSONA" in system["content"]
    assert "* violation: The user tells the agent how to fix its mistake." in system["content"]
    assert user["content"] == (
        "CONVERSATION PLAN:\n3 days in Paris; accept the plan.\n\nCONVERSATION SO FAR:\n"
        "USER: I want a trip.\nAGENT: Where to?\n\nNEXT USER MESSAGE:\nParis, 3 days."
    )
    assert prompt.schema["required"] == ["reasoning", "is_valid"]


async def test_every_turn_after_the_first_and_the_ending_are_judged(fake_openai: FakeOpenAI) -> None:
    # Turn 2 valid, turn 3 invalid, ending valid.
    fake_openai.responder = lambda body: verdict("NEXT USER MESSAGE:\nPushy" not in body["messages"][1]["content"])
    spec = MetricSpec(name=METRIC, threshold=0.5, options={"num_samples": 1})
    result = await judge(fake_openai, played("I want a trip.", "Paris please.", "Pushy"), spec)

    messages = [r.body["messages"][1]["content"].rsplit("\n", 1)[1] for r in fake_openai.completions() if r.body]
    assert sorted(messages) == ["</finished>", "Paris please.", "Pushy"]  # turn 1 needs no judge
    case_metric = result.metric(METRIC)
    assert case_metric is not None
    # hand calculation: turns 1, 2, 3 = 1 (starting prompt), 1, 0 → 2/3
    assert case_metric.score == pytest.approx(2 / 3)
    assert case_metric.explanation == "valid simulated-user turns: (1 + 1 + 0)/3 = 0.667; 0.667 >= 0.5"
    assert result.status == "passed"


async def test_an_ending_judged_wrong_replaces_the_last_turn(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: verdict(
        "NEXT USER MESSAGE:\n</finished>" not in body["messages"][1]["content"]
    )
    spec = MetricSpec(name=METRIC, threshold=1.0, options={"num_samples": 1})
    result = await judge(fake_openai, played("I want a trip.", "Paris please."), spec)
    case_metric = result.metric(METRIC)
    assert case_metric is not None
    # hand calculation: turn 1 = 1, turn 2 = 1 but the ending (0) replaces it → (1 + 0)/2 = 0.5
    assert case_metric.score == 0.5 and case_metric.status == "failed"
    assert case_metric.details["turn_scores"] == {"0": 1.0, "1": 0.0}


async def test_a_tie_of_samples_is_invalid_and_scripted_cases_do_not_apply(fake_openai: FakeOpenAI) -> None:
    votes = iter([True, False, True, False] * 2)
    fake_openai.responder = lambda body: verdict(next(votes))
    spec = MetricSpec(name=METRIC, threshold=1.0, options={"num_samples": 2})
    result = await judge(fake_openai, played("I want a trip."), spec)
    case_metric = result.metric(METRIC)
    # One turn (the starting prompt, 1) and a 1-1 tie on the ending, which counts as invalid and replaces it.
    assert case_metric is not None and case_metric.score == 0.0

    scripted = EvalCase(case_id="s", turns=[Invocation(query="hi", expected_response="hello")])
    result = await judge(fake_openai, scripted, MetricSpec(name=METRIC, threshold=1.0))
    metric = result.metric(METRIC)
    assert metric is not None and metric.status == "not_applicable"
    assert (
        metric.explanation
        == "not applicable: a scripted case has no simulated user (only conversation_scenario cases do)"
    )
