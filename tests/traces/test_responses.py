"""`traces.responses`: a responses JSONL file indexed line by line answers every lookup as the whole file held
in memory did (`old_recordings`), reports the same problems, and keeps a few tens of bytes a line."""

from __future__ import annotations

import gc
import json
import random
import tracemalloc
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pytest
from tests.traces.old_recordings import old_from_jsonl

from evalward.errors import EvalFileError
from evalward.model import AgentOutput
from evalward.reading import open_regular_file
from evalward.traces.recordings import load_recordings
from evalward.traces.responses import index_responses_jsonl

SETS = [None, "s", "t"]
CASES = ["a", "b", "c", "d"]
ASKED_SETS = [None, "s", "t", "u"]
ASKED_CASES = [*CASES, "zz"]

HASHERS: dict[str, Callable[[Hashable], int]] = {
    "python hash": hash,
    "every key collides": lambda value: 0,
    # Keys collide when their text starts alike (`(None, 'a'…` and `(None, 'b'…`), cases never do.
    "some keys collide": lambda value: hash(str(value)[:7]) << 40,
}


def random_lines(rng: random.Random) -> list[str]:
    """Responses of random cases: per (eval set, case) none, repetition 0 only, or several repetitions (with
    or without 0), in random order, in the file's optional spellings, between blank lines."""
    lines: list[str] = []
    for set_id in SETS:
        for case_id in CASES:
            pattern = rng.choice(["none", "zero", "several"])
            if pattern == "none":
                continue
            turns = rng.sample(range(3), rng.randint(1, 3))
            repetitions = [0] if pattern == "zero" else rng.sample(range(4), rng.randint(1, 3))
            for turn in turns:
                for repetition in repetitions:
                    line: dict[str, Any] = {"case_id": case_id}
                    if set_id is not None or rng.random() < 0.3:
                        line["eval_set_id"] = set_id
                    if turn or rng.random() < 0.5:
                        line["turn"] = turn
                    if repetition or rng.random() < 0.5:
                        line["repetition"] = repetition
                    if rng.random() < 0.5:
                        line["query"] = f"q {case_id} {turn}"
                    answer = f"{set_id}/{case_id}/{turn}/{repetition}"
                    line["output"] = answer if rng.random() < 0.3 else {"response": answer, "route": rng.randint(0, 9)}
                    lines.append(json.dumps(line))
    rng.shuffle(lines)
    for _ in range(rng.randint(0, 3)):
        lines.insert(rng.randint(0, len(lines)), rng.choice(["", "   "]))
    return lines


def bad_line(rng: random.Random, earlier: list[str]) -> str:
    return rng.choice(
        [
            '{"case_id": "a", "output": ',
            '{"case": "a", "output": "x"}',
            '{"case_id": "a", "turn": -1, "output": {"tool_calls": [{"args": 3}]}}',
            "[1, 2]",
            next((line for line in earlier if line.strip()), '{"case_id": "a", "output": "x"}'),  # a repeat
        ]
    )


def indexed(path: Path, hasher: Callable[[Hashable], int]) -> Any:
    return index_responses_jsonl(open_regular_file(path), str(path), hasher=hasher)


@pytest.mark.parametrize("hasher_name", list(HASHERS))
@pytest.mark.parametrize("seed", range(25))
def test_every_lookup_answers_as_the_file_held_in_memory(tmp_path: Path, seed: int, hasher_name: str) -> None:
    rng = random.Random(seed)
    text = "\n".join(random_lines(rng))
    path = tmp_path / "r.jsonl"
    path.write_text(text, encoding="utf-8")
    old = old_from_jsonl(text, source=str(path))
    assert old.problems == []
    new = indexed(path, HASHERS[hasher_name])
    try:
        for eval_set_id in ASKED_SETS:
            for case_id in ASKED_CASES:
                for turn in range(4):
                    for repetition in range(5):
                        asked = (case_id, turn, repetition, eval_set_id)
                        assert new.lookup(*asked) == old.lookup(*asked), asked
        assert len(new) == len(old.entries)
        assert new.case_keys() == old.case_keys()
        assert dict(new.queries) == old.queries
        assert sorted(new.case_ids()) == sorted({key[1] for key in old.entries})
        assert [new.has_case(case_id) for case_id in ASKED_CASES] == [
            any(key[1] == case_id for key in old.entries) for case_id in ASKED_CASES
        ]
    finally:
        new.close()


@pytest.mark.parametrize("hasher_name", list(HASHERS))
@pytest.mark.parametrize("seed", range(25))
def test_every_problem_of_a_file_is_reported_as_before(tmp_path: Path, seed: int, hasher_name: str) -> None:
    rng = random.Random(seed)
    lines = random_lines(rng)
    for _ in range(rng.randint(1, 4)):
        lines.insert(rng.randint(0, len(lines)), bad_line(rng, lines))
    text = "\n".join(lines)
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(EvalFileError) as caught:
        indexed(path, HASHERS[hasher_name])
    assert caught.value.problems == old_from_jsonl(text, source=str(path)).problems


def test_each_lookup_returns_an_output_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"case_id": "c", "output": {"response": "hi", "tool_calls": [{"name": "f"}]}}\n')
    recordings = load_recordings(path)
    first = recordings.lookup("c", 0, 0)
    assert isinstance(first, AgentOutput)
    first.tool_calls.clear()
    assert recordings.lookup("c", 0, 3) == AgentOutput.model_validate({"response": "hi", "tool_calls": [{"name": "f"}]})
    recordings.close()


@pytest.mark.slow  # ~12 s: tracemalloc slows the 200,000 validations
def test_indexing_200000_lines_keeps_a_few_tens_of_bytes_a_line(tmp_path: Path) -> None:
    lines = 200_000
    path = tmp_path / "many.jsonl"
    with path.open("w", encoding="utf-8") as file:
        for n in range(lines):
            file.write(f'{{"case_id": "case_{n // 4}", "repetition": {n % 4}, "output": "answer {n}"}}\n')
    gc.collect()
    tracemalloc.start()
    try:
        recordings = load_recordings(path)
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Hand calculation: 8 (offset) + 8 (length) + 1 (repetition > 0) + 2 × 8 (two sorted hash arrays)
    # = 33 bytes a line, plus the file's 1 MiB read buffer (~5 bytes a line here): ~40. The bound is generous.
    assert retained / lines < 100
    assert recordings.lookup("case_49999", 0, 3) == AgentOutput(response="answer 199999")
    recordings.close()
