"""The gate's statistics against docs/gate.md's worked examples (hand calculations in the comments)."""

from __future__ import annotations

import math

import pytest

from evalward.gate import stats


class TestMcNemar:
    def test_gate_md_example_is_not_significant(self) -> None:
        # n10 = 6, n01 = 1: p = (C(7,6) + C(7,7)) / 2^7 = (7 + 1)/128 = 0.0625
        assert stats.mcnemar_exact_p(6, 1) == 0.0625

    def test_five_flips_one_way_are_significant(self) -> None:
        # n10 = 5, n01 = 0: p = C(5,5)/2^5 = 1/32 = 0.03125
        assert stats.mcnemar_exact_p(5, 0) == 1 / 32
        # four are not: 1/16 = 0.0625
        assert stats.mcnemar_exact_p(4, 0) == 1 / 16

    def test_no_discordant_pairs(self) -> None:
        assert stats.mcnemar_exact_p(0, 0) == 1.0

    def test_only_improvements(self) -> None:
        # n10 = 0, n01 = 3: P[Bin(3, ½) ≥ 0] = 1
        assert stats.mcnemar_exact_p(0, 3) == 1.0

    def test_negative_counts_refused(self) -> None:
        with pytest.raises(ValueError, match="n10=-1"):
            stats.mcnemar_exact_p(-1, 0)


class TestSignFlip:
    def test_gate_md_four_drops_and_a_zero(self) -> None:
        # d = (−1, −1, −1, −1, 0): of 2^5 = 32 vectors only the 2 that keep all four −1s reach −4
        # (the zero's sign is free) → 2/32; enumerated over the 4 non-zero values: 1/16, the same.
        result = stats.sign_flip_test([-1, -1, -1, -1, 0], seed=1)
        assert result.p_value == 2 / 32
        assert result.test == "sign_flip_exact"
        assert (result.nonzero, result.at_least_as_extreme, result.draws) == (4, 1, 16)

    def test_five_drops_are_enough(self) -> None:
        # d = five −1s: only the identity reaches −5 → 1/32 = 0.031 < 0.05
        assert stats.sign_flip_test([-1] * 5, seed=1).p_value == 1 / 32

    def test_graded_differences(self) -> None:
        # d = (−0.5, −0.25, 0.25), T_obs = −0.5. The 8 sums Σσd:
        # (+++) −0.5, (++−) −1.0, (+−+) 0, (+−−) −0.5, (−++) 0.5, (−+−) 0, (−−+) 1.0, (−−−) 0.5
        # ≤ −0.5: three of them → p = 3/8
        assert stats.sign_flip_test([-0.5, -0.25, 0.25], seed=1).p_value == 3 / 8

    def test_ties_count_despite_float_rounding(self) -> None:
        # d = (0.1, 0.2, −0.3): T_obs = 0.1 + 0.2 − 0.3, which is 5.6e−17 in floats, not 0. The 8 sums:
        # (+,+,+) ≈ 0, (+,+,−) 0.6, (+,−,+) −0.4, (+,−,−) 0.2, (−,+,+) −0.2, (−,+,−) 0.4, (−,−,+) −0.6,
        # (−,−,−) ≈ 0 → five are ≤ T_obs, both "≈ 0" ones included whatever their rounding
        assert stats.sign_flip_test([0.1, 0.2, -0.3], seed=1).p_value == 5 / 8

    def test_all_zero_differences(self) -> None:
        result = stats.sign_flip_test([0.0, 0.0, 0.0], seed=1)
        assert result.p_value == 1.0

    def test_only_improvements(self) -> None:
        # d = (1, 1): sums 2, 0, 0, −2 are all ≤ 2 → p = 4/4
        assert stats.sign_flip_test([1, 1], seed=1).p_value == 1.0

    def test_monte_carlo_above_the_enumeration_limit(self) -> None:
        # 20 non-zero −1s: P(a random vector reaches −20) = 2^−20, so almost surely no draw does:
        # p = (1 + 0)/(1 + 10000)
        result = stats.sign_flip_test([-1.0] * 20, seed=7)
        assert result.test == "sign_flip_mc"
        assert result.p_value == 1 / 10_001

    def test_monte_carlo_agrees_with_exact(self) -> None:
        diffs = [-0.5, 0.25, -1, -0.25, 0.5, -0.75, 0.25, -0.5, 1, -1, -0.25, 0.5]
        exact = stats.sign_flip_test(diffs, seed=3).p_value
        sampled = stats.sign_flip_test(diffs, seed=3, exact_max_n=0, resamples=20_000).p_value
        # Monte Carlo SE at p ≈ 0.3 with S = 20000 is about 0.003
        assert abs(exact - sampled) < 0.02

    def test_monte_carlo_is_reproducible(self) -> None:
        diffs = [(-1) ** i * (i % 5) / 5 - 0.05 for i in range(200)]
        first = stats.sign_flip_test(diffs, seed=11)
        assert first == stats.sign_flip_test(diffs, seed=11)
        assert first.test == "sign_flip_mc"


