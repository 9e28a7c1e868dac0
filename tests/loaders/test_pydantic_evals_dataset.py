"""pydantic-evals Dataset files (`loaders.pydantic_evals_dataset`): files written by the real package's
`Dataset.to_file`, as YAML and JSON, load into the eval set pydantic-evals' own reading implies, with located
problems for malformed ones; and a run scores every case as `Dataset.evaluate_sync` does on the same task."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import (
    Contains,
    Equals,
    EqualsExpected,
    EvaluatorSpec,
    IsInstance,
    MaxDuration,
)
from pydantic_evals.reporting import EvaluationReport
from tests.cli_process import run_cli
from tests.fakes.pydantic_evals_task import CUSTOM_PATHS, CUSTOM_TYPES, Grade, HasNeedle, LengthScore, agent, task

from evalward.errors import EvalFileError, UsageError
from evalward.loaders import detect_format, load_paths
from evalward.loaders import pydantic_evals_dataset as loader
from evalward.metrics.custom import evaluator_args, evaluator_spec, function_path
from evalward.model import CaseResult, EvalSet, MetricSpec

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = "pydantic_evals.evaluators"
TASKS = "tests.fakes.pydantic_evals_task"


def capitals() -> Dataset[Any, Any, Any]:
    """Built-ins with and without arguments (positional and keywords), the user's own evaluators (assertion,
    score, label), case-level and dataset-level evaluators sharing names, text and object inputs, a failing
    case and an unnamed one."""
    return Dataset[Any, Any, Any](
        name="capitals",
        cases=[
            Case(
                name="france",
                inputs="What is the capital of France?",
                expected_output="The capital of France is Paris.",
                metadata={"description": "the easy one", "tags": ["geo"], "difficulty": 1},
                evaluators=[
                    Contains("Paris"),
                    Contains(value="paris", case_sensitive=False),
                    HasNeedle(needle="France"),
                ],
            ),
            Case(
                name="wrong",
                inputs="What is the capital of France, wrongly?",
                expected_output="The capital of France is Paris.",
                evaluators=[HasNeedle()],
            ),
            Case(
                name="sum",
                inputs={"a": 2, "b": 2},
                expected_output={"answer": 4},
                evaluators=[Equals(value={"answer": 4}, evaluation_name="sum_ok")],
            ),
            Case(inputs="Japan?"),
        ],
        evaluators=[EqualsExpected(), IsInstance("str"), MaxDuration(seconds=30), HasNeedle(), LengthScore(), Grade()],
    )


def evaluate_sync(dataset: Dataset[Any, Any, Any], function: Any) -> EvaluationReport[Any, Any, Any]:
    """`Dataset.evaluate_sync` as its users call it, then closing the event loop it creates and leaves set
    (`pydantic_evals._utils.get_event_loop`), which would otherwise be garbage later, in another test."""
    report = dataset.evaluate_sync(function, progress=False)
    asyncio.get_event_loop_policy().get_event_loop().close()
    asyncio.set_event_loop(None)
    return report


def write(dataset: Dataset[Any, Any, Any], path: Path) -> Path:
    dataset.to_file(path, custom_evaluator_types=CUSTOM_TYPES)
    return path


def load(path: Path, custom: list[str] | None = None) -> EvalSet:
    [eval_set] = load_paths([path], custom_evaluator_types=CUSTOM_PATHS if custom is None else custom).sets
    return eval_set


def criteria(specs: list[MetricSpec]) -> list[tuple[str, str, Any]]:
    return [(s.name, function_path(s), evaluator_args(s)) for s in specs]


# --- the files pydantic-evals writes ---------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_to_file_dataset_loads_with_every_evaluator_as_a_criterion(tmp_path: Path, suffix: str) -> None:
    path = write(capitals(), tmp_path / f"capitals{suffix}")
    assert (tmp_path / "capitals_schema.json").is_file()  # written beside it, and not an eval file
    eval_set = load(path)
    assert (eval_set.eval_set_id, eval_set.name, eval_set.format) == ("capitals", "capitals", "pydantic_evals")
    assert criteria(eval_set.criteria.metrics) == [
        ("EqualsExpected", f"{BUILTIN}:EqualsExpected", None),
        ("IsInstance", f"{BUILTIN}:IsInstance", ["str"]),
        ("MaxDuration", f"{BUILTIN}:MaxDuration", [30]),
        ("HasNeedle", f"{TASKS}:HasNeedle", None),
        ("LengthScore", f"{TASKS}:LengthScore", None),
        ("Grade", f"{TASKS}:Grade", None),
    ]
    # No thresholds: a bool passes or fails the case, a number is an informational score.
    assert {s.threshold for s in eval_set.criteria.metrics} == {None}
    france, wrong, total, unnamed = eval_set.cases
    assert [c.case_id for c in eval_set.cases] == ["france", "wrong", "sum", "Case 4"]
    # The case's evaluators are named first, then the dataset's: its HasNeedle takes the name, the dataset's
    # becomes HasNeedle_2 for this case (its own criterion, beside the set's same-named one it replaces).
    assert criteria(france.metrics) == [
        ("Contains", f"{BUILTIN}:Contains", ["Paris"]),
        ("Contains_2", f"{BUILTIN}:Contains", {"value": "paris", "case_sensitive": False}),
        ("HasNeedle", f"{TASKS}:HasNeedle", ["France"]),
        ("HasNeedle_2", f"{TASKS}:HasNeedle", None),
    ]
    assert [s.name for s in eval_set.metrics_for(france)] == [
        "EqualsExpected",
        "IsInstance",
        "MaxDuration",
        "HasNeedle",
        "LengthScore",
        "Grade",
        "Contains",
        "Contains_2",
        "HasNeedle_2",
    ]
    assert criteria(wrong.metrics) == [("HasNeedle_2", f"{TASKS}:HasNeedle", None)]  # its own is the set's twin
    assert criteria(total.metrics) == [
        ("sum_ok", f"{BUILTIN}:Equals", {"value": {"answer": 4}, "evaluation_name": "sum_ok"})
    ]
    assert unnamed.metrics == []
    turn = france.turns[0]
    assert (turn.query, turn.inputs, turn.expected_response, turn.expected_outputs) == (
        "What is the capital of France?",
        {},
        "The capital of France is Paris.",
        {},
    )
    assert (france.description, france.tags) == ("the easy one", ["geo"])
    assert france.metadata == {"description": "the easy one", "tags": ["geo"], "difficulty": 1}
    turn = total.turns[0]
    assert (turn.inputs, turn.expected_response, turn.expected_outputs) == ({"a": 2, "b": 2}, None, {"answer": 4})
    assert turn.query == '{"a": 2, "b": 2}'  # the native format's rule: no text key, so the inputs as JSON
    assert (unnamed.turns[0].expected_response, unnamed.metadata) == (None, {})
    assert france.source is not None and france.source.json_path == "$.cases[0]"


def test_yaml_and_json_files_of_one_dataset_load_alike(tmp_path: Path) -> None:
    from_yaml = load(write(capitals(), tmp_path / "capitals.yaml"))
    from_json = load(write(capitals(), tmp_path / "capitals.json"))
    assert from_yaml.content_hash == from_json.content_hash
    assert [c.content_hash for c in from_yaml.cases] == [c.content_hash for c in from_json.cases]


@pytest.mark.parametrize(
    "raw",
    [
        "EqualsExpected",
        {"Contains": "x"},
        {"Contains": {"value": "x", "case_sensitive": False}},
        {"Equals": {"value": {"a": 1}}},
        {"Equals": [1, 2]},
        {"Equals": None},
        {"Equals": {}},
        {"Equals": {1: 2}},
        {"name": "Contains", "arguments": ["x"]},
        {"name": "Contains", "arguments": {"value": "x"}},
        {"name": "Contains", "arguments": None},
        {"name": "Equals", "arguments": [{"a": 1}]},
        {"name": "Contains"},
        {"name": "Equals", "arguments": [1, 2]},
        {"A": 1, "B": 2},
        {},
        {1: "x"},
        5,
        ["Contains"],
    ],
)
def test_evaluator_specs_read_as_pydantic_evals_reads_them(raw: Any) -> None:
    try:
        spec = EvaluatorSpec.model_validate(raw)
    except ValidationError:
        assert loader.parse_evaluator(raw) is None
        return
    expected = list(spec.arguments) if isinstance(spec.arguments, tuple) else spec.arguments
    assert loader.parse_evaluator(raw) == (spec.name, expected)


def test_the_builtin_table_is_the_installed_packages() -> None:
    import dataclasses

    from pydantic_evals.evaluators.common import DEFAULT_EVALUATORS

    installed: dict[str, tuple[tuple[str, ...], int]] = {}
    for cls in DEFAULT_EVALUATORS:
        fields = [f for f in dataclasses.fields(cls) if f.init]
        required = sum(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING for f in fields)
        installed[cls.get_serialization_name()] = (tuple(f.name for f in fields), required)
    assert installed == loader.BUILTIN_EVALUATORS


def test_names_follow_pydantic_evals_numbering_with_explicit_names_in_the_way(tmp_path: Path) -> None:
    dataset = Dataset[Any, Any, Any](
        name="names",
        cases=[
            Case(
                name="a",
                inputs="x",
                expected_output="x",
                evaluators=[Contains("x"), Contains("y", evaluation_name="Contains_2")],
            ),
            Case(name="b", inputs="x", expected_output="y", evaluators=[EqualsExpected()]),
        ],
        evaluators=[Contains("x"), Contains("z"), EqualsExpected()],
    )
    eval_set = load(write(dataset, tmp_path / "names.yaml"))
    assert [s.name for s in eval_set.criteria.metrics] == ["Contains", "Contains_2", "EqualsExpected"]
    a, b = eval_set.cases
    # Its first Contains is the dataset's first one exactly (same class, same argument): it stays the set's.
    assert [s.name for s in a.metrics] == ["Contains_2", "Contains_3", "Contains_4"]
    assert [s.name for s in b.metrics] == ["EqualsExpected_2"]
    report = evaluate_sync(dataset, lambda inputs: inputs)
    for case, reported in zip((a, b), report.cases, strict=True):
        named = {s.name: evaluator_args(s) for s in eval_set.metrics_for(case)}
        assert set(named) == set(reported.assertions)
        for name, result in reported.assertions.items():
            assert evaluator_args(next(s for s in eval_set.metrics_for(case) if s.name == name)) == (
                result.source.kwargs or list(result.source.args) or None
            )


def test_inputs_expected_outputs_and_metadata_of_every_kind(tmp_path: Path) -> None:
    path = tmp_path / "kinds.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            cases:
            - name: question
              inputs: {question: Where is it, lang: en}
            - {name: listed, inputs: [1, 2], expected_output: 3}
            - {name: labelled, inputs: hi, metadata: {cluster: 7, tags: [a, 1]}}
            - {name: plain, inputs: hi, metadata: just a note, expected_output: [1]}
            """
        )
    )
    loaded = load_paths([path])
    [eval_set] = loaded.sets
    assert eval_set.eval_set_id == "kinds"  # no name: the file's
    question, listed, labelled, plain = eval_set.cases
    assert (question.turns[0].query, question.turns[0].inputs) == (
        "Where is it",
        {"question": "Where is it", "lang": "en"},
    )
    assert (listed.turns[0].query, listed.turns[0].inputs, listed.turns[0].expected_response) == ("[1, 2]", {}, "3")
    assert (labelled.cluster, labelled.tags, labelled.metadata) == ("7", [], {"cluster": 7, "tags": ["a", 1]})
    assert (plain.metadata, plain.turns[0].expected_response) == ({}, "[1]")
    assert [w.replace(str(tmp_path), "DIR") for w in loaded.warnings] == [
        "DIR/kinds.yaml:6:29: case 'plain': metadata that is not an object is not kept (string \"just a note\")",
        "DIR/kinds.yaml:1:1: 1 case(s) have inputs that are neither text nor an object (first: 'listed'): the "
        "agent gets them as JSON text in 'query', and evaluators see that text as ctx.inputs",
    ]


