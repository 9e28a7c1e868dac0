"""Run an agent that is a Python callable in this process: `module:function` or `path/to/file.py:function`.

The function receives the turn's request as a plain dict (the agent protocol's JSON), or as an
`AgentRequest` when its first parameter is annotated with `AgentRequest`. It may be sync or async and
returns a dict, an `AgentOutput` or a str (the response alone). It may also report its trajectory with
`evalward.trace`; each turn runs inside `trace.capture()` and the traced calls are merged into its output.

Sync functions run in a worker thread (`runners.worker_threads`, which copies context variables as
`asyncio.to_thread` does, so tracing works there). A thread cannot be killed: when a sync turn times out the
executor records the timeout and moves on, but the thread runs to its end in the background (and what it traces then is discarded).

Imports: a file target's directory is put first on `sys.path` (so the agent's sibling modules import),
and the file is loaded under a private module name (so two `agent.py` files do not collide). For a
module target the working directory is put on `sys.path`, as `python -m` does. `env` variables are set in
`os.environ` at `start()` (the agent shares this process) and restored at `aclose()`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from evalward import trace
from evalward.model import AgentOutput, AgentRequest, AgentTarget, canonical_hash
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.runners.outputs import coerce_output
from evalward.runners.worker_threads import WorkerThreads

_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
"""evalward's own source directory: frames there are not the user's code."""

_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_dotted_name(text: str) -> bool:
    return bool(_DOTTED_NAME.match(text))


class PythonAgent:
    """An in-process Python callable behind the `Agent` protocol."""

    def __init__(
        self,
        target: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        function: Callable[..., Any] | None = None,
    ) -> None:
        """`target` is `module:function` or `file.py:function`; pass `function` to wrap a callable directly."""
        self._target_text = target
        self._cwd = cwd
        self._env = dict(env or {})
        self._saved_env: dict[str, str | None] = {}
        self._function = function
        self._wants_model = False
        self._is_async = False
        self._threads: WorkerThreads | None = None
        if function is not None:
            self._inspect(function)

    @classmethod
    def from_callable(cls, function: Callable[..., Any], *, name: str | None = None) -> PythonAgent:
        """Wrap an already-imported callable (tests, notebooks, the pytest plugin)."""
        label = name or f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', repr(function))}"
        return cls(label, function=function)

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(
            kind="python",
            target=self._target_text,
            config_hash=canonical_hash({"kind": "python", "target": self._target_text, "env": sorted(self._env)}),
        )

    async def start(self) -> None:
        if self._env and not self._saved_env:
            self._saved_env = {key: os.environ.get(key) for key in self._env}
            os.environ.update(self._env)
        if self._function is None:
            function = self._load()
            self._inspect(function)
            self._function = function

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        if self._function is None:
            await self.start()
        function = self._function
        assert function is not None
        argument: Any = request if self._wants_model else request.model_dump(mode="json")
        with trace.capture() as collector:
            try:
                if self._is_async:
                    result = await function(argument)
                else:
                    if self._threads is None:
                        self._threads = WorkerThreads("evalward-agent", inline_when_fast=True)
                    result = await self._threads.call(function, argument)
                    if inspect.isawaitable(result):
                        result = await result
            except AgentFailure:
                raise
            except Exception as exc:
                raise AgentFailure("agent_error", describe_exception(exc)) from exc
        return collector.apply(coerce_output(result))

    async def aclose(self) -> None:
        if self._threads is not None:
            self._threads.close()
            self._threads = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    # --- loading --------------------------------------------------------------------------------------------

    def _load(self) -> Callable[..., Any]:
        location, _, attribute = self._target_text.rpartition(":")
        module = self._load_file(location) if location.endswith(".py") else self._load_module(location)
        obj: Any = module
        for part in attribute.split("."):
            if not hasattr(obj, part):
                public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
                raise AgentStartError(
                    f"agent {self._target_text!r}: {location} has no attribute {attribute!r}; "
                    f"callables found there: {', '.join(public) or 'none'}"
                )
            obj = getattr(obj, part)
        if not callable(obj):
            raise AgentStartError(f"agent {self._target_text!r}: {attribute} is a {type(obj).__name__}, not a callable")
        return typing.cast(Callable[..., Any], obj)

    def _base_dir(self) -> Path:
        return (self._cwd or Path.cwd()).resolve()

    def _load_file(self, location: str) -> Any:
        path = Path(location)
        if not path.is_absolute():
            path = self._base_dir() / path
        path = path.resolve()
        if not path.is_file():
            raise AgentStartError(f"agent {self._target_text!r}: file not found: {path}")
        return load_python_file(path, namespace="agent", what=f"agent {self._target_text!r}")

    def _load_module(self, location: str) -> Any:
        base = str(self._base_dir())
        if base not in sys.path:
            sys.path.insert(0, base)
        try:
            return importlib.import_module(location)
        except Exception as exc:
            raise AgentStartError(
                f"agent {self._target_text!r}: importing module {location!r} failed: {describe_exception(exc)} "
                f"(searched from {base})"
            ) from exc

    def _inspect(self, function: Callable[..., Any]) -> None:
        self._is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - async __call__ on callable objects
        )
        self._wants_model = _first_parameter_is_request(function)


def _first_parameter_is_request(function: Callable[..., Any]) -> bool:
    """Whether the first parameter is annotated `AgentRequest` (also as a string, with postponed annotations)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    if not parameters:
        return False
    first = parameters[0]
    annotation: Any = first.annotation
    if isinstance(annotation, str):
        try:
            hints = typing.get_type_hints(function)
            annotation = hints.get(first.name, annotation)
        except Exception:
            # Unresolvable forward references: fall back to the annotation's text.
            text: str = annotation
            return text.rsplit(".", 1)[-1].strip("'\"") == "AgentRequest"
    return annotation is AgentRequest


def describe_exception(exc: BaseException) -> str:
    """`Type: message (at file:line in function)` pointing at the innermost frame of the user's code."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{text} ({exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR) and "importlib" not in f.filename]
    if own:
        frame = own[-1]
        text += f" (at {frame.filename}:{frame.lineno} in {frame.name})"
    return text


def load_python_file(
    path: Path,
    *,
    namespace: str,
    what: str,
    describe: Callable[[Exception], str] | None = None,
) -> ModuleType:
    """Import the file at `path` (absolute) as a uniquely named module, once per process.

    Its folder goes on `sys.path` so the file can import its siblings; the module is registered before it
    runs so dataclasses, pickling and self-imports inside it work. Any failure is an `AgentStartError`
    naming `what` (e.g. "agent 'x.py:run'") and the file; KeyboardInterrupt and SystemExit pass through.
    """
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    module_name = f"_evalward_{namespace}_{digest}_{stem}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AgentStartError(f"{what}: cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(module_name, None)
        if not isinstance(exc, Exception):
            raise
        raise AgentStartError(f"{what}: importing {path} failed: {(describe or describe_exception)(exc)}") from exc
    return module
