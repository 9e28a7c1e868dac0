"""Exact tests on pass/fail repetitions, stratified by case (the gate's tests of record for pass rates).

Setting. Case i ran k_b,i times on the baseline and k_c,i times on the candidate, passing b_i and c_i times.
Under H0 ("nothing changed") the N_i = k_b,i + k_c,i repetitions of a case are exchangeable: given the
case's total passes t_i = b_i + c_i, every way of splitting the t_i passes between the two sides is equally
likely, so c_i follows the hypergeometric law P(c_i = x | t_i) = C(t_i, x)·C(N_i − t_i, k_c,i − x) / C(N_i, k_c,i).
Cases are independent. Conditioning on every t_i removes the unknown per-case pass probabilities: the tests
below are exact whatever they are (a stable case and a coin-flip case alike), which is what lets the gate
stay quiet on an unchanged agent with flaky cases. A case with t_i = 0 or t_i = N_i (always fails, always
passes) cannot move and carries no information. With k = 1 on both sides the pass-rate test is exact
McNemar; it generalises it to repetitions and to graded evidence across cases.

1. `pass_rate_test`: H1 "the candidate passes less". Statistic T = Σ_i w_i·c_i with w_i = 1 / (p̂_i(1 − p̂_i)),
   p̂_i = t_i / N_i — inverse-variance weights, the locally most powerful choice for a common drop in pass
   probability (a case passing 5 of 6 times that slips is stronger evidence than a coin-flip case that
   does). Weights depend only on t_i, so the conditional null distribution is unaffected by them.
   p = P(T ≤ T_obs | t). Cases are grouped by type (k_b, k_c, t); the sum X_j of the m_j hypergeometric
   counts of a type has an exact law (an m_j-fold convolution). With one type the p-value is exact; with
   several, T = Σ_j w_j·X_j is drawn S times from those exact laws (Monte Carlo, p = (1 + #{T* ≤ T_obs}) /
   (1 + S), never 0).
2. `newly_broken_test`: H1 "cases that passed every repetition at the baseline fail every one now". A case is *newly broken* when
   b_i = k_b,i and c_i = 0, i.e. t_i = k_b,i and every pass fell on the baseline side. Under H0 that split
   has probability q_i = 1 / C(N_i, k_b,i) (1/20 at k = 3 on both sides), for each case with t_i = k_b,i
   (the *eligible* cases) and 0 otherwise. The count of newly broken cases is then a sum of independent
   Bernoulli(q_i): p = P(count ≥ observed), computed exactly. One broken case among ten eligible flaky
   ones is unremarkable (p = 1 − 0.95¹⁰ = 0.40); five among fifteen is not (p ≈ 0.0006). Cases need at least
   `NEWLY_BROKEN_MIN_RUNS` repetitions on each side: with fewer, "always" means too little (q = 1/6 at k = 2).
3. `weighted_holm`: several hypotheses share α with weights (Holm's weighted step-down).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from evalward.gate.stats import seeded_generator

NEWLY_BROKEN_MIN_RUNS = 3
"""Repetitions a case needs on both sides to count as newly broken (docs/gate.md §9: k ≥ 3)."""

_EXACT_SUPPORT_MAX = 200_000
"""Joint support of several types' sums up to which the pass-rate p-value is enumerated exactly."""

_FFT_MIN_LENGTH = 4_096
"""Convolutions longer than this use the FFT (direct convolution is quadratic in the length)."""

_TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Stratum:
    """One case's repetitions on both sides, reduced to counts."""

    baseline_runs: int
    current_runs: int
    baseline_passes: int
    current_passes: int

    def __post_init__(self) -> None:
        if self.baseline_runs < 1 or self.current_runs < 1:
            raise ValueError(f"a stratum needs repetitions on both sides, got {self}")
        if not 0 <= self.baseline_passes <= self.baseline_runs or not 0 <= self.current_passes <= self.current_runs:
            raise ValueError(f"passes must lie between 0 and the repetitions, got {self}")

    @property
    def size(self) -> int:
        """N_i = k_b,i + k_c,i."""
        return self.baseline_runs + self.current_runs

    @property
    def total(self) -> int:
        """t_i = b_i + c_i."""
        return self.baseline_passes + self.current_passes

    @property
    def informative(self) -> bool:
        """0 < t_i < N_i: the split between the sides can vary."""
        return 0 < self.total < self.size

    @property
    def newly_broken(self) -> bool:
        """Passed every baseline repetition and no current one."""
        return self.baseline_passes == self.baseline_runs and self.current_passes == 0

    def weight(self) -> float:
        """w_i = 1 / (p̂_i(1 − p̂_i)) with p̂_i = t_i / N_i = N_i² / (t_i(N_i − t_i)); informative strata only."""
        return self.size * self.size / (self.total * (self.size - self.total))


