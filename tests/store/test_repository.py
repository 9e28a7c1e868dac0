"""Store: writing runs case by case, reading them back, history queries, export and import."""

from __future__ import annotations

from datetime import timedelta

import pytest
from store_factories import T0, make_case, make_run

from evalward.errors import GateInputError, UsageError
from evalward.metrics.aggregate import summarize_case
from evalward.model import CaseSummary, MetricSummary, RunResult, ToolCall, Usage
from evalward.model.results import InvocationResult
from evalward.store import Store, open_store
from evalward.store.engine import JSONText


def _finished(run: RunResult, cases: list, *, passed: bool = True) -> RunResult:  # type: ignore[type-arg]
    return run.model_copy(
        update={"status": "complete", "passed": passed, "finished_at": T0 + timedelta(minutes=5), "cases": cases}
    )


def test_round_trip_rebuilds_the_recorded_run_exactly(store: Store) -> None:
    run = make_run("run-1", case_ids=["a", "b", "c"])
    store.begin_run(run, [("smoke", "a", 0), ("smoke", "b", 0), ("smoke", "c", 0)])
    rich = make_case("a").model_copy(
        update={
            "usage": Usage(input_tokens=120, output_tokens=30, cost_usd=0.0042),
            "final_state": {"cart": ["sku-1"], "nested": {"ok": True}},
            "invocations": [
                InvocationResult(
                    turn=0,
                    query="Where is my order 7?",
                    expected_response="It ships today",
                    actual_response="It ships today ✓",
                    expected_tool_calls=[ToolCall(name="lookup", args={"order": 7})],
                    actual_tool_calls=[ToolCall(name="lookup", args={"order": 7}, result={"eta": "today"})],
                    latency_s=0.75,
                )
            ],
        }
    )
    cases = [rich, make_case("b", passed=False, score=0.25), make_case("c", error=True)]
    for case in cases:
        assert store.record_case("run-1", case) is True
    final = _finished(run, cases, passed=False).model_copy(
        update={
            "summary": {"trajectory_f1": MetricSummary(mean=0.625, threshold=0.8, passed=False, n=2, pass_rate=0.5)},
            # Each case's summary is a fold of its results (the store folds them again when it loads a run).
            "case_summaries": [summarize_case([case], repetitions=1, pass_rule="per_run") for case in cases],
            "warnings": ["case 'c' timed out"],
        }
    )
    store.finish_run(final)

    loaded = store.load_run("run-1")

    assert loaded == final
    assert loaded.model_dump(mode="json") == final.model_dump(mode="json")
    assert loaded.cases[0].usage == Usage(input_tokens=120, output_tokens=30, cost_usd=0.0042)
    assert loaded.started_at is not None and loaded.started_at.tzinfo is not None
    assert loaded.case_summaries[0] == CaseSummary(
        eval_set_id="smoke",
        case_id="a",
        repetitions=1,
        passes=1,
        errors=0,
        pass_rate=1.0,
        pass_at_k=1.0,
        pass_hat_k=1.0,
        metric_means={"trajectory_f1": 1.0, "response_match": 0.5},
        passed=True,
    )


def test_case_summaries_are_folded_from_the_stored_results_not_stored(store: Store) -> None:
    """The runs row leaves them out (a 100,000-case run's would be ~60 MB of JSON in one value); a row written
    before that keeps its own, which load_run reads back as they are."""
    from sqlalchemy import Text, cast, select, update

    from evalward.store.schema import runs_table

    cases = [make_case("a"), make_case("b", passed=False, score=0.25), make_case("a", repetition=1, score=0.5)]
    run = make_run("run-1", case_ids=["a", "b"]).model_copy(update={"repetitions": 2})
    store.begin_run(run, [c.key for c in cases])
    store.record_cases("run-1", cases)
    store.finish_run(_finished(run, cases))
    with store.engine.connect() as conn:
        row_text = conn.execute(select(cast(runs_table.c.run_json, Text))).scalar_one()
    assert '"case_summaries":[]' in row_text

    folded = store.load_run("run-1").case_summaries
    assert [(s.case_id, s.repetitions, s.passes, s.metric_means["trajectory_f1"]) for s in folded] == [
        ("a", 2, 2, 0.75),
        ("b", 1, 0, 0.25),
    ]
    older = row_text.replace('"case_summaries":[]', f'"case_summaries":[{folded[1].model_dump_json()}]')
    with store.engine.begin() as conn:
        conn.execute(update(runs_table).values(run_json=JSONText(older)))
    assert list(store.load_run("run-1").case_summaries) == [folded[1]]


