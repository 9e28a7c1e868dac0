"""`--agent openai:MODEL`: a model-driven agent — a tool-calling loop against an OpenAI-compatible endpoint.

Per turn: messages = [system prompt (from `--system-prompt FILE`)] + the request's history (user,
assistant tool calls, tool results, answers) + the user's query; then up to `max_steps` model steps:
1. ask the model with the declared tools (`tool_choice: auto`);
2. no tool call → its content is the turn's response; done;
3. tool calls → each becomes a `ToolCall` (`step` = the model step, so parallel calls share it) with its
   mocked result; the assistant message and one tool message per call are appended; next step.
More than `max_steps` steps is an `agent_error` (the calls made are named in the message).
With `next_action_only` (teacher forcing) the history already ends with the user message and a reference
prefix; the first model step is returned as is: its calls (not executed) or its answer.

Tools file (`--tools FILE`, JSON): `{"tools": [TOOL, …]}` or a list of TOOL, where TOOL is
`{name, description, parameters (JSON Schema), …and one mock}`:
- `result`: a fixed value returned for any arguments;
- `results`: a table `[{args: {...}, result: ...}, …]`, matched by JSON equality of the arguments, with
  `default` for arguments not in the table (without `default` the call gets status `error` and the model
  sees `{"error": "no mocked result for these arguments"}`);
- `python`: `module:function` or `path/to/file.py:function` (relative to the tools file) called with
  the arguments as keyword arguments; what it raises becomes the call's error result (status `error`).
Arguments that are not valid JSON are recorded as `{"_raw": "..."}` with status `error`.

Endpoint: `base_url` (default `$OPENAI_BASE_URL`), key from `$OPENAI_API_KEY` (or `api_key_env`).
A model step that meets HTTP 408/409/429/5xx or a connection error is retried as that step, by the
`openai` client (`max_retries` = `--retries`, honouring `retry-after-ms`/`retry-after`; see
`evalward.openai_requests`): the steps already taken are not paid for again and the trajectory so far is
kept. When the retries run out the turn fails for good (`agent_error`, or `crash` when the endpoint cannot be
reached), not retryable: re-running the turn would repeat every earlier step. Usage: tokens and requests
summed over the turn's model steps, and `model_retries` the retries the client needed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalward.errors import EvalFileError, FileProblem, UsageError
from evalward.model import AgentOutput, AgentRequest, AgentTarget, Message, ToolCall, Usage, canonical_hash
from evalward.openai_requests import async_openai_client, counting_attempts
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.python import load_python_file

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_MAX_STEPS = 10


class ToolMockRow(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    args: dict[str, Any] = Field(description="Arguments this row answers (JSON equality).")
    result: Any = Field(description="What the tool returns for them.")


class ToolSpec(BaseModel):
    """One declared tool and its mocked result."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    result: Any = None
    results: list[ToolMockRow] | None = None
    default: Any = None
    python: str | None = None

    @model_validator(mode="after")
    def _one_mock(self) -> ToolSpec:
        given = [k for k in ("result", "results", "python") if k in self.model_fields_set]
        if len(given) > 1:
            raise ValueError(f"give one mock per tool (result, results or python), found {', '.join(given)}")
        return self

    def declaration(self) -> dict[str, Any]:
        """The tool as the chat-completions API declares it."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolsFile(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    tools: list[ToolSpec]


def load_tools(path: str | Path) -> list[ToolSpec]:
    """Read a tools file (module docstring); every problem is reported with its JSON path."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalFileError([FileProblem(path=source, message=f"cannot read the tools file: {exc.strerror}")]) from exc
    except ValueError as exc:
        raise EvalFileError([FileProblem(path=source, message=f"the tools file is not JSON: {exc}")]) from exc
    if isinstance(data, list):
        data = {"tools": data}
    try:
        tools = ToolsFile.model_validate(data).tools
    except ValidationError as exc:
        problems = [
            FileProblem(
                path=source,
                json_path="$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]),
                message=error["msg"],
            )
            for error in exc.errors(include_url=False)
        ]
        raise EvalFileError(problems) from None
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvalFileError([FileProblem(path=source, message=f"tool names must be unique: {', '.join(duplicates)}")])
    return tools


