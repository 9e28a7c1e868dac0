"""A case's outcomes over a branch's runs (oldest first), told apart: sustained changes (a regression, its fix)
and flips (noise). The case page tells a case's story with them (`case_page`); the repository page lists the cases
that flip (`dashboard`)."""

from __future__ import annotations

SUSTAINED_RUNS = 2
"""Consecutive failing runs, after a passing one, that make a sustained change rather than one bad run."""


def changes_and_flips(outcomes: list[bool]) -> tuple[list[tuple[int, int]], int, int]:
    """(sustained failing streaks as (first, last) indexes, flips, pairs) of `outcomes` (oldest first): a streak
    is `SUSTAINED_RUNS` or more failing runs in a row after a passing one; the transitions into and out of a
    streak are changes, not flips, and count in neither `flips` nor `pairs`. Example: P F P P F F F P →
    streak (4, 6); flips 2 (P→F, F→P at 1) of 5 pairs (7 pairs less the 2 changes)."""
    streaks: list[tuple[int, int]] = []
    index = 0
    while index < len(outcomes):
        end = index
        while end + 1 < len(outcomes) and outcomes[end + 1] == outcomes[index]:
            end += 1
        if not outcomes[index] and index > 0 and end - index + 1 >= SUSTAINED_RUNS:
            streaks.append((index, end))
        index = end + 1
    changes = {first for first, _ in streaks} | {last + 1 for _, last in streaks if last + 1 < len(outcomes)}
    flips = pairs = 0
    for at in range(1, len(outcomes)):  # the pair (at - 1, at)
        if at in changes:
            continue
        pairs += 1
        flips += outcomes[at] != outcomes[at - 1]
    return streaks, flips, pairs
