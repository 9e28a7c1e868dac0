"""The cases of an eval set as a sequence that need not hold them.

`EvalSet.cases` is either a plain list of `EvalCase`s or a `CaseSequence`: an index that keeps, per case,
only what planning, selection, run info and hashing need (case id, content hash, input hash, where it was
read from) and reads a case back when it is asked for. A 100,000-case eval file then costs a few hundred
bytes per case instead of a few kilobytes. The file-backed form lives with the loaders
(`evalward.loaders.indexed_cases`); this module holds the contract and the helpers that take either form, so the
stages that select or edit cases need not know which one they have.

Rules every `CaseSequence` keeps:
1. It behaves as an immutable sequence: `len`, `seq[i]` (negative `i` counts from the end), `seq[a:b:c]`
   (another `CaseSequence` over those cases), iteration in file order, and `==` against any sequence of cases
   (element-wise), so it compares equal to the list it stands for.
2. The per-case facts (`ids`, `content_hash_at`, `input_hash_at`, `source_at`, `turn_count_at`) are answered
   without reading a case back, and equal what the case read back would say.
3. A case read back is an equal, fresh object (an implementation may cache a few recent ones): changing it
   does not change the sequence. Changes that must hold for every case go through `edited`, which records
   them and applies them to every case read back (the facts follow).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from evalward.model.records import FactsMapping

if TYPE_CHECKING:  # evalset.py imports this module; the names are only needed for annotations
    from evalward.model.evalset import EvalCase, SourceLocation

CaseEdit = Callable[["EvalCase"], None]
"""A change made in place to one case, e.g. giving it an initial session."""

CaseKey = tuple[str, str]
"""(eval_set_id, case_id): a case across runs, sets and reports (the one definition; `case_keys` numbers them)."""


_T = TypeVar("_T")


HAS_OWN_METRICS = 1
"""Feature flags (`case_features`): the case names metrics of its own."""
HAS_SCENARIO = 2
"""The case is a conversation_scenario case."""
HAS_REFERENCE_MESSAGES = 4
"""A turn carries reference messages (stepwise scoring)."""
HAS_EXPECTED_OUTPUTS = 8
"""A turn expects outputs by key (`--step`)."""


def case_features(case: EvalCase) -> int:
    """The case's feature flags (`HAS_*`): what the checks run before a run look for in a case."""
    flags = HAS_OWN_METRICS if case.metrics else 0
    flags |= HAS_SCENARIO if case.scenario is not None else 0
    flags |= HAS_REFERENCE_MESSAGES if any(turn.reference_messages is not None for turn in case.turns) else 0
    flags |= HAS_EXPECTED_OUTPUTS if any(turn.expected_outputs for turn in case.turns) else 0
    return flags


