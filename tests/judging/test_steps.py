"""Judged teacher-forced steps (`match: judge`, judging/steps.py, metrics/step_judge.py) against the fake server.

Seed 001's Dune trajectory records the search "Denis Villanueve Brother"; the agent (adapters/graphs/
search_agent.py) searches "Denis Villeneuve brother". Exactly, that step fails: c = (1, 0, 1, 1),
survived_until = 1/4. A judge of "sufficiently similar" passes it: c = (1, 1, 1, 1), survived_until = 1.0.
The judge here is a lenient teacher (`lenient_teacher`) speaking through the real `openai` client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply

from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.judging.judge_config import JudgeConfig
from evalward.metrics.registry import check_specs, needs_judge
from evalward.metrics.step_judge import STEP_ANSWER_SYSTEM, STEP_CALLS_SYSTEM, calls_prompt
from evalward.model import MetricSpec, RunResult, ToolCall

GRAPHS = Path(__file__).resolve().parents[1] / "adapters" / "graphs"
AGENT_FILE = GRAPHS / "search_agent.py"
TARGETS = [
    pytest.param(f"{AGENT_FILE}:python_agent", id="python"),
    pytest.param(f"langgraph:{AGENT_FILE}:state_graph", id="StateGraph+ToolNode"),
]


def _normal(text: str) -> str:
    return text.lower().replace("villanueve", "villeneuve")


def lenient_teacher(body: dict[str, Any]) -> Reply:
    """Calls are similar when their names and queries agree up to case and the Villeneuve spelling; an answer
    is correct when it contains the reference answer."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if system == STEP_CALLS_SYSTEM:
        expected = user.split("EXPECTED CALLS:\n")[1].split("\n\nPROPOSED CALLS:\n")[0]
        proposed = user.split("\n\nPROPOSED CALLS:\n")[1]
        similar = sorted(map(_normal, expected.splitlines())) == sorted(map(_normal, proposed.splitlines()))
        return Reply.json(
            {"reasoning": "same searches up to spelling" if similar else "other searches", "is_similar": similar}
        )
    assert system == STEP_ANSWER_SYSTEM
    reference = user.split("REFERENCE ANSWER:\n")[1].split("\n\nANSWER:\n")[0]
    answer = user.split("\n\nANSWER:\n")[1]
    correct = reference in answer
    return Reply.json({"reasoning": f"looked for {reference!r}", "is_correct": correct})


def judged_eval(tmp_path: Path, **options: Any) -> Path:
    doc = json.loads((GRAPHS / "seed001.eval.json").read_text())
    doc["metrics"] = [{"name": "survived_until", "threshold": 1.0, "match": "judge", **options}]
    path = tmp_path / "seed001.judged.eval.json"
    path.write_text(json.dumps(doc))
    return path


def run(path: Path, target: str, fake: FakeOpenAI, tmp_path: Path, usage: list[Any] | None = None) -> RunResult:
    judge = JudgeConfig(model="judge-model", base_url=fake.base_url, cache_url=f"sqlite:///{tmp_path}/cache.db")
    prepared = prepare(RunOptions(paths=[str(path)], agent=target, judge=judge))
    result = asyncio.run(run_prepared(prepared))
    if usage is not None:
        usage.append(prepared.judge_usage)
    return result


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.mark.parametrize("target", TARGETS)
def test_a_judge_passes_the_paraphrased_search_and_a_rerun_asks_nothing(tmp_path: Path, target: str) -> None:
    path = judged_eval(tmp_path)
    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = lenient_teacher
        usage: list[Any] = []
        first = run(path, target, fake, tmp_path, usage)
        asked_first = len(fake.completions())
        second = run(path, target, fake, tmp_path, usage)
        asked_second = len(fake.completions())

    # Judge requests: Dune step 2 (paraphrase) and its answer; SF/LA's answer. Steps 1 and 3 of Dune and
    # SF/LA's parallel step equal the reference exactly: no judge asked.
    assert asked_first == 3
    assert asked_second == 3  # the re-run was answered from the cache
    # The run's judge usage counts them (10 input / 5 output tokens per fake reply).
    assert [(u.completions, u.cached, u.input_tokens, u.output_tokens) for u in usage] == [(3, 0, 30, 15), (0, 3, 0, 0)]
    for result in (first, second):
        scores = {c.case_id: c.metrics for c in result.cases}
        # hand calculation: Dune c = (1, 1, 1, 1) -> 4/4, j* = 5 = N+1 -> (5-1)/4 = 1.0; SF/LA c = (1, 1) -> 1.0
        assert scores["dune2"]["stepwise_score"] == 1.0
        assert scores["dune2"]["survived_until"] == 1.0
        assert scores["sf_la"]["stepwise_score"] == 1.0
        assert scores["sf_la"]["survived_until"] == 1.0
        # The free run is still compared exactly: it left the reference at the paraphrased search.
        assert scores["dune2"]["free_running_survival"] == pytest.approx(1 / 3)
        assert [c.status for c in result.cases] == ["passed", "passed"]

    dune = next(c for c in first.cases if c.case_id == "dune2")
    steps = next(m for m in dune.metric_results if m.name == "stepwise_score").details["steps"]
    assert steps[0]["note"].endswith("-> 1 (exact match: no judge asked)")
    assert steps[1]["note"] == (
        'step 2: [tavily_search_results_json(query="Denis Villeneuve brother")] vs '
        '[tavily_search_results_json(query="Denis Villanueve Brother")]: judged SIMILAR -> 1'
    )
    assert steps[1]["judge"] == {
        "verdict": "SIMILAR",
        "reasoning": "same searches up to spelling",
        "cached_samples": 0,
        "model": "judge-model",
    }
    survived = next(m for m in dune.metric_results if m.name == "survived_until")
    assert survived.explanation == (
        "c=(1, 1, 1, 1), j*=5 (no error: N+1): (j*-1)/N = 4/4 = 1.000; judge: "
        "step 2 SIMILAR: same searches up to spelling | step 4 CORRECT: looked for '45'"
    )
    assert steps[3]["note"] == 'step 4 (final): answer "45": judged CORRECT against the reference answer -> 1'
    cached = next(c for c in second.cases if c.case_id == "dune2")
    cached_steps = next(m for m in cached.metric_results if m.name == "stepwise_score").details["steps"]
    assert cached_steps[1]["judge"]["cached_samples"] == 1
    # The judge is part of the recorded criteria (so the gate never compares different judges).
    criteria = first.eval_sets[0].criteria[0]
    assert criteria.options["judge"]["model"] == "judge-model"