def test_report_evaluators_are_a_warning_and_a_test_config_beside_adds_criteria(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(
        json.dumps({"name": "d", "cases": [{"inputs": "hi"}], "report_evaluators": [{"ConfusionMatrixEvaluator": {}}]})
    )
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_exact": 1.0}}))
    loaded = load_paths([path], known_metrics=["response_exact"])
    [eval_set] = loaded.sets
    assert [s.name for s in eval_set.criteria.metrics] == ["response_exact"]
    [warning] = loaded.warnings
    assert "1 report evaluator(s) not run" in warning


# --- detection ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"name": "d", "cases": [{"name": "a", "inputs": "x"}]}, "pydantic_evals"),
        ({"cases": []}, "pydantic_evals"),
        ({"name": "d", "evaluators": ["EqualsExpected"]}, "pydantic_evals"),  # `cases` missing: reported
        ({"$schema": "d_schema.json", "name": "d", "cases": [], "evaluator": []}, "pydantic_evals"),  # a typo
        ({"name": "d", "cases": [], "report_evaluators": []}, "pydantic_evals"),
        # Not pydantic-evals: a native file without `evalward: 1`, an object that only has a name or cases of
        # another shape, a JSON schema.
        ({"eval_set_id": "s", "cases": [{"id": "a", "query": "q"}]}, "adk_evalset"),
        ({"cases": [{"id": "a", "query": "q"}]}, None),
        ({"cases": [{"inputs": "q", "expect": {}}]}, None),
        ({"name": "d"}, None),
        ({"name": "d", "cases": {}}, None),
        ({"type": "object", "properties": {"cases": {}}}, None),
        ({"evalward": 1, "cases": [], "$schema": "x"}, "native"),
    ],
)
def test_detection_is_precise(data: Any, expected: str | None) -> None:
    assert detect_format(data) == expected


