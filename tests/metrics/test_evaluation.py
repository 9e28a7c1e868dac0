"""The one metric contract: every criterion reaches a `Metric` whose `evaluate` scores it, the handles that need I/O
arrive as Protocols in the context, and `score_case_run` folds the batches in a fixed order."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from evalward.metrics.base import Metric
from evalward.metrics.evaluation import BATCHES, score_case_run
from evalward.metrics.registry import JUDGE_METRICS, STEPWISE_METRICS, batch_of, known_metric_names, metric_for
from evalward.metrics.scoring_context import CaseScores, ScoringContext, StepJudge
from evalward.model import (
    AgentOutput,
    CaseError,
    CaseResult,
    EvalCase,
    Invocation,
    InvocationResult,
    Message,
    MetricResult,
    MetricSpec,
    ToolCall,
)
from evalward.runners.teacher_forcing_driver import StepAttempt

CUSTOM = {"custom_metric": {"code_config": {"name": "tests.fakes.custom_metrics.tool_count_match"}}}

CASE = EvalCase(case_id="c", turns=[Invocation(query="what is 2+2?", expected_response="4")])


def context(specs: Sequence[MetricSpec], **handles: object) -> ScoringContext:
    return ScoringContext(
        eval_set_id="s", case=CASE, repetition=0, specs=specs, outputs=[AgentOutput(response="4")], **handles
    )  # type: ignore[arg-type]


class FakeJudge:
    """A judge that answers without a model: what it was asked is recorded."""

    def __init__(self, scores: CaseScores) -> None:
        self.scores = scores
        self.asked: list[list[str]] = []

    async def score_judged(
        self, case: EvalCase, specs: Sequence[MetricSpec], outputs: Sequence[AgentOutput]
    ) -> CaseScores:
        self.asked.append([s.name for s in specs])
        return self.scores

    def step_judge(self, spec: MetricSpec) -> StepJudge | None:
        return None


def judged(name: str, score: float | None, status: str) -> MetricResult:
    return MetricResult(name=name, score=score, threshold=1.0, status=status, explanation="judged")  # type: ignore[arg-type]


def test_every_metric_kind_is_a_metric_with_an_async_evaluate() -> None:
    specs = [
        *(MetricSpec(name=name) for name in known_metric_names()),
        *(MetricSpec(name=name) for name in sorted(JUDGE_METRICS)),
        *(MetricSpec(name=name) for name in sorted(STEPWISE_METRICS)),
        MetricSpec(name="my_metric", options=CUSTOM),
    ]
    batches = set()
    for spec in specs:
        metric = metric_for(spec)
        assert isinstance(metric, Metric), spec.name
        assert inspect.iscoroutinefunction(metric.evaluate), spec.name
        assert metric.batch == batch_of(spec)
        batches.add(metric.batch)
    assert batches == set(BATCHES)
    # A custom metric may take any name, a judged or a step one too: it is user code all the same.
    assert batch_of(MetricSpec(name="safety_v1", options=CUSTOM)) == "user_code"


async def test_batches_fold_in_order_and_the_judge_is_a_handle() -> None:
    judge = FakeJudge(
        CaseScores([judged("answer_correctness", 1.0, "passed")], {0: [judged("answer_correctness", 1.0, "passed")]})
    )
    specs = [MetricSpec(name="answer_correctness", threshold=1.0), MetricSpec(name="response_exact", threshold=1.0)]
    result = await score_case_run(context(specs, judge=judge))
    assert judge.asked == [["answer_correctness"]]
    # outputs first, the judge last, whatever the criteria's order: the stored order of a case's results
    assert [m.name for m in result.metric_results] == ["response_exact", "answer_correctness"]
    assert [m.name for m in result.invocations[0].metric_results] == ["response_exact", "answer_correctness"]
    assert (result.status, result.error) == ("passed", None)


async def test_a_judge_error_stops_the_case_and_a_failure_still_shows() -> None:
    error = CaseError(kind="judge_error", message="answer_correctness: unreachable")
    judge = FakeJudge(CaseScores([judged("answer_correctness", None, "error")], {}, error))
    specs = [MetricSpec(name="response_exact", threshold=1.0), MetricSpec(name="answer_correctness", threshold=1.0)]
    result = await score_case_run(context(specs, judge=judge))
    assert result.status == "error"
    assert result.error == error


async def test_without_a_judge_judged_criteria_are_not_scored_and_never_pass() -> None:
    result = await score_case_run(context([MetricSpec(name="answer_correctness", threshold=1.0)]))
    assert result.metric_results == []
    assert result.status == "failed"  # no gating metric applied


async def test_the_agent_error_comes_first() -> None:
    agent_error = CaseError(kind="timeout", message="no answer within 5s", turn=1)
    judge = FakeJudge(
        CaseScores([judged("answer_correctness", None, "error")], {}, CaseError(kind="judge_error", message="x"))
    )
    ctx = context([MetricSpec(name="answer_correctness", threshold=1.0)], judge=judge, agent_error=agent_error)
    result = await score_case_run(ctx)
    assert result.error == agent_error


class FakeTeacher:
    """The agent asked step by step: calls `search` with the right query at every step, then answers 4."""

    def __init__(self) -> None:
        self.turns: list[int] = []

    async def next_actions(
        self, turn: int, lead: Sequence[Message], prefixes: Sequence[Sequence[Message]]
    ) -> list[StepAttempt]:
        self.turns.append(turn)
        answers = [AgentOutput(tool_calls=[ToolCall(name="search", args={"query": "2+2"})]), AgentOutput(response="4")]
        return [StepAttempt(step=j, output=answers[j - 1]) for j in range(1, len(prefixes) + 1)]


REFERENCED = EvalCase(
    case_id="r",
    turns=[
        Invocation(query="hi", expected_response="hello"),
        Invocation(
            query="what is 2+2?",
            expected_response="4",
            reference_messages=[
                Message(role="user", content="what is 2+2?"),
                Message(role="assistant", tool_calls=[ToolCall(name="search", args={"query": "2+2"}, id="c1")]),
                Message(role="tool", tool_call_id="c1", content="4"),
                Message(role="assistant", content="4"),
            ],
        ),
    ],
)


async def test_step_metrics_ask_the_teacher_for_the_turns_with_a_reference() -> None:
    teacher = FakeTeacher()
    outputs = [
        AgentOutput(response="hello"),
        AgentOutput(response="4", tool_calls=[ToolCall(name="search", args={"query": "2+2"})]),
    ]
    ctx = ScoringContext(
        eval_set_id="s",
        case=REFERENCED,
        repetition=0,
        specs=[MetricSpec(name="stepwise_score", threshold=1.0)],
        outputs=outputs,
        teacher=teacher,
    )
    result = await score_case_run(ctx)
    assert teacher.turns == [1]
    step = result.metric("stepwise_score")
    assert step is not None and (step.score, step.status) == (1.0, "passed")
    # the other step metrics are reported too, informational (no criterion names them)
    survival = result.metric("survived_until")
    assert survival is not None and survival.status == "informational"
    assert [m.name for m in result.invocations[0].metric_results if m.name == "stepwise_score"] == []


async def test_a_rescored_case_keeps_its_recorded_step_metrics() -> None:
    recorded_step = MetricResult(
        name="stepwise_score", score=0.5, threshold=1.0, status="failed", explanation="recorded"
    )
    recorded = CaseResult(
        eval_set_id="s",
        case_id="r",
        status="failed",
        metric_results=[recorded_step],
        invocations=[InvocationResult(turn=1, query="q", metric_results=[recorded_step])],
    )
    ctx = ScoringContext(
        eval_set_id="s",
        case=REFERENCED,
        repetition=0,
        specs=[MetricSpec(name="stepwise_score", threshold=1.0)],
        outputs=[AgentOutput(response="hello"), AgentOutput(response="4")],
        recorded=recorded,
    )
    result = await score_case_run(ctx)
    assert result.metric("stepwise_score") == recorded_step
    assert result.invocations[1].metric_results == [recorded_step]
    assert result.status == "failed"
