import json
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import EvalFileError, FileProblem
from evalward.loaders import ADK_CRITERIA, adk_default_criteria, load_test_config, normalise_match_type
from evalward.loaders.test_config import read_test_config
from evalward.metrics.registry import known_metric_names
from evalward.model import MetricSpec


def _config(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return path


def _problems(tmp_path: Path, data: Any, **kwargs: Any) -> list[FileProblem]:
    with pytest.raises(EvalFileError) as caught:
        load_test_config(_config(tmp_path, data), **kwargs)
    return caught.value.problems


def test_numbers_are_thresholds_and_ints_become_floats(tmp_path: Path) -> None:
    path = _config(tmp_path, {"criteria": {"tool_trajectory_avg_score": 1, "response_match_score": 0.5}})
    criteria = load_test_config(path)
    assert criteria.metrics == [
        MetricSpec(name="tool_trajectory_avg_score", threshold=1.0),
        MetricSpec(name="response_match_score", threshold=0.5),
    ]
    assert isinstance(criteria.metrics[0].threshold, float)
    assert (criteria.origin, criteria.config_path) == ("test_config", str(path))


def test_object_criteria_normalise_match_type_and_accept_camel_case(tmp_path: Path) -> None:
    data = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchType": "any-order", "ignoreArgs": True}}}
    [spec] = load_test_config(_config(tmp_path, data)).metrics
    assert spec == MetricSpec(
        name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": "ANY_ORDER", "ignore_args": True}
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("EXACT", "EXACT"),
        (" in order ", "IN_ORDER"),
        ("in-order", "IN_ORDER"),
        ("any_order", "ANY_ORDER"),
        (0, "EXACT"),
        (1, "IN_ORDER"),
        (2, "ANY_ORDER"),
        (3, None),
        (True, None),
        ("fuzzy", None),
        (None, None),
    ],
)
def test_normalise_match_type(value: Any, expected: str | None) -> None:
    assert normalise_match_type(value) == expected


def test_invalid_match_type_lists_the_valid_ones(tmp_path: Path) -> None:
    text = '{\n  "criteria": {\n    "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "fuzzy"}\n  }\n}'
    [problem] = _problems(tmp_path, text)
    assert problem.message == "invalid match_type for tool_trajectory_avg_score"
    assert problem.expected == "one of EXACT, IN_ORDER, ANY_ORDER (or 0, 1, 2)"
    assert problem.found == 'string "fuzzy"'
    # Line 3; the value of "match_type" starts at column 67.
    assert (problem.line, problem.column) == (3, 67)
    assert problem.json_path == "$.criteria.tool_trajectory_avg_score.match_type"


def test_an_object_without_threshold_is_an_error(tmp_path: Path) -> None:
    [problem] = _problems(tmp_path, {"criteria": {"response_match_score": {"match_type": "EXACT"}}})
    assert problem.message == "criterion 'response_match_score' has no 'threshold'"
    assert problem.found == "keys 'match_type'"
    assert problem.json_path == "$.criteria.response_match_score"


def test_threshold_and_ignore_args_types_are_checked(tmp_path: Path) -> None:
    data = {
        "criteria": {
            "tool_trajectory_avg_score": {"threshold": "high", "ignore_args": "yes"},
            "response_match_score": True,
        }
    }
    problems = _problems(tmp_path, data)
    assert [(p.json_path, p.message) for p in problems] == [
        ("$.criteria.tool_trajectory_avg_score.threshold", "the threshold must be a number"),
        ("$.criteria.tool_trajectory_avg_score.ignore_args", "Input should be a valid boolean"),
        ("$.criteria.response_match_score", "criterion 'response_match_score' must be a number or an object"),
    ]


def test_unknown_criterion_lists_the_known_names(tmp_path: Path) -> None:
    [problem] = _problems(tmp_path, {"criteria": {"tool_trajectory_score": 1.0}}, known_metrics=["trajectory_f1"])
    assert problem.message == "unknown criterion 'tool_trajectory_score'; did you mean 'tool_trajectory_avg_score'?"
    assert problem.expected is not None
    assert problem.expected.startswith("one of ")
    listed = problem.expected.removeprefix("one of ").split(", ")
    assert set(listed) == {*ADK_CRITERIA, "trajectory_f1"}
    assert problem.json_path == "$.criteria.tool_trajectory_score"


