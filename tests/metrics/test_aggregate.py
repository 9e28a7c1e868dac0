"""Aggregation: pass@k / pass^k (docs/gate.md §8), t intervals, case summaries, run verdicts."""

from __future__ import annotations

import math
import random

import pytest

from evalward.metrics.aggregate import (
    MetricPart,
    PassRule,
    case_metric_parts,
    mean_interval,
    pass_at_k,
    pass_hat_k,
    summarize_run,
    t_quantile,
    t_two_sided_probability,
)
from evalward.metrics.run_fold import RunFold, _MetricColumn
from evalward.model import CaseResult, MetricResult, MetricStatus


def metric(
    score: float | None, status: MetricStatus, name: str = "m", threshold: float | None = 0.6, higher: bool = True
) -> MetricResult:
    return MetricResult(name=name, score=score, threshold=threshold, status=status, higher_is_better=higher)


def case(case_id: str, rep: int, status: str, *results: MetricResult) -> CaseResult:
    return CaseResult.model_validate(
        {"eval_set_id": "s", "case_id": case_id, "repetition": rep, "status": status, "metric_results": list(results)}
    )


def test_pass_at_k_and_pass_hat_k_gate_example() -> None:
    # docs/gate.md §8: n = 5, c = 4 → pass^3 = C(4,3)/C(5,3) = 4/10 = 0.4; pass@3 = 1 − C(1,3)/C(5,3) = 1 − 0/10 = 1.0
    assert pass_hat_k(5, 4, 3) == pytest.approx(0.4)
    assert pass_at_k(5, 4, 3) == 1.0
    # n = 5, c = 2, k = 2: pass^2 = C(2,2)/C(5,2) = 1/10; pass@2 = 1 − C(3,2)/C(5,2) = 1 − 3/10 = 0.7
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    # k = 1 reduces both to c/n
    assert pass_at_k(4, 3, 1) == pass_hat_k(4, 3, 1) == 0.75


def test_pass_at_k_rejects_impossible_inputs() -> None:
    with pytest.raises(ValueError, match="passes c=6"):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError, match="k=0"):
        pass_hat_k(5, 1, 0)


