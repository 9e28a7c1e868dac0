"""Environment-state metrics: exact with ignore_paths and a path-level diff, contains, unchanged."""

from __future__ import annotations

from typing import Any

from evalward.metrics.base import CaseContext, Score
from evalward.metrics.registry import check_specs, get_metric
from evalward.metrics.state import remove_paths
from evalward.model import EvalCase, Invocation, MetricSpec


def run(
    metric: str, final: Any, expected: Any = None, initial: dict[str, Any] | None = None, **options: Any
) -> Score | None:
    case = EvalCase(case_id="c", turns=[Invocation(query="q")], expected_state=expected)
    ctx = CaseContext(
        case=case,
        turns=[],
        spec=MetricSpec(name=metric, threshold=1.0, options=options),
        initial_state=initial or {},
        final_state=final,
    )
    return get_metric(metric).score_case(ctx)


FINAL = {
    "orders": [{"id": "o-81f", "status": "refunded", "updated_at": "2024-05-01T10:00:00Z"}],
    "balance": 10.0,
    "log": ["refund"],
}
EXPECTED = {"orders": [{"id": "o-1", "status": "refunded", "updated_at": "x"}], "balance": 10, "log": ["refund"]}


def test_state_exact_with_ignore_paths() -> None:
    # ids and timestamps differ; balance 10.0 == 10 (JSON numbers)
    assert run("state_exact", FINAL, EXPECTED, ignore_paths=["orders.*.id", "orders.*.updated_at"]) == Score(
        1.0, "state_exact: no differences → 1", {"diffs": [], "ignored_paths": ["orders.*.id", "orders.*.updated_at"]}
    )


def test_state_exact_path_level_diff() -> None:
    result = run("state_exact", FINAL, EXPECTED, ignore_paths=["$.orders[0].updated_at"])
    assert result is not None
    assert result.value == 0.0
    assert result.details["diffs"] == [
        {"path": "$.orders[0].id", "reason": "not equal", "expected": "o-1", "actual": "o-81f"}
    ]
    assert result.explanation == (
        'state_exact: 1 difference(s) → 0: $.orders[0].id: not equal (expected "o-1", found "o-81f")'
    )


def test_state_exact_missing_and_extra_keys_and_list_policy() -> None:
    result = run("state_exact", {"a": [2, 1], "extra": True}, {"a": [1, 2], "b": None})
    assert result is not None
    assert [(d["path"], d["reason"]) for d in result.details["diffs"]] == [
        ("$.a[0]", "not equal"),
        ("$.a[1]", "not equal"),
        ("$.b", "missing key"),
        ("$.extra", "unexpected key"),
    ]
    unordered = run("state_exact", {"a": [2, 1]}, {"a": [1, 2]}, list_policy="unordered")
    assert unordered is not None
    assert unordered.value == 1.0


def test_state_exact_accepts_matchers_for_volatile_values() -> None:
    expected = {
        "orders": [{"id": {"$regex": "^o-"}, "status": "refunded", "updated_at": {"$any": True}}],
        "balance": 10,
        "log": ["refund"],
    }
    result = run("state_exact", FINAL, expected)
    assert result is not None
    assert result.value == 1.0


def test_state_contains() -> None:
    result = run("state_contains", FINAL, {"balance": 10, "orders": [{"status": "refunded"}]})
    assert result is not None
    assert result.value == 1.0
    wrong = run("state_contains", FINAL, {"orders": [{"status": "open"}]})
    assert wrong is not None
    assert wrong.details["diffs"] == [
        {"path": "$.orders[0].status", "reason": "not equal", "expected": "open", "actual": "refunded"}
    ]


def test_langchain_benchmarks_plain_string_state() -> None:
    # typewriter task: state is the paper's content, compared with ==
    ok = run("state_exact", "abc", "abc")
    bad = run("state_exact", "abd", "abc")
    assert ok is not None and bad is not None
    assert (ok.value, bad.value) == (1.0, 0.0)


def test_not_applicable_and_no_reported_state() -> None:
    assert run("state_exact", FINAL, None) is None
    assert run("state_contains", FINAL, None) is None
    missing = run("state_exact", None, {"a": 1})
    assert missing is not None
    assert (missing.value, missing.explanation) == (0.0, "state_exact: the agent reported no final state → 0")


def test_state_unchanged() -> None:
    initial = {"cart": [], "user": "ann", "seen_at": 1}
    same = run("state_unchanged", {"cart": [], "user": "ann", "seen_at": 2}, initial=initial, ignore_paths=["seen_at"])
    changed = run("state_unchanged", {"cart": ["x"], "user": "ann", "seen_at": 1}, initial=initial)
    assert same is not None and changed is not None
    assert same.value == 1.0
    assert changed.value == 0.0
    assert changed.details["diffs"] == [{"path": "$.cart[0]", "reason": "unexpected element", "actual": "x"}]


def test_remove_paths_does_not_mutate_and_handles_wildcards() -> None:
    value = {"rows": [{"id": 1, "v": 2}, {"id": 3, "v": 4}], "keep": 1}
    assert remove_paths(value, ["rows.*.id", "missing.path", "rows.9"]) == {"rows": [{"v": 2}, {"v": 4}], "keep": 1}
    assert value["rows"][0] == {"id": 1, "v": 2}


def test_bad_options() -> None:
    spec = MetricSpec(name="state_exact", options={"ignore": ["a"]})
    assert check_specs([spec]) == ["state_exact: unknown option 'ignore'; known: ignore_paths, list_policy"]
