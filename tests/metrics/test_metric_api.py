"""The public metric contract: a metric's `Options` model, validated once per criterion and handed to it as
`ctx.options`."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from evalward import Metric, MetricSpec, Score, TurnContext
from evalward.metrics import registry
from evalward.metrics.options import OptionsError
from evalward.metrics.scoring import score_case
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


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in (Words,):
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
