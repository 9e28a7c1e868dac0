"""`loaders.json_stream`: the walk's own pieces (the loader's results are compared in test_streamed.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalward.loaders.documents import DocumentError
from evalward.loaders.json_stream import JsonlWalk, JsonWalk, WholeFile, _line_spans, exceeds, may_exceed
from evalward.loaders.positions import StructureLimits

_line_text = st.text(alphabet=st.sampled_from(list('ab {}"\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029')), max_size=30)


@given(text=_line_text)
def test_lines_split_where_splitlines_splits_them(text: str) -> None:
    assert [text[start:end] for start, end in _line_spans(text)] == text.splitlines()


def test_elements_come_with_their_place_in_the_text() -> None:
    text = '{"eval_set_id": "s",\n "eval_cases": [\n  {"eval_id": "a"},\n  {"eval_id": "b"}]}'
    walk = JsonWalk(text, "f.json", case_key="eval_cases")
    elements = list(walk.elements())
    walk.finish()
    assert [(e.path, e.line, e.column, text[e.start : e.end]) for e in elements] == [
        (("eval_cases", 0), 3, 3, '{"eval_id": "a"}'),
        (("eval_cases", 1), 4, 3, '{"eval_id": "b"}'),
    ]
    assert walk.top == {"eval_set_id": "s", "eval_cases": []}


def test_a_top_level_scalar_is_for_the_whole_file_reader() -> None:
    with pytest.raises(WholeFile):
        JsonWalk(' "text"', "f.json", case_key="eval_cases")


def test_later_elements_are_only_walked_once_a_problem_is_found() -> None:
    text = '[{"a": 1, "a": 2}, {"b": 1}]'
    walk = JsonWalk(text, "f.json", case_key="eval_cases")
    troubled = [walk.troubled for _ in walk.elements()]
    assert troubled == [True, True]
    with pytest.raises(DocumentError, match="duplicate key 'a'"):
        walk.finish()


def test_jsonl_records_are_numbered_by_record_and_placed_by_line() -> None:
    walk = JsonlWalk('\n  {"a": 1}\t\n\n{"b": 2}', "f.jsonl")
    found = [(e.path, e.line, e.column, e.value) for e in walk.elements()]
    walk.finish()
    assert found == [((0,), 2, 3, {"a": 1}), ((1,), 4, 1, {"b": 2})]


@pytest.mark.parametrize(
    ("value", "depth", "limits", "expected"),
    [
        ([[[]]], 0, StructureLimits(max_depth=3), False),
        ([[[]]], 1, StructureLimits(max_depth=3), True),
        ({"a": {"b": []}}, 0, StructureLimits(max_depth=2), True),
        ([1, 2, 3], 0, StructureLimits(max_values=4), False),
        ([1, 2, 3, 4], 0, StructureLimits(max_values=4), True),
        ({"a": 1, "b": [2]}, 0, StructureLimits(max_values=3), True),
    ],
)
def test_exceeds_measures_as_index_json_counts(
    value: object, depth: int, limits: StructureLimits, expected: bool
) -> None:
    # Hand count: [[[]]] at depth 1 has its innermost array at depth 3, which max_depth=3 refuses (a container
    # at depth >= max_depth); {"a": 1, "b": [2]} is 4 values (the object, 1, the list, 2), one over 3.
    assert exceeds(value, depth, limits) is expected


_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet="[{x", max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="ab", max_size=2), inner, max_size=3),
    max_leaves=15,
)


@given(value=_values, depth=st.integers(0, 4), max_depth=st.integers(1, 6), max_values=st.integers(1, 12))
def test_may_exceed_never_rules_out_what_exceeds_finds(
    value: object, depth: int, max_depth: int, max_values: int
) -> None:
    limits = StructureLimits(max_depth=max_depth, max_values=max_values)
    text = json.dumps(value, separators=(",", ":"))
    if exceeds(value, depth, limits):
        assert may_exceed(text, 0, len(text), depth, limits)
