"""`loaders.locate`: positions found on demand equal `positions.index_json`'s, for any JSON text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.loaders.locate import LocatedIndex
from evalward.loaders.positions import PathKey, index_json

_keys = st.text(alphabet=st.sampled_from(list('ab"\\é ✈\n')), max_size=4)  # escapes, non-ASCII, newlines
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)
layouts = st.sampled_from([{"indent": None}, {"indent": 2}, {"indent": "\t"}, {"separators": (",", ":")}])


def asked(index: Any, paths: list[PathKey]) -> list[tuple[Any, Any]]:
    """value_at and key_at of each path, of a child that does not exist, and of an index past the end."""
    out = []
    for path in paths:
        for probe in (path, (*path, "\u2603missing"), (*path, 10_000), (*path, -1)):
            out.append((index.value_at(probe), index.key_at(probe)))
    return out


@settings(max_examples=200, deadline=None)
@given(value=json_values, layout=layouts, reverse=st.booleans())
def test_every_path_is_where_index_json_says(value: Any, layout: dict[str, Any], reverse: bool) -> None:
    text = "\n " + json.dumps(value, ensure_ascii=False, **layout)
    full = index_json(text)
    paths = sorted(set(full.values) | set(full.keys), key=repr, reverse=reverse)
    located = LocatedIndex(text, text.index(text.strip()[0]))
    assert asked(located, paths) == asked(full, paths)


@settings(max_examples=100, deadline=None)
@given(value=json_values, layout=layouts)
def test_one_element_of_a_larger_text_is_located_with_the_texts_lines(value: Any, layout: dict[str, Any]) -> None:
    # How a streamed case is located: from its own start, with the line and column the file gives it.
    text = json.dumps({"eval_set_id": "x", "eval_cases": [{"eval_id": "a\nb"}, value]}, **layout)
    full = index_json(text)
    prefix: PathKey = ("eval_cases", 1)
    start = full.values[prefix]
    assert isinstance(start, int)
    where = full.value_at(prefix)
    assert where is not None
    element = LocatedIndex(text, start, prefix=prefix, base=start, line=where.line, column=where.column)
    paths = sorted((p for p in set(full.values) | set(full.keys) if p[:2] == prefix), key=repr)
    assert asked(element, paths) == asked(full, paths)
    # Read back alone, from the element's own text, it says the same.
    end = json.JSONDecoder().raw_decode(text, start)[1]
    alone = LocatedIndex(text[start:end], 0, prefix=prefix, line=where.line, column=where.column)
    assert asked(alone, paths) == asked(full, paths)


def test_a_path_outside_the_element_is_asked_of_the_outer_index() -> None:
    text = '{"name": "n", "eval_cases": [{"eval_id": "a"}]}'
    full = index_json(text)
    start = text.index('{"eval_id"')
    element = LocatedIndex(text, start, prefix=("eval_cases", 0), base=start, line=1, column=start + 1, outer=full)
    assert element.key_at(("name",)) == full.key_at(("name",))
    assert LocatedIndex(text, start, prefix=("eval_cases", 0), base=start).value_at(("name",)) is None
