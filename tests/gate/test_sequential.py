"""The two looks (docs/gate.md §6, `gate.sequential`): how α and α_pass are split, what the top-up plans, and the
second look deciding — it may block, pass or stay inconclusive — with scripted agents in place of real ones."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest
from gate_builders import result, run

from evalward.gate import GatePolicy, decide
from evalward.gate.second_look_rules import run_second_look
from evalward.gate.sequential import (
    TopUpPlan,
    combine_p,
    confirm_repetitions,
    first_look_weight,
    plan_looks,
    plan_top_up,
)
from evalward.model import CaseResult, MetricSpec, RunResult, Verdict

Behaviour = Callable[[str, int], bool]
"""(case id, repetition) → whether that repetition passes."""

CRITERIA = [MetricSpec(name="m", threshold=1.0)]


def side(run_id: str, cases: Sequence[str], k: int, behaviour: Behaviour) -> RunResult:
    return run(run_id, results(cases, 0, k, behaviour), repetitions=k, criteria=CRITERIA)


def results(cases: Sequence[str], start: int, count: int, behaviour: Behaviour) -> list[CaseResult]:
    return [
        result(case_id, {"m": 1.0 if behaviour(case_id, r) else 0.0}, repetition=r, threshold=1.0)
        for case_id in cases
        for r in range(start, start + count)
    ]


def always(_: str, __: int) -> bool:
    return True


def broken(names: set[str]) -> Behaviour:
    return lambda case_id, _: case_id not in names


def first_look(
    n: int, k: int, base: Behaviour, head: Behaviour, policy: GatePolicy | None = None
) -> tuple[Verdict, RunResult, RunResult, GatePolicy]:
    policy = policy or GatePolicy()
    cases = [f"c{i:02d}" for i in range(n)]
    base_run, head_run = side("base", cases, k, base), side("head", cases, k, head)
    look = plan_looks(policy, agent_can_run=True, cases=n, repetitions=k)
    return decide(head_run, base_run, policy, look=look), head_run, base_run, policy


class Agents:
    """Scripted agents for `run_second_look`: records each call (cases, first repetition, repetitions, both sides)."""

    def __init__(self, base: Behaviour, head: Behaviour) -> None:
        self.base, self.head = base, head
        self.calls: list[tuple[tuple[tuple[str, str], ...], int, int, bool]] = []

    def __call__(
        self, cases: Sequence[tuple[str, str]], start: int, count: int, both: bool
    ) -> tuple[list[CaseResult], list[CaseResult]]:
        self.calls.append((tuple(cases), start, count, both))
        ids = [case_id for _, case_id in cases]
        return results(ids, start, count, self.head), results(ids, start, count, self.base) if both else []


# ------------------------------------------------------------------------------------------------- the looks


def test_two_looks_split_alpha_and_alpha_pass_by_the_first_looks_share() -> None:
    # α = 0.005: the first look at 0.2 · 0.005 = 0.001, the second at 0.004; α_pass = 0.05 likewise: 0.01, 0.04
    # (100 cases × 3 that all passed could pass at the first look: ZF(300, 0.01) = 0.0152 ≤ 0.05).
    look = plan_looks(GatePolicy(), agent_can_run=True, cases=100, repetitions=3)
    assert (look.index, look.planned) == (1, 2)
    assert (look.alpha_first, look.alpha_second) == pytest.approx((0.001, 0.004))
    assert (look.alpha_pass_first, look.alpha_pass_second) == pytest.approx((0.01, 0.04))


def test_a_first_look_that_could_not_pass_gives_its_share_of_alpha_pass_to_the_second() -> None:
    # 20 cases × 1: even 20 passing repetitions bound the drop only by ZF(20, 0.01) = 1 − 0.01^(1/20) = 0.206 > 0.05
    look = plan_looks(GatePolicy(), agent_can_run=True, cases=20, repetitions=1)
    assert (look.alpha_pass_first, look.alpha_pass_second) == (0.0, 0.05)
    assert (look.alpha_first, look.alpha_second) == pytest.approx((0.001, 0.004))


@pytest.mark.parametrize(
    ("agent_can_run", "settings"), [(False, {}), (True, {"max_runs": 0}), (True, {"max_repetitions": 0})]
)
def test_one_look_gets_the_whole_alpha(agent_can_run: bool, settings: dict[str, int]) -> None:
    policy = GatePolicy.model_validate({"top_up": settings})
    look = plan_looks(policy, agent_can_run=agent_can_run, cases=20, repetitions=3)
    assert (look.planned, look.alpha_first, look.alpha_second) == (1, 0.005, 0.0)
    assert (look.alpha_pass_first, look.alpha_pass_second) == (0.05, 0.0)


def test_the_inverse_normal_combination() -> None:
    # p₁ = 0.01, p₂ = 0.05, w₁ = w₂ = √½: z = (2.3263 + 1.6449)/√2 = 2.8082 → p = 1 − Φ(2.8082) = 0.00249
    assert combine_p(0.01, 0.05, math.sqrt(0.5)) == pytest.approx(0.00249, abs=1e-5)
    # w₁ = 1: the first look alone; w₁ = 0: the top-up alone
    assert combine_p(0.2, 0.001, 1.0) == pytest.approx(0.2)
    assert combine_p(0.2, 0.001, 0.0) == pytest.approx(0.001)
    # two uniform p-values combine to a uniform one: the second look's level is its false-alarm rate
    rng = random.Random(5)
    draws = [combine_p(rng.random(), rng.random(), first_look_weight(3, 6)) for _ in range(20_000)]
    assert sum(p < 0.05 for p in draws) / len(draws) == pytest.approx(0.05, abs=0.005)


def test_confirmations_are_enough_for_one_case_that_breaks_again() -> None:
    look = plan_looks(GatePolicy(), agent_can_run=True, cases=20, repetitions=1)
    # level α₂ · share = 0.004 · 0.1 = 0.0004: one suspect needs 1/C(2r, r) < 0.0004 → r = 7 (1/3432)
    assert confirm_repetitions(GatePolicy(), look, 1) == 7
    # two or more: (1/C(10, 5))² = 1/63504 < 0.0004 at the minimum r = 5
    assert confirm_repetitions(GatePolicy(), look, 3) == 5
    policy = GatePolicy.model_validate({"top_up": {"confirm_repetitions": 4}})
    assert confirm_repetitions(policy, look, 1) == 4


# ------------------------------------------------------------------------------------------------- planning


def test_twenty_stable_cases_are_topped_up_on_the_current_side_to_three_repetitions() -> None:
    first, _, _, policy = first_look(20, 1, always, always)
    assert first.outcome == "inconclusive" and first.metrics[0].verdict == "inconclusive"
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    # every repetition passed on both sides: only the current side's zero-failure bound is missing;
    # ZF(60, 0.05) = 0.0487 ≤ 0.05
    assert plan is not None and plan.head_only and not plan.suspects
    assert (len(plan.cases), plan.extra_repetitions, plan.agent_runs) == (20, 2, 40)


def test_a_case_that_broke_is_a_suspect_and_a_drop_gets_the_deepest_top_up() -> None:
    first, _, _, policy = first_look(20, 1, always, broken({"c00", "c01", "c02"}))
    assert first.outcome == "inconclusive"  # McNemar p = 1/8 cannot reach 0.001
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None
    assert plan.suspects == (("s", "c00"), ("s", "c01"), ("s", "c02"))
    assert plan.confirm_repetitions == 5
    # the drop (−0.15) is beyond δ_ni whatever the repetitions: k_max = 6, five more
    assert plan.extra_repetitions == 5
    # the current side failed: both sides run, so the second look can test the change
    assert not plan.head_only
    # without a base side there is nothing to confirm against, and the even repetitions run on the current side only
    alone, _ = plan_top_up(first, policy, repetitions=1, base_side=False)
    assert alone is not None and not alone.suspects and alone.head_only


def test_a_budget_keeps_the_confirmations_first() -> None:
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 40}})
    first, _, _, _ = first_look(20, 1, always, broken({"c00", "c01", "c02"}), policy)
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    # 3 suspects × 5 × 2 = 30 runs; the 10 left buy one more repetition on each side for 5 cases
    assert plan is not None and plan.confirm_runs == 30
    assert (len(plan.cases), plan.extra_repetitions, plan.agent_runs) == (5, 1, 40)


def test_no_top_up_says_why() -> None:
    policy = GatePolicy.model_validate({"top_up": {"max_repetitions": 3}})
    first, _, _, _ = first_look(8, 3, always, always, policy)
    plan, why = plan_top_up(first, policy, repetitions=3, base_side=True)
    assert plan is None and "already ran 3 times" in why
    # a budget below one run of one case on each side
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 1}})
    first, _, _, _ = first_look(8, 1, always, broken({"c00"}), policy)
    plan, why = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is None and "more than the budget" in why


def test_a_decided_first_look_is_not_topped_up() -> None:
    # 100 stable cases × 3 passed at the first look: ZF(300, 0.01) = 0.0152
    first, _, _, policy = first_look(100, 3, always, always)
    assert first.outcome == "pass" and first.look is not None and first.look.index == 1
    plan, why = plan_top_up(first, policy, repetitions=3, base_side=True)
    assert plan is None and why == "the first look decided"


def test_a_plan_is_refused_for_a_single_look() -> None:
    policy = GatePolicy()
    cases = [f"c{i}" for i in range(8)]
    verdict = decide(side("h", cases, 1, always), side("b", cases, 1, always), policy)
    plan, why = plan_top_up(verdict, policy, repetitions=1, base_side=True)
    assert plan is None and "only one look" in why


# --------------------------------------------------------------------------------------------- the second look


def test_three_cases_that_stay_broken_fail_at_the_second_look_without_the_even_repetitions() -> None:
    base, head = always, broken({"c00", "c01", "c02"})
    first, head_run, base_run, policy = first_look(8, 1, base, head)
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None
    agents = Agents(base, head)
    verdict = run_second_look(first, head_run, base_run, policy, plan, agents)
    # confirmations only: the three broke again (5 of 5 at the baseline, 0 of 5 now), p = (1/252)³; no even run
    assert agents.calls == [((("s", "c00"), ("s", "c01"), ("s", "c02")), 1 + plan.extra_repetitions, 5, True)]
    assert verdict.outcome == "fail"
    assert verdict.look is not None and verdict.look.index == 2
    assert verdict.confirmation is not None and verdict.confirmation.still_broken == ["s/c00", "s/c01", "s/c02"]
    assert verdict.confirmation.p_value == pytest.approx((1 / 252) ** 3)
    assert verdict.headline.startswith(
        "3 cases passed 1 of 1, now 0 of 1, and again 0 of 5 (5 of 5 at the baseline) when re-run: s/c00, s/c01, s/c02."
    )
    assert "Decided at the second look: 3 suspect cases re-run 5 times on each side (30 agent runs)" in (
        verdict.headline
    )
    assert verdict.top_up is not None and (verdict.top_up.current_runs, verdict.top_up.baseline_runs) == (15, 15)


def test_a_flaky_case_that_recovers_is_not_blamed() -> None:
    # c00 fails its first repetition by chance and passes every other; nothing else moves
    def head(case_id: str, repetition: int) -> bool:
        return not (case_id == "c00" and repetition == 0)

    first, head_run, base_run, policy = first_look(20, 1, always, head)
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None and plan.suspects == (("s", "c00"),) and plan.confirm_repetitions == 7
    verdict = run_second_look(first, head_run, base_run, policy, plan, Agents(always, head))
    assert verdict.confirmation is not None and verdict.confirmation.recovered == ["s/c00"]
    assert not [f for f in verdict.findings if f.severity == "blocking"]
    assert any(f.kind == "flaky" and "not blamed" in f.message for f in verdict.findings)


def test_twenty_stable_cases_pass_at_the_second_look() -> None:
    first, head_run, base_run, policy = first_look(20, 1, always, always)
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None
    agents = Agents(always, always)
    verdict = run_second_look(first, head_run, base_run, policy, plan, agents)
    ((cases, start, count, both),) = agents.calls
    assert (sorted(cases), start, count, both) == ([("s", f"c{i:02d}") for i in range(20)], 1, 2, False)
    assert verdict.outcome == "pass"
    (metric,) = [m for m in verdict.metrics if m.gated]
    # 60 current repetitions, none failed: ZF(60, 0.05) = 0.0487 ≤ 0.05 at the second look's α_pass = 0.05
    assert metric.bound is not None and metric.bound.top_runs == 60
    assert metric.ci_low == pytest.approx(-(1 - 0.05 ** (1 / 60)))
    assert verdict.top_up is not None and verdict.top_up.head_only and verdict.top_up.current_runs == 40


def test_the_second_look_blocks_a_drop_it_finds() -> None:
    # 40 cases; the PR makes 8 of them fail half the time. One repetition cannot tell; the top-up to 6 can, and the
    # second look — its share of α spent by the Bonferroni split — blocks.
    weak = {f"c{i:02d}" for i in range(8)}
    rng = random.Random(3)
    draws: dict[tuple[str, int], bool] = {}

    def head(case_id: str, repetition: int) -> bool:
        if case_id not in weak:
            return True
        return draws.setdefault((case_id, repetition), rng.random() < 0.5)

    first, head_run, base_run, policy = first_look(40, 1, always, head)
    assert first.outcome == "inconclusive"
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None
    verdict = run_second_look(first, head_run, base_run, policy, plan, Agents(always, head))
    assert verdict.outcome == "fail"
    assert verdict.look is not None and verdict.look.index == 2
    blocking = {f.kind for f in verdict.findings if f.severity == "blocking"}
    assert blocking & {"regression", "newly_broken"}
    gated = next(m for m in verdict.metrics if m.gated and not m.guard)
    assert gated.level == pytest.approx(0.004)


def test_a_plan_without_even_repetitions_keeps_the_first_looks_aggregate() -> None:
    # 100 × 3 that passes at the first look, but one case broke (3/3 → 0/3): confirm it only
    first, head_run, base_run, policy = first_look(100, 3, always, broken({"c07"}))
    plan, _ = plan_top_up(first, policy, repetitions=3, base_side=True)
    assert plan is not None and plan.suspects == (("s", "c07"),) and plan.extra_repetitions == 0
    assert isinstance(plan, TopUpPlan) and plan.agent_runs == 14
    verdict = run_second_look(first, head_run, base_run, policy, plan, Agents(always, broken({"c07"})))
    # one case that stayed broken, 7 of 7 → 0 of 7: p = 1/3432 < 0.0004 → blocks, named
    assert verdict.outcome == "fail"
    assert verdict.headline.startswith(
        "1 case passed 3 of 3, now 0 of 3, and again 0 of 7 (7 of 7 at the baseline) when re-run: s/c07."
    )


def test_a_cost_budget_turns_into_runs_at_the_runs_own_cost() -> None:
    # 40 cases × 1, 4 broke (suspects, 5 repetitions × 2 sides each = 40 runs), the aggregate undecided
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 100, "max_cost_usd": 1.0}})
    first, _, _, _ = first_look(40, 1, always, broken({"c00", "c01", "c02", "c03"}), policy)
    # $0.02 a run: $1 buys 50 runs, fewer than max_runs: the 40 confirmations, then one more repetition on each
    # side for 5 cases
    chosen, _ = plan_top_up(first, policy, repetitions=1, base_side=True, cost_per_run=0.02)
    assert chosen is not None and (chosen.confirm_runs, len(chosen.cases), chosen.extra_repetitions) == (40, 5, 1)
    # a cheap agent: max_runs limits (100: the confirmations and 30 cases once on each side)
    cheap, _ = plan_top_up(first, policy, repetitions=1, base_side=True, cost_per_run=0.0001)
    assert cheap is not None and (cheap.confirm_runs, len(cheap.cases)) == (40, 30)
    unknown, _ = plan_top_up(first, policy, repetitions=1, base_side=True, cost_per_run=None)
    assert unknown == cheap  # no recorded cost: max_runs alone
    pricey, why = plan_top_up(first, policy, repetitions=1, base_side=True, cost_per_run=0.6)
    assert pricey is None and "more than the budget (1 agent runs)" in why


def test_a_capped_top_up_takes_known_flippers_first_then_an_order_drawn_from_the_seed() -> None:
    """Never the cases this comparison found worse: topping up only those would pull Δ̂ toward zero (docs/gate.md
    §6)."""
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 20}})
    flips = {("s", "c30"): 0.4, ("s", "c31"): 0.6, ("s", "c32"): 0.1}
    cases = [f"c{i:02d}" for i in range(40)]
    base_run, head_run = side("b", cases, 1, always), side("h", cases, 1, lambda c, _: c >= "c06")
    look = plan_looks(policy, agent_can_run=True, cases=40, repetitions=1)
    first = decide(head_run, base_run, policy, look=look, flip_rates=flips)
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=False)  # no confirmations without a base side
    assert plan is not None and plan.extra_repetitions == 1 and len(plan.cases) == 20
    assert plan.cases[:2] == (("s", "c31"), ("s", "c30"))  # c32 flips less than flaky_flip_rate (0.2)
    assert not {("s", f"c{i:02d}") for i in range(6)} <= set(plan.cases)  # not the six that broke


def test_more_repetitions_join_the_run_in_key_order_and_never_overwrite() -> None:
    from evalward.gate.sequential import with_more_repetitions

    passed = [result("a", {"m": 1.0}, repetition=0), result("b", {"m": 1.0}, repetition=0)]
    base = run("r", passed)
    grown = with_more_repetitions(base, [result("a", {"m": 1.0}, repetition=r) for r in (1, 2)])
    assert [c.key for c in grown.cases] == [("s", "a", 0), ("s", "a", 1), ("s", "a", 2), ("s", "b", 0)]
    assert len(base.cases) == 2  # the run itself is unchanged
    with pytest.raises(ValueError, match="reused repetition numbers"):
        with_more_repetitions(base, [result("b", {"m": 1.0}, repetition=0)])


def test_under_strict_a_confirmation_that_blocks_nothing_goes_on_to_the_even_repetitions() -> None:
    """`strict` fails an undecided first look, but that is not evidence: the second look still runs in full."""

    def head(case_id: str, repetition: int) -> bool:
        return not (case_id == "c00" and repetition == 0)

    policy = GatePolicy(strict=True)
    first, head_run, base_run, _ = first_look(20, 1, always, head, policy)
    assert first.outcome == "fail"  # strict: undecided
    plan, _ = plan_top_up(first, policy, repetitions=1, base_side=True)
    assert plan is not None and plan.suspects and plan.cases
    agents = Agents(always, head)
    verdict = run_second_look(first, head_run, base_run, policy, plan, agents)
    assert len(agents.calls) == 2  # the confirmation, then the even repetitions
    assert verdict.outcome == "pass"
