"""Pairing engines shared by the trajectory, argument and state metrics.

Unordered pairing is a **maximum bipartite matching** (augmenting paths, Kuhn's algorithm): with a
lenient predicate (args mode `contains`, value matchers) greedy first-fit can leave valid pairs unmatched,
so the pairing must be optimal (METRICS.md §1). Ordered pairing is the longest common subsequence under
the predicate. The subsequence scan is the left-to-right greedy walk, which is optimal for the yes/no
question "is E a subsequence of A" and is exactly what the music-store `trajectory_subsequence` does.

All functions take a precomputed compatibility matrix `compat[i][j]` = M(actual_i, expected_j), so the
predicate (possibly expensive argument matching) runs once per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

A = TypeVar("A")
E = TypeVar("E")

Pair = tuple[int, int]
"""(actual index, expected index)."""

CompatMatrix = list[list[bool]]


def compat_matrix(actual: Sequence[A], expected: Sequence[E], predicate: Callable[[A, E], bool]) -> CompatMatrix:
    """`compat[i][j] = predicate(actual[i], expected[j])`, evaluated once per pair."""
    return [[predicate(a, e) for e in expected] for a in actual]


def maximum_matching(compat: CompatMatrix, n_expected: int) -> list[Pair]:
    """A maximum bipartite matching between actual (rows) and expected (columns), as sorted pairs.

    A greedy first-fit pass seeds the pairing, then every actual item left unpaired searches an augmenting
    path (Kuhn), re-routing earlier pairs along an alternating path when that frees a partner. Size is
    maximum (Berge's lemma: no augmenting path remains); the fixed iteration order makes it deterministic.
    O(n · edges); the search is iterative so long trajectories cannot exhaust the recursion limit.
    """
    owner: list[int | None] = [None] * n_expected  # expected j -> actual i paired with it
    # Greedy first-fit seeds the matching (so identical orders pair positionally in diagnostics) …
    unmatched: list[int] = []
    for row, fits in enumerate(compat):
        free = next((j for j in range(n_expected) if fits[j] and owner[j] is None), None)
        if free is None:
            unmatched.append(row)
        else:
            owner[free] = row
    # … and augmenting paths make it maximum: first-fit alone can miss valid pairs.
    for start in unmatched:
        _augment(compat, owner, start)
    return sorted((i, j) for j, i in enumerate(owner) if i is not None)


def _augment(compat: CompatMatrix, owner: list[int | None], start: int) -> bool:
    """Find an alternating path from actual `start` to a free expected item; flip it if found."""
    visited = [False] * len(owner)
    # Each frame: (actual row, next column to try); `path` holds the column chosen at each depth.
    stack: list[list[int]] = [[start, 0]]
    path: list[int] = []
    while stack:
        frame = stack[-1]
        row, column = frame
        advanced = False
        while column < len(owner):
            j = column
            column += 1
            if not compat[row][j] or visited[j]:
                continue
            visited[j] = True
            frame[1] = column
            current = owner[j]
            if current is None:
                # Free column: flip the path (every row on the stack takes the column it reached).
                path.append(j)
                for (r, _), col in zip(stack, path, strict=True):
                    owner[col] = r
                return True
            path.append(j)
            stack.append([current, 0])
            advanced = True
            break
        if not advanced:
            stack.pop()
            if path:
                path.pop()
    return False


def lcs_pairs(compat: CompatMatrix, n_expected: int) -> list[Pair]:
    """Pairs of a longest common subsequence under the predicate (dynamic programming, O(n·m)).

    `length[i][j]` = LCS of actual[i:] and expected[j:]; backtracking prefers the earliest pair, so the
    result is deterministic.
    """
    n = len(compat)
    length = [[0] * (n_expected + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(n_expected - 1, -1, -1):
            if compat[i][j]:
                length[i][j] = length[i + 1][j + 1] + 1
            else:
                length[i][j] = max(length[i + 1][j], length[i][j + 1])
    pairs: list[Pair] = []
    i = j = 0
    while i < n and j < n_expected:
        if compat[i][j] and length[i][j] == length[i + 1][j + 1] + 1:
            pairs.append((i, j))
            i += 1
            j += 1
        elif length[i + 1][j] >= length[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def subsequence_pairs(compat: CompatMatrix, n_expected: int) -> list[Pair]:
    """Walk actual once left to right, advancing the expected pointer on each match.

    This is the greedy scan of ADK IN_ORDER and of the music-store `trajectory_subsequence`: expected is
    a subsequence of actual iff the scan pairs every expected item. Under a non-equivalence predicate its
    pair count can fall below the LCS; it answers the yes/no question exactly, which is all it is used for
    (and the partial-credit seed metric, which is defined by this scan).
    """
    pairs: list[Pair] = []
    j = 0
    for i in range(len(compat)):
        if j >= n_expected:
            break
        if compat[i][j]:
            pairs.append((i, j))
            j += 1
    return pairs


def first_divergence(compat: CompatMatrix, n_expected: int) -> int | None:
    """First position i where actual[i] does not match expected[i] (or one side ends); None if identical."""
    n = len(compat)
    for i in range(min(n, n_expected)):
        if not compat[i][i]:
            return i
    return None if n == n_expected else min(n, n_expected)
