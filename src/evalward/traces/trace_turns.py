"""OpenTelemetry spans (and the log records emitted in them) → recordings, without holding every span or
every turn.

A turn is built from all the spans of its trace (`genai.trace_turns`), with the trace's log records attached
to their spans (`span_logs`), and the turns of a case are numbered together, by their turn attribute or
start time (`genai.number_turns`). The spans and log records of one trace can be anywhere in a file (an
exporter writes them as they end, in batches, spans and logs apart), and the turns of one case in any
trace, so both groupings go through unnamed temporary files instead of memory:
1. each span or log record is written to a file as it is read; memory keeps the hash of its trace id, its
   offset and its length (24 bytes a record);
2. the records are read back one trace at a time (grouped by hash, the trace id compared), the trace's
   turns built and written to a second file with the hash of their (eval set, case, repetition) and their
   place in the order `turns_from_spans` would list them (first span of their trace, place within it);
3. the turns are read back one (eval set, case, repetition) at a time, numbered, and written as
   (key, output, query, warnings) rows to a third file, indexed by a `RowIndex` (`IndexedRecordings` reads
   them).
The outcome is that of `turns_from_spans` over every record at once: the same turns, numbers and queries, a
later turn with the same key replacing the earlier one (with a note saying so), and the same notes in the
same order, except that past `MAX_NOTES` they are counted rather than kept (a million traces without
recorded tool arguments would otherwise print a million notes). A turn's warnings (what its spans did not
record) stay with its row, for the command that replays it to report for the cases it scores. Log records
that belong to no span of the file are counted in one warning of the recordings.

The temporary files hold pickles: they round-trip decoded attribute values exactly (any JSON value, and
Jaeger's keyless log fields), and they are unnamed files only this process writes and reads.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from evalward.traces.genai import TracedTurn, TraceOptions, number_turns, trace_turns
from evalward.traces.otlp import LogRecord, Record, Span
from evalward.traces.recordings_index import IndexedRecordings, Row
from evalward.traces.row_index import Hasher, Key, RowIndex, hash_groups, signed64
from evalward.traces.span_logs import attach_logs

MAX_NOTES = 100
"""Notes kept for the user; the rest are counted in one last note."""


def recordings_from_records(
    records: Iterable[Record], *, source: str, options: TraceOptions | None = None, hasher: Hasher = hash
) -> IndexedRecordings:
    """The recorded turns of `records` (module docstring); an `EvalFileError` raised by `records` is passed
    on."""
    options = options or TraceOptions()
    with _Spill() as record_file:
        for record in records:
            record_file.append(hasher(record.trace_id), record)
        with _Spill() as turn_file:
            unattached = _write_turns(record_file, turn_file, options, hasher)
            record_file.close()
            warnings = [_unattached_warning(unattached)] if unattached else []
            return _write_recordings(turn_file, source, hasher, warnings)


def _unattached_warning(count: int) -> str:
    return (
        f"{count} OTLP log record(s) belong to no span of the file (no span id, or their span is missing): "
        "the message content they may hold is not read"
    )


@dataclass
class _SpilledTurn:
    turn: TracedTurn
    explicit: int | None
    order: tuple[int, int]
    """(row of the first span of its trace, place among the trace's turns): `turns_from_spans`'s order."""


def _write_turns(record_file: _Spill, turn_file: _Spill, options: TraceOptions, hasher: Hasher) -> int:
    """Write the turns of every trace; how many log records found no span to attach to."""
    unattached = 0
    for rows in record_file.groups():
        by_trace: dict[str, tuple[list[tuple[int, Span]], list[LogRecord]]] = {}
        for row in rows:
            record: Record = record_file.read(row)
            spans, logs = by_trace.setdefault(record.trace_id, ([], []))
            if isinstance(record, Span):
                spans.append((row, record))
            else:
                logs.append(record)
        for trace_id, (read, logs) in by_trace.items():
            joined, missed = attach_logs([span for _, span in read], logs)
            unattached += missed
            if not read:
                continue
            first_row = read[0][0]
            built = trace_turns(trace_id, joined, options)
            for place, (traced, explicit) in enumerate(built):
                group = (traced.eval_set_id, traced.case_id, traced.repetition)
                turn_file.append(hasher(group), _SpilledTurn(traced, explicit, (first_row, place)))
    return unattached


def _write_recordings(turn_file: _Spill, source: str, hasher: Hasher, warnings: list[str]) -> IndexedRecordings:
    out = tempfile.TemporaryFile(prefix="evalward-turns-")  # noqa: SIM115  # the recordings own it
    try:
        index = RowIndex(hasher)
        notes = _Notes(MAX_NOTES)
        end = 0
        for rows in turn_file.groups():
            by_case: dict[tuple[str | None, str, int], list[_SpilledTurn]] = {}
            for row in rows:
                spilled: _SpilledTurn = turn_file.read(row)
                turn = spilled.turn
                by_case.setdefault((turn.eval_set_id, turn.case_id, turn.repetition), []).append(spilled)
            for spilled_turns in by_case.values():
                spilled_turns.sort(key=lambda spilled: spilled.order)
                for recorded in _case_rows(spilled_turns, notes):
                    data = pickle.dumps(recorded, protocol=pickle.HIGHEST_PROTOCOL)
                    out.write(data)
                    index.add(recorded.key, end, len(data))
                    end += len(data)
        out.flush()
        index.finish()
        return IndexedRecordings(
            source=source,
            kind="otel",
            file=out,
            index=index,
            decode=_decode_row,
            notes=notes.texts(),
            warnings=warnings,
        )
    except BaseException:
        out.close()
        raise


def _case_rows(spilled_turns: list[_SpilledTurn], notes: _Notes) -> Iterator[Row]:
    """The rows of one (eval set, case, repetition), its turns given in `turns_from_spans`'s order; notes
    are added under the order the whole file's notes would come in."""
    turns = [spilled.turn for spilled in spilled_turns]
    explicit = {id(spilled.turn): spilled.explicit for spilled in spilled_turns if spilled.explicit is not None}
    first_order = spilled_turns[0].order
    recorded: dict[Key, Row] = {}
    for position, traced in enumerate(number_turns(turns, explicit)):
        key = (traced.eval_set_id, traced.case_id, traced.turn, traced.repetition)
        order = ((traced.eval_set_id or "", traced.case_id, traced.repetition, traced.turn), first_order, position)
        earlier_query = None
        if key in recorded:
            notes.add(
                (order, 0),
                f"case {traced.case_id!r} turn {traced.turn} repetition {traced.repetition} was recorded "
                f"more than once; trace {traced.trace_id} replaces the earlier one",
            )
            earlier_query = recorded[key].query
        query = traced.query if traced.query is not None else earlier_query
        recorded[key] = Row(key, traced.output, query, tuple(traced.warnings))
        for number, note in enumerate(traced.notes, start=1):
            notes.add((order, number), f"case {traced.case_id!r} turn {traced.turn}: {note}")
    yield from recorded.values()


def _decode_row(data: bytes) -> Row:
    row = pickle.loads(data)
    if not isinstance(row, Row):
        raise ValueError("not a recorded turn")
    return row


class _Notes:
    """The first `limit` notes by order, out of any number, in memory for about twice `limit`."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self._kept: list[tuple[Any, str]] = []

    def add(self, order: Any, text: str) -> None:
        self.count += 1
        self._kept.append((order, text))
        if len(self._kept) > 2 * self.limit:
            self._trim()

    def _trim(self) -> None:
        self._kept.sort(key=lambda kept: kept[0])
        del self._kept[self.limit :]

    def texts(self) -> list[str]:
        self._trim()
        texts = [text for _, text in self._kept]
        if self.count > self.limit:
            texts.append(f"{self.count - self.limit} more note(s) like these are not shown")
        return texts


class _Spill:
    """Records pickled to an unnamed temporary file, read back a hash group at a time (module docstring)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="evalward-spill-")  # noqa: SIM115  # closed by close()
        self._hashes = array("q")
        self._offsets = array("q")
        self._lengths = array("q")
        self._end = 0

    def __enter__(self) -> _Spill:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def append(self, hashed: int, record: object) -> None:
        data = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.write(data)
        self._hashes.append(signed64(hashed))
        self._offsets.append(self._end)
        self._lengths.append(len(data))
        self._end += len(data)

    def groups(self) -> Iterator[list[int]]:
        """Rows grouped by hash (each group in the order written); once, as the hashes are used up."""
        self._file.flush()
        hashes, self._hashes = self._hashes, array("q")
        return hash_groups(hashes)

    def read(self, row: int) -> Any:
        return pickle.loads(os.pread(self._file.fileno(), self._lengths[row], self._offsets[row]))

    def close(self) -> None:
        self._file.close()