def test_the_schema_file_written_beside_is_not_an_eval_file(tmp_path: Path) -> None:
    write(capitals(), tmp_path / "capitals.yaml")
    with pytest.raises(EvalFileError) as caught:
        load_paths([tmp_path / "capitals_schema.json"])
    assert caught.value.problems[0].message == "not a recognised eval file format"


# --- problems -----------------------------------------------------------------------------------------------------


def problems(tmp_path: Path, text: str, name: str = "bad.yaml", **kwargs: Any) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    with pytest.raises(EvalFileError) as caught:
        load_paths([path], **kwargs)
    return [p.render().replace(str(tmp_path), "DIR") for p in caught.value.problems]


def test_unknown_evaluators_and_wrong_arguments_are_located(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        name: bad
        cases:
        - name: a
          inputs: hi
          evaluators:
          - Contain: x
          - Contains
          - MaxDuration: {secs: 3}
          - {Contains: x, Equals: y}
          - HasNeedle
        evaluators:
        - Equals
        report_evaluators: []
        """,
    )
    assert found[0] == (
        "DIR/bad.yaml:12:3: evaluator 'Equals' cannot be created with these arguments: TypeError: "
        "Equals.__init__() missing 1 required positional argument: 'value'; at $.evaluators[0]; "
        'expected Equals(value, evaluation_name=…); found string "Equals"'
    )
    rest = found[1:]
    assert rest[0].startswith(
        "DIR/bad.yaml:6:5: unknown evaluator 'Contain' (did you mean 'Contains'?); at $.cases[0].evaluators[0]; "
        "case 'a'; expected one of pydantic-evals' evaluators (ArgumentCorrectness, Contains, "
    )
    assert rest[1].startswith(
        "DIR/bad.yaml:7:5: evaluator 'Contains' cannot be created with these arguments: TypeError: "
    )
    assert rest[1].endswith(
        "; at $.cases[0].evaluators[1]; case 'a'; expected Contains(value, case_sensitive=…, as_strings=…, "
        'evaluation_name=…); found string "Contains"'
    )
    assert rest[2].startswith("DIR/bad.yaml:8:5: evaluator 'MaxDuration' cannot be created with these arguments:")
    assert "'secs'" in rest[2]
    assert rest[3] == (
        "DIR/bad.yaml:9:5: not an evaluator; at $.cases[0].evaluators[3]; case 'a'; expected a name, "
        "{Name: argument}, {Name: {keyword: value, …}} or {name: Name, arguments: …} (one key: the evaluator's "
        'name); found object {"Contains": "x", "Equals": "y"}'
    )
    assert rest[4].startswith("DIR/bad.yaml:10:5: unknown evaluator 'HasNeedle'; ")
    assert rest[4].endswith(
        "or a class of your own listed in custom_evaluator_types (evalward.toml); found 'HasNeedle'"
    )
    assert len(rest) == 5


def test_a_one_item_list_argument_is_one_positional_argument(tmp_path: Path) -> None:
    # `{IsInstance: [str, int]}` passes the list as type_name (one positional argument): fine for pydantic-evals.
    path = tmp_path / "ok.yaml"
    path.write_text("cases: [{inputs: hi}]\nevaluators: [{IsInstance: [str, int]}]\n")
    [eval_set] = load_paths([path]).sets
    assert criteria(eval_set.criteria.metrics) == [("IsInstance", f"{BUILTIN}:IsInstance", [["str", "int"]])]


def test_missing_cases_duplicate_names_and_bad_cases_are_located(tmp_path: Path) -> None:
    assert problems(tmp_path, '{"$schema": "x.json", "name": "d", "evaluators": []}', "x.json") == [
        "DIR/x.json:1:1: missing required key 'cases'; at $; expected key 'cases': a list of {name, inputs, "
        "expected_output, …}"
    ]
    assert problems(
        tmp_path,
        """\
        name: d
        cases:
        - {name: a, inputs: x}
        - {name: b, input: x}
        - {name: a, inputs: y}
        - just text
        - {name: 3, inputs: x}
        description: typo
        evaluators: EqualsExpected
        report_evaluators: []
        """,
    ) == [
        "DIR/bad.yaml:8:1: unknown key 'description'; at $.description; expected one of $schema, name, "
        "cases, evaluators, report_evaluators; found 'description'",
        'DIR/bad.yaml:9:13: evaluators must be a list; at $.evaluators; found string "EqualsExpected"',
        "DIR/bad.yaml:4:3: missing required key 'inputs'; at $.cases[1]; case 'b'; expected key 'inputs'",
        "DIR/bad.yaml:4:13: unknown key 'input'; at $.cases[1].input; case 'b'; expected one of name, inputs, "
        "metadata, expected_output, evaluators; found 'input'",
        "DIR/bad.yaml:6:3: a case must be an object; at $.cases[3]; expected {name, inputs, metadata, "
        'expected_output, evaluators}; found string "just text"',
        "DIR/bad.yaml:7:10: Input should be a valid string; at $.cases[4].name; case 'Case 5'; found number 3",
    ]
    assert problems(tmp_path, "name: d\ncases:\n- {name: a, inputs: x}\n- {name: a, inputs: y}\n") == [
        "DIR/bad.yaml:4:3: duplicate case id 'a'; at $.cases[1]; case 'a'; expected case ids unique within the "
        "file; found the same id again (first at line 3)"
    ]


def test_a_control_character_in_the_name_is_located_at_the_name(tmp_path: Path) -> None:
    assert problems(tmp_path, '{"name": "a\\u0007", "cases": []}', "x.json") == [
        "DIR/x.json:1:10: the eval set id contains a control character; at $.name; expected printable text; "
        "found '\\x07' at character 2"
    ]


def test_custom_evaluator_types_must_be_class_paths_with_distinct_names(tmp_path: Path) -> None:
    path = write(capitals(), tmp_path / "capitals.yaml")
    with pytest.raises(UsageError, match="'HasNeedle' is not the path of an evaluator class"):
        load_paths([path], custom_evaluator_types=["HasNeedle"])
    with pytest.raises(UsageError, match="two classes are named 'HasNeedle'"):
        load_paths([path], custom_evaluator_types=[f"{TASKS}:HasNeedle", "other.module:HasNeedle"])


def test_a_custom_class_replaces_a_builtin_of_the_same_name(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("cases: [{inputs: hi}]\nevaluators: [{Contains: {anything: 1}}]\n")
    [eval_set] = load_paths([path], custom_evaluator_types=["evals.mine:Contains"]).sets
    assert criteria(eval_set.criteria.metrics) == [("Contains", "evals.mine:Contains", {"anything": 1})]


def test_the_settings_file_declares_custom_evaluator_types(tmp_path: Path) -> None:
    from evalward.config import load_config

    good = tmp_path / "evalward.toml"
    good.write_text(f'custom_evaluator_types = ["{TASKS}:HasNeedle", "{TASKS}.Grade"]\n')
    assert list(load_config(good).settings.run.custom_evaluator_types) == [f"{TASKS}:HasNeedle", f"{TASKS}.Grade"]
    bad = tmp_path / "bad.toml"
    bad.write_text('repeat = 2\ncustom_evaluator_types = ["HasNeedle"]\n')
    with pytest.raises(EvalFileError) as caught:
        load_config(bad)
    [problem] = caught.value.problems
    assert (problem.line, problem.json_path) == (2, "custom_evaluator_types")
    assert "expected class paths 'package.module:Class', found 'HasNeedle'" in problem.message


def test_without_pydantic_evals_installed_builtins_still_resolve_and_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(capitals(), tmp_path / "capitals.yaml")
    with_package = load(path)
    for module in ("pydantic_evals", "pydantic_evals.evaluators", "pydantic_evals.evaluators.common"):
        monkeypatch.setitem(sys.modules, module, None)  # `import` raises ImportError
    loader._builtins.cache_clear()
    try:
        without = load(path)
        assert without.content_hash == with_package.content_hash
        found = problems(
            tmp_path,
            """\
            cases: [{inputs: hi}]
            evaluators: [Contains, {MaxDuration: {secs: 1}}, {Equals: [1, 2]}, {EqualsExpected: {evaluation_name: e}}]
            """,
        )
    finally:
        loader._builtins.cache_clear()
    assert [line.split("; at ")[0] for line in found] == [
        "DIR/bad.yaml:2:14: evaluator 'Contains' cannot be created with these arguments: Contains is missing "
        "required argument(s) 'value'",
        "DIR/bad.yaml:2:24: evaluator 'MaxDuration' cannot be created with these arguments: MaxDuration got an "
        "unexpected keyword argument 'secs'",
    ]


def test_the_loader_imports_without_pydantic_evals() -> None:
    code = (
        "import sys; sys.modules['pydantic_evals'] = None\n"
        "import evalward.loaders.pydantic_evals_dataset as m\n"
        "print(sorted(m._builtins())[:2], 'pydantic_evals' in [k for k, v in sys.modules.items() if v])"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert completed.stdout.strip() == "['ArgumentCorrectness', 'Contains'] False"


# --- the same results as Dataset.evaluate_sync ------------------------------------------------------------------

Results = tuple[dict[str, bool], dict[str, float], dict[str, str]]


def pydantic_results(report: EvaluationReport[Any, Any, Any]) -> dict[str, Results]:
    assert report.failures == []
    return {
        str(case.name): (
            {name: bool(r.value) for name, r in case.assertions.items()},
            {name: float(r.value) for name, r in case.scores.items()},
            {name: str(r.value) for name, r in case.labels.items()},
        )
        for case in report.cases
    }


def evalward_results(cases: list[CaseResult] | list[dict[str, Any]]) -> dict[str, Results]:
    found: dict[str, Results] = {}
    for case in cases:
        data = case if isinstance(case, dict) else case.model_dump(mode="json")
        assertions: dict[str, bool] = {}
        scores: dict[str, float] = {}
        labels: dict[str, str] = {}
        for result in data["metric_results"]:
            if result["status"] in ("passed", "failed"):
                assertions[result["name"]] = result["status"] == "passed"
            elif result["status"] == "informational" and result["score"] is not None:
                scores[result["name"]] = result["score"]
            elif result["status"] == "informational":
                labels[result["name"]] = result["details"]["label"]
            else:
                assert result["status"] == "not_applicable", result  # EqualsExpected without an expected output
        found[data["case_id"]] = (assertions, scores, labels)
    return found


def passed_cases(results: dict[str, Results]) -> dict[str, bool]:
    """pydantic-evals' verdict: every assertion of the case held."""
    return {name: bool(assertions) and all(assertions.values()) for name, (assertions, _, _) in results.items()}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_run_scores_every_case_as_evaluate_sync(tmp_path: Path, suffix: str) -> None:
    from evalward.testing import evaluate

    dataset = capitals()
    expected = pydantic_results(evaluate_sync(dataset, task))
    eval_set = load(write(dataset, tmp_path / f"capitals{suffix}"))
    run = evaluate(agent, eval_set, num_runs=1, raise_on_failure=False)
    assert evalward_results(run.cases) == expected
    assert {c.case_id: c.status == "passed" for c in run.cases} == passed_cases(expected)
    assert passed_cases(expected) == {"france": True, "wrong": False, "sum": False, "Case 4": False}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_evalward_run_on_a_dataset_of_builtins_matches_evaluate_sync(tmp_path: Path, suffix: str) -> None:
    dataset = Dataset[Any, Any, Any](
        name="builtins",
        cases=[
            Case(name="france", inputs="France?", expected_output="The capital of France is Paris.",
                 evaluators=[Contains("Paris"), Contains(value="PARIS", case_sensitive=False)]),
            Case(name="italy", inputs="Italy?", expected_output="The capital of Italy is Milan."),
            Case(name="sum", inputs={"a": 1, "b": 2}, expected_output={"answer": 3},
                 evaluators=[Equals({"answer": 3}), IsInstance("dict", evaluation_name="a_dict")]),
        ],
        evaluators=[EqualsExpected(), IsInstance("str"), MaxDuration(seconds=60)],
    )  # fmt: skip
    path = write(dataset, tmp_path / f"builtins{suffix}")
    code, stdout, stderr = run_cli(
        ["run", str(path), "--agent", f"{TASKS}:agent", "--json", str(tmp_path / "run.json")], tmp_path
    )
    assert code == 1, stdout + stderr  # italy and sum fail
    run = json.loads((tmp_path / "run.json").read_text())
    expected = pydantic_results(evaluate_sync(dataset, task))
    assert evalward_results(run["cases"]) == expected
    assert {c["case_id"]: c["status"] == "passed" for c in run["cases"]} == passed_cases(expected)


def test_evalward_run_with_the_users_evaluators_from_the_settings_matches_evaluate_sync(tmp_path: Path) -> None:
    dataset = capitals()
    path = write(dataset, tmp_path / "capitals.yaml")
    settings = tmp_path / "evalward.toml"
    settings.write_text(f"custom_evaluator_types = {json.dumps(CUSTOM_PATHS)}\n")
    code, stdout, stderr = run_cli(
        ["--config", str(settings), "run", str(path), "--agent", f"{TASKS}:agent", "--json", str(tmp_path / "r.json")],
        tmp_path,
    )
    assert code == 1, stdout + stderr
    run = json.loads((tmp_path / "r.json").read_text())
    expected = pydantic_results(evaluate_sync(dataset, task))
    assert evalward_results(run["cases"]) == expected


def test_evaluator_spec_is_the_one_spelling() -> None:
    # The loader's criteria are exactly what `evaluator_spec` builds, so every source runs them alike.
    spec = evaluator_spec("Contains", f"{BUILTIN}:Contains", args=["x"])
    assert loader._Evaluator("Contains", f"{BUILTIN}:Contains", ["x"]).spec("Contains") == spec
    assert HasNeedle.get_serialization_name() == "HasNeedle"