class TestBootstrap:
    def test_constant_differences_give_a_point(self) -> None:
        assert stats.bootstrap_mean_bounds([-0.2] * 7, alpha=0.05, seed=1) == pytest.approx((-0.2, -0.2))

    def test_two_values_rank_rule(self) -> None:
        # values (0, 1): a resampled mean is 0, 0.5 or 1 with probability ¼, ½, ¼. With S = 10000 the
        # 500th smallest (r = ⌊0.05 · 10000⌋) falls among the ≈2500 zeros and the 500th largest among the ones.
        assert stats.bootstrap_mean_bounds([0.0, 1.0], alpha=0.05, seed=1) == (0.0, 1.0)

    def test_bounds_bracket_the_mean_and_are_reproducible(self) -> None:
        values = [((i * 7) % 11 - 5) / 10 for i in range(60)]
        low, high = stats.bootstrap_mean_bounds(values, alpha=0.05, seed=5)
        mean = sum(values) / len(values)
        assert low < mean < high
        assert (low, high) == stats.bootstrap_mean_bounds(values, alpha=0.05, seed=5)

    def test_empty_refused(self) -> None:
        with pytest.raises(ValueError, match="at least one"):
            stats.bootstrap_mean_bounds([], alpha=0.05, seed=1)


class TestHolm:
    def test_gate_md_example(self) -> None:
        # sorted p = 0.01, 0.03, 0.04, M = 3: 0.01 < 0.05/3 = 0.0167 rejects; 0.03 ≥ 0.05/2 = 0.025 stops,
        # so 0.04 is not rejected although 0.04 < 0.05/1.
        assert stats.holm_reject([0.01, 0.03, 0.04], 0.05) == [True, False, False]
        # adjusted: 3·0.01 = 0.03; max(0.03, 2·0.03) = 0.06; max(0.06, 1·0.04) = 0.06
        assert stats.holm_adjust([0.01, 0.03, 0.04]) == pytest.approx([0.03, 0.06, 0.06])

    def test_input_order_is_kept(self) -> None:
        assert stats.holm_reject([0.04, 0.01, 0.03], 0.05) == [False, True, False]
        assert stats.holm_adjust([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])

    def test_adjusted_values_cap_at_one(self) -> None:
        assert stats.holm_adjust([0.6, 0.7]) == [1.0, 1.0]


class TestWilson:
    def test_gate_md_example(self) -> None:
        # p̂ = 0.9, z = 1.95996, z² = 3.84146: centre = (0.9 + 0.038415)/1.076829 = 0.87147;
        # half = 1.95996 · √(0.0018 + 0.000384)/1.076829 = 0.08507 → [0.786, 0.957]
        low, high = stats.wilson_interval(45, 50)
        assert (round(low, 3), round(high, 3)) == (0.786, 0.957)
        # a 0.80 floor is neither confidently met (low < 0.80) nor missed (high > 0.80)
        assert low < 0.80 < high

    def test_no_trials(self) -> None:
        assert stats.wilson_interval(0, 0) == (0.0, 1.0)


