"""Where each recorded turn is in a file, found by its key, in 33 bytes a turn.

A recording of a million turns cannot be a dict of a million `AgentOutput`s (gigabytes), nor even a dict of
a million key tuples (~200 MB). A `RowIndex` keeps, per row (a recorded turn, numbered in the order added):
- its byte offset and length in the file it came from (`array('q')`s: 16 bytes);
- whether its repetition is above 0 (1 byte), for the rule that replays a lone repetition 0;
- an entry in each of two sorted `array('q')`s (16 bytes): one ordered by the hash of the full key
  (eval set, case, turn, repetition), one by the hash of the case id alone. An entry is the 64-bit hash
  with its low bits replaced by the row number (as many bits as the row count needs): one 8-byte entry holds
  both, and rows sharing a hash sit together, in the order they were added.
`bisect` finds the rows whose hash matches a key. Different keys can share a hash (more so with the low bits
dropped), so the caller reads those rows back and compares the full key: a hash narrows the search and never
decides it.

Hashes are Python's `hash` by default: stable within a process, which is all an index that lives and dies
with one run needs. A test can pass another `hasher` (one that collides on purpose).

The entries are sorted bucket by bucket (by their top bits), so that only one bucket's entries are Python
ints at a time: sorting a million entries as one list would briefly cost ~40 MB, more than the index itself.
"""

from __future__ import annotations

import itertools
from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator

Key = tuple[str | None, str, int, int]
"""(eval_set_id or None, case_id, turn, repetition)."""

Hasher = Callable[[Hashable], int]

_SMALL_SORT = 1 << 12
"""Entries per bucket the bucket sort aims at (and below which it sorts in one go)."""


def signed64(value: int) -> int:
    """`value` folded into the range of a signed 64-bit integer (what `array('q')` holds)."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


class RowIndex:
    """Rows (offset, length) of a file, found by key or by case id; see the module docstring.

    Rows are added with `add`, then `finish` sorts the index; lookups work only after `finish`."""

    def __init__(self, hasher: Hasher = hash) -> None:
        self._hasher = hasher
        self._offsets = array("q")
        self._lengths = array("q")
        self._repeated = bytearray()
        self._by_key = array("q")
        self._by_case = array("q")
        self._bits = 0
        self._finished = False

    def add(self, key: Key, offset: int, length: int) -> None:
        """Record that the row with `key` is `length` bytes at `offset`."""
        if self._finished:
            raise RuntimeError("the index is finished; no rows can be added")
        self._offsets.append(offset)
        self._lengths.append(length)
        self._repeated.append(key[3] != 0)
        self._by_key.append(signed64(self._hasher(key)))
        self._by_case.append(signed64(self._hasher(key[1])))

    def finish(self) -> None:
        """Sort the index (once every row is added)."""
        if self._finished:
            return
        self._bits = max(1, len(self._offsets).bit_length())
        self._by_key = _pack_and_sort(self._by_key, self._bits)
        self._by_case = _pack_and_sort(self._by_case, self._bits)
        self._finished = True

    def __len__(self) -> int:
        return len(self._offsets)

    def location(self, row: int) -> tuple[int, int]:
        """(offset, length) of a row's bytes."""
        return self._offsets[row], self._lengths[row]

    def repeated(self, row: int) -> bool:
        """Whether the row's repetition is above 0."""
        return bool(self._repeated[row])

    def rows_for_key(self, key: Key) -> list[int]:
        """Rows that may hold `key` (its hash matches), in the order they were added."""
        return self._matching(self._by_key, self._hasher(key))

    def rows_for_case(self, case_id: str) -> list[int]:
        """Rows that may be of `case_id` (its hash matches), in the order they were added."""
        return self._matching(self._by_case, self._hasher(case_id))

    def key_hash_groups(self) -> Iterator[list[int]]:
        """Every set of two or more rows sharing a key hash: the only rows that can repeat a key."""
        return (rows for rows in self._groups(self._by_key) if len(rows) > 1)

    def case_hash_groups(self) -> Iterator[list[int]]:
        """Every row, grouped by the hash of its case id: all rows of a case are in one group."""
        return self._groups(self._by_case)

    def _matching(self, entries: array[int], hashed: int) -> list[int]:
        if not self._finished:
            raise RuntimeError("the index is not finished; call finish() first")
        prefix = (signed64(hashed) >> self._bits) << self._bits
        low = bisect_left(entries, prefix)
        high = bisect_left(entries, prefix + (1 << self._bits), low)
        mask = (1 << self._bits) - 1
        return [entries[position] & mask for position in range(low, high)]

    def _groups(self, entries: array[int]) -> Iterator[list[int]]:
        if not self._finished:
            raise RuntimeError("the index is not finished; call finish() first")
        return _groups(entries, self._bits)


def hash_groups(hashes: array[int]) -> Iterator[list[int]]:
    """Positions in `hashes` grouped by hash (with the low bits dropped, as in `RowIndex`), each group in
    order, for records that are read back one group at a time. `hashes` is used up (overwritten)."""
    bits = max(1, len(hashes).bit_length())
    return _groups(_pack_and_sort(hashes, bits), bits)


def _groups(entries: array[int], bits: int) -> Iterator[list[int]]:
    mask = (1 << bits) - 1
    group: list[int] = []
    current: int | None = None
    for entry in entries:
        prefix = entry >> bits
        if prefix != current and group:
            yield group
            group = []
        current = prefix
        group.append(entry & mask)
    if group:
        yield group


def _pack_and_sort(hashes: array[int], bits: int) -> array[int]:
    """`hashes` (one per row) with their low `bits` replaced by the row number, sorted, as a new array.

    Bucket sort on the top bits, then each bucket sorted on its own (module docstring: the memory peak)."""
    count = len(hashes)
    for row in range(count):
        hashes[row] = ((hashes[row] >> bits) << bits) + row
    bucket_bits = min(16, max(0, count.bit_length() - _SMALL_SORT.bit_length()))
    if bucket_bits == 0:
        return array("q", sorted(hashes))
    shift = 64 - bucket_bits
    half = 1 << (bucket_bits - 1)
    counts = [0] * (1 << bucket_bits)
    for entry in hashes:
        counts[(entry >> shift) + half] += 1
    starts = list(itertools.accumulate(counts, initial=0))
    ordered = array("q", bytes(8 * count))
    free = starts[:-1]
    for entry in hashes:
        bucket = (entry >> shift) + half
        ordered[free[bucket]] = entry
        free[bucket] += 1
    for low, high in itertools.pairwise(starts):
        if high - low > 1:
            ordered[low:high] = array("q", sorted(ordered[low:high]))
    return ordered
