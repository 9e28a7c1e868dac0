"""`traces.row_index`: rows found by the hash of their key or case id, sorted bucket by bucket."""

from __future__ import annotations

import random
from array import array

import pytest

from evalward.traces.row_index import RowIndex, hash_groups, signed64


def test_rows_are_found_by_key_and_by_case_in_the_order_added() -> None:
    index = RowIndex()
    index.add(("s", "a", 0, 0), 0, 10)
    index.add((None, "a", 1, 2), 11, 5)
    index.add(("s", "b", 0, 0), 17, 3)
    index.finish()
    assert index.rows_for_key(("s", "a", 0, 0)) == [0]
    assert index.rows_for_key(("s", "a", 9, 0)) == []
    assert index.rows_for_case("a") == [0, 1]
    assert (index.location(1), index.repeated(1), index.repeated(2)) == ((11, 5), True, False)
    assert len(index) == 3


def test_rows_sharing_a_hash_are_all_candidates() -> None:
    index = RowIndex(hasher=lambda value: 7 << 40)
    for row in range(5):
        index.add((None, f"c{row}", 0, 0), row, 1)
    index.finish()
    # Every key and every case has the same hash: the caller must read each row and compare its key.
    assert index.rows_for_key((None, "c9", 0, 0)) == [0, 1, 2, 3, 4]
    assert list(index.key_hash_groups()) == [[0, 1, 2, 3, 4]]
    assert list(index.case_hash_groups()) == [[0, 1, 2, 3, 4]]


def test_an_index_is_filled_then_finished() -> None:
    index = RowIndex()
    with pytest.raises(RuntimeError, match="not finished"):
        index.rows_for_case("a")
    index.finish()
    with pytest.raises(RuntimeError, match="finished"):
        index.add((None, "a", 0, 0), 0, 1)


@pytest.mark.parametrize("count", [0, 1, 100, 5000, 70_000])
def test_the_bucket_sort_groups_like_a_plain_sort(count: int) -> None:
    rng = random.Random(count)
    extremes = [-(1 << 63), (1 << 63) - 1, 0, -1]
    # Few distinct values, so that groups are large; extremes, so that the first and last buckets are used.
    pool = [signed64(rng.getrandbits(64)) for _ in range(max(1, count // 3))] + extremes
    hashes = [rng.choice(pool) for _ in range(count)]
    bits = max(1, count.bit_length())
    expected: dict[int, list[int]] = {}
    for row, hashed in enumerate(hashes):
        expected.setdefault(hashed >> bits, []).append(row)
    groups = list(hash_groups(array("q", hashes)))
    assert groups == [expected[prefix] for prefix in sorted(expected)]
