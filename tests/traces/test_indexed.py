"""`traces.recordings_index`: recordings read back from their file by offset, each answer from a row read again."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import EvalFileError
from evalward.traces.recordings import load_recordings

LINES = (
    '{"case_id": "a", "query": "hello", "output": "hi"}\n'
    '{"case_id": "a", "turn": 1, "output": "bye"}\n'
    '{"case_id": "b", "eval_set_id": "s", "output": "b0"}\n'
)


def test_queries_cases_and_keys_are_read_from_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(LINES, encoding="utf-8")
    recordings = load_recordings(path)
    assert recordings.queries[(None, "a", 0, 0)] == "hello"
    with pytest.raises(KeyError):
        recordings.queries[(None, "a", 1, 0)]  # recorded without a query
    assert dict(recordings.queries) == {(None, "a", 0, 0): "hello"}
    assert sorted(recordings.case_ids()) == ["a", "b"]
    assert (recordings.has_case("b"), recordings.has_case("c")) == (True, False)
    assert recordings.case_keys() == [(None, "a"), ("s", "b")]
    recordings.close()


def test_a_file_changed_under_a_replay_is_named(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(LINES, encoding="utf-8")
    recordings = load_recordings(path)
    path.write_text('{"case_id": "a", "output": "h', encoding="utf-8")  # the same file, rewritten shorter
    with pytest.raises(EvalFileError) as caught:
        recordings.lookup("a", 0, 0)
    assert (
        caught.value.problems[0]
        .render()
        .startswith(f"{path}: the recording changed while it was replayed: the 50 bytes at offset 0 are no longer")
    )
    recordings.close()
