import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from evalward.errors import EvalFileError
from evalward.loaders import load_paths, native_json_schema
from evalward.model import IntermediateResponse, Message, MetricSpec, SessionInput, ToolCall

from .conftest import LoadText, ProblemsOf


def test_the_example_file_maps_every_expectation(fixtures: Path) -> None:
    path = fixtures / "native/music_store.eval.yaml"
    [eval_set] = load_paths([path]).sets
    assert (eval_set.format, eval_set.eval_set_id, eval_set.name) == ("native", "music_store", "Music store support")
    assert eval_set.criteria.origin == "native"
    assert eval_set.criteria.metrics == [
        MetricSpec(name="trajectory_subsequence", threshold=1.0),
        MetricSpec(name="response_rouge1", threshold=None),
        MetricSpec(name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": "IN_ORDER"}),
    ]
    refund, album, router = eval_set.cases

    assert (refund.case_id, refund.description, refund.must_pass, refund.tags) == (
        "refund_invoice",
        "full refund of one invoice",
        True,
        ["refund"],
    )
    assert refund.session_input == SessionInput(state={"customer_id": 7})
    assert refund.expected_state == {"refunded": [237]}
    assert refund.metrics == [MetricSpec(name="state_exact", threshold=1.0)]
    [turn] = refund.turns
    assert turn.query == "I'd like a full refund for invoice 237"
    assert turn.expected_response == "You have been refunded $0.99."
    assert turn.expected_tool_calls == [ToolCall(name="refund", args={"invoice_id": 237}, agent="refund_agent")]
    assert turn.expected_trajectory == ["refund_agent", "refund"]
    assert turn.expected_outputs == {"route": "refund_agent"}
    assert refund.source is not None and (refund.source.line, refund.source.column) == (13, 5)
    assert turn.source == refund.source

    first, second = album.turns
    assert first.invocation_id == "t1"
    assert first.expected_agents == ["question_answering_agent"]
    assert first.expected_agent_tools == {"question_answering_agent": ["lookup_album"]}
    assert first.expected_intermediate_responses == [
        IntermediateResponse(author="question_answering_agent", text="Looking up the album.")
    ]
    assert first.reference_messages is not None
    assert first.reference_messages[1] == Message(
        role="assistant", tool_calls=[ToolCall(name="lookup_album", args={"title": "Wish You Were Here"}, id="call_1")]
    )
    assert first.reference_messages[2] == Message(
        role="tool", tool_call_id="call_1", name="lookup_album", content="Pink Floyd"
    )
    assert first.source is not None and first.source.json_path == "$.cases[1].turns[0]"
    assert (second.inputs, second.expected_tool_calls, second.expected_response) == (
        {"artist_hint": "Pink Floyd"},
        [],
        None,
    )

    [router_turn] = router.turns
    # No `query`: the last user message of `inputs.messages` is the query (rule 3a), not "".
    assert router_turn.query == "Any Rolling Stones recommendations?"
    assert router_turn.inputs == {"messages": [{"role": "user", "content": "Any Rolling Stones recommendations?"}]}
    assert router_turn.expected_outputs == {"route": "question_answering_agent"}


def test_without_metrics_the_criteria_follow_the_expectations(load_text: LoadText) -> None:
    text = """
evalward: 1
cases:
  - id: a
    query: q
    expect: {response: r, tool_calls: [{name: f}], trajectory: [x], agents: [m], agent_tools: {m: [f]}, outputs: {route: r, lang: en}}
    expected_state: {done: true}
"""
    eval_set = load_text("plain.eval.yaml", text)
    assert eval_set.eval_set_id == "plain"
    assert eval_set.criteria.origin == "format_defaults"
    assert [m.describe() for m in eval_set.criteria.metrics] == [
        "tool_trajectory_avg_score>=1",
        "trajectory_subsequence>=1",
        "agents_match>=1",
        "agent_tools_match>=1",
        'output_match>=1 {"key": "route"}',
        'output_match>=1 {"key": "lang"}',
        "state_exact>=1",
        "response_rouge1",
    ]
    assert eval_set.cases[0].turns[0].expected_tool_calls == [ToolCall(name="f", args=None)]


def test_metric_entries_thresholds_and_options(load_text: LoadText) -> None:
    text = """
evalward: 1
metrics:
  - trajectory_f1
  - {name: response_rouge1}
  - {name: output_match, threshold: 0.5, key: route}
  - tool_call_count_v1
  - {name: tool_trajectory_avg_score, match_type: 2, ignore_args: true}
cases:
  - {id: a, query: q, metrics: [{name: trajectory_f1, threshold: 0.9}]}
"""
    eval_set = load_text("m.eval.yaml", text)
    assert eval_set.criteria.metrics == [
        MetricSpec(name="trajectory_f1", threshold=1.0),
        MetricSpec(name="response_rouge1", threshold=1.0),
        MetricSpec(name="output_match", threshold=0.5, options={"key": "route"}),
        MetricSpec(name="tool_call_count_v1", threshold=None),
        MetricSpec(
            name="tool_trajectory_avg_score", threshold=1.0, options={"match_type": "ANY_ORDER", "ignore_args": True}
        ),
    ]
    # The case's own threshold replaces the set's for that case.
    case = eval_set.cases[0]
    assert eval_set.metrics_for(case)[0] == MetricSpec(name="trajectory_f1", threshold=0.9)


def test_json_native_files_work_too(load_text: LoadText) -> None:
    text = json.dumps({"evalward": 1, "eval_set_id": "j", "cases": [{"id": "a", "query": "hi"}]})
    eval_set = load_text("anything.json", text)
    assert (eval_set.format, eval_set.eval_set_id, eval_set.cases[0].turns[0].query) == ("native", "j", "hi")


def test_unknown_keys_are_reported_with_yaml_positions(problems_of: ProblemsOf) -> None:
    text = "evalward: 1\ncases:\n  - id: a\n    query: q\n    expect:\n      respons: r\n"
    [problem] = problems_of("x.eval.yaml", text)
    assert problem.message == "unknown key 'respons'"
    assert (problem.line, problem.column, problem.json_path, problem.case_id) == (
        6,
        7,
        "$.cases[0].expect.respons",
        "a",
    )
    assert problem.expected is not None and problem.expected.startswith("one of response, tool_calls,")


def test_case_shape_rules(problems_of: ProblemsOf) -> None:
    text = """evalward: 1
cases:
  - {id: both, query: q, turns: [{query: q}]}
  - {id: neither, tags: [x]}
  - {id: empty_turn, turns: [{expect: {response: r}}]}
  - {id: no_turns, turns: []}
"""
    problems = problems_of("x.eval.yaml", text)
    assert [(p.case_id, p.line, p.message) for p in problems] == [
        ("both", 3, "a case has either 'turns' or the single-turn keys, not both (found query)"),
        ("neither", 4, "a case needs 'query' (or 'inputs') or 'turns'"),
        ("empty_turn", 5, "a turn needs 'query' or 'inputs'"),
        ("no_turns", 6, "List should have at least 1 item after validation, not 0"),
    ]


def test_metric_problems(problems_of: ProblemsOf) -> None:
    text = """evalward: 1
metrics:
  - {name: token_usage_v1, threshold: 10}
  - {name: tool_trajectory_avg_score, match_type: sideways}
  - {threshold: 1}
  - no_such_metric
cases:
  - {id: a, query: q, metrics: [{name: trajectory_f1, threshold: high}]}
"""
    problems = problems_of("x.eval.yaml", text, known_metrics={"trajectory_f1"})
    assert [(p.line, p.message) for p in problems] == [
        (3, "token_usage_v1 takes no threshold: it is reported as information only"),
        (4, "invalid match_type for tool_trajectory_avg_score"),
        (5, "missing required key 'name'"),
        (6, "unknown metric 'no_such_metric'"),
        (8, "Input should be a valid number, unable to parse string as a number"),
    ]
    assert problems[4].case_id == "a"


def test_version_and_duplicate_ids(problems_of: ProblemsOf) -> None:
    [problem] = problems_of("x.eval.yaml", "evalward: 2\ncases: []\n")
    assert (problem.json_path, problem.message) == ("$.evalward", "Input should be 1")
    [problem] = problems_of("y.eval.yaml", "evalward: 1\ncases:\n  - {id: a, query: q}\n  - {id: a, query: r}\n")
    assert (problem.message, problem.line, problem.found) == (
        "duplicate case id 'a'",
        4,
        "the same id again (first at line 3)",
    )


def _schema_errors(data: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(native_json_schema())
    messages: list[str] = []
    pending = list(validator.iter_errors(data))
    while pending:  # oneOf failures carry the reason of each branch in `context`
        error = pending.pop(0)
        messages.append(error.message)
        pending.extend(error.context or [])
    return messages


def test_json_schema_describes_the_format(fixtures: Path) -> None:
    schema = native_json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "evalward eval file"
    jsonschema.Draft202012Validator.check_schema(schema)
    example = yaml.safe_load((fixtures / "native/music_store.eval.yaml").read_text())
    assert _schema_errors(example) == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"cases": []}, "'evalward' is a required property"),
        (
            {"evalward": 1, "cases": [{"id": "a", "query": "q", "expekt": {}}]},
            "Additional properties are not allowed ('expekt' was unexpected)",
        ),
        ({"evalward": 1, "cases": [{"query": "q"}]}, "'id' is a required property"),
        ({"evalward": 1, "cases": [], "metrics": [{"threshold": 1}]}, "'name' is a required property"),
    ],
)
def test_json_schema_rejects_bad_files(data: dict[str, Any], message: str) -> None:
    errors = _schema_errors(data)
    assert any(message in error for error in errors), errors


