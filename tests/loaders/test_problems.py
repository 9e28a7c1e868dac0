from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from evalward.loaders.documents import parse_text
from evalward.loaders.problems import Problems, describe_value
from evalward.model import SourceLocation


class _Leaf(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False)

    tool_name: str
    count: int = 0


class _Root(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False)

    leaf_items: list[_Leaf]
    note: str | None = None


def _problems(text: str) -> Problems:
    return Problems(parse_text(text, "f.json", suffix=".json"))


def test_describe_value() -> None:
    assert describe_value("abc") == 'string "abc"'
    assert describe_value(3) == "number 3"
    assert describe_value(True) == "boolean true"
    assert describe_value(None) == "null null"
    assert describe_value([1]) == "array [1]"
    long = describe_value("x" * 200)
    assert long.startswith('string "xxx') and long.endswith("…") and len(long) == len("string ") + 80


def test_validation_errors_point_into_camel_case_data() -> None:
    text = '{\n  "leafItems": [\n    {"toolName": 1, "colour": "red"},\n    {}\n  ]\n}'
    problems = _problems(text)
    assert problems.validate(_Root, problems.document.data, case_id="c") is None
    rendered = [(p.line, p.column, p.json_path, p.message, p.expected, p.found) for p in problems.items]
    assert rendered == [
        # The value 1 of "toolName" starts at column 18 of line 3.
        (3, 18, "$.leafItems[0].toolName", "Input should be a valid string", None, "number 1"),
        (3, 21, "$.leafItems[0].colour", "unknown key 'colour'", "one of tool_name, count", "'colour'"),
        (4, 5, "$.leafItems[1]", "missing required key 'tool_name'", "key 'tool_name'", None),
    ]
    assert {p.case_id for p in problems.items} == {"c"}


def test_add_uses_the_nearest_known_position_and_source_locations() -> None:
    problems = _problems('{"a": {"b": 1}}')
    problems.add("missing thing", ("a", "zzz"), expected="x")
    [problem] = problems.items
    assert (problem.line, problem.column, problem.json_path) == (1, 7, "$.a.zzz")
    assert problems.source(("a", "b")) == SourceLocation(path="f.json", line=1, column=13, json_path="$.a.b")


def test_warnings_carry_the_position_of_the_key() -> None:
    problems = _problems('{\n  "odd": 1\n}')
    problems.warn("odd key", ("odd",))
    assert problems.warnings == ["f.json:2:3: odd key"]
