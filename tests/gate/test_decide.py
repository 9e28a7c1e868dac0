"""decide() and compare() on hand-built runs: each policy step, the three outcomes, determinism."""

from __future__ import annotations

from datetime import date

import pytest
from gate_builders import binary_pair, reps, result, run

from evalward._ci.exit_code import decide_exit
from evalward.gate import GatePolicy, QuarantineEntry, compare, decide
from evalward.model import CaseResult, Finding, MetricSpec, NoBaseline, Verdict

POLICY_M = GatePolicy(metrics=["m"], alpha=0.05)
"""The hand examples of docs/gate.md §4 are worked at α = 0.05 (one look: `decide` without a look plan)."""


def kinds(verdict: Verdict, severity: str | None = None) -> list[str]:
    return [f.kind for f in verdict.findings if severity is None or f.severity == severity]


def only(verdict: Verdict, kind: str) -> Finding:
    found = [f for f in verdict.findings if f.kind == kind]
    assert len(found) == 1, found
    return found[0]


class TestPairedComparison:
    def test_identical_runs_pass(self) -> None:
        # 60 = 3/δ_ni cases: with none worse, a drop affecting 5% of cases would have shown (rule of three)
        base, head = binary_pair(60, down=0, up=0)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "pass"
        assert verdict.reason == (
            "Passed: no gated metric (m) regressed over 60 compared cases, each shown within its margin, and every "
            "hard check passed."
        )
        assert verdict.headline == "No regression: m 1.000 → 1.000 over 60 cases, within the 0.05 margin."
        (metric,) = verdict.metrics
        # no discordant case: McNemar p = 1, Δ̂ = 0
        assert (metric.verdict, metric.delta, metric.p_value, metric.test) == ("pass", 0.0, 1.0, "mcnemar_exact")
        assert verdict.counts.compared == 60
        assert {d.label for d in verdict.cases} == {"stable_pass"}

    def test_identical_runs_of_too_few_cases_are_not_evidence(self) -> None:
        # Suite frame: 30 identical cases that passed once on each side. No repetition varied, so the bound on the
        # drop is the zero-failure bound over the 30 current repetitions: ZF(30, 0.05) = 1 − 0.05^(1/30) = 0.0950
        # > δ_ni = 0.05 → inconclusive; with 2 repetitions ZF(60, 0.05) = 0.0487 would show it.
        base, head = binary_pair(30, down=0, up=0)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "inconclusive"
        (metric,) = verdict.metrics
        assert metric.verdict == "inconclusive"
        assert metric.frame == "suite" and metric.bound is not None
        assert (metric.bound.top_cases, metric.bound.top_runs) == (30, 30)
        assert metric.bound.upper == pytest.approx(1 - 0.05 ** (1 / 30))
        assert metric.ci_low == pytest.approx(-0.0950, abs=1e-4)
        assert "30 case(s) at the top every time: 30/30·ZF(30 current repetitions, 0.05) = 0.0950" in (
            metric.explanation
        )
        assert metric.repetitions_needed == 2
        assert "≈2 repetitions per case on each side would show non-inferiority within 0.05" in metric.explanation
        finding = only(verdict, "inconclusive")
        assert "≈2 repetitions per case on each side (`repeat`)" in finding.message
        assert "discordant" not in finding.message and "cases would" not in finding.message

    def test_identical_runs_of_too_few_cases_in_the_population_frame(self) -> None:
        # Population frame (opt-in): a drop affecting up to 3/30 = 10% of cases would go unseen 95% of the time,
        # more than δ_ni = 0.05 → inconclusive until 3/δ_ni = 60 cases.
        base, head = binary_pair(30, down=0, up=0)
        verdict = decide(head, base, GatePolicy(metrics=["m"], alpha=0.05, inference="population"))
        (metric,) = verdict.metrics
        assert (metric.verdict, metric.frame) == ("inconclusive", "population")
        assert "no case got worse, but with 30 cases a drop affecting up to 10% of them would go unseen" in (
            metric.explanation
        )
        assert "≈60 cases would show non-inferiority → INCONCLUSIVE" in metric.explanation
        assert (
            verdict.headline
            == "Not enough evidence either way: m 1.000 → 1.000 over 30 cases; too few cases differ to tell."
        )

    def test_four_cases_can_never_pass_in_the_population_frame(self) -> None:
        base = run("base", [result(f"c{i}", {"m": 0.5}) for i in range(4)])
        head = run("head", [result(f"c{i}", {"m": 0.9}) for i in range(4)])
        (metric,) = decide(head, base, GatePolicy(metrics=["m"], inference="population")).metrics
        assert metric.verdict == "inconclusive"
        assert "only 4 independent cases: too few to show that nothing got worse" in metric.explanation

    def test_four_deterministic_cases_pass_in_the_suite_frame(self) -> None:
        # Suite frame: the question is these four cases. Each scored 0.5 once before and 0.9 once now: every case
        # varied, s²_i = (0.5 − 0.7)² + (0.9 − 0.7)² = 0.08, Σ s²_i(1/1 + 1/1) = 4·0.16 = 0.64;
        # D̂ = −0.4, upper = −0.4 + 1.645·√0.64/4 = −0.4 + 0.329 = −0.071 ≤ 0.05 → PASS (an improvement).
        base = run("base", [result(f"c{i}", {"m": 0.5}) for i in range(4)])
        head = run("head", [result(f"c{i}", {"m": 0.9}) for i in range(4)])
        (metric,) = decide(head, base, POLICY_M).metrics
        assert metric.bound is not None
        assert metric.bound.variance_sum == pytest.approx(0.64)
        assert metric.bound.upper == pytest.approx(-0.4 + 1.6449 * 0.8 / 4, abs=1e-4)
        assert metric.verdict == "pass"

    def test_six_drops_against_one_gain_is_not_significant(self) -> None:
        # n10 = 6, n01 = 1: p = 8/128 = 0.0625 ≥ 0.05; Δ̂ = (1 − 6)/30 = −0.167, so neither REGRESSED nor PASS.
        # Suite bound: 7 varied cases, each s² = 0.5 (a pass and a fail), Σ s²(1/1 + 1/1) = 7;
        # spread = 1.645·√7/30 = 0.1451; 23 cases passed every time: 23/30·ZF(23, 0.05) = 0.7667·0.1221 = 0.0936;
        # upper = 0.1667 + √(0.1451² + 0.0936²) = 0.1667 + 0.1727 = 0.3393 → L = −0.339.
        base, head = binary_pair(30, down=6, up=1)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "inconclusive"
        (metric,) = verdict.metrics
        assert metric.p_value == 0.0625
        assert metric.delta == pytest.approx(-5 / 30)
        assert metric.verdict == "inconclusive"
        assert metric.bound is not None
        assert (metric.bound.varied_cases, metric.bound.variance_sum) == (7, pytest.approx(7.0))
        assert metric.bound.spread == pytest.approx(1.6449 * 7**0.5 / 30, abs=1e-4)
        assert metric.bound.top == pytest.approx(23 / 30 * (1 - 0.05 ** (1 / 23)))
        assert metric.ci_low == pytest.approx(-0.3393, abs=1e-3)
        # the whole arithmetic, so a reader can recompute it
        assert metric.explanation.startswith(
            "m (gated): n=30 paired cases, k=1/1 (baseline/current); mean 0.967 → 0.800, Δ̂ = -0.167; "
            "exact McNemar: n10=6 worse, n01=1 better; p = P[Bin(7, ½) ≥ 6] = 8/128 = 0.0625; "
            "weighted Holm over 1 gate test(s): p_adj = 0.0625 ≥ α = 0.05; "
            "suite bound on the drop (repetitions are the noise, docs/gate.md §6a): D̂ = +0.1667 plus √(Σ m²) of "
            "7 varied case(s): z_(1−0.05)·√(Σ s²_i(1/k_B+1/k_C))/n = 0.1451; "
            "23 case(s) at the top every time: 23/30·ZF(23 current repetitions, 0.05) = 0.0936 → 0.3393"
        )
        assert "L = -0.339" in metric.explanation
        assert "not a significant drop of ≥ δ_block and L < −δ_ni = -0.050" in metric.explanation
        finding = only(verdict, "inconclusive")
        assert finding.severity == "warning"
        assert "may be noise" in finding.message
        assert "the drop seen (-0.167) is itself beyond δ_ni = 0.05" in finding.message
        assert verdict.reason.startswith("Inconclusive: m moved -0.167 over 30 cases")

    def test_six_drops_and_no_gain_is_significant(self) -> None:
        # n10 = 6, n01 = 0: p = 1/64 = 0.0156 < 0.05 and Δ̂ = −6/30 = −0.2 ≤ −0.02 → REGRESSED.
        # (Six pure pass→fail flips already fail; what keeps six flips from failing is a flip back.)
        base, head = binary_pair(30, down=6, up=0)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "fail"
        assert verdict.metrics[0].p_value == 1 / 64

    def test_twelve_drops_fail(self) -> None:
        # n10 = 12, n01 = 2: p = (C(14,12) + C(14,13) + C(14,14))/2^14 = (91 + 14 + 1)/16384 = 0.00647
        base, head = binary_pair(30, down=12, up=2)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "fail"
        (metric,) = verdict.metrics
        assert metric.p_value == pytest.approx(106 / 16384)
        assert metric.verdict == "regressed"
        (finding,) = [f for f in verdict.findings if f.severity == "blocking"]
        assert (finding.kind, finding.metric, finding.test) == ("regression", "m", "mcnemar_exact")
        assert (finding.baseline_value, finding.current_value) == pytest.approx((28 / 30, 18 / 30))
        assert "unlikely to be noise" in finding.message
        assert verdict.reason.startswith(
            "Failed: m 0.933 → 0.600 (Δ̂ = -0.333, n=30): p = 0.00647 < 0.05 (this look's level)"
        )
        labels = [d.label for d in verdict.cases]
        assert (labels.count("regressed"), labels.count("improved")) == (12, 2)
        # and each of the 12 is listed at info level as "likely regressed"
        assert kinds(verdict, "info").count("regression") == 12

    def test_graded_scores_over_three_repetitions(self) -> None:
        # 8 cases, each b_i = mean(0.9, 0.8, 1.0) = 0.9 and c_i = mean(0.6, 0.5, 0.7) = 0.6: d_i = −0.3.
        # Exact sign flip over 2^8 = 256 vectors: only the identity reaches Σd = −2.4 → p = 1/256.
        base = run("base", [r for i in range(8) for r in reps(f"c{i}", "m", [0.9, 0.8, 1.0])], repetitions=3)
        head = run("head", [r for i in range(8) for r in reps(f"c{i}", "m", [0.6, 0.5, 0.7])], repetitions=3)
        verdict = decide(head, base, POLICY_M)
        (metric,) = verdict.metrics
        assert metric.test == "sign_flip_exact"
        assert metric.p_value == 1 / 256
        assert (metric.k_baseline, metric.k_current) == (3, 3)
        assert metric.delta == pytest.approx(-0.3)
        assert metric.verdict == "regressed"
        assert verdict.outcome == "fail"
        # b_i − c_i = 0.3 < 0.5: no case is "likely regressed" on its own
        assert all(not d.likely_regressed_metrics for d in verdict.cases)

    def test_significant_but_tiny_drop_passes_by_non_inferiority(self) -> None:
        # 20 cases each 0.01 lower: Monte Carlo p = 1/10001 (no random vector reaches −0.2), but
        # Δ̂ = −0.01 > −δ_block = −0.02, and L = −0.01 ≥ −δ_ni = −0.05 → PASS.
        base = run("base", [result(f"c{i}", {"m": 0.8}) for i in range(20)])
        head = run("head", [result(f"c{i}", {"m": 0.79}) for i in range(20)])
        verdict = decide(head, base, POLICY_M)
        (metric,) = verdict.metrics
        assert metric.test == "sign_flip_mc"
        assert metric.p_value == pytest.approx(1 / 10_001)
        assert metric.verdict == "pass"
        assert "(non-inferior) → PASS" in metric.explanation
        assert verdict.outcome == "pass"

    def test_lower_is_better_metric_regresses_upwards(self) -> None:
        # a lower-is-better rate goes 0.1 → 0.6 in 5 cases: oriented d_i = −0.5, p = 1/32
        base = run("base", [result(f"c{i}", {"rate": 0.1}, higher_is_better=False) for i in range(5)])
        head = run("head", [result(f"c{i}", {"rate": 0.6}, higher_is_better=False) for i in range(5)])
        verdict = decide(head, base, GatePolicy(metrics=["rate"], alpha=0.05))
        (metric,) = verdict.metrics
        assert metric.higher_is_better is False
        assert metric.delta == pytest.approx(0.5)
        assert (metric.ci_low, metric.ci_high) == pytest.approx((0.5, 0.5))
        assert metric.verdict == "regressed"

    def test_improvement_is_reported(self) -> None:
        base, head = binary_pair(60, down=0, up=10)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "pass"
        assert only(verdict, "improvement").severity == "info"

    def test_strict_turns_inconclusive_into_fail(self) -> None:
        base, head = binary_pair(30, down=6, up=1)
        verdict = decide(head, base, GatePolicy(metrics=["m"], strict=True))
        assert verdict.outcome == "fail"
        assert verdict.reason.startswith("Failed (strict): m moved -0.167")