def test_a_native_metric_option_typo_is_located_at_its_key(tmp_path: Path) -> None:
    text = (
        '{"evalward": 1, "eval_set_id": "s",\n'
        ' "metrics": [{"name": "tool_trajectory_avg_score", "threshold": 1, "ignore_arg": true}],\n'
        ' "cases": [{"id": "a", "query": "q"}]}\n'
    )
    path = tmp_path / "set.eval.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvalFileError) as caught:
        load_paths([path])
    [problem] = caught.value.problems
    assert (problem.line, problem.json_path) == (2, "$.metrics[0].ignore_arg")
    assert problem.message == "tool_trajectory_avg_score: unknown option 'ignore_arg'"


def test_a_native_threshold_out_of_range_is_located_at_the_threshold(problems_of: ProblemsOf) -> None:
    text = (
        '{"evalward": 1, "eval_set_id": "s",\n'
        ' "metrics": [{"name": "response_exact", "threshold": 1.5}],\n'
        ' "cases": [{"id": "a", "query": "q", "expect": {"response": "r"}}]}\n'
    )
    [problem] = problems_of("set.eval.json", text)
    assert (problem.line, problem.column) == (2, text.splitlines()[1].index("1.5") + 1)
    assert problem.json_path == "$.metrics[0].threshold"
    assert problem.message == "response_exact: threshold must be between 0 and 1"
    assert (problem.expected, problem.found) == ("a number between 0 and 1", "number 1.5")


