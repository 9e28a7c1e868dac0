"""Per-case diagnostics (docs/gate.md §8): one-sided Fisher exact per case with k ≥ 5, Benjamini–Hochberg q < 0.1.

Hand calculations are in the comments. The tests are diagnostic: they never block a verdict.
"""

from __future__ import annotations

from datetime import date
from fractions import Fraction

import pytest
from gate_builders import reps, result, run

from evalward.gate import GatePolicy, QuarantineEntry, decide, stats
from evalward.model import CaseDiagnostic, CaseResult, RunResult, Verdict

POLICY_M = GatePolicy(metrics=["m"])


def case_runs(spec: dict[str, tuple[list[float], list[float]]]) -> tuple[RunResult, RunResult]:
    """(baseline, current) where `spec[case] = (baseline scores, current scores)` per repetition of `m`
    (a score ≥ 0.5 passes)."""
    base: list[CaseResult] = []
    cur: list[CaseResult] = []
    for case_id, (before, after) in spec.items():
        base += reps(case_id, "m", before)
        cur += reps(case_id, "m", after)
    k_base = max(len(b) for b, _ in spec.values())
    k_cur = max(len(a) for _, a in spec.values())
    return run("base", base, repetitions=k_base), run("head", cur, repetitions=k_cur)


def diagnostic(verdict: Verdict, case_id: str) -> CaseDiagnostic:
    return next(d for d in verdict.cases if d.case_id == case_id)


class TestFisher:
    def test_five_of_five_to_none(self) -> None:
        # m = 5 passes in N = 10 runs; P[A ≥ 5] = C(5,5)·C(5,0)/C(10,5) = 1/252 = 0.003968…
        assert stats.fisher_one_sided_p(5, 5, 0, 5) == float(Fraction(1, 252))

    def test_three_runs_cannot_reach_significance(self) -> None:
        # docs/gate.md §8: 3/3 → 0/3 gives 1/C(6,3) = 1/20 = 0.05, not < 0.05
        assert stats.fisher_one_sided_p(3, 3, 0, 3) == 0.05

    @pytest.mark.parametrize(
        ("counts", "expected"),
        [
            # 5/5 → 1/5: m = 6; P[A ≥ 5] = C(5,5)·C(5,1)/C(10,6) = 5/210 = 1/42
            ((5, 5, 1, 5), Fraction(1, 42)),
            # 4/5 → 0/5: m = 4; P[A ≥ 4] = C(5,4)·C(5,0)/C(10,4) = 5/210 = 1/42
            ((4, 5, 0, 5), Fraction(1, 42)),
            # 3/5 → 3/5: m = 6; (C(5,3)C(5,3) + C(5,4)C(5,2) + C(5,5)C(5,1))/C(10,6) = (100 + 50 + 5)/210 = 31/42
            ((3, 5, 3, 5), Fraction(31, 42)),
            # 6/6 → 2/5, unequal k: m = 8, N = 11; C(6,6)·C(5,2)/C(11,8) = 10/165 = 2/33
            ((6, 6, 2, 5), Fraction(2, 33)),
            # 20/20 → 12/20: m = 32; C(20,20)·C(20,12)/C(40,32) = 125970/76904685
            ((20, 20, 12, 20), Fraction(125970, 76904685)),
            # an improvement 0/5 → 5/5: P[A ≥ 0] = 1
            ((0, 5, 5, 5), Fraction(1)),
            # no change at all, all passing: the table is fixed by its margins → 1
            ((5, 5, 5, 5), Fraction(1)),
        ],
    )
    def test_hand_computed_tails(self, counts: tuple[int, int, int, int], expected: Fraction) -> None:
        assert stats.fisher_one_sided_p(*counts) == float(expected)

    def test_bad_counts(self) -> None:
        with pytest.raises(ValueError, match="baseline side, got 6/5"):
            stats.fisher_one_sided_p(6, 5, 0, 5)
        with pytest.raises(ValueError, match="current side, got -1/5"):
            stats.fisher_one_sided_p(5, 5, -1, 5)


class TestBenjaminiHochberg:
    def test_docstring_example(self) -> None:
        # sorted 0.01, 0.03, 0.04, 0.2 (M = 4): M·p/j = 0.04, 0.06, 0.0533, 0.2; the running minimum from
        # the largest down turns 0.06 into 0.0533 → in input order 0.04, 0.0533, 0.0533, 0.2
        q = stats.benjamini_hochberg([0.01, 0.04, 0.03, 0.2])
        assert q == pytest.approx([0.04, 4 * 0.04 / 3, 4 * 0.04 / 3, 0.2])

    def test_ordering_is_kept_and_capped_at_one(self) -> None:
        # sorted 0.5, 0.9 (M = 2): 2·0.5/1 = 1.0, 2·0.9/2 = 0.9 → the minimum from the top gives 0.9 for both
        assert stats.benjamini_hochberg([0.9, 0.5]) == pytest.approx([0.9, 0.9])
        assert stats.benjamini_hochberg([1.0, 1.0, 1.0]) == [1.0, 1.0, 1.0]

    def test_equal_p_values(self) -> None:
        # four at 0.04: the largest rank gives 4·0.04/4 = 0.04 for all
        assert stats.benjamini_hochberg([0.04] * 4) == pytest.approx([0.04] * 4)

    def test_empty_and_single(self) -> None:
        assert stats.benjamini_hochberg([]) == []
        assert stats.benjamini_hochberg([0.03]) == [0.03]