def hypergeometric_pmf(size: int, successes: int, draws: int) -> tuple[int, npt.NDArray[np.float64]]:
    """(x_min, pmf) of the number of successes among `draws` taken from `size` items holding `successes`.

    pmf[j] = P(X = x_min + j) = C(K, x)·C(N − K, n − x) / C(N, n), over x_min = max(0, n − (N − K)) …
    x_max = min(K, n).
    """
    low = max(0, draws - (size - successes))
    high = min(successes, draws)
    denominator = math.comb(size, draws)
    values = [
        math.comb(successes, x) * math.comb(size - successes, draws - x) / denominator for x in range(low, high + 1)
    ]
    return low, np.asarray(values, dtype=np.float64)


def _convolve(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    length = a.size + b.size - 1
    if length <= _FFT_MIN_LENGTH:
        return np.convolve(a, b)
    size = 1 << (length - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:length]
    out = np.clip(out, 0.0, None)  # round-off leaves tiny negatives
    total = out.sum()
    return out / total if total > 0 else out


def convolution_power(pmf: npt.NDArray[np.float64], count: int) -> npt.NDArray[np.float64]:
    """The law of the sum of `count` independent copies of a variable with law `pmf` (offset 0), by squaring."""
    result = np.ones(1, dtype=np.float64)
    base = pmf
    remaining = count
    while remaining:
        if remaining & 1:
            result = _convolve(result, base)
        remaining >>= 1
        if remaining:
            base = _convolve(base, base)
    return result


@dataclass(frozen=True)
class PassRateResult:
    """The stratified pass-rate test's p-value and what it rests on."""

    p_value: float
    test: Literal["stratified_exact", "stratified_mc"]
    informative: int
    """Cases whose passes could fall on either side (0 < t_i < N_i); the others cannot move."""
    types: int
    """Distinct (k_b, k_c, t) among them."""
    statistic: float
    """T_obs = Σ w_i·c_i over the informative cases."""
    expected: float
    """E[T | t] under H0."""
    at_least_as_extreme: int
    """Draws (Monte Carlo) with T* ≤ T_obs; for the exact test, 0."""
    draws: int
    """S (Monte Carlo) or 0 (exact)."""
    min_p: float
    """The smallest p-value these cases could give (all passes on the baseline side)."""


def pass_rate_test(strata: Sequence[Stratum], *, seed: int, resamples: int = 10_000) -> PassRateResult:
    """One-sided stratified permutation test of "the candidate passes less" (module docstring, 1)."""
    groups: dict[tuple[int, int, int], int] = {}
    observed = 0.0
    for stratum in strata:
        if not stratum.informative:
            continue
        key = (stratum.baseline_runs, stratum.current_runs, stratum.total)
        groups[key] = groups.get(key, 0) + 1
        observed += stratum.weight() * stratum.current_passes
    informative = sum(groups.values())
    if informative == 0:
        return PassRateResult(1.0, "stratified_exact", 0, 0, 0.0, 0.0, 0, 0, 1.0)
    laws: list[tuple[float, int, npt.NDArray[np.float64]]] = []  # (weight, offset, pmf of the type's sum)
    expected = 0.0
    min_p = 1.0
    for (k_b, k_c, t), count in sorted(groups.items()):
        low, pmf = hypergeometric_pmf(k_b + k_c, t, k_c)
        weight = (k_b + k_c) ** 2 / (t * (k_b + k_c - t))
        summed = convolution_power(pmf, count)
        laws.append((weight, low * count, summed))
        expected += weight * count * k_c * t / (k_b + k_c)
        min_p *= float(pmf[0]) ** count
    tolerance = _TIE_TOLERANCE * max(1.0, abs(observed))
    support = math.prod(law.size for _, _, law in laws)
    if support <= _EXACT_SUPPORT_MAX:
        values = np.zeros(1, dtype=np.float64)
        probabilities = np.ones(1, dtype=np.float64)
        for weight, offset, law in laws:
            points = weight * (offset + np.arange(law.size, dtype=np.float64))
            values = (values[:, None] + points[None, :]).ravel()
            probabilities = (probabilities[:, None] * law[None, :]).ravel()
        p = float(probabilities[values <= observed + tolerance].sum())
        return PassRateResult(min(1.0, p), "stratified_exact", informative, len(laws), observed, expected, 0, 0, min_p)
    rng = seeded_generator(seed)
    totals = np.zeros(resamples, dtype=np.float64)
    for weight, offset, law in laws:
        cdf = np.cumsum(law)
        cdf /= cdf[-1]
        draws = np.searchsorted(cdf, rng.random_sample(resamples), side="right")
        totals += weight * (offset + np.minimum(draws, law.size - 1))
    count = int(np.count_nonzero(totals <= observed + tolerance))
    return PassRateResult(
        (1 + count) / (1 + resamples), "stratified_mc", informative, len(laws), observed, expected, count,
        resamples, min_p,
    )  # fmt: skip


@dataclass(frozen=True)
class NewlyBrokenResult:
    """The newly-broken count test (module docstring, 2)."""

    p_value: float
    broken: int
    """Cases that passed every baseline repetition and fail every current one (eligible cases only)."""
    eligible: int
    """Cases with ≥ NEWLY_BROKEN_MIN_RUNS repetitions per side whose t_i = k_b,i."""
    expected: float
    """Σ q_i: how many newly broken cases chance alone gives on average."""
    min_p: float
    """Π q_i: the smallest p-value these cases could give."""
    broken_at: tuple[int, ...] = ()
    """Positions (in the strata given) of the eligible cases that are newly broken."""


def newly_broken_test(
    strata: Sequence[Stratum], *, min_runs: int = NEWLY_BROKEN_MIN_RUNS, groups: Sequence[Hashable] | None = None
) -> NewlyBrokenResult:
    """p = P(Σ Bernoulli(q_i) ≥ broken) over the eligible cases, exact (module docstring, 2).

    With `groups` (cluster labels, one per stratum), correlated cases count as one unit: a cluster is newly
    broken when any of its eligible cases is, which under H0 happens with probability at most
    q_g = min(1, Σ_{i∈g} q_i) (a union bound, valid however its cases depend on each other); the test runs over
    clusters with those q_g, and `broken`/`eligible` count clusters."""
    per_unit: dict[Hashable, tuple[float, bool]] = {}
    broken_at: list[int] = []
    for index, stratum in enumerate(strata):
        if stratum.baseline_runs < min_runs or stratum.current_runs < min_runs:
            continue
        if stratum.total != stratum.baseline_runs:
            continue
        if stratum.newly_broken:
            broken_at.append(index)
        unit: Hashable = groups[index] if groups is not None else index
        q, broken_before = per_unit.get(unit, (0.0, False))
        per_unit[unit] = (
            min(1.0, q + 1.0 / math.comb(stratum.size, stratum.baseline_runs)),
            broken_before or stratum.newly_broken,
        )
    probabilities = [q for q, _ in per_unit.values()]
    broken = sum(was for _, was in per_unit.values())
    expected = math.fsum(probabilities)
    min_p = math.prod(probabilities) if probabilities else 1.0
    return NewlyBrokenResult(
        poisson_binomial_upper_tail(probabilities, broken),
        broken,
        len(probabilities),
        expected,
        min_p,
        tuple(broken_at),
    )


def poisson_binomial_upper_tail(probabilities: Sequence[float], observed: int) -> float:
    """P(X ≥ observed) for X a sum of independent Bernoulli(p_i); exact dynamic programme over the p_i.

    The state keeps P(X = 0), …, P(X = observed − 1) and lumps everything from `observed` on, so the cost is
    O(len(probabilities) · observed). Example: ten p_i = 0.05, observed 1 → 1 − 0.95¹⁰ = 0.4013.
    """
    if observed <= 0:
        return 1.0
    if observed > len(probabilities):
        return 0.0
    dist = np.zeros(observed + 1, dtype=np.float64)
    dist[0] = 1.0
    for q in probabilities:
        moved = dist * q
        dist = dist * (1.0 - q)
        dist[1:] += moved[:-1]
        dist[-1] += moved[-1]  # X ≥ observed stays there
    return float(min(1.0, max(0.0, dist[-1])))


def weighted_holm(p_values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Weighted Holm adjusted p-values, in the input order: hypothesis j is rejected at level α iff p̃_j < α.

    Step-down over the remaining set R with total weight W_R: take the j in R with the smallest p_j / w_j;
    reject it when p_j < α·w_j / W_R, else stop. Equivalently p̃ at step l is the running maximum of
    min(1, p_(l)·W_R / w_(l)). With equal weights this is Holm's procedure. Example: p = (0.03, 0.004),
    w = (0.9, 0.1): order by p/w → 0.004/0.1 = 0.04 first, p̃ = 0.004·1.0/0.1 = 0.04; then 0.03 with W = 0.9,
    p̃ = max(0.04, 0.03) = 0.04: both rejected at α = 0.05.
    """
    if len(p_values) != len(weights):
        raise ValueError("one weight per p-value")
    if any(w <= 0 for w in weights):
        raise ValueError("weights must be positive")
    remaining = list(range(len(p_values)))
    adjusted = [1.0] * len(p_values)
    running = 0.0
    while remaining:
        total = math.fsum(weights[i] for i in remaining)
        best = min(remaining, key=lambda i: (p_values[i] / weights[i], i))
        running = max(running, min(1.0, p_values[best] * total / weights[best]))
        adjusted[best] = running
        remaining.remove(best)
    return adjusted