class TestPower:
    def test_cases_needed(self) -> None:
        # z_0.95 + z_0.8 = 1.64485 + 0.84162 = 2.48647; (2.48647 · 0.5 / 0.1)² = 12.432² = 154.56 → 155
        assert stats.cases_needed(0.5, 0.1, alpha=0.05, power=0.8) == 155

    def test_minimum_detectable_effect(self) -> None:
        # 2.48647 · 0.5 / √100 = 0.12432
        assert stats.minimum_detectable_effect(0.5, 100, alpha=0.05, power=0.8) == pytest.approx(0.12432, abs=1e-5)

    def test_paired_sd_needs_two(self) -> None:
        assert stats.paired_sd([0.3]) is None
        # (−1, 0, 1): mean 0, Σ(d−mean)² = 2, s_d = √(2/2) = 1
        assert stats.paired_sd([-1.0, 0.0, 1.0]) == 1.0


class TestLogRatio:
    def test_doubled_cost_regresses(self) -> None:
        # r_i = ln 2 for every case → ratio 2, interval [2, 2]; exp(L) = 2 > 1.10
        result = stats.log_ratio_rule([1.0, 2.0, 0.5], [2.0, 4.0, 1.0], tau=0.1, alpha=0.05, seed=1)
        assert result is not None
        assert (result.ratio, result.ci_low, result.ci_high) == pytest.approx((2.0, 2.0, 2.0))
        assert result.regressed
        assert (result.n, result.excluded) == (3, 0)

    def test_small_increase_within_tau(self) -> None:
        result = stats.log_ratio_rule([1.0, 1.0], [1.05, 1.05], tau=0.1, alpha=0.05, seed=1)
        assert result is not None
        assert result.ratio == pytest.approx(1.05)
        assert not result.regressed

    def test_zero_and_missing_values_are_excluded_and_counted(self) -> None:
        # only the last pair is usable: ratio = 3/1.5 = 2
        result = stats.log_ratio_rule([0.0, None, 1.5], [1.0, 1.0, 3.0], tau=0.1, alpha=0.05, seed=1)
        assert result is not None
        assert (result.n, result.excluded) == (1, 2)
        assert result.ratio == pytest.approx(2.0)
        assert math.isclose(result.ci_low, 2.0)

    def test_nothing_usable(self) -> None:
        assert stats.log_ratio_rule([None], [1.0], tau=0.1, alpha=0.05, seed=1) is None


class TestResamplingBlocks:
    """Resamples are drawn in blocks bounded by memory; the block size never changes a number."""

    @pytest.mark.parametrize("values_per_block", [1, 37, 1 << 21])
    def test_results_do_not_depend_on_the_block_size(
        self, monkeypatch: pytest.MonkeyPatch, values_per_block: int
    ) -> None:
        diffs = [((i * 37) % 11 - 5) / 10 for i in range(300)]
        sums, sizes = [sum(diffs[i : i + 3]) for i in range(0, 300, 3)], [3] * 100
        expected = (
            stats.bootstrap_mean_bounds(diffs, alpha=0.05, seed=7, resamples=500),
            stats.bootstrap_cluster_mean_bounds(sums, sizes, alpha=0.05, seed=7, resamples=500),
            stats.sign_flip_test(diffs, seed=7, resamples=500),
        )
        monkeypatch.setattr(stats, "_VALUES_PER_BLOCK", values_per_block)
        assert (
            stats.bootstrap_mean_bounds(diffs, alpha=0.05, seed=7, resamples=500),
            stats.bootstrap_cluster_mean_bounds(sums, sizes, alpha=0.05, seed=7, resamples=500),
            stats.sign_flip_test(diffs, seed=7, resamples=500),
        ) == expected

    def test_a_block_holds_a_bounded_number_of_values(self) -> None:
        # 100,000 cases: 20 resamples a block (2,097,152 values), not 1,024 (102 million values, 1.6 GB).
        blocks = list(stats._blocks(10_000, 100_000))
        assert blocks[0] == (0, 20) and blocks[-1] == (9_980, 20) and sum(rows for _, rows in blocks) == 10_000
        assert list(stats._blocks(3, 5)) == [(0, 3)]
        assert list(stats._blocks(2_000, 10)) == [(0, 1_024), (1_024, 976)]