@pytest.mark.parametrize(
    ("df", "t975"),
    # published Student t table, two-sided 95%
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (29, 2.0452), (120, 1.9799)],
)
def test_t_quantile_matches_the_table(df: int, t975: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(t975, abs=5e-5)


def test_t_distribution_closed_forms() -> None:
    # ν = 1 (Cauchy): P(|T| ≤ 1) = 2·atan(1)/π = 0.5; ν = 2: P(|T| ≤ t) = t/√(t²+2) → t = √2 gives 1/√2
    assert t_two_sided_probability(1.0, 1) == pytest.approx(0.5)
    assert t_two_sided_probability(math.sqrt(2), 2) == pytest.approx(1 / math.sqrt(2))


def test_mean_interval() -> None:
    # values 1, 0, 1, 1: mean 0.75, s² = (3·0.0625 + 0.5625)/3 = 0.25, s/√4 = 0.25, t(0.975, 3) = 3.1824
    # half width = 3.1824 · 0.25 = 0.7956; 0.75 − 0.7956 < 0 and 0.75 + 0.7956 > 1: scores clip to [0, 1]
    mean, low, high = mean_interval([1.0, 0.0, 1.0, 1.0])
    assert mean == 0.75
    assert (low, high) == (0.0, 1.0)
    # non-negative unbounded values (latency): 2, 4 → mean 3, s/√2 = 1, t(0.975, 1) = 12.7062; the lower
    # bound 3 − 12.7 is clipped at 0 (no latency is negative), the upper one is not capped
    mean, low, high = mean_interval([2.0, 4.0])
    assert low == 0.0
    assert high == pytest.approx(3 + 12.7062, abs=1e-3)
    assert mean_interval([0.4]) == (0.4, None, None)


def test_mean_interval_does_not_depend_on_order_and_survives_infinities() -> None:
    values = [0.1, 0.2, 0.3]  # summed left to right 0.6000000000000001, right to left 0.6
    assert mean_interval(values) == mean_interval(list(reversed(values))) == mean_interval(sorted(values))
    assert mean_interval([0.1, 0.2, 0.3])[0] == 0.6 / 3  # exactly rounded: not 0.6000000000000001 / 3
    mean, _, _ = mean_interval([math.inf, -math.inf, 1.0])  # fsum refuses; the plain sum gives NaN
    assert math.isnan(mean)
    assert mean_interval([1e308, 1e308])[0] == math.inf  # past the largest float: fsum refuses too


def test_case_summary_over_repetitions() -> None:
    runs = [
        case("a", 0, "passed", metric(1.0, "passed")),
        case("a", 1, "passed", metric(0.8, "passed")),
        case("a", 2, "failed", metric(0.2, "failed")),
        case("a", 3, "passed", metric(0.9, "passed")),
        case("a", 4, "passed", metric(0.6, "passed")),
    ]
    result = summarize_run(runs, repetitions=5, pass_rule="per_run")
    [summary] = result.case_summaries
    # n = 5, c = 4, k = 5: pass^5 = C(4,5)/C(5,5) = 0; pass@5 = 1 − C(1,5)/1 = 1
    assert (summary.repetitions, summary.passes, summary.errors, summary.pass_rate) == (5, 4, 0, 0.8)
    assert (summary.pass_hat_k, summary.pass_at_k) == (0.0, 1.0)
    # mean over repetitions = (1 + 0.8 + 0.2 + 0.9 + 0.6)/5 = 0.7
    assert summary.metric_means["m"] == pytest.approx(0.7)
    # per_run: one repetition failed → case fails; mean_over_runs: 0.7 ≥ 0.6 → passes
    assert summary.passed is False
    assert result.passed is False
    lenient = summarize_run(runs, repetitions=5, pass_rule="mean_over_runs")
    assert lenient.case_summaries[0].passed is True
    assert lenient.passed is True
    assert lenient.summary["m"].passed is True
    assert result.summary["m"].passed is False


def test_metric_summary_mean_of_case_means_with_interval() -> None:
    runs = [
        case("a", 0, "passed", metric(1.0, "passed")),
        case("a", 1, "failed", metric(0.5, "failed")),
        case("b", 0, "passed", metric(0.75, "passed")),
        case("b", 1, "passed", metric(0.75, "passed")),
        case("c", 0, "failed", metric(0.0, "failed")),
        case("c", 1, "failed", metric(None, "not_applicable")),
    ]
    summary = summarize_run(runs, repetitions=2, pass_rule="per_run").summary["m"]
    # case means: a = 0.75, b = 0.75, c = 0.0 → mean = 0.5
    # s² = (0.0625 + 0.0625 + 0.25)/2 = 0.1875, s/√3 = 0.25, t(0.975, 2) = 4.3027 → half = 1.0757
    assert summary.mean == pytest.approx(0.5)
    # 0.5 ± 1.0757 leaves [0, 1] on both sides, so the interval is clipped to [0, 1]
    assert (summary.ci_low, summary.ci_high) == (0.0, 1.0)
    # 5 scored results, 3 passed → pass rate 0.6
    assert (summary.n, summary.pass_rate, summary.threshold, summary.passed) == (5, 0.6, 0.6, False)


def test_errors_are_never_passes() -> None:
    runs = [
        case("a", 0, "passed", metric(1.0, "passed")),
        case("a", 1, "error", metric(None, "error")),
    ]
    for rule in ("per_run", "mean_over_runs"):
        result = summarize_run(runs, repetitions=2, pass_rule=rule)  # type: ignore[arg-type]
        [summary] = result.case_summaries
        assert (summary.passes, summary.errors, summary.passed) == (1, 1, False)
        assert result.summary["m"].passed is False
        assert result.passed is False


def test_lower_is_better_mean_over_runs() -> None:
    runs = [
        case("a", 0, "failed", metric(12.0, "failed", name="latency_s", threshold=10, higher=False)),
        case("a", 1, "passed", metric(6.0, "passed", name="latency_s", threshold=10, higher=False)),
    ]
    # mean latency (12 + 6)/2 = 9 ≤ 10 → passes under mean_over_runs
    result = summarize_run(runs, repetitions=2, pass_rule="mean_over_runs")
    assert result.passed is True
    assert result.summary["latency_s"].higher_is_better is False


def test_informational_metrics_do_not_gate() -> None:
    runs = [case("a", 0, "passed", metric(1.0, "passed"), metric(0.1, "informational", name="info", threshold=None))]
    result = summarize_run(runs, repetitions=1, pass_rule="per_run")
    assert result.summary["info"].passed is None
    assert result.summary["info"].pass_rate is None
    assert result.passed is True


def test_missing_repetitions_cap_k_and_an_empty_run_does_not_pass() -> None:
    # 3 repetitions planned, 2 finished (cancelled run): k = min(3, 2) = 2; c = 2 → pass^2 = 1
    runs = [case("a", 0, "passed", metric(1.0, "passed")), case("a", 1, "passed", metric(1.0, "passed"))]
    summary = summarize_run(runs, repetitions=3, pass_rule="per_run").case_summaries[0]
    assert (summary.pass_hat_k, summary.pass_at_k) == (1.0, 1.0)
    assert summarize_run([], repetitions=1, pass_rule="per_run").passed is False


def test_case_summaries_computed_during_the_run_are_reused_only_when_they_cover_every_repetition() -> None:
    runs = [
        case("a", 0, "passed", metric(1.0, "passed")),
        case("a", 1, "failed", metric(0.2, "failed")),
        case("b", 0, "passed", metric(0.9, "passed")),
    ]
    fresh = summarize_run(runs, repetitions=2, pass_rule="per_run")
    a_summary, b_summary = fresh.case_summaries
    # A summary built early from the same results is used as it is (marked, to see that it was not rebuilt).
    early_a = a_summary.model_copy(update={"metric_means": {"m": 0.123}})
    parts = {("s", "a"): case_metric_parts(runs[:2])}
    reused = summarize_run(
        runs, repetitions=2, pass_rule="per_run", known_case_summaries={("s", "a"): early_a}, known_metric_parts=parts
    )
    assert reused.case_summaries[0].metric_means == {"m": 0.123}
    assert reused.case_summaries[1] == b_summary
    # One built before the last repetition arrived (1 of 2 repetitions) is stale: recomputed from the results.
    stale = summarize_run(runs[:1], repetitions=2, pass_rule="per_run").case_summaries[0]
    recomputed = summarize_run(
        runs, repetitions=2, pass_rule="per_run", known_case_summaries={("s", "a"): stale}, known_metric_parts=parts
    )
    assert recomputed.case_summaries == fresh.case_summaries


def test_intervals_of_counts_never_go_below_zero_and_are_not_capped_at_one() -> None:
    # Counts 0, 0, 0, 4: mean 1, s = 2, t(0.975, 3) = 3.182 → 1 ± 3.182·2/2 = [−2.18, 4.18] → [0, 4.18].
    mean, low, high = mean_interval([0.0, 0.0, 0.0, 4.0])
    assert mean == 1.0 and low == 0.0
    assert high == pytest.approx(1 + 3.182446305284263, rel=1e-6)
    # A negative value (a signed difference) keeps the plain t interval.
    _, low_signed, _ = mean_interval([-1.0, 0.0, 0.0, 4.0])
    assert low_signed is not None and low_signed < 0


def _random_results(rng: random.Random, *, uniform: bool = False) -> list[CaseResult]:
    """Cases × repetitions with mixed metrics (some missing per case, thresholds that vary, informational
    and lower-is-better ones, errors, unscored), in sorted order. `uniform`: each metric either has a threshold
    in every result (one of two, by case) or in none, as a run's criteria give them."""
    names = ["b_metric", "a_metric", "latency", "judge"]
    repetitions = rng.randint(1, 3)
    gated = {name: rng.random() < 0.6 for name in names}
    results: list[CaseResult] = []
    for set_id in ("s1", "s0"):
        for number in range(rng.randint(0, 12)):
            case_threshold = rng.choice([0.5, 0.7])
            for rep in range(repetitions):
                metrics = []
                for name in rng.sample(names, rng.randint(0, len(names))):
                    if uniform:
                        statuses = ["passed", "failed", "error", "not_applicable"] if gated[name] else ["informational"]
                        status = rng.choice(statuses)
                        threshold = case_threshold if gated[name] else None
                    else:
                        status = rng.choice(["passed", "failed", "error", "not_applicable", "informational"])
                        threshold = None if status == "informational" else rng.choice([None, 0.5, 0.7])
                    score = None if status in ("error", "not_applicable") else rng.random()
                    metrics.append(metric(score, status, name=name, threshold=threshold, higher=name != "latency"))
                status = rng.choice(["passed", "failed", "error"])
                results.append(
                    CaseResult.model_validate(
                        {
                            "eval_set_id": set_id,
                            "case_id": f"c{number}",
                            "repetition": rep,
                            "status": status,
                            "metric_results": metrics,
                        }
                    )
                )
    return sorted(results, key=lambda c: c.key)


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("pass_rule", ["per_run", "mean_over_runs"])
@pytest.mark.parametrize("uniform", [False, True], ids=["mixed-thresholds", "uniform-thresholds"])
def test_folding_cases_in_any_order_equals_summarizing_the_run(seed: int, pass_rule: PassRule, uniform: bool) -> None:
    """Equal, exactly, however the cases arrive: with uniform thresholds the fold summarises each metric without
    sorting its cases (`summary_in_any_order`); with mixed ones a case may take the threshold of the case before
    it, and the fold sorts them."""
    rng = random.Random(seed)
    results = _random_results(rng, uniform=uniform)
    repetitions = max((c.repetition for c in results), default=0) + 1
    expected = summarize_run(results, repetitions=repetitions, pass_rule=pass_rule)

    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for result in results:
        groups.setdefault((result.eval_set_id, result.case_id), []).append(result)
    arrival = list(groups.values())
    rng.shuffle(arrival)  # cases finish in any order
    fold = RunFold(repetitions=repetitions, pass_rule=pass_rule)
    summaries = {(g[0].eval_set_id, g[0].case_id): fold.add(g) for g in arrival}

    got = fold.metric_summaries()
    assert list(got) == list(expected.summary)  # the same metrics, in the same order
    assert got == expected.summary  # exactly: exactly rounded sums, the same in any order
    if uniform:
        for column in fold._columns.values():
            assert column.summary_in_any_order(pass_rule, max)[0], "uniform thresholds need no case order"
    assert [summaries[(s.eval_set_id, s.case_id)] for s in expected.case_summaries] == expected.case_summaries
    assert fold.passed == expected.passed


def test_a_metric_column_gives_back_every_part_exactly() -> None:
    """The fold's compact column (1-byte threshold indexes, counts widened as they grow) loses nothing: 300
    distinct thresholds (past the 256 an index holds), both zeros and NaN, counts past 255 and 2**32."""
    rng = random.Random(11)
    thresholds: list[float | None] = [None, 0.0, -0.0, math.nan, 0.5, *(i / 300 for i in range(300))]
    parts: list[MetricPart | None] = []
    for slot in range(900):
        if slot % 97 == 5:
            parts.append(None)
            continue
        scored = rng.choice([0, 1, 3, 255, 256, 70_000, 2**32 + 5])
        parts.append(
            MetricPart(
                threshold=thresholds[slot % len(thresholds)],
                higher_is_better=rng.random() < 0.5,
                errored=rng.random() < 0.1,
                case_mean=rng.choice([None, 0.0, -0.0, rng.random()]),
                all_scored_passed=rng.random() < 0.5,
                n_scored=scored,
                n_gated=scored // 2,
                n_passed=scored // 3,
            )
        )
    column = _MetricColumn()
    for slot, part in enumerate(parts):
        if part is not None:
            column.put(slot, part)  # a missing part is filled in when a later slot is put
    for slot, part in enumerate(parts):
        back = column.get(slot)
        if part is None:
            assert back is None
            continue
        assert back is not None
        assert repr(back) == repr(part)  # repr: NaN and the sign of zero compare too
