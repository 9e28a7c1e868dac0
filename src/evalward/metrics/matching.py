"""Pairing engines shared by the trajectory, argument and state metrics.

Unordered pairing is a **maximum bipartite matching** (augmenting paths, Kuhn's algorithm): with a
lenient predicate (args mode `contains`, value matchers) greedy first-fit can leave valid pairs unmatched,
so the pairing must be optimal (docs/metrics.md §1). Ordered pairing is the longest common subsequence under
the predicate. The subsequence scan is the left-to-right greedy walk, which is optimal for the yes/no
question "is E a subsequence of A" and is exactly what the music-store `trajectory_subsequence` does.

All functions take a precomputed compatibility matrix `compat[i][j]` = M(actual_i, expected_j), so the
predicate (possibly expensive argument matching) runs once per pair. The weighted engines take a credit
matrix `weight[i][j]` in [0, 1] instead: `max_weight_matching` solves the assignment problem (Hungarian
algorithm; greedy can score below the optimum) and `weighted_lcs_pairs` is the maximum-weight common
subsequence.
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


WeightMatrix = list[list[float]]
"""`weight[i][j]` = credit in [0, 1] of pairing actual i with expected j (0 = not compatible)."""


def max_weight_matching(weights: WeightMatrix, n_expected: int) -> list[Pair]:
    """A maximum-weight bipartite matching (the assignment problem), as sorted pairs of positive weight.

    Hungarian algorithm with row/column potentials (shortest augmenting paths, O(r²·c) for r ≤ c): the
    smaller side is assigned in full to distinct partners of the larger side minimising Σ −w, which maximises
    Σ w; since every weight is ≥ 0, a pairing with a zero-weight pair is no better than leaving it out, so
    zero-weight pairs are dropped from the result and the total is unchanged. A greedy pass can score below
    this optimum (DeepEval's partial credit, docs/metrics.md §12), so weighted pairing never uses one.
    """
    n_actual = len(weights)
    if n_actual == 0 or n_expected == 0:
        return []
    transposed = n_actual > n_expected
    # Rows must be the smaller side; the algorithm assigns every row.
    cost = (
        [[-weights[i][j] for i in range(n_actual)] for j in range(n_expected)]
        if transposed
        else [[-w for w in row] for row in weights]
    )
    rows, cols = len(cost), len(cost[0])
    inf = float("inf")
    u = [0.0] * (rows + 1)  # row potentials (1-based; index 0 unused)
    v = [0.0] * (cols + 1)  # column potentials; column 0 is the virtual start of each search
    owner = [0] * (cols + 1)  # column j -> row assigned to it (1-based), 0 = free
    way = [0] * (cols + 1)  # previous column on the shortest alternating path
    for row in range(1, rows + 1):
        owner[0] = row
        column = 0
        slack = [inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[column] = True
            current = owner[column]
            delta, nearest = inf, 0
            for j in range(1, cols + 1):
                if used[j]:
                    continue
                reduced = cost[current - 1][j - 1] - u[current] - v[j]
                if reduced < slack[j]:
                    slack[j], way[j] = reduced, column
                if slack[j] < delta:
                    delta, nearest = slack[j], j
            for j in range(cols + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    slack[j] -= delta
            column = nearest
            if owner[column] == 0:
                break
        # Flip the alternating path back to the start: each column takes the row of the one before it.
        while column:
            previous = way[column]
            owner[column] = owner[previous]
            column = previous
    pairs: list[Pair] = []
    for j in range(1, cols + 1):
        if owner[j]:
            i = owner[j] - 1
            pair = (j - 1, i) if transposed else (i, j - 1)
            if weights[pair[0]][pair[1]] > 0:
                pairs.append(pair)
    return sorted(pairs)


def weighted_lcs_pairs(weights: WeightMatrix, n_expected: int) -> list[Pair]:
    """Pairs of a maximum-weight common subsequence (dynamic programming, O(n·m)).

    `best[i][j]` = max(best[i+1][j], best[i][j+1], w[i][j] + best[i+1][j+1]) over actual[i:], expected[j:];
    only positive-weight pairs are taken. With 0/1 weights this is the plain LCS. Backtracking prefers the
    earliest pair, so the result is deterministic.
    """
    n = len(weights)
    best = [[0.0] * (n_expected + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(n_expected - 1, -1, -1):
            value = max(best[i + 1][j], best[i][j + 1])
            w = weights[i][j]
            if w > 0:
                value = max(value, w + best[i + 1][j + 1])
            best[i][j] = value
    pairs: list[Pair] = []
    i = j = 0
    while i < n and j < n_expected:
        w = weights[i][j]
        if w > 0 and best[i][j] == w + best[i + 1][j + 1]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