def test_a_running_run_loads_with_the_cases_recorded_so_far_in_write_order(store: Store) -> None:
    run = make_run("run-1", case_ids=["a", "b", "c"])
    store.begin_run(run, [("smoke", "c", 0), ("smoke", "a", 0), ("smoke", "b", 0)])
    store.record_case("run-1", make_case("c"))
    store.record_case("run-1", make_case("a"))

    loaded = store.load_run("run-1")

    assert loaded.status == "running"
    assert [c.case_id for c in loaded.cases] == ["c", "a"]
    assert loaded.model_copy(update={"cases": []}) == run


@pytest.mark.parametrize("max_in_memory", ["0", "2", "1000"])
def test_a_loaded_run_reads_its_cases_as_a_stream_in_the_recorded_order(
    store: Store, monkeypatch: pytest.MonkeyPatch, max_in_memory: str
) -> None:
    """Cases finish_run saw come back in its order (not the order they were written), later ones after them;
    past EVALWARD_MAX_RECORDS_IN_MEMORY they wait in a temporary file, and they come back equal either way."""
    monkeypatch.setenv("EVALWARD_MAX_RECORDS_IN_MEMORY", max_in_memory)
    ids = ["e", "b", "d", "a", "c"]
    run = make_run("run-1", case_ids=ids)
    store.begin_run(run, [("smoke", case_id, 0) for case_id in ids])
    written = [make_case(case_id, score=0.5 + index / 10) for index, case_id in enumerate(ids)]
    for case in written[::-1]:  # written in the reverse of the run's order
        store.record_case("run-1", case)
    store.finish_run(run.model_copy(update={"cases": written[:4], "status": "complete"}))
    store.record_case("run-1", make_case("late"))

    loaded = store.load_run("run-1")

    assert [c.case_id for c in loaded.cases] == ["e", "b", "d", "a", "c", "late"]
    assert list(loaded.cases)[:5] == written
    assert [c.key for c in loaded.cases] == [("smoke", i, 0) for i in [*ids, "late"]]
    assert loaded.cases.statuses()[0] == written[0].status  # type: ignore[attr-defined]


def test_record_case_is_idempotent_per_run_case_and_repetition(store: Store) -> None:
    store.begin_run(make_run("run-1"), [("smoke", "a", 0), ("smoke", "a", 1)])

    first = store.record_case("run-1", make_case("a", score=1.0))
    # Same key, different content: the first write stands, nothing changes.
    again = store.record_case("run-1", make_case("a", score=0.0, passed=False))
    other_repetition = store.record_case("run-1", make_case("a", repetition=1))

    assert (first, again, other_repetition) == (True, False, True)
    loaded = store.load_run("run-1")
    assert [(c.case_id, c.repetition, c.metrics["trajectory_f1"]) for c in loaded.cases] == [
        ("a", 0, 1.0),
        ("a", 1, 1.0),
    ]
    scores = store.load_scores("run-1", ["trajectory_f1"])
    assert sorted((s.repetition, s.score) for s in scores) == [(0, 1.0), (1, 1.0)]


def test_record_cases_writes_a_batch_once(store: Store) -> None:
    store.begin_run(make_run("run-1", case_ids=["a", "b"]), [("smoke", "a", 0), ("smoke", "b", 0)])
    store.record_case("run-1", make_case("a", score=1.0))

    # a#0 is already stored (skipped), b#0 is new, and b#0 twice in one batch is written once: 1 new row.
    written = store.record_cases("run-1", [make_case("a", score=0.0), make_case("b"), make_case("b")])

    assert written == 1
    assert store.missing_items("run-1") == []
    assert [(c.case_id, c.metrics["trajectory_f1"]) for c in store.load_run("run-1").cases] == [("a", 1.0), ("b", 1.0)]


