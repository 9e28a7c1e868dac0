"""The default policy on the situations docs/gate.md §9 names: thresholds that gate on change, newly broken cases,
symmetric errors, evidence before a pass, and the plain-words headline."""

from __future__ import annotations

import math
import random

import pytest
from gate_builders import result, run
from pydantic import ValidationError

from evalward.gate import GatePolicy, decide
from evalward.model import CaseResult, MetricResult, RunResult

K = 3


def suite(run_id: str, outcomes: list[list[bool | None]], *, metric: str = "traj") -> RunResult:
    """One case per row, one repetition per entry: True passes the 1.0 threshold, False misses it, None errors."""
    cases: list[CaseResult] = []
    for i, row in enumerate(outcomes):
        for rep, ok in enumerate(row):
            cases.append(
                result(f"c{i:03d}", {metric: 1.0 if ok else 0.0}, repetition=rep, threshold=1.0, errored=ok is None)
            )
    return run(run_id, cases, repetitions=len(outcomes[0]))


def draws(rng: random.Random, probabilities: list[float]) -> list[list[bool | None]]:
    return [[rng.random() < p for _ in range(K)] for p in probabilities]


def test_unchanged_agent_with_flaky_cases_does_not_fail_by_default() -> None:
    # 100 cases × 3, ten of them coin flips: ADK's absolute rule blocks nearly every time; the default gate
    # compares passing with the baseline instead.
    rng = random.Random(7)
    probabilities = [0.5] * 10 + [1.0] * 90
    outcomes = []
    for trial in range(5):
        head, base = suite(f"h{trial}", draws(rng, probabilities)), suite(f"b{trial}", draws(rng, probabilities))
        outcomes.append((decide(head, base, GatePolicy()).outcome, decide(head, base, GatePolicy(thresholds="block"))))
    assert [default for default, _ in outcomes] == ["pass", "pass", "pass", "pass", "pass"]
    assert all(absolute.outcome == "fail" for _, absolute in outcomes)


def test_five_cases_always_to_never_fail_the_gate() -> None:
    base = suite("b", [[True] * K for _ in range(100)])
    head_rows: list[list[bool | None]] = [[False] * K for _ in range(5)] + [[True] * K for _ in range(95)]
    verdict = decide(suite("h", head_rows), base, GatePolicy())
    assert verdict.outcome == "fail"
    assert verdict.newly_broken is not None
    assert verdict.newly_broken.cases == [f"s/c00{i}" for i in range(5)]
    # five eligible cases, each 3/3 → 0/3 with probability 1/20 under no change: p = (1/20)^5
    assert verdict.newly_broken.p_value == pytest.approx(20.0**-5)
    assert verdict.newly_broken.significant
    finding = next(f for f in verdict.findings if f.kind == "newly_broken")
    assert finding.severity == "blocking"
    assert verdict.headline == (
        "5 cases passed 3 of 3, now 0 of 3: s/c000, s/c001, s/c002, s/c003, s/c004. Repetitions passing: 100% → 95%."
    )


def test_one_newly_broken_flaky_case_is_shown_not_blocking() -> None:
    rng = random.Random(2)
    rows = draws(rng, [0.5] * 12 + [1.0] * 88)
    base_rows = [list(r) for r in rows]
    head_rows = [list(r) for r in rows]
    base_rows[0], head_rows[0] = [True] * K, [False] * K
    verdict = decide(suite("h", head_rows), suite("b", base_rows), GatePolicy())
    assert verdict.newly_broken is not None and verdict.newly_broken.cases == ["s/c000"]
    assert not verdict.newly_broken.significant
    finding = next(f for f in verdict.findings if f.kind == "newly_broken")
    assert finding.severity == "warning"
    assert verdict.outcome != "fail"
    assert "could still be chance" in verdict.headline


def test_baseline_errors_do_not_hide_broken_cases() -> None:
    # ten cases errored in the baseline (and work now), ten others break: with errors scored as zeros the two
    # cancel out (Δ̂ = 0); left out on both sides, the ten broken cases are seen.
    base_rows: list[list[bool | None]] = [[None] * K for _ in range(10)] + [[True] * K for _ in range(90)]
    head_rows: list[list[bool | None]] = [[True] * K for _ in range(10)] + [[False] * K for _ in range(10)]
    head_rows += [[True] * K for _ in range(80)]
    verdict = decide(suite("h", head_rows), suite("b", base_rows), GatePolicy())
    assert verdict.outcome == "fail"
    assert verdict.newly_broken is not None and len(verdict.newly_broken.cases) == 10
    assert verdict.counts.baseline_errored == 10
    rate = next(m for m in verdict.metrics if m.metric == "case_pass")
    assert rate.n_cases == 90  # the baseline's errored cases are not comparable evidence of passing
    assert rate.delta == pytest.approx(-10 / 90)
    assert any(f.kind == "error" and f.baseline_value == 3.0 for f in verdict.findings)


