"""Records kept in memory while they are few, and in a temporary file once they are many.

A run's case results and case summaries are written once and read back a few times (the reports, the
database), so past `EVALWARD_MAX_RECORDS_IN_MEMORY` records (`DEFAULT_MAX_IN_MEMORY`) a `RecordLog` moves
them to an unnamed temporary file as JSON lines and keeps only, per record, its offset, length, key and
status: about a hundred bytes instead of the tens of kilobytes a `CaseResult` with its turns takes. Memory
then stays flat however many cases a run has, and a small run pays nothing (its records stay objects).

Reading a spilled record back validates its JSON into the same model; the round trip is exact for every
model it is used with (`tests/test_spill.py`), so reports rendered from spilled records are identical.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from evalward.model.records import RecordSequence

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_IN_MEMORY = 500
"""Records kept as objects before a log moves to its file: a result with its turns takes ~20 KB as objects, so
500 of them are ~10 MB. Spilling costs a 2,000-case run no measurable time (a dump per record; reports read
records back only when written) and saves it ~45 MB."""


def max_records_in_memory() -> int:
    """`EVALWARD_MAX_RECORDS_IN_MEMORY` (0 = spill from the first record), else `DEFAULT_MAX_IN_MEMORY`."""
    raw = os.environ.get("EVALWARD_MAX_RECORDS_IN_MEMORY", "").strip()
    if not raw:
        return DEFAULT_MAX_IN_MEMORY
    try:
        value = int(raw)
    except ValueError:
        from evalward.errors import UsageError

        raise UsageError(f"EVALWARD_MAX_RECORDS_IN_MEMORY must be a whole number, found {raw!r}") from None
    return max(value, 0)


class _SpillFile:
    """An unnamed temporary file of JSON records, appended to and read back by offset.

    A bare descriptor (unlinked at once, closed when the file object goes away): a log that nobody closes
    leaves neither a file on disk nor an unclosed-file warning behind."""

    def __init__(self) -> None:
        descriptor, path = tempfile.mkstemp(prefix="evalward-records-")
        Path(path).unlink()
        self._descriptor = descriptor
        self._end = 0
        self._closer = weakref.finalize(self, os.close, descriptor)

    def append(self, data: bytes) -> int:
        offset = self._end
        written = 0
        while written < len(data):
            written += os.pwrite(self._descriptor, data[written:], offset + written)
        self._end += len(data)
        return offset

    def read(self, offset: int, length: int) -> bytes:
        return os.pread(self._descriptor, length, offset)

    def close(self) -> None:
        self._closer()


class RecordLog(RecordSequence[M], Generic[M]):
    """An append-only sequence of `model` records with their keys and statuses; see the module docstring.

    `ordered()` gives a view sorted by key, which is how a run's results are reported."""

    def __init__(self, model: type[M], *, max_in_memory: int | None = None) -> None:
        self.model = model
        self.max_in_memory = max_records_in_memory() if max_in_memory is None else max_in_memory
        self._objects: list[M] = []
        self._keys: list[tuple[Any, ...]] = []
        self._statuses: list[str] = []
        self._file: _SpillFile | None = None
        self._offsets = array("q")
        self._lengths = array("I")  # a record is far below 4 GB
        self._interned: dict[str, str] = {}

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, record: M, key: tuple[Any, ...], status: str) -> None:
        # Keys start with their eval set id, the same in thousands of records: one string per id.
        if key and isinstance(key[0], str):
            first = self._interned.setdefault(key[0], key[0])
            if first is not key[0]:
                key = (first, *key[1:])
        self._keys.append(key)
        self._statuses.append(self._interned.setdefault(status, status))
        if self._file is None and len(self._objects) < self.max_in_memory:
            self._objects.append(record)
            return
        if self._file is None:
            self._file = _SpillFile()
            for earlier in self._objects:
                self._write(earlier)
            self._objects = []
        self._write(record)

    def _write(self, record: M) -> None:
        assert self._file is not None
        data = record.model_dump_json(exclude=_computed_fields(self.model)).encode("utf-8")
        self._offsets.append(self._file.append(data))
        self._lengths.append(len(data))

    def keys(self) -> Sequence[tuple[Any, ...]]:
        return self._keys

    def statuses(self) -> Sequence[str]:
        return self._statuses

    def __len__(self) -> int:
        return len(self._keys)

    def _record(self, index: int) -> M:
        if self._file is None:
            return self._objects[index]
        data = self._file.read(self._offsets[index], self._lengths[index])
        return self.model.model_validate_json(data)

    def ordered(self) -> OrderedView[M]:
        """A view of the records sorted by key (stable: equal keys keep their order)."""
        order = sorted(range(len(self._keys)), key=self._keys.__getitem__)
        return OrderedView(self, array("q", order))

    def close(self) -> None:
        """Remove the file (records can no longer be read)."""
        if self._file is not None:
            self._file.close()


class OrderedView(RecordSequence[M], Generic[M]):
    """The records of a `RecordLog` in another order (positions into the log)."""

    def __init__(self, log: RecordLog[M], order: array[int]) -> None:
        self._log = log
        self._order = order

    def keys(self) -> Sequence[tuple[Any, ...]]:
        log_keys = self._log.keys()
        return [log_keys[i] for i in self._order]

    def statuses(self) -> Sequence[str]:
        log_statuses = self._log.statuses()
        return [log_statuses[i] for i in self._order]

    def __len__(self) -> int:
        return len(self._order)

    def _record(self, index: int) -> M:
        return self._log._record(self._order[index])


def _computed_fields(model: type[BaseModel]) -> set[str]:
    """The model's computed fields: derived on the way out, and refused (or ignored) on the way back in."""
    return set(model.model_computed_fields)
