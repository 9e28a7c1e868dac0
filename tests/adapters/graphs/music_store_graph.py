"""A small real LangGraph graph in the shape of the music-store tutorial, with no model and no network.

    router ──refund──▶ refund_agent (compiled subgraph: gather_info → refund)
          └─question─▶ question_answering_agent (compiled subgraph: qa_model ⇄ tools (a real ToolNode))

`qa_model` is a scripted stand-in for a chat model: on a fresh question it asks for tool calls, after the
tool results it answers. `refund` honours the tutorial's mock mode: `configurable.env == "test"` refunds
nothing for real.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

TRACKS = {"jimi hendrix": ["Purple Haze", "Little Wing"], "the beatles": ["Yesterday"]}


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    route: str
    invoice_id: int | None
    followup: str | None


@tool
def lookup_artist(name: str) -> str:
    """Find an artist by name."""
    return name.title() if name.lower() in TRACKS else "unknown"


@tool
def lookup_tracks(artist: str) -> str:
    """List the tracks of an artist."""
    return ", ".join(TRACKS.get(artist.lower(), []))


def _question(state: State) -> str:
    return str(state["messages"][-1].content) if state.get("messages") else ""


def router(state: State) -> dict[str, Any]:
    text = next(str(m.content) for m in reversed(state["messages"]) if m.type == "human").lower()
    return {"route": "refund_agent" if "refund" in text else "question_answering_agent"}


def gather_info(state: State) -> dict[str, Any]:
    words = [w.strip(".,?") for w in _question(state).split()]
    invoice = next((int(w) for w in words if w.isdigit()), None)
    return {"invoice_id": invoice}


def refund(state: State, config: RunnableConfig) -> dict[str, Any]:
    mock = config.get("configurable", {}).get("env") == "test"
    if state.get("invoice_id") is None:
        return {"followup": "Which invoice should I refund?"}
    done = "would be refunded (mock)" if mock else "was refunded"
    return {"followup": f"Invoice {state['invoice_id']} {done}."}


def qa_model(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(content=f"Tracks: {last.content}.")]}
    artist = "jimi hendrix" if "hendrix" in str(last.content).lower() else "the beatles"
    calls = [
        {"name": "lookup_artist", "args": {"name": artist}, "id": "call_1"},
        {"name": "lookup_tracks", "args": {"artist": artist}, "id": "call_2"},
    ]
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


def _after_model(state: State) -> str:
    last = state["messages"][-1]
    return "tools" if getattr(last, "tool_calls", None) else END


def build_refund() -> Any:
    graph = StateGraph(State)
    graph.add_node("gather_info", gather_info)
    graph.add_node("refund", refund)
    graph.add_edge(START, "gather_info")
    graph.add_edge("gather_info", "refund")
    graph.add_edge("refund", END)
    return graph.compile()


def build_qa() -> Any:
    graph = StateGraph(State)
    graph.add_node("qa_model", qa_model)
    graph.add_node("tools", ToolNode([lookup_artist, lookup_tracks]))
    graph.add_edge(START, "qa_model")
    graph.add_conditional_edges("qa_model", _after_model, ["tools", END])
    graph.add_edge("tools", "qa_model")
    return graph.compile()


def build_graph() -> Any:
    graph = StateGraph(State)
    graph.add_node("router", router)
    graph.add_node("refund_agent", build_refund())
    graph.add_node("question_answering_agent", build_qa())
    graph.add_edge(START, "router")
    graph.add_conditional_edges("router", lambda s: s["route"], ["refund_agent", "question_answering_agent"])
    graph.add_edge("refund_agent", END)
    graph.add_edge("question_answering_agent", END)
    return graph.compile()


graph = build_graph()


def broken_graph() -> Any:
    def explode(state: State) -> dict[str, Any]:
        raise RuntimeError("database is locked")

    builder = StateGraph(State)
    builder.add_node("explode", explode)
    builder.add_edge(START, "explode")
    return builder.compile()
