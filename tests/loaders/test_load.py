import json
import shutil
from pathlib import Path

import pytest

import evalward.loaders as loaders
from evalward.errors import EvalFileError
from evalward.loaders import load_file, load_paths
from evalward.loaders.load import LoadedEvalSets
from evalward.model import MetricSpec

ADK = "adk"


def test_each_adk_file_uses_the_test_config_in_its_own_folder(fixtures: Path) -> None:
    loaded = load_paths([fixtures / ADK])
    by_name = {Path(s.path or "").name: s for s in loaded.sets}
    assert list(by_name) == [
        "diner.evalset.json",
        "roll_die.test.json",
        "simple_test.test.json",
        "simple_test2.test.json",
        "simple_multi_turn_conversation.test.json",
        "travel.evalset.json",
        "trip_inquiry.test.json",
    ]
    home_config = str(fixtures / ADK / "home_automation_agent/test_config.json")
    assert by_name["simple_test.test.json"].criteria.config_path == home_config
    # The legacy file in the same folder shares that folder's config.
    assert by_name["simple_test2.test.json"].criteria.config_path == home_config
    assert by_name["simple_test2.test.json"].format == "adk_legacy_test"
    # A subfolder with its own config does not inherit the parent's.
    nested = by_name["simple_multi_turn_conversation.test.json"].criteria
    assert nested.config_path == str(fixtures / ADK / "home_automation_agent/test_files/test_config.json")
    assert nested.metrics[0] == MetricSpec(
        name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": "IN_ORDER", "ignore_args": False}
    )
    assert [m.describe() for m in by_name["trip_inquiry.test.json"].criteria.metrics] == ["response_match_score>=0.5"]
    # No test_config.json beside the file: ADK's defaults.
    for name in ("diner.evalset.json", "travel.evalset.json"):
        assert by_name[name].criteria.origin == "adk_defaults"
    assert {s.format for s in loaded.sets} == {"adk_evalset", "adk_legacy_test", "adk_legacy_evalset"}
    assert loaded.warnings == []


def test_an_explicit_config_overrides_every_file_of_every_format(fixtures: Path, tmp_path: Path) -> None:
    config = tmp_path / "ci_config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.3}}))
    loaded = load_paths([fixtures / ADK, fixtures / "langsmith/chinook_e2e.test.json"], config_path=config)
    assert {s.criteria.config_path for s in loaded.sets} == {str(config)}
    assert all(s.criteria.metrics == [MetricSpec(name="response_match_score", threshold=0.3)] for s in loaded.sets)


def test_format_is_detected_by_content_not_by_name(fixtures: Path, tmp_path: Path) -> None:
    # A LangSmith file named like an ADK test file, next to a test_config.json: it stays LangSmith,
    # and the config beside it adds to its own criteria (it replaces an ADK file's defaults).
    shutil.copy(fixtures / "langsmith/chinook_e2e.test.json", tmp_path / "chinook.test.json")
    (tmp_path / "test_config.json").write_text('{"criteria": {"response_match_score": 0.5}}')
    # An explicitly named file with no eval suffix is read too.
    shutil.copy(fixtures / ADK / "diner_legacy/diner.evalset.json", tmp_path / "diner-cases.txt")
    loaded = load_paths([tmp_path, tmp_path / "diner-cases.txt"])
    langsmith, diner = loaded.sets
    assert (langsmith.format, langsmith.criteria.origin) == ("langsmith", "format_defaults")
    assert langsmith.criteria.metrics[-1] == MetricSpec(name="response_match_score", threshold=0.5)
    assert langsmith.criteria.config_path == str(tmp_path / "test_config.json")
    assert (diner.format, diner.eval_set_id, diner.criteria.origin) == (
        "adk_legacy_evalset",
        "diner-cases",
        "test_config",
    )


