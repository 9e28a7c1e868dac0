"""diff.py: LCS alignment of tool calls, changed-argument pairing, first divergence, argument paths."""

from __future__ import annotations

from evalward.model import ToolCall
from evalward.report.diff import ArgDiff, diff_text, steps_diff, trajectory_diff


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, args=dict(args))


def ops(diff) -> str:  # type: ignore[no-untyped-def]
    return "".join(line.op for line in diff.lines)


def test_identical_lists_have_no_divergence():
    calls = [call("a", x=1), call("b")]
    diff = trajectory_diff(calls, calls)
    assert ops(diff) == "  "
    assert diff.first_divergence is None
    assert diff.identical
    assert diff.arg_diffs == []


def test_both_empty():
    diff = trajectory_diff([], [])
    assert diff.lines == [] and diff.first_divergence is None


def test_changed_arguments_pair_as_tilde():
    expected = [call("search", city="Paris"), call("book", seat="aisle", n=1)]
    actual = [call("search", city="Paris"), call("book", seat="window", n=1.0)]
    diff = trajectory_diff(expected, actual)
    # LCS on (name, args) matches search only; book/book pair by name → "~"; n=1 vs 1.0 is equal
    assert ops(diff) == " ~"
    assert diff.first_divergence == 1
    assert diff.arg_diffs == [ArgDiff(1, "book", "seat", "aisle", "window", "changed")]
    assert diff.lines[1].text == 'book(n=1, seat="aisle")'
    assert diff.lines[1].actual_text == 'book(n=1.0, seat="window")'


def test_missing_and_extra_calls():
    expected = [call("a"), call("b"), call("c")]
    actual = [call("a"), call("c"), call("d")]
    diff = trajectory_diff(expected, actual)
    # LCS = a, c; b missing (expected index 1), d extra after c
    assert [(line.op, line.text) for line in diff.lines] == [(" ", "a()"), ("-", "b()"), (" ", "c()"), ("+", "d()")]
    assert diff.first_divergence == 1


def test_extra_call_at_the_start_diverges_at_expected_zero():
    diff = trajectory_diff([call("a")], [call("z"), call("a")])
    assert ops(diff) == "+ "
    assert diff.first_divergence == 0


def test_extra_call_at_the_end_diverges_after_last_expected():
    diff = trajectory_diff([call("a")], [call("a"), call("z")])
    # one expected call consumed before the extra one → divergence index 1 (== len(expected))
    assert diff.first_divergence == 1


def test_pairing_stays_within_a_gap():
    # a moved past b: LCS (a(1),b) vs (b,a(2)) matches b; a(1) sits before b, a(2) after → "-" and "+"
    diff = trajectory_diff([call("a", v=1), call("b")], [call("b"), call("a", v=2)])
    assert ops(diff) == "- +"


def test_absent_args_differ_from_empty_args():
    diff = trajectory_diff([ToolCall(name="a")], [ToolCall(name="a", args={})])
    assert ops(diff) == "~"
    assert diff.arg_diffs == [ArgDiff(0, "a", "", None, {}, "changed")]


def test_nested_argument_paths():
    expected = [call("f", filters={"dates": ["d1", "d2"], "odd key": 1}, keep=True)]
    actual = [call("f", filters={"dates": ["d1", "d3", "d4"]}, extra="x")]
    diff = trajectory_diff(expected, actual)
    assert [(d.path, d.kind) for d in diff.arg_diffs] == [
        ("filters.dates[1]", "changed"),
        ("filters.dates[2]", "unexpected"),
        ('filters["odd key"]', "missing"),
        ("keep", "missing"),
        ("extra", "unexpected"),
    ]
    assert diff.arg_diffs[0].describe() == 'filters.dates[1]: expected "d2", found "d3"'
    assert diff.arg_diffs[3].describe() == "keep: expected true, missing"
    assert diff.arg_diffs[4].describe() == 'extra: not expected, found "x"'


def test_diff_text_marks_first_divergence_and_caps_lines():
    diff = trajectory_diff([call("a"), call("b", x=1)], [call("a"), call("b", x=2), call("c")])
    assert diff_text(diff) == [
        "  a()",
        "! first divergence at expected call 2",
        "- b(x=1)",
        "+ b(x=2)",
        "+ c()",
    ]
    assert diff_text(diff, max_lines=2) == ["  a()", "! first divergence at expected call 2", "… 3 more lines"]


def test_steps_diff():
    diff = steps_diff(["router", "flight", "pay", "router"], ["router", "flight", "router"])
    assert [(line.op, line.text) for line in diff.lines] == [
        (" ", "router"),
        (" ", "flight"),
        ("-", "pay"),
        (" ", "router"),
    ]
    assert diff.first_divergence == 2
    assert diff_text(diff, unit="step")[2] == "! first divergence at expected step 3"


def test_diff_text_keeps_one_physical_line_per_entry():
    # a tool name with a line break must not forge a "+ …" line of its own
    diff = trajectory_diff([call("a")], [call("x\n+ a")])
    assert diff_text(diff) == ["! first divergence at expected call 1", "- a()", "+ x\\n+ a()"]


def test_unicode_line_separators_are_flattened_too():
    # U+2028 becomes a real line break once escaped for markdown; it must not split a diff line
    diff = trajectory_diff([call("a")], [call("b", v="x\u2028+ forged\x85y")])
    assert diff_text(diff)[-1] == '+ b(v="x\\n+ forged\\ny")'
