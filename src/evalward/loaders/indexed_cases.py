"""The cases of a streamed eval file, read back from the file one at a time (`model.CaseSequence`).

Loading maps every case once (that is when every problem is reported) and keeps, per case: its id, its
content and input hashes (32-byte digests), where its text is in the file (byte offset and length), where
it starts (line, column) and its number of turns: under 200 bytes, against a few kilobytes for the case
itself. `cases[i]` reads those bytes again, decodes them and maps them with the format's own
mapper into an equal `EvalCase`, with the edits recorded since loading (an initial session) applied.

A small cache keeps the most recently read cases (a case's repetitions run one after another); a set of
at most `WHOLE_SET` cases keeps all of them, as mapped at loading: reading such a set back (planning and
validation each read every case) costs more time than holding it costs memory.

The file must not change while its cases are in use: its size, modification time and inode are checked at
each read, and a changed file is an `EvalFileError`, never a different case.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from evalward.errors import EvalFileError, FileProblem
from evalward.loaders.documents import Document, DocumentKind, SourceText
from evalward.loaders.locate import LocatedIndex
from evalward.loaders.positions import PathKey, format_json_path
from evalward.loaders.problems import Problems
from evalward.model import CaseEdit, CaseSequence, EvalCase, SourceLocation
from evalward.model.cases import case_features
from evalward.model.records import ItemSequence

CaseMapper = Callable[[Problems, Any, PathKey], EvalCase | None]
"""A format's mapping of one case-list element (found at a path) to an `EvalCase`, recording problems."""

RECENT_CASES = 256
"""Cases a large set keeps after reading them (LRU): a case's repetitions run one after another."""

WHOLE_SET = 2048
"""A set with at most this many cases keeps them all (a few megabytes)."""

_DIGEST = 32


@dataclass(frozen=True)
class _Origin:
    """The file a set's cases are read back from, and everything needed to map them again."""

    file: str
    shown: str
    signature: tuple[int, int, int]
    kind: DocumentKind
    prefix: PathKey
    """The JSON path of the case list: `("eval_cases",)`, or `()` for a top-level list or JSONL."""
    mapper: CaseMapper
    starts: array[int]
    """Byte offset of each case's text in the file."""
    lengths: array[int]
    lines: array[int]
    columns: array[int]
    turns: array[int]
    features: bytearray
    """Each case's `case_features` as mapped."""
    elements: array[int] | None
    """Each case's position in the case list, when it differs from its row (some element failed to map)."""

    def path_of(self, row: int) -> PathKey:
        return (*self.prefix, row if self.elements is None else self.elements[row])

    def json_path_of(self, row: int) -> str:
        """`format_json_path(self.path_of(row))`, the list's own path formatted once."""
        return f"{self.prefix_text}[{row if self.elements is None else self.elements[row]}]"

    @cached_property
    def prefix_text(self) -> str:
        return format_json_path(self.prefix)

    def read(self, row: int) -> EvalCase:
        """The case at `row`, mapped afresh from the file (no edits applied)."""
        try:
            text = self._text(row)
            value = json.loads(text)
        except ValueError:  # not the text it was (a change that kept size, time and inode)
            raise self._changed() from None
        path = self.path_of(row)
        index = LocatedIndex(text, 0, prefix=path, line=self.lines[row], column=self.columns[row])
        problems = Problems(Document(path=self.shown, data=value, index=index, kind=self.kind))
        case = self.mapper(problems, value, path)
        if case is None or problems.items:
            raise self._changed()
        return case

    def _text(self, row: int) -> str:
        try:
            # O_NONBLOCK: a FIFO put in the file's place cannot block the read (its signature then differs).
            flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
            descriptor = os.open(self.file, flags)
        except OSError:
            raise self._changed() from None
        try:
            status = os.fstat(descriptor)
            if (status.st_size, status.st_mtime_ns, status.st_ino) != self.signature:
                raise self._changed()
            os.lseek(descriptor, self.starts[row], os.SEEK_SET)
            return os.read(descriptor, self.lengths[row]).decode("utf-8")
        finally:
            os.close(descriptor)

    def _changed(self) -> EvalFileError:
        return EvalFileError(
            [
                FileProblem(
                    path=self.shown,
                    message="the file changed (or went away) after it was loaded, so its cases cannot be read "
                    "again; run evalward again",
                    expected="the file as it was loaded",
                )
            ]
        )


