import json
import tracemalloc

import pytest
import yaml

from evalward.loaders.positions import (
    Position,
    PositionIndex,
    StructureError,
    StructureLimits,
    format_json_path,
    index_json,
    index_yaml,
)


def test_index_json_records_values_and_keys_by_path() -> None:
    text = '{\n  "a": [1, {"b": "x"}],\n  "c": null\n}'
    index = index_json(text)
    assert index.value_at(()) == Position(1, 1)
    assert index.key_at(("a",)) == Position(2, 3)
    assert index.value_at(("a",)) == Position(2, 8)
    assert index.value_at(("a", 0)) == Position(2, 9)
    assert index.value_at(("a", 1)) == Position(2, 12)
    assert index.key_at(("a", 1, "b")) == Position(2, 13)
    assert index.value_at(("a", 1, "b")) == Position(2, 18)
    assert index.value_at(("c",)) == Position(3, 8)


def test_index_json_handles_escapes_and_brackets_inside_strings() -> None:
    # The key contains an escaped quote and braces; the value a backslash before the closing quote.
    text = '{"k\\"{[": "v\\\\", "n": -1.5e3, "u": "\\u00e9", "e": {}, "l": []}'
    data = json.loads(text)
    index = index_json(text)
    assert set(data) == {'k"{[', "n", "u", "e", "l"}
    assert index.key_at(('k"{[',)) == Position(1, 2)
    assert index.value_at(("n",)) == Position(1, text.index("-1.5e3") + 1)
    assert index.value_at(("u",)) == Position(1, text.index('"\\u00e9"') + 1)
    assert index.value_at(("l",)) == Position(1, text.index("[]") + 1)


def test_index_json_prefix_and_first_line_place_a_jsonl_record() -> None:
    index = index_json('{"x": 1}', prefix=(4,), first_line=7)
    assert index.value_at((4,)) == Position(7, 1)
    assert index.value_at((4, "x")) == Position(7, 7)


def test_value_at_falls_back_to_the_nearest_ancestor() -> None:
    index = PositionIndex(values={(): Position(1, 1), ("a",): Position(2, 3)})
    assert index.value_at(("a", 5, "missing")) == Position(2, 3)
    assert index.key_at(("a", "missing")) == Position(2, 3)
    assert PositionIndex().value_at(("a",)) is None


def test_index_yaml_uses_node_marks() -> None:
    text = "cases:\n  - id: one\n    query: hi\n  - {id: two}\n"
    index = index_yaml(yaml.compose(text, Loader=yaml.SafeLoader))
    assert index.key_at(("cases",)) == Position(1, 1)
    assert index.value_at(("cases", 0)) == Position(2, 5)
    assert index.value_at(("cases", 0, "query")) == Position(3, 12)
    assert index.key_at(("cases", 1, "id")) == Position(4, 6)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ((), "$"),
        (("eval_cases", 2, "conversation", 0), "$.eval_cases[2].conversation[0]"),
        (("odd key", "ünï", 1), '$["odd key"]["ünï"][1]'),
        ((3, "x"), "$[3].x"),
    ],
)
def test_format_json_path(path: tuple[str | int, ...], expected: str) -> None:
    assert format_json_path(path) == expected


def structure_problems(text: str, **limits: int) -> list[tuple[str, Position]]:
    with pytest.raises(StructureError) as caught:
        index_json(text, limits=StructureLimits(**limits))
    return [(p.message, p.position) for p in caught.value.problems]


def test_index_json_reports_every_repeated_key_with_both_places() -> None:
    text = '{"a": 1,\n "b": {"x": 1, "x": 2},\n "a": 3}'
    assert structure_problems(text) == [
        ("duplicate key 'x' (first at line 2, column 8)", Position(2, 16)),
        ("duplicate key 'a' (first at line 1, column 2)", Position(3, 2)),
    ]


def test_index_json_stops_at_the_first_limit_exceeded() -> None:
    assert structure_problems("[[[1]]]", max_depth=2) == [("values are nested more than 2 levels deep", Position(1, 3))]
    assert structure_problems("[1, 2, 3]", max_values=3) == [("more than 3 values in one document", Position(1, 8))]
    long_integer = '{"n": -' + "9" * 12 + "}"
    assert structure_problems(long_integer, max_integer_digits=11) == [("an integer with 12 digits", Position(1, 7))]
    # Floats are not integers: their conversion is linear.
    index_json('{"n": ' + "9" * 12 + ".5}", limits=StructureLimits(max_integer_digits=11))


def test_index_json_is_linear_in_a_long_string_of_escapes() -> None:
    # The former regular expression needed ~125 bytes per character here (2.5 GB for 20 MB).
    text = '{"q": "' + '\\"' * 2_000_000 + '", "n": 1}'
    tracemalloc.start()
    try:
        index = index_json(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert index.value_at(("n",)) == Position(1, len(text) - 1)
    assert peak < 3 * len(text)


def yaml_problems(text: str, **limits: int) -> list[tuple[str, Position, str | None]]:
    with pytest.raises(StructureError) as caught:
        index_yaml(yaml.compose(text, Loader=yaml.SafeLoader), limits=StructureLimits(**limits))
    return [(p.message, p.position, p.path and format_json_path(p.path)) for p in caught.value.problems]


def test_index_yaml_refuses_repeated_keys_but_not_merge_keys() -> None:
    text = "base: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n  y: 1\n  y: 2\n"
    assert yaml_problems(text) == [("duplicate key 'y' (first at line 5, column 3)", Position(6, 3), "$.m.y")]


def test_index_yaml_counts_values_with_aliases_expanded_and_integer_digits() -> None:
    bomb = "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"
    assert yaml_problems(bomb, max_values=30) == [
        ("this value expands to 40 values through its aliases (*name)", Position(3, 4), None)
    ]
    assert yaml_problems("n: 123456", max_integer_digits=5) == [("an integer with 6 digits", Position(1, 4), "$.n")]
