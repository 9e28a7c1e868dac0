"""`loaders.streamed`: a file read one case at a time loads exactly as it does read whole.

Differential: every JSON, JSONL and YAML file under tests/ and examples/, and a catalogue of broken files
(syntax, structure limits, repeated keys, schema problems, ids), are loaded both ways (`stream=False` is the
whole-file reader) and must give equal eval sets (cases, hashes, sources, criteria, warnings) or the same
problems, field for field. Each comparison runs twice: with the cases the load kept, and with every case
read back from the file (`whole_set=0`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalward.errors import EvalFileError
from evalward.loaders import load as load_module
from evalward.loaders import load_paths
from evalward.loaders.indexed_cases import IndexedCases
from evalward.loaders.streamed import load_streamed
from evalward.model import EvalSet

ROOT = Path(__file__).resolve().parents[2]
DATA_FILES = sorted(
    path.relative_to(ROOT)
    for folder in ("tests", "examples")
    for pattern in ("*.json", "*.jsonl", "*.yaml", "*.yml")
    for path in (ROOT / folder).rglob(pattern)
)
STREAMED_FIXTURES = [
    "tests/loaders/fixtures/adk/travel_recorded/travel.evalset.json",
    "tests/loaders/fixtures/langsmith/router.eval.jsonl",
    "tests/loaders/fixtures/langsmith/chinook_e2e.test.json",
    "tests/loaders/fixtures/multi_agent/agents.eval.json",
    "examples/dice_agent/dice.evalset.json",
    "examples/music_store/router.jsonl",
]


@pytest.fixture(params=["kept", "read-back"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """`read-back`: no case kept from the load, so every case compared is read from the file again."""
    if request.param == "read-back":
        monkeypatch.setattr(load_module, "load_streamed", functools.partial(load_streamed, whole_set=0, cache_size=1))
    return str(request.param)


def facts(eval_set: EvalSet) -> dict[str, Any]:
    """Everything a loaded set says, through every way it can be asked."""
    return {
        "dump": eval_set.model_dump(),
        "content_hash": eval_set.content_hash,
        "ids": eval_set.case_ids(),
        "hashes": dict(eval_set.case_hashes()),
        "inputs": dict(eval_set.case_input_hashes()),
        "sources": {k: dict(v) for k, v in eval_set.case_sources().items()},
        "turns": eval_set.turn_count(),
        "iterated": [case.model_dump() for case in eval_set.cases],
    }


def outcome(paths: list[Path], *, stream: bool, **options: Any) -> tuple[Any, ...]:
    try:
        loaded = load_paths(paths, stream=stream, **options)
    except EvalFileError as exc:
        return ("problems", exc.problems)
    return ("sets", [facts(s) for s in loaded.sets], loaded.warnings, loaded.selection, loaded.sets)


def assert_same_both_ways(paths: list[Path], **options: Any) -> tuple[Any, ...]:
    whole = outcome(paths, stream=False, **options)
    streamed = outcome(paths, stream=True, **options)
    assert streamed[:4] == whole[:4]
    if whole[0] == "sets":
        assert streamed[4] == whole[4]  # EvalSet ==, the lazy sequence against the list
    return streamed


@pytest.mark.parametrize("relative", DATA_FILES, ids=str)
def test_every_data_file_loads_the_same_streamed(relative: Path, mode: str) -> None:
    assert_same_both_ways([ROOT / relative])


@pytest.mark.parametrize("relative", STREAMED_FIXTURES)
def test_the_streamable_fixtures_are_streamed(relative: str) -> None:
    # Otherwise the comparison above would compare the whole-file reader with itself.
    [eval_set] = load_paths([ROOT / relative]).sets
    assert isinstance(eval_set.cases, IndexedCases)


# --- broken and edge-case files ----------------------------------------------------------------------------


def adk_case(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "eval_id": f"case_{n}",
        "conversation": [
            {
                "invocation_id": f"inv-{n}",
                "user_content": {"role": "user", "parts": [{"text": f"Where is order {n}? — ünïcode"}]},
                "final_response": {"role": "model", "parts": [{"text": f"Order {n} has shipped."}]},
                "intermediate_data": {"tool_uses": [{"name": "lookup_order", "args": {"order_id": n}}]},
            },
            {"invocation_id": f"inv-{n}b", "user_content": {"parts": [{"text": "thanks"}]}},
        ],
        "session_input": {"app_name": "shop", "user_id": "u", "state": {"n": n}},
        **extra,
    }


def adk_text(cases: int = 3, *, indent: int | None = 2, **top: Any) -> str:
    body = {"eval_set_id": "orders", "name": "Orders", "eval_cases": [adk_case(n) for n in range(cases)], **top}
    return json.dumps(body, indent=indent, ensure_ascii=False)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def examples_jsonl(lines: int = 4) -> str:
    return "\n".join(
        json.dumps({"id": f"ex{n}", "inputs": {"question": f"q{n}"}, "outputs": {"response": f"a{n}", "route": "r"}})
        for n in range(lines)
    )


def replace_once(text: str, old: str, new: str, *, count: int = 1) -> str:
    assert old in text, old
    return text.replace(old, new, count)


def with_state(text: str, n: int, value: str) -> str:
    """`text` with case n's session state replaced by the JSON text `value`."""
    found = re.search(r'"state": \{\s*"n": ' + str(n) + r"\s*\}", text)
    assert found is not None
    return text[: found.start()] + f'"state": {value}' + text[found.end() :]


