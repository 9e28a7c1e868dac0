"""Bring your own evaluator: ADK, LangSmith/openevals and pydantic-evals idioms from a test_config.json beside a
LangSmith dataset, from `--metric module:function`, run end to end through `evalward run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward._pipeline import parse_metric_option
from evalward.metrics.custom import score_evaluator
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec

# Written to tmp_path; each module's text is fixed, so a module imported by an earlier test is the same code.
LANGSMITH_STYLE = """
import asyncio


def exact(inputs, outputs, reference_outputs):
    if inputs["question"] == "explode":
        raise ValueError("exact exploded")
    same = outputs["response"] == reference_outputs["response"]
    return {"key": "exact", "score": same, "comment": f"{outputs['response']!r} vs {reference_outputs['response']!r}"}


def exact_text(outputs, reference_outputs):
    # beside a native file whose case expects a response: both are the answer texts, as openevals takes them
    return {"key": "exact", "score": outputs == reference_outputs, "comment": f"{outputs!r} vs {reference_outputs!r}"}


async def length(*, outputs):
    await asyncio.sleep(0)
    return len(outputs["response"] or "")


def several(inputs, outputs):
    return [{"key": "a", "score": 1.0, "comment": "first"}, {"key": "b", "value": "meh"}]
"""

PYDANTIC_STYLE = """
import asyncio
from dataclasses import dataclass


@dataclass
class Reason:
    value: object
    reason: str | None = None


@dataclass
class Contains:
    needle: str = "i"

    def evaluate(self, ctx):
        found = self.needle in (ctx.output or "")
        return Reason(found, f"{self.needle!r} in {ctx.output!r} for {ctx.name} (expected {ctx.expected_output!r})")


class AsyncLabels:
    async def evaluate(self, ctx):
        await asyncio.sleep(0)
        return {"asked": ctx.inputs["question"] != "", "label": "short" if ctx.duration < 60 else "long"}
