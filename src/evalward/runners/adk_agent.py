"""`adk:path/to/agent_package`: run a Google ADK agent through ADK's own Runner, as `adk eval` does.

Target: `adk:DIR` (an agent package folder, as `adk eval DIR` takes: its `__init__.py` imports `agent`,
whose `root_agent` is the agent), `adk:file.py`, or `adk:package.module`; `:ATTRIBUTE` names another
attribute than `root_agent`. `google-adk` is an optional extra (`pip install 'evalward[adk]'`), imported
only when such a target starts.

One Runner and one in-memory session service serve the whole run (a Runner serves many sessions at once;
`adk eval` builds one per case, which only costs time). Per case × repetition (one `session_id` of the
executor), on its first turn a fresh session is created with the case's initial state
(`session_input.state`), so what a case writes to its session is seen by its later turns and by no other
case, as in `adk eval` (where, too, `user:` and `app:` state is shared by every case of the run). Every turn
sends the query as a user message through `Runner.run_async` and reads the events the way ADK's evaluation
does (docs/formats.md §3.2, §6.1):
- `tool_calls`: every `function_call` part of every event, in order, from any author (sub-agents,
  `transfer_to_agent`, and agents used as tools), as `ToolCall(name, args, agent=author, id)`; the
  matching `function_response` (by id) becomes its `result`;
- `response`: the last final-response event of the turn's own run with content, preferring one with text
  (a later event without text does not replace one with text); its text parts joined with `"\\n"`;
- `intermediate_responses`: the text of every other event with text, by author, with `calls_before` = the
  function calls of the events before it (where it stands in the turn, as ADK's hallucinations judge reads it);
- `agents`: the authors of the events, in order of appearance; `state`: the session state afterwards;
- `usage`: `model_requests` = events carrying usage metadata or a model version (ADK's count of model
  calls, `inference_call_count_v1`: 0 for an agent that never called a model); input tokens = prompt +
  tool-use prompt tokens, output tokens = candidates + thoughts tokens, summed over the usage metadata, None
  when no event reported them (n/a, as ADK's `token_usage_v1`).

Agents used as tools (`AgentTool`) run in a runner of their own, whose events never reach the caller;
ADK's own evaluation therefore misses the calls made inside them (google/adk-python#3493). evalward adds
an observing plugin to the runner (ADK hands plugins down to agent-tool runners) that sees every event of
the turn, inner runners included, so those calls are recorded too — in the order they happened. This is
the one place where evalward's trajectory can differ from `adk eval`'s on the same agent.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from evalward.model import AgentOutput, AgentRequest, AgentTarget, IntermediateResponse, ToolCall, Usage, canonical_hash
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.python import describe_exception, load_python_file

PREFIX = "adk:"
APP_NAME = "evalward"
USER_ID = "test_user"

_turn_events: ContextVar[list[Any] | None] = ContextVar("evalward_adk_turn_events", default=None)
"""The events seen by the observing plugin during the turn running in this context (agent tools included)."""


def _observer_plugin() -> Any:
    """An ADK plugin that appends every event of the current turn to `_turn_events` (never changes one)."""
    from google.adk.plugins.base_plugin import BasePlugin

    class _EvalwardObserver(BasePlugin):
        async def on_event_callback(self, *, invocation_context: Any, event: Any) -> None:
            seen = _turn_events.get()
            if seen is not None:
                seen.append(event)

    return _EvalwardObserver(name="evalward_observer")


def _split_target(text: str) -> tuple[str, str]:
    location = text.removeprefix(PREFIX).strip()
    head, colon, attribute = location.rpartition(":")
    if colon and head and attribute.isidentifier():
        return head, attribute
    return location, "root_agent"


def extract_output(events: list[Any], state: Any = None, *, own: set[str] | None = None) -> AgentOutput:
    """An `AgentOutput` from one turn's ADK events (rules in the module docstring).

    `own` holds the ids of the events the turn's own run yielded; only those can be the final
    response (None: every event can).
    """
    calls: list[ToolCall] = []
    results: dict[str, Any] = {}
    agents: list[str] = []
    final_event: Any = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    requests = 0
    for event in events:
        author = getattr(event, "author", None) or ""
        if author.lower() == "user":
            continue
        if author and author not in agents:
            agents.append(author)
        usage = getattr(event, "usage_metadata", None)
        if usage is not None or getattr(event, "model_version", None) is not None:
            requests += 1
        if usage is not None:
            # ADK's buckets (telemetry TokenUsage): input = prompt + server-side tool prompt tokens,
            # output = candidates + thoughts; a bucket nothing reported stays None.
            inputs = [getattr(usage, k, None) for k in ("prompt_token_count", "tool_use_prompt_token_count")]
            outputs = [getattr(usage, k, None) for k in ("candidates_token_count", "thoughts_token_count")]
            if any(v is not None for v in inputs):
                input_tokens = (input_tokens or 0) + sum(v or 0 for v in inputs)
            if any(v is not None for v in outputs):
                output_tokens = (output_tokens or 0) + sum(v or 0 for v in outputs)
        content = getattr(event, "content", None)
        parts = list(getattr(content, "parts", None) or [])
        if not parts:
            continue
        for part in parts:
            call = getattr(part, "function_call", None)
            if call is not None:
                calls.append(
                    ToolCall(
                        name=call.name or "",
                        args=dict(call.args) if call.args is not None else None,
                        agent=author or None,
                        id=call.id,
                    )
                )
            response = getattr(part, "function_response", None)
            if response is not None and response.id:
                results[response.id] = response.response
        if event.is_final_response() and (own is None or getattr(event, "id", None) in own):
            final_has_text = final_event is not None and _text(final_event) is not None
            if not final_has_text or _text(event) is not None:
                final_event = event
    calls = [c.model_copy(update={"result": results[c.id]}) if c.id in results else c for c in calls]
    intermediate: list[IntermediateResponse] = []
    calls_so_far = 0
    for event in events:
        author = getattr(event, "author", "") or ""
        if author.lower() == "user":
            continue
        if event is not final_event and (text := _text(event)) is not None:
            intermediate.append(IntermediateResponse(author=event.author, text=text, calls_before=calls_so_far))
        parts = getattr(getattr(event, "content", None), "parts", None) or []
        calls_so_far += sum(1 for part in parts if getattr(part, "function_call", None) is not None)
    return AgentOutput(
        response=_text(final_event) if final_event is not None else None,
        tool_calls=calls,
        agents=agents or None,
        intermediate_responses=intermediate,
        state=state,
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens, model_requests=requests),
    )


def _text(event: Any) -> str | None:
    """ADK's text of an event's content: non-empty text parts joined with newlines; None when there is none."""
    content = getattr(event, "content", None)
    texts = [p.text for p in getattr(content, "parts", None) or [] if getattr(p, "text", None)]
    return "\n".join(texts) if texts else None


class AdkAgent:
    """An ADK agent behind the `Agent` protocol."""

    def __init__(self, target: str, *, cwd: Path | None = None, agent: Any = None) -> None:
        """`target` is `adk:DIR|file.py|module[:ATTRIBUTE]`; pass `agent` to run an ADK agent object directly."""
        self._target_text = target
        self._cwd = cwd
        self._root: Any = agent
        self._runner: Any = None
        self._sessions: Any = None
        self._created: set[str] = set()
        self._state_only: Any = None

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(
            kind="adk",
            target=self._target_text,
            config_hash=canonical_hash({"kind": "adk", "target": self._target_text}),
        )

    async def start(self) -> None:
        if self._runner is not None:
            return
        try:
            from google.adk.runners import Runner
            from google.adk.sessions import InMemorySessionService
            from google.adk.sessions.base_session_service import GetSessionConfig
        except ImportError as exc:
            raise AgentStartError(
                f"agent {self._target_text!r} needs google-adk: pip install 'evalward[adk]' ({exc})"
            ) from exc
        if self._root is None:
            self._root = self._load()
        self._sessions = InMemorySessionService()
        self._state_only = GetSessionConfig(num_recent_events=0)
        self._runner = Runner(
            app_name=APP_NAME, agent=self._root, session_service=self._sessions, plugins=[_observer_plugin()]
        )

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        if self._runner is None:
            await self.start()
        from google.genai import types

        try:
            if request.session_id not in self._created:
                await self._sessions.create_session(
                    app_name=APP_NAME,
                    user_id=USER_ID,
                    state=dict(request.session_state),
                    session_id=request.session_id,
                )
                self._created.add(request.session_id)
            message = types.Content(role="user", parts=[types.Part(text=request.query)])
            observed: list[Any] = []
            token = _turn_events.set(observed)
            try:
                events = [
                    event
                    async for event in self._runner.run_async(
                        user_id=USER_ID, session_id=request.session_id, new_message=message
                    )
                ]
            finally:
                _turn_events.reset(token)
            # Only the state is read: without events the session service copies no event of the case.
            session = await self._sessions.get_session(
                app_name=APP_NAME, user_id=USER_ID, session_id=request.session_id, config=self._state_only
            )
        except Exception as exc:
            raise AgentFailure("agent_error", describe_exception(exc)) from exc
        state = _json_state(getattr(session, "state", None))
        own = {event.id for event in events}
        # The observer saw the same events (plus agent-tool runs); without it (a custom App) use what ran.
        return extract_output(observed if observed else events, state, own=own)

    async def aclose(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None and hasattr(runner, "close"):
            await runner.close()

    # --- loading --------------------------------------------------------------------------------------------

    def _load(self) -> Any:
        location, attribute = _split_target(self._target_text)
        base = (self._cwd or Path.cwd()).resolve()
        path = Path(location)
        path = path if path.is_absolute() else base / path
        try:
            if path.is_dir():
                module = self._import_package(path)
            elif location.endswith(".py"):
                module = self._import_file(path)
            else:
                if str(base) not in sys.path:
                    sys.path.insert(0, str(base))
                module = importlib.import_module(location)
        except AgentStartError:
            raise
        except Exception as exc:
            raise AgentStartError(f"agent {self._target_text!r}: importing {location} failed: {exc}") from exc
        for owner in (module, getattr(module, "agent", None)):
            if owner is not None and hasattr(owner, attribute):
                return getattr(owner, attribute)
        app = getattr(getattr(module, "agent", None), "app", None) or getattr(module, "app", None)
        wrapped = getattr(app, "root_agent", None)
        if attribute == "root_agent" and wrapped is not None:
            return wrapped  # an `App` wrapping the agent, as `adk eval` accepts
        raise AgentStartError(
            f"agent {self._target_text!r}: no {attribute!r} in {location} (nor in its `agent` module); "
            "an ADK agent package defines root_agent in agent.py and imports it in __init__.py"
        )

    def _import_package(self, path: Path) -> Any:
        if not (path / "__init__.py").is_file() and not (path / "agent.py").is_file():
            raise AgentStartError(f"agent {self._target_text!r}: {path} has neither __init__.py nor agent.py")
        parent = str(path.resolve().parent)
        if parent not in sys.path:
            sys.path.insert(0, parent)
        module = importlib.import_module(path.resolve().name)
        if not hasattr(module, "agent") and (path / "agent.py").is_file():
            importlib.import_module(f"{path.resolve().name}.agent")
        return module

    def _import_file(self, path: Path) -> Any:
        if not path.is_file():
            raise AgentStartError(f"agent {self._target_text!r}: file not found: {path}")
        return load_python_file(path, namespace="adk", what=f"agent {self._target_text!r}")


def _json_state(state: Any) -> Any:
    if state is None:
        return None
    if isinstance(state, Mapping):
        return {str(k): v for k, v in state.items()}
    try:
        return dict(state)
    except (TypeError, ValueError):
        return None
