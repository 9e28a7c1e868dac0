"""Failed tool calls reported over the agent protocol (`"status": "error"`, the error as `result`) reach the
efficiency metrics end to end: `evalward run` → JSON-lines subprocess or HTTP agent → `error_calls`,
`redundant_calls`, `step_ratio`, `allowed_tools`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.http_agent import FakeHttpAgent

from evalward._cli.main import main

CALLS = [
    {"name": "lookup", "args": {"order": 2}, "status": "error", "result": "order 2 not found"},
    {"name": "lookup", "args": {"order": 2}},
    {"name": "lookup", "args": {"order": 2}},
    {"name": "refund", "args": {"order": 2}},
]
EVAL = {
    "evalward": 1,
    "eval_set_id": "refunds",
    "metrics": [
        {"name": "error_calls", "threshold": 0},
        {"name": "redundant_calls", "threshold": None},
        {"name": "step_ratio", "threshold": None},
        {"name": "allowed_tools", "tools": ["lookup", "refund"]},
    ],
    "cases": [
        {
            "id": "refund",
            "query": "refund order 2",
            "inputs": {"tool_calls": CALLS},
            "expect": {"tool_calls": [{"name": "lookup"}, {"name": "refund"}]},
        }
    ],
}


def run(tmp_path: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    path = tmp_path / "refunds.eval.json"
    path.write_text(json.dumps(EVAL), encoding="utf-8")
    out = tmp_path / "run.json"
    with pytest.raises(SystemExit) as exited:
        main(["run", str(path), "--agent", agent, "--no-history", "--json", str(out), "-q"])
    captured = capsys.readouterr()
    # the failed lookup makes error_calls exceed its maximum of 0 → the case fails (exit 1)
    assert exited.value.code == 1, captured.out + captured.err
    [case] = json.loads(out.read_text())["cases"]
    return {m["name"]: m for m in case["metric_results"]}


def check(metrics: dict[str, Any]) -> None:
    errors = metrics["error_calls"]
    assert (errors["score"], errors["status"]) == (1.0, "failed")
    assert errors["details"]["failed"] == [{"index": 0, "call": "lookup(order=2)", "error": "order 2 not found"}]
    assert errors["explanation"] == "1 of 4 call(s) failed (lookup(order=2)); 1.000 not <= 0"
    # the retry after the error is not redundant; the third lookup repeats the successful second one
    redundant = metrics["redundant_calls"]
    assert (redundant["score"], redundant["status"]) == (1.0, "informational")
    # 4 calls (the failed one counts in budgets) over 2 expected
    assert metrics["step_ratio"]["score"] == 2.0
    assert (metrics["allowed_tools"]["score"], metrics["allowed_tools"]["status"]) == (1.0, "passed")


def test_json_lines_agent_reports_failed_calls(
    tmp_path: Path, jsonl_agent_target: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    check(run(tmp_path, jsonl_agent_target(), capsys))


def test_http_agent_reports_failed_calls(
    tmp_path: Path, http_agent: FakeHttpAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    check(run(tmp_path, http_agent.url, capsys))