class TestHolm:
    @staticmethod
    def three_metric_runs() -> tuple[object, object]:
        # 6 cases at k = 1. Metric a: 6 pass→fail (p = 1/64); b and c: 5 pass→fail (p = 1/32 each).
        base_cases, head_cases = [], []
        for i in range(6):
            base_cases.append(result(f"c{i}", {"a": 1.0, "b": 1.0, "c": 1.0}))
            rest = 1.0 if i == 5 else 0.0
            head_cases.append(result(f"c{i}", {"a": 0.0, "b": rest, "c": rest}))
        return run("base", base_cases), run("head", head_cases)

    def test_holm_stops_at_the_first_non_rejection(self) -> None:
        # sorted p = 1/64, 1/32, 1/32 (M = 3): 0.0156 < 0.05/3 = 0.0167 rejects a; 0.03125 ≥ 0.05/2 = 0.025
        # stops, so b and c are not REGRESSED although each p < 0.05 alone.
        # adjusted: 3/64 = 0.0469; max(0.0469, 2/32) = 0.0625; max(0.0625, 1/32) = 0.0625
        base, head = self.three_metric_runs()
        verdict = decide(head, base, GatePolicy(metrics=["a", "b", "c"], alpha=0.05))  # type: ignore[arg-type]
        by_name = {m.metric: m for m in verdict.metrics}
        assert by_name["a"].p_adjusted == pytest.approx(3 / 64)
        assert by_name["b"].p_adjusted == pytest.approx(0.0625)
        assert by_name["c"].p_adjusted == pytest.approx(0.0625)
        assert [by_name[n].verdict for n in "abc"] == ["regressed", "inconclusive", "inconclusive"]
        assert verdict.outcome == "fail"

    def test_without_correction_all_three_regress(self) -> None:
        base, head = self.three_metric_runs()
        verdict = decide(head, base, GatePolicy(metrics=["a", "b", "c"], correction="none", alpha=0.05))  # type: ignore[arg-type]
        assert [m.verdict for m in verdict.metrics] == ["regressed"] * 3

    def test_primary_metric_gates_alone(self) -> None:
        # only b is gated (M = 1): p_adj = 1/32 < 0.05 → REGRESSED; a and c are reported with warnings.
        base, head = self.three_metric_runs()
        verdict = decide(head, base, GatePolicy(metrics=["a", "b", "c"], primary_metric="b", alpha=0.05))  # type: ignore[arg-type]
        by_name = {m.metric: m for m in verdict.metrics}
        assert by_name["b"].gated and by_name["b"].p_adjusted == 1 / 32
        assert not by_name["a"].gated and by_name["a"].p_adjusted is None
        blocking = [f.metric for f in verdict.findings if f.severity == "blocking"]
        assert blocking == ["b"]
        assert {f.metric for f in verdict.findings if f.kind == "regression" and f.severity == "warning"} == {"a", "c"}