class OpenAIAgentOptions(BaseModel):
    """How the `openai:` runner is configured (flags: --system-prompt, --tools, --max-steps)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    system_prompt: str | None = Field(default=None, description="Path of the system prompt file.")
    tools: str | None = Field(default=None, description="Path of the tools file.")
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1, description="Model steps per turn.")
    base_url: str | None = Field(default=None, description="Endpoint; default $OPENAI_BASE_URL.")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="Variable holding the API key.")
    temperature: float | None = None
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, description="Retries of a model step (`--retries`), by the client.")


def _json_equal(left: Any, right: Any) -> bool:
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


class OpenAIAgent:
    """The `openai:MODEL` runner (module docstring)."""

    def __init__(self, target: str, *, options: OpenAIAgentOptions | None = None, cwd: Path | None = None) -> None:
        model = target.strip().removeprefix("openai:").strip()
        if not model:
            raise UsageError(f"agent target {target!r}: expected openai:MODEL, e.g. openai:gpt-4o-mini")
        self.model = model
        self.options = options or OpenAIAgentOptions()
        self._cwd = cwd or Path.cwd()
        self._system_prompt: str | None = None
        self._tools: list[ToolSpec] = []
        self._callables: dict[str, Callable[..., Any]] = {}
        self._client: AsyncOpenAI | None = None
        self._started = False

    def _path(self, text: str) -> Path:
        path = Path(text)
        return path if path.is_absolute() else self._cwd / path

    def _load_config(self) -> None:
        if self.options.system_prompt:
            path = self._path(self.options.system_prompt)
            try:
                self._system_prompt = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise AgentStartError(f"cannot read the system prompt {path}: {exc.strerror}") from exc
        if self.options.tools:
            path = self._path(self.options.tools)
            try:
                self._tools = load_tools(path)
            except EvalFileError as exc:
                raise AgentStartError(str(exc)) from exc
            for tool in self._tools:
                if tool.python:
                    self._callables[tool.name] = _load_callable(tool.python, path.parent)

    @property
    def target(self) -> AgentTarget:
        if not self._started:
            try:
                self._load_config()
                self._started = True
            except AgentStartError:
                pass  # start() reports it; the hash then covers the paths only
        config = {
            "kind": "openai",
            "model": self.model,
            "system_prompt": canonical_hash(self._system_prompt) if self._system_prompt is not None else None,
            "tools": [t.model_dump(mode="json") for t in self._tools],
            "max_steps": self.options.max_steps,
            "temperature": self.options.temperature,
        }
        return AgentTarget(kind="openai", target=f"openai:{self.model}", config_hash=canonical_hash(config))

    async def start(self) -> None:
        if not self._started:
            self._load_config()
            self._started = True
        self._client = async_openai_client(
            base_url=self.options.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            api_key=os.environ.get(self.options.api_key_env),
            timeout_s=self.options.timeout_s,
            max_retries=self.options.max_retries,
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    # --- a turn -------------------------------------------------------------------------------------------------

    def _messages(self, request: AgentRequest) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if self._system_prompt:
            messages.append({"role": "system", "content": self._system_prompt})
        messages.extend(openai_messages(request.history))
        if not request.next_action_only:
            messages.append({"role": "user", "content": request.query})
        return messages

    async def _ask(self, messages: list[dict[str, Any]]) -> tuple[Any, int]:
        """One model step: the completion and the retries the client needed for it."""
        import openai

        if self._client is None:
            await self.start()
        assert self._client is not None
        kwargs: dict[str, Any] = {}
        if self._tools:
            kwargs["tools"] = [t.declaration() for t in self._tools]
            kwargs["tool_choice"] = "auto"
        if self.options.temperature is not None:
            kwargs["temperature"] = self.options.temperature
        with counting_attempts() as attempts:
            try:
                response = await self._client.chat.completions.create(
                    model=self.model, messages=cast(Any, messages), **kwargs
                )
            except openai.APIStatusError as exc:
                raise AgentFailure(
                    "agent_error",
                    f"model {self.model!r} answered HTTP {exc.status_code}: {exc.message}{_after(attempts.retries)}",
                ) from exc
            except openai.APIConnectionError as exc:
                raise AgentFailure(
                    "crash", f"cannot reach the model endpoint: {exc}{_after(attempts.retries)}"
                ) from exc
        return response, attempts.retries

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        if self._client is None:
            await self.start()
        messages = self._messages(request)
        calls: list[ToolCall] = []
        usage = Usage(input_tokens=0, output_tokens=0, model_requests=0, model_retries=0)
        for step in range(self.options.max_steps):
            response, retries = await self._ask(messages)
            usage = usage.plus(_usage(response, retries))
            if not response.choices:
                raise AgentFailure("malformed_output", f"model {self.model!r} returned no choices")
            message = response.choices[0].message
            requested = list(message.tool_calls or [])
            if not requested:
                return AgentOutput(response=message.content, tool_calls=calls, usage=usage)
            step_calls = [self._call(raw, step) for raw in requested]
            if request.next_action_only:
                return AgentOutput(response=message.content, tool_calls=step_calls, usage=usage)
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": raw.id,
                            "type": "function",
                            "function": {"name": raw.function.name, "arguments": raw.function.arguments},
                        }
                        for raw in requested
                    ],
                }
            )
            for raw, call in zip(requested, step_calls, strict=True):
                call.result = await self._run_tool(call)
                messages.append({"role": "tool", "tool_call_id": raw.id, "content": _content(call.result)})
            calls.extend(step_calls)
        made = ", ".join(c.signature() for c in calls[-5:])
        raise AgentFailure(
            "agent_error",
            f"the model was still calling tools after {self.options.max_steps} steps (--max-steps); last calls: {made}",
        )

    def _call(self, raw: Any, step: int) -> ToolCall:
        text = raw.function.arguments or "{}"
        try:
            args = json.loads(text)
            status = "ok"
            if not isinstance(args, dict):
                args, status = {"_raw": text}, "error"
        except ValueError:
            args, status = {"_raw": text}, "error"
        return ToolCall(name=raw.function.name, args=args, id=raw.id, step=step, status=status)

    async def _run_tool(self, call: ToolCall) -> Any:
        """The mocked result of `call` (module docstring); failures set the call's status to `error`."""
        tool = next((t for t in self._tools if t.name == call.name), None)
        if call.status == "error":
            return {"error": "the arguments are not a JSON object"}
        if tool is None:
            call.status = "error"
            return {"error": f"unknown tool {call.name!r}"}
        if tool.name in self._callables:
            function = self._callables[tool.name]
            try:
                result = function(**(call.args or {}))
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:  # the tool's failure is the model's problem to handle, and data for us
                call.status = "error"
                return {"error": f"{type(exc).__name__}: {exc}"}
            return result
        if tool.results is not None:
            for row in tool.results:
                if _json_equal(row.args, call.args or {}):
                    return row.result
            if "default" in tool.model_fields_set:
                return tool.default
            call.status = "error"
            return {"error": "no mocked result for these arguments"}
        return tool.result


