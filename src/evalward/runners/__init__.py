"""Run the agent under test: pick a runner from the target string, run every case with the executor.

Target forms accepted by `make_agent`:

| target | runner |
| --- | --- |
| `package.module:function` | `python.PythonAgent`: import the module, call the function in-process |
| `path/to/file.py:function` | `python.PythonAgent`: load the file (its directory goes on `sys.path`) |
| `cmd:COMMAND ARGS` | `process.SubprocessAgent`: long-lived process(es) speaking JSON lines |
| `http://…`, `https://…` | `http.HttpAgent`: POST each request, read an AgentOutput |
| `replay:FILE` | `replay.ReplayAgent`: recorded outputs (run JSON, responses JSONL, OpenTelemetry traces) |
| `openai:MODEL` | `openai_agent.OpenAIAgent`: a tool-calling loop against an OpenAI-compatible endpoint |
| `adk:DIR[:ATTR]` | `adk_agent.AdkAgent`: an ADK agent package's `root_agent` through ADK's Runner (extra `adk`) |
| `langgraph:module:graph` | `langgraph_agent.LangGraphAgent`: a compiled LangGraph graph, streamed (extra `langgraph`) |
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalward.errors import UsageError
from evalward.runners.agent_contract import Agent, AgentFailure, AgentStartError
from evalward.runners.python import PythonAgent, is_dotted_name

__all__ = ["TARGET_FORMS", "Agent", "AgentFailure", "AgentStartError", "make_agent"]

TARGET_FORMS = (
    "`package.module:function`, `path/to/agent.py:function`, `cmd:COMMAND ARGS` "
    "(a process speaking JSON lines), an `http(s)://` URL, `replay:FILE`, `openai:MODEL`, "
    "`adk:path/to/agent_package` or `langgraph:module:graph`"
)
"""The accepted target forms, quoted in usage errors."""


def make_agent(
    target: str,
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    processes: int = 1,
    openai_options: Mapping[str, Any] | None = None,
) -> Agent:
    """The runner for `target` (forms in the module docstring), not yet started.

    `cwd` is where relative file paths are resolved and subprocesses run; `env` adds environment variables
    for the agent; `processes` is the size of the subprocess pool (ignored by the other runners);
    `openai_options` configures `openai:` targets (`OpenAIAgentOptions`: system_prompt, tools, max_steps, …).
    Raises `UsageError` for a target of no accepted form.
    """
    text = target.strip()
    if text.startswith("cmd:"):
        from evalward.runners.process import SubprocessAgent  # start-up: each kind loads when used (~10 ms here)

        return SubprocessAgent(text, cwd=cwd, env=env, processes=processes)
    if text.startswith(("http://", "https://")):
        from evalward.runners.http import HttpAgent  # start-up: each kind loads when used (~8 ms here)

        return HttpAgent(text)
    if text.startswith("replay:"):
        from evalward.runners.replay import ReplayAgent  # start-up: the trace readers load for replays only (~20 ms)

        if not text.removeprefix("replay:").strip():
            raise UsageError(f"agent target {target!r}: replay: needs a file, e.g. replay:runs/last.json")
        return ReplayAgent(text, cwd=cwd, env=env)
    if text.startswith("openai:"):
        # start-up: the OpenAI agent's models and client (~4 ms) load for openai: targets only.
        from evalward.runners.openai_agent import OpenAIAgent, agent_options

        return OpenAIAgent(text, options=agent_options(openai_options or {}), cwd=cwd)
    if text.startswith("adk:"):
        from evalward.runners.adk_agent import AdkAgent  # start-up: each kind loads when used (~2 ms here)

        if not text.removeprefix("adk:").strip():
            raise UsageError(f"agent target {target!r}: adk: needs an agent package, e.g. adk:agents/shop")
        return AdkAgent(text, cwd=cwd)
    if text.startswith("langgraph:"):
        from evalward.runners.langgraph_agent import LangGraphAgent  # start-up: each kind loads when used (~4 ms)

        if text.removeprefix("langgraph:").count(":") < 1:
            raise UsageError(f"agent target {target!r}: expected langgraph:module:graph or langgraph:file.py:graph")
        return LangGraphAgent(text, cwd=cwd, env=env)

    location, colon, attribute = text.rpartition(":")
    if not colon or not location or not is_dotted_name(attribute):
        raise UsageError(f"agent target {target!r} is not of an accepted form: {TARGET_FORMS}")
    if not location.endswith(".py") and not is_dotted_name(location):
        hint = " (a file path must end in `.py`)" if "/" in location or "\\" in location else ""
        raise UsageError(f"agent target {target!r}: {location!r} is not a module name{hint}; accepted: {TARGET_FORMS}")
    return PythonAgent(text, cwd=cwd, env=env)
