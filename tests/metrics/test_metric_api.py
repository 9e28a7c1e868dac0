"""The public metric contract: a metric's `Options` model, validated once per criterion and handed to it as
`ctx.options`; `score_turn` / `score_case` sync or async."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, ConfigDict

from evalward import CaseContext, Metric, MetricSpec, Score, TurnContext
from evalward.metrics import registry
from evalward.metrics.metric_options import OptionsError
from evalward.metrics.scoring import OutputMetrics, score_case
from evalward.metrics.scoring_context import ScoringContext
from evalward.model import AgentOutput, EvalCase, Invocation

CASE = EvalCase(case_id="c", turns=[Invocation(query="one"), Invocation(query="two")])
OUTPUTS = [AgentOutput(response="a b c"), AgentOutput(response="a")]


class WordsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at_most: int = 2


class Words(Metric):
    """1 when the answer has at most `at_most` words."""

    name = "words_for_a_test"
    Options = WordsOptions
    validated: list[WordsOptions] = []  # every options object a turn was given

    def score_turn(self, ctx: TurnContext[WordsOptions]) -> Score | None:
        Words.validated.append(ctx.options)
        words = len((ctx.actual.response or "").split())
        return Score(1.0 if words <= ctx.options.at_most else 0.0, f"{words} word(s)")


class AsyncWords(Metric):
    """`Words`, scored by an `async def`; `wait` makes it wait on the event loop, as a service call would."""

    name = "async_words_for_a_test"
    Options = WordsOptions
    wait = False

    async def score_turn(self, ctx: TurnContext[WordsOptions]) -> Score | None:
        if self.wait:
            await asyncio.sleep(0)
        words = len((ctx.actual.response or "").split())
        return Score(1.0 if words <= ctx.options.at_most else 0.0, f"{words} word(s), awaited")


class AsyncCaseTurns(Metric):
    """An async case metric: the number of turns answered."""

    name = "async_case_for_a_test"
    scope = "case"
    higher_is_better = False

    async def score_case(self, ctx: CaseContext[BaseModel]) -> Score | None:
        await asyncio.sleep(0)
        return Score(float(len(ctx.turns)), "turns")


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in (Words, AsyncWords, AsyncCaseTurns):
        monkeypatch.setitem(registry._REGISTRY, cls.name, cls)
    monkeypatch.setattr(Words, "validated", [])


def test_options_are_validated_once_per_criterion_and_handed_to_every_turn() -> None:
    spec = MetricSpec(name=Words.name, threshold=1, options={"at_most": 1})
    assert registry.check_specs([spec]) == []
    for _ in range(3):  # three cases
        scored = score_case(CASE, [spec], OUTPUTS)
        assert [r.score for r in scored.metric_results] == [0.5]
    options = registry.options_of(spec)
    assert options == WordsOptions(at_most=1)
    assert len(Words.validated) == 6 and all(seen is options for seen in Words.validated)


def test_options_that_do_not_validate_make_the_criterion_an_error_when_scored_unchecked() -> None:
    spec = MetricSpec(name=Words.name, threshold=1, options={"at_mots": 1})
    with pytest.raises(OptionsError, match="words_for_a_test: unknown option 'at_mots'; known: at_most"):
        registry.options_of(spec)
    [result] = score_case(CASE, [spec], OUTPUTS).metric_results
    assert result.status == "error" and "unknown option 'at_mots'" in result.explanation


def test_an_async_metric_is_awaited_and_a_sync_one_is_not() -> None:
    assert AsyncWords.awaits and AsyncCaseTurns.awaits and not Words.awaits
    spec = MetricSpec(name=AsyncWords.name, threshold=1)
    scored = score_case(CASE, [spec], OUTPUTS)  # it awaits nothing that waits: sync scoring completes it
    assert [[r.score for r in turn] for turn in scored.turn_results] == [[0.0], [1.0]]
    assert scored.metric_results[0].explanation.startswith("mean over 2 applicable turn(s) of 2: (0.000 + 1.000)/2")


def test_an_async_metric_that_waits_needs_the_event_loop_of_evaluate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AsyncWords, "wait", True)
    specs = [
        MetricSpec(name=AsyncWords.name, threshold=1),
        MetricSpec(name=Words.name, threshold=1),
        MetricSpec(name=AsyncCaseTurns.name, threshold=5),
    ]
    with pytest.raises(RuntimeError, match="an async metric waited on something"):
        score_case(CASE, specs, OUTPUTS)
    ctx = ScoringContext(eval_set_id="s", case=CASE, repetition=0, specs=specs, outputs=OUTPUTS)
    scores = asyncio.run(OutputMetrics().evaluate(specs, ctx))
    assert [(r.name, r.score, r.status) for r in scores.case_level] == [
        (AsyncWords.name, 0.5, "failed"),
        (Words.name, 0.5, "failed"),
        (AsyncCaseTurns.name, 2.0, "passed"),
    ]