def openai_messages(history: list[Message]) -> list[dict[str, Any]]:
    """evalward messages → chat-completions messages; calls without ids get ids their results then use."""
    converted: list[dict[str, Any]] = []
    pending: list[str] = []
    for index, message in enumerate(history):
        if message.role == "assistant" and message.tool_calls:
            ids = [call.id or f"call_h{index}_{k}" for k, call in enumerate(message.tool_calls)]
            pending = list(ids)
            converted.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.args or {})},
                        }
                        for call_id, call in zip(ids, message.tool_calls, strict=True)
                    ],
                }
            )
        elif message.role == "tool":
            call_id = message.tool_call_id or (pending[0] if pending else f"call_h{index}")
            if call_id in pending:
                pending.remove(call_id)
            converted.append({"role": "tool", "tool_call_id": call_id, "content": message.content or ""})
        else:
            converted.append({"role": message.role, "content": message.content or ""})
    return converted


def _content(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)


def _usage(response: Any, retries: int) -> Usage:
    usage = getattr(response, "usage", None)
    return Usage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        model_requests=1,
        model_retries=retries,
    )


def _after(retries: int) -> str:
    return f" (after {retries} retries)" if retries else ""


def _load_callable(text: str, base: Path) -> Callable[..., Any]:
    """`module:function` or `file.py:function` (relative to `base`) → the callable."""
    location, _, attribute = text.rpartition(":")
    if not location or not attribute:
        raise AgentStartError(f"tool mock {text!r}: expected module:function or path/to/file.py:function")
    try:
        if location.endswith(".py"):
            path = Path(location)
            path = (path if path.is_absolute() else base / path).resolve()
            module = load_python_file(path, namespace="tools", what=f"tool mock {text!r}")
        else:
            module = importlib.import_module(location)
        function = getattr(module, attribute)
    except AgentStartError:
        raise
    except Exception as exc:
        raise AgentStartError(f"tool mock {text!r}: {type(exc).__name__}: {exc}") from exc
    if not callable(function):
        raise AgentStartError(f"tool mock {text!r}: {attribute} is not callable")
    return cast(Callable[..., Any], function)


def agent_options(values: Mapping[str, Any]) -> OpenAIAgentOptions:
    """Options from a plain mapping (CLI/pipeline), ignoring None values."""
    return OpenAIAgentOptions.model_validate({k: v for k, v in values.items() if v is not None})