def test_known_metrics_and_custom_metrics_are_accepted(tmp_path: Path) -> None:
    data = {
        "criteria": {"trajectory_f1": 0.9, "my_metric": 0.5},
        "custom_metrics": {"my_metric": {"code_config": {"name": "pkg.mod.fn"}}},
    }
    specs = load_test_config(_config(tmp_path, data), known_metrics={"trajectory_f1"}).metrics
    assert specs == [
        MetricSpec(name="trajectory_f1", threshold=0.9),
        MetricSpec(name="my_metric", threshold=0.5, options={"custom_metric": {"code_config": {"name": "pkg.mod.fn"}}}),
    ]


def test_judge_criteria_are_kept_with_their_options(tmp_path: Path) -> None:
    data = {
        "criteria": {
            "final_response_match_v2": {
                "threshold": 0.8,
                "judgeModelOptions": {"judgeModel": "gemini-2.5-flash", "numSamples": 5},
            },
            "rubric_based_tool_use_quality_v1": {
                "threshold": 1.0,
                "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "calls search first"}}],
            },
        }
    }
    judge, rubric = load_test_config(_config(tmp_path, data)).metrics
    assert judge == MetricSpec(
        name="final_response_match_v2",
        threshold=0.8,
        options={"judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 5}},
    )
    assert rubric.options == {
        "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "calls search first"}}]
    }


def test_bad_judge_options_are_reported(tmp_path: Path) -> None:
    data = {"criteria": {"final_response_match_v2": {"threshold": 0.8, "judge_model_options": {"num_samples": 0}}}}
    [problem] = _problems(tmp_path, data)
    assert problem.json_path == "$.criteria.final_response_match_v2.judge_model_options.num_samples"
    assert problem.message == "Input should be greater than or equal to 1"


def test_efficiency_metrics_take_no_threshold(tmp_path: Path) -> None:
    data = {"criteria": {"tool_call_count_v1": 3, "token_usage_v1": {"threshold": 100}, "invocation_duration_v1": None}}
    problems = _problems(tmp_path, data)
    # ADK 2.13's evaluators raise on a threshold ("does not support a threshold … Remove it from `criteria`")
    assert [(p.json_path, p.message) for p in problems] == [
        (
            "$.criteria.tool_call_count_v1",
            "tool_call_count_v1 does not support a threshold: it reports a value and never passes or fails; "
            "remove it from 'criteria' (it is reported automatically for every ADK eval set)",
        ),
        (
            "$.criteria.token_usage_v1.threshold",
            "token_usage_v1 does not support a threshold: it reports a value and never passes or fails; "
            "remove it from 'criteria' (it is reported automatically for every ADK eval set)",
        ),
    ]
    ok = _config(tmp_path, {"criteria": {"tool_call_count_v1": None, "token_usage_v1": {}}})
    assert load_test_config(ok).metrics == [MetricSpec(name="tool_call_count_v1"), MetricSpec(name="token_usage_v1")]


def test_unknown_top_level_keys_are_warnings(tmp_path: Path) -> None:
    path = _config(tmp_path, '{\n  "criterias": {"response_match_score": 0.5}\n}')
    criteria, found = read_test_config(path)
    assert criteria.metrics == []
    assert found.items == []
    assert found.warnings == [
        f"{path}:2:3: unknown key 'criterias' in test_config.json is ignored, as ADK ignores it; "
        "did you mean 'criteria'?",
        f"{path}:1:1: test_config.json has no 'criteria': nothing will be scored",
    ]


def test_camel_case_top_level_keys_and_ignored_sections(tmp_path: Path) -> None:
    data = {
        "criteria": {"response_match_score": 0.7},
        "userSimulatorConfig": {"model": "x"},
        "live_model_config": {"timeout_seconds": 300},
        "customMetrics": {},
    }
    criteria, found = read_test_config(_config(tmp_path, data))
    assert criteria.metrics == [MetricSpec(name="response_match_score", threshold=0.7)]
    assert found.warnings == []


def test_every_problem_in_the_file_is_reported(tmp_path: Path) -> None:
    data = {
        "criteria": {
            "nope": 1,
            "response_match_score": {},
            "tool_trajectory_avg_score": {"threshold": 1, "match_type": 9},
        }
    }
    assert len(_problems(tmp_path, data)) == 3


def test_not_an_object_and_bad_json(tmp_path: Path) -> None:
    [problem] = _problems(tmp_path, [1])
    assert problem.message == "test_config.json must be a JSON object"
    [problem] = _problems(tmp_path, '{"criteria": {')
    assert (problem.message, problem.line, problem.column) == (
        "invalid JSON: Expecting property name enclosed in double quotes",
        1,
        15,
    )


def test_adk_defaults() -> None:
    defaults = adk_default_criteria()
    assert defaults.origin == "adk_defaults"
    assert [m.describe() for m in defaults.metrics] == ["tool_trajectory_avg_score>=1", "response_match_score>=0.8"]


def test_custom_metrics_entries_are_checked_and_normalised(tmp_path: Path) -> None:
    data = {
        "criteria": {"length_match": 1.0},
        "customMetrics": {
            "length_match": {"codeConfig": {"name": "metrics_pkg.checks.length_match"}, "description": "same length"}
        },
    }
    [spec] = load_test_config(_config(tmp_path, data)).metrics
    assert spec == MetricSpec(
        name="length_match",
        threshold=1.0,
        options={
            "custom_metric": {"code_config": {"name": "metrics_pkg.checks.length_match"}, "description": "same length"}
        },
    )


def test_bad_custom_metrics_entries_name_the_metric_and_path(tmp_path: Path) -> None:
    data = {
        "criteria": {"a": 1.0, "b": 1.0, "c": 1.0},
        "custom_metrics": {
            "a": {"code_config": {"name": "no_dots"}},
            "b": {"code_config": {}},
            "c": {"code_config": {"name": "pkg.fn"}, "extra": 1},
        },
    }
    problems = _problems(tmp_path, data)
    assert [(p.json_path, p.message, p.found) for p in problems] == [
        (
            "$.custom_metrics.a.code_config.name",
            "custom metric 'a': the path of a function or evaluator class is expected",
            "'no_dots'",
        ),
        ("$.custom_metrics.b.code_config", "missing required key 'name'", None),
        ("$.custom_metrics.c.extra", "unknown key 'extra'", "'extra'"),
    ]


def test_evaluator_classes_are_named_with_their_arguments(tmp_path: Path) -> None:
    data = {
        "criteria": {"paris": None, "typed": None, "adk_style": None},
        "custom_metrics": {
            "paris": {"evaluator": "pydantic_evals.evaluators:Contains", "args": {"value": "Paris"}},
            "typed": {"evaluator": "pydantic_evals.evaluators:IsInstance", "args": ["str"]},
            "adk_style": {"codeConfig": {"name": "evals.checks:Near", "args": [{"name": "within", "value": 3}]}},
        },
    }
    criteria, found = read_test_config(_config(tmp_path, data))
    assert found.items == []
    assert {m.name: m.options["custom_metric"] for m in criteria.metrics} == {
        "paris": {"code_config": {"name": "pydantic_evals.evaluators:Contains"}, "args": {"value": "Paris"}},
        "typed": {"code_config": {"name": "pydantic_evals.evaluators:IsInstance"}, "args": ["str"]},
        "adk_style": {"code_config": {"name": "evals.checks:Near"}, "args": {"within": 3}},
    }


def test_an_evaluator_entry_names_its_code_once(tmp_path: Path) -> None:
    data = {
        "criteria": {"both": None, "neither": None, "mixed": None},
        "custom_metrics": {
            "both": {"evaluator": "a.b:C", "code_config": {"name": "a.b:C"}},
            "neither": {"args": {"x": 1}},
            "mixed": {"code_config": {"name": "a.b:C", "args": [{"name": "x", "value": 1}, {"value": 2}]}},
        },
    }
    problems = _problems(tmp_path, data)
    assert [(p.json_path, p.message) for p in problems] == [
        ("$.custom_metrics.both", "give the code's path once: either code_config.name or evaluator"),
        ("$.custom_metrics.neither", "give the code's path once: either code_config.name or evaluator"),
        (
            "$.custom_metrics.mixed.code_config.args",
            "custom metric 'mixed': code_config.args must be all named (keywords) or all unnamed (positional)",
        ),
    ]


def test_a_custom_metric_named_like_a_builtin_shadows_it_with_a_warning(tmp_path: Path) -> None:
    data = {"criteria": {"llm_judge": None}, "custom_metrics": {"llm_judge": {"evaluator": "evals.checks:Judge"}}}
    criteria, found = read_test_config(_config(tmp_path, data), known_metrics=["llm_judge"])
    assert found.items == []
    assert [w.split(": ", 1)[1] for w in found.warnings] == [
        "custom metric 'llm_judge' shares its name with a built-in metric: yours is scored, not the built-in"
    ]
    assert criteria.metrics[0].options["custom_metric"] == {"code_config": {"name": "evals.checks:Judge"}}


def test_declared_custom_metric_that_no_criterion_names_is_a_warning(tmp_path: Path) -> None:
    data = {"criteria": {"response_match_score": 0.5}, "custom_metrics": {"unused": {"code_config": {"name": "p.f"}}}}
    criteria, found = read_test_config(_config(tmp_path, data))
    assert [m.name for m in criteria.metrics] == ["response_match_score"]
    assert found.items == []
    assert [w.split(": ", 1)[1] for w in found.warnings] == [
        "custom metric 'unused' is declared but not named in 'criteria', so it does not run (as in ADK)"
    ]


def test_user_simulator_config_is_read_with_adk_keys(tmp_path: Path) -> None:
    data = {
        "criteria": {},
        "userSimulatorConfig": {
            "type": "llm_backed",
            "model": "sim-model",
            "maxAllowedInvocations": 5,
            "includeFunctionCalls": True,
            "model_configuration": {"temperature": 0.2, "thinking_config": {"thinking_budget": 10240}},
            "custom_instructions": "Plan: {{ conversation_plan }}\n{{conversation_history}}\nEnd with {{ stop_signal }}.",
        },
    }
    criteria, problems = read_test_config(_config(tmp_path, data))
    assert problems.items == []
    simulator = criteria.user_simulator
    assert simulator is not None
    assert (simulator.model, simulator.max_allowed_invocations, simulator.include_function_calls) == (
        "sim-model",
        5,
        True,
    )
    assert simulator.temperature == 0.2
    [warning] = problems.warnings
    assert "only temperature is used by evalward's simulator; ignored: thinking_config" in warning


def test_user_simulator_config_problems_are_located(tmp_path: Path) -> None:
    data = {"criteria": {}, "user_simulator_config": {"custom_instructions": "Just chat. {{ conversation_plan }}"}}
    [problem] = _problems(tmp_path, data)
    assert problem.json_path == "$.user_simulator_config.custom_instructions"
    assert problem.message == (
        "custom_instructions: missing placeholder(s) {{ stop_signal }}, {{ conversation_history }}"
    )
    [limit] = _problems(tmp_path, {"user_simulator_config": {"max_allowed_invocations": -2}})
    assert limit.json_path == "$.user_simulator_config.max_allowed_invocations"


def test_a_metric_option_typo_is_located_at_the_option_and_names_the_metric_and_the_allowed_options(
    tmp_path: Path,
) -> None:
    text = '{\n  "criteria": {\n    "tool_trajectory_avg_score": {"threshold": 1.0, "match_typo": "EXACT"}\n  }\n}\n'
    [problem] = _problems(tmp_path, text)
    assert (problem.line, problem.column) == (3, text.splitlines()[2].index('"match_typo"') + 1)
    assert problem.json_path == "$.criteria.tool_trajectory_avg_score.match_typo"
    assert problem.message == "tool_trajectory_avg_score: unknown option 'match_typo'"
    assert (problem.expected, problem.found) == ("one of match_type, ignore_args", "'match_typo'")


@pytest.mark.parametrize(
    ("written", "json_path", "found"),
    [
        ("1.5", "$.criteria.response_match_score", "number 1.5"),
        ("-0.5", "$.criteria.response_match_score", "number -0.5"),
        ('{"threshold": 1.5}', "$.criteria.response_match_score.threshold", "number 1.5"),
    ],
)
def test_a_threshold_out_of_range_is_located_with_its_json_path(
    tmp_path: Path, written: str, json_path: str, found: str
) -> None:
    text = (
        '{\n  "criteria": {\n    "tool_trajectory_avg_score": 1.0,\n    "response_match_score": '
        + written
        + "\n  }\n}\n"
    )
    [problem] = _problems(tmp_path, text)
    value_column = text.splitlines()[3].index(written.split(":")[-1].strip(" }")) + 1
    assert (problem.line, problem.column) == (
        4,
        value_column if "threshold" in json_path else len('    "response_match_score": ') + 1,
    )
    assert problem.json_path == json_path
    assert problem.message == "response_match_score: threshold must be between 0 and 1"
    assert (problem.expected, problem.found) == ("a number between 0 and 1", found)
    # rendered as the loaders render every located problem
    assert problem.render() == (
        f"{problem.path}:4:{problem.column}: response_match_score: threshold must be between 0 and 1; "
        f"at {json_path}; expected a number between 0 and 1; found {found}"
    )


def test_a_maximum_below_zero_is_located_and_says_what_a_maximum_takes(tmp_path: Path) -> None:
    text = '{"criteria": {\n  "latency_s": -1}}\n'
    [problem] = _problems(tmp_path, text, known_metrics=known_metric_names())
    assert (problem.line, problem.json_path) == (2, "$.criteria.latency_s")
    assert problem.message == "latency_s: threshold is a maximum and must be ≥ 0"
    assert (problem.expected, problem.found) == ("a number ≥ 0", "number -1.0")


def test_a_bad_option_value_is_located_at_the_value(tmp_path: Path) -> None:
    text = '{"criteria": {\n  "response_exact": {"threshold": 1,\n    "casefold": "yes"}}}\n'
    [problem] = _problems(tmp_path, text, known_metrics=known_metric_names())
    assert (problem.line, problem.column) == (3, text.splitlines()[2].index('"yes"') + 1)
    assert problem.json_path == "$.criteria.response_exact.casefold"
    assert problem.message == "response_exact: casefold: expected true or false"
    assert problem.found == 'string "yes"'


def test_an_unknown_key_inside_an_option_is_located_with_the_keys_taken_there(tmp_path: Path) -> None:
    text = (
        '{"criteria": {"trajectory_f1": {"threshold": 0.5,\n  "tool_args": {"search": {\n    "mode": "contains"}}}}}\n'
    )
    [problem] = _problems(tmp_path, text, known_metrics=known_metric_names())
    assert (problem.line, problem.column) == (3, 5)
    assert problem.json_path == "$.criteria.trajectory_f1.tool_args.search.mode"
    assert problem.message == "trajectory_f1: unknown option 'tool_args.search.mode'"
    assert (problem.expected, problem.found) == ("one of args_mode, keys", "'mode'")


def test_a_missing_option_is_located_at_the_criterion(tmp_path: Path) -> None:
    text = '{"criteria": {\n  "tool_called": {"threshold": 1}}}\n'
    [problem] = _problems(tmp_path, text, known_metrics=known_metric_names())
    assert (problem.line, problem.json_path) == (2, "$.criteria.tool_called")
    assert problem.message == "tool_called: option tool: Field required"
    assert problem.found is None


def test_a_camel_case_option_is_located_at_the_key_as_written(tmp_path: Path) -> None:
    text = '{"criteria": {"per_turn_user_simulator_quality_v1": {"threshold": 0.5,\n  "stopSignal": ""}}}\n'
    [problem] = _problems(tmp_path, text)
    assert (problem.line, problem.column) == (2, len('  "stopSignal": ') + 1)
    assert problem.json_path == "$.criteria.per_turn_user_simulator_quality_v1.stopSignal"
    assert problem.message == "per_turn_user_simulator_quality_v1: stop_signal must be a non-empty string"
    assert problem.found == 'string ""'
