"""`evalward.spill`: records kept as objects while few, in a temporary file once many — same records back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalward.errors import UsageError
from evalward.model import CaseResult, CaseSummary, RunResult
from evalward.model.records import iter_model_json, record_keys, record_statuses, records_where
from evalward.model.results import PER_CASE_FIELDS
from evalward.run_json import load_run_json, render_json
from evalward.spill import RecordLog, _SpillFile, max_records_in_memory, split_json_object

RUN = Path(__file__).parent / "ci" / "data" / "regression-artifact" / "run.json"


def recorded(cases: list[CaseResult], max_in_memory: int) -> RecordLog[CaseResult]:
    log: RecordLog[CaseResult] = RecordLog(CaseResult, max_in_memory=max_in_memory)
    for case in cases:
        log.append(case, case.key, case.status)
    return log


def test_a_kept_record_spills_as_the_encoding_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run pipeline hands each result with its (redacted) JSON: when the log spills, the records it kept are
    written from that JSON, not encoded a second time."""
    import evalward.spill as spill

    cases = list(load_run_json(RUN.read_text(encoding="utf-8")).cases)[:3]
    given = [spill.encode_record(case) for case in cases]
    log: RecordLog[CaseResult] = RecordLog(CaseResult, max_in_memory=2)
    encodings: list[str] = []
    original = spill.encode_record
    monkeypatch.setattr(spill, "encode_record", lambda record: encodings.append(record.case_id) or original(record))
    for case, data in zip(cases, given, strict=True):
        log.append(case, case.key, case.status, encoded=data)
    assert log.spilled and encodings == []
    assert list(log) == cases
    # a record appended without its JSON is still encoded when the log spills
    bare: RecordLog[CaseResult] = RecordLog(CaseResult, max_in_memory=1)
    bare.append(cases[0], cases[0].key, cases[0].status)
    bare.append(cases[1], cases[1].key, cases[1].status, encoded=given[1])
    assert encodings == [cases[0].case_id] and list(bare) == cases[:2]


@pytest.mark.parametrize("max_in_memory", [0, 3, 1000])
def test_records_come_back_equal_whether_kept_or_spilled(max_in_memory: int) -> None:
    cases = list(load_run_json(RUN.read_text(encoding="utf-8")).cases)
    log = recorded(cases, max_in_memory)
    assert log.spilled is (len(cases) > max_in_memory)
    assert len(log) == len(cases)
    assert list(log) == cases and log == cases
    assert log[0] == cases[0] and log[-1] == cases[-1] and log[2:5] == cases[2:5]
    assert [c.model_dump_json() for c in log] == [c.model_dump_json() for c in cases]
    with pytest.raises(IndexError):
        log[len(cases)]
    assert record_keys(log) == [c.key for c in cases] == record_keys(cases)
    assert record_statuses(log) == [c.status for c in cases]


def test_the_spill_file_reads_back_records_still_in_its_write_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    # A buffer of 100 bytes: records are read while buffered, across a flush, and after several flushes.
    monkeypatch.setattr(_SpillFile, "BUFFER_BYTES", 100)
    spill = _SpillFile()
    written: list[tuple[int, bytes]] = []
    for number in range(40):
        data = json.dumps({"case": number, "pad": "x" * (number % 7)}).encode()
        written.append((spill.append(data), data))
        offset, last = written[-1]
        assert spill.read(offset, len(last)) == last  # just appended: may still be in the buffer
        first_offset, first = written[0]
        assert spill.read(first_offset, len(first)) == first
    assert all(spill.read(offset, len(data)) == data for offset, data in written)
    assert spill.end == sum(len(data) for _, data in written)
    spill.close()


def test_the_ordered_view_sorts_by_key_and_reads_only_what_is_asked() -> None:
    cases = list(load_run_json(RUN.read_text(encoding="utf-8")).cases)
    shuffled = cases[::-1]
    log = recorded(shuffled, 0)
    view = log.ordered()
    expected = sorted(shuffled, key=lambda c: c.key)
    assert list(view) == expected and view[1] == expected[1]
    assert list(view.keys()) == [c.key for c in expected]
    failing = [c for c in expected if c.status != "passed"]
    assert failing, "the fixture run has failing cases"
    assert list(records_where(view, lambda s: s != "passed")) == failing

    reads: list[int] = []
    original = log._record

    def counting(index: int) -> CaseResult:
        reads.append(index)
        return original(index)

    log._record = counting  # type: ignore[method-assign]
    list(records_where(view, lambda s: s != "passed"))
    assert len(reads) == len(failing)  # the passing cases were not read back


def test_a_run_renders_the_same_json_with_its_cases_spilled() -> None:
    run = load_run_json(RUN.read_text(encoding="utf-8"))
    summaries: RecordLog[CaseSummary] = RecordLog(CaseSummary, max_in_memory=0)
    for summary in run.case_summaries:
        summaries.append(summary, (summary.eval_set_id, summary.case_id), "passed" if summary.passed else "failed")
    spilled = run.model_copy(update={"cases": recorded(list(run.cases), 0).ordered(), "case_summaries": summaries})
    assert render_json(spilled) == render_json(run)
    assert spilled.counts() == run.counts()
    assert RunResult.model_validate_json(render_json(spilled)) == run
    assert json.loads(spilled.model_dump_json()) == json.loads(run.model_dump_json())