class CaseSequence(Sequence["EvalCase"], ABC):
    """Cases read back on demand, with their per-case facts kept (module docstring, rules 1-3)."""

    def features_at(self, index: int) -> int:
        """The case's `case_features` as loaded — possibly more than an edit left it (edits only take things
        away), so a caller checks the case it reads back; this reads it back unless the sequence keeps them."""
        return case_features(self.case_at(index))

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def case_at(self, index: int) -> EvalCase:
        """The case at `index` (0 <= index < len), read back with every recorded edit applied."""

    @abstractmethod
    def ids(self) -> Sequence[str]:
        """Every case id, in order."""

    @abstractmethod
    def position(self, case_id: str) -> int | None:
        """The index of the case with `case_id` (ids are unique within a set), None when there is none."""

    @abstractmethod
    def content_hash_at(self, index: int) -> str:
        """`case_at(index).content_hash`, without reading the case back."""

    @abstractmethod
    def input_hash_at(self, index: int) -> str:
        """`case_at(index).input_hash`, without reading the case back."""

    @abstractmethod
    def source_at(self, index: int) -> SourceLocation | None:
        """`case_at(index).source`, without reading the case back."""

    def source_fields_at(self, index: int) -> dict[str, Any]:
        """`source_at(index)` as `SourceLocation.model_dump(mode="json")` gives it ({} without one)."""
        source = self.source_at(index)
        return {} if source is None else source.model_dump(mode="json")

    @abstractmethod
    def turn_count_at(self, index: int) -> int:
        """`len(case_at(index).turns)`, without reading the case back."""

    @abstractmethod
    def select(self, indexes: Sequence[int]) -> CaseSequence:
        """The cases at `indexes` (each 0 <= i < len, in the order given), sharing this sequence's storage."""

    @abstractmethod
    def edited(self, edit: CaseEdit) -> CaseSequence:
        """These cases with `edit` applied to each (after the edits already recorded); facts recomputed."""

    @overload
    def __getitem__(self, index: int) -> EvalCase: ...

    @overload
    def __getitem__(self, index: slice) -> CaseSequence: ...

    def __getitem__(self, index: int | slice) -> EvalCase | CaseSequence:
        if isinstance(index, slice):
            return self.select(range(len(self))[index])
        size = len(self)
        if not -size <= index < size:
            raise IndexError(f"case index {index} out of range for {size} cases")
        return self.case_at(index % size)

    def __iter__(self) -> Iterator[EvalCase]:
        for index in range(len(self)):
            yield self.case_at(index)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a list, which is unhashable

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {len(self)} cases>"


class _FactView(FactsMapping[_T]):
    """{case id: one fact}, answered from a `CaseSequence`'s index (EvalSet.case_hashes() and friends); a
    `FactsMapping`, so `EvalSetInfo` keeps the view instead of copying it into a dict per run."""

    def __init__(
        self, cases: CaseSequence, fact: Callable[[int], _T], dumped: Callable[[int], Any] | None = None
    ) -> None:
        self._cases = cases
        self._fact = fact
        self._dumped = dumped
        """Each fact as it is dumped, when `fact` makes a mapping on demand (a case's source as its dict); None
        when a fact is dumped as it is (a hash)."""

    def __getitem__(self, case_id: str) -> _T:
        index = self._cases.position(case_id)
        if index is None:
            raise KeyError(case_id)
        return self._fact(index)

    def __iter__(self) -> Iterator[str]:
        return iter(self._cases.ids())

    def __len__(self) -> int:
        return len(self._cases)

    def items(self) -> ItemsView[str, _T]:
        # In order, by position: copying the view (as pydantic does, through `items()`) then needs no lookup
        # of each id.
        return _FactItems(self)

    def plain(self) -> dict[str, Any]:
        # By position, each fact made as it is dumped: a run's first row dumps every case's three facts, and
        # making a mapping per source only to copy it was most of that (2,000 cases: 3.8 ms of 5.7).
        fact = self._dumped or self._fact
        return dict(zip(self._cases.ids(), map(fact, range(len(self._cases))), strict=True))

    def pairs(self) -> Iterator[tuple[str, _T]]:
        fact = self._fact
        for index, case_id in enumerate(self._cases.ids()):
            yield case_id, fact(index)


class _FactItems(ItemsView[str, _T]):
    _mapping: _FactView[_T]

    def __iter__(self) -> Iterator[tuple[str, _T]]:
        return self._mapping.pairs()


def case_ids(cases: Sequence[EvalCase]) -> Sequence[str]:
    """Every case id, in order (a large set's ids as the compact sequence its index keeps them in)."""
    if isinstance(cases, CaseSequence):
        return cases.ids()
    return [case.case_id for case in cases]


def content_hashes(cases: Sequence[EvalCase]) -> Mapping[str, str]:
    """{case id: content hash}."""
    if isinstance(cases, CaseSequence):
        return _FactView(cases, cases.content_hash_at)
    return {case.case_id: case.content_hash for case in cases}


def content_hash_of(cases: Sequence[EvalCase], index: int) -> str:
    """Case `index`'s content hash: the one the index keeps for a `CaseSequence` (its case read back need not
    be hashed again: ~5% of a model-free run), else the case's own."""
    if isinstance(cases, CaseSequence):
        return cases.content_hash_at(index)
    return cases[index].content_hash


