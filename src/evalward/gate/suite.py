"""The suite-level pass bound: did the agent get worse **on these cases**, beyond its own run-to-run noise?

A CI gate is asked about the eval set the team wrote (docs/gate.md §6a). Its cases are fixed; the randomness is
the agent's repetitions. Case i has a probability of passing (or a mean score) μ_i on each side; the estimand is
the drop D = (1/n) Σ_i (μ_i^B − μ_i^C) on the oriented scale (higher is better, scores in [0, 1]), and the gate
passes when a one-sided (1 − α_pass) upper bound on D is at most δ_ni.

Estimator: D̂ = (1/n) Σ_i (b̂_i − ĉ_i), the mean of the per-case differences of means (the same Δ̂ the tests use,
sign reversed). Its variance holds only repetition noise: Var(D̂) = (1/n²) Σ_i (σ²_B,i / k_B,i + σ²_C,i / k_C,i).

The cases split three ways by what their repetitions showed:

- **Varied** cases (the scores differ among the N_i = k_B,i + k_C,i repetitions): σ²_i is estimated by the
  pooled sample variance of all N_i scores around their common mean, s²_i = Σ (x − x̄_i)² / (N_i − 1), unbiased
  when nothing changed and larger when the case moved, so a real drop widens its own bound. Pass/fail scores get at
  least p̃(1 − p̃), p̃ = (t_i + 1)/(N_i + 2) (one pass and one failure added: `smoothed_variance`), since a rare
  failure makes the sample variance understate the noise; a case known to flip on the base branch with flip rate f
  (history) gets at least f/2, since two independent repetitions of a case passing with probability p differ with
  probability 2p(1 − p). Their margin: m_varied = z_{1−a}·√(Σ_varied s²_i (1/k_B,i + 1/k_C,i)) / n.
- **Constant at the top** (every repetition on both sides scored the best value, 1; a case that passed every
  time): no variance was seen, but that is evidence, not certainty. Over their N⁺_C current repetitions not one
  fell short, so their mean shortfall on the current side is below the zero-failure bound
  ZF(N, a) = 1 − a^{1/N} ≈ −ln(a)/N (the rule of three over **repetitions** at a = 0.05). A sum of independent
  Bernoulli draws has lighter tails than the binomial with the same mean, so the bound holds for a mix of
  cases. Their margin: m_top = (n⁺/n)·ZF(N⁺_C, a).
- **Constant below the top** (every repetition scored the same value v < 1; a case that failed every time): its
  baseline may be better than seen, by at most ZF over the N⁻_B baseline repetitions; and, when v > 0, its current
  side may be worse, by at most ZF over its N⁻_C current repetitions: m_low = (n⁻/n)·ZF(N⁻_B, a), plus
  (n⁻/n)·ZF(N⁻_C, a) when some v > 0.

Upper bound on D: D_upper = D̂ + √(m_varied² + m_top² + m_low²), each margin at a = α_pass (independent parts
combined as independent errors; measured coverage in `benchmarks/gate_power.py`'s `margin-…` rows), and the pass
rule is D_upper ≤ δ_ni. The reported lower bound of Δ is L = −D_upper.

Worked numbers (α_pass = 0.05, δ_ni = 0.05): 20 cases that passed once on each side: only the top part,
ZF(20, 0.05) = 0.139 > 0.05, not shown; with the current side topped up to 3 repetitions, ZF(60, 0.05) = 0.0487 ≤
0.05: shown. 100 cases × 3, 90 always passing and 10 coin flips (s²_i ≈ 0.27): D̂ ≈ 0, m_varied =
1.645·√(10·0.27·(2/3))/100 = 0.022, m_top = 0.9·ZF(270, 0.05) = 0.010: D_upper ≈ 0.024 ≤ 0.05.

k = 1 on both sides: a case's own variance is its two scores' (0.5 when they differ, an unbiased estimate of
p(1 − p) at N = 2), a concordant case counts as constant, and a case known to flip keeps f/2; the top-up's
repetitions then supply what one run cannot.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalward.gate.stats import z_quantile
from evalward.model.verdict import SuiteBound

SCORE_TOLERANCE = 1e-9
"""Scores closer than this count as equal (a repetition that scored 0.9999999999 is not a different value)."""


@dataclass(frozen=True)
class CaseScores:
    """One compared case's scores on the oriented scale (higher is better, in [0, 1]), both sides."""

    baseline: Sequence[float]
    current: Sequence[float]
    flip_rate: float | None = None
    """The case's flip rate on the base branch (history), when known."""


def zero_failure_bound(runs: int, a: float) -> float:
    """ZF(N, a) = 1 − a^{1/N}: the one-sided (1 − a) upper bound on a failure probability after N runs and no
    failure (exact binomial; ≈ 3/N at a = 0.05). Example: N = 60 → 1 − 0.05^{1/60} = 0.0487."""
    if runs <= 0:
        return 1.0
    return 1.0 - math.exp(math.log(a) / runs)


def pooled_variance(values: Sequence[float]) -> float:
    """s² = Σ (x − x̄)² / (N − 1) over every repetition of a case on both sides (0 with fewer than two)."""
    if len(values) < 2:
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


def smoothed_variance(passes: int, runs: int) -> float:
    """p̃(1 − p̃) with p̃ = (t + 1)/(N + 2): a pass/fail case's variance with one pass and one failure added. With
    a rare failure the sample variance understates the case's noise (one failure in 12 repetitions gives 1/12 where a
    5% failure rate has 0.0475 per repetition, but the next 12 may hold none or three); the floor keeps the bound's
    coverage at the margin (`benchmarks/gate_power.py`, `margin-20x1`: 5.7% → 4.5% passes of a true drop of δ_ni).
    Example: t = 11, N = 12 → p̃ = 12/14, p̃(1 − p̃) = 0.122."""
    p_tilde = (passes + 1) / (runs + 2)
    return p_tilde * (1 - p_tilde)


