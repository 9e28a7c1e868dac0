"""Pairing engines: maximum matching (never greedy), LCS, subsequence scan, first divergence, and the weighted
ones: the Hungarian assignment and the weighted LCS, checked against brute force."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalward.metrics.matching import (
    compat_matrix,
    first_divergence,
    lcs_pairs,
    max_weight_matching,
    maximum_matching,
    subsequence_pairs,
    weighted_lcs_pairs,
)


def test_maximum_matching_reroutes_where_greedy_first_fit_fails() -> None:
    # Rows = actual, columns = expected. A0 fits E0 and E1, A1 fits only E0.
    # Greedy first-fit pairs A0→E0 and leaves A1 alone (1 pair); the maximum matching is A0→E1, A1→E0.
    compat = [[True, True], [True, False]]
    # hand calculation: k* = 2
    assert maximum_matching(compat, 2) == [(0, 1), (1, 0)]


def test_maximum_matching_keeps_natural_pairs_when_they_are_optimal() -> None:
    compat = compat_matrix(["a", "b", "a"], ["a", "a", "b"], lambda x, y: x == y)
    # hand calculation: a0→a0, b1→b2, a2→a1 → k* = 3
    assert maximum_matching(compat, 3) == [(0, 0), (1, 2), (2, 1)]


def test_maximum_matching_of_empty_sides() -> None:
    assert maximum_matching([], 0) == []
    assert maximum_matching([], 3) == []
    assert maximum_matching([[], []], 0) == []


def _brute_force_size(compat: list[list[bool]], m: int) -> int:
    n = len(compat)
    best = 0
    for perm in itertools.permutations(range(max(n, m)), n):
        best = max(best, sum(1 for i, j in enumerate(perm) if j < m and compat[i][j]))
    return best


def test_maximum_matching_size_equals_brute_force_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n, m = rng.randint(0, 5), rng.randint(0, 5)
        compat = [[rng.random() < 0.4 for _ in range(m)] for _ in range(n)]
        pairs = maximum_matching(compat, m)
        assert len(pairs) == _brute_force_size(compat, m)
        assert all(compat[i][j] for i, j in pairs)
        assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})


def test_maximum_matching_handles_long_augmenting_chains_without_recursion() -> None:
    # A staircase: row i fits columns i and i+1; rows try column i first... worst case for naive order.
    size = 3000
    compat = [[j in (i, i + 1) for j in range(size)] for i in range(size)]
    assert len(maximum_matching(compat, size)) == size


def test_lcs_pairs() -> None:
    compat = compat_matrix(list("ABCBDAB"), list("BDCABA"), lambda x, y: x == y)
    # hand calculation: the classic CLRS example has LCS length 4 (e.g. BCBA)
    pairs = lcs_pairs(compat, 6)
    assert len(pairs) == 4
    assert all(a < b for (a, _), (b, _) in itertools.pairwise(pairs))
    assert all(a < b for (_, a), (_, b) in itertools.pairwise(pairs))


def test_subsequence_scan_and_first_divergence() -> None:
    compat = compat_matrix(["T1", "X", "T2", "Y", "T3"], ["T1", "T2", "T3"], lambda x, y: x == y)
    # hand calculation: T1@0, T2@2, T3@4
    assert subsequence_pairs(compat, 3) == [(0, 0), (2, 1), (4, 2)]
    # position 1: X vs T2 differ
    assert first_divergence(compat, 3) == 1
    same = compat_matrix(["a", "b"], ["a", "b"], lambda x, y: x == y)
    assert first_divergence(same, 2) is None
    prefix = compat_matrix(["a"], ["a", "b"], lambda x, y: x == y)
    assert first_divergence(prefix, 2) == 1


# --- weighted pairing: Hungarian assignment and weighted LCS ----------------------------------------------


def brute_force_assignment(weights: list[list[float]], n_expected: int) -> float:
    """The best total weight over every injective pairing of the smaller side into the larger one."""
    n = len(weights)
    if n == 0 or n_expected == 0:
        return 0.0
    if n <= n_expected:
        return max(sum(weights[i][perm[i]] for i in range(n)) for perm in itertools.permutations(range(n_expected), n))
    return max(
        sum(weights[perm[j]][j] for j in range(n_expected)) for perm in itertools.permutations(range(n), n_expected)
    )


def brute_force_weighted_lcs(weights: list[list[float]], n_expected: int) -> float:
    """The best total weight over every order-preserving pairing (increasing in both indices)."""
    best = 0.0
    n = len(weights)
    for size in range(min(n, n_expected) + 1):
        for rows in itertools.combinations(range(n), size):
            for cols in itertools.combinations(range(n_expected), size):
                best = max(best, sum(weights[i][j] for i, j in zip(rows, cols, strict=True)))
    return best


def test_hungarian_beats_greedy_on_partial_credit() -> None:
    # A0 earns 0.9 on E0 and 0.8 on E1; A1 earns 0.7 on E0 and nothing on E1.
    # Greedy (best first) takes A0→E0 (0.9) and leaves A1 with nothing: total 0.9.
    # hand calculation: the assignment A0→E1, A1→E0 earns 0.8 + 0.7 = 1.5
    weights = [[0.9, 0.8], [0.7, 0.0]]
    assert max_weight_matching(weights, 2) == [(0, 1), (1, 0)]


def test_hungarian_rectangular_and_zero_weights() -> None:
    # 3 actual × 1 expected: the best row wins; zero-weight pairs are never reported
    assert max_weight_matching([[0.2], [0.6], [0.4]], 1) == [(1, 0)]
    assert max_weight_matching([[0.0, 0.0], [0.0, 0.5]], 2) == [(1, 1)]
    assert max_weight_matching([], 3) == []
    assert max_weight_matching([[], []], 0) == []


def test_weighted_lcs_prefers_heavier_order_preserving_pairs() -> None:
    # A0 earns 0.5 on E1; A1 earns 1.0 on E0. Crossing pairs are not allowed in order:
    # hand calculation: best is A1→E0 alone (1.0) rather than A0→E1 alone (0.5)
    assert weighted_lcs_pairs([[0.0, 0.5], [1.0, 0.0]], 2) == [(1, 0)]
    # 0/1 weights reduce to the plain LCS
    compat = compat_matrix(list("abcb"), list("bcab"), lambda x, y: x == y)
    plain = lcs_pairs(compat, 4)
    weighted = weighted_lcs_pairs([[1.0 if c else 0.0 for c in row] for row in compat], 4)
    assert len(weighted) == len(plain) == 3


_weight = st.sampled_from([0.0, 0.0, 0.25, 1 / 3, 0.5, 1.0]) | st.floats(0, 1)


@st.composite
def weight_matrices(draw: st.DrawFn) -> tuple[list[list[float]], int]:
    n = draw(st.integers(0, 5))
    m = draw(st.integers(0, 5))
    return [draw(st.lists(_weight, min_size=m, max_size=m)) for _ in range(n)], m


@settings(max_examples=300, deadline=None)
@given(weight_matrices())
def test_hungarian_total_equals_brute_force(case: tuple[list[list[float]], int]) -> None:
    weights, m = case
    pairs = max_weight_matching(weights, m)
    # a matching: every actual and every expected item at most once, only positive weights
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    assert all(weights[i][j] > 0 for i, j in pairs)
    assert sum(weights[i][j] for i, j in pairs) == pytest.approx(brute_force_assignment(weights, m), abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(weight_matrices())
def test_weighted_lcs_total_equals_brute_force(case: tuple[list[list[float]], int]) -> None:
    weights, m = case
    pairs = weighted_lcs_pairs(weights, m)
    # order-preserving: strictly increasing on both sides
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(pairs))
    assert sum(weights[i][j] for i, j in pairs) == pytest.approx(brute_force_weighted_lcs(weights, m), abs=1e-9)


def test_hungarian_matches_maximum_matching_on_boolean_weights() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n, m = rng.randint(0, 6), rng.randint(0, 6)
        compat = [[rng.random() < 0.4 for _ in range(m)] for _ in range(n)]
        weights = [[1.0 if c else 0.0 for c in row] for row in compat]
        # hand rule: with 0/1 credit the maximum-weight matching has the maximum cardinality k*
        assert len(max_weight_matching(weights, m)) == len(maximum_matching(compat, m))