def test_closing_a_log_removes_its_file_and_an_unclosed_one_leaves_nothing(tmp_path: Path) -> None:
    log = recorded(list(load_run_json(RUN.read_text(encoding="utf-8")).cases), 0)
    log.close()
    with pytest.raises(OSError):
        log[0]


def test_the_in_memory_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALWARD_MAX_RECORDS_IN_MEMORY", "7")
    assert max_records_in_memory() == 7
    monkeypatch.setenv("EVALWARD_MAX_RECORDS_IN_MEMORY", "many")
    with pytest.raises(UsageError, match="EVALWARD_MAX_RECORDS_IN_MEMORY must be a whole number, found 'many'"):
        max_records_in_memory()


@pytest.mark.parametrize("indent", [None, 2])
def test_a_dumped_run_splits_back_into_its_header_and_its_records(indent: int | None) -> None:
    # What Store.load_run does with a runs row: the per-case lists come out one JSON text at a time.
    run = load_run_json(RUN.read_text(encoding="utf-8"))
    run = run.model_copy(update={"warnings": ['"case_summaries": [1, 2]'], "case_selection": "[{]}"})
    text = "".join(iter_model_json(run, PER_CASE_FIELDS, indent=indent))
    summaries: list[str] = []
    cases: list[str] = []
    header = split_json_object(text, {"case_summaries": summaries.append, "cases": cases.append})
    assert header == {k: v for k, v in json.loads(text).items() if k not in PER_CASE_FIELDS}
    assert len(summaries) == len(run.case_summaries) > 0 and len(cases) == len(run.cases) > 0
    assert [CaseSummary.model_validate_json(s) for s in summaries] == list(run.case_summaries)
    assert [CaseResult.model_validate_json(c) for c in cases] == list(run.cases)
    assert split_json_object(" { } ", {}) == {}
    assert split_json_object('{"a": [1, 2], "b": {"c": []}}', {"a": cases.append}) == {"b": {"c": []}}
    assert cases[-2:] == ["1", "2"]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_run_is_dumped_piece_by_piece_as_it_is_whole(indent: int | None) -> None:
    run = load_run_json(RUN.read_text(encoding="utf-8"))
    # Nested values that look like the per-case lists must not be taken for them.
    info = run.eval_sets[0]
    spec = info.criteria[0].model_copy(update={"options": {"cases": [], "case_summaries": []}})
    run = run.model_copy(
        update={
            "eval_sets": [info.model_copy(update={"criteria": [spec]}), *run.eval_sets[1:]],
            "warnings": ['"cases": [] and "cases":[] in a warning'],
            "case_selection": '"cases":[]',
        }
    )
    spilled = run.model_copy(update={"cases": recorded(list(run.cases), 0)})
    for whole in (run, spilled, run.model_copy(update={"cases": [], "case_summaries": []})):
        assert "".join(iter_model_json(whole, PER_CASE_FIELDS, indent=indent)) == run.model_copy(
            update={"cases": list(whole.cases), "case_summaries": list(whole.case_summaries)}
        ).model_dump_json(indent=indent)


def test_a_stored_run_with_spilled_records_loads_back_the_same(tmp_path: Path) -> None:
    from evalward.store import open_store

    run = load_run_json(RUN.read_text(encoding="utf-8"))
    summaries: RecordLog[CaseSummary] = RecordLog(CaseSummary, max_in_memory=0)
    for summary in run.case_summaries:
        summaries.append(summary, (summary.eval_set_id, summary.case_id), "passed" if summary.passed else "failed")
    store = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    store.finish_run(run.model_copy(update={"cases": recorded(list(run.cases), 0), "case_summaries": summaries}))
    assert store.load_run(run.run_id) == run


def test_copies_of_a_run_share_its_spilled_records() -> None:
    run = load_run_json(RUN.read_text(encoding="utf-8"))
    spilled = run.model_copy(update={"cases": recorded(list(run.cases), 0)})
    copied = spilled.model_copy(deep=True)
    assert copied.cases is spilled.cases and list(copied.cases) == list(run.cases)


def test_a_log_told_it_will_spill_spills_from_its_first_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that will hold more records than the limit encodes each as it comes: reaching the limit with every
    kept record still to encode stalled a 1,000-case run's agents for 11 ms (issue #33)."""
    import evalward.spill as spill

    cases = list(load_run_json(RUN.read_text(encoding="utf-8")).cases)[:4]
    encodings: list[str] = []
    original = spill.encode_record
    monkeypatch.setattr(spill, "encode_record", lambda record: encodings.append(record.case_id) or original(record))
    log: RecordLog[CaseResult] = RecordLog(CaseResult, max_in_memory=3, expected=4)
    for count, case in enumerate(cases, start=1):
        log.append(case, case.key, case.status)
        assert log.spilled and len(encodings) == count  # one encoding per append, never a burst
    assert list(log) == cases
    # Told it stays under the limit (or told nothing), a log keeps its records as objects until the limit.
    for expected in (3, None):
        kept: RecordLog[CaseResult] = RecordLog(CaseResult, max_in_memory=3, expected=expected)
        for case in cases[:3]:
            kept.append(case, case.key, case.status)
        assert not kept.spilled and list(kept) == cases[:3]
