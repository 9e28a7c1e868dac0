"""`loaders.indexed_cases`: cases read back from the file on demand, per-case facts kept, and what that costs."""

from __future__ import annotations

import copy
import gc
import json
import os
import pickle
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import EvalFileError
from evalward.loaders import load_paths
from evalward.loaders.documents import read_source
from evalward.loaders.indexed_cases import IdStrings, IndexedCases, _IdBuffer
from evalward.loaders.streamed import load_streamed
from evalward.model import EvalSet


def write_evalset(path: Path, cases: int) -> Path:
    body = {
        "eval_set_id": "orders",
        "eval_cases": [
            {
                "eval_id": f"order_{n}",
                "conversation": [
                    {
                        "invocation_id": f"inv-{n}",
                        "user_content": {"role": "user", "parts": [{"text": f"Where is order {n}? ✈"}]},
                        "final_response": {"role": "model", "parts": [{"text": f"Order {n} has shipped."}]},
                        "intermediate_data": {"tool_uses": [{"name": "lookup_order", "args": {"order_id": n}}]},
                    }
                ],
                "session_input": {"app_name": "shop", "user_id": "u", "state": {}},
            }
            for n in range(cases)
        ],
    }
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def indexed(path: Path, **options: Any) -> tuple[EvalSet, IndexedCases]:
    """The set in `path`, streamed with `options` (`cache_size`, `whole_set`)."""
    streamed = load_streamed(read_source(path, str(path)), "orders", **options)
    assert streamed is not None and streamed.eval_set is not None
    cases = streamed.eval_set.cases
    assert isinstance(cases, IndexedCases)
    return streamed.eval_set, cases


@pytest.fixture
def ten(tmp_path: Path) -> Path:
    return write_evalset(tmp_path / "orders.evalset.json", 10)


@pytest.fixture
def whole(ten: Path) -> EvalSet:
    return load_paths([ten], stream=False).sets[0]


def test_length_indexing_and_iteration(ten: Path, whole: EvalSet) -> None:
    _, cases = indexed(ten, cache_size=3, whole_set=0)
    assert len(cases) == 10
    assert cases[0] == whole.cases[0]
    assert cases[-1] == whole.cases[9]
    assert cases[-10] == whole.cases[0]
    for beyond in (10, -11):
        with pytest.raises(IndexError):
            cases[beyond]
    assert list(cases) == list(whole.cases)
    assert cases == whole.cases


def test_slices_are_views_with_their_own_facts(ten: Path, whole: EvalSet) -> None:
    _, cases = indexed(ten, cache_size=3, whole_set=0)
    middle = cases[2:8:3]
    assert isinstance(middle, IndexedCases)
    assert list(middle.ids()) == ["order_2", "order_5"]
    assert list(middle) == [whole.cases[2], whole.cases[5]]
    assert middle.content_hash_at(1) == whole.cases[5].content_hash
    source = middle.source_at(1)
    assert source == whole.cases[5].source
    assert list(cases[::-1].ids())[:2] == ["order_9", "order_8"]


def test_recent_cases_come_from_the_cache_older_ones_from_the_file(ten: Path) -> None:
    _, cases = indexed(ten, cache_size=3, whole_set=0)
    first = cases[0]
    assert cases[0] is first  # a case's repetitions, one after another: one read
    for index in (1, 2, 3):
        cases[index]
    again = cases[0]  # pushed out by three others: read again, equal but not the same object
    assert again == first and again is not first
    assert cases[3] is cases[3]


def test_a_small_set_keeps_every_case_it_mapped(ten: Path) -> None:
    _, cases = indexed(ten, cache_size=3, whole_set=10)
    assert [cases[i] for i in range(10)] == [cases[i] for i in range(10)]
    assert all(cases[i] is cases[i] for i in range(10))


def test_a_kept_case_changed_by_its_holder_hashes_as_changed(ten: Path) -> None:
    # As with a list: whoever holds a kept case may change it, and its content hash is then of the change.
    _, cases = indexed(ten, cache_size=3, whole_set=10)
    case = cases[2]
    before = case.content_hash
    fresh = cases[3]
    fresh.session_input = None
    assert fresh.content_hash != cases.content_hash_at(3)
    assert case.content_hash == before == cases.content_hash_at(2)


