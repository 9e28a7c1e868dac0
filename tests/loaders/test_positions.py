import json

import pytest
import yaml

from evalward.loaders.positions import Position, PositionIndex, format_json_path, index_json, index_yaml


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
