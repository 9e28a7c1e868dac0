"""Case selection (`loaders.selection`): `--case` globs on the case id, and a `--sample` fixed by the case ids
alone."""

from __future__ import annotations

import pytest
from tests.fakes.cases import make_case, make_set, many_cases

from evalward.errors import UsageError
from evalward.loaders.selection import filter_cases, sample_cases
from evalward.model import EvalSet


def ids(sets: list[EvalSet]) -> list[str]:
    return [f"{s.eval_set_id}/{c.case_id}" for s in sets for c in s.cases]


def test_case_patterns_are_globs_on_the_case_id() -> None:
    sets = [make_set(*many_cases(3, prefix="refund"), *many_cases(2, prefix="ship"), eval_set_id="a")]
    assert ids(filter_cases(sets, ["refund-00[02]", "ship-*"])) == [
        "a/refund-000",
        "a/refund-002",
        "a/ship-000",
        "a/ship-001",
    ]
    with pytest.raises(UsageError) as caught:  # patterns are case-sensitive
        filter_cases(sets, ["Refund-*", "ship-*", "x"])
    assert str(caught.value) == (
        "--case 'Refund-*', 'x': no case id matches; the case ids are: 'refund-000', 'refund-001', 'refund-002', "
        "'ship-000', 'ship-001'"
    )


def test_a_sample_is_fixed_by_the_case_ids_alone() -> None:
    sets = [make_set(*many_cases(10, prefix=f"s{s}"), eval_set_id=f"set{s}") for s in range(3)]  # 30 cases
    chosen = ids(sample_cases(sets, 7))
    assert len(chosen) == 7
    # the same cases whatever the order they were read in, in file order
    reordered = [make_set(*reversed(s.cases), eval_set_id=s.eval_set_id) for s in reversed(sets)]
    assert sorted(ids(sample_cases(reordered, 7))) == sorted(chosen)
    assert chosen == [key for key in ids(sets) if key in chosen]
    # a larger sample contains the smaller one; adding a case moves at most one case out
    assert set(chosen) <= set(ids(sample_cases(sets, 8)))
    grown = [*sets[:-1], make_set(*sets[-1].cases, make_case("new-case"), eval_set_id=sets[-1].eval_set_id)]
    assert len(set(chosen) - set(ids(sample_cases(grown, 7)))) <= 1
    assert ids(sample_cases(sets, 100)) == ids(sets)