def adk_variants() -> Iterator[tuple[str, str]]:
    text = adk_text()
    yield "valid", text
    yield "one line", adk_text(indent=None)
    yield "no cases", adk_text(0)
    yield "bom", "\ufeff" + text
    yield "crlf", text.replace("\n", "\r\n")
    yield "cases before the id", json.dumps({"eval_cases": [adk_case(0)], "eval_set_id": "late"})
    # syntax
    yield "truncated", text[:-40]
    yield "truncated inside a case", text[: len(text) // 2]
    yield "missing comma between cases", replace_once(text, "},\n    {\n", "}\n    {\n")
    yield "trailing comma in the case list", replace_once(text, "}\n  ]\n}", "},\n  ]\n}")
    yield "extra data", text + "\n{}"
    yield "garbage after", text + " x"
    yield "bad top-level value", replace_once(text, '"name": "Orders"', '"name": Orders')
    yield "missing colon at the top", replace_once(text, '"name": "Orders"', '"name" "Orders"')
    yield "unquoted top-level key", replace_once(text, '"name": "Orders"', 'name: "Orders"')
    yield "unterminated string in a case", replace_once(text, '"case_1"', '"case_1')
    yield "not an object or array", "  'orders'"
    # structure
    yield "repeated key in a case", replace_once(text, '"eval_id": "case_1"', '"eval_id": "case_1", "eval_id": "x"')
    yield (
        "repeated keys in two cases",
        replace_once(
            replace_once(text, '"eval_id": "case_0"', '"eval_id": "case_0", "eval_id": "x"'),
            '"app_name": "shop"',
            '"app_name": "shop", "app_name": "y"',
            count=3,
        ),
    )
    yield "repeated top-level key", replace_once(text, '"name": "Orders"', '"name": "Orders", "name": "Again"')
    yield "nested too deep in a case", with_state(text, 1, nested(120))
    yield "nested too deep at the top", replace_once(text, '"name": "Orders"', f'"name": {nested(120)}')
    yield "long integer in a case", replace_once(text, '"n": 2', '"n": ' + "7" * 1200)
    yield "long integer at the top", replace_once(text, '"name": "Orders"', '"name": ' + "7" * 1200)
    yield "recursion in a case", replace_once(text, '"n": 2', f'"n": {nested(5000)}')
    repeated_then_broken = replace_once(text, '"eval_id": "case_0"', '"eval_id": "case_0", "eval_id": "x"')
    yield "repeated key then syntax error", replace_once(repeated_then_broken, '"case_2"', '"case_2')
    deep_first = with_state(text, 0, nested(120))
    yield "too deep then syntax error", replace_once(deep_first, '"case_2"', '"case_2')
    yield "too deep then long integer", replace_once(deep_first, '"n": 2', '"n": ' + "7" * 1200)
    repeated = replace_once(text, '"eval_id": "case_0"', '"eval_id": "case_0", "eval_id": "x"')
    yield "repeated key then too deep", with_state(repeated, 2, nested(120))
    # schema and ids
    yield "case id not a string", replace_once(text, '"eval_id": "case_1"', '"eval_id": 1')
    yield "no conversation", replace_once(text, '"conversation": [', '"conversationx": [')
    yield "unknown invocation key", replace_once(text, '"invocation_id": "inv-2"', '"invocation_idx": "inv-2"')
    yield "repeated case ids", replace_once(text, '"eval_id": "case_2"', '"eval_id": "case_0"')
    yield "control character in a case id", replace_once(text, '"eval_id": "case_1"', '"eval_id": "case\\n1"')
    yield (
        "control character in the set id",
        replace_once(text, '"eval_set_id": "orders"', '"eval_set_id": "or\\u0000ders"'),
    )
    yield "set id not a string", replace_once(text, '"eval_set_id": "orders"', '"eval_set_id": 5')
    yield "no set id", replace_once(text, '"eval_set_id": "orders",', "")
    yield "camelCase set id", replace_once(text, '"eval_set_id"', '"evalSetId"')
    yield "camelCase case list", replace_once(text, '"eval_cases"', '"evalCases"')
    yield "case list not a list", json.dumps({"eval_set_id": "x", "eval_cases": {"a": 1}})
    yield "a case not an object", replace_once(text, '"eval_cases": [', '"eval_cases": [\n    7,')
    yield "native file", json.dumps({"evalward": 1, "cases": [{"id": "a", "query": "hi"}]})
    yield "unrecognised object", json.dumps({"something": "else"})
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}}
    yield "scenario case", adk_text(eval_cases=[adk_case(0), scenario])
    persona = {"starting_prompt": "hi", "conversation_plan": "ask", "user_persona": "NOBODY"}
    yield "unknown persona", adk_text(eval_cases=[adk_case(0), {"eval_id": "sim", "conversation_scenario": persona}])
    yield "conversation and scenario", adk_text(eval_cases=[{**adk_case(0), **scenario}])


