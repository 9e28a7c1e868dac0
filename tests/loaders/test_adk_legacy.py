import json
import shutil
import subprocess
from pathlib import Path

import pytest

from evalward.errors import EvalFileError
from evalward.loaders import load_paths
from evalward.model import IntermediateResponse, SessionInput, ToolCall

from .conftest import LoadText, ProblemsOf


def test_format_a_is_one_case_named_by_its_path_in_the_repository(fixtures: Path) -> None:
    path = fixtures / "adk/trip_planner_agent/trip_inquiry.test.json"  # absolute: the id is not
    loaded = load_paths([path])
    [eval_set] = loaded.sets
    assert (eval_set.format, eval_set.eval_set_id) == ("adk_legacy_test", "trip_inquiry")
    [case] = eval_set.cases
    assert case.case_id == "tests/loaders/fixtures/adk/trip_planner_agent/trip_inquiry.test.json"
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


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True)


def _legacy_case_id(given: str | Path) -> str:
    [eval_set] = load_paths([given]).sets
    [case] = eval_set.cases
    return case.case_id


def test_a_legacy_case_id_does_not_depend_on_how_the_path_was_typed(
    tmp_path: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `evalward run` stores the id of the path as typed; `evalward gate` loads the same file again by its absolute
    # path, and CI on another machine from another folder: all must name the case alike, and as a run typed
    # from the repository's top-level folder always did (stored ids stay comparable).
    repo = tmp_path / "checkout"
    (repo / "evals").mkdir(parents=True)
    shutil.copy(fixtures / "adk/trip_planner_agent/trip_inquiry.test.json", repo / "evals" / "trip.test.json")
    _git(repo, "init", "-q")
    linked = tmp_path / "linked"
    linked.symlink_to(repo, target_is_directory=True)
    monkeypatch.chdir(repo)
    typed: list[str | Path] = ["evals/trip.test.json", "./evals/trip.test.json", "evals"]
    typed += [repo / "evals/trip.test.json", linked / "evals" / "trip.test.json"]  # absolute, through a link
    assert {_legacy_case_id(given) for given in typed} == {"evals/trip.test.json"}
    monkeypatch.chdir(repo / "evals")  # from a subfolder
    assert _legacy_case_id("trip.test.json") == "evals/trip.test.json"
    monkeypatch.chdir(linked)  # a working directory reached through a symbolic link
    assert _legacy_case_id("./evals/trip.test.json") == "evals/trip.test.json"


def test_a_legacy_case_id_outside_a_repository_is_relative_never_absolute(
    tmp_path: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plain" / "evals"
    folder.mkdir(parents=True)
    shutil.copy(fixtures / "adk/trip_planner_agent/trip_inquiry.test.json", folder / "trip.test.json")
    monkeypatch.chdir(tmp_path / "plain")
    assert _legacy_case_id(folder / "trip.test.json") == "evals/trip.test.json"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the file is outside the working directory too
    assert _legacy_case_id(folder / "trip.test.json") == "../plain/evals/trip.test.json"


# --- initial.session.json beside a legacy test file (ADK's initial_session_file) --------------------------

SESSION = {"state": {"origin": "SFO", "budget": 2000}, "app_name": "trip_planner", "user_id": "test_user"}


def _legacy_folder(tmp_path: Path, fixtures: Path, session: str | None) -> Path:
    folder = tmp_path / "trip"
    folder.mkdir()
    shutil.copy(fixtures / "adk/trip_planner_agent/trip_inquiry.test.json", folder / "trip_inquiry.test.json")
    if session is not None:
        (folder / "initial.session.json").write_text(session, encoding="utf-8")
    return folder


def test_initial_session_file_gives_every_case_its_session(tmp_path: Path, fixtures: Path) -> None:
    folder = _legacy_folder(tmp_path, fixtures, json.dumps(SESSION))
    loaded = load_paths([folder])
    [case] = loaded.sets[0].cases
    assert case.session_input == SessionInput(
        app_name="trip_planner", user_id="test_user", state={"origin": "SFO", "budget": 2000}
    )
    assert loaded.warnings == []
    # missing keys take ADK's defaults ("" and {}); an empty object means no session
    (folder / "initial.session.json").write_text('{"state": {"tz": "UTC"}}', encoding="utf-8")
    [partial] = load_paths([folder]).sets[0].cases
    assert partial.session_input == SessionInput(app_name="", user_id="", state={"tz": "UTC"})
    (folder / "initial.session.json").write_text("{}", encoding="utf-8")
    [empty] = load_paths([folder]).sets[0].cases
    assert empty.session_input is None


def test_initial_session_file_is_only_for_legacy_test_files(tmp_path: Path, fixtures: Path) -> None:
    folder = _legacy_folder(tmp_path, fixtures, json.dumps(SESSION))
    shutil.copy(fixtures / "adk/diner_legacy/diner.evalset.json", folder / "diner.evalset.json")
    loaded = load_paths([folder])
    by_format = {s.format: s for s in loaded.sets}
    assert by_format["adk_legacy_test"].cases[0].session_input is not None
    # the other file keeps its own sessions, with a warning that the file was not applied to it
    own = [c.session_input for c in by_format[next(f for f in by_format if f != "adk_legacy_test")].cases]
    assert all(s is None or s.app_name != "trip_planner" for s in own)
    assert loaded.warnings == [
        f"{folder / 'initial.session.json'}: not applied to {folder / 'diner.evalset.json'}: an initial session "
        "file applies to legacy test files only (this file's cases carry their own session, as ADK requires)"
    ]


def test_malformed_initial_session_file_is_a_problem_naming_it(tmp_path: Path, fixtures: Path) -> None:
    session_path = str(tmp_path / "trip" / "initial.session.json")
    folder = _legacy_folder(tmp_path, fixtures, '{"state": [1, 2], "user_id": 7, "session_id": "s"}')
    with pytest.raises(EvalFileError) as caught:
        load_paths([folder])
    problems = caught.value.problems
    assert [(p.path, p.json_path, p.message) for p in problems] == [
        (session_path, "$.state", "Input should be a valid dictionary"),
        (session_path, "$.user_id", "Input should be a valid string"),
    ]
    (folder / "initial.session.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(EvalFileError) as caught:
        load_paths([folder])
    [problem] = caught.value.problems
    assert (problem.path, problem.message, problem.found) == (
        session_path,
        "an initial session file must be a JSON object",
        "array [1]",
    )
    (folder / "initial.session.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(EvalFileError) as caught:
        load_paths([folder])
    [problem] = caught.value.problems
    assert problem.path == session_path


def test_initial_session_unknown_keys_are_ignored_with_a_warning(tmp_path: Path, fixtures: Path) -> None:
    folder = _legacy_folder(tmp_path, fixtures, '{\n  "state": {},\n  "app_name": "a",\n  "session_id": "s1"\n}')
    loaded = load_paths([folder])
    assert loaded.sets[0].cases[0].session_input == SessionInput(app_name="a", user_id="", state={})
    assert loaded.warnings == [
        f"{folder / 'initial.session.json'}:4:3: key 'session_id' is ignored (ADK reads only state, app_name, user_id)"
    ]


# --- an explicit initial session file (--initial-session-file) --------------------------------------------------


def test_an_explicit_initial_session_applies_to_every_format_where_cases_set_none(
    tmp_path: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the legacy case is named from here (outside any repository)
    folder = _legacy_folder(tmp_path, fixtures, '{"state": {"origin": "beside"}}')
    shutil.copy(fixtures / "adk/diner_legacy/diner.evalset.json", folder / "diner.evalset.json")
    explicit = tmp_path / "session.json"
    explicit.write_text('{"state": {"origin": "SFO", "tz": "PST"}, "app_name": "trips", "user_id": "u9"}')
    loaded = load_paths([folder], initial_session_path=explicit)
    sessions = {c.case_id: c.session_input for s in loaded.sets for c in s.cases}
    # the legacy test file takes the explicit file instead of the one beside it (and no warning about that one)
    assert sessions["trip/trip_inquiry.test.json"] == SessionInput(
        app_name="trips", user_id="u9", state={"origin": "SFO", "tz": "PST"}
    )
    # a case with its own session keeps it; the keys it leaves unset come from the file
    assert sessions["book_for_two"] == SessionInput(
        app_name="diner", user_id="u1", state={"origin": "SFO", "tz": "UTC"}
    )
    assert sessions["opening_hours"] == SessionInput(
        app_name="trips", user_id="u9", state={"origin": "SFO", "tz": "PST"}
    )
    assert loaded.warnings == []


def test_an_explicit_initial_session_file_that_is_missing_or_bad_is_a_problem(tmp_path: Path, fixtures: Path) -> None:
    folder = _legacy_folder(tmp_path, fixtures, None)
    with pytest.raises(EvalFileError) as caught:
        load_paths([folder], initial_session_path=tmp_path / "nope.json")
    [problem] = caught.value.problems
    assert (problem.path, problem.message) == (str(tmp_path / "nope.json"), "no such initial session file")
    bad = tmp_path / "session.json"
    bad.write_text('{"state": "UTC"}')
    with pytest.raises(EvalFileError) as caught:
        load_paths([folder], initial_session_path=bad)
    [problem] = caught.value.problems
    assert (problem.path, problem.json_path, problem.message) == (
        str(bad),
        "$.state",
        "Input should be a valid dictionary",
    )
