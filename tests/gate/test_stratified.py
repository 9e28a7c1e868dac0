"""The stratified pass-rate test, the newly-broken test and weighted Holm, on hand-calculated examples."""

from __future__ import annotations

import math
import random

import pytest

from evalward.gate import stats, stratified
from evalward.gate.stratified import (
    Stratum,
    hypergeometric_pmf,
    newly_broken_test,
    pass_rate_test,
    poisson_binomial_upper_tail,
    weighted_holm,
)


def test_hypergeometric_law_of_three_passes_in_six_runs() -> None:
    # t = 3 passes among N = 6 repetitions, k_c = 3 of them current: C(3,x)·C(3,3−x)/C(6,3) = 1, 9, 9, 1 over 20
    low, pmf = hypergeometric_pmf(6, 3, 3)
    assert low == 0
    assert pmf.tolist() == pytest.approx([1 / 20, 9 / 20, 9 / 20, 1 / 20])
    # t = 5: at least two passes must fall on the current side
    low, pmf = hypergeometric_pmf(6, 5, 3)
    assert low == 2
    assert pmf.tolist() == pytest.approx([10 / 20, 10 / 20])


def test_one_repetition_per_side_is_exact_mcnemar() -> None:
    # six pass → fail, one fail → pass, 23 stable: p = P[Bin(7, ½) ≥ 6] = 8/128 (docs/gate.md §4)
    strata = [Stratum(1, 1, 1, 0)] * 6 + [Stratum(1, 1, 0, 1)] + [Stratum(1, 1, 1, 1)] * 23
    result = pass_rate_test(strata, seed=1)
    assert result.test == "stratified_exact"
    assert result.p_value == pytest.approx(8 / 128)
    assert result.p_value == pytest.approx(stats.mcnemar_exact_p(6, 1))
    assert (result.informative, result.types) == (7, 1)


def test_always_to_never_in_five_cases() -> None:
    # each case 3/3 → 0/3: all three passes on the baseline side has probability 1/20 per case → (1/20)^5
    strata = [Stratum(3, 3, 3, 0)] * 5 + [Stratum(3, 3, 3, 3)] * 95
    result = pass_rate_test(strata, seed=1)
    assert result.p_value == pytest.approx(20.0**-5)
    assert result.min_p == pytest.approx(20.0**-5)


def test_nothing_can_move_gives_one() -> None:
    result = pass_rate_test([Stratum(3, 3, 3, 3), Stratum(3, 3, 0, 0)], seed=1)
    assert (result.p_value, result.informative) == (1.0, 0)


def test_monte_carlo_agrees_with_exact_enumeration(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    strata = [Stratum(3, 3, rng.randint(0, 3), rng.randint(0, 3)) for _ in range(12)]
    exact = pass_rate_test(strata, seed=1)
    assert exact.test == "stratified_exact"
    monkeypatch.setattr(stratified, "_EXACT_SUPPORT_MAX", 1)
    drawn = pass_rate_test(strata, seed=1, resamples=40_000)
    assert drawn.test == "stratified_mc"
    assert drawn.p_value == pytest.approx(exact.p_value, abs=0.01)


def test_large_types_use_the_fft_and_stay_normalised() -> None:
    strata = [Stratum(3, 3, 2, 1)] * 3000 + [Stratum(3, 3, 1, 1)] * 2000
    result = pass_rate_test(strata, seed=3, resamples=2000)
    assert 0.0 < result.p_value <= 1.0
    assert result.expected == pytest.approx(3000 * 4 * 1.5 + 2000 * 4.5 * 1.0)


def test_size_under_the_null_is_at_most_alpha() -> None:
    # 300 seeded datasets of 100 cases × 3 repetitions, pass probabilities from Beta(4, 1), nothing changed:
    # an exact test rejects at most α of them (plus simulation noise).
    rng = random.Random(11)
    rejected = 0
    for trial in range(300):
        strata = []
        for _ in range(100):
            p = rng.betavariate(4, 1)
            strata.append(
                Stratum(3, 3, sum(rng.random() < p for _ in range(3)), sum(rng.random() < p for _ in range(3)))
            )
        rejected += pass_rate_test(strata, seed=trial, resamples=2000).p_value < 0.05
    assert rejected / 300 <= 0.07


def test_newly_broken_one_among_ten_is_chance() -> None:
    # ten eligible coin-flip cases (3 passes of 6), one of them split 3/3 → 0/3: 1 − 0.95^10 = 0.4013
    strata = [Stratum(3, 3, 3, 0)] + [Stratum(3, 3, 2, 1)] * 9
    result = newly_broken_test(strata)
    assert (result.broken, result.eligible) == (1, 10)
    assert result.p_value == pytest.approx(1 - 0.95**10)
    assert result.expected == pytest.approx(0.5)


def test_newly_broken_five_among_fifteen_is_not() -> None:
    strata = [Stratum(3, 3, 3, 0)] * 5 + [Stratum(3, 3, 1, 2)] * 10 + [Stratum(3, 3, 3, 3)] * 85
    result = newly_broken_test(strata)
    expected = sum(math.comb(15, j) * 0.05**j * 0.95 ** (15 - j) for j in range(5, 16))
    assert result.p_value == pytest.approx(expected)
    assert result.p_value < 0.001


def test_newly_broken_needs_three_repetitions() -> None:
    assert newly_broken_test([Stratum(2, 2, 2, 0)] * 10).eligible == 0
    # unequal repetitions: 5 baseline, 3 current, t = 5 → q = 1/C(8, 5) = 1/56
    result = newly_broken_test([Stratum(5, 3, 5, 0)])
    assert result.p_value == pytest.approx(1 / 56)


def test_poisson_binomial_matches_the_binomial() -> None:
    p = [0.2] * 12
    for observed in range(14):
        binomial = sum(math.comb(12, j) * 0.2**j * 0.8 ** (12 - j) for j in range(observed, 13))
        assert poisson_binomial_upper_tail(p, observed) == pytest.approx(binomial)


def test_weighted_holm() -> None:
    # equal weights: Holm's adjusted p-values
    assert weighted_holm([0.01, 0.03, 0.04], [1, 1, 1]) == pytest.approx(stats.holm_adjust([0.01, 0.03, 0.04]))
    # weights 0.9 / 0.1: 0.03/0.9 = 0.033 goes first, p̃ = 0.03·1/0.9 = 0.0333; then 0.004 alone, max → 0.0333
    assert weighted_holm([0.03, 0.004], [0.9, 0.1]) == pytest.approx([0.03 / 0.9, 0.03 / 0.9])
    # a small p on a small weight is not enough: 0.009/0.1 = 0.09
    assert weighted_holm([0.5, 0.009], [0.9, 0.1]) == pytest.approx([0.5, 0.09])