def suite_bound(cases: Sequence[CaseScores], alpha_pass: float) -> SuiteBound:
    """The suite-level upper bound on the drop (module docstring), with the parts that make it."""
    n = len(cases)
    if n == 0:
        raise ValueError("the suite bound needs at least one compared case")
    drop = math.fsum(_mean(c.baseline) - _mean(c.current) for c in cases) / n
    varied = 0
    variance_sum = 0.0
    top_cases = top_runs = 0
    low_cases = low_base_runs = low_current_runs = 0
    low_can_drop = False
    for case in cases:
        values = [*case.baseline, *case.current]
        first = values[0]
        constant = all(abs(v - first) <= SCORE_TOLERANCE for v in values)
        flips = case.flip_rate is not None and case.flip_rate > 0
        if constant and not flips:
            if first >= 1.0 - SCORE_TOLERANCE:
                top_cases += 1
                top_runs += len(case.current)
            else:
                low_cases += 1
                low_base_runs += len(case.baseline)
                low_current_runs += len(case.current)
                low_can_drop = low_can_drop or first > SCORE_TOLERANCE
            continue
        varied += 1
        s2 = pooled_variance(values)
        if all(v in (0.0, 1.0) for v in values):
            s2 = max(s2, smoothed_variance(round(math.fsum(values)), len(values)))
        if flips and case.flip_rate is not None:
            s2 = max(s2, case.flip_rate / 2)
        variance_sum += s2 * (1 / len(case.baseline) + 1 / len(case.current))
    a = alpha_pass
    spread = z_quantile(1 - a) * math.sqrt(variance_sum) / n if varied else 0.0
    top = top_cases / n * zero_failure_bound(top_runs, a) if top_cases else 0.0
    low = low_cases / n * zero_failure_bound(low_base_runs, a) if low_cases else 0.0
    if low_cases and low_can_drop:
        low += low_cases / n * zero_failure_bound(low_current_runs, a)
    return SuiteBound(
        n_cases=n,
        drop=drop,
        upper=drop + _combine(spread, top, low),
        alpha_pass=alpha_pass,
        varied_cases=varied,
        variance_sum=variance_sum,
        spread=spread,
        top_cases=top_cases,
        top_runs=top_runs,
        top=top,
        low_cases=low_cases,
        low_baseline_runs=low_base_runs,
        low_current_runs=low_current_runs,
        low_can_drop=low_can_drop,
        low=low,
    )


def projected_bound(
    bound: SuiteBound, *, baseline_factor: float, current_factor: float, alpha_pass: float | None = None
) -> float:
    """The upper bound the same data would give with every case's repetitions multiplied by the factors (the
    means unchanged): what a top-up to that many repetitions could show. The varied part shrinks as
    1/√(repetitions), the zero-failure parts as 1/repetitions."""
    n = bound.n_cases
    level = bound.alpha_pass if alpha_pass is None else alpha_pass
    a = level
    spread = 0.0
    if bound.varied_cases:
        # variance_sum holds Σ s²(1/k_B + 1/k_C); with equal factors it scales by 1/factor. Unequal factors: the
        # larger share of the two sides is not known per case here, so take the smaller factor (conservative).
        spread = z_quantile(1 - a) * math.sqrt(bound.variance_sum / min(baseline_factor, current_factor)) / n
    top = (
        bound.top_cases / n * zero_failure_bound(round(bound.top_runs * current_factor), a) if bound.top_cases else 0.0
    )
    low = 0.0
    if bound.low_cases:
        low = bound.low_cases / n * zero_failure_bound(round(bound.low_baseline_runs * baseline_factor), a)
        if bound.low_can_drop:
            low += bound.low_cases / n * zero_failure_bound(round(bound.low_current_runs * current_factor), a)
    return bound.drop + _combine(spread, top, low)


def describe(bound: SuiteBound) -> str:
    """The bound's arithmetic in one line, for the metric's explanation."""
    a = bound.alpha_pass
    margins: list[str] = []
    if bound.varied_cases:
        margins.append(
            f"{bound.varied_cases} varied case(s): z_(1−{a:.3g})·√(Σ s²_i(1/k_B+1/k_C))/n = {bound.spread:.4f}"
        )
    if bound.top_cases:
        margins.append(
            f"{bound.top_cases} case(s) at the top every time: {bound.top_cases}/{bound.n_cases}·"
            f"ZF({bound.top_runs} current repetitions, {a:.3g}) = {bound.top:.4f}"
        )
    if bound.low_cases:
        margins.append(
            f"{bound.low_cases} case(s) constant below the top: {bound.low:.4f} "
            f"(ZF over {bound.low_baseline_runs} baseline repetitions)"
        )
    combined = " and ".join(margins) if len(margins) < 2 else "√(Σ m²) of " + "; ".join(margins)
    return (
        "suite bound on the drop (repetitions are the noise, docs/gate.md §6a): "
        f"D̂ = {bound.drop:+.4f} plus {combined} → {bound.upper:.4f}"
    )


def _combine(*margins: float) -> float:
    """The parts' margins combined as independent errors: √(Σ m_j²)."""
    return math.sqrt(math.fsum(m * m for m in margins))


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)