class TestAbsoluteChecks:
    def test_a_case_failing_as_at_the_baseline_is_still_failing_not_blocking(self) -> None:
        # thresholds = "change" (default): c1 misses 0.8 now and did at the baseline too
        cases = [result("c0", {"m": 0.9}, threshold=0.8), result("c1", {"m": 0.5}, threshold=0.8)]
        verdict = decide(run("head", cases), run("base", cases), GatePolicy())
        assert verdict.outcome != "fail"
        finding = only(verdict, "still_failing")
        assert (finding.case_id, finding.severity) == ("c1", "warning")
        assert finding.message == (
            "Case s/c1 still fails its thresholds (0/1 repetitions pass; 0/1 at the baseline): not new, so not blocking."
        )
        assert verdict.counts.still_failing == 1
        assert verdict.headline.endswith("1 case still misses its thresholds in some repetition, as at the baseline.")
        # the pass rate is gated, the thresholded metric compared and reported
        assert [(m.metric, m.gated) for m in verdict.metrics] == [("case_pass", True), ("m", False)]

    def test_threshold_failure_blocks_under_the_absolute_rule(self) -> None:
        cases = [result("c0", {"m": 0.9}, threshold=0.8), result("c1", {"m": 0.5}, threshold=0.8)]
        verdict = decide(run("head", cases), run("base", cases), GatePolicy(thresholds="block"))
        assert verdict.outcome == "fail"
        finding = only(verdict, "threshold")
        assert (finding.case_id, finding.metric, finding.current_value) == ("c1", "m", 0.5)
        assert finding.message == (
            "Case s/c1: m must be >= 0.8; failed in 1 of 1 repetitions (pass_rule=per_run: every one must pass)."
        )

    def test_threshold_warn_policy(self) -> None:
        cases = [result("c0", {"m": 0.9}, threshold=0.8), result("c1", {"m": 0.5}, threshold=0.8)]
        verdict = decide(run("head", cases), run("base", cases), GatePolicy(thresholds="warn"))
        assert verdict.outcome != "fail"
        assert only(verdict, "threshold").severity == "warning"

    def test_mean_over_runs_rule(self) -> None:
        # reps 0.9, 0.7, 0.9: one repetition fails 0.8, but the mean 0.833 meets it under mean_over_runs
        head = run("head", reps("c0", "m", [0.9, 0.7, 0.9], threshold=0.8), repetitions=3)
        head.pass_rule = "mean_over_runs"
        verdict = decide(head, head.model_copy(update={"run_id": "base"}), GatePolicy())
        assert "threshold" not in kinds(verdict)

    def test_must_pass_failing_one_repetition_fails(self) -> None:
        base = run("base", reps("safe", "m", [1.0, 1.0, 1.0], must_pass=True), repetitions=3)
        head = run("head", reps("safe", "m", [1.0, 0.0, 1.0], must_pass=True), repetitions=3)
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "fail"
        finding = only(verdict, "must_pass")
        assert finding.severity == "blocking"
        assert finding.current_value == 2.0
        assert "failed or errored in 1 of 3 repetitions (allowed: 0)" in finding.message

    def test_must_pass_allowed_failures(self) -> None:
        base = run("base", reps("safe", "m", [1.0, 1.0, 1.0], must_pass=True), repetitions=3)
        head = run("head", reps("safe", "m", [1.0, 0.0, 1.0], must_pass=True), repetitions=3)
        verdict = decide(head, base, GatePolicy(metrics=["m"], must_pass_allowed_failures=1))
        assert "must_pass" not in kinds(verdict)

    def test_compare_skips_absolute_checks(self) -> None:
        cases = [result("c0", {"m": 0.5}, threshold=0.8, must_pass=True)]
        verdict = compare(run("base", cases), run("head", cases), GatePolicy())
        assert "threshold" not in kinds(verdict) and "must_pass" not in kinds(verdict)
        assert "still_failing" not in kinds(verdict)
        assert verdict.outcome != "fail"
        assert verdict.current_run_id == "head"
        assert verdict.baseline is not None and verdict.baseline.run_id == "base"