"""

ADK_STYLE = """
def always(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return {"overall_score": 1.0, "overall_eval_status": "PASSED"}
"""

EXAMPLES = [
    {
        "id": "paris",
        "inputs": {"question": "capital of France?", "response": "Paris"},
        "outputs": {"response": "Paris"},
    },
    {"id": "rome", "inputs": {"question": "capital of Italy?", "response": "Milan"}, "outputs": {"response": "Rome"}},
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "byo_langsmith_style.py").write_text(LANGSMITH_STYLE, encoding="utf-8")
    (tmp_path / "byo_pydantic_style.py").write_text(PYDANTIC_STYLE, encoding="utf-8")
    (tmp_path / "byo_adk_style.py").write_text(ADK_STYLE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2]))  # tests.fakes.agents
    (tmp_path / "qa.json").write_text(json.dumps(EXAMPLES), encoding="utf-8")
    return tmp_path


def config(evaluators: dict[str, str], criteria: dict[str, Any], **extra: Any) -> str:
    return json.dumps(
        {
            "criteria": criteria,
            "custom_metrics": {name: {"code_config": {"name": path}} for name, path in evaluators.items()},
            **extra,
        }
    )


THREE = {
    "exact": "byo_langsmith_style.exact",
    "contains": "byo_pydantic_style:Contains",
    "adk_always": "byo_adk_style.always",
}


def _run(project: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, dict[str, Any]]:
    from evalward._cli.main import main

    report = project / "r.json"
    report.unlink(missing_ok=True)
    args = ["run", "qa.json", "--agent", "tests.fakes.agents:echo", "--no-history", "--json", str(report), *extra]
    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    run = json.loads(report.read_text()) if report.exists() else {}
    return int(exited.value.code or 0), captured.out + captured.err, run


def by_case(run: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    return {c["case_id"]: {m["name"]: m for m in c["metric_results"]} for c in run["cases"]}


def test_three_idioms_beside_a_langsmith_dataset_add_to_its_defaults(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("google.adk.evaluation.eval_case")
    (project / "test_config.json").write_text(
        config(THREE, {"exact": 1.0, "contains": {"threshold": 1.0}, "adk_always": 1.0}), encoding="utf-8"
    )
    code, output, run = _run(project, capsys, "--markdown", "r.md")
    assert code == 1, output  # rome fails `exact`
    assert "'Milan' vs 'Rome'" in (project / "r.md").read_text()  # the comment is shown in reports
    cases = by_case(run)
    paris, rome = cases["paris"], cases["rome"]
    # LangSmith's own default (ROUGE-1 on the response, informational) is still there: added, not replaced
    assert "response_rouge1" in paris
    assert (paris["exact"]["score"], paris["exact"]["status"], paris["exact"]["explanation"]) == (
        1.0,
        "passed",
        "'Paris' vs 'Paris'",
    )
    assert (rome["exact"]["score"], rome["exact"]["status"], rome["exact"]["explanation"]) == (
        0.0,
        "failed",
        "'Milan' vs 'Rome'",
    )
    assert (paris["contains"]["score"], paris["contains"]["status"]) == (1.0, "passed")
    assert paris["contains"]["explanation"] == "'i' in 'Paris' for paris (expected 'Paris')"
    assert (rome["contains"]["score"], rome["contains"]["status"]) == (1.0, "passed")
    assert (paris["adk_always"]["score"], paris["adk_always"]["status"]) == (1.0, "passed")
    assert {c["case_id"]: c["status"] for c in run["cases"]} == {"paris": "passed", "rome": "failed"}


def test_replace_defaults_replaces_the_formats_criteria(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "test_config.json").write_text(
        config({"contains": THREE["contains"]}, {"contains": 1.0}, replace_defaults=True), encoding="utf-8"
    )
    code, output, run = _run(project, capsys)
    assert code == 0, output
    assert {name for case in by_case(run).values() for name in case} == {"contains"}


def test_async_evaluators_and_several_results(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evaluators = {
        "length": "byo_langsmith_style:length",
        "several": "byo_langsmith_style:several",
        "labels": "byo_pydantic_style:AsyncLabels",
    }
    (project / "test_config.json").write_text(
        config(evaluators, {"length": 5.0, "several": {}, "labels": None}), encoding="utf-8"
    )
    code, output, run = _run(project, capsys)
    assert code == 0, output  # "Paris" and "Milan" are 5 characters: both pass `length >= 5`
    paris = by_case(run)["paris"]
    assert (paris["length"]["score"], paris["length"]["status"]) == (5.0, "passed")
    # no threshold: a number is informational, a string value is a label
    assert (paris["several.a"]["score"], paris["several.a"]["status"], paris["several.a"]["explanation"]) == (
        1.0,
        "informational",
        "first",
    )
    assert (paris["several.b"]["score"], paris["several.b"]["status"], paris["several.b"]["explanation"]) == (
        None,
        "informational",
        "meh",
    )
    assert (paris["labels.asked"]["score"], paris["labels.asked"]["status"]) == (1.0, "passed")
    assert (paris["labels.label"]["status"], paris["labels.label"]["explanation"]) == ("informational", "short")


def test_an_evaluator_raising_is_an_error_for_that_case_only(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = [*EXAMPLES, {"id": "boom", "inputs": {"question": "explode", "response": "x"}, "outputs": {}}]
    (project / "qa.json").write_text(json.dumps(examples), encoding="utf-8")
    (project / "test_config.json").write_text(
        config({"exact": THREE["exact"], "contains": THREE["contains"]}, {"exact": 1.0, "contains": 1.0}),
        encoding="utf-8",
    )
    code, output, run = _run(project, capsys)
    cases = by_case(run)
    assert cases["boom"]["exact"]["status"] == "error"
    assert cases["boom"]["exact"]["explanation"] == (
        "evaluator 'exact' (byo_langsmith_style.exact): raised ValueError: exact exploded"
    )
    assert cases["boom"]["contains"]["status"] == "failed"  # the other evaluator still scored the case
    assert cases["paris"]["exact"]["status"] == "passed"
    assert {c["case_id"]: c["status"] for c in run["cases"]}["boom"] == "error"
    assert code != 0, output


def test_a_bad_path_is_a_configuration_error_naming_the_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "test_config.json").write_text(config({"x": "byo_langsmith_style:nope"}, {"x": 1.0}), encoding="utf-8")
    code, output, _ = _run(project, capsys)
    assert code == 2, output
    assert (
        "custom metric 'x' (byo_langsmith_style:nope): module 'byo_langsmith_style' has no attribute 'nope'" in output
    )
    assert "test_config.json" in output


def test_metric_option_adds_an_evaluator(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_metric_option("pkg.mod:fn=0.5") == MetricSpec(
        name="fn", threshold=0.5, options={"custom_metric": {"code_config": {"name": "pkg.mod:fn"}}}
    )
    assert parse_metric_option("mine=pkg.mod:Cls") == MetricSpec(
        name="mine", options={"custom_metric": {"code_config": {"name": "pkg.mod:Cls"}}}
    )
    assert parse_metric_option("rouge=0.5") == MetricSpec(name="rouge", threshold=0.5)
    code, output, run = _run(
        project, capsys, "--metric", "byo_pydantic_style:Contains=1", "--metric", "n=byo_langsmith_style:length"
    )
    assert code == 0, output
    paris = by_case(run)["paris"]
    assert {"response_rouge1", "Contains", "n"} <= set(paris)
    assert (paris["Contains"]["status"], paris["n"]["status"], paris["n"]["score"]) == ("passed", "informational", 5.0)


async def test_multi_turn_cases_use_the_last_answered_turn() -> None:
    case = EvalCase(
        case_id="c",
        turns=[Invocation(query="hi", expected_response="hello"), Invocation(query="bye", expected_response="ciao")],
    )
    spec = MetricSpec(
        name="m",
        threshold=1.0,
        options={"custom_metric": {"code_config": {"name": "tests.metrics.test_evaluators:_seen"}}},
    )
    results, per_turn = await score_evaluator(spec, case, [AgentOutput(response="hello"), AgentOutput(response="ciao")])
    assert per_turn == {}
    assert [(r.name, r.score, r.status, r.explanation) for r in results] == [
        ("m", 1.0, "passed", "{'query': 'hi'} -> 'ciao' vs 'ciao'")
    ]


def _seen(inputs: dict[str, Any], outputs: str, reference_outputs: str) -> dict[str, Any]:
    # A text reference (no expected outputs, not a LangSmith dataset): both sides are the answer texts.
    return {"score": outputs == reference_outputs, "comment": f"{inputs} -> {outputs!r} vs {reference_outputs!r}"}


def test_replace_defaults_is_a_known_boolean_key(tmp_path: Path) -> None:
    from evalward.loaders.test_config import read_test_config

    path = tmp_path / "test_config.json"
    path.write_text('{"criteria": {}, "replace_defaults": true}', encoding="utf-8")
    criteria, problems = read_test_config(path)
    assert (criteria.replace_defaults, problems.items, problems.warnings) == (True, [], [])
    assert "replace_defaults" not in criteria.model_dump()
    path.write_text('{"criteria": {}, "replace_defaults": "yes"}', encoding="utf-8")
    _, problems = read_test_config(path)
    assert [p.message for p in problems.items] == ["replace_defaults must be true or false"]


def test_a_native_yaml_metric_names_an_evaluator(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "qa.json").unlink()
    (project / "qa.eval.yaml").write_text(
        "evalward: 1\n"
        "metrics:\n"
        "  - {name: exact, evaluator: 'byo_langsmith_style:exact_text'}\n"
        "  - {name: contains, evaluator: byo_pydantic_style.Contains, threshold: null}\n"
        "cases:\n"
        "  - {id: paris, inputs: {question: 'capital?', response: Paris}, expect: {response: Paris}}\n",
        encoding="utf-8",
    )
    from evalward._cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "qa.eval.yaml", "--agent", "tests.fakes.agents:echo", "--no-history", "--json", "r.json"])
    output = capsys.readouterr()
    assert exited.value.code == 0, output
    [case] = json.loads((project / "r.json").read_text())["cases"]
    results = {m["name"]: m for m in case["metric_results"]}
    assert (results["exact"]["status"], results["exact"]["explanation"]) == ("passed", "'Paris' vs 'Paris'")
    # a bool is a verdict even without a threshold
    assert (results["contains"]["status"], results["contains"]["score"]) == ("passed", 1.0)


CASE = EvalCase(case_id="c", turns=[Invocation(query="hi", expected_response="hello")])


def _spec(attr: str, threshold: float | None = 0.5) -> MetricSpec:
    path = f"tests.metrics.test_evaluators:{attr}"
    return MetricSpec(name="m", threshold=threshold, options={"custom_metric": {"code_config": {"name": path}}})


def _old_style(run: Any, example: Any) -> float:
    return 0.75 if run.outputs["response"] == example.outputs["response"] else 0.0


def _nan(outputs: dict[str, Any]) -> float:
    return float("nan")


def _object(outputs: dict[str, Any]) -> object:
    return object()


def _empty(outputs: dict[str, Any]) -> list[Any]:
    return []


class _Mapping:
    def evaluate(self, ctx: Any) -> dict[str, Any]:
        return {"value": ctx.output == ctx.expected_output, "reason": f"{ctx.inputs!r} {ctx.attributes}"}


class _NeedsArgument:
    def __init__(self, needle: str) -> None:
        self.needle = needle

    def evaluate(self, ctx: Any) -> bool:
        return True


@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        ("_old_style", [("m", 0.75, "passed", "")]),
        ("_Mapping", [("m", 1.0, "passed", "'hi' {}")]),
        (
            "_nan",
            [
                (
                    "m",
                    None,
                    "error",
                    "evaluator 'm' (tests.metrics.test_evaluators:_nan): score must be finite, found nan",
                )
            ],
        ),
        (
            "_object",
            [
                (
                    "m",
                    None,
                    "error",
                    "evaluator 'm' (tests.metrics.test_evaluators:_object): a score must be a bool, a number or a string, found object",
                )
            ],
        ),
        ("_empty", [("m", None, "error", "evaluator 'm' (tests.metrics.test_evaluators:_empty): returned no results")]),
    ],
)
async def test_return_values_are_read_or_are_errors(attr: str, expected: list[tuple[Any, ...]]) -> None:
    results, _ = await score_evaluator(_spec(attr), CASE, [AgentOutput(response="hello")])
    got = [(r.name, r.score, r.status, r.explanation) for r in results]
    if attr == "_object":  # the repr of an object carries its address
        got = [(n, s, st, e.partition(" <")[0]) for n, s, st, e in got]
    assert got == expected


def test_an_evaluator_class_needing_arguments_is_a_configuration_error() -> None:
    from evalward.metrics.registry import check_specs

    [problem] = check_specs([_spec("_NeedsArgument")])
    assert problem.startswith(
        "custom metric 'm' (tests.metrics.test_evaluators:_NeedsArgument): cannot create the evaluator without arguments: TypeError"
    )


def test_a_native_yaml_metric_creates_an_evaluator_class_with_args(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "qa.json").unlink()
    (project / "qa.eval.yaml").write_text(
        "evalward: 1\n"
        "metrics:\n"
        "  - {name: has_par, evaluator: byo_pydantic_style.Contains, args: {needle: Par}, threshold: null}\n"
        "  - {name: has_xyz, evaluator: byo_pydantic_style.Contains, args: [xyz], threshold: null}\n"
        "cases:\n"
        "  - {id: paris, inputs: {question: 'capital?', response: Paris}, expect: {response: Paris},\n"
        "     metadata: {difficulty: easy}}\n",
        encoding="utf-8",
    )
    from evalward._cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "qa.eval.yaml", "--agent", "tests.fakes.agents:echo", "--no-history", "--json", "r.json"])
    assert exited.value.code == 1, capsys.readouterr()  # has_xyz fails
    [case] = json.loads((project / "r.json").read_text())["cases"]
    results = {m["name"]: (m["status"], m["explanation"]) for m in case["metric_results"]}
    assert results == {
        "has_par": ("passed", "'Par' in 'Paris' for paris (expected 'Paris')"),
        "has_xyz": ("failed", "'xyz' in 'Paris' for paris (expected 'Paris')"),
    }


def test_native_args_without_an_evaluator_are_a_located_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalward._cli.main import main

    (project / "bad.eval.yaml").write_text(
        "evalward: 1\nmetrics:\n  - {name: response_exact, args: {x: 1}}\ncases:\n  - {id: a, query: hi}\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as exited:
        main(["validate", "bad.eval.yaml"])
    text = "".join(capsys.readouterr())
    assert exited.value.code == 2, text
    assert "bad.eval.yaml:3" in text and "$.metrics[0].args" in text
    assert "args are the arguments of an evaluator class, and no evaluator is named" in text
