"""Seed 001's search agent, offline: one scripted policy behind a LangGraph graph and a plain Python agent.

The policy answers guide 001's two questions the way a tool-calling model would, looking only at the
messages so far (so teacher forcing can start it anywhere in a trajectory):
- Dune 2: search the director, then the director's brother, then the brother's birthday, then answer
  "45". The brother search is a paraphrase of the seed's reference query: "Denis Villeneuve brother"
  where the recorded trajectory has "Denis Villanueve Brother" — an exact comparison fails that step, a
  judge of "sufficiently similar" passes it.
- SF/LA: two searches in one AI message (parallel calls), then the difference.

`search` returns the seed's recorded outputs, so a free run sees what the reference saw.

Three targets over the same policy:
- `react_graph`: `langgraph.prebuilt.create_react_agent` with a fake chat model; it sends each parallel
  call to a tools task of its own;
- `state_graph`: a hand-built `StateGraph` (agent ⇄ a real `ToolNode`, which runs parallel calls in one task);
- `python_agent`: a Python callable for `--agent file.py:python_agent`, honouring `next_action_only`.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

TOOL = "tavily_search_results_json"

RESULTS: dict[str, dict[str, Any]] = {
    "dune 2 director": {"results": ["The director is Denis Villanueve"]},
    "Denis Villeneuve brother": {"results": ["Denis Villanueve' brother is Martin Villanueve"]},
    "Denis Villanueve Brother": {"results": ["Denis Villanueve' brother is Martin Villanueve"]},
    "Martin Villanueve Birthday": {"results": ["Martin Villanueve's brother is March 13th, 1978"]},
    "temperature in SF": {"results": ["the tempareture in SF is 75 degrees Fahrenheit"]},
    "temperature in LA": {"results": ["the temperature in LA is 89 degrees Fahrenheit"]},
}
"""The seed's recorded tool outputs, by query (the paraphrase finds what the reference query found)."""

SEARCHES: list[str] = []
"""Every query `search` actually ran (teacher forcing must run none)."""


@tool(TOOL)
def search(query: str) -> str:
    """A web search."""
    SEARCHES.append(query)
    return json.dumps(RESULTS.get(query, {"results": []}))


def policy(messages: Sequence[tuple[str, str]]) -> list[str] | str:
    """The next action after `messages` ((role, text) pairs): queries to search (one model step), or the answer."""
    role, text = messages[-1]
    if role == "user":
        if "Dune 2" in text:
            return ["dune 2 director"]
        if "SF and LA" in text:
            return ["temperature in SF", "temperature in LA"]
        return "I don't know."
    if "director is Denis" in text:
        return ["Denis Villeneuve brother"]
    if "brother is Martin" in text:
        return ["Martin Villanueve Birthday"]
    if "March 13th, 1978" in text:
        return "45"
    if "temperature" in text or "tempareture" in text:
        return "The difference in temperatures is 14 degrees Fahrenheit"
    return "I don't know."


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers by `policy`, with every search of a step as a tool call of one AI message."""

    @property
    def _llm_type(self) -> str:
        return "scripted-search"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        seen = [(_ROLES.get(m.type, m.type), str(m.content)) for m in messages if m.type in _ROLES]
        action = policy(seen)
        if isinstance(action, str):
            message = AIMessage(content=action)
        else:
            step = len([m for m in messages if m.type == "ai"])
            calls = [{"name": TOOL, "args": {"query": q}, "id": f"call_{step}_{k}"} for k, q in enumerate(action)]
            message = AIMessage(content="", tool_calls=calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _react_graph() -> Any:
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in LangGraph 1.0
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(ScriptedChatModel(), [search])


def _state_graph() -> Any:
    model = ScriptedChatModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([search]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    return builder.compile()


react_graph = _react_graph()
state_graph = _state_graph()


def python_agent(request: dict[str, Any]) -> dict[str, Any]:
    """The same policy as a plain Python agent: with `next_action_only`, the next action after `history`;
    otherwise the whole run (searches executed on the recorded outputs, steps numbered)."""
    messages: list[tuple[str, str]] = [(m["role"], m.get("content") or "") for m in request["history"]]
    if request.get("next_action_only"):
        action = policy(messages)
        if isinstance(action, str):
            return {"response": action}
        return {"tool_calls": [{"name": TOOL, "args": {"query": q}, "step": 0} for q in action]}
    messages.append(("user", request["query"]))
    calls: list[dict[str, Any]] = []
    for step in range(10):
        action = policy(messages)
        if isinstance(action, str):
            return {"response": action, "tool_calls": calls}
        for query in action:
            result = json.dumps(RESULTS.get(query, {"results": []}))
            calls.append({"name": TOOL, "args": {"query": query}, "step": step, "result": result})
            messages.append(("tool", result))
    return {"response": None, "tool_calls": calls}
