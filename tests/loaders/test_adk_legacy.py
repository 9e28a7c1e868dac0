import json
from pathlib import Path

from evalward.loaders import load_paths
from evalward.model import IntermediateResponse, SessionInput, ToolCall

from .conftest import LoadText, ProblemsOf


def test_format_a_is_one_case_named_by_the_path_as_given(fixtures: Path) -> None:
    path = fixtures / "adk/trip_planner_agent/trip_inquiry.test.json"
    loaded = load_paths([path])
    [eval_set] = loaded.sets
    assert (eval_set.format, eval_set.eval_set_id) == ("adk_legacy_test", "trip_inquiry")
    [case] = eval_set.cases
    assert case.case_id == str(path)
    greet, plan, thanks = case.turns
    assert greet.query == "Hi, who are you? What can you do?"
    assert greet.expected_response == "I am trip_planner, I can help you plan a trip."
    assert greet.expected_tool_calls == []
    # mock_tool_output is ignored; tool_input becomes args.
    assert plan.expected_tool_calls == [ToolCall(name="transfer_to_agent", args={"agent_name": "indentify_agent"})]
    assert plan.expected_intermediate_responses == [
        IntermediateResponse(author="trip_planner", text="Let me find the best destination first.")
    ]
    # reference null and reference missing both become "", as ADK's conversion does.
    assert plan.expected_response == ""
    assert thanks.expected_response == ""
    assert thanks.expected_tool_calls == []
    assert thanks.source is not None and (thanks.source.line, thanks.source.json_path) == (17, "$[2]")
    assert loaded.warnings == []


def test_format_b_is_one_case_per_named_conversation(fixtures: Path) -> None:
    [eval_set] = load_paths([fixtures / "adk/diner_legacy/diner.evalset.json"]).sets
    assert (eval_set.format, eval_set.eval_set_id) == ("adk_legacy_evalset", "diner")
    booking, hours = eval_set.cases
    assert booking.case_id == "book_for_two"
    assert booking.turns[0].expected_tool_calls == [ToolCall(name="book_table", args={"party": 2, "time": "19:00"})]
    assert booking.turns[0].expected_response == "Your table for two is booked for 7pm."
    assert booking.session_input == SessionInput(app_name="diner", user_id="u1", state={"tz": "UTC"})
    assert booking.source is not None and booking.source.line == 2
    # An empty initial_session means no session input.
    assert (hours.case_id, hours.session_input) == ("opening_hours", None)


def test_keys_adk_does_not_read_are_ignored_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.test.json"
    path.write_text(json.dumps([{"query": "hi", "refrence": "typo"}], indent=1))
    loaded = load_paths([path])
    assert loaded.sets[0].cases[0].turns[0].expected_response == ""
    [warning] = loaded.warnings
    assert warning.startswith(f"{path}:4:3: ")
    assert "key 'refrence' is ignored" in warning


def test_legacy_problems_name_the_turn_and_case(problems_of: ProblemsOf) -> None:
    text = json.dumps([{"name": "c1", "data": [{"query": "hi", "expected_tool_use": [{"tool_name": "f"}]}]}])
    [problem] = problems_of("x.evalset.json", text)
    assert problem.message == "missing required key 'tool_input'"
    assert problem.json_path == "$[0].data[0].expected_tool_use[0]"
    assert problem.case_id == "c1"


def test_a_legacy_conversation_needs_turns(problems_of: ProblemsOf) -> None:
    [problem] = problems_of("x.evalset.json", json.dumps([{"name": "c1", "data": []}]))
    assert (problem.message, problem.json_path) == ("a conversation needs at least one turn", "$[0].data")


def test_query_must_be_text(load_text: LoadText, problems_of: ProblemsOf) -> None:
    [problem] = problems_of("x.test.json", json.dumps([{"query": 3}]))
    assert (problem.message, problem.found) == ("Input should be a valid string", "number 3")
    assert load_text("y.test.json", json.dumps([{"query": "ok"}])).cases[0].turns[0].query == "ok"