def list_variants() -> Iterator[tuple[str, str, str]]:
    text = examples_jsonl()
    yield ".jsonl", "valid", text
    yield ".jsonl", "blank lines and crlf", "\r\n\r\n" + text.replace("\n", "\r\n\r\n") + "\r\n"
    yield ".jsonl", "lines padded", "  " + text.replace("\n", "\t\n ")
    yield ".jsonl", "bad line", replace_once(text, '"id": "ex1"', '"id": ex1')
    yield ".jsonl", "two bad lines", replace_once(replace_once(text, '"id": "ex1"', '"id": ex1'), '"id": "ex3"', "'id'")
    yield ".jsonl", "repeated key", replace_once(text, '"id": "ex2"', '"id": "ex2", "id": "x"')
    yield (
        ".jsonl",
        "bad line then repeated key",
        replace_once(replace_once(text, '"id": "ex1"', '"id": ex1'), '"id": "ex2"', '"id": "ex2", "id": "x"'),
    )
    yield ".jsonl", "long integer", replace_once(text, '"id": "ex2"', '"id": ' + "9" * 1500)
    yield ".jsonl", "too deep", replace_once(text, '"route": "r"', f'"route": {nested(120)}')
    yield ".jsonl", "line separator in a string", replace_once(text, '"q1"', '"q\u20281"')
    yield ".jsonl", "other line breaks", text.replace("\n", "\x0c", 1).replace("\n", "\x85", 1)
    yield (
        ".jsonl",
        "benchmarks after all",
        text + "\n" + json.dumps({"input": {"question": "x"}, "output": {"expected_steps": ["a"]}}),
    )
    yield ".jsonl", "legacy turns", json.dumps({"query": "hi", "reference": "yo"})
    yield (
        ".jsonl",
        "schema problem",
        replace_once(text, '{"id": "ex2", "inputs": {"question": "q2"}', '{"id": "ex2", "inputs": 5'),
    )
    yield ".jsonl", "bad cluster", replace_once(text, '"id": "ex1",', '"id": "ex1", "metadata": {"cluster": ""},')
    yield ".jsonl", "repeated ids", replace_once(text, '"id": "ex2"', '"id": "ex1"')
    yield ".jsonl", "control character in an id", replace_once(text, '"id": "ex2"', '"id": "e\\tx"')
    yield (
        ".jsonl",
        "multi-agent",
        "\n".join(
            json.dumps({"id": n, "input": "go", "expected": {"agents": ["a"], "tools": {"a": ["t"]}}}) for n in range(3)
        ),
    )
    yield ".jsonl", "unrecognised", '{"x": 1}\n{"y": 2}'
    yield ".jsonl", "not objects", "1\n2\n"
    array = "[\n" + ",\n".join(examples_jsonl().splitlines()) + "\n]"
    yield ".json", "array", array
    yield ".json", "array with a bad element", replace_once(array, '"id": "ex1"', '"id": ex1')
    yield ".json", "array with a schema problem", replace_once(array, '"inputs": {"question": "q2"}', '"inputs": []')
    yield ".json", "empty array", "[]"
    yield ".json", "array of numbers", "[1, 2]"
    yield ".json", "jsonl named .json", examples_jsonl()
    yield (
        ".json",
        "benchmarks array",
        json.dumps(
            [{"inputs": {"q": 1}, "outputs": {}}, {"input": {"question": "x"}, "output": {"expected_steps": ["a"]}}]
        ),
    )
    yield (
        ".json",
        "multi-agent array with a problem",
        json.dumps([{"id": 1, "input": "go", "expected": {"agentz": []}}]),
    )


