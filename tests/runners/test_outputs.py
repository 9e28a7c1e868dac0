"""`coerce_output` (src/evalward/runners/outputs.py): what agents may answer and how bad answers are described."""

from __future__ import annotations

import pytest

from evalward.model import AgentOutput, ToolCall
from evalward.runners.base import AgentFailure
from evalward.runners.outputs import coerce_output, snippet


def test_a_dict_an_output_model_and_a_string_are_accepted() -> None:
    assert coerce_output({"response": "r", "tool_calls": [{"name": "t"}], "route": "x"}) == AgentOutput(
        response="r", tool_calls=[ToolCall(name="t")], outputs={"route": "x"}
    )
    model = AgentOutput(response="m")
    assert coerce_output(model) is model
    assert coerce_output("just text") == AgentOutput(response="just text")


def malformed(value: object) -> str:
    with pytest.raises(AgentFailure) as caught:
        coerce_output(value)
    assert caught.value.kind == "malformed_output"
    return caught.value.message


def test_a_wrong_field_is_named_with_what_was_found() -> None:
    assert malformed({"tool_calls": [{"name": "ok"}, {"name": 3}]}) == (
        "malformed agent output: tool_calls[1].name: Input should be a valid string (found 3)"
    )


def test_many_problems_are_summarised() -> None:
    message = malformed({"tool_calls": [{}, {}, {}, {}, {}]})
    # five calls without a name: three are listed, the other two counted
    assert message.count("Field required") == 3
    assert message.endswith("; … and 2 more")


def test_other_types_are_rejected_with_their_type() -> None:
    assert malformed(42) == (
        'malformed agent output: expected an object like {"response": ..., "tool_calls": [...]}, '
        "an AgentOutput or a string; found int 42"
    )
    assert malformed(None).endswith("found NoneType null")


def test_an_error_output_is_an_agent_error() -> None:
    with pytest.raises(AgentFailure) as caught:
        coerce_output({"error": "quota", "retryable": True})
    assert (caught.value.kind, caught.value.message, caught.value.retryable) == (
        "agent_error",
        "the agent reported an error: quota",
        True,
    )


def test_snippets_are_single_line_and_bounded() -> None:
    assert snippet("a\nb") == '"a\\nb"'
    assert snippet({"k": "x" * 500}, limit=20) == '{"k": "xxxxxxxxxxxx…'
    assert len(snippet({"k": "x" * 500}, limit=20)) == 20
