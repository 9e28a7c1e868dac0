"""Records kept in memory while they are few, and in a temporary file once they are many.

A run's case results and case summaries are written once and read back a few times (the reports, the
database), so past `EVALWARD_MAX_RECORDS_IN_MEMORY` records (`DEFAULT_MAX_IN_MEMORY`) a `RecordLog` moves
them to an unnamed temporary file as JSON lines and keeps only, per record, its offset, key and
status: 17 bytes with a run's ranked keys (`RankedKeys`, `evalward.case_keys`; ~100 with key tuples) instead
of the tens of kilobytes a `CaseResult` with its turns takes. Memory then stays flat however many cases a
run has, and a small run pays nothing (its records stay objects).

Reading a spilled record back validates its JSON into the same model; the round trip is exact for every
model it is used with (`tests/test_spill.py`), so reports rendered from spilled records are identical.
"""

from __future__ import annotations

import json
import os
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from evalward.errors import UsageError
from evalward.model.records import ItemSequence, Permuted, RecordSequence, order_by_codes

if TYPE_CHECKING:
    from evalward.case_keys import CaseKeys

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
        raise UsageError(f"EVALWARD_MAX_RECORDS_IN_MEMORY must be a whole number, found {raw!r}") from None
    return max(value, 0)


class _SpillFile:
    """An unnamed temporary file of JSON records, appended to and read back by offset.

    A bare descriptor (unlinked at once, closed when the file object goes away): a log that nobody closes
    leaves neither a file on disk nor an unclosed-file warning behind. Appends are gathered in a buffer of up
    to `BUFFER_BYTES` and written together (a write per record was ~5% of a fast agent's run); a read of
    what is still buffered writes the buffer first."""

    BUFFER_BYTES = 256 * 1024

    def __init__(self) -> None:
        descriptor, path = tempfile.mkstemp(prefix="evalward-records-")
        Path(path).unlink()
        self._descriptor = descriptor
        self._end = 0
        self._written = 0
        self._buffer = bytearray()
        self._closer = weakref.finalize(self, os.close, descriptor)

    def append(self, data: bytes) -> int:
        offset = self._end
        self._buffer += data
        self._end += len(data)
        if len(self._buffer) >= self.BUFFER_BYTES:
            self._flush()
        return offset

    def _flush(self) -> None:
        view = memoryview(self._buffer)
        done = 0
        while done < len(view):
            done += os.pwrite(self._descriptor, view[done:], self._written + done)
        view.release()
        self._written += done
        self._buffer.clear()

    @property
    def end(self) -> int:
        return self._end

    def read(self, offset: int, length: int) -> bytes:
        if offset + length > self._written:
            self._flush()
        return os.pread(self._descriptor, length, offset)

    def close(self) -> None:
        self._closer()


class KeyStore(Protocol):
    """How a `RecordLog` keeps its records' keys: it is handed each key as the record is appended, gives each
    back as a tuple, and knows their order."""

    def append(self, key: Any) -> None: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    def order(self) -> array[int]:
        """Positions sorted by key (stable)."""
        ...


class TupleKeys:
    """Keys kept as the tuples they are (their first string, an eval set id, shared): any key, ~100 bytes each."""

    def __init__(self) -> None:
        self._keys: list[tuple[Any, ...]] = []
        self._interned: dict[str, str] = {}

    def append(self, key: tuple[Any, ...]) -> None:
        # Keys start with their eval set id, the same in thousands of records: one string per id.
        if key and isinstance(key[0], str):
            first = self._interned.setdefault(key[0], key[0])
            if first is not key[0]:
                key = (first, *key[1:])
        self._keys.append(key)

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        return self._keys[index]

    def order(self) -> array[int]:
        return array("q", sorted(range(len(self._keys)), key=self._keys.__getitem__))


class RankedKeys:
    """A run's case keys kept as case ranks (`evalward.case_keys`): 8 bytes a record, 12 with a repetition.

    Appended as a rank (`(eval_set_id, case_id)` keys) or a (rank, repetition) pair (`CaseResult.key`), given
    back as the key tuples they stand for."""

    def __init__(self, cases: CaseKeys, *, repetitions: bool) -> None:
        self._cases = cases
        self._ranks = array("I")  # under 4 billion cases
        self._repetitions = array("i") if repetitions else None

    def append(self, key: int | tuple[int, int]) -> None:
        if self._repetitions is None:
            assert isinstance(key, int)
            self._ranks.append(key)
            return
        assert isinstance(key, tuple)
        self._ranks.append(key[0])
        self._repetitions.append(key[1])

    def __len__(self) -> int:
        return len(self._ranks)

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        key = self._cases.key(self._ranks[index])
        return key if self._repetitions is None else (*key, self._repetitions[index])

    def order(self) -> array[int]:
        if self._repetitions is None:
            return order_by_codes(self._ranks)
        span = max(self._repetitions, default=0) + 1
        if min(self._repetitions, default=0) < 0:
            return array("q", sorted(range(len(self)), key=self.__getitem__))
        return order_by_codes(array("q", (rank * span + repetition for rank, repetition in self._pairs())))

    def _pairs(self) -> Iterator[tuple[int, int]]:
        assert self._repetitions is not None
        return zip(self._ranks, self._repetitions, strict=True)


