"""Properties of decide() over generated runs: errors never pass, an identical baseline never regresses.

Runs with hypothesis when it is installed; the seeded loop below checks the same properties without it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from gate_builders import result, run

from evalward.gate import GatePolicy, compare, decide
from evalward.model import CaseResult, RunResult

FAST = {"resamples": 500}
"""Fewer resamples keep a hundred examples quick; the properties do not depend on S."""


@dataclass(frozen=True)
class Shape:
    """A generated run: per case, per repetition, a score (None = errored)."""

    scores: list[list[float | None]]


def build(shape: Shape, run_id: str) -> RunResult:
    cases: list[CaseResult] = []
    for i, repetitions in enumerate(shape.scores):
        for rep, score in enumerate(repetitions):
            cases.append(
                result(f"c{i}", {"m": score if score is not None else 0.0}, repetition=rep, errored=score is None)
            )
    return run(run_id, cases, repetitions=len(shape.scores[0]))


def has_error(shape: Shape) -> bool:
    return any(score is None for repetitions in shape.scores for score in repetitions)


def check_errors_never_pass(shape: Shape, other: Shape) -> None:
    if not has_error(shape):
        return
    verdict = decide(build(shape, "head"), build(other, "base"), GatePolicy(**FAST))
    assert verdict.outcome != "pass"
    assert verdict.outcome == "fail"


def check_identical_baseline_never_fails(shape: Shape) -> None:
    head = build(shape, "head")
    base = head.model_copy(update={"run_id": "base"})
    verdict = decide(head, base, GatePolicy(**FAST))
    # whatever the errors do, the comparison itself finds nothing
    assert not [f for f in verdict.findings if f.kind in ("regression", "cost", "latency")]
    assert all(m.verdict == "pass" for m in verdict.metrics)
    if not has_error(shape):
        assert verdict.outcome != "fail"
        assert compare(base, head, GatePolicy(**FAST)).outcome != "fail"


def random_shape(rng: random.Random, *, allow_errors: bool) -> Shape:
    cases, k = rng.randint(1, 20), rng.randint(1, 3)
    values: list[float | None] = [0.0, 0.25, 0.5, 1.0, 1.0]
    if allow_errors:
        values.append(None)
    return Shape([[rng.choice(values) for _ in range(k)] for _ in range(cases)])


def resize(shape: Shape, like: Shape) -> Shape:
    """`shape` cut or padded to the cases and repetitions of `like`, so the two runs pair."""
    k = len(like.scores[0])
    rows = [(row * k)[:k] for row in shape.scores]
    while len(rows) < len(like.scores):
        rows.append([1.0] * k)
    return Shape(rows[: len(like.scores)])


@pytest.mark.parametrize("seed", range(40))
def test_properties_on_seeded_runs(seed: int) -> None:
    rng = random.Random(seed)
    shape = random_shape(rng, allow_errors=True)
    check_errors_never_pass(shape, resize(random_shape(rng, allow_errors=False), shape))
    check_identical_baseline_never_fails(shape)


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is optional; the seeded loop above still runs
    pass
else:
    score = st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]) | st.floats(0, 1)
    maybe_error = st.none() | score

    @st.composite
    def shapes(draw: st.DrawFn, values: st.SearchStrategy[float | None]) -> Shape:
        k = draw(st.integers(1, 3))
        rows = draw(st.lists(st.lists(values, min_size=k, max_size=k), min_size=1, max_size=24))
        return Shape(rows)

    @settings(max_examples=60, deadline=None)
    @given(shapes(maybe_error), shapes(score))
    def test_hypothesis_errored_case_never_passes(shape: Shape, other: Shape) -> None:
        check_errors_never_pass(shape, resize(other, shape))

    @settings(max_examples=60, deadline=None)
    @given(shapes(maybe_error))
    def test_hypothesis_identical_baseline_never_fails(shape: Shape) -> None:
        check_identical_baseline_never_fails(shape)
