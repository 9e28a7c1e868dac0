"""Stepwise metrics (`evalward.metrics.stepwise`): references, multiset steps, free runs, hand-calculated scores."""

from __future__ import annotations

from typing import Any

import pytest

from evalward.metrics.stepwise import (
    NextAction,
    ReferenceError,
    final_check_for,
    first_step,
    free_run,
    metric_results,
    parse_reference,
    same_multiset,
    step_credit,
    stepwise_scores,
)
from evalward.model import AgentOutput, EvalCase, Invocation, Message, MetricSpec, ToolCall


def call(name: str, call_id: str | None = None, step: int | None = None, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args, id=call_id, step=step)


def reference_messages() -> list[Message]:
    """Seed 001's Dune example cut to m = 2: two single-call search steps, then the answer."""
    return [
        Message(role="user", content="How old was the Dune 2 director's brother on March 1, 2024?"),
        Message(role="assistant", tool_calls=[call("search", "c1", query="dune 2 director")]),
        Message(role="tool", tool_call_id="c1", content='{"results": ["Denis Villeneuve"]}'),
        Message(role="assistant", tool_calls=[call("search", "c2", query="Denis Villeneuve brother")]),
        Message(role="tool", tool_call_id="c2", content='{"results": ["Martin Villeneuve"]}'),
        Message(role="assistant", content="45"),
    ]


def test_parse_reference_into_steps() -> None:
    reference = parse_reference(reference_messages())
    assert reference.m == 2
    assert [m.role for m in reference.lead] == ["user"]
    assert reference.final_response == "45"
    assert reference.steps[1].signature() == '[search(query="Denis Villeneuve brother")]'
    # Step 2's prefix: step 1's call and its result.
    assert [(m.role, m.tool_call_id) for m in reference.prefix(2)] == [("assistant", None), ("tool", "c1")]