class IndexedCases(CaseSequence):
    """Cases of a streamed file: per-case facts kept, each case read back on demand (module docstring).

    `rows` are the origin rows this sequence holds, in its order (None: all of them, in file order)."""

    def __init__(
        self,
        origin: _Origin,
        ids: Sequence[str],
        content: bytes | bytearray,
        inputs: bytes | bytearray,
        *,
        rows: array[int] | None = None,
        edits: tuple[CaseEdit, ...] = (),
        recent: Iterable[tuple[int, EvalCase]] = (),
        cache_size: int = RECENT_CASES,
    ) -> None:
        self._origin = origin
        self._ids = ids
        self._content = content
        self._inputs = inputs
        self._rows = rows
        self._edits = edits
        self._cache_size = max(cache_size, 1)
        self._cache: OrderedDict[int, EvalCase] = OrderedDict(recent)  # by index in this sequence
        self._lock = threading.Lock()
        self._positions: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def case_at(self, index: int) -> EvalCase:
        with self._lock:
            case = self._cache.get(index)
            if case is not None:
                self._cache.move_to_end(index)
                return case
        case = self._fresh(index)
        with self._lock:
            self._cache[index] = case
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return case

    def ids(self) -> Sequence[str]:
        return self._ids

    def position(self, case_id: str) -> int | None:
        if self._positions is None:  # built on first use (a dict costs ~100 bytes per case): selection by id
            self._positions = {case_id: index for index, case_id in enumerate(self._ids)}
        return self._positions.get(case_id)

    def content_hash_at(self, index: int) -> str:
        return self._content[index * _DIGEST : (index + 1) * _DIGEST].hex()

    def input_hash_at(self, index: int) -> str:
        return self._inputs[index * _DIGEST : (index + 1) * _DIGEST].hex()

    def turn_count_at(self, index: int) -> int:
        return self._origin.turns[self._row(index)]

    def features_at(self, index: int) -> int:
        return self._origin.features[self._row(index)]

    def source_at(self, index: int) -> SourceLocation:
        return SourceLocation(**self.source_fields_at(index))

    def source_fields_at(self, index: int) -> dict[str, Any]:
        # Made as dicts: a run's eval set info lists every case's source, and a model made for each only to be
        # dumped was half of writing a 2,000-case run's first row.
        origin, row = self._origin, self._row(index)
        return {
            "path": origin.shown,
            "line": origin.lines[row],
            "column": origin.columns[row],
            "json_path": origin.json_path_of(row),
        }

    def select(self, indexes: Sequence[int]) -> IndexedCases:
        with self._lock:
            recent = [(new, case) for new, old in enumerate(indexes) if (case := self._cache.get(old)) is not None]
        return IndexedCases(
            self._origin,
            self._ids.pick(indexes) if isinstance(self._ids, IdStrings) else [self._ids[i] for i in indexes],
            b"".join(self._content[i * _DIGEST : (i + 1) * _DIGEST] for i in indexes),
            b"".join(self._inputs[i * _DIGEST : (i + 1) * _DIGEST] for i in indexes),
            rows=array("I", (self._row(i) for i in indexes)),
            edits=self._edits,
            recent=recent,
            cache_size=self._cache_size,
        )

    def edited(self, edit: CaseEdit) -> IndexedCases:
        edited = IndexedCases(
            self._origin,
            self._ids,
            b"",
            b"",
            rows=self._rows,
            edits=(*self._edits, edit),
            cache_size=self._cache_size,
        )
        # Every case read once more, so the hashes are those of the edited cases (an initial session is part
        # of what a case asks), and the last ones read are kept as a load keeps them.
        content, inputs = bytearray(), bytearray()
        for index in range(len(self)):
            case_content, case_inputs = digests(edited.case_at(index))
            content += case_content
            inputs += case_inputs
        edited._content, edited._inputs = content, inputs
        return edited

    def __deepcopy__(self, memo: dict[int, Any]) -> IndexedCases:
        # What is kept per case is never changed after loading, so it is shared; cases read back are copied.
        with self._lock:
            recent = list(self._cache.items())
        return IndexedCases(
            self._origin,
            self._ids,
            self._content,
            self._inputs,
            rows=self._rows,
            edits=copy.deepcopy(self._edits, memo),
            recent=copy.deepcopy(recent, memo),
            cache_size=self._cache_size,
        )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        state["_cache"] = OrderedDict()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<IndexedCases: {len(self)} cases of {self._origin.shown}>"

    def _row(self, index: int) -> int:
        return index if self._rows is None else self._rows[index]

    def _fresh(self, index: int) -> EvalCase:
        case = self._origin.read(self._row(index))
        for edit in self._edits:
            edit(case)
        return case


def digests(case: EvalCase) -> tuple[bytes, bytes]:
    """The case's content and input hashes as 32-byte digests, computed without caching them on the case: a
    kept case may be changed by whoever it is handed to (as a listed one may), and its hashes must then be
    those of what it became."""
    return (
        bytes.fromhex(_CONTENT_HASH.func(case)),
        bytes.fromhex(_INPUT_HASH.func(case)),
    )


_CONTENT_HASH: cached_property[str] = EvalCase.__dict__["content_hash"]
_INPUT_HASH: cached_property[str] = EvalCase.__dict__["input_hash"]


