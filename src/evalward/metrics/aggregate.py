"""Aggregation (pure): fold case × repetition results into per-case and per-metric summaries.

Per case (a *reducer* over its n repetitions, c of which passed; docs/gate.md §8):
- pass rate = c/n;
- pass@k = 1 − C(n−c, k)/C(n, k) (at least one of k passes; Chen's unbiased estimator);
- pass^k = C(c, k)/C(n, k) (all k pass; τ-bench); k = the run's repetitions (capped at n);
- metric means = mean score over the repetitions that scored the metric.
Example: n = 5, c = 4, k = 3 → pass^3 = C(4,3)/C(5,3) = 4/10 = 0.4, pass@3 = 1 − C(1,3)/C(5,3) = 1 − 0/10 = 1.0.

Per metric (over the run): mean of the per-case means x̄_1 … x̄_N (each case weighs the same however
many repetitions scored), with a 95% interval x̄ ± t_{0.975, N−1} · s/√N, where s is the sample standard
deviation of the case means and t the Student quantile (exact, from the closed-form t CDF for integer
degrees of freedom, Abramowitz & Stegun 26.7.3–4, inverted by bisection). N < 2 → no interval.
pass rate = share of scored case results whose status is `passed`.

Run verdict (errors are never passes):
- `per_run`: every case × repetition passed;
- `mean_over_runs`: for every case, no repetition errored and, for every gating metric (threshold set),
  the mean over repetitions meets the threshold (≥, or ≤ when lower is better); a case with no gating
  metric score falls back to "every repetition passed".
A run with no case results does not pass.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from evalward.model import CaseResult, CaseSummary, MetricResult, MetricSummary

PassRule = Literal["per_run", "mean_over_runs"]

_SCORED = ("passed", "failed", "informational")


@dataclass
class RunSummary:
    """Everything `RunResult` needs from aggregation."""

    summary: dict[str, MetricSummary]
    case_summaries: list[CaseSummary]
    passed: bool


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k draws without replacement passes) = 1 − C(n−c, k)/C(n, k) (Chen et al.'s unbiased
    estimator). Example: n = 5, c = 4, k = 3 → 1 − C(1,3)/C(5,3) = 1 − 0/10 = 1.0."""
    _check_nck(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(all k draws without replacement pass) = C(c, k)/C(n, k) (τ-bench). Example: n = 5, c = 4, k = 3 →
    C(4,3)/C(5,3) = 4/10 = 0.4."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passes c={c} must lie in [0, n={n}]")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must lie in [1, n={n}]")