class TestDecidePerCase:
    def test_three_cases_with_five_runs(self) -> None:
        # c0 5/5 → 0/5: p = 1/252; c1 5/5 → 5/5: p = 1; c2 5/5 → 4/5: C(5,5)·C(5,4)/C(10,9) = 5/10 = 0.5.
        # BH over M = 3: sorted 1/252, 0.5, 1 → 3/252, 0.75, 1 (already increasing) → c0's q = 1/84 < 0.1.
        base, head = case_runs(
            {
                "c0": ([1.0] * 5, [0.0] * 5),
                "c1": ([1.0] * 5, [1.0] * 5),
                "c2": ([1.0] * 5, [1.0, 1.0, 1.0, 1.0, 0.0]),
            }
        )
        verdict = decide(head, base, POLICY_M)
        c0, c1, c2 = (diagnostic(verdict, c) for c in ("c0", "c1", "c2"))
        assert (c0.fisher_p, c0.fisher_q, c0.per_case_regressed) == (1 / 252, pytest.approx(1 / 84), True)
        assert (c1.fisher_p, c1.fisher_q, c1.per_case_regressed) == (1.0, 1.0, False)
        assert (c2.fisher_p, c2.fisher_q, c2.per_case_regressed) == (0.5, 0.75, False)
        tests = verdict.per_case_tests
        assert tests is not None
        assert (tests.tested, tests.untested, tests.flagged, tests.min_runs, tests.q_threshold) == (3, 0, 1, 5, 0.1)
        assert (tests.k_baseline, tests.k_current) == (5, 5)
        [finding] = [f for f in verdict.findings if f.test == "fisher_exact"]
        assert (finding.kind, finding.severity, finding.case_id, finding.p_value) == (
            "regression",
            "info",
            "c0",
            pytest.approx(1 / 84),
        )
        assert finding.message == (
            "Case s/c0 regressed (per-case test): passes 5/5 → 0/5, one-sided Fisher exact p = 0.003968, "
            "Benjamini–Hochberg q = 0.0119 < 0.1 across 3 tested cases; m 1.000 → 0.000; shown for review: a "
            "per-case test alone never fails the gate."
        )
        # diagnostic only: the metric's own test (d = (−1, 0, −0.2), sign-flip p = 1/4) is what decides
        assert not verdict.blocking()
        assert verdict.outcome == "inconclusive"

    def test_a_drop_below_one_half_can_still_be_flagged(self) -> None:
        # 20/20 → 12/20: the pass rate falls by 0.4 < 0.5 (so not "likely regressed", label flaky), but
        # p = 125970/76904685 = 0.001638 and with M = 1, q = p < 0.1 → regressed (per-case test).
        base, head = case_runs({"c0": ([1.0] * 20, [1.0] * 12 + [0.0] * 8)})
        verdict = decide(head, base, POLICY_M)
        d = diagnostic(verdict, "c0")
        assert (d.label, d.likely_regressed_metrics, d.per_case_regressed) == ("flaky", [], True)
        assert d.fisher_p == pytest.approx(125970 / 76904685)
        [finding] = [f for f in verdict.findings if f.case_id == "c0" and f.kind == "regression"]
        assert finding.message.startswith(
            "Case s/c0 regressed (per-case test): passes 20/20 → 12/20, one-sided Fisher exact p = 0.001638"
        )
        assert "; m " not in finding.message  # no metric fell by 0.5

    def test_likely_regressed_but_not_confirmed(self) -> None:
        # c0 5/5 → 2/5: drop 0.6 ≥ 0.5 → likely regressed. Fisher: m = 7, C(5,5)·C(5,2)/C(10,7) = 10/120 = 1/12.
        # With two unchanged tested cases (p = 1): BH sorted 1/12, 1, 1 → 3·(1/12) = 0.25 ≥ 0.1 → not flagged.
        base, head = case_runs(
            {
                "c0": ([1.0] * 5, [1.0, 1.0, 0.0, 0.0, 0.0]),
                "c1": ([1.0] * 5, [1.0] * 5),
                "c2": ([1.0] * 5, [1.0] * 5),
            }
        )
        verdict = decide(head, base, POLICY_M)
        d = diagnostic(verdict, "c0")
        assert (d.fisher_p, d.fisher_q, d.per_case_regressed) == (
            pytest.approx(1 / 12),
            pytest.approx(0.25),
            False,
        )
        [finding] = [f for f in verdict.findings if f.case_id == "c0" and f.kind == "regression"]
        assert finding.message == (
            "Case s/c0 likely regressed: m 1.000 → 0.400 (drop ≥ 0.5), but its per-case test is not significant "
            "(passes 5/5 → 2/5, one-sided Fisher exact p = 0.08333, Benjamini–Hochberg q = 0.25 ≥ 0.1 across "
            "3 tested cases); shown for review: a per-case test alone never fails the gate."
        )
        assert verdict.per_case_tests is not None and verdict.per_case_tests.flagged == 0

    def test_three_runs_are_not_tested(self) -> None:
        base, head = case_runs({"c0": ([1.0] * 3, [0.0] * 3), "c1": ([1.0] * 3, [1.0] * 3)})
        verdict = decide(head, base, POLICY_M)
        assert all(d.fisher_p is None and not d.per_case_regressed for d in verdict.cases)
        tests = verdict.per_case_tests
        assert tests is not None
        assert (tests.tested, tests.untested, tests.flagged, tests.k_baseline, tests.k_current) == (0, 2, 0, 3, 3)
        # the untested case keeps the "needs k ≥ 5" note
        [finding] = [f for f in verdict.findings if f.case_id == "c0" and f.kind == "regression"]
        assert finding.message.endswith(
            "shown for review: a single case needs k ≥ 5 repetitions to be tested on its own, and this flag alone "
            "never fails the gate."
        )
        assert finding.test is None

    def test_only_cases_with_enough_runs_on_both_sides_are_tested(self) -> None:
        # c0 has 5 runs on both sides; c1 has 5 in the baseline but only 4 now → not tested, M = 1.
        base, head = case_runs({"c0": ([1.0] * 5, [0.0] * 5), "c1": ([1.0] * 5, [0.0] * 4)})
        verdict = decide(head, base, GatePolicy(metrics=["m"], missing_cases="warn"))
        assert diagnostic(verdict, "c0").fisher_q == 1 / 252  # M = 1: q = p
        assert diagnostic(verdict, "c1").fisher_p is None
        tests = verdict.per_case_tests
        assert tests is not None and (tests.tested, tests.untested, tests.k_current) == (1, 1, 4)

    def test_an_errored_repetition_is_not_a_pass(self) -> None:
        # baseline 5/5; now 4 failures and one error → 0 passes of 5 → p = 1/252
        base = run("base", reps("c0", "m", [1.0] * 5), repetitions=5)
        after = [*reps("c0", "m", [0.0] * 4), result("c0", {"m": 0.0}, repetition=4, errored=True)]
        head = run("head", after, repetitions=5)
        verdict = decide(head, base, GatePolicy(metrics=["m"], errors="count_as_failure"))
        assert diagnostic(verdict, "c0").fisher_p == 1 / 252

    def test_no_baseline_means_no_per_case_tests(self) -> None:
        _, head = case_runs({"c0": ([1.0] * 5, [0.0] * 5)})
        verdict = decide(head, None, POLICY_M)
        assert verdict.per_case_tests is None
        assert all(d.fisher_p is None for d in verdict.cases)

    def test_quarantined_cases_are_not_tested(self) -> None:
        base, head = case_runs({"c0": ([1.0] * 5, [0.0] * 5), "c1": ([1.0] * 5, [1.0] * 5)})
        policy = GatePolicy(
            metrics=["m"], quarantine=[QuarantineEntry(case_id="c0", until=date(2099, 1, 1), reason="flaky")]
        )
        verdict = decide(head, base, policy)
        assert diagnostic(verdict, "c0").fisher_p is None
        assert verdict.per_case_tests is not None and verdict.per_case_tests.tested == 1

    def test_many_tested_cases_share_the_correction(self) -> None:
        # 10 cases 5/5 → 0/5 (p = 1/252 each) and 30 unchanged (p = 1): BH over M = 40 gives the ten smallest
        # 40·(1/252)/10 = 40/2520 = 1/63 = 0.0159 — every one of the ten is flagged.
        spec = {f"d{i}": ([1.0] * 5, [0.0] * 5) for i in range(10)}
        spec |= {f"s{i:02d}": ([1.0] * 5, [1.0] * 5) for i in range(30)}
        base, head = case_runs(spec)
        verdict = decide(head, base, POLICY_M)
        flagged = sorted(d.case_id for d in verdict.cases if d.per_case_regressed)
        assert flagged == [f"d{i}" for i in range(10)]
        assert [d.fisher_q for d in verdict.cases if d.per_case_regressed] == [pytest.approx(1 / 63)] * 10