class IndexBuilder:
    """Collects the facts of each case as a streamed load maps it, then builds the `IndexedCases`."""

    def __init__(
        self,
        source: SourceText,
        *,
        kind: DocumentKind,
        prefix: PathKey,
        mapper: CaseMapper,
        cache_size: int = RECENT_CASES,
        whole_set: int = WHOLE_SET,
    ) -> None:
        self._source = source
        self.kind = kind
        self._prefix = prefix
        self.mapper = mapper
        self._cache_size = cache_size
        self._whole_set = whole_set
        self._ids = _IdBuffer()
        self._content = bytearray()
        self._inputs = bytearray()
        # Offsets, lengths, lines, columns and turn counts are all below the file's size: 4 bytes each below 4 GiB.
        self._typecode = "I" if len(source.text) * 4 + source.offset < 2**32 else "q"
        self._starts = array(self._typecode)
        self._lengths = array(self._typecode)
        self._lines = array(self._typecode)
        self._columns = array(self._typecode)
        self._turns = array(self._typecode)
        self._features = bytearray()
        self._elements: array[int] | None = None
        self._bytes = _ByteOffsets(source.text, source.offset)
        self._recent: OrderedDict[int, EvalCase] = OrderedDict()

    def add(self, case: EvalCase, element: int, start: int, end: int, line: int, column: int) -> None:
        """Case `case`, mapped from element `element` of the case list, whose text is `text[start:end]` and
        starts at `line`, `column`."""
        row = len(self._ids)
        if element != row and self._elements is None:
            self._elements = array(self._typecode, range(row))
        if self._elements is not None:
            self._elements.append(element)
        self._ids.append(case.case_id)
        content, inputs = digests(case)
        self._content += content
        self._inputs += inputs
        first = self._bytes.at(start)
        self._starts.append(first)
        self._lengths.append(self._bytes.at(end) - first)
        self._lines.append(line)
        self._columns.append(column)
        self._turns.append(len(case.turns))
        self._features.append(case_features(case))
        if row < self._whole_set:
            self._recent[row] = case
        elif self._recent:
            self._recent.clear()  # a large set: kept cases would pin memory, and a run reads its own

    def build(self) -> IndexedCases:
        source = self._source
        origin = _Origin(
            file=str(source.path.resolve()),
            shown=source.shown,
            signature=source.signature,
            kind=self.kind,
            prefix=self._prefix,
            mapper=self.mapper,
            starts=self._starts,
            lengths=self._lengths,
            lines=self._lines,
            columns=self._columns,
            turns=self._turns,
            features=self._features,
            elements=self._elements,
        )
        whole = len(self._ids) <= self._whole_set
        return IndexedCases(
            origin,
            list(self._ids.strings()) if whole else self._ids.strings(),
            self._content,
            self._inputs,
            recent=self._recent.items() if whole else (),
            cache_size=max(len(self._ids), self._cache_size) if whole else self._cache_size,
        )


class _IdBuffer:
    """Case ids gathered during a load as one UTF-8 blob (`IdStrings` once the load is done)."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("q")

    def __len__(self) -> int:
        return len(self._ends)

    def append(self, case_id: str) -> None:
        self._blob += case_id.encode("utf-8", "surrogatepass")  # JSON may escape a lone surrogate
        self._ends.append(len(self._blob))

    def strings(self) -> IdStrings:
        return IdStrings(bytes(self._blob), self._ends)


class IdStrings(ItemSequence[str]):
    """A large set's case ids, kept as one UTF-8 blob and where each id ends: ~20 bytes an id where a list of
    `str`s takes ~70 (a million-case run keeps every id for its whole life). An id is decoded when read."""

    def __init__(self, blob: bytes, ends: array[int]) -> None:
        self._blob = blob
        self._ends = ends if len(blob) >= 2**32 else array("I", ends)

    def __len__(self) -> int:
        return len(self._ends)

    def _item(self, index: int) -> str:
        start = self._ends[index - 1] if index else 0
        return self._blob[start : self._ends[index]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        blob, start = self._blob, 0
        for end in self._ends:
            yield blob[start:end].decode("utf-8", "surrogatepass")
            start = end

    def pick(self, indexes: Sequence[int]) -> IdStrings:
        """The ids at `indexes`, in that order."""
        picked = _IdBuffer()
        for index in indexes:
            picked.append(self[index])
        return picked.strings()


class _ByteOffsets:
    """Byte offsets in the file of character offsets in its text, asked for in increasing order."""

    def __init__(self, text: str, offset: int) -> None:
        self._text = text
        self._ascii = text.isascii()
        self._offset = offset  # bytes before text[0]
        self._char = 0
        self._byte = offset

    def at(self, char: int) -> int:
        if self._ascii:
            return char + self._offset
        self._byte += len(self._text[self._char : char].encode("utf-8"))
        self._char = char
        return self._byte
