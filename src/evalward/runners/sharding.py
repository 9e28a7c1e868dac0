"""Sharding (`--shard k/n`): which cases of a run one of n parallel jobs runs.

`select_shard` splits cases, not repetitions, so all repetitions of a case land in one shard.
Cases are ordered by sha256 of `eval_set_id` + NUL + `case_id` and dealt round-robin: shard k of n gets
ranks k-1, k-1+n, … — stable for a given set of cases, disjoint, complete, and balanced to within one case.
`executor.plan_work` applies it when the run is planned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from evalward.errors import UsageError

if TYPE_CHECKING:
    from evalward.runners.executor import WorkItem


def shard_rank_key(eval_set_id: str, case_id: str) -> str:
    """The hash that orders cases for sharding: sha256 of `eval_set_id` NUL `case_id`, hex."""
    return hashlib.sha256(f"{eval_set_id}\0{case_id}".encode()).hexdigest()


def select_shard(items: Sequence[WorkItem], shard: tuple[int, int]) -> list[WorkItem]:
    """The items of shard `k` of `n` (1-based), keeping the input order (rule in the module docstring)."""
    mine = shard_cases({(i.eval_set.eval_set_id, i.case.case_id) for i in items}, shard)
    return [i for i in items if (i.eval_set.eval_set_id, i.case.case_id) in mine]


def shard_cases(cases: Collection[tuple[str, str]], shard: tuple[int, int]) -> set[tuple[str, str]]:
    """The (eval set, case id) pairs of shard `k` of `n` among `cases` (rule in the module docstring)."""
    index, count = shard
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard must be k/n with 1 <= k <= n; found {index}/{count}")
    ranked = sorted(set(cases), key=lambda c: (shard_rank_key(*c), c))
    return {case for rank, case in enumerate(ranked) if rank % count == index - 1}