class TestCompleteness:
    def errored_runs(self, n: int = 4) -> tuple[object, object]:
        base = run("base", [result(f"c{i}", {"m": 1.0}) for i in range(n)])
        head = run(
            "head",
            [result(f"c{i}", {"m": 1.0}) for i in range(n - 1)] + [result(f"c{n - 1}", {"m": 1.0}, errored=True)],
        )
        return base, head

    def test_errors_are_compared_by_default(self) -> None:
        # errors=compare: the errored repetition is left out of the scores, the case is listed, and one error in
        # 70 cases is no evidence that errors rose (min p of the error-rate test 1/2 > its share of α: left out)
        base, head = self.errored_runs(70)
        verdict = decide(head, base, POLICY_M)  # type: ignore[arg-type]
        [finding] = [f for f in verdict.findings if f.kind == "error" and f.case_id == "c69"]
        assert finding.severity == "info"
        assert finding.message == (
            "Case s/c69 errored in 1 of 1 repetitions (timeout: turn 0 exceeded 30s); left out of the scores on "
            "both sides; the error rate is compared with the baseline's (errors=compare)."
        )
        assert verdict.metrics[0].n_cases == 69
        [errors] = [m for m in verdict.metrics if m.metric == "error_rate"]
        assert (errors.guard, errors.verdict, errors.current_mean) == (True, "pass", pytest.approx(1 / 70))
        assert verdict.outcome == "pass"

    def test_errors_fail_policy(self) -> None:
        base, head = self.errored_runs()
        verdict = decide(head, base, GatePolicy(metrics=["m"], errors="fail"))  # type: ignore[arg-type]
        assert verdict.outcome == "fail"
        finding = only(verdict, "error")
        assert finding.severity == "blocking"
        assert finding.message == (
            "Case s/c3 errored in 1 of 1 repetitions (timeout: turn 0 exceeded 30s); errors fail the gate (errors=fail)."
        )
        assert verdict.counts.errored == 1

    def test_errors_count_as_failure(self) -> None:
        # the errored case scores 0: c_3 = 0, Δ̂ = −1/4
        base, head = self.errored_runs()
        verdict = decide(head, base, GatePolicy(metrics=["m"], errors="count_as_failure"))  # type: ignore[arg-type]
        assert only(verdict, "error").severity == "warning"
        assert verdict.metrics[0].delta == pytest.approx(-0.25)
        assert verdict.metrics[0].n_cases == 4

    def test_errors_ignored(self) -> None:
        # the errored repetition is left out: c3 has no current score, so 3 cases are compared
        base, head = self.errored_runs(70)
        verdict = decide(head, base, GatePolicy(metrics=["m"], errors="ignore"))  # type: ignore[arg-type]
        assert only(verdict, "error").severity == "info"
        assert verdict.metrics[0].n_cases == 69
        assert [m.metric for m in verdict.metrics] == ["m"]
        assert verdict.outcome == "pass"

    def test_empty_run_never_passes(self) -> None:
        verdict = decide(run("head", []), run("base", [result("c0", {"m": 1.0})]), POLICY_M)
        assert verdict.outcome == "fail"
        assert any("has no case results" in f.message for f in verdict.findings if f.kind == "error")

    def test_incomplete_run_fails(self) -> None:
        cases = [result("c0", {"m": 1.0})]
        verdict = decide(run("head", cases, status="cancelled"), run("base", cases), POLICY_M)
        assert verdict.outcome == "fail"
        assert "status 'cancelled'" in only(verdict, "error").message

    def test_missing_case(self) -> None:
        cases = [result("c0", {"m": 1.0})]
        head = run("head", cases, listed=["c0", "c1"])
        verdict = decide(head, run("base", cases), POLICY_M)
        finding = only(verdict, "missing_case")
        assert (finding.case_id, finding.severity) == ("c1", "blocking")
        assert verdict.outcome == "fail"
        verdict = decide(head, run("base", cases), GatePolicy(metrics=["m"], missing_cases="warn"))
        assert verdict.outcome != "fail"

    def test_missing_repetitions(self) -> None:
        head = run("head", reps("c0", "m", [1.0, 1.0]), repetitions=3)
        verdict = decide(head, head.model_copy(update={"run_id": "base"}), POLICY_M)
        assert only(verdict, "missing_case").message == ("Case s/c0 has 2 of 3 expected results (missing_cases=fail).")


