from pathlib import Path

import pytest

from evalward.loaders.documents import DocumentError, parse_text, read_document
from evalward.loaders.positions import Position


def test_json_syntax_error_reports_line_and_column() -> None:
    text = '{\n  "eval_set_id": "x",\n  "eval_cases": [,]\n}'
    with pytest.raises(DocumentError) as caught:
        parse_text(text, "bad.test.json", suffix=".json")
    [problem] = caught.value.problems
    # Line 3 is `  "eval_cases": [,]`; the stray comma is its 18th character.
    assert (problem.path, problem.line, problem.column) == ("bad.test.json", 3, 18)
    assert problem.message == "invalid JSON: Expecting value"


def test_jsonl_reports_every_bad_line_with_file_line_numbers() -> None:
    text = '{"inputs": {"q": 1}}\n\n{"inputs": \n{"inputs": {}}\n{oops}\n'
    with pytest.raises(DocumentError) as caught:
        parse_text(text, "data.jsonl", suffix=".jsonl")
    assert [(p.line, p.column) for p in caught.value.problems] == [(3, 12), (5, 2)]


def test_jsonl_records_keep_their_lines() -> None:
    document = parse_text('{"a": 1}\n\n  {"b": 2}\n', "x.eval.jsonl", suffix=".jsonl")
    assert document.kind == "jsonl"
    assert document.data == [{"a": 1}, {"b": 2}]
    # The blank line is skipped, so record 1 is on line 3, indented by two spaces.
    assert document.index.values[(1,)] == Position(3, 3)
    assert document.index.values[(1, "b")] == Position(3, 9)


def test_json_lines_are_recognised_in_a_file_with_any_name() -> None:
    document = parse_text('{"a": 1}\n{"a": 2}\n', "examples.json", suffix=".json")
    assert document.kind == "jsonl"
    assert document.data == [{"a": 1}, {"a": 2}]


def test_yaml_error_uses_the_problem_mark() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_text("evalward: 1\ncases:\n  - id: [unclosed\n", "x.eval.yaml", suffix=".yaml")
    [problem] = caught.value.problems
    assert problem.message.startswith("invalid YAML:")
    assert problem.line == 4


def test_yaml_is_the_fallback_for_names_without_a_json_suffix() -> None:
    document = parse_text("evalward: 1\ncases: []\n", "cases.txt")
    assert document.kind == "yaml"
    assert document.data == {"evalward": 1, "cases": []}
    assert document.index.keys[("cases",)] == Position(2, 1)


def test_non_json_text_in_a_json_file_is_a_json_error() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_text("evalward: 1\n", "x.json", suffix=".json")
    assert caught.value.problems[0].message == "invalid JSON: Expecting value"
    assert (caught.value.problems[0].line, caught.value.problems[0].column) == (1, 1)


def test_read_document_accepts_a_utf8_bom_and_rejects_empty_and_binary_files(tmp_path: Path) -> None:
    bom = tmp_path / "bom.test.json"
    bom.write_bytes(b'\xef\xbb\xbf[{"query": "hi"}]')
    assert read_document(bom, "bom.test.json").data == [{"query": "hi"}]

    empty = tmp_path / "empty.test.json"
    empty.write_text("  \n")
    with pytest.raises(DocumentError, match="the file is empty"):
        read_document(empty, "empty.test.json")

    binary = tmp_path / "bin.test.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(DocumentError, match="not UTF-8"):
        read_document(binary, "bin.test.json")


def test_absurdly_deep_nesting_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.eval.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DocumentError, match=r"1:101: values are nested more than 100 levels deep"):
        read_document(path, "deep.eval.json")


def only_problem_of(text: str, suffix: str) -> str:
    with pytest.raises(DocumentError) as caught:
        parse_text(text, "f" + suffix, suffix=suffix)
    assert len(caught.value.problems) == 1
    return caught.value.problems[0].render()


def test_limits_and_repeated_keys_are_located_problems() -> None:
    assert only_problem_of('{"a": 1,\n "a": 2}', ".json") == (
        "f.json:2:2: duplicate key 'a' (first at line 1, column 2); at $.a; expected each key once per object; "
        "found 'a' twice"
    )
    # Python refuses to convert integers over 4,300 digits; this used to be a traceback.
    assert only_problem_of('{"n": ' + "7" * 5000 + "}", ".json").startswith("f.json:1:7: an integer with 5,000 digits")
    assert only_problem_of('{"x": 1}\n[' + "1," * 3 + "1" * 1001 + "]\n", ".jsonl").startswith(
        "f.jsonl:2:8: an integer with 1,001 digits; at $[1][3]"
    )
    aliases = "a: &a 1\nb: [" + ", ".join(["*a"] * 101) + "]\n"
    assert only_problem_of(aliases, ".yaml") == "f.yaml:2:405: more than 100 aliases (*name) in one document"
    assert only_problem_of("a: " + "[" * 101 + "]" * 101, ".yaml") == (
        "f.yaml:1:103: values are nested more than 100 levels deep"
    )
    assert only_problem_of("when: 2024-13-45\n", ".yaml") == (
        "f.yaml: invalid YAML value: month must be in 1..12; expected valid YAML"
    )


def test_a_yaml_merge_key_may_repeat_the_keys_it_merges() -> None:
    document = parse_text("base: &b {x: 1, y: 1}\nm:\n  <<: *b\n  x: 2\n", "f.yaml", suffix=".yaml")
    assert document.data["m"] == {"x": 2, "y": 1}
