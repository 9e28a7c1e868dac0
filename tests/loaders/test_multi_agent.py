import json
from pathlib import Path

from evalward.loaders import load_paths
from evalward.model import MetricSpec

from .conftest import ProblemsOf


def test_cases_carry_expected_agents_and_tools_per_agent(fixtures: Path) -> None:
    [eval_set] = load_paths([fixtures / "multi_agent/agents.eval.json"]).sets
    assert eval_set.format == "multi_agent"
    weather, pair = eval_set.cases
    assert (weather.case_id, weather.description) == ("T1", "single tool - weather")
    [turn] = weather.turns
    assert turn.query == "What's the weather in Beijing today?"
    assert turn.expected_agents == ["simple_agent"]
    assert turn.expected_agent_tools == {"simple_agent": ["get_weather"]}
    assert pair.turns[0].expected_agent_tools == {"router": [], "simple_agent": ["translate", "get_weather"]}
    assert eval_set.criteria.metrics == [
        MetricSpec(name="agents_match", threshold=1.0),
        MetricSpec(name="agent_tools_match", threshold=1.0),
    ]


def test_unknown_expected_key_is_reported(problems_of: ProblemsOf) -> None:
    text = json.dumps([{"id": "T1", "input": "hi", "expected": {"agents": [], "tool": {}}}])
    [problem] = problems_of("x.eval.json", text)
    assert (problem.message, problem.case_id, problem.expected) == ("unknown key 'tool'", "T1", "one of agents, tools")