class TestBaseline:
    def test_no_baseline_is_an_error_by_default(self) -> None:
        verdict = decide(
            run("head", [result("c0", {"m": 1.0})]),
            None,
            POLICY_M,
            no_baseline=NoBaseline(kind="unavailable", reason="the base side at abc1234 could not start"),
        )
        assert verdict.outcome == "error"
        finding = only(verdict, "no_baseline")
        assert finding.severity == "blocking"
        assert finding.message.startswith("No baseline could be made (the base side at abc1234 could not start)")
        assert verdict.reason.startswith("Error: No baseline could be made")
        assert verdict.headline.startswith("No verdict: no baseline could be made")

    def test_real_failures_win_over_the_missing_baseline(self) -> None:
        head = run("head", reps("safe", "m", [1.0, 0.0, 1.0], must_pass=True), repetitions=3)
        assert decide(head, None, POLICY_M).outcome == "fail"

    def test_no_base_side_judges_by_the_thresholds_alone(self) -> None:
        # no merge-base at all (a first run): ADK's absolute semantics, said so
        first = NoBaseline(kind="no_base", reason="no merge-base: the run is on a branch with no base")
        passing = run("head", [result(f"c{i}", {"m": 0.9}, threshold=0.8) for i in range(3)])
        verdict = decide(passing, None, GatePolicy(), no_baseline=first)
        assert verdict.outcome == "pass"
        assert only(verdict, "no_baseline").severity == "warning"
        assert verdict.reason.startswith("Passed on the absolute thresholds alone")
        failing = run("head", [result("c0", {"m": 0.9}, threshold=0.8), result("c1", {"m": 0.5}, threshold=0.8)])
        verdict = decide(failing, None, GatePolicy(), no_baseline=first)
        assert verdict.outcome == "fail"
        assert only(verdict, "threshold").severity == "blocking"
        assert verdict.headline == (
            "1 case misses its thresholds: s/c1. (There is no base side to compare with, so the thresholds alone decide.)"
        )

    def test_no_baseline_neutral(self) -> None:
        verdict = decide(
            run("head", [result("c0", {"m": 1.0})]), None, GatePolicy(metrics=["m"], on_missing_baseline="neutral")
        )
        assert verdict.outcome == "inconclusive"
        assert only(verdict, "no_baseline").severity == "warning"
        assert verdict.reason == (
            "Inconclusive: there is no baseline to compare with (on_missing_baseline=neutral), "
            "and every absolute check passed."
        )
        assert verdict.baseline is None
        assert [d.label for d in verdict.cases] == ["new"]

    def test_no_baseline_fail(self) -> None:
        verdict = decide(run("head", [result("c0", {"m": 1.0})]), None, GatePolicy(on_missing_baseline="fail"))
        assert verdict.outcome == "fail"

    def test_no_baseline_neutral_with_failed_threshold_fails(self) -> None:
        head = run("head", [result("c0", {"m": 0.1}, threshold=0.5)])
        assert decide(head, None, GatePolicy(on_missing_baseline="neutral")).outcome == "fail"

    def test_added_removed_changed_cases_are_listed_and_excluded(self) -> None:
        base = run("base", [result(c, {"m": 1.0}) for c in ("a", "b", "c", "d")])
        head_cases = [result("a", {"m": 1.0}), result("b", {"m": 1.0})]
        head_cases.append(result("c", {"m": 0.0}, content_hash="hash-c-v2"))  # edited case: not comparable
        head_cases.append(result("e", {"m": 0.0}))  # new case
        verdict = decide(run("head", head_cases), base, POLICY_M)
        assert verdict.counts.model_dump() == {
            "compared": 2,
            "added": 1,
            "removed": 1,
            "changed": 1,
            "errored": 0,
            "baseline_errored": 0,
            "still_failing": 0,
            "quarantined": 0,
        }
        assert {(f.kind, f.case_id) for f in verdict.findings} >= {
            ("added_case", "e"),
            ("removed_case", "d"),
            ("changed_case", "c"),
        }
        # c and e score 0 now, but neither is compared: m stays at Δ̂ = 0 over a and b
        assert verdict.metrics[0].n_cases == 2
        assert verdict.metrics[0].delta == 0.0
        assert {d.case_id: d.label for d in verdict.cases} == {
            "a": "stable_pass",
            "b": "stable_pass",
            "c": "changed",
            "d": "removed",
            "e": "new",
        }

    def test_nothing_comparable_is_an_error_not_a_pass(self) -> None:
        """Zero comparable results is an error (docs/gate.md §2): no verdict, exit 3, whatever `fail-on` says."""
        base = run("base", [result("a", {"m": 1.0})])
        head = run("head", [result("b", {"m": 1.0})])
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "error"
        assert verdict.reason == (
            "Error: no case was comparable with the baseline, so nothing was compared and there is no verdict."
        )
        assert [f.kind for f in verdict.blocking()] == ["nothing_compared"]
        decision = decide_exit(verdict, {"regression"})
        assert (decision.exit_code, decision.failed_on, decision.conclusion) == (3, ("nothing_compared",), "failure")

    def test_nothing_comparable_but_a_must_pass_failure_is_a_failure(self) -> None:
        base = run("base", [result("a", {"m": 1.0})])
        head = run("head", [result("b", {"m": 0.0}, must_pass=True)])
        verdict = decide(head, base, POLICY_M)
        assert verdict.outcome == "fail"
        assert "must_pass" in {f.kind for f in verdict.blocking()}

    def test_criteria_mismatch_is_flagged(self) -> None:
        cases = [result("a", {"m": 1.0})]
        base = run("base", cases, criteria=[MetricSpec(name="m", threshold=0.8)])
        head = run("head", cases, criteria=[MetricSpec(name="m", threshold=0.5)])
        verdict = decide(head, base, POLICY_M)
        assert only(verdict, "mismatch").message == (
            "Eval set s: criteria differ (m>=0.8 → m>=0.5) and the baseline was not re-scored; scores are compared "
            "as recorded."
        )


