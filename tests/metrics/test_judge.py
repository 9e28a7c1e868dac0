"""Judge metrics, the pure part (`evalward.metrics.judge`): specs, prompts, reply parsing, folding samples."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalward.metrics.judge.fold import fold_samples
from evalward.metrics.judge.hallucinations import (
    ResponseStep,
    fold_grounding,
    hallucination_steps,
    parse_grounding,
    parse_segments,
)
from evalward.metrics.judge.prompts import (
    CORRECTNESS_SYSTEM,
    JudgeInput,
    applies,
    build_prompt,
    conversation_prompt,
    judge_input,
    prompt_identity,
)
from evalward.metrics.judge.replies import JudgeReplyError, JudgeVerdict, normalise, parse_reply, reply_object
from evalward.metrics.judge.spec import JudgeSpec, Scale, check_judge_options, judge_spec
from evalward.model import AgentOutput, IntermediateResponse, Invocation, MetricSpec, ToolCall


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


def test_hallucinations_count_not_applicable_as_grounded_as_adk_does() -> None:
    reply = {
        "sentences": [
            {"sentence": "We have 20 songs.", "label": "supported", "rationale": ""},
            {"sentence": "They are all on sale.", "label": "unsupported", "rationale": "no price data"},
            {"sentence": "Anything else?", "label": "not_applicable", "rationale": ""},
        ]
    }
    verdict = parse_reply(spec("hallucinations_v1"), json.dumps(reply))
    # hand calculation: supported + not_applicable = 2 grounded of 3 sentences -> 2/3
    assert verdict.value == pytest.approx(2 / 3)
    assert verdict.label == "2/3 grounded"
    assert "unsupported: They are all on sale. (no price data)" in verdict.reasoning


def test_grounding_labels_are_matched_by_index_and_normalised() -> None:
    sentences = ["A is 1.", "B is 2.", "Hello!"]
    reply = {
        "sentences": [
            {"index": 3, "sentence": "Hello!", "label": "Not Applicable", "rationale": ""},
            {"index": 1, "sentence": "A is 1", "label": "`supported`", "rationale": "", "supporting_excerpt": "A=1"},
            {"index": 2, "sentence": "B is 2.", "label": "contradictory", "rationale": "B is 3"},
        ]
    }
    verdict = parse_grounding(json.dumps(reply), sentences)
    # the segmented sentences are kept, in their order, whatever the judge echoed
    assert verdict.items == (("A is 1.", "supported"), ("B is 2.", "contradictory"), ("Hello!", "not_applicable"))
    assert verdict.value == pytest.approx(2 / 3)
    assert verdict.notes[0]["supporting_excerpt"] == "A=1"


def test_grounding_reply_that_drops_a_sentence_is_unreadable() -> None:
    reply = {"sentences": [{"sentence": "A", "label": "supported", "rationale": ""}]}
    with pytest.raises(JudgeReplyError, match="labelled 1 sentences, the response has 2"):
        parse_grounding(json.dumps(reply), ["A", "B"])
    with pytest.raises(JudgeReplyError, match="label must be one of"):
        parse_grounding('{"sentences": [{"sentence": "A", "label": "true"}]}', ["A"])


def test_segments_from_json_or_sentence_tags() -> None:
    assert parse_segments('{"sentences": ["One.", " ", {"sentence": "Two."}]}') == ("One.", "Two.")
    assert parse_segments("<sentence>One.</sentence>\n<sentence>Two.</sentence>") == ("One.", "Two.")
    with pytest.raises(JudgeReplyError):
        parse_segments("One. Two.")


def test_hallucination_steps_and_their_contexts() -> None:
    expected = Invocation(
        inputs={"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Songs?"}]}
    )
    actual = AgentOutput(
        response="We have 20.",
        tool_calls=[
            ToolCall(name="plan", args={}, result="ok"),
            ToolCall(name="count", args={"artist": "JB"}, result={"n": 20}),
        ],
        intermediate_responses=[
            IntermediateResponse(author="helper", text="Counting now.", calls_before=1),
            IntermediateResponse(author="helper", text="Found 20."),
        ],
    )
    assert [s.kind for s in hallucination_steps(spec("hallucinations_v1"), expected, actual)] == ["final"]
    steps = hallucination_steps(spec("hallucinations_v1", evaluate_intermediate_nl_responses=True), expected, actual)
    assert [(s.kind, s.text, s.position_known) for s in steps] == [
        ("intermediate", "Counting now.", True),
        ("intermediate", "Found 20.", False),
        ("final", "We have 20.", True),
    ]
    # the first intermediate response saw only the call before it
    assert steps[0].context == (
        "INSTRUCTIONS:\nBe brief.\n\nUSER QUERY:\nSongs?\n\n"
        "WHAT THE AGENT DID BEFORE THIS RESPONSE, IN ORDER:\n1. called plan()\n   output: ok"
    )
    # the final response sees everything, in order: call, response, call, response without a position
    assert steps[2].context.endswith(
        "1. called plan()\n   output: ok\n2. said (helper): Counting now.\n"
        '3. called count(artist="JB")\n   output: {"n": 20}\n4. said (helper): Found 20.'
    )
    assert hallucination_steps(spec("hallucinations_v1"), expected, AgentOutput(response="  ")) == []


def test_grounding_folds_samples_by_mean_or_per_sentence_majority() -> None:
    step = ResponseStep("final", "A. B.", "ctx")

    def sample(*labels: str) -> JudgeVerdict:
        body = {"sentences": [{"sentence": s, "label": label} for s, label in zip("AB", labels, strict=True)]}
        return parse_grounding(json.dumps(body), ["A", "B"])

    samples = [
        sample("supported", "unsupported"),
        sample("supported", "supported"),
        sample("unsupported", "unsupported"),
    ]
    mean = fold_grounding(spec("hallucinations_v1", num_samples=3), step, samples)
    # hand calculation: (1/2 + 2/2 + 0/2)/3 = 0.5
    assert mean.value == pytest.approx(0.5)
    assert mean.explanation.startswith("final response: mean of 3 samples (1/2, 2/2, 0/2) = 0.500")
    majority = fold_grounding(spec("hallucinations_v1", num_samples=3, aggregate="majority"), step, samples)
    # hand calculation: A grounded in 2/3 samples (> 3/2), B in 1/3 -> 1 of 2 sentences = 0.5
    assert majority.sentences == (("A", "supported", 2), ("B", "unsupported", 1))
    assert majority.value == 0.5


def test_hallucinations_default_to_one_sample() -> None:
    assert spec("hallucinations_v1").num_samples == 1
    assert spec("hallucinations_v1", judge_model_options={"num_samples": 3}).num_samples == 3
    with pytest.raises(ValueError, match="not judged with one prompt per turn"):
        build_prompt(spec("hallucinations_v1"), JudgeInput(question="q", answer="a"))


def test_multi_turn_trajectory_rubrics_are_judged_over_the_conversation() -> None:
    judged = spec("rubric_based_multi_turn_trajectory_quality_v1", rubrics=["Confirms before booking."])
    assert (judged.kind, judged.num_samples) == ("rubric", 5)
    assert check_judge_options(MetricSpec(name=judged.metric, threshold=0.5, options={"rubrics": ["x"]})) == []
    turns = [
        (Invocation(query="Book SFO-LIS"), AgentOutput(response="Shall I book flight 12?")),
        (
            Invocation(query="Yes"),
            AgentOutput(response="Booked.", tool_calls=[ToolCall(name="book", args={"flight": 12}, result="ok")]),
        ),
    ]
    prompt = conversation_prompt(judged, turns)
    assert prompt.messages[1]["content"] == (
        "CONVERSATION:\nTURN 1\nUSER: Book SFO-LIS\nAGENT answered: Shall I book flight 12?\n\n"
        "TURN 2\nUSER: Yes\nAGENT called book(flight=12)\n   output: ok\nAGENT answered: Booked.\n\n"
        "RUBRICS:\n- [r1] Confirms before booking."
    )
    assert prompt_identity(judged) != prompt_identity(spec("rubric_based_tool_use_quality_v1", rubrics=["x"]))


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