def test_every_problem_in_every_file_is_reported_together(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a/broken.test.json").write_text('{\n  "eval_set_id": "x",\n  "eval_cases": [\n')
    (tmp_path / "b/camel.test.json").write_text('{"evalSetId": "y", "evalCases": []}')
    (tmp_path / "b/ok.test.json").write_text(json.dumps([{"query": "hi"}]))
    (tmp_path / "b/test_config.json").write_text('{"criteria": {"response_match": 0.5}}')
    (tmp_path / "b/unknown.eval.json").write_text('{"hello": "world"}')
    with pytest.raises(EvalFileError) as caught:
        load_paths([tmp_path, tmp_path / "missing"])
    rendered = [p.render() for p in caught.value.problems]
    # camel.test.json: `{` is column 1, `"evalSetId"` starts at column 2, `"evalCases"` at column 20.
    assert rendered[0] == f"{tmp_path / 'missing'}: no such file or directory; expected an eval file or a directory"
    assert rendered[1] == f"{tmp_path / 'a/broken.test.json'}:4:1: invalid JSON: Expecting value; expected valid JSON"
    assert rendered[2].startswith(f"{tmp_path / 'b/camel.test.json'}:1:2: ADK's EvalSet keys are snake_case only")
    assert rendered[3].startswith(f"{tmp_path / 'b/camel.test.json'}:1:20: ADK's EvalSet keys are snake_case only")
    assert rendered[4].startswith(
        f"{tmp_path / 'b/test_config.json'}:1:15: unknown criterion 'response_match'; "
        "did you mean 'response_match_score'?"
    )
    assert rendered[5].startswith(f"{tmp_path / 'b/unknown.eval.json'}:1:1: not a recognised eval file format")
    assert rendered[5].endswith("found an object with keys 'hello'")
    assert len(rendered) == 6
    assert str(caught.value).startswith("6 problems in eval files:\n  ")


def test_a_shared_test_config_is_read_and_reported_once(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / f"{name}.test.json").write_text(json.dumps([{"query": name}]))
    (tmp_path / "test_config.json").write_text('{"criteria": {"nope": 1}}')
    with pytest.raises(EvalFileError) as caught:
        load_paths([tmp_path])
    assert len(caught.value.problems) == 1


def test_duplicate_case_ids_within_a_set_are_an_error(tmp_path: Path) -> None:
    case = {"eval_id": "same", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}
    path = tmp_path / "dup.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [case, case]}, indent=2))
    with pytest.raises(EvalFileError) as caught:
        load_paths([path])
    [problem] = caught.value.problems
    assert (problem.message, problem.case_id, problem.json_path) == (
        "duplicate case id 'same'",
        "same",
        "$.eval_cases[1]",
    )
    # json.dumps(indent=2): the first case spans lines 4-17 (14 lines each), so the second starts at line 18.
    assert (problem.line, problem.found) == (18, "the same id again (first at line 4)")


def test_sets_sharing_an_id_are_a_warning(tmp_path: Path) -> None:
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.test.json").write_text(json.dumps([{"query": folder}]))
    loaded = load_paths([tmp_path])
    assert len(loaded.sets) == 2
    [warning] = loaded.warnings
    assert warning.startswith("eval set id 'same' is used by 2 files")


def test_warnings_from_files_and_configs_are_collected(tmp_path: Path) -> None:
    (tmp_path / "t.test.json").write_text(json.dumps([{"query": "q", "extra": 1}]))
    (tmp_path / "test_config.json").write_text('{"criterias": {}}')
    loaded = load_paths([tmp_path])
    assert len(loaded.warnings) == 3
    assert "key 'extra' is ignored" in loaded.warnings[0]
    assert "unknown key 'criterias'" in loaded.warnings[1]
    assert loaded.sets[0].criteria.metrics == []


def test_load_file_and_known_metrics(fixtures: Path, tmp_path: Path) -> None:
    eval_set = load_file(
        fixtures / "native/music_store.eval.yaml",
        known_metrics={"trajectory_subsequence", "state_exact", "response_rouge1"},
    )
    assert eval_set.eval_set_id == "music_store"
    (tmp_path / "t.test.json").write_text(json.dumps([{"query": "q"}]))
    (tmp_path / "test_config.json").write_text('{"criteria": {"trajectory_f1": 0.5}}')
    with pytest.raises(EvalFileError):
        load_paths([tmp_path])
    loaded = load_paths([tmp_path], known_metrics=["trajectory_f1"])
    assert loaded.sets[0].criteria.metrics == [MetricSpec(name="trajectory_f1", threshold=0.5)]


def test_the_public_api_is_exported() -> None:
    for name in loaders.__all__:
        assert hasattr(loaders, name), name
    assert {"load_paths", "detect_format", "load_test_config", "native_json_schema", "LoadedEvalSets"} <= set(
        loaders.__all__
    )


def test_the_config_beside_a_broken_adk_file_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "t.test.json").write_text(json.dumps([{"query": 1}]))
    (tmp_path / "test_config.json").write_text('{"criteria": {"nope": 1}}')
    with pytest.raises(EvalFileError) as caught:
        load_paths([tmp_path])
    assert [Path(p.path).name for p in caught.value.problems] == ["t.test.json", "test_config.json"]


def test_scenario_fixture_config_keeps_judge_options(fixtures: Path) -> None:
    from evalward.loaders import load_test_config

    hallucinations, simulator = load_test_config(fixtures / "scenario/test_config.json").metrics
    assert hallucinations == MetricSpec(
        name="hallucinations_v1",
        threshold=0.8,
        options={
            "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 1},
            "evaluate_intermediate_nl_responses": True,
        },
    )
    assert simulator == MetricSpec(name="per_turn_user_simulator_quality_v1", threshold=1.0)