class TestQuarantineAndFlakiness:
    def runs(self) -> tuple[object, object]:
        # 5 cases all pass → fail: p = 1/32 → REGRESSED when all are gated
        return binary_pair(5, down=5, up=0)

    def test_active_quarantine_excludes_the_case(self) -> None:
        # with c00 quarantined 4 cases remain: p = 1/16 = 0.0625 → not REGRESSED
        base, head = self.runs()
        entry = QuarantineEntry(case_id="c00", until=date(2025, 6, 30), reason="flaky tool API, issue 12")
        verdict = decide(head, base, GatePolicy(metrics=["m"], quarantine=[entry], alpha=0.05))  # type: ignore[arg-type]
        assert verdict.counts.quarantined == 1
        assert verdict.metrics[0].n_cases == 4
        assert verdict.metrics[0].p_value == 1 / 16
        assert verdict.outcome == "inconclusive"
        finding = only(verdict, "quarantined")
        assert finding.severity == "info"
        assert finding.message.startswith("Case s/c00 is quarantined until 2025-06-30 (flaky tool API, issue 12)")
        assert next(d for d in verdict.cases if d.case_id == "c00").quarantined

    def test_expired_quarantine_warns_and_gates_again(self) -> None:
        base, head = self.runs()
        entry = QuarantineEntry(case_id="c00", until=date(2025, 5, 31), reason="flaky")
        verdict = decide(head, base, GatePolicy(metrics=["m"], quarantine=[entry], alpha=0.05))  # type: ignore[arg-type]
        finding = only(verdict, "quarantined")
        assert finding.severity == "warning"
        assert "expired on 2025-05-31" in finding.message
        assert verdict.outcome == "fail"

    def test_today_overrides_the_run_date(self) -> None:
        base, head = self.runs()
        entry = QuarantineEntry(case_id="c00", until=date(2025, 6, 30), reason="flaky")
        verdict = decide(
            head,  # type: ignore[arg-type]
            base,  # type: ignore[arg-type]
            GatePolicy(metrics=["m"], quarantine=[entry], alpha=0.05),
            today=date(2025, 7, 1),
        )
        assert verdict.counts.quarantined == 0

    def test_known_flip_rate_marks_the_case_flaky(self) -> None:
        base, head = binary_pair(3, down=1, up=0)
        verdict = decide(head, base, POLICY_M, flip_rates={("s", "c00"): 0.4})
        diagnostic = next(d for d in verdict.cases if d.case_id == "c00")
        assert (diagnostic.label, diagnostic.flip_rate) == ("flaky", 0.4)
        assert "flips in 40% of base-branch runs" in only(verdict, "flaky").message

    def test_likely_regressed_case(self) -> None:
        # b_i − c_i = 1 − 0 ≥ 0.5: reported at info level, not gating by itself
        base, head = binary_pair(3, down=1, up=0)
        verdict = decide(head, base, POLICY_M)
        diagnostic = next(d for d in verdict.cases if d.case_id == "c00")
        assert diagnostic.label == "regressed"
        assert diagnostic.likely_regressed_metrics == ["m"]
        finding = next(f for f in verdict.findings if f.kind == "regression")
        assert (finding.severity, finding.case_id) == ("info", "c00")