def test_a_fresh_batch_is_stored_as_encoded_and_a_repeat_still_lands_once(store: Store) -> None:
    """The run's writer hands over each result with its redacted JSON and says the batch is fresh (never stored):
    the rows hold that JSON as it is, and a result stored meanwhile by another writer is not stored twice."""
    from evalward.spill import encode_record

    store.begin_run(make_run("run-1", case_ids=["a", "b", "c"]), [("smoke", n, 0) for n in "abc"])
    a, b, c = make_case("a"), make_case("b", score=0.25), make_case("c")
    assert store.record_cases("run-1", [a, b], [encode_record(a), encode_record(b)], fresh=True) == 2
    # "c" was written by a second process resuming the same run; the batch still claims to be fresh.
    store.record_case("run-1", c)
    d = make_case("d")
    assert store.record_cases("run-1", [c, d], [encode_record(c), encode_record(d)], fresh=True) == 1

    loaded = store.load_run("run-1").cases
    assert [(x.case_id, x.metrics["trajectory_f1"]) for x in loaded] == [
        ("a", 1.0),
        ("b", 0.25),
        ("c", 1.0),
        ("d", 1.0),
    ]
    assert [x.model_dump(mode="json") for x in loaded] == [x.model_dump(mode="json") for x in (a, b, c, d)]
    assert len(store.load_scores("run-1", ["trajectory_f1"])) == 4


def test_record_case_for_an_unknown_run_names_the_run(store: Store) -> None:
    with pytest.raises(GateInputError, match="run 'nope' is not in the history database"):
        store.record_case("nope", make_case("a"))


def test_begin_run_twice_with_one_id_is_refused(store: Store) -> None:
    store.begin_run(make_run("run-1"), [])
    with pytest.raises(UsageError, match="--resume run-1"):
        store.begin_run(make_run("run-1"), [])


def test_missing_items_is_planned_minus_recorded(store: Store) -> None:
    planned = [("smoke", case_id, rep) for case_id in ("a", "b", "c") for rep in (0, 1)]
    store.begin_run(make_run("run-1", case_ids=["a", "b", "c"]), planned)
    store.record_case("run-1", make_case("a", repetition=0))
    store.record_case("run-1", make_case("b", repetition=1))

    # 6 planned − {a#0, b#1} = 4 missing, sorted.
    assert store.missing_items("run-1") == [("smoke", "a", 1), ("smoke", "b", 0), ("smoke", "c", 0), ("smoke", "c", 1)]
    assert store.planned_items("run-1") == sorted(planned)


def test_find_resumable_returns_the_newest_unfinished_run_of_that_commit_and_fingerprint(store: Store) -> None:
    store.begin_run(make_run("old", started=T0), [])
    store.begin_run(make_run("new", started=T0 + timedelta(hours=1)), [])
    store.begin_run(make_run("other-commit", commit="beef", started=T0 + timedelta(hours=2)), [])
    store.begin_run(make_run("shard", shard=(1, 2), started=T0 + timedelta(hours=3)), [])
    done = make_run("done", started=T0 + timedelta(hours=4))
    store.begin_run(done, [])
    store.finish_run(_finished(done, []))

    assert store.find_resumable("c0ffee", "fp-1") == "new"
    assert store.find_resumable("c0ffee", "fp-2") is None
    assert store.find_resumable("c0ffee", "fp-1", shard=(1, 2)) == "shard"
    assert store.find_resumable("c0ffee", "fp-1", shard=(2, 2)) is None