def test_routine_timeouts_on_both_sides_do_not_fail() -> None:
    # 500 cases × 5, 0.2% of repetitions time out on either side at random: errors=fail blocks, compare does not
    rng = random.Random(5)

    def rows() -> list[list[bool | None]]:
        return [[None if rng.random() < 0.002 else True for _ in range(5)] for _ in range(500)]

    head, base = suite("h", rows()), suite("b", rows())
    assert decide(head, base, GatePolicy(errors="fail")).outcome == "fail"
    verdict = decide(head, base, GatePolicy())
    assert verdict.outcome == "pass"
    rate = next(m for m in verdict.metrics if m.metric == "error_rate")
    assert rate.guard and rate.verdict == "pass"


def test_a_jump_in_errors_fails() -> None:
    base = suite("b", [[True] * K for _ in range(100)])
    head = suite("h", [[None] * K for _ in range(15)] + [[True] * K for _ in range(85)])
    verdict = decide(head, base, GatePolicy())
    assert verdict.outcome == "fail"
    rate = next(m for m in verdict.metrics if m.metric == "error_rate")
    assert (rate.verdict, rate.current_mean, rate.baseline_mean) == ("regressed", pytest.approx(0.15), 0.0)
    assert verdict.headline.startswith("More runs error: 0% → 15% of repetitions errored")


def test_errored_lower_is_better_metric_never_scores_its_best_value() -> None:
    # steps (lower is better) is 3 or 4 when scored; under count_as_failure an errored repetition takes the worst
    # value seen (4), never 1.0 (which would look like an improvement here)
    def case(i: int, value: float | None) -> CaseResult:
        return result(f"c{i}", {"steps": value or 0.0}, higher_is_better=False, errored=value is None)

    base = run("b", [case(i, 3.0) for i in range(6)])
    head = run("h", [case(i, 4.0) for i in range(5)] + [case(5, None)])
    verdict = decide(head, base, GatePolicy(metrics=["steps"], errors="count_as_failure"))
    (metric,) = verdict.metrics
    assert metric.current_mean == pytest.approx(4.0)


def test_pass_needs_evidence_small_runs_are_inconclusive() -> None:
    # 20 cases × 1, a true 10-point drop that this sample happens not to show: "no drop seen" is not a pass
    base = suite("b", [[True]] * 20)
    head = suite("h", [[True]] * 20)
    verdict = decide(head, base, GatePolicy())
    assert verdict.outcome == "inconclusive"
    assert verdict.headline.startswith("Not enough evidence either way: 100% of repetitions pass, 100% at the baseline")


def test_removed_failing_cases_are_named_first() -> None:
    base = suite("b", [[True] * K for _ in range(70)] + [[False] * K for _ in range(3)])
    head = suite("h", [[True] * K for _ in range(70)])
    verdict = decide(head, base, GatePolicy())
    assert verdict.outcome == "pass"
    assert verdict.headline.endswith(
        "This change also removes 3 cases that failed at the baseline: s/c070, s/c071, s/c072."
    )
    summary = next(f for f in verdict.findings if f.kind == "removed_case" and f.case_id is None)
    assert summary.message.startswith("This change removes 3 cases that failed at the baseline: s/c070")


def test_few_clusters_warn_instead_of_claiming() -> None:
    def clustered(run_id: str, value: float) -> RunResult:
        cases = [result(f"c{i}", {"m": value}).model_copy(update={"cluster": f"g{i % 3}"}) for i in range(30)]
        return run(run_id, cases)

    population = GatePolicy(metrics=["m"], alpha=0.05, inference="population")
    verdict = decide(clustered("h", 0.9), clustered("b", 0.9), population)
    (metric,) = verdict.metrics
    assert (metric.n_clusters, metric.verdict) == (3, "inconclusive")
    assert verdict.outcome == "inconclusive"
    warning = next(f for f in verdict.findings if f.kind == "inconclusive" and "G=3" in f.message)
    assert "p = 2^-3 = 0.125 ≥ α = 0.05: this analysis can neither block nor show non-inferiority" in warning.message
    # The suite frame's bound is about these 30 cases whatever their clusters; only the test counts clusters.
    suite = decide(clustered("h", 0.9), clustered("b", 0.9), GatePolicy(metrics=["m"]))
    warning = next(f for f in suite.findings if f.kind == "inconclusive" and "G=3" in f.message)
    assert "can block no drop (the suite bound, which does not count clusters, may still pass it)" in warning.message


def test_nan_is_refused_at_the_model_boundary() -> None:
    with pytest.raises(ValidationError, match="finite number"):
        MetricResult(name="m", score=math.nan, status="passed")
    with pytest.raises(ValidationError, match="finite number"):
        MetricResult(name="m", score=1.0, threshold=math.inf, status="passed")


def test_non_finite_differences_are_refused_by_the_tests() -> None:
    from evalward.gate import stats

    with pytest.raises(ValueError, match="finite"):
        stats.sign_flip_test([0.1, math.nan], seed=1)
    with pytest.raises(ValueError, match="finite"):
        stats.bootstrap_mean_bounds([0.1, math.inf], alpha=0.05, seed=1)
