"""Optional features live behind extras (pyproject.toml), and each says which extra to install when its
packages are missing, instead of a traceback or a bare `No module named …`.

A missing package is simulated by putting None in `sys.modules` (Python's import then raises
ModuleNotFoundError), so these run in the full test environment where every extra is installed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from evalward.errors import InfrastructureError, UsageError
from evalward.metrics.args import ArgsRule, MatcherError, check_matchers, compare_args
from evalward.model import MetricSpec
from evalward.runners import AgentStartError


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `import module` fail as it would if the module's distribution were not installed."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("missing", ["starlette", "uvicorn", "jwt", "cryptography"])
def test_serve_names_the_server_extra(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    from evalward._cli.serve_cmd import require_server_extra

    require_server_extra()  # everything present: no complaint
    hide(monkeypatch, missing)
    with pytest.raises(UsageError) as caught:
        require_server_extra()
    assert str(caught.value) == (
        f"evalward serve needs the server extra ({missing} not installed): pip install 'evalward[server]'"
    )


def test_postgresql_without_its_driver_names_the_postgres_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.store import open_store

    hide(monkeypatch, "psycopg")
    # The driver is imported when the engine is created, before any connection: no server is needed.
    with pytest.raises(InfrastructureError) as caught:
        open_store("postgresql://nobody@127.0.0.1:9/none")
    assert str(caught.value) == (
        "PostgreSQL needs the postgres extra (the psycopg driver is not installed): pip install 'evalward[postgres]'"
    )


def test_schema_matcher_names_the_jsonschema_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    hide(monkeypatch, "jsonschema")
    message = "$.v: $schema needs the jsonschema extra: pip install 'evalward[jsonschema]'"
    expected = {"v": {"$schema": {"type": "integer"}}}
    # Up front (validate, and a run's option check) ...
    assert check_matchers(expected) == [message]
    # ... and when scoring.
    with pytest.raises(MatcherError) as caught:
        compare_args({"v": 1}, expected, ArgsRule(mode="exact"))
    assert str(caught.value) == message
    # Matchers other than $schema do not need it.
    assert check_matchers({"v": {"$type": "integer"}}) == []


def test_adk_agent_names_the_adk_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.runners.adk_agent import AdkAgent

    hide(monkeypatch, "google.adk.runners")
    with pytest.raises(AgentStartError, match=r"needs google-adk: pip install 'evalward\[adk\]'"):
        asyncio.run(AdkAgent("adk:agents/shop").start())


def test_adk_custom_metric_names_the_adk_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.metrics.custom import check_custom_spec

    hide(monkeypatch, "google.adk.evaluation")
    spec = MetricSpec(name="mine", options={"custom_metric": {"code_config": {"name": "json.dumps"}}})
    assert check_custom_spec(spec) == [
        "ADK custom metrics receive google-adk objects; install google-adk (pip install 'evalward[adk]')"
    ]


def test_langgraph_agent_names_the_langgraph_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from evalward.runners.langgraph_agent import LangGraphAgent

    graph = tmp_path / "graph.py"
    graph.write_text("from langgraph.graph import StateGraph\n\ngraph = StateGraph(dict).compile()\n")
    hide(monkeypatch, "langgraph", "langgraph.graph")
    with pytest.raises(AgentStartError, match=r"\(install the extra: pip install 'evalward\[langgraph\]'\)"):
        asyncio.run(LangGraphAgent(f"langgraph:{graph}:graph").start())
