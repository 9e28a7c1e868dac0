import json
from pathlib import Path

import pytest

from evalward.loaders import load_paths
from evalward.model import IntermediateResponse, SourceLocation, ToolCall

from .conftest import LoadText, ProblemsOf


def _evalset(cases: list[dict[str, object]], **extra: object) -> str:
    return json.dumps({"eval_set_id": "s", "eval_cases": cases, **extra}, indent=2)


def _invocation(**extra: object) -> dict[str, object]:
    return {"user_content": {"role": "user", "parts": [{"text": "hi"}]}, **extra}


def test_roll_die_maps_turns_calls_and_a_null_reference(fixtures: Path) -> None:
    path = fixtures / "adk/hello_world_agent/roll_die.test.json"
    [eval_set] = load_paths([path]).sets
    assert (eval_set.eval_set_id, eval_set.name, eval_set.format) == ("roll_die_set", "roll_die_set", "adk_evalset")
    [case] = eval_set.cases
    assert case.case_id == "roll_and_check"
    assert case.source == SourceLocation(path=str(path), line=5, column=5, json_path="$.eval_cases[0]")
    first, second, third = case.turns
    assert (first.invocation_id, first.query) == ("inv-roll-1", "Hi, who are you?")
    assert first.expected_response == "I roll dice and check whether numbers are prime."
    assert first.expected_tool_calls == []
    assert second.expected_tool_calls == [ToolCall(name="roll_die", args={"sides": 6}, id="call-1")]
    # A turn's own position is found only where a problem can be reported at it after loading (reference
    # messages, which ADK turns do not have): the case's is the one kept.
    assert [turn.source for turn in case.turns] == [None, None, None]
    # A Part whose text is null contributes no text: the reference is "", as ADK scores it.
    assert third.expected_response == ""
    # `"intermediate_data": {}` is IntermediateData with no tool_uses: expect no calls.
    assert third.expected_tool_calls == []
    assert case.session_input is not None
    assert (case.session_input.app_name, case.session_input.user_id) == ("hello_world", "test_user")
    assert case.expected_state is None


def test_camel_case_invocation_keys_and_all_null_part_fields_parse(fixtures: Path) -> None:
    path = fixtures / "adk/home_automation_agent/test_files/simple_multi_turn_conversation.test.json"
    [case] = load_paths([path]).sets[0].cases
    assert (case.case_id, case.description) == ("off_then_on", "switch a device off, then on again")
    off, on = case.turns
    assert off.invocation_id == "inv-m1"
    assert off.query == "Turn off device_2 in the Bedroom."
    assert off.expected_response == "I have set the device_2 status to off."
    # Key order differs from the other file; args are kept as a dict, so order does not matter.
    assert off.expected_tool_calls == [
        ToolCall(name="set_device_info", args={"location": "Bedroom", "device_id": "device_2", "status": "OFF"})
    ]
    assert on.expected_tool_calls == [
        ToolCall(name="set_device_info", args={"location": "Bedroom", "device_id": "device_2", "status": "ON"})
    ]
    assert case.session_input is None


def test_invocation_events_give_every_function_call_with_its_author(fixtures: Path) -> None:
    [eval_set] = load_paths([fixtures / "adk/travel_recorded/travel.evalset.json"]).sets
    assert eval_set.description == "expected side recorded as invocation events"
    [case] = eval_set.cases
    [turn] = case.turns
    # Empty text parts are skipped when joining.
    assert turn.query == "Book me a flight to Lisbon\ntomorrow."
    # Thought parts count, as in ADK's response text.
    assert turn.expected_response == "Booked\nYour flight is booked."
    assert turn.expected_tool_calls == [
        ToolCall(name="transfer_to_agent", args={"agent_name": "flights"}, id="c1", agent="travel_root"),
        ToolCall(name="search_flights", args={"to": "LIS"}, id="c2", agent="flights"),
        ToolCall(name="book_flight", args=None, id="c3", agent="flights"),
    ]
    assert turn.expected_intermediate_responses == [IntermediateResponse(author="flights", text="Searching flights.")]
    assert case.expected_state == {"booked": ["LIS"]}
    assert case.session_input is not None
    assert case.session_input.state == {"home": "SFO"}
    assert case.session_input.model_extra == {"extra_note": "kept"}


