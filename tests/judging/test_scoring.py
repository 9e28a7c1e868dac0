"""Judging a finished case end to end: the tutorial's grader over the fake server, caching, samples, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.judging.scored import judge_case

from evalward.errors import InfrastructureError
from evalward.judging.cache import MemoryJudgeCache, StoredJudgeCache
from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_case import Judging, judged_specs
from evalward.metrics.judge.prompts import CORRECTNESS_SYSTEM
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec
from evalward.store.judge_replies import JudgeReplies

QUESTION = "How many songs do you have by James Brown?"
REFERENCE = "We have 20 songs by James Brown"


def grade(is_correct: bool, reasoning: str = "") -> Reply:
    return Reply.json({"reasoning": reasoning or f"the student says {is_correct}", "is_correct": is_correct})


def case() -> EvalCase:
    return EvalCase(case_id="james-brown", turns=[Invocation(query=QUESTION, expected_response=REFERENCE)])


def judging_for(fake: FakeOpenAI, store: Any = None, **config: Any) -> Judging:
    return Judging(
        JudgeConfig(model="judge-model", base_url=fake.base_url, **config),
        cache=store,
        environ={"OPENAI_API_KEY": "sk-secret"},
    )


async def test_tutorial_grader_flow(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(grade(True, "Both say 20 songs."))
    judging = judging_for(fake_openai)
    spec = MetricSpec(name="answer_correctness", threshold=1.0)
    outputs = [AgentOutput(response="There are 20 James Brown songs in the store.")]
    result = await judge_case(case(), [spec], outputs, judging)
    await judging.aclose()

    body = fake_openai.completions()[0].body
    assert body is not None
    assert body["messages"] == [
        {"role": "system", "content": CORRECTNESS_SYSTEM},
        {
            "role": "user",
            "content": f"QUESTION: {QUESTION}\nGROUND TRUTH RESPONSE: {REFERENCE}\n"
            "STUDENT RESPONSE: There are 20 James Brown songs in the store.",
        },
    ]
    assert body["response_format"]["json_schema"]["name"] == "correctness_grade"
    metric = result.metric("answer_correctness")
    assert metric is not None
    assert (metric.score, metric.status) == (1.0, "passed")
    assert metric.explanation == "judge: VALID -> 1.0; reasoning: Both say 20 songs.; 1.000 >= 1"
    assert metric.details["reasoning"] == "Both say 20 songs."
    assert metric.details["judge"]["model"] == "judge-model"
    assert result.status == "passed"


async def test_majority_of_five_samples_for_final_response_match_v2(fake_openai: FakeOpenAI) -> None:
    verdicts = iter([True, False, True, False, False])
    fake_openai.responder = lambda body: grade(next(verdicts))
    judging = judging_for(fake_openai)
    spec = MetricSpec(name="final_response_match_v2", threshold=0.5)
    result = await judge_case(case(), [spec], [AgentOutput(response="20")], judging)
    await judging.aclose()
    metric = result.metric("final_response_match_v2")
    assert metric is not None
    # hand calculation: 2 VALID of 5 samples, not > 5/2 -> INVALID -> 0.0 < 0.5 -> failed
    assert (metric.score, metric.status, result.status) == (0.0, "failed", "failed")
    assert len(fake_openai.completions()) == 5
    assert len(metric.details["samples"]) == 5


async def test_rerun_on_unchanged_outputs_makes_no_calls(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/judge_cache.db"
    spec = MetricSpec(
        name="final_response_match_v2", threshold=0.5, options={"judge_model_options": {"num_samples": 3}}
    )
    outputs = [AgentOutput(response="There are 20.")]
    fake_openai.responder = lambda body: grade(True)

    first = judging_for(fake_openai, store=StoredJudgeCache(JudgeReplies.open(url)))
    before = await judge_case(case(), [spec], outputs, first)
    await first.aclose()
    assert len(fake_openai.completions()) == 3  # one request per sample

    second = judging_for(fake_openai, store=StoredJudgeCache(JudgeReplies.open(url)))
    after = await judge_case(case(), [spec], outputs, second)
    await second.aclose()
    assert len(fake_openai.completions()) == 3  # zero new requests
    assert second.usage.cached == 3
    assert after.metric_results[0].score == before.metric_results[0].score == 1.0

    # A changed answer is a changed prompt: asked again.
    third = judging_for(fake_openai, store=StoredJudgeCache(JudgeReplies.open(url)))
    await judge_case(case(), [spec], [AgentOutput(response="Twenty.")], third)
    await third.aclose()
    assert len(fake_openai.completions()) == 6


async def test_no_cache_flag_asks_again(fake_openai: FakeOpenAI) -> None:
    cache = MemoryJudgeCache()
    fake_openai.responder = lambda body: grade(True)
    spec = MetricSpec(name="answer_correctness", threshold=1.0)
    for _ in range(2):
        judging = judging_for(fake_openai, store=cache, cache=False)
        await judge_case(case(), [spec], [AgentOutput(response="20")], judging)
        await judging.aclose()
    assert len(fake_openai.completions()) == 2


async def test_unreadable_reply_is_a_judge_error_not_a_zero(fake_openai: FakeOpenAI) -> None:
    # asked once and again UNREADABLE_REPLY_RETRIES = 2 times: three unreadable replies in a row
    fake_openai.reply(*[Reply.text("I'd say it's basically right.")] * 3)
    cache = MemoryJudgeCache()
    judging = judging_for(fake_openai, store=cache)
    spec = MetricSpec(name="answer_correctness", threshold=1.0)
    result = await judge_case(case(), [spec], [AgentOutput(response="20")], judging)
    await judging.aclose()
    assert result.status == "error"
    assert result.error is not None and result.error.kind == "judge_error"
    assert "answered something unreadable" in result.error.message
    metric = result.metric("answer_correctness")
    assert metric is not None and metric.score is None and metric.status == "error"
    assert cache.entries == {}  # unreadable replies are not cached
    assert len(fake_openai.completions()) == 3
    assert judging.usage.unreadable == 2


async def test_an_unreadable_reply_is_asked_again(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply.text("Looks right to me."), grade(True, "20 = 20"))
    cache = MemoryJudgeCache()
    judging = judging_for(fake_openai, store=cache)
    spec = MetricSpec(name="answer_correctness", threshold=1.0)
    result = await judge_case(case(), [spec], [AgentOutput(response="20")], judging)
    await judging.aclose()
    assert result.status == "passed"
    assert len(fake_openai.completions()) == 2
    assert "1 unreadable replies asked again" in judging.usage.describe()
    assert len(cache.entries) == 1  # the readable reply is the one stored


async def test_server_errors_after_retries_are_judge_errors(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(503, 3, retry_after_ms="10")
    judging = judging_for(fake_openai, max_retries=2)
    spec = MetricSpec(name="answer_correctness", threshold=1.0)
    result = await judge_case(case(), [spec], [AgentOutput(response="20")], judging)
    await judging.aclose()
    assert result.error is not None and result.error.kind == "judge_error"
    assert "HTTP 503" in result.error.message
    assert "sk-secret" not in result.model_dump_json()


async def test_rubric_judge_on_tool_use(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(
        Reply.json(
            {
                "rubrics": [
                    {"id": "r1", "reasoning": "looked up tracks", "verdict": "yes"},
                    {"id": "r2", "reasoning": "no album lookup", "verdict": "no"},
                ]
            }
        )
    )
    spec = MetricSpec(
        name="rubric_based_tool_use_quality_v1",
        threshold=0.5,
        options={"rubrics": ["Calls lookup_track.", "Calls lookup_album."], "judge_model_options": {"num_samples": 1}},
    )
    judging = judging_for(fake_openai)
    output = AgentOutput(response="20", tool_calls=[{"name": "lookup_track", "args": {"artist": "James Brown"}}])
    result = await judge_case(case(), [spec], [output], judging)
    await judging.aclose()
    metric = result.metric("rubric_based_tool_use_quality_v1")
    assert metric is not None
    # hand calculation: r1 yes, r2 no -> 1/2 = 0.5 >= 0.5 -> passed
    assert (metric.score, metric.status) == (0.5, "passed")
    user = json.dumps(fake_openai.completions()[0].body)
    assert 'lookup_track(artist=\\"James Brown\\")' in user


async def test_correctness_without_reference_is_not_applicable(fake_openai: FakeOpenAI) -> None:
    judging = judging_for(fake_openai)
    bare = EvalCase(case_id="c", turns=[Invocation(query="hi")])
    result = await judge_case(
        bare,
        [MetricSpec(name="answer_correctness", threshold=1.0)],
        [AgentOutput(response="x")],
        judging,
    )
    assert result.metric_results[0].status == "not_applicable"
    assert result.status == "failed"  # no gating metric applied: never a silent pass
    assert fake_openai.completions() == []


async def test_two_turns_mean(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: grade("Twenty" in body["messages"][1]["content"])
    two = EvalCase(
        case_id="two",
        turns=[Invocation(query="a", expected_response="20"), Invocation(query="b", expected_response="20")],
    )
    judging = judging_for(fake_openai)
    result = await judge_case(
        two,
        [MetricSpec(name="answer_correctness", threshold=0.75)],
        [AgentOutput(response="Twenty"), AgentOutput(response="Nineteen")],
        judging,
    )
    await judging.aclose()
    metric = result.metric("answer_correctness")
    assert metric is not None
    # hand calculation: turn 0 VALID = 1, turn 1 INVALID = 0 -> (1 + 0)/2 = 0.5 < 0.75
    assert metric.score == 0.5
    assert metric.explanation == "mean over 2 judged turn(s) of 2: (1.000 + 0.000)/2 = 0.500; 0.500 not >= 0.75"


def test_no_model_anywhere_is_not_configured() -> None:
    judging = Judging(JudgeConfig(), environ={})
    with pytest.raises(InfrastructureError, match="final_response_match_v2 need a judge model"):
        judging.resolve_all([MetricSpec(name="final_response_match_v2", threshold=0.8)])


async def test_probe_of_an_unreachable_judge_names_the_metrics() -> None:
    judging = Judging(JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1"), environ={})
    judges = judging.resolve_all([MetricSpec(name="safety_v1", threshold=1.0)])
    with pytest.raises(InfrastructureError, match=r"criteria safety_v1 need a judge.*\$OPENAI_API_KEY is not set"):
        await judging.probe(judges)
    await judging.aclose()


async def test_probe_warns_about_models_the_server_does_not_list(fake_openai: FakeOpenAI) -> None:
    judging = Judging(JudgeConfig(model="gpt-9", base_url=fake_openai.base_url), environ={})
    warnings = await judging.probe(judging.resolve_all([MetricSpec(name="safety_v1", threshold=1.0)]))
    assert warnings == [
        f"judge model 'gpt-9' is not among the models {fake_openai.base_url} lists (judge-model, agent-model)"
    ]
    await judging.aclose()


def test_judged_specs_are_distinct() -> None:
    a = MetricSpec(name="safety_v1", threshold=1.0)
    b = MetricSpec(name="response_exact", threshold=1.0)
    assert judged_specs([[a, b], [a]]) == [a]


def test_per_criterion_model_wins_over_the_run_default() -> None:
    judging = Judging(JudgeConfig(model="run-default"), environ={})
    spec = MetricSpec(name="safety_v1", threshold=1.0, options={"judge_model_options": {"judge_model": "special"}})
    resolved = judging.resolve(spec)
    assert resolved is not None and resolved.model == "special"
