"""pydantic-evals evaluators, written as pydantic-evals' docs show, score the same cases under `evalward run` as
under `Dataset.evaluate_sync` (#30 rows 1, 3, 4, 5): built-ins created with arguments from test_config.json and
`--metric`, a custom metric named like a built-in (`llm_judge`), one output type per case shape, and `{}` as
"does not apply"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import Reply
from tests.peers.conftest import cli, evaluate_sync, evalward, grading_reply, results_by_case, serve_judge, verdict

pydantic_evals = pytest.importorskip("pydantic_evals")

# Each case scripts the agent's answer in its inputs (tests/fakes/answers.py); the pydantic-evals task answers the
# same from the same inputs, as the user's own task function would.
CASES: list[dict[str, Any]] = [
    {"id": "paris", "inputs": {"question": "Capital of France?", "response": "Paris"}, "expect": "Paris"},
    {"id": "rome", "inputs": {"question": "Capital of Italy?", "response": "Milan"}, "expect": "Rome"},
    # The agent returns an extra key: the answer is still the text (row 3).
    {
        "id": "madrid",
        "inputs": {"question": "Capital of Spain?", "output": {"response": "Madrid", "confidence": 0.9}},
        "expect": "Madrid",
    },
    # No expected output: EqualsExpected does not apply (row 4).
    {"id": "greeting", "inputs": {"question": "Say hi", "response": "hi Paris"}, "expect": None},
    # A structured reference: the output is the agent's outputs mapping.
    {
        "id": "structured",
        "inputs": {"question": "Where is the Louvre?", "output": {"city": "Paris", "country": "France"}},
        "expect": {"city": "Paris", "country": "France"},
    },
]

# (criterion, pydantic-evals class, arguments): created from test_config.json's `evaluator` + `args` (row 5).
EVALUATORS: list[tuple[str, str, dict[str, Any] | list[Any] | None]] = [
    ("equals_expected", "EqualsExpected", None),
    ("mentions_paris", "Contains", {"value": "Paris"}),
    ("is_text", "IsInstance", {"type_name": "str"}),
    ("fast", "MaxDuration", {"seconds": 30}),
    # The natural name for an LLM judge, shared with evalward's built-in `llm_judge` (row 1).
    (
        "llm_judge",
        "LLMJudge",
        {"rubric": "The answer is the expected one", "model": "openai-chat:judge-1", "include_expected_output": True},
    ),
]


def task(inputs: dict[str, Any]) -> Any:
    """The user's task for pydantic-evals: the text answer, or the structured one."""
    scripted = inputs.get("output")
    if isinstance(scripted, dict):
        return scripted.get("response", scripted)
    return inputs["response"]