def test_intermediate_responses_and_null_final_response(load_text: LoadText) -> None:
    invocation = _invocation(
        final_response=None,
        intermediate_data={"intermediate_responses": [["sub_agent", [{"text": "a"}, {"text": "b"}]]]},
    )
    eval_set = load_text("x.evalset.json", _evalset([{"eval_id": "c", "conversation": [invocation]}]))
    [turn] = eval_set.cases[0].turns
    assert turn.expected_response is None
    assert turn.expected_tool_calls == []
    assert turn.expected_intermediate_responses == [IntermediateResponse(author="sub_agent", text="a\nb")]


def test_no_intermediate_data_expects_no_calls(load_text: LoadText) -> None:
    eval_set = load_text("x.evalset.json", _evalset([{"eval_id": "c", "conversation": [_invocation()]}]))
    [turn] = eval_set.cases[0].turns
    assert turn.expected_tool_calls == []
    assert turn.expected_intermediate_responses is None


def test_empty_final_session_state_is_not_an_expectation(load_text: LoadText) -> None:
    case = {"eval_id": "c", "conversation": [_invocation()], "final_session_state": {}}
    assert load_text("x.evalset.json", _evalset([case])).cases[0].expected_state is None


def test_eval_set_keys_are_snake_case_only(problems_of: ProblemsOf) -> None:
    text = '{\n  "evalSetId": "s",\n  "evalCases": []\n}'
    problems = problems_of("camel.evalset.json", text)
    assert [(p.line, p.column, p.json_path, p.expected, p.found) for p in problems] == [
        (2, 3, "$.evalSetId", "'eval_set_id'", "'evalSetId'"),
        (3, 3, "$.evalCases", "'eval_cases'", "'evalCases'"),
    ]
    assert "snake_case only" in problems[0].message


def test_camel_case_eval_set_still_reports_problems_inside_its_cases(problems_of: ProblemsOf) -> None:
    text = json.dumps({"evalSetId": "s", "eval_cases": [{"eval_id": "c", "conversation": [{"bogus": 1}]}]})
    messages = [p.message for p in problems_of("camel.evalset.json", text)]
    assert messages[0].startswith("ADK's EvalSet keys are snake_case only")
    assert "missing required key 'user_content'" in messages
    assert "unknown key 'bogus'" in messages


def test_unknown_invocation_key_is_reported_at_the_key_with_the_allowed_keys(problems_of: ProblemsOf) -> None:
    text = _evalset([{"eval_id": "c1", "conversation": [_invocation(metadata={"ticket": 1})]}])
    [problem] = problems_of("x.evalset.json", text)
    assert problem.message == "unknown key 'metadata'"
    assert problem.json_path == "$.eval_cases[0].conversation[0].metadata"
    assert problem.case_id == "c1"
    assert problem.found == "'metadata'"
    assert problem.expected is not None and problem.expected.startswith("one of invocation_id, user_content,")
    line = text.splitlines().index('          "metadata": {') + 1
    assert (problem.line, problem.column) == (line, 11)


def test_unknown_part_key_and_missing_user_content_are_both_reported(problems_of: ProblemsOf) -> None:
    conversation = [
        {"user_content": {"parts": [{"txt": "hi"}]}},
        {"final_response": {"parts": [{"text": "x"}]}},
    ]
    problems = problems_of("x.evalset.json", _evalset([{"eval_id": "c", "conversation": conversation}]))
    by_path = {p.json_path: p for p in problems}
    assert set(by_path) == {
        "$.eval_cases[0].conversation[0].user_content.parts[0].txt",
        "$.eval_cases[0].conversation[1]",
    }
    part = by_path["$.eval_cases[0].conversation[0].user_content.parts[0].txt"]
    assert part.expected is not None and "function_call" in part.expected and "text" in part.expected
    assert by_path["$.eval_cases[0].conversation[1]"].message == "missing required key 'user_content'"


