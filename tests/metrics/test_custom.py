"""ADK custom metrics (`custom_metrics` in test_config.json): loading, calling with ADK objects, reading results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward.metrics.custom import check_custom_spec, score_custom
from evalward.metrics.registry import check_specs, is_custom
from evalward.model import AgentOutput, EvalCase, Invocation, MetricSpec, ToolCall

pytest.importorskip("google.adk.evaluation.eval_case")

FAKES = "tests.fakes.custom_metrics"

CASE = EvalCase(
    case_id="c",
    turns=[
        Invocation(invocation_id="t0", query="roll", expected_tool_calls=[ToolCall(name="roll", args={"sides": 6})]),
        Invocation(invocation_id="t1", query="again", expected_response="done", expected_tool_calls=[]),
    ],
)
OUTPUTS = [
    AgentOutput(response="rolled 4", tool_calls=[ToolCall(name="roll", args={"sides": 6}, id="c1", result=4)]),
    AgentOutput(response="done", tool_calls=[ToolCall(name="roll", args={"sides": 6})]),
]


def spec(function: str, threshold: float | None = 1.0, **options: Any) -> MetricSpec:
    return MetricSpec(
        name="my_metric",
        threshold=threshold,
        options={"custom_metric": {"code_config": {"name": f"{FAKES}.{function}"}}, **options},
    )


async def test_sync_adk_metric_runs_with_adk_objects_and_per_turn_results() -> None:
    result, per_turn = await score_custom(spec("tool_count_match"), CASE, OUTPUTS)
    # hand calculation: turn 0 has 1 call vs 1 expected → 1.0; turn 1 has 1 vs 0 → 0.0; mean 0.5 → FAILED
    assert (result.score, result.status, result.higher_is_better) == (0.5, "failed", True)
    assert result.explanation == (
        "tests.fakes.custom_metrics.tool_count_match: overall_score=0.500, the function's verdict FAILED "
        "(0.500 not >= 1)"
    )
    assert result.details == {"function": f"{FAKES}.tool_count_match", "adk_status": "FAILED"}
    assert [(t, r.score, r.status) for t, r in sorted(per_turn.items())] == [(0, 1.0, "passed"), (1, 0.0, "failed")]


async def test_the_function_receives_what_adk_passes() -> None:
    from tests.fakes import custom_metrics

    custom_metrics.RECORDED.clear()
    await score_custom(spec("records_arguments", 0.5, match_type="IN_ORDER"), CASE, OUTPUTS, [0.25, None])
    [(eval_metric, actual, expected, scenario)] = custom_metrics.RECORDED
    # ADK hides the threshold from the function and keeps it in the criterion, with the other options
    assert (eval_metric.metric_name, eval_metric.threshold) == ("my_metric", None)
    assert eval_metric.criterion.threshold == 0.5
    assert eval_metric.criterion.model_dump()["match_type"] == "IN_ORDER"
    assert eval_metric.custom_function_path == f"{FAKES}.records_arguments"
    assert scenario is None
    first = actual[0]
    assert (first.invocation_id, first.user_content.parts[0].text, first.final_response.parts[0].text) == (
        "t0",
        "roll",
        "rolled 4",
    )
    [use] = first.intermediate_data.tool_uses
    assert (use.id, use.name, use.args) == ("c1", "roll", {"sides": 6})
    [response] = first.intermediate_data.tool_responses
    assert (response.id, response.response) == ("c1", {"result": 4})
    assert (first.duration, actual[1].duration) == (0.25, None)
    assert expected[0].intermediate_data.tool_uses[0].name == "roll"
    assert expected[0].final_response is None
    assert expected[1].final_response.parts[0].text == "done"


async def test_async_function_and_mapping_results() -> None:
    # both turns have a response → 1.0 ≥ 1 → PASSED
    result, per_turn = await score_custom(spec("async_has_response"), CASE, OUTPUTS)
    assert (result.score, result.status, per_turn) == (1.0, "passed", {})
    # a plain mapping with the status by name is read too; 0.25 ≥ 0.5 does not hold and FAILED agrees
    mapping, _ = await score_custom(spec("as_mapping", 0.5), CASE, OUTPUTS)
    assert (mapping.score, mapping.status, mapping.higher_is_better) == (0.25, "failed", True)
    assert mapping.explanation.endswith("the function's verdict FAILED (0.250 not >= 0.5)")


async def test_the_verdict_decides_and_implies_the_direction() -> None:
    # 2 calls ≤ threshold 3 → PASSED: the verdict contradicts ≥ and agrees with ≤ → lower is better
    result, _ = await score_custom(spec("lower_is_better", 3.0), CASE, OUTPUTS)
    assert (result.score, result.status, result.higher_is_better) == (2.0, "passed", False)
    assert result.explanation.endswith("(2.000 <= 3, lower is better as the verdict implies)")
    # FAILED although 0.25 ≥ 0.2: the function's verdict stands (as in adk eval), read as lower is better
    mapping, _ = await score_custom(spec("as_mapping", 0.2), CASE, OUTPUTS)
    assert (mapping.status, mapping.higher_is_better) == ("failed", False)


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (
            "returns_float",
            "returned float, expected an EvaluationResult (overall_score, overall_eval_status, per_invocation_results)",
        ),
        (
            "bad_status",
            "overall_eval_status must be an EvalStatus (PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL), found 'MAYBE'",
        ),
        ("raises", "raised ValueError: metric exploded"),
    ],
)
async def test_bad_results_and_exceptions_are_errors_naming_metric_and_path(function: str, message: str) -> None:
    result, per_turn = await score_custom(spec(function), CASE, OUTPUTS)
    assert (result.status, result.score, per_turn) == ("error", None, {})
    assert result.explanation == f"custom metric 'my_metric' ({FAKES}.{function}): {message}"


def test_paths_that_do_not_resolve_are_configuration_errors() -> None:
    assert is_custom(spec("tool_count_match"))
    assert check_custom_spec(spec("tool_count_match")) == []
    missing_module = MetricSpec(name="m", threshold=1, options={"custom_metric": {"code_config": {"name": "nope.fn"}}})
    assert check_specs([missing_module]) == [
        "custom metric 'm' (nope.fn): cannot import module 'nope': ModuleNotFoundError: No module named 'nope'"
    ]
    assert check_specs([spec("missing_function")]) == [
        f"custom metric 'my_metric' ({FAKES}.missing_function): module '{FAKES}' has no attribute 'missing_function'"
    ]
    assert check_specs([spec("NOT_A_FUNCTION")]) == [
        f"custom metric 'my_metric' ({FAKES}.NOT_A_FUNCTION): '{FAKES}.NOT_A_FUNCTION' is a int, not a function"
    ]


# --- end to end: test_config.json → evalward run ----------------------------------------------------------------

EVAL_SET = {
    "eval_set_id": "dice_custom",
    "eval_cases": [
        {
            "eval_id": "roll",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": "roll a die"}]},
                    "final_response": {"parts": [{"text": "rolled"}]},
                    "intermediate_data": {"tool_uses": [{"name": "roll", "args": {"sides": 6}}]},
                }
            ],
        }
    ],
}


def _project(tmp_path: Path, function: str) -> Path:
    (tmp_path / "dice.evalset.json").write_text(json.dumps(EVAL_SET), encoding="utf-8")
    config = {
        "criteria": {"tool_trajectory_avg_score": 1.0, "same_count": 1.0},
        "custom_metrics": {"same_count": {"code_config": {"name": f"{FAKES}.{function}"}}},
    }
    (tmp_path / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from evalward._cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out + captured.err


def test_run_scores_a_custom_metric_from_test_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, "tool_count_match")
    inputs = {"response": "rolled", "tool_calls": [{"name": "roll", "args": {"sides": 6}}]}
    agent = tmp_path / "agent.py"
    agent.write_text(f"def run(request):\n    return {inputs!r}\n", encoding="utf-8")
    code, output = _run(
        [
            "run",
            str(project / "dice.evalset.json"),
            "--agent",
            f"{agent}:run",
            "--no-history",
            "--json",
            str(tmp_path / "r.json"),
        ],
        capsys,
    )
    assert code == 0, output
    run = json.loads((tmp_path / "r.json").read_text())
    [case] = run["cases"]
    by_name = {m["name"]: m for m in case["metric_results"]}
    assert (by_name["same_count"]["score"], by_name["same_count"]["status"]) == (1.0, "passed")
    assert [r["name"] for r in case["invocations"][0]["metric_results"]][-1] == "same_count"
    assert case["status"] == "passed"


def test_run_refuses_a_custom_metric_that_does_not_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = _project(tmp_path, "missing_function")
    code, output = _run(
        ["run", str(project / "dice.evalset.json"), "--agent", "tests.fakes.agents:echo", "--no-history"], capsys
    )
    assert code == 2, output
    assert (
        f"custom metric 'same_count' ({FAKES}.missing_function): module '{FAKES}' has no attribute 'missing_function'"
        in output
    )
    assert str(project / "test_config.json") in output
