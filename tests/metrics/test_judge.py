"""Judge metrics, the pure part (`evalward.metrics.judge`): specs, prompts, reply parsing, folding samples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.metrics.judge import (
    CORRECTNESS_SYSTEM,
    JudgeInput,
    JudgeReplyError,
    JudgeSpec,
    JudgeVerdict,
    Scale,
    applies,
    build_prompt,
    check_judge_options,
    fold_samples,
    judge_input,
    judge_spec,
    normalise,
    parse_reply,
    prompt_identity,
    reply_object,
)
from evalward.model import AgentOutput, Invocation, MetricSpec, ToolCall


def spec(name: str, **options: Any) -> JudgeSpec:
    return judge_spec(MetricSpec(name=name, threshold=0.5, options=options))


def verdicts(*values: float) -> list[JudgeVerdict]:
    return [JudgeVerdict(v, "VALID" if v == 1.0 else "INVALID", f"reason {i}") for i, v in enumerate(values)]


# --- specs -----------------------------------------------------------------------------------------------------


def test_adk_names_default_to_five_samples_and_majority() -> None:
    judged = spec("final_response_match_v2", judge_model_options={"judge_model": "gpt-4o-mini"})
    assert (judged.kind, judged.model, judged.num_samples, judged.aggregate) == (
        "correctness",
        "gpt-4o-mini",
        5,
        "majority",
    )


def test_native_correctness_defaults_to_one_sample_and_the_run_model() -> None:
    judged = spec("answer_correctness")
    assert (judged.model, judged.num_samples) == (None, 1)


def test_adk_rubrics_are_read_from_rubric_content() -> None:
    judged = spec(
        "rubric_based_final_response_quality_v1",
        rubrics=[
            {"rubric_id": "polite", "rubric_content": {"text_property": "The response is polite."}},
            "The response names the album.",
        ],
    )
    assert [(r.rubric_id, r.text) for r in judged.rubrics] == [
        ("polite", "The response is polite."),
        ("r2", "The response names the album."),
    ]


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("rubric_based_tool_use_quality_v1", {}, "need 'rubrics'"),
        ("llm_judge", {}, "needs a 'rubric'"),
        ("llm_judge", {"rubric": "x", "scale": [5, 1]}, "lo < hi"),
        ("answer_correctness", {"num_samples": 0}, "num_samples must be an integer >= 1"),
        ("answer_correctness", {"aggregate": "median"}, "aggregate must be"),
        ("answer_correctness", {"colour": "red"}, "unknown option 'colour'"),
        ("multi_turn_task_success_v1", {}, "no judge for this metric"),
    ],
)
def test_bad_options_are_reported(name: str, options: dict[str, Any], message: str) -> None:
    problems = check_judge_options(MetricSpec(name=name, threshold=0.5, options=options))
    assert any(message in p for p in problems), problems


def test_threshold_outside_unit_interval_is_a_problem() -> None:
    assert check_judge_options(MetricSpec(name="safety_v1", threshold=2.0)) == [
        "safety_v1: threshold must be between 0 and 1, found 2"
    ]


# --- prompts ---------------------------------------------------------------------------------------------------


def test_correctness_prompt_is_the_tutorial_grader() -> None:
    item = JudgeInput(question="How many songs by James Brown?", answer="20 songs", reference="We have 20 songs")
    prompt = build_prompt(spec("answer_correctness"), item)
    assert prompt.messages[0] == {"role": "system", "content": CORRECTNESS_SYSTEM}
    assert prompt.messages[1]["content"] == (
        "QUESTION: How many songs by James Brown?\nGROUND TRUTH RESPONSE: We have 20 songs\nSTUDENT RESPONSE: 20 songs"
    )
    assert prompt.schema["required"] == ["reasoning", "is_correct"]
    assert prompt.schema["additionalProperties"] is False


def test_tool_use_rubric_prompt_shows_calls_with_results() -> None:
    judged = spec("rubric_based_tool_use_quality_v1", rubrics=["Looks the track up first."])
    item = JudgeInput(
        question="q",
        answer="a",
        tool_calls=(ToolCall(name="lookup_track", args={"artist": "James Brown"}, result=[{"n": 20}]),),
    )
    user = build_prompt(judged, item).messages[1]["content"]
    assert user == (
        'USER QUERY: q\nTOOL CALLS:\n1. lookup_track(artist="James Brown") -> [{"n": 20}]\n\n'
        "RUBRICS:\n- [r1] Looks the track up first."
    )


def test_scale_prompt_names_the_range() -> None:
    judged = spec("llm_judge", rubric="Helpful and concise.", scale=[1, 5], include_reference=True)
    prompt = build_prompt(judged, JudgeInput(question="q", answer="a", reference="r"))
    assert '"score": <a number from 1 to 5>' in prompt.messages[0]["content"]
    assert prompt.messages[1]["content"] == "QUESTION: q\nREFERENCE RESPONSE: r\nRESPONSE: a"


def test_judge_input_reads_question_from_messages_when_no_query() -> None:
    expected = Invocation(inputs={"messages": [{"role": "user", "content": "refund please"}]}, expected_response="ok")
    item = judge_input(expected, AgentOutput(response="done"))
    assert (item.question, item.answer, item.reference) == ("refund please", "done", "ok")


def test_correctness_without_reference_is_not_applicable() -> None:
    assert not applies(spec("answer_correctness"), JudgeInput(question="q", answer="a"))
    assert applies(spec("safety_v1"), JudgeInput(question="q", answer="a"))


def test_identity_changes_with_rubrics_and_samples_but_not_with_model() -> None:
    base = prompt_identity(spec("rubric_based_final_response_quality_v1", rubrics=["a"]))
    assert base != prompt_identity(spec("rubric_based_final_response_quality_v1", rubrics=["b"]))
    assert base != prompt_identity(spec("rubric_based_final_response_quality_v1", rubrics=["a"], num_samples=3))
    assert base == prompt_identity(spec("rubric_based_final_response_quality_v1", rubrics=["a"], judge_model="m"))


# --- replies ---------------------------------------------------------------------------------------------------


def test_reply_object_accepts_fences_and_prose() -> None:
    assert reply_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert reply_object('Sure! {"a": 2} Hope that helps.') == {"a": 2}
    with pytest.raises(JudgeReplyError, match="not a JSON object"):
        reply_object("I think it is correct.")


def test_correctness_reply_keeps_reasoning() -> None:
    verdict = parse_reply(spec("answer_correctness"), json.dumps({"reasoning": "20 = 20", "is_correct": True}))
    assert (verdict.value, verdict.label, verdict.reasoning) == (1.0, "VALID", "20 = 20")


def test_correctness_reply_without_verdict_is_an_error() -> None:
    with pytest.raises(JudgeReplyError, match="'is_correct' to be true or false"):
        parse_reply(spec("answer_correctness"), '{"reasoning": "hm"}')


def test_rubric_reply_is_the_share_of_yes() -> None:
    judged = spec("rubric_based_final_response_quality_v1", rubrics=["a", "b", "c"])
    reply = {
        "rubrics": [{"id": f"r{i}", "reasoning": "", "verdict": v} for i, v in ((1, "yes"), (2, "no"), (3, "yes"))]
    }
    verdict = parse_reply(judged, json.dumps(reply))
    # hand calculation: 2 yes of 3 rubrics -> 2/3
    assert verdict.value == pytest.approx(2 / 3)
    assert verdict.items == (("r1", "yes"), ("r2", "no"), ("r3", "yes"))


def test_rubric_reply_missing_a_rubric_is_an_error() -> None:
    judged = spec("rubric_based_final_response_quality_v1", rubrics=["a", "b"])
    with pytest.raises(JudgeReplyError, match="no verdict for rubric"):
        parse_reply(judged, '{"rubrics": [{"id": "r1", "reasoning": "", "verdict": "yes"}]}')


def test_hallucinations_ignore_not_applicable_sentences() -> None:
    reply = {
        "sentences": [
            {"sentence": "We have 20 songs.", "label": "supported", "reasoning": ""},
            {"sentence": "They are all on sale.", "label": "unsupported", "reasoning": "no price data"},
            {"sentence": "Anything else?", "label": "not_applicable", "reasoning": ""},
        ]
    }
    verdict = parse_reply(spec("hallucinations_v1"), json.dumps(reply))
    # hand calculation: 1 supported of 3 - 1 not applicable = 2 counted -> 1/2
    assert verdict.value == 0.5
    assert "unsupported: They are all on sale. (no price data)" in verdict.reasoning


def test_scale_range_is_normalised_and_bounded() -> None:
    judged = spec("llm_judge", rubric="x", scale=[1, 5])
    # hand calculation: (4 - 1)/(5 - 1) = 0.75
    assert parse_reply(judged, '{"reasoning": "", "score": 4}').value == 0.75
    assert normalise(3, 1, 5) == 0.5
    with pytest.raises(JudgeReplyError, match="outside the scale"):
        parse_reply(judged, '{"reasoning": "", "score": 7}')


def test_scale_choices_run_from_worst_to_best() -> None:
    judged = spec("llm_judge", rubric="x", scale=["poor", "fair", "good"])
    # hand calculation: "fair" is index 1 of 3 -> 1/2
    assert parse_reply(judged, '{"reasoning": "", "choice": "fair"}').value == 0.5
    assert judged.scale == Scale("choices", choices=("poor", "fair", "good"))


# --- folding ---------------------------------------------------------------------------------------------------


def test_majority_of_five() -> None:
    folded = fold_samples(spec("final_response_match_v2"), verdicts(1, 1, 0, 1, 0))
    # hand calculation: 3 valid of 5 > 5/2 -> 1.0
    assert folded.value == 1.0
    assert folded.explanation == "majority of 5 samples (VALID, VALID, INVALID, VALID, INVALID): 3/5 > 1/2 -> 1.0"
    assert folded.reasoning == "reason 0"


def test_majority_tie_is_invalid() -> None:
    folded = fold_samples(spec("answer_correctness", num_samples=4), verdicts(1, 0, 1, 0))
    # hand calculation: 2 of 4 is not > 2 -> 0.0 (ADK: tie -> invalid)
    assert folded.value == 0.0
    assert folded.explanation.endswith("2/4 not > 1/2 (tie -> 0) -> 0.0")


def test_mean_of_samples() -> None:
    folded = fold_samples(spec("answer_correctness", num_samples=3, aggregate="mean"), verdicts(1, 0, 1))
    # hand calculation: (1 + 0 + 1)/3 = 0.667
    assert folded.value == pytest.approx(2 / 3)
    assert folded.explanation.endswith("(1.000 + 0.000 + 1.000)/3 = 0.667")


def test_rubric_majority_is_per_rubric() -> None:
    judged = spec("rubric_based_final_response_quality_v1", rubrics=["a", "b"], num_samples=3)
    samples = [
        JudgeVerdict(1.0, "", "", (("r1", "yes"), ("r2", "yes"))),
        JudgeVerdict(0.5, "", "", (("r1", "yes"), ("r2", "no"))),
        JudgeVerdict(0.0, "", "", (("r1", "no"), ("r2", "no"))),
    ]
    folded = fold_samples(judged, samples)
    # hand calculation: r1 yes 2/3 > 1/2 (met), r2 yes 1/3 (not met) -> 1/2 = 0.5
    assert folded.value == 0.5
    assert "r1 2/3 yes, r2 1/3 no; 1/2 = 0.500" in folded.explanation


def test_scale_majority_ties_break_low() -> None:
    judged = spec("llm_judge", rubric="x", scale=[0, 10], aggregate="majority")
    samples = [
        JudgeVerdict(0.8, "8", ""),
        JudgeVerdict(0.6, "6", ""),
        JudgeVerdict(0.8, "8", ""),
        JudgeVerdict(0.6, "6", ""),
    ]
    # hand calculation: 0.8 and 0.6 both twice -> the lower, 0.6
    assert fold_samples(judged, samples).value == 0.6
