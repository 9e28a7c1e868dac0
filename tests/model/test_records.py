"""`model.records` views: records picked, joined and sorted by key without reading the ones kept elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.model import CaseResult
from evalward.model.records import Picked, in_key_order, joined, pick_where, record_keys, record_statuses
from evalward.spill import RecordLog


def result(case_id: str, repetition: int = 0, status: str = "passed", eval_set_id: str = "set") -> CaseResult:
    return CaseResult(eval_set_id=eval_set_id, case_id=case_id, repetition=repetition, status=status)  # type: ignore[arg-type]


class CountingLog(RecordLog[CaseResult]):
    """A spilled log that counts the records read back from its file."""

    def __init__(self) -> None:
        super().__init__(CaseResult, max_in_memory=0)
        self.reads = 0

    def _record(self, index: int) -> CaseResult:
        self.reads += 1
        return super()._record(index)


def spilled(results: list[CaseResult]) -> CountingLog:
    log = CountingLog()
    for item in results:
        log.append(item, item.key, item.status)
    return log


RESULTS = [result("c"), result("a", 1, "failed"), result("b"), result("a", 0, "error")]


@pytest.mark.parametrize("make", [list, spilled])
def test_pick_where_keeps_the_records_whose_key_is_accepted_in_order(make: Any) -> None:
    records = make(RESULTS)
    picked = pick_where(records, lambda key: key[1] == "a")
    assert list(picked) == [RESULTS[1], RESULTS[3]]
    assert record_keys(picked) == [("set", "a", 1), ("set", "a", 0)]
    assert record_statuses(picked) == ["failed", "error"]
    if isinstance(records, CountingLog):
        assert isinstance(picked, Picked) and records.reads == 2  # keys and statuses came without reading


@pytest.mark.parametrize("make", [list, spilled])
def test_joined_records_follow_each_other_and_sort_by_key(make: Any) -> None:
    first, second = make(RESULTS[:2]), [result("a", 2), result("d")]
    both = joined(first, second)
    assert list(both) == [*RESULTS[:2], *second]
    assert [r.key for r in in_key_order(both)] == [
        ("set", "a", 1),
        ("set", "a", 2),
        ("set", "c", 0),
        ("set", "d", 0),
    ]
    assert in_key_order(both)[-1] == second[1]
    assert isinstance(both, list) is (make is list)


def test_sorting_a_spilled_log_by_key_reads_no_record() -> None:
    log = spilled(RESULTS)
    ordered = in_key_order(log)
    assert log.reads == 0
    assert record_keys(ordered) == sorted(r.key for r in RESULTS)
    assert record_statuses(ordered) == ["error", "failed", "passed", "passed"]
    assert ordered[0] == RESULTS[3] and log.reads == 1


def test_picked_records_index_like_a_list() -> None:
    picked = Picked([RESULTS, [result("z")]], [(1, 0), (0, 2), (0, 0)])
    assert len(picked) == 3
    assert picked[-1] == RESULTS[0] and picked[0].case_id == "z"
    assert picked[0:2] == [result("z"), RESULTS[2]]
    with pytest.raises(IndexError):
        picked[3]
