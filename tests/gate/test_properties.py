"""Properties of decide() over generated runs: errors never pass, an identical baseline never regresses;
of the clustered statistics (singleton clusters are the unclustered analysis, case order does not matter)
and of the per-case tests (Fisher monotone in the counts, Benjamini–Hochberg q ≥ p and order-preserving).

Runs with hypothesis when it is installed; the seeded loop below checks the same properties without it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest
from gate_builders import result, run

from evalward.gate import GatePolicy, compare, decide, stats
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
    """Under errors=fail an errored case never passes; under errors=compare (the default) it is never silent."""
    if not has_error(shape):
        return
    head, base = build(shape, "head"), build(other, "base")
    verdict = decide(head, base, GatePolicy(errors="fail", **FAST))  # type: ignore[arg-type]
    assert verdict.outcome == "fail"
    verdict = decide(head, base, GatePolicy(**FAST))  # type: ignore[arg-type]
    errored = {(r.eval_set_id, r.case_id) for r in head.cases if r.status == "error"}
    listed = {(f.eval_set_id, f.case_id) for f in verdict.findings if f.kind == "error"}
    assert errored <= listed


def check_identical_baseline_never_fails(shape: Shape) -> None:
    head = build(shape, "head")
    base = head.model_copy(update={"run_id": "base"})
    verdict = decide(head, base, GatePolicy(**FAST))
    # whatever the errors do, the comparison itself finds nothing
    assert not [f for f in verdict.findings if f.kind in ("regression", "newly_broken", "cost", "latency")]
    assert all(m.verdict != "regressed" for m in verdict.metrics)
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


# ------------------------------------------------------------------------- clusters and per-case tests


def check_singleton_clusters_are_unclustered(diffs: list[float]) -> None:
    """Every case its own cluster: SE_cl = s_d/√n, the same bootstrap bounds and the same sign-flip p."""
    labels = list(range(len(diffs)))
    sd = stats.paired_sd(diffs)
    se = stats.clustered_se(diffs, labels)
    if sd is None:
        assert se is None
    else:
        assert se == pytest.approx(sd / len(diffs) ** 0.5, rel=1e-9, abs=1e-12)
    grouped = stats.group_by_cluster(diffs, labels)
    assert grouped.sums == diffs and grouped.sizes == [1] * len(diffs)
    plain = stats.bootstrap_mean_bounds(diffs, alpha=0.05, seed=5, resamples=300)
    assert stats.bootstrap_cluster_mean_bounds(diffs, grouped.sizes, alpha=0.05, seed=5, resamples=300) == plain
    assert stats.sign_flip_test(grouped.sums, seed=5).p_value == stats.sign_flip_test(diffs, seed=5).p_value


def check_case_order_does_not_matter(diffs: list[float], labels: list[int], order: list[int]) -> None:
    """Shuffling the cases (with their labels) keeps SE_cl and the exact clustered p."""
    shuffled = [diffs[i] for i in order]
    relabelled = [labels[i] for i in order]
    se, se2 = stats.clustered_se(diffs, labels), stats.clustered_se(shuffled, relabelled)
    assert (se is None) == (se2 is None)
    if se is not None and se2 is not None:
        assert se2 == pytest.approx(se, rel=1e-9, abs=1e-12)
    p = stats.sign_flip_test(stats.group_by_cluster(diffs, labels).sums, seed=1).p_value
    p2 = stats.sign_flip_test(stats.group_by_cluster(shuffled, relabelled).sums, seed=1).p_value
    assert p == p2


def check_benjamini_hochberg(p_values: list[float]) -> None:
    q = stats.benjamini_hochberg(p_values)
    assert all(p <= qi + 1e-15 and qi <= 1.0 for p, qi in zip(p_values, q, strict=True))
    for i, pi in enumerate(p_values):
        for j, pj in enumerate(p_values):
            if pi <= pj:
                assert q[i] <= q[j] + 1e-15


def check_fisher(k_b: int, k_c: int, a: int, c: int) -> None:
    p = stats.fisher_one_sided_p(a, k_b, c, k_c)
    assert 0.0 < p <= 1.0
    if c < k_c:  # one more candidate pass is weaker evidence of a drop
        assert stats.fisher_one_sided_p(a, k_b, c + 1, k_c) >= p
    if a < k_b:  # one more baseline pass is stronger evidence
        assert stats.fisher_one_sided_p(a + 1, k_b, c, k_c) <= p
    # all pass → all fail is the strongest evidence there is: 1/C(N, k_B)
    assert stats.fisher_one_sided_p(k_b, k_b, 0, k_c) == pytest.approx(1 / math.comb(k_b + k_c, k_b))


def check_identical_clustered_baseline_never_fails(shape: Shape, labels: list[int | None]) -> None:
    """An identical baseline, with some cases labelled (case c<i> in cluster g<labels[i]>), never fails clustered
    (with few clusters it cannot pass either: no evidence either way is inconclusive)."""
    names = {f"c{i}": None if label is None else f"g{label}" for i, label in enumerate(labels)}
    head = build(shape, "head")
    head.cases = [c.model_copy(update={"cluster": names[c.case_id]}) for c in head.cases]
    base = head.model_copy(update={"run_id": "base"})
    verdict = decide(head, base, GatePolicy(**FAST))
    assert all(m.verdict != "regressed" for m in verdict.metrics)
    assert not [f for f in verdict.findings if f.kind == "regression"]
    if not has_error(shape):
        assert verdict.outcome != "fail"
    labelled = any(label is not None for label in labels)
    assert all((m.n_clusters is not None) == labelled for m in verdict.metrics if m.n_cases)


@pytest.mark.parametrize("seed", range(20))
def test_cluster_properties_on_seeded_data(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 14)
    diffs = [rng.choice([-1.0, -0.5, 0.0, 0.25, 1.0]) for _ in range(n)]
    labels = [rng.randint(0, 3) for _ in range(n)]
    check_singleton_clusters_are_unclustered(diffs)
    check_case_order_does_not_matter(diffs, labels, rng.sample(range(n), n))
    check_benjamini_hochberg([rng.random() for _ in range(rng.randint(0, 12))])
    k_b, k_c = rng.randint(1, 12), rng.randint(1, 12)
    check_fisher(k_b, k_c, rng.randint(0, k_b), rng.randint(0, k_c))
    shape = random_shape(rng, allow_errors=False)
    check_identical_clustered_baseline_never_fails(
        shape, [rng.choice([None, 0, 1, 2]) for _ in range(len(shape.scores))]
    )


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is optional; the seeded loop above still runs
    pass
else:
    diff_values = st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.5, 1.0]) | st.floats(-1, 1)

    @settings(max_examples=80, deadline=None)
    @given(st.lists(diff_values, min_size=1, max_size=14))
    def test_hypothesis_singleton_clusters_are_unclustered(diffs: list[float]) -> None:
        check_singleton_clusters_are_unclustered(diffs)

    @st.composite
    def labelled_diffs(draw: st.DrawFn) -> tuple[list[float], list[int], list[int]]:
        diffs = draw(st.lists(diff_values, min_size=1, max_size=14))
        labels = draw(st.lists(st.integers(0, 4), min_size=len(diffs), max_size=len(diffs)))
        order = draw(st.permutations(range(len(diffs))))
        return diffs, labels, list(order)

    @settings(max_examples=80, deadline=None)
    @given(labelled_diffs())
    def test_hypothesis_case_order_does_not_matter(data: tuple[list[float], list[int], list[int]]) -> None:
        check_case_order_does_not_matter(*data)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(0, 1), max_size=30))
    def test_hypothesis_benjamini_hochberg(p_values: list[float]) -> None:
        check_benjamini_hochberg(p_values)

    @st.composite
    def fisher_tables(draw: st.DrawFn) -> tuple[int, int, int, int]:
        k_b, k_c = draw(st.integers(1, 25)), draw(st.integers(1, 25))
        return k_b, k_c, draw(st.integers(0, k_b)), draw(st.integers(0, k_c))

    @settings(max_examples=100, deadline=None)
    @given(fisher_tables())
    def test_hypothesis_fisher(table: tuple[int, int, int, int]) -> None:
        check_fisher(*table)

    @st.composite
    def clustered_shapes(draw: st.DrawFn) -> tuple[Shape, list[int | None]]:
        shape = draw(shapes(score))
        labels = draw(st.lists(st.none() | st.integers(0, 3), min_size=len(shape.scores), max_size=len(shape.scores)))
        return shape, labels

    @settings(max_examples=40, deadline=None)
    @given(clustered_shapes())
    def test_hypothesis_identical_clustered_baseline_never_fails(data: tuple[Shape, list[int | None]]) -> None:
        check_identical_clustered_baseline_never_fails(*data)