@pytest.mark.parametrize(("name", "text"), list(adk_variants()), ids=[n for n, _ in adk_variants()])
def test_adk_files_load_the_same_streamed(name: str, text: str, tmp_path: Path, mode: str) -> None:
    path = tmp_path / "orders.evalset.json"
    path.write_text(text, encoding="utf-8")
    assert_same_both_ways([path])


@pytest.mark.parametrize(("suffix", "name", "text"), list(list_variants()), ids=[n for _, n, _ in list_variants()])
def test_example_lists_load_the_same_streamed(suffix: str, name: str, text: str, tmp_path: Path, mode: str) -> None:
    path = tmp_path / f"examples{suffix}"
    path.write_text(text, encoding="utf-8")
    assert_same_both_ways([path])


def test_a_broken_file_reports_its_problems_streamed() -> None:
    # The comparisons above would pass if both paths said nothing: this one must say something.
    whole = outcome([Path("/nonexistent/x.evalset.json")], stream=True)
    assert whole[0] == "problems"


@pytest.mark.parametrize(
    ("name", "prepare"),
    [
        ("selected ids", lambda path: ([Path(f"{path}:case_2,case_0")], {})),
        ("initial session", lambda path: ([path], {"initial_session_path": path.parent / "session.json"})),
        (
            "selected ids and initial session",
            lambda path: ([Path(f"{path}:case_1")], {"initial_session_path": path.parent / "session.json"}),
        ),
        ("unknown id selected", lambda path: ([Path(f"{path}:case_9")], {})),
    ],
)
def test_selection_and_initial_session_apply_the_same_streamed(
    name: str, prepare: Callable[[Path], tuple[list[Path], dict[str, Any]]], tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "orders.evalset.json"
    path.write_text(adk_text(), encoding="utf-8")
    (tmp_path / "session.json").write_text(json.dumps({"state": {"tier": "gold"}, "user_id": "v"}), encoding="utf-8")
    paths, options = prepare(path)
    assert_same_both_ways(paths, **options)


def test_a_large_set_keeps_no_case_and_a_small_one_keeps_every_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "orders.evalset.json"
    path.write_text(adk_text(5), encoding="utf-8")
    [small] = load_paths([path]).sets
    monkeypatch.setattr(load_module, "load_streamed", functools.partial(load_streamed, whole_set=2))
    [large] = load_paths([path]).sets
    assert isinstance(large.cases, IndexedCases) and isinstance(small.cases, IndexedCases)
    assert large.cases._cache == {}
    assert list(small.cases._cache) == [0, 1, 2, 3, 4]


def test_a_native_file_is_decoded_once_and_its_positions_found_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk reads a native file whole; the whole-file reader neither decodes it again nor indexes the
    position of every value, yet a problem still points at its line and column."""
    from evalward.loaders import documents, load

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("read a second time")

    monkeypatch.setattr(load, "parse_source", refused)
    monkeypatch.setattr(documents, "index_json", refused)
    cases = [{"id": f"c{n}", "query": f"q{n}"} for n in range(300)]
    cases[250] = {"id": "c250", "query": 7}
    text = json.dumps({"evalward": 1, "cases": cases})  # one line: columns run to the end of the file
    path = tmp_path / "one_line.eval.json"
    path.write_text(text, encoding="utf-8")
    result = load.load_file_result(path, "one_line.eval.json")
    assert result.eval_set is None
    [problem] = result.problems
    assert problem.json_path == "$.cases[250].query"
    assert (problem.line, problem.column) == (1, text.index('"query": 7') + len('"query": ') + 1)
