import json
from pathlib import Path

from evalward.loaders import load_paths
from evalward.loaders.langsmith import example_case_id
from evalward.model import MetricSpec

from .conftest import ProblemsOf


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
