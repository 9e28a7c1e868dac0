"""Merging shards into one run: complete shards merge, anything missing fails closed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_factories import T0, make_case, make_run

from evalward.errors import GateInputError
from evalward.model import RunResult
from evalward.store import Store


def _shard(
    store: Store,
    run_id: str,
    index: int,
    count: int,
    case_ids: list[str],
    *,
    record: list[str] | None = None,
    status: str = "complete",
    fingerprint: str = "fp-1",
    group_id: str | None = "g-1",
) -> None:
    run = make_run(
        run_id, shard=(index, count), group_id=group_id, fingerprint=fingerprint, started=T0 + timedelta(minutes=index)
    )
    store.begin_run(run, [("smoke", c, 0) for c in case_ids])
    cases = [make_case(c) for c in (case_ids if record is None else record)]
    for case in cases:
        store.record_case(run_id, case)
    store.finish_run(
        run.model_copy(
            update={"status": status, "passed": True, "cases": cases, "finished_at": T0 + timedelta(hours=index)}
        )
    )


def test_complete_shards_merge_into_one_complete_run(store: Store) -> None:
    _shard(store, "s1", 1, 2, ["a", "b"])
    _shard(store, "s2", 2, 2, ["c"])

    merged = store.merge_runs(["s2", "s1"], new_run_id="merged")

    assert merged.status == "complete"
    assert [c.case_id for c in merged.cases] == ["a", "b", "c"]  # in shard order
    assert (merged.context.shard_index, merged.context.shard_count, merged.context.group_id) == (None, None, "g-1")
    assert merged.started_at == T0 + timedelta(minutes=1)
    assert merged.finished_at == T0 + timedelta(hours=2)
    assert merged.warnings[-1] == "merged from shards s1, s2"
    assert store.load_run("merged") == merged
    assert store.missing_items("merged") == []
    assert [r.planned for r in store.list_runs() if r.run_id == "merged"] == [3]


def test_merge_by_group_id_uses_the_newest_complete_attempt_per_shard(store: Store) -> None:
    _shard(store, "s1-old", 1, 2, ["a"], status="cancelled")
    _shard(store, "s1", 1, 2, ["a"])
    _shard(store, "s2", 2, 2, ["b"])
    _shard(store, "other", 1, 1, ["z"], group_id="g-2")

    merged = store.merge_runs(group_id="g-1", new_run_id="merged")

    assert [c.case_id for c in merged.cases] == ["a", "b"]


def test_a_missing_shard_fails_closed(store: Store) -> None:
    _shard(store, "s1", 1, 3, ["a"])
    _shard(store, "s3", 3, 3, ["c"])

    with pytest.raises(GateInputError, match=r"missing shard 2/3"):
        store.merge_runs(["s1", "s3"], new_run_id="merged")
    assert not store.has_run("merged")


def test_a_shard_lacking_a_planned_case_fails_closed_and_names_it(store: Store) -> None:
    _shard(store, "s1", 1, 2, ["a", "b"], record=["a"])
    _shard(store, "s2", 2, 2, ["c"])

    with pytest.raises(GateInputError, match=r"shard 1/2 \(run s1\) lacks 1 planned case results: smoke/b#0"):
        store.merge_runs(group_id="g-1", new_run_id="merged")


def test_unfinished_or_mismatched_shards_fail_closed_with_every_reason(store: Store) -> None:
    _shard(store, "s1", 1, 2, ["a"], status="cancelled")
    _shard(store, "s2", 2, 2, ["b"], fingerprint="fp-other")

    with pytest.raises(GateInputError) as raised:
        store.merge_runs(["s1", "s2"], new_run_id="merged")

    message = str(raised.value)
    assert "shard 1/2 (run s1) is cancelled, not complete" in message
    assert "run s2 has fingerprint fp-other" in message


def test_runs_that_are_not_shards_cannot_be_merged(store: Store) -> None:
    run = make_run("plain")
    store.begin_run(run, [])
    store.finish_run(run.model_copy(update={"status": "complete", "passed": True}))

    with pytest.raises(GateInputError, match=r"runs \['plain'\] are not shards"):
        store.merge_runs(["plain"], new_run_id="merged")


def test_finalize_recomputes_the_merged_summary(store: Store) -> None:
    _shard(store, "s1", 1, 2, ["a"])
    _shard(store, "s2", 2, 2, ["b"])

    def finalize(run: RunResult) -> RunResult:
        return run.model_copy(update={"warnings": [*run.warnings, f"{len(run.cases)} cases summarised"]})

    merged = store.merge_runs(["s1", "s2"], new_run_id="merged", finalize=finalize)

    assert merged.warnings[-1] == "2 cases summarised"
