"""`langgraph:module:graph`: run a compiled LangGraph graph per turn and record its path and tool calls.

Target: `langgraph:package.module:graph` or `langgraph:path/to/file.py:graph`; the attribute is a compiled
graph (anything with `astream`) or a factory returning one (sync or async, called with no arguments).
`langgraph` is an optional extra (`pip install 'evalward[langgraph]'`), imported only by the user's graph.

Each turn streams the graph with `astream(input, config, subgraphs=True, stream_mode=["debug", "values"])`
and records, as the music-store tutorial's trajectory recorder does:
- `trajectory`: the name of every node task, in order, in the graph and its subgraphs; after a tools node
  (named `tools`, or listed in `EVALWARD_LANGGRAPH_TOOL_NODES`) the names of the tool calls it ran;
- `tool_calls`: those calls as `ToolCall(name, args, id, agent, result)`, read from the tools node's input
  (the last message's `tool_calls`, or a single `tool_call` sent to it); `agent` is the subgraph node the
  tools node ran in (None at the top level); `step` numbers the model steps: calls run by the tools tasks
  of one superstep of one (sub)graph share one, so the parallel calls of one AI message are one step
  whether one tools task runs them all or `create_react_agent` sends one task per call; `result` is the
  content of the matching tool message in the task's result;
- `response`: the final state's `EVALWARD_LANGGRAPH_RESPONSE_KEY` (default: `followup` when set, else the
  text of the last message);
- `state`: the final state as JSON (messages as `{type, content, tool_calls?, name?}`); its other
  top-level keys holding plain JSON values also go to `outputs` (e.g. `route`, for `output_match`).

Run config (`EVALWARD_LANGGRAPH_CONFIG`, JSON; default `{"configurable": {"env": "test"}}`, the tutorial's
mock mode) gets `configurable.thread_id` = the request's session id. Graph input
(`EVALWARD_LANGGRAPH_INPUT`): `messages` (default) = the case's session state plus `{"messages": [earlier
turns' user/assistant messages…, {"role": "user", "content": query}]}` (only the new message when the
graph has a checkpointer, which keeps the thread); `inputs` = the turn's structured inputs as they are; or a
JSON template in which every string `"{query}"` is replaced by the query.

Teacher forcing (`next_action_only`, input mode `messages`): the graph gets the session state plus the whole
`history` as messages — user, AI messages with their `tool_calls` (`{name, args, id}`), tool messages with
the `tool_call_id` they answer — on a fresh thread (`configurable.thread_id` = the session id + `/step-`
the history length, so a checkpointer starts empty). evalward streams node updates (`stream_mode="updates"`,
subgraphs included) and stops at the first AI message a node other than a tools node writes, as guide 001's
harness takes the agent node's output: its `tool_calls` are the next action (all of them one step, so
parallel calls are compared together) and its text, when it calls nothing, the final response. The tools
node never runs for that message when agent and tools are nodes of the streamed graph; a tools node inside
a subgraph may already have started when the stream stops, so keep side effects behind the mock mode.
A graph that writes no AI message is run to its end and read as usual. With the `inputs` or template
input modes the history cannot be given, and the graph runs as in a normal turn.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalward.model import AgentOutput, AgentRequest, AgentTarget, Message, ToolCall, canonical_hash
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.python import describe_exception, load_python_file

PREFIX = "langgraph:"
DEFAULT_CONFIG: dict[str, Any] = {"configurable": {"env": "test"}}
DEFAULT_TOOL_NODES = ("tools",)


@dataclass(frozen=True)
class LangGraphOptions:
    """How a turn becomes graph input and how the answer is read back (env names in the module docstring)."""

    config: dict[str, Any] = field(default_factory=lambda: json.loads(json.dumps(DEFAULT_CONFIG)))
    response_key: str | None = None
    input_mode: str = "messages"
    tool_nodes: tuple[str, ...] = DEFAULT_TOOL_NODES

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LangGraphOptions:
        source = {**os.environ, **(env or {})}
        config = DEFAULT_CONFIG
        raw = source.get("EVALWARD_LANGGRAPH_CONFIG")
        if raw:
            try:
                config = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise AgentStartError(f"EVALWARD_LANGGRAPH_CONFIG is not valid JSON: {exc.msg}") from None
            if not isinstance(config, dict):
                raise AgentStartError('EVALWARD_LANGGRAPH_CONFIG must be a JSON object, e.g. {"configurable": {}}')
        nodes = tuple(n.strip() for n in source.get("EVALWARD_LANGGRAPH_TOOL_NODES", "").split(",") if n.strip())
        return cls(
            config=json.loads(json.dumps(config)),
            response_key=source.get("EVALWARD_LANGGRAPH_RESPONSE_KEY") or None,
            input_mode=source.get("EVALWARD_LANGGRAPH_INPUT") or "messages",
            tool_nodes=nodes or DEFAULT_TOOL_NODES,
        )


def to_json(value: Any) -> Any:
    """A JSON-compatible copy of graph state: messages as small dicts, models dumped, the rest as text."""
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if hasattr(value, "type") and hasattr(value, "content"):  # a LangChain message
        message: dict[str, Any] = {"type": value.type, "content": to_json(value.content)}
        for key in ("tool_calls", "name", "tool_call_id"):
            extra = getattr(value, key, None)
            if extra:
                message[key] = to_json(extra)
        return message
    if hasattr(value, "model_dump"):
        return to_json(value.model_dump())
    return str(value)


def message_text(message: Any) -> str | None:
    """The text of a message object or dict (content parts joined)."""
    content = message.get("content") if isinstance(message, Mapping) else getattr(message, "content", None)
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text", "") for p in content if isinstance(p, str | Mapping)]
        return "".join(parts)
    return str(content)


def _tool_calls_of(message: Any) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls") if isinstance(message, Mapping) else getattr(message, "tool_calls", None)
    return [c for c in calls or [] if isinstance(c, Mapping)]


def _messages_of(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        messages = value.get("messages")
        return list(messages) if isinstance(messages, list | tuple) else []
    if isinstance(value, list | tuple):  # older langgraph: task results as [(channel, value), …]
        found: list[Any] = []
        for item in value:
            if isinstance(item, list | tuple) and len(item) == 2 and item[0] == "messages":
                found.extend(item[1] if isinstance(item[1], list | tuple) else [item[1]])
        return found
    return []


class LangGraphAgent:
    """A compiled LangGraph graph behind the `Agent` protocol."""

    def __init__(
        self,
        target: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        options: LangGraphOptions | None = None,
        graph: Any = None,
    ) -> None:
        """`target` is `langgraph:module:attr` or `langgraph:file.py:attr`; pass `graph` to run one directly."""
        self._target_text = target
        self._cwd = cwd
        self._env = dict(env or {})
        self._options = options
        self._graph = graph

    @property
    def options(self) -> LangGraphOptions:
        if self._options is None:
            self._options = LangGraphOptions.from_env(self._env)
        return self._options

    @property
    def target(self) -> AgentTarget:
        try:
            options: Any = vars(self.options)
        except AgentStartError as exc:
            options = str(exc)
        return AgentTarget(
            kind="langgraph",
            target=self._target_text,
            config_hash=canonical_hash({"kind": "langgraph", "target": self._target_text, "options": options}),
        )

    async def start(self) -> None:
        _ = self.options  # bad option values fail here, before any case runs
        if self._graph is None:
            self._graph = await self._load()

    async def aclose(self) -> None:
        return None

    # --- one turn -------------------------------------------------------------------------------------------

    def _graph_input(self, request: AgentRequest) -> Any:
        mode = self.options.input_mode
        if mode == "inputs":
            return dict(request.inputs)
        if mode != "messages":
            try:
                template = json.loads(mode)
            except json.JSONDecodeError as exc:
                raise AgentFailure(
                    "agent_error", f"EVALWARD_LANGGRAPH_INPUT is neither messages, inputs nor JSON: {exc.msg}"
                ) from None
            return _fill(template, request.query)
        new = {"role": "user", "content": request.query}
        if getattr(self._graph, "checkpointer", None):
            # The checkpointer keeps the thread (thread_id = session id): send only the new message.
            return {**request.session_state, "messages": [new]} if request.turn == 0 else {"messages": [new]}
        earlier = [
            {"role": m.role, "content": m.content}
            for m in request.history
            if m.role in ("user", "assistant") and m.content
        ]
        return {**request.session_state, "messages": [*earlier, new]}

    def _config(self, request: AgentRequest) -> dict[str, Any]:
        config: dict[str, Any] = json.loads(json.dumps(self.options.config))
        configurable = config.setdefault("configurable", {})
        if isinstance(configurable, dict):
            configurable.setdefault("thread_id", request.session_id)
        return config

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        if self._graph is None:
            await self.start()
        if request.next_action_only and self.options.input_mode == "messages":
            return await self._next_action(request)

        trajectory: list[str] = []
        calls: list[ToolCall] = []
        pending: dict[str, list[int]] = {}  # tools task id -> indexes of its calls in `calls`
        steps_seen: dict[tuple[Any, ...], int] = {}  # (namespace, superstep) of tools tasks -> step number
        final_state: Any = None
        try:
            stream = self._graph.astream(
                self._graph_input(request),
                self._config(request),
                subgraphs=True,
                stream_mode=["debug", "values"],
            )
            async for item in stream:
                namespace, mode, chunk = item
                if mode == "values":
                    if not namespace:
                        final_state = chunk
                    continue
                if not isinstance(chunk, Mapping):
                    continue
                payload = chunk.get("payload") or {}
                name = payload.get("name")
                if chunk.get("type") == "task" and isinstance(name, str):
                    trajectory.append(name)
                    if name in self.options.tool_nodes:
                        # Tools tasks of one superstep ran one model step's calls (create_react_agent sends
                        # each parallel call to a task of its own): they share a step number.
                        superstep = chunk.get("step", payload.get("id"))
                        step = steps_seen.setdefault((tuple(namespace), superstep), len(steps_seen))
                        issued = self._issued_calls(payload.get("input"), namespace, step=step)
                        trajectory.extend(c.name for c in issued)
                        pending[str(payload.get("id"))] = list(range(len(calls), len(calls) + len(issued)))
                        calls.extend(issued)
                elif chunk.get("type") == "task_result" and str(payload.get("id")) in pending:
                    _attach_results(calls, pending.pop(str(payload.get("id"))), payload)
        except AgentFailure:
            raise
        except Exception as exc:
            raise AgentFailure("agent_error", describe_exception(exc)) from exc
        return self._output(final_state, trajectory, calls)

    async def _next_action(self, request: AgentRequest) -> AgentOutput:
        """Teacher forcing: the first AI message the graph writes after `history` (module docstring)."""
        config = self._config(request)
        configurable = config.setdefault("configurable", {})
        if isinstance(configurable, dict):
            configurable["thread_id"] = f"{request.session_id}/step-{len(request.history)}"
        graph_input = {**request.session_state, "messages": [graph_message(m) for m in request.history]}
        trajectory: list[str] = []
        found: tuple[Any, tuple[str, ...]] | None = None
        try:
            stream = self._graph.astream(graph_input, config, subgraphs=True, stream_mode=["updates"])
            try:
                async for namespace, _mode, chunk in stream:
                    if not isinstance(chunk, Mapping):
                        continue
                    for node, update in chunk.items():
                        if str(node).startswith("__"):
                            continue
                        trajectory.append(str(node))
                        if node in self.options.tool_nodes:
                            continue
                        message = _last_ai_message(update)
                        if message is not None:
                            found = (message, tuple(namespace))
                            break
                    if found is not None:
                        break
            finally:
                await stream.aclose()
        except AgentFailure:
            raise
        except Exception as exc:
            raise AgentFailure("agent_error", describe_exception(exc)) from exc
        if found is None:  # no AI message anywhere: run the turn as usual and let the scorer read it
            return await self.run_turn(request.model_copy(update={"next_action_only": False}))
        message, namespace = found
        agent = namespace[-1].split(":", 1)[0] if namespace else None
        calls = [
            ToolCall(
                name=str(call.get("name", "")),
                args=dict(call["args"]) if isinstance(call.get("args"), Mapping) else None,
                id=str(call["id"]) if call.get("id") else None,
                agent=agent,
                step=0,
            )
            for call in _tool_calls_of(message)
        ]
        text = message_text(message)
        return AgentOutput(
            response=None if calls and not text else text,
            tool_calls=calls,
            trajectory=trajectory,
        )

    @staticmethod
    def _issued_calls(task_input: Any, namespace: tuple[str, ...], *, step: int) -> list[ToolCall]:
        agent = namespace[-1].split(":", 1)[0] if namespace else None
        raw_calls: list[Mapping[str, Any]] = []
        if isinstance(task_input, Mapping) and isinstance(task_input.get("tool_call"), Mapping):
            raw_calls = [task_input["tool_call"]]  # a Send of one call to the tools node
        else:
            messages = _messages_of(task_input)
            if messages:
                raw_calls = _tool_calls_of(messages[-1])
        return [
            ToolCall(
                name=str(call.get("name", "")),
                args=dict(call["args"]) if isinstance(call.get("args"), Mapping) else None,
                id=str(call["id"]) if call.get("id") else None,
                agent=agent,
                step=step,
            )
            for call in raw_calls
        ]

    def _output(self, state: Any, trajectory: list[str], calls: list[ToolCall]) -> AgentOutput:
        response: str | None = None
        key = self.options.response_key
        if isinstance(state, Mapping):
            if key is not None:
                value = state.get(key)
                if isinstance(value, list) and value:
                    value = value[-1]  # a message list: its last message
                if value is None or isinstance(value, str):
                    response = value
                elif hasattr(value, "content") or (isinstance(value, Mapping) and "content" in value):
                    response = message_text(value)
                else:
                    response = json.dumps(to_json(value), ensure_ascii=False)
            elif state.get("followup"):
                response = str(state["followup"])
            else:
                messages = state.get("messages")
                if isinstance(messages, list) and messages:
                    response = message_text(messages[-1])
        json_state = to_json(state) if state is not None else None
        outputs: dict[str, Any] = {}
        if isinstance(json_state, dict):
            outputs = {
                k: v
                for k, v in json_state.items()
                if k not in ("messages", key) and (v is None or isinstance(v, str | int | float | bool))
            }
        return AgentOutput(
            response=response, tool_calls=calls, trajectory=trajectory, state=json_state, outputs=outputs
        )

    # --- loading --------------------------------------------------------------------------------------------

    async def _load(self) -> Any:
        location, colon, attribute = self._target_text.removeprefix(PREFIX).strip().rpartition(":")
        if not colon or not location or not attribute:
            raise AgentStartError(
                f"agent {self._target_text!r}: expected langgraph:module:graph or langgraph:path/to/file.py:graph"
            )
        module = self._load_file(location) if location.endswith(".py") else self._load_module(location)
        obj: Any = module
        for part in attribute.split("."):
            if not hasattr(obj, part):
                raise AgentStartError(f"agent {self._target_text!r}: {location} has no attribute {attribute!r}")
            obj = getattr(obj, part)
        if not hasattr(obj, "astream") and callable(obj):
            try:
                obj = obj()
                if inspect.isawaitable(obj):
                    obj = await obj
            except Exception as exc:
                raise AgentStartError(f"agent {self._target_text!r}: the graph factory failed: {exc}") from exc
        if not hasattr(obj, "astream"):
            raise AgentStartError(
                f"agent {self._target_text!r}: {attribute} is a {type(obj).__name__}, not a compiled graph "
                "(call .compile() on the StateGraph, or point at a function returning the compiled graph)"
            )
        return obj

    def _base(self) -> Path:
        return (self._cwd or Path.cwd()).resolve()

    def _load_file(self, location: str) -> Any:
        path = Path(location)
        path = (path if path.is_absolute() else self._base() / path).resolve()
        if not path.is_file():
            raise AgentStartError(f"agent {self._target_text!r}: file not found: {path}")
        return load_python_file(path, namespace="graph", what=f"agent {self._target_text!r}", describe=_import_hint)

    def _load_module(self, location: str) -> Any:
        if str(self._base()) not in sys.path:
            sys.path.insert(0, str(self._base()))
        try:
            return importlib.import_module(location)
        except Exception as exc:
            raise AgentStartError(
                f"agent {self._target_text!r}: importing module {location!r} failed: {_import_hint(exc)}"
            ) from exc


def _import_hint(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in ("langgraph", "langchain_core"):
        text += " (install the extra: pip install 'evalward[langgraph]')"
    return text


def graph_message(message: Message) -> dict[str, Any]:
    """An evalward `Message` as a message dict LangGraph's `add_messages` turns into a LangChain message:
    AI messages keep their calls as `tool_calls: [{name, args, id}]`, tool messages their `tool_call_id`."""
    out: dict[str, Any] = {"role": message.role, "content": message.content or ""}
    if message.role == "assistant" and message.tool_calls:
        out["tool_calls"] = [
            {"name": c.name, "args": dict(c.args or {}), "id": c.id or f"call_{k}"}
            for k, c in enumerate(message.tool_calls)
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id or ""
        if message.name:
            out["name"] = message.name
    elif message.name and message.role != "system":
        out["name"] = message.name
    return out


def _is_ai_message(message: Any) -> bool:
    if isinstance(message, Mapping):
        return message.get("role", message.get("type")) in ("assistant", "ai")
    return getattr(message, "type", None) in ("ai", "AIMessageChunk")


def _last_ai_message(update: Any) -> Any:
    """The last AI message a node's update writes (its `messages`, a list or a single message), or None."""
    if isinstance(update, Mapping):
        written = update.get("messages")
    elif isinstance(update, list | tuple):  # a MessageGraph node returns messages directly
        written = update
    else:
        written = update if hasattr(update, "content") else None
    if written is None:
        return None
    messages = list(written) if isinstance(written, list | tuple) else [written]
    return next((m for m in reversed(messages) if _is_ai_message(m)), None)


def _fill(template: Any, query: str) -> Any:
    if isinstance(template, str):
        return template.replace("{query}", query)
    if isinstance(template, list):
        return [_fill(v, query) for v in template]
    if isinstance(template, dict):
        return {k: _fill(v, query) for k, v in template.items()}
    return template


def _attach_results(calls: list[ToolCall], indexes: list[int], payload: Mapping[str, Any]) -> None:
    """Fill the `result` of `calls[i]` (i in `indexes`) from the tool messages the tools task wrote, by call id.

    A task that raised marks its calls without a result as `error`, with the error text as the result.
    """
    by_id: dict[str, str | None] = {}
    for message in _messages_of(payload.get("result")):
        call_id = (
            message.get("tool_call_id") if isinstance(message, Mapping) else getattr(message, "tool_call_id", None)
        )
        if call_id:
            by_id[str(call_id)] = message_text(message)
    for index in indexes:
        call = calls[index]
        if call.id and call.id in by_id:
            calls[index] = call.model_copy(update={"result": by_id[call.id]})
        elif payload.get("error"):
            calls[index] = call.model_copy(update={"status": "error", "result": str(payload["error"])})