class _Statuses(ItemSequence[str]):
    """Statuses as one byte each, indexes into the few distinct status strings."""

    def __init__(self) -> None:
        self._codes = bytearray()
        self._names: list[str] = []
        self._numbers: dict[str, int] = {}

    def append(self, status: str) -> None:
        number = self._numbers.get(status)
        if number is None:
            if len(self._names) == 256:
                raise ValueError("more than 256 distinct statuses")
            number = self._numbers[status] = len(self._names)
            self._names.append(status)
        self._codes.append(number)

    def __len__(self) -> int:
        return len(self._codes)

    def _item(self, index: int) -> str:
        return self._names[self._codes[index]]


class RecordLog(RecordSequence[M], Generic[M]):
    """An append-only sequence of `model` records with their keys and statuses; see the module docstring.

    `keys` says how keys are kept: as tuples (`TupleKeys`, the default) or as a run's case ranks
    (`RankedKeys`). `ordered()` gives a view sorted by key, which is how a run's results are reported.
    `expected`: how many records the log will hold, when known. A log that will spill anyway starts in its
    file, each record encoded as it comes: spilling when the limit is reached encoded every record kept so far
    at once, an 11 ms stall of a 1,000-case run's agents, all waiting to start their next case (issue #33)."""

    def __init__(
        self,
        model: type[M],
        *,
        max_in_memory: int | None = None,
        keys: KeyStore | None = None,
        expected: int | None = None,
    ) -> None:
        self.model = model
        self.max_in_memory = max_records_in_memory() if max_in_memory is None else max_in_memory
        self._objects: list[M] = []
        self._encoded: list[bytes | None] = []
        """`encoded` as given with each in-memory record: the log spills it as it is, not encoded again."""
        self._keys: KeyStore = TupleKeys() if keys is None else keys
        self._statuses = _Statuses()
        self._file: _SpillFile | None = None
        if expected is not None and expected > self.max_in_memory:
            self._file = _SpillFile()
        self._offsets = array("q")  # records are written one after another: each ends where the next starts

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, record: M, key: Any, status: str, *, encoded: bytes | None = None) -> None:
        """Add `record`, whose key is `key` in the form the log's key store takes, with `status`. `encoded`:
        `encode_record(record)`, when the caller has it already (it is not encoded twice)."""
        self._keys.append(key)
        self._statuses.append(status)
        if self._file is None and len(self._objects) < self.max_in_memory:
            self._objects.append(record)
            self._encoded.append(encoded)
            return
        if self._file is None:
            self._file = _SpillFile()
            for earlier, data in zip(self._objects, self._encoded, strict=True):
                self._write(encode_record(earlier) if data is None else data)
            self._objects, self._encoded = [], []
        self._write(encode_record(record) if encoded is None else encoded)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        self._offsets.append(self._file.append(data))

    def keys(self) -> Sequence[tuple[Any, ...]]:
        return self._keys  # type: ignore[return-value]  # a KeyStore reads as a sequence of tuples

    def statuses(self) -> Sequence[str]:
        return self._statuses

    def __len__(self) -> int:
        return len(self._statuses)

    def _record(self, index: int) -> M:
        if self._file is None:
            return self._objects[index]
        start = self._offsets[index]
        end = self._offsets[index + 1] if index + 1 < len(self._offsets) else self._file.end
        data = self._file.read(start, end - start)
        return self.model.model_validate_json(data)

    def ordered(self) -> OrderedView[M]:
        """A view of the records sorted by key (stable: equal keys keep their order)."""
        return OrderedView(self, self._keys.order())

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
        return Permuted(self._log.keys(), self._order)

    def statuses(self) -> Sequence[str]:
        return Permuted(self._log.statuses(), self._order)

    def __len__(self) -> int:
        return len(self._order)

    def _record(self, index: int) -> M:
        return self._log._record(self._order[index])


def encode_record(record: BaseModel) -> bytes:
    """`record` as a `RecordLog` writes it: its JSON (UTF-8) without computed fields."""
    return record.model_dump_json(exclude=_computed_fields(type(record))).encode("utf-8")


def _computed_fields(model: type[BaseModel]) -> set[str]:
    """The model's computed fields: derived on the way out, and refused (or ignored) on the way back in."""
    return set(model.model_computed_fields)


_scan_json: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C value scanner
_JSON_SPACE = " \t\n\r"


def split_json_object(text: str, record_lists: Mapping[str, Callable[[str], None]]) -> dict[str, Any]:
    """The members of the JSON object `text`, but for the arrays named in `record_lists`: each of their
    elements is handed, as its own JSON text, to that field's callback, and the field is left out of the
    result. A stored run's header holds one summary per case (`RunResult.case_summaries`); read this way they
    go one at a time to a `RecordLog` instead of all into memory at once. `text` must be valid JSON (it was
    written by evalward: `records.iter_model_json`)."""
    members: dict[str, Any] = {}
    at = _skip_space(text, 0)
    if text[at] != "{":
        raise ValueError("not a JSON object")
    at = _skip_space(text, at + 1)
    while text[at] != "}":
        key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
        at = _skip_space(text, _skip_space(text, at) + 1)  # past ':'
        each = record_lists.get(key)
        if each is not None and text[at] == "[":
            at = _skip_space(text, at + 1)
            while text[at] != "]":
                _, end = _scan_json(text, at)
                each(text[at:end])
                at = _skip_space(text, end)
                if text[at] == ",":
                    at = _skip_space(text, at + 1)
            at += 1
        else:
            members[key], at = _scan_json(text, at)
        at = _skip_space(text, at)
        if text[at] == ",":
            at = _skip_space(text, at + 1)
    return members


def _skip_space(text: str, at: int) -> int:
    while text[at] in _JSON_SPACE:
        at += 1
    return at
