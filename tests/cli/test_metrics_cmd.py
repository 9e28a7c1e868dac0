"""`evalward metrics`: every registered metric is listed with its scope, direction and one-line summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalward._cli.main import cli, main


def test_new_metrics_are_listed_with_direction_and_summary() -> None:
    result = CliRunner().invoke(cli, ["metrics"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert lines["trajectory_weighted_f1"].endswith(
        "[turn] F1 of P = Σcredit/n and R = Σcredit/m over a maximum-weight matching"
    )
    assert "[turn] every call is on the allowlist" in lines["allowed_tools"]
    assert "[turn] agent handoff sequence vs expected agents" in lines["handoff_match"]
    assert lines["step_ratio"].endswith(
        "[turn] (lower is better) n/m: actual calls (or steps) per expected one (threshold = maximum)"
    )
    assert "[turn] (lower is better) calls repeating an earlier call" in lines["redundant_calls"]
    assert "[turn] (lower is better) tool calls that failed" in lines["error_calls"]
    assert "(lower is better) ADK efficiency: tool calls per turn" in lines["tool_call_count_v1"]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out + captured.err


def _eval_file(tmp_path: Path) -> Path:
    path = tmp_path / "search.eval.json"
    case = {
        "id": "s",
        "query": "find a",
        "inputs": {"tool_calls": [{"name": "search", "args": {"q": "a", "lang": "fr"}}]},
        "expect": {"tool_calls": [{"name": "search", "args": {"q": "a", "lang": "en"}}]},
    }
    path.write_text(json.dumps({"evalward": 1, "metrics": [], "cases": [case]}), encoding="utf-8")
    return path


def test_metric_option_accepts_the_new_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.json"
    code, output = _run(
        [
            "run",
            str(_eval_file(tmp_path)),
            "--agent",
            "tests.fakes.agents:echo",
            "--no-history",
            "-q",
            "--json",
            str(out),
            "--metric",
            "trajectory_weighted_f1=0.5",
            "--metric",
            "redundant_calls=0",
        ],
        capsys,
    )
    assert code == 0, output
    [case] = json.loads(out.read_text())["cases"]
    # hand calculation: one search pair, q matches of {q, lang} → credit 1/2; n = m = 1 → F1 = 0.5 ≥ 0.5
    assert case["metrics"] == {"trajectory_weighted_f1": 0.5, "redundant_calls": 0.0}
    assert case["status"] == "passed"


def test_metric_option_refuses_a_threshold_on_an_adk_efficiency_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _run(
        [
            "run",
            str(_eval_file(tmp_path)),
            "--agent",
            "tests.fakes.agents:echo",
            "--no-history",
            "--metric",
            "token_usage_v1=100",
        ],
        capsys,
    )
    assert code == 2, output
    assert (
        "token_usage_v1 does not support a threshold (found 100): it reports a value and never passes or fails"
        in output
    )
