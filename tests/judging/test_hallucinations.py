"""`hallucinations_v1` (segment, then label every sentence against its context) and
`rubric_based_multi_turn_trajectory_quality_v1` (one judgement of the whole conversation), judged over real
HTTP by the fake OpenAI server through the real `openai` client.

The fake judge below reads the requests it gets: it segments on sentence punctuation, and labels a sentence
`supported` only when every number in it appears in the CONTEXT it was sent — so a score also proves what
context the judge saw.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.judging.scored import judge_case
from tests.judging.test_run_judged import evalward

from evalward.judging.cache import MemoryJudgeCache, StoredJudgeCache
from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_case import Judging
from evalward.metrics.judge.prompts import GROUNDING_SYSTEM, RUBRIC_CONVERSATION_SYSTEM, SEGMENT_SYSTEM
from evalward.model import (
    AgentOutput,
    CaseResult,
    EvalCase,
    IntermediateResponse,
    Invocation,
    MetricResult,
    MetricSpec,
    ToolCall,
)
from evalward.store.judge_replies import JudgeReplies

QUESTION = "How many James Brown songs do you have, and what do they cost?"
COUNT = ToolCall(name="count_tracks", args={"artist": "James Brown"}, result={"count": 20, "cheapest": "$0.99"})
ANSWER = "We have 20 songs by James Brown. The cheapest costs $0.99. All of them are on sale for $0.50."
_NUMBER = re.compile(r"\$?\d+(?:\.\d+)?")


def segment(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+", text) if s.strip()]


def labels_for(user: str) -> list[dict[str, Any]]:
    context, listed = user.split("\n\nSENTENCES:\n")
    entries = []
    for line in listed.splitlines():
        number, quoted = line.split(". ", 1)
        sentence = json.loads(quoted)
        numbers = _NUMBER.findall(sentence)
        if sentence.endswith("?"):
            label = "not_applicable"
        elif numbers and all(n in context for n in numbers):
            label = "supported"
        else:
            label = "unsupported"
        entries.append(
            {
                "index": int(number),
                "sentence": sentence,
                "label": label,
                "rationale": f"numbers {numbers} checked against the context",
                "supporting_excerpt": None,
                "contradicting_excerpt": None,
            }
        )
    return entries


def judge(body: dict[str, Any]) -> Reply:
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if system == SEGMENT_SYSTEM:
        return Reply.json({"sentences": segment(user.removeprefix("RESPONSE:\n"))})
    assert system == GROUNDING_SYSTEM, system
    return Reply.json({"sentences": labels_for(user)})


def judging_for(fake: FakeOpenAI, store: Any = None) -> Judging:
    return Judging(JudgeConfig(model="judge-model", base_url=fake.base_url), cache=store, environ={})


def one_turn(output: AgentOutput, spec: MetricSpec) -> tuple[EvalCase, list[AgentOutput], list[MetricSpec]]:
    return EvalCase(case_id="jb", turns=[Invocation(query=QUESTION)]), [output], [spec]


async def judged(
    judging: Judging, case: EvalCase, outputs: list[AgentOutput], specs: list[MetricSpec]
) -> tuple[CaseResult, MetricResult]:
    result = await judge_case(case, specs, outputs, judging)
    await judging.aclose()
    metric = result.metric(specs[0].name)
    assert metric is not None
    return result, metric


HALLUCINATIONS = MetricSpec(name="hallucinations_v1", threshold=0.7)


async def test_two_of_three_sentences_supported(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = judge
    output = AgentOutput(response=ANSWER, tool_calls=[COUNT])
    result, metric = await judged(judging_for(fake_openai), *one_turn(output, HALLUCINATIONS))

    # hand calculation: "20" and "$0.99" are in the tool output, "$0.50" is not -> 2 grounded of 3 = 0.667 < 0.7
    assert metric.score == pytest.approx(2 / 3)
    assert (metric.status, result.status) == ("failed", "failed")
    assert metric.explanation == (
        'final response: 2/3 grounded = 0.667: [supported] "We have 20 songs by James Brown." | '
        '[supported] "The cheapest costs $0.99." | [unsupported] "All of them are on sale for $0.50."; '
        "0.667 not >= 0.7"
    )
    # one segmentation and one labelling request
    requests = [r.body for r in fake_openai.completions()]
    assert [b["response_format"]["json_schema"]["name"] for b in requests if b] == [
        "sentence_segments",
        "sentence_labels",
    ]
    labelling = requests[1]
    assert labelling is not None
    assert labelling["messages"][1]["content"] == (
        f"CONTEXT:\nUSER QUERY:\n{QUESTION}\n\nWHAT THE AGENT DID BEFORE THIS RESPONSE, IN ORDER:\n"
        '1. called count_tracks(artist="James Brown")\n   output: {"cheapest": "$0.99", "count": 20}\n\n'
        'SENTENCES:\n1. "We have 20 songs by James Brown."\n2. "The cheapest costs $0.99."\n'
        '3. "All of them are on sale for $0.50."'
    )
    [response] = metric.details["responses"]
    assert [(s["sentence"], s["label"]) for s in response["sentences"]][2] == (
        "All of them are on sale for $0.50.",
        "unsupported",
    )
    assert response["samples"][0]["sentences"][2]["rationale"] == "numbers ['$0.50'] checked against the context"
    assert metric.details["judge_calls"] == 2
    # the per-turn result is the same
    assert result.invocations[0].metric_results == [metric]


async def test_questions_count_as_grounded(fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = judge
    output = AgentOutput(response="We have 20 songs. They cost $5. Anything else?", tool_calls=[COUNT])
    _, metric = await judged(judging_for(fake_openai), *one_turn(output, HALLUCINATIONS))
    # hand calculation: supported + not_applicable = 2 of 3 (ADK counts not_applicable as grounded) = 0.667
    assert metric.score == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("calls_before", "expected"),
    [
        # before the call, "20" is nowhere in the context: intermediate 0/2; final 1/1 -> (0 + 1)/2 = 0.5
        (0, 0.5),
        # after the call: "I found 20 tracks." supported, "1970" not -> 1/2; final 1/1 -> (0.5 + 1)/2 = 0.75
        (1, 0.75),
    ],
)
async def test_intermediate_responses_are_checked_only_when_asked(
    fake_openai: FakeOpenAI, calls_before: int, expected: float
) -> None:
    fake_openai.responder = judge
    output = AgentOutput(
        response="We have 20 songs.",
        tool_calls=[COUNT],
        intermediate_responses=[
            IntermediateResponse(
                author="counter", text="I found 20 tracks. They came out in 1970.", calls_before=calls_before
            )
        ],
    )
    _, off = await judged(judging_for(fake_openai), *one_turn(output, HALLUCINATIONS))
    assert off.score == 1.0  # final response only: 1/1
    assert len(fake_openai.completions()) == 2

    switched = MetricSpec(name="hallucinations_v1", threshold=0.7, options={"evaluate_intermediate_nl_responses": True})
    _, on = await judged(judging_for(fake_openai), *one_turn(output, switched))
    assert on.score == pytest.approx(expected)
    assert len(fake_openai.completions()) == 2 + 4  # two responses, two requests each
    assert on.explanation.startswith("intermediate response by counter: ")
    assert f"turn = mean over 2 checked response(s): ({expected * 2 - 1:.3f} + 1.000)/2 = {expected:.3f}" in (
        on.explanation
    )
    assert [r["kind"] for r in on.details["responses"]] == ["intermediate", "final"]


async def test_server_without_structured_output_and_fenced_replies(fake_openai: FakeOpenAI) -> None:
    fake_openai.reject_json_schema = True
    fake_openai.responder = lambda body: Reply.text(f"Here you go:\n```json\n{judge(body).content}\n```")
    output = AgentOutput(response=ANSWER, tool_calls=[COUNT])
    _, metric = await judged(judging_for(fake_openai), *one_turn(output, HALLUCINATIONS))
    assert metric.score == pytest.approx(2 / 3)
    bodies = [r.body for r in fake_openai.completions() if r.body]
    # the first request is refused (400), then both go out as json_object
    assert [r.status for r in fake_openai.completions()] == [400, 200, 200]
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_object", "json_object"]


async def test_unreadable_replies_are_asked_again(fake_openai: FakeOpenAI) -> None:
    output = AgentOutput(response=ANSWER, tool_calls=[COUNT])
    segmentation = judge({"messages": [{"content": SEGMENT_SYSTEM}, {"content": f"RESPONSE:\n{ANSWER}"}]})
    fake_openai.reply(Reply.text("Sentences: one, two, three."), segmentation)
    dropped: list[bool] = []

    def labelling(body: dict[str, Any]) -> Reply:
        entries = labels_for(body["messages"][1]["content"])
        if not dropped:  # the first labelling reply leaves the unsupported sentence out
            dropped.append(True)
            return Reply.json({"sentences": entries[:2]})
        return Reply.json({"sentences": entries})

    fake_openai.responder = labelling
    cache = MemoryJudgeCache()
    judging = judging_for(fake_openai, cache)
    _, metric = await judged(judging, *one_turn(output, HALLUCINATIONS))
    assert metric.score == pytest.approx(2 / 3)  # the dropped sentence did not raise it to 2/2
    assert len(fake_openai.completions()) == 4
    assert judging.usage.unreadable == 2
    assert len(cache.entries) == 2  # only the readable replies are kept


async def test_a_judge_that_keeps_dropping_sentences_is_a_judge_error(fake_openai: FakeOpenAI) -> None:
    def careless(body: dict[str, Any]) -> Reply:
        reply = judge(body)
        if body["messages"][0]["content"] == GROUNDING_SYSTEM:
            return Reply.json({"sentences": labels_for(body["messages"][1]["content"])[:2]})
        return reply

    fake_openai.responder = careless
    output = AgentOutput(response=ANSWER, tool_calls=[COUNT])
    result, metric = await judged(judging_for(fake_openai), *one_turn(output, HALLUCINATIONS))
    assert (metric.status, metric.score, result.status) == ("error", None, "error")
    assert result.error is not None and result.error.kind == "judge_error"
    assert "the judge labelled 2 of 3 sentences; no label for 3" in result.error.message
    assert len(fake_openai.completions()) == 1 + 3  # segmentation + the labelling asked three times


async def test_rerun_is_served_from_the_cache(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.responder = judge
    url = f"sqlite:///{tmp_path}/judge_cache.db"
    output = AgentOutput(response=ANSWER, tool_calls=[COUNT])
    first = judging_for(fake_openai, StoredJudgeCache(JudgeReplies.open(url)))
    _, before = await judged(first, *one_turn(output, HALLUCINATIONS))
    assert len(fake_openai.completions()) == 2

    second = judging_for(fake_openai, StoredJudgeCache(JudgeReplies.open(url)))
    _, after = await judged(second, *one_turn(output, HALLUCINATIONS))
    assert len(fake_openai.completions()) == 2  # no new request
    assert (second.usage.cached, second.usage.requests) == (2, 0)
    assert after.score == before.score == pytest.approx(2 / 3)
    assert after.details["cached_samples"] == 2


async def test_a_response_without_sentences_is_not_scored(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(Reply.json({"sentences": []}))
    _, metric = await judged(judging_for(fake_openai), *one_turn(AgentOutput(response="👍"), HALLUCINATIONS))
    assert (metric.status, metric.score) == ("not_applicable", None)
    assert "final response: no sentence to check" in metric.explanation
    assert len(fake_openai.completions()) == 1


# --- rubric_based_multi_turn_trajectory_quality_v1 ------------------------------------------------------------


async def test_multi_turn_rubrics_judge_the_whole_conversation_once(fake_openai: FakeOpenAI) -> None:
    r1 = iter(["yes", "yes", "no", "yes"])
    r2 = iter(["yes", "no", "no", "yes"])

    def rubric_judge(body: dict[str, Any]) -> Reply:
        assert body["messages"][0]["content"] == RUBRIC_CONVERSATION_SYSTEM
        return Reply.json(
            {
                "rubrics": [
                    {"id": "confirms", "reasoning": "turn 1 asks first", "verdict": next(r1)},
                    {"id": "right_flight", "reasoning": "turn 2 books flight 12", "verdict": next(r2)},
                ]
            }
        )

    fake_openai.responder = rubric_judge
    spec = MetricSpec(
        name="rubric_based_multi_turn_trajectory_quality_v1",
        threshold=0.5,
        options={
            "judge_model_options": {"num_samples": 4},
            "rubrics": [
                {"rubric_id": "confirms", "rubric_content": {"text_property": "Confirms before booking."}},
                {"rubric_id": "right_flight", "rubric_content": {"text_property": "Books the flight the user chose."}},
            ],
        },
    )
    case = EvalCase(case_id="trip", turns=[Invocation(query="Book SFO to LIS"), Invocation(query="Yes, flight 12")])
    outputs = [
        AgentOutput(response="Flights 12 and 14 are free. Which one?"),
        AgentOutput(response="Booked flight 12.", tool_calls=[ToolCall(name="book", args={"flight": 12}, result="ok")]),
    ]
    result, metric = await judged(judging_for(fake_openai), case, outputs, [spec])

    # 4 samples of one question about the whole conversation, not one per turn
    assert len(fake_openai.completions()) == 4
    user = fake_openai.completions()[0].body["messages"][1]["content"]  # type: ignore[index]
    assert "TURN 1\nUSER: Book SFO to LIS\nAGENT answered: Flights 12 and 14 are free. Which one?" in user
    assert "TURN 2\nUSER: Yes, flight 12\nAGENT called book(flight=12)\n   output: ok\nAGENT answered: Booked" in user
    # hand calculation: confirms 3/4 yes -> yes; right_flight 2/4 -> tie -> no; 1 of 2 rubrics = 0.5 >= 0.5
    assert (metric.score, metric.status) == (0.5, "passed")
    assert metric.explanation.startswith(
        "whole conversation (2 turn(s)) judged once: rubrics met by majority of 4 sample(s): "
        "confirms 3/4 yes, right_flight 2/4 no; 1/2 = 0.500"
    )
    # the result sits on the last turn only, as ADK scores the conversation there
    assert [[m.name for m in turn.metric_results] for turn in result.invocations] == [[], [spec.name]]


# --- end to end ------------------------------------------------------------------------------------------------

AGENT = """
ANSWERS = {
    "songs": "We have 20 songs by James Brown. The cheapest costs $0.99.",
    "sale": "We have 20 songs. Ask @octocat about <b>prices</b> <!-- hidden -->.",
}


