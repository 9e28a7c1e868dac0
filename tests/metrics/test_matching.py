"""Pairing engines: maximum matching (never greedy), LCS, subsequence scan, first divergence."""

from __future__ import annotations

import itertools
import random

from evalward.metrics.matching import (
    compat_matrix,
    first_divergence,
    lcs_pairs,
    maximum_matching,
    subsequence_pairs,
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