def test_list_runs_is_newest_first_with_counts(store: Store) -> None:
    first = make_run("r1", started=T0)
    store.begin_run(first, [("smoke", "a", 0), ("smoke", "b", 0)])
    store.finish_run(_finished(first, [make_case("a"), make_case("b", passed=False)], passed=False))
    store.begin_run(make_run("r2", branch="feature", started=T0 + timedelta(hours=1)), [("smoke", "a", 0)])

    rows = store.list_runs()
    assert [r.run_id for r in rows] == ["r2", "r1"]
    # r1: 2 planned, 2 recorded: a passed, b failed.
    assert (rows[1].planned, rows[1].recorded, rows[1].passes, rows[1].failures, rows[1].errors) == (2, 2, 1, 1, 0)
    assert (rows[0].status, rows[0].recorded, rows[0].passed) == ("running", 0, None)
    assert [r.run_id for r in store.list_runs(branch="main")] == ["r1"]
    assert [r.run_id for r in store.list_runs(status="running")] == ["r2"]
    assert [r.run_id for r in store.list_runs(commit="c0f")] == ["r2", "r1"]
    assert [r.run_id for r in store.list_runs(limit=1)] == ["r2"]


def _store_complete(store: Store, run_id: str, hours: int, cases: list, **kwargs: object) -> None:  # type: ignore[type-arg]
    run = make_run(run_id, started=T0 + timedelta(hours=hours), **kwargs)  # type: ignore[arg-type]
    store.begin_run(run, [c.key for c in cases])
    store.finish_run(_finished(run, cases))


def test_case_history_means_per_run_and_metric_oldest_first(store: Store) -> None:
    _store_complete(store, "r1", 1, [make_case("a", score=1.0), make_case("b", score=0.5, passed=False)])
    _store_complete(
        store,
        "r2",
        2,
        [make_case("a", score=0.5), make_case("a", repetition=1, score=0.0, passed=False), make_case("b", error=True)],
    )
    _store_complete(store, "f1", 3, [make_case("a", score=0.0)], branch="feature")

    overall = store.case_history(metric="trajectory_f1", branch="main")
    # r1: (1.0 + 0.5)/2 = 0.75, 1 passed of 2; r2: (0.5 + 0.0)/2 = 0.25 (b errored: null score, not counted).
    assert [(p.run_id, p.score, p.scored, p.passes, p.results) for p in overall] == [
        ("r1", 0.75, 2, 1, 2),
        ("r2", 0.25, 2, 1, 3),
    ]
    per_case = store.case_history(case_id="a", metric="trajectory_f1")
    # a over its repetitions: r1 1.0; r2 (0.5 + 0.0)/2 = 0.25; f1 0.0 (any branch).
    assert [(p.run_id, p.case_id, p.score) for p in per_case] == [("r1", "a", 1.0), ("r2", "a", 0.25), ("f1", "a", 0.0)]
    assert {p.metric for p in store.case_history(case_id="b", branch="main")} == {"trajectory_f1", "response_match"}
    assert [p.run_id for p in store.case_history(metric="trajectory_f1", limit=1)] == ["f1"]


def test_flip_rates_count_outcome_changes_between_consecutive_runs(store: Store) -> None:
    # a: pass, fail, fail, pass -> 2 flips / 3 pairs; b: always passes -> 0/3;
    # c: pass, then its content changes (pair skipped), then fail -> only (run 3, run 4) counts... c2 hash differs.
    outcomes = [(True, True), (False, True), (False, True), (True, True)]
    for index, (a_passes, b_passes) in enumerate(outcomes):
        cases = [make_case("a", passed=a_passes), make_case("b", passed=b_passes)]
        c_case = make_case("c", passed=index % 2 == 0)
        if index >= 2:
            c_case = c_case.model_copy(update={"content_hash": "hash-c-v2"})
        _store_complete(store, f"r{index}", index, [*cases, c_case])
    _store_complete(store, "feature", 9, [make_case("a", passed=False)], branch="feature")

    rates = store.flip_rates("main")

    # c: r0 pass, r1 fail (same hash: flip 1/1), r1->r2 hash changes (skipped), r2 pass -> r3 fail (flip): 2/2.
    assert rates == {("smoke", "a"): pytest.approx(2 / 3), ("smoke", "b"): 0.0, ("smoke", "c"): 1.0}
    assert store.flip_rates("main", fingerprint="other") == {}