def test_format_defaults_are_metrics_the_registry_accepts(fixtures: Path) -> None:
    """Contract with metrics/: every default criterion and per-case metric the loaders emit is valid."""
    from evalward.metrics.registry import check_specs, known_metric_names

    paths = [fixtures / name for name in (ADK, "langsmith", "benchmarks", "multi_agent", "native")]
    loaded = load_paths(paths, known_metrics=known_metric_names())
    for eval_set in loaded.sets:
        assert check_specs(eval_set.criteria.metrics) == [], eval_set.path
        for case in eval_set.cases:
            assert check_specs(case.metrics) == [], case.case_id


def test_control_characters_in_ids_are_located_problems(tmp_path: Path) -> None:
    native = tmp_path / "cases.eval.json"
    native.write_text(
        json.dumps({"evalward": 1, "cases": [{"id": "ok", "query": "a"}, {"id": "a\u0000b", "query": "b"}]})
    )
    adk = tmp_path / "set.evalset.json"
    adk.write_text(json.dumps({"eval_set_id": "x\ny", "eval_cases": []}))
    named = tmp_path / "evil\u001b[31m.eval.json"
    named.write_text(json.dumps({"evalward": 1, "cases": []}))
    with pytest.raises(EvalFileError) as caught:
        load_paths([native, adk, named])
    rendered = [problem.render().replace(str(tmp_path), "DIR") for problem in caught.value.problems]
    assert rendered == [
        "DIR/cases.eval.json:1:55: the case id contains a control character; at $.cases[1]; expected printable "
        "text; found '\\x00' at character 2",
        "DIR/set.evalset.json:1:17: the eval set id contains a control character; at $.eval_set_id; expected "
        "printable text; found '\\n' at character 2",
        "DIR/evil\\x1b[31m.eval.json:1:1: the eval set id, taken from the file name, contains a control "
        "character: rename the file or set eval_set_id; at $; expected printable text; found '\\x1b' at character 5",
    ]


# --- ADK's FILE:ID1,ID2 case selection ---------------------------------------------------------------------------


def _cases(loaded: LoadedEvalSets) -> list[str]:
    return [c.case_id for s in loaded.sets for c in s.cases]


def test_file_colon_ids_keeps_those_cases_in_file_order(fixtures: Path, tmp_path: Path) -> None:
    diner = tmp_path / "diner.evalset.json"
    shutil.copy(fixtures / "adk/diner_legacy/diner.evalset.json", diner)
    loaded = load_paths([f"{diner}:opening_hours"])
    assert (_cases(loaded), loaded.selection) == (["opening_hours"], f"{diner}:opening_hours")
    both = load_paths([f"{diner}:opening_hours, book_for_two"])
    assert _cases(both) == ["book_for_two", "opening_hours"]
    # the same file named whole as well runs whole; named with ids twice, it runs the ids of both
    assert _cases(load_paths([f"{diner}:opening_hours", str(diner)])).count("book_for_two") == 1
    assert load_paths([f"{diner}:opening_hours", str(diner)]).selection is None
    assert _cases(load_paths([f"{diner}:opening_hours", f"{diner}:book_for_two"])) == ["book_for_two", "opening_hours"]


def test_unknown_ids_are_a_problem_listing_the_ids_the_file_has(fixtures: Path, tmp_path: Path) -> None:
    diner = tmp_path / "diner.evalset.json"
    shutil.copy(fixtures / "adk/diner_legacy/diner.evalset.json", diner)
    with pytest.raises(EvalFileError) as caught:
        load_paths([f"{diner}:opening_hours,brunch,dinner"])
    [problem] = caught.value.problems
    assert (problem.path, problem.message, problem.expected, problem.found) == (
        str(diner),
        f"no case 'brunch', 'dinner' in this file (selected with {diner}:IDS)",
        "ids of its cases: 'book_for_two', 'opening_hours'",
        "'brunch', 'dinner'",
    )


def test_a_file_whose_name_has_a_colon_is_a_path_first(fixtures: Path, tmp_path: Path) -> None:
    odd = tmp_path / "diner.evalset.json:opening_hours"
    shutil.copy(fixtures / "adk/diner_legacy/diner.evalset.json", odd)
    loaded = load_paths([str(odd)])
    assert (_cases(loaded), loaded.selection) == (["book_for_two", "opening_hours"], None)
    # a path that exists neither whole nor before its last colon is still "no such file"
    with pytest.raises(EvalFileError) as caught:
        load_paths([f"{tmp_path}/missing.evalset.json:x"])
    assert caught.value.problems[0].message == "no such file or directory"
