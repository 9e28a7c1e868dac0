"""Recordings read back from a file by offset: what a recorded turn costs in memory is its `RowIndex` entry.

The file is the user's responses JSONL (`traces.responses`), kept open and read with `os.pread`, or the
temporary file the turns of OpenTelemetry traces are written to (`traces.trace_turns`). A row's bytes are
turned into (key, recording, query) by the `decode` the file's reader gives. Every answer comes from rows
read back and their full key compared, never from a hash alone (`RowIndex`); each lookup decodes its row
again, so each returns an `AgentOutput` of its own.

Reading back what was read once costs a second parse per replayed turn (~7 µs a JSON line), against the
gigabytes a million parsed outputs would take. When the file changes on disk while it is replayed, a row
no longer decodes and the lookup raises `EvalFileError` naming the file.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import IO

from evalward.errors import EvalFileError, FileProblem
from evalward.traces.recording_set import Key, RecordingSet, Row, SourceKind
from evalward.traces.row_index import RowIndex

__all__ = ["Decoder", "IndexedRecordings", "Row"]

Decoder = Callable[[bytes], Row]
"""Bytes of one row → the row; raises `ValueError` (JSON, pydantic) when they are not a row."""


class IndexedRecordings(RecordingSet):
    """Recordings whose rows stay in `file`, found through `index`; see the module docstring."""

    def __init__(
        self,
        *,
        source: str,
        kind: SourceKind,
        file: IO[bytes],
        index: RowIndex,
        decode: Decoder,
        notes: list[str] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        """`index` must be finished; `file` is closed by `close()`, or when the recordings go away."""
        self.source = source
        self.kind = kind
        self.notes = notes if notes is not None else []
        self.warnings = warnings if warnings is not None else []
        self.index = index
        self.queries = _Queries(self)
        self._file = file
        self._descriptor = file.fileno()
        self._decode = decode
        self._closer = weakref.finalize(self, file.close)

    def read(self, row: int) -> Row:
        """Row `row`, decoded from its bytes."""
        offset, length = self.index.location(row)
        data = os.pread(self._descriptor, length, offset)
        try:
            if len(data) != length:
                raise ValueError("short read")
            return self._decode(data)
        except ValueError:
            raise EvalFileError(
                [
                    FileProblem(
                        self.source,
                        f"the recording changed while it was replayed: the {length} bytes at offset {offset} "
                        "are no longer the recorded turn read there",
                        expected="the file left as it was until the run ends",
                    )
                ]
            ) from None

    def rows(self) -> Iterator[Row]:
        """Every row, in file order."""
        for row in range(len(self.index)):
            yield self.read(row)

    def close(self) -> None:
        self._closer()

    def __len__(self) -> int:
        return len(self.index)

    def has_case(self, case_id: str) -> bool:
        return any(self.read(row).key[1] == case_id for row in self.index.rows_for_case(case_id))

    def case_ids(self) -> Iterator[str]:
        for rows in self.index.case_hash_groups():
            yield from dict.fromkeys(self.read(row).key[1] for row in rows)

    def case_keys(self) -> list[tuple[str | None, str]]:
        return list(dict.fromkeys((row.key[0], row.key[1]) for row in self.rows()))

    def find(self, key: Key) -> Row | None:
        """The row recorded for exactly `key`, or None."""
        for row in self.index.rows_for_key(key):
            found = self.read(row)
            if found.key == key:
                return found
        return None

    def _get(self, key: Key) -> Row | None:
        return self.find(key)

    def _owners(self, case_id: str) -> set[str | None]:
        owners: set[str | None] = set()
        for row in self.index.rows_for_case(case_id):
            set_id, found_case, _, _ = self.read(row).key
            if found_case == case_id:
                owners.add(set_id)
                if len(owners) > 1:
                    break
        return owners

    def _only_repetition_zero(self, case_id: str, set_ids: tuple[str | None, ...]) -> bool:
        # Rows of a repetition above 0 are read (one of them is enough to say no); of the others, one is
        # read to be sure the case is recorded under `set_ids` at all.
        recorded = False
        for row in self.index.rows_for_case(case_id):
            if recorded and not self.index.repeated(row):
                continue
            set_id, found_case, _, repetition = self.read(row).key
            if found_case != case_id or set_id not in set_ids:
                continue
            if repetition != 0:
                return False
            recorded = True
        return recorded


class _Queries(Mapping[Key, str]):
    """`IndexedRecordings.queries`: the recorded query of a key, read from its row when asked for."""

    def __init__(self, recordings: IndexedRecordings) -> None:
        self._recordings = recordings

    def __getitem__(self, key: Key) -> str:
        found = self._recordings.find(key)
        if found is None or found.query is None:
            raise KeyError(key)
        return found.query

    def __iter__(self) -> Iterator[Key]:
        return (row.key for row in self._recordings.rows() if row.query is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
