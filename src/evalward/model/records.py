"""Per-case lists of a run that may live outside memory.

A run of 100,000 cases cannot hold every `CaseResult` (with its turns) and every `CaseSummary` at once in a
few hundred megabytes, so the pipeline keeps them in a `RecordSequence`: a read-only sequence that knows
each record's key and status without reading the record back (the implementation that writes records to a
temporary file is `evalward.spill`). `RunResult.cases` and `RunResult.case_summaries` accept one in place
of a list (`KeepRecordSequence`); everything that reads them as a sequence works unchanged, and the helpers below
answer the common questions (keys, statuses, the failing cases) without reading every record.
"""

from __future__ import annotations

from abc import abstractmethod
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from pydantic import (
    BaseModel,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    WrapSerializer,
    WrapValidator,
)

M = TypeVar("M", bound=BaseModel)


T = TypeVar("T")


class ItemSequence(Sequence[T], Generic[T]):
    """A read-only sequence given by its length and how to read one item (`_item`, 0 <= index < len):
    negative indexes, slices (as lists) and iteration follow from those two."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _item(self, index: int) -> T:
        """The item at `index` (0 <= index < len)."""

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._item(index)

    def __iter__(self) -> Iterator[T]:
        for index in range(len(self)):
            yield self._item(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # read-only, but compared by content


class RecordSequence(ItemSequence[M], Generic[M]):
    """A read-only sequence of records whose keys and statuses are known without reading the records."""

    @abstractmethod
    def keys(self) -> Sequence[tuple[Any, ...]]:
        """Each record's key (`CaseResult.key`, or `(eval_set_id, case_id)` for a summary), in order."""

    @abstractmethod
    def statuses(self) -> Sequence[str]:
        """Each record's status (`CaseResult.status`; "passed"/"failed" for a summary), in order."""

    @abstractmethod
    def _record(self, index: int) -> M:
        """The record at `index` (0 <= index < len)."""

    def _item(self, index: int) -> M:
        return self._record(index)

    def where(self, keep: Callable[[str], bool]) -> Iterator[M]:
        """The records whose status `keep` accepts, in order; the others are not read."""
        for index, status in enumerate(self.statuses()):
            if keep(status):
                yield self._record(index)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} records>"

    # Read-only to its readers, so a copy of a model holding one (`model_copy(deep=True)`) shares it rather
    # than duplicating a temporary file.
    def __copy__(self) -> RecordSequence[M]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> RecordSequence[M]:
        return self


