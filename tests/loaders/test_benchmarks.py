import json
from pathlib import Path

from evalward.loaders import load_paths
from evalward.loaders.langsmith import example_case_id
from evalward.model import MetricSpec

from .conftest import LoadText, ProblemsOf


def test_tool_usage_examples_map_steps_order_and_state(fixtures: Path) -> None:
    [eval_set] = load_paths([fixtures / "benchmarks/relational.eval.json"]).sets
    assert eval_set.format == "langchain_benchmarks"
    weather, foods, typewriter = eval_set.cases

    assert weather.case_id == "weather-la"
    [turn] = weather.turns
    assert turn.query == "weather in LA right now?"
    assert turn.expected_response == "Sunny, Temperature: 75°F"
    assert turn.expected_trajectory == ["find_locations_by_name", "get_current_weather_for_location"]
    assert turn.expected_order_matters is True
    assert weather.expected_state is None
    assert weather.metrics == [MetricSpec(name="trajectory_exact", threshold=1.0, options={"over": "steps"})]

    assert foods.case_id == example_case_id({"question": "What are the favourite foods of Alice and Bob?"})
    assert foods.turns[0].expected_order_matters is False
    assert foods.metrics == [MetricSpec(name="trajectory_same_multiset", threshold=1.0, options={"over": "steps"})]

    # `inputs`/`outputs` spellings work too; a missing order_matters means order matters; state is scored.
    assert typewriter.turns[0].expected_order_matters is None
    assert typewriter.expected_state == "abc"
    assert typewriter.metrics == [
        MetricSpec(name="trajectory_exact", threshold=1.0, options={"over": "steps"}),
        MetricSpec(name="state_exact", threshold=1.0),
    ]
    assert eval_set.criteria.metrics == [MetricSpec(name="response_rouge1")]
    assert eval_set.criteria.origin == "format_defaults"


def test_expected_steps_must_be_a_list_of_names(problems_of: ProblemsOf) -> None:
    text = json.dumps([{"id": "e1", "input": {"question": "q"}, "output": {"expected_steps": ["a", 2]}}])
    [problem] = problems_of("x.eval.json", text)
    assert (problem.json_path, problem.case_id, problem.found) == ("$[0].output.expected_steps[1]", "e1", "number 2")


def test_an_example_needs_inputs(problems_of: ProblemsOf) -> None:
    text = json.dumps([{"output": {"expected_steps": []}}])
    [problem] = problems_of("x.eval.json", text)
    assert problem.message == "an example needs 'input' (or 'inputs')"


def test_numeric_references_load_as_their_json_text(fixtures: Path) -> None:
    """multiverse_math's references are JSON numbers: each becomes the expected response's text."""
    [eval_set] = load_paths([fixtures / "benchmarks/multiverse_math.eval.json"]).sets
    assert eval_set.format == "langchain_benchmarks"
    assert [c.case_id for c in eval_set.cases] == [f"0b3e0f5c-5a1d-4c52-9d0e-2f1c8a7b6e0{i}" for i in range(1, 5)]
    assert [c.turns[0].expected_response for c in eval_set.cases] == ["6.2", "-18", "1.1", "0"]
    assert [c.turns[0].expected_trajectory for c in eval_set.cases][1] == ["add", "multiply", "negate"]
    assert eval_set.cases[2].metrics == [
        MetricSpec(name="trajectory_same_multiset", threshold=1.0, options={"over": "steps"})
    ]


def test_any_json_reference_loads(load_text: LoadText) -> None:
    examples = [
        {"id": "t", "inputs": {"question": "q"}, "outputs": {"reference": True, "expected_steps": []}},
        {
            "id": "l",
            "inputs": {"question": "q"},
            "outputs": {"reference": [2, {"b": 1, "a": "x"}], "expected_steps": []},
        },
        {"id": "n", "inputs": {"question": "q"}, "outputs": {"reference": None, "expected_steps": []}},
    ]
    eval_set = load_text("x.eval.json", json.dumps(examples))
    assert [c.turns[0].expected_response for c in eval_set.cases] == ["true", '[2, {"a": "x", "b": 1}]', None]
