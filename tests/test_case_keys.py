"""`evalward.case_keys`: a run's cases numbered in plan order and ranked in key order, and the ranked key store
a run's record logs use (`evalward.spill.RankedKeys`): the same keys and order as tuples, a few bytes each."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.case_keys import CaseKeys
from evalward.model.records import order_by_codes
from evalward.spill import RankedKeys, TupleKeys

ids = st.text(alphabet="ab_1é", min_size=1, max_size=4)
sets_strategy = st.lists(
    st.tuples(st.sampled_from(["orders", "refunds", "a"]), st.lists(ids, max_size=12, unique=True)),
    min_size=1,
    max_size=4,
)


def test_numbers_follow_the_plan_and_ranks_follow_key_order() -> None:
    keys = CaseKeys([("refunds", ["r2", "r1"]), ("orders", ["o_10", "o_9", "o_1"])])
    assert len(keys) == 5
    assert [keys.key_of_number(n) for n in range(5)] == [
        ("refunds", "r2"),
        ("refunds", "r1"),
        ("orders", "o_10"),
        ("orders", "o_9"),
        ("orders", "o_1"),
    ]
    assert keys.number(1, 2) == 4
    # Key order compares strings: "o_1" < "o_10" < "o_9", and "orders" < "refunds".
    assert [keys.key(rank) for rank in range(5)] == [
        ("orders", "o_1"),
        ("orders", "o_10"),
        ("orders", "o_9"),
        ("refunds", "r1"),
        ("refunds", "r2"),
    ]
    assert [keys.rank(n) for n in range(5)] == [4, 3, 1, 2, 0]
    assert keys.rank_of_key(("orders", "o_9")) == 2


def test_extra_keys_not_in_the_plan_are_ranked_among_the_others() -> None:
    keys = CaseKeys([("orders", ["o2"])], extra=[("orders", "o1"), ("orders", "o2"), ("archive", "x")])
    assert len(keys) == 3  # ("orders", "o2") is planned: not added twice
    assert [keys.key(rank) for rank in range(3)] == [("archive", "x"), ("orders", "o1"), ("orders", "o2")]
    assert keys.rank_of_key(("orders", "o1")) == 1


@settings(max_examples=150, deadline=None)
@given(sets_strategy, st.randoms(use_true_random=False))
def test_ranks_are_the_sorted_positions_of_the_key_tuples(
    sets: list[tuple[str, list[str]]], shuffle: random.Random
) -> None:
    keys = CaseKeys(sets)
    tuples = [(set_id, case_id) for set_id, case_ids in sets for case_id in case_ids]
    expected = sorted(range(len(tuples)), key=tuples.__getitem__)  # stable: plan order among equal keys
    # Equal keys share the rank of the first of them (two files with one eval set id may repeat a case id).
    assert [keys.rank(number) for number in expected] == [
        next(p for p in range(len(expected)) if tuples[expected[p]] == tuples[number]) for number in expected
    ]
    assert [keys.key(rank) for rank in range(len(tuples))] == [tuples[n] for n in expected]

    # A log's ranked keys give back the tuples a tuple store holds, in the same order, for any arrival order.
    arrivals = [(number, repetition) for number in range(len(tuples)) for repetition in range(3)]
    shuffle.shuffle(arrivals)
    ranked, plain = RankedKeys(keys, repetitions=True), TupleKeys()
    for number, repetition in arrivals:
        ranked.append((keys.rank(number), repetition))
        plain.append((*tuples[number], repetition))
    assert [ranked[i] for i in range(len(ranked))] == [plain[i] for i in range(len(plain))]
    assert list(ranked.order()) == list(plain.order())


@given(st.lists(st.integers(min_value=-3, max_value=40), max_size=30))
def test_order_by_codes_is_a_stable_argsort(codes: list[int]) -> None:
    assert list(order_by_codes(codes)) == sorted(range(len(codes)), key=codes.__getitem__)


def test_order_by_codes_places_distinct_dense_codes_by_counting() -> None:
    codes = list(range(1000))
    random.Random(7).shuffle(codes)
    order = order_by_codes(codes)
    assert [codes[i] for i in order] == list(range(1000))
