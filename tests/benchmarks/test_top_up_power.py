"""The top-up benchmark, reduced, with fixed seeds: what the top-up of an inconclusive verdict buys (more passes
of an unchanged agent) and what it must never cost (a fail it created, a real drop passed more often than without
it, the bias of topping up the discordant cases). The full table: `python benchmarks/top_up_power.py`."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from evalward.gate import GatePolicy

TRIALS = 80


@pytest.fixture(scope="module")
def bench(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("top_up_power")


def situation(bench: ModuleType, name: str) -> object:
    [found] = [s for s in bench.SITUATIONS if s.name == name]
    return found


def test_an_unchanged_agent_passes_more_often_and_is_never_failed_by_the_top_up(bench: ModuleType) -> None:
    tally = bench.measure(situation(bench, "null-60x1"), TRIALS, seed=7, policy=GatePolicy())
    assert tally.finals["fail"] == tally.firsts["fail"]  # (measure also raises if a top-up ever made a fail)
    assert tally.finals["pass"] >= tally.firsts["pass"] + TRIALS * 0.05, (tally.firsts, tally.finals)
    assert tally.spent and max(tally.spent) <= GatePolicy().top_up.max_runs


def test_a_real_drop_does_not_pass_more_often_with_the_even_top_up(bench: ModuleType) -> None:
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 300}})
    drop = situation(bench, "drop10-60x1")
    even = bench.measure(drop, TRIALS, seed=5, policy=policy)
    targeted = bench.measure(drop, TRIALS, seed=5, policy=policy, plan=bench.targeted_plan)
    assert even.firsts == targeted.firsts  # the same first verdicts: the designs are compared side by side
    assert even.finals["pass"] <= even.firsts["pass"] + TRIALS * 0.03, (even.firsts, even.finals)
    # topping up only the discordant cases shrinks Δ̂ toward zero: a 10-point drop passes several times as often
    assert targeted.finals["pass"] > even.finals["pass"], (targeted.finals, even.finals)
