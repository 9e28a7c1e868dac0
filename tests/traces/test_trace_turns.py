"""`traces.trace_turns`: spans grouped by trace and turns by case through temporary files give the recordings
`turns_from_spans` over every span at once gives (`old_recordings`): same lookups, queries and notes."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pytest
from tests.traces.old_recordings import OldRecordings, old_from_turns
from tests.traces.otlp_builders import TraceBuilder, messages, text_message

from evalward.traces import trace_turns
from evalward.traces.genai import turns_from_spans
from evalward.traces.otlp import read_spans
from evalward.traces.recordings import RecordingSet, load_recordings

HASHERS: dict[str, Callable[[Hashable], int]] = {
    "python hash": hash,
    "everything collides": lambda value: 0,
}


def random_trace(rng: random.Random, number: int) -> TraceBuilder:
    """One agent turn (or two, split by the turn attribute) of a random case, some with the attributes that
    name the eval set, turn and repetition, some tool calls without arguments (a note)."""
    trace = TraceBuilder(f"{number:032x}", base_ns=TraceBuilder.base_ns + rng.randint(0, 5) * 1_000_000_000)
    root: dict[str, Any] = {"gen_ai__operation__name": "invoke_agent", "gen_ai__agent__name": "shop"}
    root["gen_ai__conversation__id"] = rng.choice(["conv-1", "conv-2"])
    if rng.random() < 0.7:
        root["evalward__case_id"] = rng.choice(["c1", "c2", "c3"])
    if rng.random() < 0.3:
        root["evalward__eval_set_id"] = rng.choice(["s", "t"])
    if rng.random() < 0.4:
        root["evalward__repetition"] = rng.randint(0, 2)
    explicit = rng.random() < 0.4
    if explicit and rng.random() < 0.5:
        root["evalward__turn"] = rng.randint(0, 2)
    query = f"question {number}"
    if rng.random() < 0.8:
        root["gen_ai__input__messages"] = messages(text_message("user", query))
    root["gen_ai__output__messages"] = messages(text_message("assistant", f"answer {number}", "stop"))
    trace.span("root", "invoke_agent shop", start_ms=0, end_ms=100, **root)
    for place in range(rng.randint(1, 2) if explicit and "evalward__turn" not in root else 1):
        tool: dict[str, Any] = {"gen_ai__operation__name": "execute_tool", "gen_ai__tool__name": f"tool_{place}"}
        if rng.random() < 0.5:
            tool["gen_ai__tool__call__arguments"] = json.dumps({"n": number})
        if explicit and "evalward__turn" not in root:
            tool["evalward__turn"] = place + rng.randint(0, 1)
        trace.span(f"t{place}", f"execute_tool tool_{place}", parent="root", start_ms=10 + place, **tool)
    return trace


def write_jsonl(path: Path, rng: random.Random, traces: list[TraceBuilder]) -> None:
    """The spans in a random order, in export lines of random sizes, as a file exporter writes batches."""
    spans = [span for trace in traces for span in trace.spans]
    rng.shuffle(spans)
    lines = []
    while spans:
        size = rng.randint(1, 6)
        batch, spans = spans[:size], spans[size:]
        scope = {"scope": {"name": "test"}, "spans": batch}
        lines.append(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def assert_same_recordings(new: RecordingSet, old: OldRecordings) -> None:
    keys = set(old.entries) | {
        (s, c, t, r) for s in (None, "s", "t") for c in ("c1", "c9") for t in range(3) for r in range(3)
    }
    for set_id, case_id, turn, repetition in sorted(keys, key=repr):
        for asked_set in {set_id, None}:
            asked = (case_id, turn, repetition, asked_set)
            assert new.lookup(*asked) == old.lookup(*asked), asked
    assert dict(new.queries) == old.queries
    assert new.notes == old.notes
    assert len(new) == len(old.entries)
    assert sorted(new.case_keys(), key=repr) == sorted(old.case_keys(), key=repr)


@pytest.mark.parametrize("hasher_name", list(HASHERS))
@pytest.mark.parametrize("seed", range(20))
def test_traces_read_line_by_line_give_what_all_spans_at_once_give(tmp_path: Path, seed: int, hasher_name: str) -> None:
    rng = random.Random(seed)
    traces = [random_trace(rng, number) for number in range(rng.randint(1, 14))]
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, rng, traces)
    old = old_from_turns(turns_from_spans(read_spans(path.read_text(encoding="utf-8"), source=str(path))))
    new = load_recordings(path, hasher=HASHERS[hasher_name])
    try:
        assert new.kind == "otel"
        assert_same_recordings(new, old)
    finally:
        new.close()


def test_notes_past_the_limit_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_turns, "MAX_NOTES", 3)
    traces = [TraceBuilder(f"{n:032x}").span("t", "execute_tool f", gen_ai__tool__name="f") for n in range(5)]
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, random.Random(0), traces)
    old = old_from_turns(turns_from_spans(read_spans(path.read_text(encoding="utf-8"), source=str(path))))
    new = load_recordings(path)
    # 5 traces, each a case of its own whose one tool call has no arguments: 5 notes, 3 kept.
    assert new.notes == [*old.notes[:3], "2 more note(s) like these are not shown"]
    new.close()