def record_keys(records: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every record's `key`, without reading records a `RecordSequence` keeps elsewhere."""
    return list(iter_record_keys(records))


def iter_record_keys(records: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
    """Every record's `key`, one at a time (a `RecordSequence` may make its keys as they are read:
    `evalward.case_keys`), without reading records kept elsewhere."""
    if isinstance(records, RecordSequence):
        yield from records.keys()
        return
    for record in records:
        yield record.key


class Permuted(ItemSequence[T], Generic[T]):
    """`items` read in the order of `positions` (a view: nothing is copied)."""

    def __init__(self, items: Sequence[T], positions: Sequence[int]) -> None:
        self._items = items
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    def _item(self, index: int) -> T:
        return self._items[self._positions[index]]


class Picked(RecordSequence[M], Generic[M]):
    """Records picked from one or more record lists by (source, position): a filtered, reordered or joined view
    of them that reads a record only when it is asked for (a joined baseline, a baseline cut to the current
    run's cases, a run's cases in key order). Sources may be lists or `RecordSequence`s."""

    def __init__(self, sources: Sequence[Sequence[M]], picks: Sequence[tuple[int, int]]) -> None:
        self._sources = list(sources)
        self._source_of = array("I", (source for source, _ in picks))
        self._position = array("q", (position for _, position in picks))
        self._keys = [_lazy_keys(source) for source in self._sources]
        self._statuses = [_lazy_statuses(source) for source in self._sources]

    def __len__(self) -> int:
        return len(self._position)

    def keys(self) -> Sequence[tuple[Any, ...]]:
        return _PickedItems(self, self._keys)

    def statuses(self) -> Sequence[str]:
        return _PickedItems(self, self._statuses)

    def _record(self, index: int) -> M:
        return self._sources[self._source_of[index]][self._position[index]]


class _PickedItems(ItemSequence[T], Generic[T]):
    def __init__(self, picked: Picked[Any], columns: Sequence[Sequence[T]]) -> None:
        self._picked = picked
        self._columns = columns

    def __len__(self) -> int:
        return len(self._picked)

    def _item(self, index: int) -> T:
        picked = self._picked
        return self._columns[picked._source_of[index]][picked._position[index]]


def _lazy_keys(records: Sequence[Any]) -> Sequence[tuple[Any, ...]]:
    return records.keys() if isinstance(records, RecordSequence) else [record.key for record in records]


def _lazy_statuses(records: Sequence[Any]) -> Sequence[str]:
    return records.statuses() if isinstance(records, RecordSequence) else [record.status for record in records]


def pick_where(records: Sequence[M], keep_key: Callable[[tuple[Any, ...]], bool]) -> Sequence[M]:
    """The records whose key `keep_key` accepts, in order; a record kept elsewhere is not read (a view)."""
    if not isinstance(records, RecordSequence):
        return [record for record in records if keep_key(record.key)]  # type: ignore[attr-defined]
    return Picked([records], [(0, index) for index, key in enumerate(records.keys()) if keep_key(key)])


def joined(*parts: Sequence[M]) -> Sequence[M]:
    """The records of `parts` one after another; a list when every part is one, else a view."""
    if not any(isinstance(part, RecordSequence) for part in parts):
        return [record for part in parts for record in part]
    return Picked(parts, [(source, index) for source, part in enumerate(parts) for index in range(len(part))])


def in_key_order(records: Sequence[M]) -> Sequence[M]:
    """The records sorted by key (stable); a list for a list, a view of a `RecordSequence` (nothing is read)."""
    if not isinstance(records, RecordSequence):
        return sorted(records, key=lambda record: record.key)  # type: ignore[attr-defined]
    keys = records.keys()
    return Picked([records], [(0, index) for index in sorted(range(len(keys)), key=keys.__getitem__)])


def order_by_codes(codes: Sequence[int]) -> array[int]:
    """The positions of `codes` sorted by code, equal codes in their order (a stable argsort).

    Codes that are distinct and dense (below twice their count, as a run's case ranks are) are placed by
    counting, in one pass and 8 bytes a slot; anything else is sorted."""
    count = len(codes)
    if count and min(codes) >= 0 and max(codes) < 2 * count:
        slots = array("q", [-1]) * (2 * count)
        for position, code in enumerate(codes):
            if slots[code] != -1:
                break  # a repeated code: sort instead
            slots[code] = position
        else:
            return array("q", (position for position in slots if position != -1))
    return array("q", sorted(range(count), key=codes.__getitem__))


def record_statuses(records: Sequence[Any]) -> list[str]:
    """Every record's `status`, without reading records a `RecordSequence` keeps elsewhere."""
    if isinstance(records, RecordSequence):
        return list(records.statuses())
    return [record.status for record in records]


def records_where(records: Sequence[M], keep: Callable[[str], bool]) -> Iterator[M]:
    """The records whose `status` `keep` accepts, in order (a `RecordSequence` reads only those)."""
    if isinstance(records, RecordSequence):
        yield from records.where(keep)
        return
    for record in records:
        if keep(getattr(record, "status")):  # noqa: B009  # every record type kept here has a status
            yield record


def _keep_record_sequences(value: Any, validate: ValidatorFunctionWrapHandler) -> Any:
    return value if isinstance(value, RecordSequence) else validate(value)


def _dump_record_sequences(value: Any, serialize: SerializerFunctionWrapHandler) -> Any:
    return serialize(list(value) if isinstance(value, RecordSequence) else value)


KeepRecordSequence = (
    WrapValidator(_keep_record_sequences),
    WrapSerializer(_dump_record_sequences),
)
"""`Annotated[Sequence[X], *KeepRecordSequence]`: a model field that holds a list of `X` or a `RecordSequence`.
Validation keeps a `RecordSequence` as it is and validates anything else as a sequence of `X`; serialisation
and the JSON schema are those of a list of `X` (a `RecordSequence` is read record by record when dumped)."""


V = TypeVar("V")


class FactsMapping(Mapping[str, V], Generic[V]):
    """A read-only {case id: fact} mapping computed from a compact index instead of stored as a dict (a large
    eval set's content hashes, input hashes and sources: `EvalSet.case_hashes()` and its siblings). Fields
    annotated with `KeepFactsMapping` hold one as it is."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    def plain(self) -> dict[str, Any]:
        """The mapping as a dict, as it is dumped: a value that is a mapping made on demand (a case's source) as
        the dict it stands for. (`items()`: one look at such a mapping; `dict(item)` reads it once per key.)"""
        return {key: dict(item.items()) if isinstance(item, Mapping) else item for key, item in self.items()}

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} cases>"


def _keep_facts_mappings(value: Any, validate: ValidatorFunctionWrapHandler) -> Any:
    return value if isinstance(value, FactsMapping) else validate(value)


def _dump_facts_mappings(value: Any, serialize: SerializerFunctionWrapHandler) -> Any:
    return serialize(value.plain() if isinstance(value, FactsMapping) else value)


KeepFactsMapping = (WrapValidator(_keep_facts_mappings), WrapSerializer(_dump_facts_mappings))
"""`Annotated[Mapping[str, X], *KeepFactsMapping]`: a model field holding a dict or a `FactsMapping` (kept as it
is, dumped as a dict)."""


def iter_model_json(
    model: BaseModel,
    record_fields: Sequence[str],
    *,
    indent: int | None = None,
    each: Callable[[BaseModel], BaseModel] = lambda record: record,
) -> Iterator[str]:
    """`each(model).model_dump_json(indent=indent)` in pieces, with the top-level list fields `record_fields`
    (the last fields of the model but for plain values, in field order) dumped entry by entry: a run whose
    cases live in a temporary file is written without holding them. `each` is applied to the model without
    those lists and to every entry (redaction, which replaces values, gives the same text either way).

    The model is dumped with those fields empty, and each field's empty list is replaced by its entries;
    the last `"<field>": []` is the top-level one (only plain strings follow it, whose quotes are escaped)."""
    header = each(model.model_copy(update={name: [] for name in record_fields})).model_dump_json(indent=indent)
    cut: list[tuple[str, str]] = []  # (text before the field's list, field) from the last field backwards
    rest = header
    for name in reversed(record_fields):
        marker = f'"{name}": []' if indent else f'"{name}":[]'
        head, found, tail = rest.rpartition(marker)
        if not found:  # the model's shape is not what this expects: dump the whole model at once
            yield each(model).model_dump_json(indent=indent)
            return
        cut.append((tail, name))
        rest = head
    yield rest
    pad = "\n" + " " * (2 * indent if indent else 0)
    for tail, name in reversed(cut):
        entries: Sequence[BaseModel] = getattr(model, name)
        yield f'"{name}":' + (" [" if indent else "[")
        for index, entry in enumerate(entries):
            text = each(entry).model_dump_json(indent=indent)
            if indent:
                text = pad + text.replace("\n", pad)
            yield ("," if index else "") + text
        yield ("\n" + " " * indent + "]" if indent and len(entries) else "]") + tail
