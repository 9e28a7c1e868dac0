import json
from pathlib import Path

import pytest

from evalward.loaders import load_paths
from evalward.loaders.langsmith import example_case_id, query_from_inputs
from evalward.model import Message, MetricSpec, ToolCall, canonical_hash

from .conftest import LoadText, ProblemsOf


def test_end_to_end_examples_map_response_and_trajectory(fixtures: Path) -> None:
    # Named *.test.json like an ADK file: the content decides the format.
    [eval_set] = load_paths([fixtures / "langsmith/chinook_e2e.test.json"]).sets
    assert (eval_set.format, eval_set.eval_set_id) == ("langsmith", "chinook_e2e")
    first, second, third = eval_set.cases
    assert first.case_id == example_case_id({"question": "How many James Brown songs do you have?"})
    assert second.case_id == "refund-needs-info"
    [turn] = first.turns
    assert turn.query == "How many James Brown songs do you have?"
    assert turn.inputs == {"question": "How many James Brown songs do you have?"}
    assert turn.expected_response == "We have 20 songs by James Brown."
    assert turn.expected_trajectory == ["question_answering_agent", "lookup_track"]
    assert turn.expected_outputs == {}
    assert turn.expected_tool_calls is None
    assert third.turns[0].query == "我要发票 237 的全额退款"
    assert eval_set.criteria.origin == "format_defaults"
    assert eval_set.criteria.metrics == [
        MetricSpec(name="trajectory_subsequence", threshold=1.0),
        MetricSpec(name="response_rouge1", threshold=None),
    ]


def test_router_jsonl_uses_the_last_user_message_and_output_match(fixtures: Path) -> None:
    path = fixtures / "langsmith/router.eval.jsonl"
    [eval_set] = load_paths([path]).sets
    queries = [c.turns[0].query for c in eval_set.cases]
    assert queries == [
        "I recently bought some tracks and I really dislike them",
        "Any Rolling Stones recommendations?",
        "Did Prince release an album in 2000?",
    ]
    assert [c.turns[0].expected_outputs for c in eval_set.cases] == [
        {"route": "refund_agent"},
        {"route": "question_answering_agent"},
        {"route": "question_answering_agent"},
    ]
    assert eval_set.cases[2].turns[0].inputs["messages"][1]["role"] == "assistant"
    # The third record is on line 4: line 3 is blank.
    assert eval_set.cases[2].source is not None
    assert (eval_set.cases[2].source.line, eval_set.cases[2].source.json_path) == (4, "$[2]")
    assert eval_set.criteria.metrics == [MetricSpec(name="output_match", threshold=1.0, options={"key": "route"})]


def test_case_ids_are_stable_hashes_of_the_inputs() -> None:
    inputs = {"question": "q", "lang": "en"}
    # Key order does not change the canonical JSON, so the id survives reordering and re-serialising.
    assert example_case_id(inputs) == example_case_id({"lang": "en", "question": "q"})
    assert example_case_id(inputs) == "ex-" + canonical_hash(inputs)[:12]
    assert len(example_case_id(inputs)) == 15


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"question": "a", "query": "b"}, "a"),
        ({"query": "b", "input": "c"}, "b"),
        ({"input": "c"}, "c"),
        ({"text": "d"}, "d"),
        ({"question": 3, "text": "d"}, "d"),
        ({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}, "x"),
        ({"messages": [{"type": "human", "content": "lc"}]}, "lc"),
        ({"messages": [["human", "tuple"]]}, "tuple"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "p1"}, {"type": "image"}]}]}, "p1"),
        ({"other": 1}, ""),
    ],
)
def test_query_from_inputs(inputs: dict[str, object], expected: str) -> None:
    assert query_from_inputs(inputs) == expected


def test_example_and_metadata_ids(load_text: LoadText) -> None:
    text = json.dumps([{"example_id": 7, "inputs": {"q": 1}, "outputs": {}, "metadata": {"x": 1}}])
    eval_set = load_text("x.eval.json", text)
    assert eval_set.cases[0].case_id == "7"
    assert eval_set.criteria.metrics == []


def test_outputs_are_checked(problems_of: ProblemsOf) -> None:
    text = json.dumps([{"inputs": {"question": "q"}, "outputs": {"response": "r", "trajectory": "a"}}])
    problems = problems_of("x.eval.json", text)
    assert [(p.json_path, p.message) for p in problems] == [
        ("$[0].outputs.trajectory", "Input should be a valid list"),
    ]
    assert problems[0].case_id == example_case_id({"question": "q"})


def test_a_number_response_is_its_json_text(load_text: LoadText) -> None:
    text = json.dumps([{"id": "n", "inputs": {"question": "2+2?"}, "outputs": {"response": 4}}])
    assert load_text("x.eval.json", text).cases[0].turns[0].expected_response == "4"


def test_identical_inputs_without_ids_are_duplicate_cases(problems_of: ProblemsOf) -> None:
    line = '{"inputs": {"question": "same"}, "outputs": {"response": "r"}}'
    [problem] = problems_of("x.eval.jsonl", f"{line}\n{line}\n")
    assert problem.message == f"duplicate case id {example_case_id({'question': 'same'})!r}"
    assert (problem.line, problem.found) == (2, "the same id again (first at line 1)")


def test_a_recorded_langchain_trajectory_is_the_reference(load_text: LoadText) -> None:
    """Seed 001's dataset shape: `inputs.trajectory` with `dumpd` messages, calls in additional_kwargs."""
    ai = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": "",
            "additional_kwargs": {
                "tool_calls": [
                    {"index": 0, "id": "c1", "function": {"arguments": '{"query": "SF"}', "name": "search"}},
                    {"index": 1, "id": "c2", "function": {"arguments": '{"query": "LA"}', "name": "search"}},
                ]
            },
        },
    }
    trajectory = [
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "SF vs LA?"},
        },
        ai,
        {"type": "tool", "data": {"content": "75F", "tool_call_id": "c1", "additional_kwargs": {"name": "search"}}},
        {"type": "tool", "content": "89F", "tool_call_id": "c2"},
        {"role": "assistant", "content": [{"type": "text", "text": "14 degrees"}]},
    ]
    eval_set = load_text("x.eval.json", json.dumps([{"inputs": {"trajectory": trajectory, "lang": "en"}}]))
    turn = eval_set.cases[0].turns[0]
    assert turn.query == "SF vs LA?"
    assert turn.inputs == {"lang": "en"}  # the reference is not handed to the agent
    assert turn.reference_messages == [
        Message(role="user", content="SF vs LA?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[
                ToolCall(name="search", args={"query": "SF"}, id="c1"),
                ToolCall(name="search", args={"query": "LA"}, id="c2"),
            ],
        ),
        Message(role="tool", content="75F", tool_call_id="c1", name="search"),
        Message(role="tool", content="89F", tool_call_id="c2"),
        Message(role="assistant", content="14 degrees"),
    ]


def test_a_bad_recorded_trajectory_names_the_message(problems_of: ProblemsOf) -> None:
    bad = {
        "type": "ai",
        "content": "",
        "additional_kwargs": {"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]},
    }
    text = json.dumps([{"inputs": {"trajectory": [{"type": "human", "content": "q"}, bad]}}])
    problems = problems_of("x.eval.json", text)
    assert [(p.json_path, p.message) for p in problems] == [
        ("$[0].inputs.trajectory", "inputs.trajectory[1].tool_calls[0]: function.arguments is not JSON: '{oops'")
    ]