def test_a_case_passes_in_a_run_only_when_every_repetition_passed(store: Store) -> None:
    _store_complete(store, "r0", 0, [make_case("a"), make_case("a", repetition=1)])
    _store_complete(store, "r1", 1, [make_case("a"), make_case("a", repetition=1, passed=False)])
    # pass (2/2) -> fail (1/2) = 1 flip / 1 pair.
    assert store.flip_rates("main") == {("smoke", "a"): 1.0}


def test_export_then_import_into_another_database_round_trips(store: Store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = make_run("run-1")
    store.begin_run(run, [("smoke", "a", 0), ("smoke", "b", 0)])
    cases = [make_case("a"), make_case("b", error=True)]
    for case in cases:
        store.record_case("run-1", case)
    store.finish_run(_finished(run, cases))

    [exported] = store.export_runs(["run-1"])
    payload = exported.model_dump_json()
    with open_store(f"sqlite:///{tmp_path / 'other.db'}") as other:
        assert other.import_run(RunResult.model_validate_json(payload)) == "run-1"
        assert other.import_run(RunResult.model_validate_json(payload)) == "run-1"  # idempotent
        assert other.load_run("run-1") == store.load_run("run-1")
        assert [(r.recorded, r.planned) for r in other.list_runs()] == [(2, 2)]
        clash = exported.model_copy(update={"fingerprint": "fp-other"})
        with pytest.raises(GateInputError, match="a different run with this id is stored"):
            other.import_run(clash)
    assert [r.run_id for r in store.export_runs()] == ["run-1"]


def test_import_completes_a_partially_stored_run(store: Store) -> None:
    run = make_run("run-1")
    store.begin_run(run, [("smoke", "a", 0), ("smoke", "b", 0)])
    store.record_case("run-1", make_case("a"))

    store.import_run(_finished(run, [make_case("a"), make_case("b")]))

    assert store.missing_items("run-1") == []
    assert [c.case_id for c in store.load_run("run-1").cases] == ["a", "b"]


def test_loading_an_unknown_run_suggests_similar_ids(store: Store) -> None:
    store.begin_run(make_run("20250301-abcdef"), [])
    with pytest.raises(GateInputError, match=r"run '20250301-zzz' is not in the history database \(similar ids: "):
        store.load_run("20250301-zzz")


def test_recorded_verdicts_are_kept_per_run_newest_first(store: Store) -> None:
    from evalward.model.verdict import BaselineInfo, Verdict

    store.begin_run(make_run("pr"), [])
    first = Verdict(outcome="fail", reason="a regression", current_run_id="pr", policy_digest="d1")
    second = Verdict(
        outcome="pass", reason="re-gated", current_run_id="pr", policy_digest="d2", baseline=BaselineInfo(run_id="b")
    )
    store.record_verdict(first, source="ci")
    store.record_verdict(second, source="gate")
    recorded = store.recorded_verdicts("pr")
    assert [(r.source, r.verdict) for r in recorded] == [("gate", second), ("ci", first)]
    assert store.recorded_verdicts("other") == []
    with pytest.raises(GateInputError, match="run 'ghost' is not in the history database"):
        store.record_verdict(Verdict(outcome="pass", reason="", current_run_id="ghost"), source="ci")


@pytest.mark.parametrize("written_before_finish", [0, 120, 150])
def test_finishing_a_large_run_writes_exactly_the_results_still_missing(
    store: Store, written_before_finish: int
) -> None:
    """Past 100 results `finish_run` counts the run's rows before comparing keys: all written means nothing is
    read back; any missing ones are found and written, each once, and the recorded order is the run's."""
    ids = [f"c{n:03d}" for n in range(150)]
    run = make_run("big", case_ids=ids)
    store.begin_run(run, ((run.eval_sets[0].eval_set_id, case_id, 0) for case_id in ids))
    cases = [make_case(case_id) for case_id in ids]
    assert store.record_cases("big", cases[:written_before_finish]) == written_before_finish
    store.finish_run(_finished(run, cases[::-1]))
    loaded = store.load_run("big")
    assert [case.case_id for case in loaded.cases] == ids[::-1]
    assert store.record_cases("big", cases) == 0  # every key stored exactly once