def test_mixing_tool_uses_and_invocation_events_is_an_error(problems_of: ProblemsOf) -> None:
    invocation = _invocation(intermediate_data={"invocation_events": [], "tool_uses": []})
    [problem] = problems_of("x.evalset.json", _evalset([{"eval_id": "c", "conversation": [invocation]}]))
    assert problem.message == "unknown key 'tool_uses'"
    assert problem.json_path == "$.eval_cases[0].conversation[0].intermediate_data.tool_uses"
    assert problem.expected == "one of invocation_events"


def test_wrong_types_say_what_was_found(problems_of: ProblemsOf) -> None:
    case = {"eval_id": 5, "conversation": [_invocation(intermediate_data={"tool_uses": [{"name": "f", "args": []}]})]}
    problems = problems_of("x.evalset.json", _evalset([case]))
    assert [(p.json_path, p.message, p.found) for p in problems] == [
        ("$.eval_cases[0].eval_id", "Input should be a valid string", "number 5"),
        (
            "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].args",
            "Input should be a valid dictionary",
            "array []",
        ),
    ]


def test_a_case_has_exactly_one_of_conversation_and_scenario(problems_of: ProblemsOf) -> None:
    scenario = {"starting_prompt": "hi", "conversation_plan": "plan"}
    cases = [
        {"eval_id": "both", "conversation": [_invocation()], "conversation_scenario": scenario},
        {"eval_id": "neither"},
        {"eval_id": "empty", "conversation": []},
    ]
    problems = problems_of("x.evalset.json", _evalset(cases))
    assert [(p.case_id, p.found) for p in problems] == [
        ("both", "both"),
        ("neither", "neither 'conversation' nor 'conversation_scenario'"),
        ("empty", "[]"),
    ]


def test_scenario_and_scripted_cases_load_from_one_file(fixtures: Path) -> None:
    path = fixtures / "scenario/conversation_scenario.test.json"
    [eval_set] = load_paths([fixtures / "scenario"]).sets
    simulated, scripted = eval_set.cases
    assert simulated.case_id == "simulated_user"
    assert simulated.scenario is not None
    assert simulated.scenario.starting_prompt == "I want to plan a trip."
    assert simulated.scenario.conversation_plan == "Ask for a 3 day trip to Paris, then accept the plan."
    # A persona id resolves to ADK's prebuilt persona of that id.
    assert simulated.scenario.user_persona is not None and simulated.scenario.user_persona.id == "NOVICE"
    # One turn, the starting prompt, with no expectation: the simulator writes the rest while the case runs.
    [first] = simulated.turns
    assert (first.query, first.expected_response, first.expected_tool_calls) == ("I want to plan a trip.", None, None)
    assert first.source == SourceLocation(
        path=str(path), line=6, column=32, json_path="$.eval_cases[0].conversation_scenario"
    )
    assert simulated.session_input is None
    assert scripted.scenario is None and [t.query for t in scripted.turns] == ["Hello"]
    # The test_config's user_simulator_config travels with the criteria.
    assert eval_set.criteria.user_simulator is not None
    assert eval_set.criteria.user_simulator.model == "gemini-2.5-flash"
    assert eval_set.criteria.user_simulator.max_allowed_invocations == 20


def test_a_persona_object_and_camel_case_scenario_keys_load(load_text: LoadText) -> None:
    persona = {
        "id": "HURRIED",
        "description": "In a hurry.",
        "behaviors": [
            {"name": "brief", "description": "Short.", "behavior_instructions": ["Be short."], "violation_rubrics": []}
        ],
    }
    scenario = {"startingPrompt": "Book a table", "conversationPlan": "Two people at 7pm.", "userPersona": persona}
    eval_set = load_text("x.evalset.json", _evalset([{"evalId": "c", "conversationScenario": scenario}]))
    [case] = eval_set.cases
    assert case.scenario is not None and case.scenario.user_persona is not None
    assert case.scenario.user_persona.id == "HURRIED"
    assert case.scenario.user_persona.behaviors[0].behavior_instructions == ["Be short."]