def test_exact_matching_fails_the_paraphrase_at_step_2_of_4(tmp_path: Path) -> None:
    with FakeOpenAI(models=["judge-model"]) as fake:
        result = run(GRAPHS / "seed001.eval.json", f"{AGENT_FILE}:python_agent", fake, tmp_path)
        assert fake.completions() == []
    dune = next(c for c in result.cases if c.case_id == "dune2")
    # hand calculation: c = (1, 0, 1, 1): stepwise 3/4, j* = 2, survived_until (2-1)/4 = 0.25
    assert (dune.metrics["stepwise_score"], dune.metrics["survived_until"]) == (0.75, 0.25)


def test_a_judge_that_says_different_fails_the_step(tmp_path: Path) -> None:
    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = lambda body: Reply.json(
            {"reasoning": "strict", **({"is_similar": False} if "is_similar" in str(body) else {"is_correct": True})}
        )
        result = run(judged_eval(tmp_path), f"{AGENT_FILE}:python_agent", fake, tmp_path)
    dune = next(c for c in result.cases if c.case_id == "dune2")
    # hand calculation: the judge refuses step 2 -> c = (1, 0, 1, 1), survived_until 1/4 < 1.0 -> failed
    assert dune.metrics["survived_until"] == 0.25
    assert dune.status == "failed"
    steps = next(m for m in dune.metric_results if m.name == "stepwise_score").details["steps"]
    assert steps[1]["judge"]["verdict"] == "DIFFERENT"


def test_a_failing_judge_is_a_judge_error_not_a_zero(tmp_path: Path) -> None:
    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = lambda body: Reply.text("I refuse to answer in JSON.")
        result = run(judged_eval(tmp_path), f"{AGENT_FILE}:python_agent", fake, tmp_path)
    dune = next(c for c in result.cases if c.case_id == "dune2")
    assert dune.status == "error"
    assert dune.error is not None and dune.error.kind == "judge_error"
    survived = next(m for m in dune.metric_results if m.name == "survived_until")
    assert survived.status == "error" and survived.score is None
    assert survived.explanation.startswith("survived_until (match: judge): step 2: judge 'judge-model' answered")


def test_match_options_are_checked() -> None:
    assert check_specs([MetricSpec(name="stepwise_score", options={"match": "fuzzy"})]) == [
        "stepwise_score: match must be 'exact' or 'judge', found 'fuzzy'"
    ]
    assert check_specs([MetricSpec(name="stepwise_score", options={"num_samples": 3})]) == [
        "stepwise_score: option 'num_samples' needs match: judge; with exact matching the only option is 'match'"
    ]
    assert check_specs([MetricSpec(name="stepwise_score", options={"match": "judge", "num_samples": 0})]) == [
        "stepwise_score: num_samples must be an integer >= 1, found 0"
    ]
    assert check_specs([MetricSpec(name="teacher_forced_survival", options={"match": "judge"})]) == []
    assert needs_judge(MetricSpec(name="survived_until", options={"match": "judge"}))
    assert not needs_judge(MetricSpec(name="survived_until"))


def test_the_calls_prompt_shows_both_sides_as_json_lines() -> None:
    prompt = calls_prompt(
        "SF vs LA?",
        [
            ToolCall(name="search", args={"query": "temperature in SF"}),
            ToolCall(name="search", args={"query": "temperature in LA"}),
        ],
        [ToolCall(name="search", args={"query": "LA temperature"})],
    )
    assert prompt.messages[1]["content"] == (
        "REQUEST:\nSF vs LA?\n\n"
        'EXPECTED CALLS:\n{"arguments": {"query": "temperature in SF"}, "name": "search"}\n'
        '{"arguments": {"query": "temperature in LA"}, "name": "search"}\n\n'
        'PROPOSED CALLS:\n{"arguments": {"query": "LA temperature"}, "name": "search"}'
    )
    assert prompt.schema_name == "step_similarity"
