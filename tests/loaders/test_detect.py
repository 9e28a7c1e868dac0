from typing import Any

import pytest

from evalward.loaders import detect_format
from evalward.loaders.detect import describe_shape


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"evalward": 1, "cases": []}, "native"),
        ({"eval_set_id": "s", "eval_cases": []}, "adk_evalset"),
        ({"evalSetId": "s", "evalCases": []}, "adk_evalset"),  # detected, then reported as a problem
        ([{"query": "hi", "expected_tool_use": []}], "adk_legacy_test"),
        ([{"name": "c", "data": [{"query": "hi"}], "initial_session": {}}], "adk_legacy_evalset"),
        ([{"inputs": {"question": "q"}, "outputs": {"response": "r"}}], "langsmith"),
        ([{"inputs": {"messages": []}, "outputs": {"route": "x"}}], "langsmith"),
        ([{"input": {"question": "q"}, "output": {"expected_steps": ["a"]}}], "langchain_benchmarks"),
        # Only the third example names expected_steps: any example decides.
        (
            [{"inputs": {}, "outputs": {}}, {"inputs": {}}, {"inputs": {}, "outputs": {"expected_steps": []}}],
            "langchain_benchmarks",
        ),
        ([{"id": "T1", "input": "hi", "expected": {"agents": ["a"]}}], "multi_agent"),
        ({"something": "else"}, None),
        ([], None),
        ([1, 2], None),
        ("text", None),
        (None, None),
    ],
)
def test_detect_format(data: Any, expected: str | None) -> None:
    assert detect_format(data) == expected


def test_describe_shape_names_what_was_found() -> None:
    assert describe_shape({"a": 1, "b": 2}) == "an object with keys 'a', 'b'"
    assert describe_shape([{"x": 1}]) == "a list whose first item has keys 'x'"
    assert describe_shape([]) == "an empty list"
    assert describe_shape("s") == "a str"
