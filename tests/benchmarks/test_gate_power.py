"""The gate-power benchmark, reduced, with fixed seeds: the default policy's behaviour in the situations of
issue #11 cannot silently drift. (The full table: `python benchmarks/gate_power.py`.)"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

TRIALS = 40


@pytest.fixture(scope="module")
def power(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("gate_power")


def rates(power: ModuleType, name: str) -> dict[str, float]:
    [scenario] = [s for s in power.SCENARIOS if s.name == name]
    tally = power.measure(scenario, TRIALS, seed=11)
    return {outcome: tally.rate(outcome) for outcome in ("fail", "inconclusive", "pass", "error")}


@pytest.mark.parametrize(
    ("name", "most_fails"),
    [("flaky-few", 0.1), ("null-100x3", 0.1), ("timeouts-500x5", 0.1), ("new-target", 0.1), ("added-file", 0.1)],
)
def test_unchanged_agents_are_not_failed(power: ModuleType, name: str, most_fails: float) -> None:
    found = rates(power, name)
    assert found["fail"] <= most_fails, found
    assert found["error"] == 0.0, found  # a changed target or an added file always has a baseline


@pytest.mark.parametrize(("name", "least_fails"), [("five-broken", 0.95), ("errors-hide", 0.95), ("drop10-100x3", 0.8)])
def test_regressions_are_caught(power: ModuleType, name: str, least_fails: float) -> None:
    found = rates(power, name)
    assert found["fail"] >= least_fails, found


def test_small_runs_and_few_clusters_do_not_claim_a_pass(power: ModuleType) -> None:
    assert rates(power, "drop10-20x1")["pass"] <= 0.15  # was 27% when Δ̂ ≥ 0 alone passed
    assert rates(power, "clusters-3")["pass"] == 0.0