def test_a_case_metric_option_value_is_located_with_its_case(problems_of: ProblemsOf) -> None:
    text = (
        "evalward: 1\n"
        "eval_set_id: s\n"
        "cases:\n"
        "  - id: refund\n"
        "    query: q\n"
        "    metrics:\n"
        "      - name: response_contains\n"
        "        threshold: 1\n"
        "        mode: most\n"
    )
    [problem] = problems_of("set.eval.yaml", text)
    assert (problem.line, problem.json_path, problem.case_id) == (9, "$.cases[0].metrics[0].mode", "refund")
    assert problem.message == "response_contains: mode: expected 'all' or 'any'"
    assert problem.found == 'string "most"'


def test_a_turn_has_its_own_position_only_where_a_problem_can_be_reported_at_it(tmp_path: Path) -> None:
    """Turns with reference messages (whose problems are found after loading) know where they are; others are
    not walked to (a large set's load paid ~15 µs a turn for positions nothing reads)."""
    path = tmp_path / "mixed.eval.json"
    reference = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    document = {
        "evalward": 1,
        "eval_set_id": "mixed",
        "cases": [
            {"id": "two", "turns": [{"query": "plain"}, {"query": "hi", "reference_messages": reference}]},
            {"id": "short", "query": "one turn"},
        ],
    }
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    [eval_set] = load_paths([path]).sets
    two, short = eval_set.cases
    assert two.turns[0].source is None
    assert two.turns[1].source is not None and two.turns[1].source.json_path == "$.cases[0].turns[1]"
    assert short.turns[0].source == short.source and short.source is not None