def judge(request: dict[str, Any]) -> Reply:
    """The judge model: passes an output equal to the expected output it is shown (pydantic-evals' prompt)."""
    prompt = request["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
    output = re.search(r"<Output>\s*(.*?)\s*</Output>", prompt, re.S)
    expected = re.search(r"<ExpectedOutput>\s*(.*?)\s*</ExpectedOutput>", prompt, re.S)
    passed = bool(output and expected and output.group(1) == expected.group(1))
    grading = {"reason": f"output {'matches' if passed else 'differs from'} the expected one", "pass": passed}
    grading["score"] = 1.0 if passed else 0.0
    return grading_reply(request, grading)


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from serve_judge(monkeypatch, judge)


def write_project(project: Path) -> None:
    lines = ["evalward: 1", "cases:"]
    for case in CASES:
        expect = case["expect"]
        entry: dict[str, Any] = {"id": case["id"], "inputs": case["inputs"]}
        if isinstance(expect, str):
            entry["expect"] = {"response": expect}
        elif isinstance(expect, dict):
            entry["expect"] = {"outputs": expect}
        lines.append("  - " + json.dumps(entry))
    (project / "qa.eval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    custom: dict[str, Any] = {}
    for name, cls, args in EVALUATORS:
        custom[name] = {"evaluator": f"pydantic_evals.evaluators:{cls}"} | ({} if args is None else {"args": args})
    config = {"criteria": {name: None for name, _, _ in EVALUATORS}, "custom_metrics": custom}
    (project / "test_config.json").write_text(json.dumps({**config, "replace_defaults": True}), encoding="utf-8")


def pydantic_evals_verdicts(cls: str, args: dict[str, Any] | list[Any] | None) -> dict[str, Any]:
    """case id → the evaluator's value under pydantic-evals itself (None: no result, i.e. does not apply)."""
    from pydantic_evals import Case, Dataset
    from pydantic_evals import evaluators as builtins

    evaluator_class = getattr(builtins, cls)
    evaluator = evaluator_class() if args is None else evaluator_class(**args)
    dataset = Dataset[Any, Any, Any](
        name="capitals",
        cases=[Case(name=c["id"], inputs=c["inputs"], expected_output=c["expect"]) for c in CASES],
        evaluators=[evaluator],
    )
    report = evaluate_sync(dataset, task)
    found: dict[str, Any] = {}
    for case in report.cases:
        assert not case.evaluator_failures, case.evaluator_failures
        values = [r.value for r in [*case.assertions.values(), *case.scores.values(), *case.labels.values()]]
        assert len(values) <= 1, values
        found[case.name] = values[0] if values else None
    return found


def evalward_verdicts(run: dict[str, Any], criterion: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for case_id, results in results_by_case(run).items():
        mine = [r for name, r in results.items() if name == criterion or name.startswith(f"{criterion}.")]
        assert len(mine) == 1, (case_id, results)
        found[case_id] = verdict(mine[0])
    return found


def test_builtins_with_arguments_agree_with_pydantic_evals_case_by_case(project: Path, judge_server: Any) -> None:
    write_project(project)
    code, _, run = evalward("run", "qa.eval.yaml", "--agent", "tests.fakes.agents:echo", "--no-history")
    assert run, "no run report"
    for criterion, cls, args in EVALUATORS:
        theirs = pydantic_evals_verdicts(cls, args)
        assert evalward_verdicts(run, criterion) == theirs, criterion
    # What the comparison covers: real verdicts of every kind, not a column of None.
    assert pydantic_evals_verdicts("EqualsExpected", None) == {
        "paris": True,
        "rome": False,
        "madrid": True,
        "greeting": None,
        "structured": True,
    }
    assert pydantic_evals_verdicts("IsInstance", {"type_name": "str"})["madrid"] is True
    assert code == 1  # rome fails EqualsExpected and the judge


def test_a_metric_named_like_a_builtin_validates_and_runs_with_a_warning(
    project: Path, judge_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    write_project(project)
    code = cli("validate", "qa.eval.yaml")
    out = capsys.readouterr()
    assert code == 0, out
    assert "custom metric 'llm_judge' shares its name with a built-in metric" in out.out + out.err
    _, _, run = evalward("run", "qa.eval.yaml", "--agent", "tests.fakes.agents:echo", "--no-history")
    judged = evalward_verdicts(run, "llm_judge")
    assert judged == {"paris": True, "rome": False, "madrid": True, "greeting": False, "structured": True}
    assert len(judge_server.completions()) == 2 * 0 + len(CASES)  # evalward's own judge was never asked


def test_metric_option_creates_an_evaluator_with_arguments(project: Path) -> None:
    write_project(project)
    _code, _, run = evalward(
        "run",
        "qa.eval.yaml",
        "--agent",
        "tests.fakes.agents:echo",
        "--no-history",
        "--metrics-mode",
        "replace",
        "--metric",
        'madrid=pydantic_evals.evaluators:Contains(value="Madrid", case_sensitive=False)',
        "--metric",
        'pydantic_evals.evaluators:IsInstance("str")',
    )
    assert evalward_verdicts(run, "madrid") == pydantic_evals_verdicts(
        "Contains", {"value": "Madrid", "case_sensitive": False}
    )
    assert evalward_verdicts(run, "IsInstance") == pydantic_evals_verdicts("IsInstance", {"type_name": "str"})
    assert evalward_verdicts(run, "madrid")["madrid"] is True


def test_arguments_an_evaluator_refuses_are_a_configuration_error_naming_the_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_project(project)
    config = json.loads((project / "test_config.json").read_text())
    config["custom_metrics"]["mentions_paris"]["args"] = {"valeu": "Paris"}
    (project / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    code = cli("validate", "qa.eval.yaml")
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2, text
    assert "test_config.json" in text
    assert "custom metric 'mentions_paris' (pydantic_evals.evaluators:Contains)" in text
    assert 'cannot create the evaluator with args {"valeu": "Paris"}' in text


def test_span_evaluators_read_the_agents_tool_calls_under_evalward_run(project: Path) -> None:
    """Row 2 through `evalward run`: the agentic built-ins and HasMatchingSpan read `ctx.span_tree`, rebuilt from
    the tool calls the agent reported (tests/metrics/test_span_tree.py compares the tree with pydantic-ai's own)."""
    weather = {"name": "get_weather", "args": {"city": "Paris"}}
    cases = [
        {"id": "one_call", "inputs": {"question": "Weather?", "response": "Sunny", "tool_calls": [weather]}},
        {"id": "two_calls", "inputs": {"question": "Twice?", "response": "Sunny", "tool_calls": [weather, weather]}},
        {"id": "no_call", "inputs": {"question": "Guess?", "response": "Sunny"}},
    ]
    lines = ["evalward: 1", "cases:", *("  - " + json.dumps(case) for case in cases)]
    (project / "tools.eval.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    evaluators = {
        "right_tools": ("ToolCorrectness", {"expected_tools": ["get_weather"]}),
        "one_call_at_most": ("MaxToolCalls", {"max_calls": 1}),
        "paris_asked": ("ArgumentCorrectness", {"tool_name": "get_weather", "expected_arguments": {"city": "Paris"}}),
        "weather_span": ("HasMatchingSpan", {"query": {"name_equals": "execute_tool get_weather"}}),
    }
    config = {
        "criteria": dict.fromkeys(evaluators),
        "custom_metrics": {
            name: {"evaluator": f"pydantic_evals.evaluators:{cls}", "args": args}
            for name, (cls, args) in evaluators.items()
        },
        "replace_defaults": True,
    }
    (project / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    _, _, run = evalward("run", "tools.eval.yaml", "--agent", "tests.fakes.agents:echo", "--no-history")
    found = {name: evalward_verdicts(run, name) for name in evaluators}
    assert found == {
        "right_tools": {"one_call": True, "two_calls": False, "no_call": False},
        "one_call_at_most": {"one_call": True, "two_calls": False, "no_call": True},
        "paris_asked": {"one_call": True, "two_calls": True, "no_call": False},
        "weather_span": {"one_call": True, "two_calls": True, "no_call": False},
    }