class TestCostAndLatency:
    def cost_runs(self) -> tuple[object, object]:
        base = run("base", [result(f"c{i}", {"m": 1.0}, cost=0.01 * (i + 1), latency=2.0) for i in range(6)])
        head = run("head", [result(f"c{i}", {"m": 1.0}, cost=0.02 * (i + 1), latency=2.1) for i in range(6)])
        return base, head

    def test_doubled_cost_is_informational_by_default(self) -> None:
        # every r_i = ln 2 → ratio 2.000, bounds [2, 2]; exp(L) = 2 > 1.10 → regressed, a warning only
        base, head = self.cost_runs()
        verdict = decide(head, base, POLICY_M)  # type: ignore[arg-type]
        finding = only(verdict, "cost")
        assert finding.severity == "warning"
        assert finding.effect == pytest.approx(2.0)
        assert finding.test == "log_ratio_bootstrap"
        assert finding.message.startswith("Cost ratio ×2.000")
        assert verdict.outcome != "fail"
        # latency 2.0 → 2.1: ratio 1.05 ≤ 1.10, info
        assert only(verdict, "latency").severity == "info"

    def test_cost_gate_blocks(self) -> None:
        base, head = self.cost_runs()
        verdict = decide(head, base, GatePolicy(metrics=["m"], cost={"gate": True}))  # type: ignore[arg-type]
        assert only(verdict, "cost").severity == "blocking"
        assert verdict.outcome == "fail"


