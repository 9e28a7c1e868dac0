"""Peers for real: evalward scores the same cases as pydantic-evals, openevals, agentevals and LangSmith do
with their own packages, and the tests compare case by case."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCallReply

REPOSITORY = Path(__file__).parents[2]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder as the working directory, importable (its evaluator modules) with tests.* importable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(REPOSITORY))
    return tmp_path


def cli(*args: str) -> int:
    """`evalward ARGS…` in process: its exit code (0 when the command returns)."""
    from evalward._cli.main import main

    try:
        main(list(args))
    except SystemExit as exited:
        return int(exited.code or 0)
    return 0


def evalward(*args: str) -> tuple[int, str, dict[str, Any]]:
    """`evalward ARGS… --json r.json` in process: exit code, output and the run's JSON report."""
    from evalward._cli.main import main

    report = Path("r.json")
    report.unlink(missing_ok=True)
    with pytest.raises(SystemExit) as exited:
        main([*args, "--json", str(report)])
    run = json.loads(report.read_text()) if report.exists() else {}
    return int(exited.value.code or 0), "", run


def results_by_case(run: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """case id → metric result name → the result (as run.json writes it)."""
    return {case["case_id"]: {r["name"]: r for r in case["metric_results"]} for case in run["cases"]}


def verdict(result: dict[str, Any]) -> Any:
    """What one evalward result says, in a peer's terms: True/False for an assertion, the number for a score,
    the text for a label, None for "does not apply"."""
    if result["status"] == "not_applicable":
        return None
    kind = result["details"]["kind"]
    if kind == "assertion":
        return result["status"] == "passed"
    if kind == "label":
        return result["details"].get("label")
    return result["score"]


def evaluate_sync(dataset: Any, task: Any) -> Any:
    """`Dataset.evaluate_sync(task)` as pydantic-evals' users call it, then closing the event loop it creates and
    leaves set (pydantic_evals._utils.get_event_loop), which would otherwise leak into later tests."""
    report = dataset.evaluate_sync(task, progress=False)
    loop = asyncio.get_event_loop_policy().get_event_loop()
    loop.close()
    asyncio.set_event_loop(None)
    return report


def grading_reply(request: dict[str, Any], grading: dict[str, Any]) -> Reply:
    """A judge's structured verdict as the client asked for it: a call of its output tool, or JSON content."""
    tools = [tool["function"]["name"] for tool in request.get("tools") or []]
    if tools:
        return Reply.calls(ToolCallReply(tools[0], grading))
    return Reply.json(grading)


def serve_judge(monkeypatch: pytest.MonkeyPatch, judge: Callable[[dict[str, Any]], Reply]) -> Iterator[FakeOpenAI]:
    """The fake OpenAI server answering as `judge`, where the peers' clients look for it (OPENAI_BASE_URL). Every
    response closes its connection: pydantic-ai caches one httpx client per provider across event loops."""
    with FakeOpenAI(models=["judge-1"], keep_alive=False) as server:
        server.responder = judge
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret-value")
        yield server