def t_two_sided_probability(t: float, df: int) -> float:
    """A(t | ν) = P(|T| ≤ t) for Student's t with integer ν ≥ 1 (Abramowitz & Stegun 26.7.3–4).

    With θ = atan(t/√ν): ν odd: A = (2/π)(θ + sinθ·(cosθ + (2/3)cos³θ + … + (2·4…(ν−3))/(1·3…(ν−2)) cos^{ν−2}θ))
    (just 2θ/π for ν = 1); ν even: A = sinθ·(1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ + … + (1·3…(ν−3))/(2·4…(ν−2)) cos^{ν−2}θ).
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be ≥ 1, got {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 1:
        total, term = 0.0, cos
        for power in range(1, df - 1, 2):  # powers 1, 3, …, ν−2
            total += term
            term *= cos * cos * (power + 1) / (power + 2)
        return (2.0 / math.pi) * (theta + sin * total)
    total, term = 0.0, 1.0
    for power in range(0, df - 1, 2):  # powers 0, 2, …, ν−2
        total += term
        term *= cos * cos * (power + 1) / (power + 2)
    return sin * total


@functools.lru_cache(maxsize=256)
def t_quantile(probability: float, df: int) -> float:
    """t with P(T ≤ t) = probability (0.5 < probability < 1), by bisection on the exact CDF.

    Cached: one run asks for the same (0.975, N−1) once per metric, and bisection on a large ν is O(ν) a step.
    """
    if not 0.5 < probability < 1.0:
        raise ValueError(f"probability must lie in (0.5, 1), got {probability}")
    target = 2.0 * probability - 1.0  # two-sided mass inside ±t
    lo, hi = 0.0, 1.0
    while t_two_sided_probability(hi, df) < target:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_two_sided_probability(mid, df) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2.0


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """(mean, low, high): x̄ ± t_{(1+conf)/2, N−1}·s/√N; no interval for fewer than 2 values. The sums are exactly
    rounded, so the result does not depend on the order of `values`.

    When every value lies in [0, 1] (scores, pass/fail), the interval is clipped to [0, 1]; when every value
    is ≥ 0 (counts, seconds, tokens, cost) its lower bound is clipped at 0: a mean of such values cannot leave
    that range, so bounds outside it would only mislead a reader.
    """
    count = len(values)
    # Exactly rounded sums: the same mean and interval whatever order the values come in, so a run's end need not
    # sort its cases first (`run_fold.RunFold.metric_summaries`).
    mean = _order_free_sum(values) / count
    if count < 2:
        return mean, None, None
    variance = _order_free_sum([(v - mean) ** 2 for v in values]) / (count - 1)
    half = t_quantile((1.0 + confidence) / 2.0, count - 1) * math.sqrt(variance / count)
    low, high = mean - half, mean + half
    if all(v >= 0.0 for v in values):
        low = max(0.0, low)
        if all(v <= 1.0 for v in values):
            high = min(1.0, high)
    return mean, low, high


def _order_free_sum(values: Sequence[float]) -> float:
    """`math.fsum`: exactly rounded, so the same in any order. Where it refuses (an infinity of each sign, or partial
    sums past the largest float), the plain sum: NaN or an infinity, as before fsum."""
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        return sum(values)


def meets_threshold(value: float, threshold: float, higher_is_better: bool) -> bool:
    return value >= threshold if higher_is_better else value <= threshold


def _group_by_case(cases: Sequence[CaseResult]) -> dict[tuple[str, str], list[CaseResult]]:
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for case in cases:
        groups.setdefault((case.eval_set_id, case.case_id), []).append(case)
    return groups


def results_by_metric(runs: Sequence[CaseResult]) -> dict[str, list[MetricResult]]:
    by_name: dict[str, list[MetricResult]] = {}
    for run in runs:
        for result in run.metric_results:
            by_name.setdefault(result.name, []).append(result)
    return by_name


def _scores(results: Sequence[MetricResult]) -> list[float]:
    return [r.score for r in results if r.score is not None and r.status in _SCORED]


def _case_passed(
    runs: Sequence[CaseResult], pass_rule: PassRule, by_name: dict[str, list[MetricResult]] | None = None
) -> bool:
    if not runs or any(r.status == "error" for r in runs):
        return False
    if pass_rule == "per_run":
        return all(r.status == "passed" for r in runs)
    gating = False
    for results in (by_name if by_name is not None else results_by_metric(runs)).values():
        threshold = next((r.threshold for r in results if r.threshold is not None), None)
        scores = _scores(results)
        if threshold is None or not scores:
            continue
        gating = True
        if not meets_threshold(sum(scores) / len(scores), threshold, results[0].higher_is_better):
            return False
    return gating or all(r.status == "passed" for r in runs)


def summarize_case(
    runs: Sequence[CaseResult],
    *,
    repetitions: int,
    pass_rule: PassRule,
    by_name: dict[str, list[MetricResult]] | None = None,
    parts: dict[str, MetricPart] | None = None,
) -> CaseSummary:
    """One case over its repetitions (see the module docstring). `by_name`: the runs' results by metric
    (`results_by_metric`), and `parts` their `case_metric_parts`, when the caller has them (a part's case mean is
    the metric's mean here)."""
    n = len(runs)
    passes = sum(1 for r in runs if r.status == "passed")
    k = max(1, min(repetitions, n))
    if by_name is None:
        by_name = results_by_metric(runs)
    means: dict[str, float | None]
    if parts is not None:
        means = {name: part.case_mean for name, part in parts.items()}
    else:
        means = {}
        for name, results in by_name.items():
            scores = _scores(results)
            means[name] = sum(scores) / len(scores) if scores else None
    return CaseSummary(
        eval_set_id=runs[0].eval_set_id,
        case_id=runs[0].case_id,
        repetitions=n,
        passes=passes,
        errors=sum(1 for r in runs if r.status == "error"),
        pass_rate=passes / n,
        pass_at_k=pass_at_k(n, passes, k),
        pass_hat_k=pass_hat_k(n, passes, k),
        metric_means=means,
        passed=_case_passed(runs, pass_rule, by_name),
    )


class MetricPart(NamedTuple):
    """One case's share of a metric's run summary: everything `combine_metric` needs from its results.

    A named tuple: a run makes one per case and metric, and a frozen dataclass's checked attribute setting
    made it a tenth of folding a case."""

    threshold: float | None
    """The first threshold among the case's results (None: informational here)."""
    higher_is_better: bool
    errored: bool
    case_mean: float | None
    """Mean of the scored repetitions; None when none was scored."""
    all_scored_passed: bool
    """Every repetition with a score passed (the per-run case check)."""
    n_scored: int
    n_gated: int
    n_passed: int
    labels: tuple[str, ...] = ()
    """The string labels the case's repetitions were given (an evaluator returning a label), in order."""


def metric_part(results: Sequence[MetricResult]) -> MetricPart:
    """A case's `MetricPart` from its results for one metric (at least one), in one pass over them."""
    scores: list[float] = []
    threshold: float | None = None
    errored = False
    all_scored_passed = True
    n_gated = n_passed = 0
    labels: list[str] = []
    for result in results:
        status, score = result.status, result.score
        if threshold is None:
            threshold = result.threshold
        if status == "error":
            errored = True
        if score is None:
            label = result.details.get("label") if result.details else None
            if isinstance(label, str):
                labels.append(label)
            continue
        if status in _SCORED:
            scores.append(score)
        if status == "passed":
            n_gated += 1
            n_passed += 1
        else:
            all_scored_passed = False
            if status == "failed":
                n_gated += 1
    return MetricPart(
        threshold=threshold,
        higher_is_better=results[0].higher_is_better,
        errored=errored,
        case_mean=sum(scores) / len(scores) if scores else None,
        all_scored_passed=all_scored_passed,
        n_scored=len(scores),
        n_gated=n_gated,
        n_passed=n_passed,
        labels=tuple(labels),
    )


def case_metric_parts(
    runs: Sequence[CaseResult], by_name: dict[str, list[MetricResult]] | None = None
) -> dict[str, MetricPart]:
    """Every metric's `MetricPart` for one case's repetitions (`by_name`: their results by metric, when the
    caller has them)."""
    return {
        name: metric_part(results)
        for name, results in (by_name if by_name is not None else results_by_metric(runs)).items()
    }


def combine_metric(parts: Iterable[MetricPart], *, pass_rule: PassRule) -> MetricSummary | None:
    """The metric over the run from its cases' parts, in case order: the mean of case means with a 95% t
    interval (`mean_interval`), n = scored repetitions, pass rate = passed / (passed + failed) repetitions,
    and the verdict: every case meets the threshold (per_run: every scored repetition passed; mean_over_runs:
    the case mean meets it) and no repetition errored. A case without its own threshold is judged by the
    threshold of the cases before it; the summary's threshold is the last one seen. Without any threshold, a
    metric whose results passed or failed on their own (a pass/fail check) has the verdict "every one passed";
    otherwise it is informational (None). Labels are counted over the repetitions.

    One pass over `parts`, which may be made one at a time (`run_fold.RunFold`): a run's case means are kept as
    floats in an array, 8 bytes a case."""
    case_means = array("d")
    all_ok = True
    threshold: float | None = None
    higher: bool | None = None
    errored = False
    n_scored = n_gated = n_passed = 0
    labels: Counter[str] = Counter()
    # Unpacked, not read by name: a run's end combines every case's part of every metric.
    for part_threshold, higher, part_errored, case_mean, all_scored_passed, scored, gated, passed, part_labels in parts:
        if part_labels:
            labels.update(part_labels)
        if part_threshold is not None:
            threshold = part_threshold
        errored = errored or part_errored
        n_scored += scored
        n_gated += gated
        n_passed += passed
        if case_mean is None:
            continue
        case_means.append(case_mean)
        if threshold is not None:
            if pass_rule == "mean_over_runs":
                all_ok = all_ok and meets_threshold(case_mean, threshold, higher)
            else:
                all_ok = all_ok and all_scored_passed
        elif gated:
            all_ok = all_ok and passed == gated
    if higher is None:
        return None
    return metric_summary_from(
        case_means,
        threshold=threshold,
        higher=higher,
        errored=errored,
        all_ok=all_ok,
        counts=(n_scored, n_gated, n_passed),
        labels=labels,
    )


def metric_summary_from(
    case_means: Sequence[float],
    *,
    threshold: float | None,
    higher: bool,
    errored: bool,
    all_ok: bool,
    counts: tuple[int, int, int],
    labels: Counter[str],
) -> MetricSummary:
    """`combine_metric`'s summary from what its pass over the parts found (`counts`: scored, gated, passed)."""
    n_scored, n_gated, n_passed = counts
    counted = dict(sorted(labels.items(), key=lambda item: (-item[1], item[0])))
    if not case_means:
        return MetricSummary(
            mean=None,
            threshold=threshold,
            passed=False if errored else None,
            n=0,
            higher_is_better=higher,
            labels=counted,
        )
    mean, low, high = mean_interval(case_means)
    return MetricSummary(
        mean=mean,
        threshold=threshold,
        # A pass/fail check without a threshold (an evaluator's bool) still passed or failed each repetition.
        passed=None if threshold is None and not n_gated else (not errored and all_ok),
        n=n_scored,
        ci_low=low,
        ci_high=high,
        pass_rate=n_passed / n_gated if n_gated else None,
        higher_is_better=higher,
        labels=counted,
    )


def summarize_run(
    cases: Sequence[CaseResult],
    *,
    repetitions: int,
    pass_rule: PassRule,
    known_case_summaries: Mapping[tuple[str, str], CaseSummary] | None = None,
    known_metric_parts: Mapping[tuple[str, str], Mapping[str, MetricPart]] | None = None,
) -> RunSummary:
    """Per-metric summaries, per-case summaries and the run verdict under `pass_rule`.

    `known_case_summaries` and `known_metric_parts` were computed from exactly these results (the pipeline
    builds them as each case's last repetition finishes, while agents are still busy); they are reused when
    their repetition count still matches, and every other case is summarised here."""
    groups = _group_by_case(cases)
    names: list[str] = []
    for case in cases:
        for result in case.metric_results:
            if result.name not in names:
                names.append(result.name)
    known = known_case_summaries or {}
    known_parts = known_metric_parts or {}
    case_summaries: list[CaseSummary] = []
    parts_by_case: list[Mapping[str, MetricPart]] = []
    for key, runs in groups.items():
        ready = known.get(key)
        parts = known_parts.get(key)
        if ready is None or ready.repetitions != len(runs) or parts is None:
            ready = summarize_case(runs, repetitions=repetitions, pass_rule=pass_rule)
            parts = case_metric_parts(runs)
        case_summaries.append(ready)
        parts_by_case.append(parts)
    summary: dict[str, MetricSummary] = {}
    for name in names:
        metric_summary = combine_metric([parts[name] for parts in parts_by_case if name in parts], pass_rule=pass_rule)
        if metric_summary is not None:
            summary[name] = metric_summary
    passed = bool(case_summaries) and all(c.passed for c in case_summaries)
    return RunSummary(summary=summary, case_summaries=case_summaries, passed=passed)
