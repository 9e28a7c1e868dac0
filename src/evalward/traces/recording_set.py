"""What replaying asks of recordings, and the one copy of the lookup rules all kinds of recordings share.

Recordings are held in memory (`traces.recordings.Recordings`: a run JSON, or built by hand) or read back
from a file by offset (`traces.recordings_index.IndexedRecordings`: responses JSONL, OpenTelemetry traces). Both
answer the same few questions (`_get`, `_owners`, `_only_repetition_zero`), from which `locate` applies the
rules below, so the two cannot drift apart:
1. the entry for (eval set, case, turn, repetition), else the one recorded without an eval set id;
2. a request naming no eval set accepts the case under any set, when only one set has it;
3. a case recorded only as repetition 0 (under the request's eval set or none) replays that recording for
   every repetition, so `--repeat` re-scores one recording; a case with several recorded repetitions must
   have each one.
`locate` gives the recorded turn with what was recorded with it (the user query, and warnings about what
its spans did not record); `lookup` gives its output alone.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from evalward.model import AgentOutput
from evalward.traces.row_index import Key

SourceKind = Literal["run_json", "responses_jsonl", "otel"]

__all__ = ["Key", "RecordedError", "RecordingSet", "Row", "SourceKind"]


@dataclass(frozen=True)
class RecordedError:
    """A turn that failed when it was recorded; replaying it fails the same way."""

    kind: str
    message: str


class Row(NamedTuple):
    """A recorded turn: its key, its output (or failure), the user query recorded with it, and warnings
    about what its recording lacks (for traces: `genai.content_warnings`)."""

    key: Key
    value: AgentOutput | RecordedError
    query: str | None
    warnings: tuple[str, ...] = ()


class RecordingSet(ABC):
    """Recorded outputs (or failures) per (eval set, case, turn, repetition).

    `source` names the file, `kind` what it was, `notes` what the reader wants the user to know (e.g. a trace
    replacing an earlier one), `warnings` what it must know of the file as a whole (e.g. log records that
    belong to no span of it), `queries` the recorded user query per key (where one was recorded)."""

    source: str
    kind: SourceKind
    notes: list[str]
    warnings: list[str]
    queries: Mapping[Key, str]

    def lookup(
        self, case_id: str, turn: int, repetition: int, eval_set_id: str | None = None
    ) -> AgentOutput | RecordedError | None:
        """The recording for a turn under the rules of the module docstring, or None.

        Each call returns an output of its own: the caller may change it without changing the recordings."""
        found = self.locate(case_id, turn, repetition, eval_set_id)
        return found.value if found is not None else None

    def locate(self, case_id: str, turn: int, repetition: int, eval_set_id: str | None = None) -> Row | None:
        """The recorded turn that answers a turn under the rules of the module docstring (its key says which
        one it is), or None. Its output is one of its own, as `lookup`'s."""
        for set_id in [eval_set_id, None] if eval_set_id is not None else [None]:
            found = self._get((set_id, case_id, turn, repetition))
            if found is not None:
                return found
        if eval_set_id is None:
            owners = self._owners(case_id)
            if len(owners) == 1:
                found = self._get((next(iter(owners)), case_id, turn, repetition))
                if found is not None:
                    return found
        if repetition > 0 and self._only_repetition_zero(case_id, (eval_set_id, None)):
            return self.locate(case_id, turn, 0, eval_set_id)
        return None

    @abstractmethod
    def __len__(self) -> int:
        """How many turns are recorded."""

    @abstractmethod
    def has_case(self, case_id: str) -> bool:
        """Whether any turn of `case_id` is recorded (under any eval set)."""

    @abstractmethod
    def case_ids(self) -> Iterator[str]:
        """Every recorded case id once, in no particular order, without holding them all."""

    @abstractmethod
    def case_keys(self) -> list[tuple[str | None, str]]:
        """(eval set, case) pairs recorded, in the order of their first stored turn (for a run JSON or a
        responses file, the file's order). Reads every turn: for small recordings; see `case_ids`."""

    @abstractmethod
    def close(self) -> None:
        """Release the file behind the recordings, if any (they can no longer be read)."""

    @abstractmethod
    def _get(self, key: Key) -> Row | None:
        """The recorded turn of exactly `key` (with an output of its own), or None."""

    @abstractmethod
    def _owners(self, case_id: str) -> set[str | None]:
        """The eval set ids (None for none) `case_id` is recorded under; two are enough to say "not one"."""

    @abstractmethod
    def _only_repetition_zero(self, case_id: str, set_ids: tuple[str | None, ...]) -> bool:
        """Whether `case_id` is recorded under `set_ids` and only as repetition 0."""
