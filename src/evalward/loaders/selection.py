"""Which cases of the loaded eval sets a run keeps: `--case` globs, `--sample N`, and the explicit keys every
other selection ends in (`FILE:IDS`, the gate's base side).

Applied when the run is prepared, before sharding: `filter_cases` keeps the
cases whose id matches a glob (`fnmatch.fnmatchcase`: `*`, `?`, `[seq]`, case-sensitive); `sample_cases` keeps
the N cases with the smallest sha256 of `SAMPLE_SEED` NUL `eval_set_id` NUL `case_id`, in their file order. The
sample depends on nothing but the case ids, so every repetition, every shard, the base side of a pull request
and the next run of the same files pick the same cases; adding a case changes it by at most that case.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Collection, Sequence

from evalward.errors import UsageError
from evalward.model import EvalSet
from evalward.model.cases import keep_ids
from evalward.model.text import listed_ids

SAMPLE_SEED = "evalward-sample-1"
"""The fixed seed of `--sample` (module docstring); changing it would change every user's sample."""


def keep_cases(sets: Sequence[EvalSet], wanted: Collection[tuple[str, str]]) -> list[EvalSet]:
    """Copies of `sets` holding only the wanted (eval set, case id) cases, in file order; empty sets dropped.
    Every case selection (`--case`, `--sample`, `FILE:IDS`, the gate's base side) ends here. A set whose cases
    are read on demand gets a view of them, chosen by id: no case is read to be selected."""
    by_set: dict[str, set[str]] = {}
    for set_id, case_id in wanted:
        by_set.setdefault(set_id, set()).add(case_id)
    out: list[EvalSet] = []
    for eval_set in sets:
        cases = keep_ids(eval_set.cases, by_set.get(eval_set.eval_set_id, set()).__contains__)
        if cases:
            out.append(eval_set.model_copy(update={"cases": cases}))
    return out


def filter_cases(sets: Sequence[EvalSet], patterns: Sequence[str]) -> list[EvalSet]:
    """The cases whose id matches any of `patterns` (globs); UsageError naming each pattern that matches none."""
    ids = [case_id for s in sets for case_id in s.case_ids()]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(i, p) for i in ids)]
    if unmatched:
        raise UsageError(
            f"--case {', '.join(repr(p) for p in unmatched)}: no case id matches; the case ids are: {listed_ids(ids)}"
        )
    wanted = {
        (s.eval_set_id, case_id)
        for s in sets
        for case_id in s.case_ids()
        if any(fnmatch.fnmatchcase(case_id, p) for p in patterns)
    }
    return keep_cases(sets, wanted)


def sample_rank_key(eval_set_id: str, case_id: str) -> str:
    """The hash that orders cases for `--sample`: sha256 of `SAMPLE_SEED` NUL `eval_set_id` NUL `case_id`, hex."""
    return hashlib.sha256(f"{SAMPLE_SEED}\0{eval_set_id}\0{case_id}".encode()).hexdigest()


def sample_cases(sets: Sequence[EvalSet], count: int) -> list[EvalSet]:
    """`count` cases chosen by `sample_rank_key` (all of them when there are no more), in file order."""
    if count < 1:
        raise UsageError(f"--sample must be at least 1, got {count}")
    keys = sorted(((s.eval_set_id, i) for s in sets for i in s.case_ids()), key=lambda k: (sample_rank_key(*k), k))
    return keep_cases(sets, set(keys[:count]))