def test_malformed_scenarios_are_located_problems(problems_of: ProblemsOf) -> None:
    cases = [
        {"eval_id": "no_plan", "conversation_scenario": {"starting_prompt": "hi"}},
        {
            "eval_id": "bad_persona",
            "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p", "user_persona": "GRUMPY"},
        },
        {"eval_id": "extra", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p", "mood": 1}},
        {"eval_id": "fine", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p"}},
    ]
    problems = problems_of("x.evalset.json", _evalset(cases))
    assert [(p.case_id, p.json_path, p.message) for p in problems] == [
        ("no_plan", "$.eval_cases[0].conversation_scenario", "missing required key 'conversation_plan'"),
        ("bad_persona", "$.eval_cases[1].conversation_scenario.user_persona", "unknown user persona 'GRUMPY'"),
        ("extra", "$.eval_cases[2].conversation_scenario.mood", "unknown key 'mood'"),
    ]
    assert problems[1].expected == "a persona object or one of ADK's prebuilt ids: EXPERT, NOVICE, EVALUATOR"


def test_scenario_hashes_cover_the_plan_and_leave_scripted_cases_alone(load_text: LoadText) -> None:
    def case(plan: str) -> object:
        text = _evalset(
            [{"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": plan}}]
        )
        return load_text("x.evalset.json", text).cases[0]

    one, other = case("plan A"), case("plan B")
    assert one.content_hash != other.content_hash  # type: ignore[attr-defined]
    assert one.input_hash != other.input_hash  # type: ignore[attr-defined]
    scripted = load_text("y.evalset.json", _evalset([{"eval_id": "c", "conversation": [_invocation()]}])).cases[0]
    assert "scenario" not in scripted.model_dump(exclude_defaults=True)


def test_extra_eval_set_keys_are_ignored_like_adk(load_text: LoadText) -> None:
    eval_set = load_text("x.evalset.json", _evalset([{"eval_id": "c", "conversation": [_invocation()]}], owner="me"))
    assert eval_set.eval_set_id == "s"


@pytest.mark.adk
def test_adk_reads_the_fixtures_the_same_way(fixtures: Path) -> None:
    """Differential check: google-adk's own models give the same texts and calls for every current fixture."""
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    def text(content: object) -> str | None:
        if content is None:
            return None
        return "\n".join(p.text for p in content.parts or [] if p.text)  # type: ignore[attr-defined]

    paths = [
        "adk/hello_world_agent/roll_die.test.json",
        "adk/home_automation_agent/simple_test.test.json",
        "adk/home_automation_agent/test_files/simple_multi_turn_conversation.test.json",
        "adk/travel_recorded/travel.evalset.json",
    ]
    for relative in paths:
        path = fixtures / relative
        adk = AdkEvalSet.model_validate_json(path.read_text())
        ours = load_paths([path]).sets[0]
        assert ours.eval_set_id == adk.eval_set_id
        for adk_case, case in zip(adk.eval_cases, ours.cases, strict=True):
            assert case.case_id == adk_case.eval_id
            for adk_turn, turn in zip(adk_case.conversation or [], case.turns, strict=True):
                assert turn.query == text(adk_turn.user_content)
                assert turn.expected_response == text(adk_turn.final_response)
                data = adk_turn.intermediate_data
                if data is None:
                    adk_calls = []
                elif hasattr(data, "tool_uses"):
                    adk_calls = [(c.name, c.args) for c in data.tool_uses]
                else:
                    adk_calls = [
                        (p.function_call.name, p.function_call.args)
                        for e in data.invocation_events
                        for p in (e.content.parts or [] if e.content else [])
                        if p.function_call
                    ]
                assert [(c.name, c.args) for c in turn.expected_tool_calls or []] == adk_calls


@pytest.mark.adk
def test_adk_also_rejects_camel_case_eval_set_keys() -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        AdkEvalSet.model_validate({"evalSetId": "s", "evalCases": []})
