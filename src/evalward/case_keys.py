"""A run's cases as numbers: what a large run keeps per case instead of `(eval_set_id, case_id)` tuples.

A run of a million cases that kept a key tuple per result, per case summary and per folded case would spend
a few hundred bytes a case on them (a tuple, its strings, the list slot) and scatter them among the objects
a run frees, pinning memory it can never give back. Here every case the run knows is numbered once, in plan
order (set by set, case by case), and given its **rank**: its place in key order, `(eval_set_id, case_id)`
compared as strings, as reports and the database list cases. Records are then kept by rank (an int in an
array); a key tuple is made only when somebody reads it, from the eval sets' own id lists.

Cases not in the plan (a resumed run's stored results whose case the plan no longer has) are added before
the ranks are computed (`CaseKeys(..., extra=...)`), so every rank is known before the first result arrives.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence

from evalward.model.cases import CaseKey


class CaseKeys:
    """The cases of `sets` (each an eval set id and its case ids, in plan order), plus `extra` keys, numbered
    and ranked; see the module docstring."""

    def __init__(self, sets: Sequence[tuple[str, Sequence[str]]], extra: Iterable[CaseKey] = ()) -> None:
        self._set_ids: list[str] = []
        self._ids: list[Sequence[str]] = []
        self._starts = array("q")
        total = 0
        for set_id, ids in sets:
            self._add_set(set_id, ids, total)
            total += len(ids)
        self.planned = total
        """Cases numbered from the plan (numbers below this); `extra` keys come after them."""
        self._by_key: dict[CaseKey, int] | None = None
        extras: dict[str, list[str]] = {}
        for set_id, case_id in extra:
            extras.setdefault(set_id, []).append(case_id)
        planned = self._lookup() if extras else {}
        for set_id, case_ids in extras.items():
            missing = [case_id for case_id in dict.fromkeys(case_ids) if (set_id, case_id) not in planned]
            if missing:
                self._add_set(set_id, missing, total)
                total += len(missing)
        self._total = total
        self._rank_of, self._number_at = self._ranks()

    def _add_set(self, set_id: str, ids: Sequence[str], start: int) -> None:
        self._set_ids.append(set_id)
        self._ids.append(ids)
        self._starts.append(start)

    def __len__(self) -> int:
        return self._total

    def number(self, set_index: int, row: int) -> int:
        """The number of case `row` of planned set `set_index`."""
        return self._starts[set_index] + row

    def key_of_number(self, number: int) -> CaseKey:
        part = bisect_right(self._starts, number) - 1
        return (self._set_ids[part], self._ids[part][number - self._starts[part]])

    def rank(self, number: int) -> int:
        """The case's place in key order (cases with equal keys share the first one's place)."""
        return self._rank_of[number]

    def key(self, rank: int) -> CaseKey:
        """The key of the case ranked `rank`."""
        return self.key_of_number(self._number_at[rank])

    def rank_of_key(self, key: CaseKey) -> int:
        """The rank of a case known by its key (a resumed run's stored results): a lookup table is built on
        first use, so a run that never asks does not pay for it."""
        if self._by_key is None:
            self._by_key = self._lookup()
        return self._rank_of[self._by_key[key]]

    def _lookup(self) -> dict[CaseKey, int]:
        found: dict[CaseKey, int] = {}
        for part, (set_id, ids) in enumerate(zip(self._set_ids, self._ids, strict=True)):
            start = self._starts[part]
            for row, case_id in enumerate(ids):
                found.setdefault((set_id, case_id), start + row)  # a repeated key: its first case
        return found

    def _ranks(self) -> tuple[array[int], array[int]]:
        """(rank of each number, number at each rank). Sets are taken in eval set id order; within one id the
        case ids are sorted as strings, by an index sort over the set's own id list (no tuple per case)."""
        by_set_id: dict[str, list[int]] = {}
        for part, set_id in enumerate(self._set_ids):
            by_set_id.setdefault(set_id, []).append(part)
        number_at = array("I")  # under 4 billion cases
        for set_id in sorted(by_set_id):
            parts = by_set_id[set_id]
            if len(parts) == 1:
                ids, start = self._ids[parts[0]], self._starts[parts[0]]
                number_at.extend(start + row for row in sorted(range(len(ids)), key=ids.__getitem__))
                continue
            numbers = [self._starts[part] + row for part in parts for row in range(len(self._ids[part]))]
            numbers.sort(key=lambda number: self.key_of_number(number)[1])
            number_at.extend(numbers)
        # Cases with equal keys (two files with one eval set id may both hold a case id) share the rank of the
        # first of them, so records sort by key exactly as tuples would.
        rank_of = array("I", bytes(4 * len(number_at)))
        previous: CaseKey | None = None
        shared = 0
        for rank, number in enumerate(number_at):
            key = self.key_of_number(number)
            if key != previous:
                shared, previous = rank, key
            rank_of[number] = shared
        return rank_of, number_at
