"""`replay:FILE`: answer every turn with a recorded output instead of running the agent.

The file is any source `evalward.traces.recordings` reads: an evalward run JSON, JSON lines of agent
responses, or OpenTelemetry GenAI traces. Each request is answered with the recording for its
(eval set, case, turn, repetition) under the lookup rules of `RecordingSet.lookup`; a turn with no
recording fails as `AgentFailure("agent_error", "no recorded output for case …")`, and a turn recorded
as failed fails again with its recorded kind — failures stay data.

Responses JSONL and OpenTelemetry traces are indexed, not held: a million recorded turns cost a few tens of
MB, and each request reads its turn back from the file, which also makes each answer an `AgentOutput` of
its own. The file must stay as it is until the run ends; a turn read after it changed fails as an
`agent_error` naming the file.

The eval set of a request is read from its `session_id` (`<eval_set_id>/<case_id>/r<rep>/<nonce>`, as the
executor builds it); when it cannot be read, recordings are matched by case id alone.

Trace attributes naming the case, turn and repetition are configurable (`TraceOptions`), also through
`EVALWARD_TRACE_CASE_ATTRIBUTE`, `EVALWARD_TRACE_TURN_ATTRIBUTE` and `EVALWARD_TRACE_REPETITION_ATTRIBUTE`.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from pathlib import Path

from evalward.errors import EvalwardError
from evalward.model import AgentOutput, AgentRequest, AgentTarget, ErrorKind, canonical_hash
from evalward.reading import file_sha256
from evalward.runners.agent_contract import AgentFailure, AgentStartError
from evalward.traces.genai import TraceOptions
from evalward.traces.recordings import RecordedError, RecordingSet, load_recordings

PREFIX = "replay:"

_ERROR_KINDS: dict[str, ErrorKind] = {kind: kind for kind in typing.get_args(ErrorKind)}


def trace_options_from_env(env: Mapping[str, str] | None = None) -> TraceOptions:
    """`TraceOptions` with the `EVALWARD_TRACE_*_ATTRIBUTE` variables applied."""
    source = {**os.environ, **(env or {})}
    defaults = TraceOptions()
    return TraceOptions(
        case_attribute=source.get("EVALWARD_TRACE_CASE_ATTRIBUTE") or defaults.case_attribute,
        turn_attribute=source.get("EVALWARD_TRACE_TURN_ATTRIBUTE") or defaults.turn_attribute,
        repetition_attribute=source.get("EVALWARD_TRACE_REPETITION_ATTRIBUTE") or defaults.repetition_attribute,
        eval_set_attribute=source.get("EVALWARD_TRACE_EVAL_SET_ATTRIBUTE") or defaults.eval_set_attribute,
    )


def eval_set_of(request: AgentRequest) -> str | None:
    """The eval set id inside the executor's `session_id`, or None when it is not of that shape."""
    head, sep, _nonce = request.session_id.rpartition("/")
    if not sep:
        return None
    head, sep, rep = head.rpartition("/")
    suffix = "/" + request.case_id
    if not sep or rep != f"r{request.repetition}" or not head.endswith(suffix):
        return None
    return head[: -len(suffix)] or None


class ReplayAgent:
    """Recorded outputs behind the `Agent` protocol."""

    def __init__(
        self,
        target: str,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        options: TraceOptions | None = None,
        recordings: RecordingSet | None = None,
    ) -> None:
        """`target` is `replay:FILE` (relative to `cwd`); pass `recordings` to replay already-loaded ones
        (the caller closes those)."""
        self._target_text = target
        location = target.removeprefix(PREFIX).strip()
        path = Path(location)
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        self.path = path
        self.options = options or trace_options_from_env(env)
        self.recordings = recordings
        self._loaded = False
        self._digest: str | None = None

    @property
    def target(self) -> AgentTarget:
        # The recorded outputs are "the agent": two replays compare only if they replay the same bytes. The
        # file is hashed in chunks (a recording can be far larger than memory should hold), once per agent.
        if self._digest is None:
            try:
                self._digest = file_sha256(self.path)
            except EvalwardError:  # `start` reports the unreadable file
                return self._target_of("")
        return self._target_of(self._digest)

    def _target_of(self, digest: str) -> AgentTarget:
        return AgentTarget(
            kind="replay",
            target=self._target_text,
            config_hash=canonical_hash({"kind": "replay", "file_sha256": digest, "options": vars(self.options)}),
        )

    async def start(self) -> None:
        if self.recordings is not None:
            return
        try:
            self.recordings = load_recordings(self.path, options=self.options)
        except EvalwardError as exc:
            raise AgentStartError(str(exc)) from exc
        self._loaded = True

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        if self.recordings is None:
            await self.start()
        assert self.recordings is not None
        try:
            found = self.recordings.lookup(request.case_id, request.turn, request.repetition, eval_set_of(request))
        except EvalwardError as exc:  # the file changed under the run: this turn fails, as data
            raise AgentFailure("agent_error", str(exc)) from exc
        if found is None:
            raise AgentFailure(
                "agent_error",
                f"no recorded output for case {request.case_id!r} turn {request.turn} "
                f"repetition {request.repetition} in {self.recordings.source}",
            )
        if isinstance(found, RecordedError):
            raise AgentFailure(_ERROR_KINDS.get(found.kind, "agent_error"), found.message)
        return found  # an output of its own: `lookup` decodes (or copies) it for each request

    async def aclose(self) -> None:
        if self._loaded and self.recordings is not None:
            self.recordings.close()
            self.recordings = None
            self._loaded = False