def run(request):
    key = "sale" if "sale" in request["query"] else "songs"
    return {
        "response": ANSWERS[key],
        "tool_calls": [
            {"name": "count_tracks", "args": {"artist": "James Brown"}, "result": {"count": 20, "cheapest": "$0.99"}}
        ],
    }
"""


def adk_case(eval_id: str, query: str) -> dict[str, Any]:
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "invocation_id": f"{eval_id}-1",
                "user_content": {"role": "user", "parts": [{"text": query}]},
                "final_response": {"role": "model", "parts": [{"text": "We have 20 songs."}]},
            }
        ],
    }


def test_evalward_run_with_an_adk_test_config(tmp_path: Path) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "store.evalset.json").write_text(
        json.dumps(
            {
                "eval_set_id": "store",
                "eval_cases": [
                    adk_case("songs", "How many James Brown songs do you have?"),
                    adk_case("sale", "Are James Brown songs on sale?"),
                ],
            }
        )
    )
    (evals / "test_config.json").write_text(
        json.dumps({"criteria": {"hallucinations_v1": {"threshold": 0.6, "evaluate_intermediate_nl_responses": False}}})
    )
    (tmp_path / "agent.py").write_text(AGENT)
    args = [str(evals / "store.evalset.json"), "--agent", f"{tmp_path}/agent.py:run", "--judge-model", "judge-model"]
    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = judge
        first = evalward(
            [*args, "--json", str(tmp_path / "run.json"), "--markdown", str(tmp_path / "comment.md")],
            tmp_path,
            OPENAI_BASE_URL=fake.base_url,
        )
        after_first = len(fake.completions())
        second = evalward(args, tmp_path, OPENAI_BASE_URL=fake.base_url)
        after_second = len(fake.completions())

    assert first.returncode == 1, first.stdout + first.stderr  # the "sale" case fails
    assert after_first == 4  # 2 cases x (segmentation + labelling)
    assert after_second == 4  # the re-run was served from the cache
    assert "judge: 4 replies (4 cached), 0 requests" in second.stdout
    run = json.loads((tmp_path / "run.json").read_text())
    scores = {
        c["case_id"]: next(m for m in c["metric_results"] if m["name"] == "hallucinations_v1") for c in run["cases"]
    }
    # hand calculation: songs 2/2 = 1.0 >= 0.6; sale: "20" supported, the other sentence has no number -> 1/2 < 0.6
    assert (scores["songs"]["score"], scores["songs"]["status"]) == (1.0, "passed")
    assert (scores["sale"]["score"], scores["sale"]["status"]) == (0.5, "failed")
    assert "[unsupported] " in scores["sale"]["explanation"]
    markdown = (tmp_path / "comment.md").read_text()
    # the agent's sentence is quoted in the explanation, escaped for the comment's table cell
    [row] = [line for line in markdown.splitlines() if line.startswith("| hallucinations\\_v1 | FAILED")]
    assert '\\[unsupported\\] "Ask @\u200boctocat about &lt;b&gt;prices&lt;/b&gt; &lt;\\!-- hidden --&gt;."' in row
    assert "<!--" not in markdown