def test_parallel_calls_form_one_step() -> None:
    messages = [
        Message(role="user", content="SF vs LA temperature?"),
        Message(role="assistant", tool_calls=[call("search", "a", query="SF"), call("search", "b", query="LA")]),
        Message(role="tool", tool_call_id="a", content="75F"),
        Message(role="tool", tool_call_id="b", content="89F"),
        Message(role="assistant", content="14 degrees"),
    ]
    reference = parse_reference(messages)
    assert reference.m == 1
    assert len(reference.steps[0].calls) == 2
    assert len(reference.steps[0].outputs) == 2


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (
            [Message(role="user", content="q"), Message(role="tool", content="x")],
            "reference_messages[1]: expected an assistant",
        ),
        (
            [Message(role="assistant", content="done"), Message(role="assistant", content="again")],
            "reference_messages[1]: nothing may follow the final assistant answer",
        ),
        (
            [
                Message(role="assistant", tool_calls=[call("f", "c1")]),
                Message(role="tool", tool_call_id="zz", content=""),
            ],
            "call id 'zz'",
        ),
    ],
)
def test_malformed_references_point_at_the_message(messages: list[Message], message: str) -> None:
    with pytest.raises(ReferenceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_reference(messages)


def test_same_multiset_ignores_order_but_counts_duplicates() -> None:
    assert same_multiset([call("f", x=2), call("f", x=1)], [call("f", x=1), call("f", x=2)])
    assert not same_multiset([call("f", x=1), call("f", x=1)], [call("f", x=1), call("f", x=2)])
    assert not same_multiset([call("f", x=1)], [call("f", x=1), call("f", x=1)])


def test_first_step_takes_the_smallest_step_group() -> None:
    output = AgentOutput(tool_calls=[call("a", step=1), call("b", step=1), call("c", step=2)])
    assert [c.name for c in first_step(output, 1).calls] == ["a", "b"]
    # Without step numbers: as many calls as the reference step has.
    plain = AgentOutput(tool_calls=[call("a"), call("b"), call("c")])
    assert [c.name for c in first_step(plain, 2).calls] == ["a", "b"]
    assert first_step(AgentOutput(response="hi"), 1) == NextAction(response="hi")


def test_worked_example_from_metrics_md() -> None:
    """docs/metrics.md §6: m = 2, c = (1, 0, 1); free run (r_1, x, …)."""
    reference = parse_reference(reference_messages())
    answered = final_check_for(EvalCase(case_id="c", turns=[Invocation(query="q")]), 0, [], reference)
    actions = [
        NextAction(calls=(call("search", query="dune 2 director"),)),
        NextAction(calls=(call("search", query="Dune 2 cast"),)),
        NextAction(response="45"),
    ]
    credits, notes = [], []
    for j, action in enumerate(actions, start=1):
        c, note = step_credit(j, reference, action, answered)
        credits.append(c)
        notes.append(note)
    assert credits == [1.0, 0.0, 1.0]
    assert notes[1] == 'step 2: [search(query="Dune 2 cast")] != [search(query="Denis Villeneuve brother")] -> 0'

    run = free_run(
        AgentOutput(tool_calls=[call("search", query="dune 2 director"), call("lookup", q="x")], response="?"),
        reference,
    )
    scores = stepwise_scores(credits, notes, run)
    # hand calculation: (1 + 0 + 1)/3 = 0.667
    assert scores["stepwise_score"].value == pytest.approx(2 / 3)
    assert scores["stepwise_score"].explanation == "c=(1, 0, 1): 2/3=0.667"
    # hand calculation: j* = 2 (first zero), survived_until (2 - 1)/3 = 0.333
    assert scores["first_error_step"].value == 2
    assert scores["survived_until"].value == pytest.approx(1 / 3)
    assert scores["survived_until"].explanation == "c=(1, 0, 1), j*=2: (j*-1)/N = 1/3 = 0.333"
    # hand calculation: s = 1 of m = 2 -> 1/2; divergence index s + 1 = 2 with action x
    assert scores["free_running_survival"].value == 0.5
    assert scores["divergence_index"].value == 2
    assert scores["divergence_index"].explanation == 'diverged at step 2 with [lookup(q="x")]'


def test_all_right_gives_n_plus_one_and_no_divergence() -> None:
    reference = parse_reference(reference_messages())
    run = free_run(
        AgentOutput(
            tool_calls=[call("search", query="dune 2 director"), call("search", query="Denis Villeneuve brother")],
            response="45",
        ),
        reference,
    )
    scores = stepwise_scores([1.0, 1.0, 1.0], ["", "", ""], run)
    # hand calculation: no zero among N = 3 credits -> j* = N + 1 = 4; survived_until (4 - 1)/3 = 1.0
    assert scores["first_error_step"].value == 4
    assert scores["survived_until"].value == 1.0
    assert scores["free_running_survival"].value == 1.0
    # hand calculation: followed both steps, then answered: no divergence, reported as m + 1 = 3
    assert scores["divergence_index"].value == 3
    assert run.divergence_index is None


def test_calls_at_the_final_step_score_zero() -> None:
    reference = parse_reference(reference_messages())
    c, note = step_credit(3, reference, NextAction(calls=(call("search"),)), lambda r: (True, ""))
    assert (c, note) == (0.0, "step 3 (final): expected an answer, got calls [search()] -> 0")


def test_final_step_uses_the_case_response_metric() -> None:
    reference = parse_reference(reference_messages())
    case = EvalCase(case_id="c", turns=[Invocation(query="q")])
    check = final_check_for(case, 0, [MetricSpec(name="response_exact", threshold=1.0)], reference)
    assert check("45")[0] is True
    assert check("46")[0] is False


def test_free_run_uses_step_numbers_for_parallel_calls() -> None:
    messages = [
        Message(role="user", content="q"),
        Message(role="assistant", tool_calls=[call("s", query="SF"), call("s", query="LA")]),
        Message(role="assistant", content="done"),
    ]
    reference = parse_reference(messages)
    run = free_run(AgentOutput(tool_calls=[call("s", step=0, query="LA"), call("s", step=0, query="SF")]), reference)
    # hand calculation: one step group {LA, SF} equals r_1 as a multiset -> s = 1 = m
    assert (run.s, run.survival, run.divergence_index) == (1, 1.0, None)


def test_metric_results_mean_over_turns_and_thresholds() -> None:
    reference = parse_reference(reference_messages())
    run = free_run(AgentOutput(response="45"), reference)
    first = stepwise_scores([1.0, 1.0, 1.0], ["", "", ""], run)
    second = stepwise_scores([1.0, 0.0, 0.0], ["", "", ""], run)
    case, per_turn = metric_results(
        {0: first, 1: second}, {"stepwise_score": MetricSpec(name="stepwise_score", threshold=0.7)}
    )
    by_name = {r.name: r for r in case}
    # hand calculation: turn 0 = 3/3 = 1.0, turn 1 = 1/3; mean (1 + 0.333)/2 = 0.667 < 0.7 -> failed
    assert by_name["stepwise_score"].score == pytest.approx(2 / 3)
    assert by_name["stepwise_score"].status == "failed"
    assert by_name["first_error_step"].status == "informational"
    assert [r.name for r in per_turn[1]][:1] == ["stepwise_score"]


def test_teacher_forced_survival_is_another_name_for_survived_until() -> None:
    reference = parse_reference(reference_messages())
    scores = stepwise_scores([1.0, 0.0, 1.0], ["", "", ""], free_run(AgentOutput(response="45"), reference))
    spec = MetricSpec(name="teacher_forced_survival", threshold=0.5)
    case, _ = metric_results({0: scores}, {"teacher_forced_survival": spec})
    by_name = {r.name: r for r in case}
    # hand calculation: j* = 2 of N = 3 -> 1/3 under both names; the alias carries the threshold
    assert by_name["teacher_forced_survival"].score == by_name["survived_until"].score == pytest.approx(1 / 3)
    assert by_name["teacher_forced_survival"].status == "failed"
    assert by_name["survived_until"].status == "informational"