def test_facts_need_no_case_read_back(ten: Path, whole: EvalSet, monkeypatch: pytest.MonkeyPatch) -> None:
    eval_set, cases = indexed(ten, cache_size=1, whole_set=0)
    eval_set.path = whole.path

    def unreadable(*_: object) -> None:
        raise AssertionError("a case was read back")

    monkeypatch.setattr(type(cases._origin), "read", unreadable)
    eval_set.criteria = whole.criteria
    assert eval_set.case_ids() == whole.case_ids()
    assert dict(eval_set.case_hashes()) == dict(whole.case_hashes())
    assert dict(eval_set.case_input_hashes()) == dict(whole.case_input_hashes())
    assert {k: dict(v) for k, v in eval_set.case_sources().items()} == whole.case_sources()
    # Dumped (a run's first row) without going through a mapping per case: the same JSON as the listed set's.
    from evalward._pipeline.options import eval_set_info

    assert eval_set_info(eval_set).model_dump_json() == eval_set_info(whole).model_dump_json()
    assert eval_set.content_hash == whole.content_hash
    assert eval_set.turn_count() == 10
    assert eval_set.case_hashes()["order_7"] == whole.cases[7].content_hash
    assert cases.position("order_7") == 7 and cases.position("nope") is None


def test_a_deep_copy_and_a_pickle_read_the_same_cases(ten: Path, whole: EvalSet) -> None:
    eval_set, cases = indexed(ten, cache_size=2, whole_set=0)
    cases[1]
    copied = copy.deepcopy(cases)
    assert copied == whole.cases
    assert copied[1] is not cases[1]  # a copy's cases are its own
    assert pickle.loads(pickle.dumps(cases)) == whole.cases
    assert eval_set.model_copy(deep=True).cases == whole.cases


def test_a_file_changed_after_loading_is_an_error_not_another_case(ten: Path) -> None:
    _, cases = indexed(ten, cache_size=1, whole_set=0)
    text = ten.read_text(encoding="utf-8")
    ten.write_text(text.replace("Where is", "Where's "), encoding="utf-8")
    os.utime(ten, ns=(1, 1))  # a changed modification time, whatever the clock's resolution
    with pytest.raises(EvalFileError, match="changed"):
        cases[4]


def test_a_file_gone_after_loading_is_an_error(ten: Path) -> None:
    _, cases = indexed(ten, cache_size=1, whole_set=0)
    ten.unlink()
    with pytest.raises(EvalFileError, match="went away"):
        cases[4]


def test_an_initial_session_applies_to_cases_read_back(ten: Path, tmp_path: Path) -> None:
    session = tmp_path / "session.json"
    session.write_text(json.dumps({"state": {"tier": "gold"}}), encoding="utf-8")
    [eval_set] = load_paths([ten], initial_session_path=session).sets
    assert isinstance(eval_set.cases, IndexedCases)
    assert eval_set.cases[3].session_input is not None
    assert eval_set.cases[3].session_input.state == {"tier": "gold"}
    assert eval_set.case_hashes()["order_3"] == eval_set.cases[3].content_hash


def test_a_loaded_set_keeps_under_a_kilobyte_per_case(tmp_path: Path) -> None:
    """20,000 one-turn cases: what stays allocated after loading is the index (~150 bytes a case: id, two
    digests, offsets), not the cases (~2 KB each as `EvalCase`s). 1 KB a case is a generous bound."""
    one_turn = {"user_content": {"parts": [{"text": "Where is my order?"}]}}
    body = {
        "eval_set_id": "s",
        "eval_cases": [{"eval_id": f"order_{n}", "conversation": [one_turn]} for n in range(20_000)],
    }
    large = tmp_path / "orders.evalset.json"
    large.write_text(json.dumps(body), encoding="utf-8")
    load_paths([write_evalset(tmp_path / "warm.evalset.json", 3)])  # validators built on first use are not per case
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        [eval_set] = load_paths([large]).sets
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(eval_set.cases) == 20_000
    assert retained / 20_000 <= 1024, f"{retained / 20_000:.0f} bytes per case"


def test_a_large_sets_ids_are_one_blob_read_back_exactly() -> None:
    """`IdStrings` (a large set's ids): the same strings as a list, non-ASCII and an escaped lone surrogate
    included, by index, slice, iteration and `pick`."""
    ids = ["order_1", "ordre_é", "注文", "\ud800x", "", "order_10"]
    buffer = _IdBuffer()
    for case_id in ids:
        buffer.append(case_id)
    strings = buffer.strings()
    assert isinstance(strings, IdStrings) and len(strings) == len(ids)
    assert list(strings) == ids and strings == ids
    assert [strings[i] for i in range(len(ids))] == ids and strings[-1] == "order_10"
    assert strings[1:4] == ids[1:4]
    assert list(strings.pick([5, 0, 3])) == ["order_10", "order_1", "\ud800x"]