class TestDeterminism:
    def test_same_inputs_same_json(self) -> None:
        # 40 graded cases (Monte Carlo sign flips and the bootstrap both draw random numbers)
        base = run("base", [result(f"c{i}", {"m": (i % 7) / 7}) for i in range(40)])
        head = run("head", [result(f"c{i}", {"m": ((i + 3) % 7) / 7}) for i in range(40)])
        first = decide(head, base, POLICY_M).model_dump_json()
        assert first == decide(head, base, POLICY_M).model_dump_json()
        assert decide(head, base, POLICY_M).metrics[0].test == "sign_flip_mc"

    def test_seed_comes_from_run_ids_unless_given(self) -> None:
        base, head = binary_pair(4, down=1, up=0)
        derived = decide(head, base, POLICY_M).seed
        renamed = head.model_copy(update={"run_id": "other"})
        assert decide(renamed, base, POLICY_M).seed != derived
        assert decide(head, base, GatePolicy(metrics=["m"], seed=42)).seed == 42

    def test_policy_digest_is_recorded(self) -> None:
        base, head = binary_pair(4, down=0, up=0)
        assert decide(head, base, POLICY_M).policy_digest == POLICY_M.digest()


class TestMetricSelection:
    def test_thresholds_gate_the_pass_rate_by_default(self) -> None:
        cases = [result("a", {"m": 0.9, "info": 0.3}, threshold=None)]
        cases[0].metric_results[0].threshold = 0.5
        cases[0].metric_results[0].status = "passed"
        verdict = decide(run("head", cases), run("base", cases), GatePolicy())
        assert [(m.metric, m.gated) for m in verdict.metrics] == [("case_pass", True), ("m", False)]
        assert "reported only: thresholds decide each case's pass/fail" in verdict.metrics[1].explanation

    def test_without_thresholds_only_score_like_metrics_are_gated(self) -> None:
        # No thresholds anywhere: the fallback gates scores in [0, 1], not seconds, tokens or efficiency counts,
        # so an answer that got slower or used one more model call is not a regression unless asked for.
        def case(i: int, tokens: float) -> CaseResult:
            found = result(f"c{i}", {"quality": 0.9, "token_usage_v1": tokens, "latency_s": 0.4})
            for metric in found.metric_results[1:]:
                metric.higher_is_better = False
            return found

        base = run("base", [case(i, 120.0) for i in range(6)])
        head = run("head", [case(i, 900.0) for i in range(6)])
        verdict = decide(head, base, GatePolicy())
        assert [m.metric for m in verdict.metrics] == ["quality"]
        assert verdict.outcome != "fail"
        # Named by the policy, an informational metric is gated like any other.
        named = decide(head, base, GatePolicy(metrics=["token_usage_v1"]))
        assert [m.metric for m in named.metrics] == ["token_usage_v1"]

    def test_case_pass_when_nothing_is_scored(self) -> None:
        base = run("base", [result(f"c{i}", {}) for i in range(3)])
        head = run("head", [result(f"c{i}", {}) for i in range(3)])
        verdict = decide(head, base, GatePolicy())
        assert [m.metric for m in verdict.metrics] == ["case_pass"]
        assert verdict.metrics[0].baseline_mean == 1.0

    def test_unscored_metric_is_inconclusive(self) -> None:
        base, head = binary_pair(3, down=0, up=0)
        verdict = decide(head, base, GatePolicy(metrics=["absent"]))
        assert verdict.metrics[0].verdict == "inconclusive"
        assert verdict.outcome == "inconclusive"


class TestVerdictModel:
    def test_round_trips_through_json(self) -> None:
        base, head = binary_pair(10, down=3, up=1)
        verdict = decide(head, base, POLICY_M)
        assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
        assert verdict.schema_version == 1
        # n10 = 3, n01 = 1: p = P[Bin(4, ½) ≥ 3] = 5/16 → not significant, Δ̂ = −0.2 → inconclusive
        assert (verdict.outcome, verdict.passed, verdict.metrics[0].p_value) == ("inconclusive", False, 5 / 16)

    def test_blocking_findings_come_first(self) -> None:
        base, head = binary_pair(12, down=12, up=0)
        verdict = decide(head, base, POLICY_M)
        severities = [f.severity for f in verdict.findings]
        assert severities == sorted(severities, key=["blocking", "warning", "info"].index)
        assert verdict.blocking()[0].kind == "regression"

    def test_compare_keeps_completeness(self) -> None:
        base = run("base", [result("c0", {"m": 1.0})])
        head = run("head", [result("c0", {"m": 1.0}, errored=True)])
        assert compare(base, head, GatePolicy(metrics=["m"], errors="fail")).outcome == "fail"
        assert compare(base, head, POLICY_M).outcome != "pass"
        assert compare(base, head.model_copy(update={"status": "cancelled"}), POLICY_M).outcome == "fail"


def test_nothing_comparable_says_so_where_people_look() -> None:
    from evalward.report.check_run import status_description
    from evalward.report.verdict_markdown import render_verdict_markdown

    base = run("base", [result("a", {"m": 1.0})])
    head = run("head", [result("b", {"m": 1.0})])
    verdict = decide(head, base, POLICY_M)
    assert status_description(verdict, failing=True).startswith("Could not compare: no case was comparable")
    markdown = render_verdict_markdown(head, verdict, baseline=base)
    assert "no case was comparable with the baseline" in markdown
