"""OpenTelemetry spans → recordings, without holding every span or every turn.

A turn is built from all the spans of its trace (`genai.trace_turns`), and the turns of a case are numbered
together, by their turn attribute or start time (`genai.number_turns`). The spans of one trace can be
anywhere in a file (an exporter writes spans as they end, in batches), and the turns of one case in any
trace, so both groupings go through unnamed temporary files instead of memory:
1. each span is written to a file as it is read; memory keeps the hash of its trace id, its offset and its
   length (24 bytes a span);
2. the spans are read back one trace at a time (grouped by hash, the trace id compared), the trace's turns
   built and written to a second file with the hash of their (eval set, case, repetition) and their place
   in the order `turns_from_spans` would list them (first span of their trace, place within it);
3. the turns are read back one (eval set, case, repetition) at a time, numbered, and written as
   (key, output, query) rows to a third file, indexed by a `RowIndex` (`IndexedRecordings` reads them).
The outcome is that of `turns_from_spans` over every span at once: the same turns, numbers and queries, a
later turn with the same key replacing the earlier one (with a note saying so), and the same notes in the
same order, except that past `MAX_NOTES` they are counted rather than kept (a million traces without
recorded tool arguments would otherwise print a million notes).

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

from evalward.model import AgentOutput
from evalward.traces.genai import TracedTurn, TraceOptions, number_turns, trace_turns
from evalward.traces.indexed import IndexedRecordings, Row
from evalward.traces.otlp import Span
from evalward.traces.row_index import Hasher, Key, RowIndex, hash_groups, signed64

MAX_NOTES = 100
"""Notes kept for the user; the rest are counted in one last note."""


def recordings_from_spans(
    spans: Iterable[Span], *, source: str, options: TraceOptions | None = None, hasher: Hasher = hash
) -> IndexedRecordings:
    """The recorded turns of `spans` (module docstring); an `EvalFileError` raised by `spans` is passed on."""
    options = options or TraceOptions()
    with _Spill() as span_file:
        for span in spans:
            span_file.append(hasher(span.trace_id), span)
        with _Spill() as turn_file:
            _write_turns(span_file, turn_file, options, hasher)
            span_file.close()
            return _write_recordings(turn_file, source, hasher)


@dataclass
class _SpilledTurn:
    turn: TracedTurn
    explicit: int | None
    order: tuple[int, int]
    """(row of the first span of its trace, place among the trace's turns): `turns_from_spans`'s order."""


def _write_turns(span_file: _Spill, turn_file: _Spill, options: TraceOptions, hasher: Hasher) -> None:
    for rows in span_file.groups():
        by_trace: dict[str, list[tuple[int, Span]]] = {}
        for row in rows:
            span: Span = span_file.read(row)
            by_trace.setdefault(span.trace_id, []).append((row, span))
        for trace_id, read in by_trace.items():
            first_row = read[0][0]
            built = trace_turns(trace_id, [span for _, span in read], options)
            for place, (traced, explicit) in enumerate(built):
                group = (traced.eval_set_id, traced.case_id, traced.repetition)
                turn_file.append(hasher(group), _SpilledTurn(traced, explicit, (first_row, place)))


def _write_recordings(turn_file: _Spill, source: str, hasher: Hasher) -> IndexedRecordings:
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
                for key, output, query in _case_rows(spilled_turns, notes):
                    data = pickle.dumps(Row(key, output, query), protocol=pickle.HIGHEST_PROTOCOL)
                    out.write(data)
                    index.add(key, end, len(data))
                    end += len(data)
        out.flush()
        index.finish()
        return IndexedRecordings(
            source=source, kind="otel", file=out, index=index, decode=_decode_row, notes=notes.texts()
        )
    except BaseException:
        out.close()
        raise


def _case_rows(spilled_turns: list[_SpilledTurn], notes: _Notes) -> Iterator[tuple[Key, AgentOutput, str | None]]:
    """The rows of one (eval set, case, repetition), its turns given in `turns_from_spans`'s order; notes
    are added under the order the whole file's notes would come in."""
    turns = [spilled.turn for spilled in spilled_turns]
    explicit = {id(spilled.turn): spilled.explicit for spilled in spilled_turns if spilled.explicit is not None}
    first_order = spilled_turns[0].order
    recorded: dict[Key, tuple[AgentOutput, str | None]] = {}
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
            earlier_query = recorded[key][1]
        recorded[key] = (traced.output, traced.query if traced.query is not None else earlier_query)
        for number, note in enumerate(traced.notes, start=1):
            notes.add((order, number), f"case {traced.case_id!r} turn {traced.turn}: {note}")
    for key, (output, query) in recorded.items():
        yield key, output, query


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