def content_hash_list(cases: Sequence[EvalCase]) -> list[str]:
    """Every case's content hash, in order (ids may repeat before a set is checked, so not a mapping)."""
    if isinstance(cases, CaseSequence):
        return [cases.content_hash_at(index) for index in range(len(cases))]
    return [case.content_hash for case in cases]


def input_hashes(cases: Sequence[EvalCase]) -> Mapping[str, str]:
    """{case id: input hash}."""
    if isinstance(cases, CaseSequence):
        return _FactView(cases, cases.input_hash_at)
    return {case.case_id: case.input_hash for case in cases}


def case_sources(cases: Sequence[EvalCase]) -> Mapping[str, Mapping[str, Any]]:
    """{case id: where the case was read from, as a dict}, for the cases that know it."""
    if isinstance(cases, CaseSequence):
        return _FactView[Mapping[str, Any]](cases, functools.partial(_SourceFacts, cases), cases.source_fields_at)
    return {case.case_id: case.source.model_dump(mode="json") for case in cases if case.source}


class _SourceFacts(Mapping[str, Any]):
    """Where one case of a `CaseSequence` was read from, as `SourceLocation.model_dump(mode="json")` says it,
    made each time it is read. pydantic copies a mapping through `list(mapping.items())`, so building
    `EvalSetInfo.case_sources` from dicts made ahead would hold two dicts per case at once."""

    __slots__ = ("_cases", "_index")

    def __init__(self, cases: CaseSequence, index: int) -> None:
        self._cases = cases
        self._index = index

    def _dumped(self) -> dict[str, Any]:
        return self._cases.source_fields_at(self._index)

    def __getitem__(self, key: str) -> Any:
        return self._dumped()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dumped())

    def __len__(self) -> int:
        return len(self._dumped())

    def items(self) -> ItemsView[str, Any]:
        return self._dumped().items()


def turn_count(cases: Sequence[EvalCase]) -> int:
    """The number of turns of all the cases."""
    if isinstance(cases, CaseSequence):
        return sum(cases.turn_count_at(index) for index in range(len(cases)))
    return sum(len(case.turns) for case in cases)


def case_source(cases: Sequence[EvalCase], index: int) -> SourceLocation | None:
    """Where the case at `index` was read from: what an id check (over `case_ids`, repeats included) reports a
    problem with, built only for the few it reports."""
    if isinstance(cases, CaseSequence):
        return cases.source_at(index)
    return cases[index].source


def keep_ids(cases: Sequence[EvalCase], wanted: Callable[[str], bool]) -> Sequence[EvalCase]:
    """The cases whose id `wanted` accepts, in order: a view of a `CaseSequence` (nothing read back), else a
    new list."""
    if isinstance(cases, CaseSequence):
        return cases.select([index for index, case_id in enumerate(cases.ids()) if wanted(case_id)])
    return [case for case in cases if wanted(case.case_id)]


def cases_with(cases: Sequence[EvalCase], features: int) -> Iterator[EvalCase]:
    """The cases with any of `features` (`HAS_*`), in order; a `CaseSequence` reads back only those. (A case
    may no longer have the feature after an edit: callers test the case itself.)"""
    if isinstance(cases, CaseSequence):
        for index in range(len(cases)):
            if cases.features_at(index) & features:
                yield cases.case_at(index)
        return
    for case in cases:
        if case_features(case) & features:
            yield case


def edit_cases(cases: Sequence[EvalCase], edit: CaseEdit) -> Sequence[EvalCase]:
    """The cases with `edit` applied: a list's cases are changed in place (and the list returned), a
    `CaseSequence` records the edit (rule 3) and a new sequence is returned."""
    if isinstance(cases, CaseSequence):
        return cases.edited(edit)
    for case in cases:
        edit(case)
    return cases
