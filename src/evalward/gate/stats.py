"""The gate's statistics: exact and resampling tests, intervals, multiplicity and power (docs/gate.md §4–§10).

Pure functions of numbers. Resampling is seeded and reproducible: draws come from numpy's legacy
`RandomState` (Mersenne Twister, a stream NEP 19 freezes across numpy releases) and are processed as
vectors in blocks, so one bootstrap or Monte Carlo test of 10,000 resamples × 1,000 cases takes about a
tenth of a second, and the same seed gives the same numbers after upgrades.

Conventions: the one-sided tests are of H0: Δ ≥ 0 against H1: Δ < 0 (the candidate is worse); a difference
d_i = c_i − b_i is current minus baseline.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

import numpy as np
import numpy.typing as npt

_VALUES_PER_BLOCK = 1 << 21
"""Random values drawn per block of resamples (rows × n): each block's arrays stay at ~16 MB whatever S and n
are (1,024 rows of a 100,000-case run had taken 1.6 GB). The legacy generator's stream does not depend on how
the draws are split, so the block size never changes a result."""

_MAX_ROWS_PER_BLOCK = 1024


def _blocks(resamples: int, width: int) -> Iterator[tuple[int, int]]:
    """(first resample, resamples) of each block for draws `width` values wide. Every block but the last has a
    multiple of 4 rows: `RandomState.bytes` draws 32-bit words and drops what a request leaves of its last one,
    so the sign bits' byte stream is unchanged only if each block but the last asks for whole words."""
    rows = max(4, min(_MAX_ROWS_PER_BLOCK, _VALUES_PER_BLOCK // max(1, width)) // 4 * 4)
    for start in range(0, resamples, rows):
        yield start, min(rows, resamples - start)


_TIE_TOLERANCE = 1e-9
"""Relative tolerance when a resampled sum is compared with the observed one: sums of the same numbers
in another order differ in the last bits, and a tie must count as "at least as extreme"."""


# ---------------------------------------------------------------------------------------------- McNemar


def mcnemar_exact_p(n10: int, n01: int) -> float:
    """One-sided exact McNemar p-value for "the candidate is worse".

    n10 = #(baseline pass, current fail), n01 = #(baseline fail, current pass); under H0 each discordant
    pair is equally likely to go either way, so p = P[Binomial(n10 + n01, ½) ≥ n10]
    = Σ_{j=n10}^{m} C(m, j) / 2^m with m = n10 + n01. No discordant pairs → p = 1.

    Example: n10 = 6, n01 = 1 → (C(7,6) + C(7,7)) / 2^7 = 8/128 = 0.0625.
    """
    if n10 < 0 or n01 < 0:
        raise ValueError(f"discordant counts must be >= 0, got n10={n10}, n01={n01}")
    m = n10 + n01
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, j) for j in range(n10, m + 1))
    return float(Fraction(tail, 2**m))


# ------------------------------------------------------------------------------------------ random bits


def _require_finite(values: Sequence[float]) -> None:
    """NaN compares false with everything, so a NaN difference would silently count as "at least as extreme"
    in no draw and give p = 0; such input is a bug upstream and is refused."""
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        raise ValueError(f"the gate's tests need finite numbers; found {bad[0]!r} among {len(values)} values")


def seeded_generator(seed: int) -> np.random.RandomState:
    """numpy's legacy Mersenne Twister, seeded with the 64-bit `seed` as two 32-bit words.

    `RandomState` is used on purpose: NEP 19 freezes its stream (unlike `Generator`, whose methods may
    change between numpy releases), so a stored verdict re-renders to the same numbers after upgrades.
    """
    seed &= (1 << 64) - 1
    return np.random.RandomState(np.array([seed & 0xFFFFFFFF, seed >> 32], dtype=np.uint32))


def _random_sign_bits(rng: np.random.RandomState, rows: int, cols: int) -> npt.NDArray[np.float64]:
    """A rows × cols matrix of independent fair bits as floats (1 = flip the sign).

    Drawn as packed random bytes and unpacked: 8 flips per byte instead of one integer draw each.
    """
    width = (cols + 7) // 8
    packed = np.frombuffer(rng.bytes(rows * width), dtype=np.uint8).reshape(rows, width)
    return np.unpackbits(packed, axis=1, count=cols, bitorder="little").astype(np.float64)


def _random_indices(rng: np.random.RandomState, rows: int, n: int) -> npt.NDArray[np.intp]:
    """A rows × n matrix of indices drawn uniformly from 0..n−1 (with replacement)."""
    return rng.randint(0, n, size=(rows, n)).astype(np.intp, copy=False)


# -------------------------------------------------------------------------------------- sign-flip test


@dataclass(frozen=True)
class SignFlipResult:
    """The sign-flip test's p-value and how it was obtained."""

    p_value: float
    test: Literal["sign_flip_exact", "sign_flip_mc"]
    nonzero: int
    """m, the number of non-zero differences (zeros never change under a flip)."""
    at_least_as_extreme: int
    """Sign vectors (exact) or random draws (Monte Carlo) whose sum was ≤ the observed one."""
    draws: int
    """2^m (exact) or S (Monte Carlo)."""


def sign_flip_test(
    diffs: Sequence[float], *, seed: int, resamples: int = 10_000, exact_max_n: int = 16
) -> SignFlipResult:
    """One-sided paired sign-flip permutation test of H0: Δ ≥ 0 vs H1: Δ < 0.

    Statistic: T(σ) = Σ σ_i d_i with σ ∈ {±1}ⁿ; the observed T is Σ d_i (σ = identity). Comparing sums is
    the same as comparing means (1/n) Σ σ_i d_i because n is fixed.

    - Zero differences never change under a flip, so only the m non-zero d_i are flipped; enumerating the
      2^m vectors over them gives exactly the same p as enumerating 2ⁿ vectors over all of them.
    - Exact when m ≤ `exact_max_n`: p = #{σ : T(σ) ≤ T_obs} / 2^m, identity included.
    - Otherwise Monte Carlo with S = `resamples` random sign vectors: p = (1 + #{T(σ) ≤ T_obs}) / (1 + S),
      which counts the observed vector once and is never 0.
    - m = 0 (every d_i is 0): p = 1.

    Example: d = (−1, −1, −1, −1, 0): only the identity keeps T = −4 among the 2⁴ vectors over the four
    non-zero values → p = 1/16 = 2/32 = 0.0625 (the 2⁵ count also sees both signs of the zero).
    """
    _require_finite(diffs)
    nonzero = np.asarray([d for d in diffs if d != 0.0], dtype=np.float64)
    m = int(nonzero.size)
    if m == 0:
        return SignFlipResult(p_value=1.0, test="sign_flip_exact", nonzero=0, at_least_as_extreme=1, draws=1)
    total = float(nonzero.sum())
    tolerance = _TIE_TOLERANCE * max(1.0, float(np.abs(nonzero).sum()))
    if m <= exact_max_n:
        vectors = np.arange(2**m, dtype=np.int64)[:, None]
        flips = ((vectors >> np.arange(m, dtype=np.int64)) & 1).astype(np.float64)
        # Flipping the values with bit 1 turns Σ d_i into Σ d_i − 2 Σ_{flipped} d_i.
        sums = total - 2.0 * (flips @ nonzero)
        count = int(np.count_nonzero(sums <= total + tolerance))
        return SignFlipResult(
            p_value=count / 2**m, test="sign_flip_exact", nonzero=m, at_least_as_extreme=count, draws=2**m
        )
    rng = seeded_generator(seed)
    count = 0
    for _, rows in _blocks(resamples, m):
        flips = _random_sign_bits(rng, rows, m)
        sums = total - 2.0 * (flips @ nonzero)
        count += int(np.count_nonzero(sums <= total + tolerance))
    return SignFlipResult(
        p_value=(1 + count) / (1 + resamples),
        test="sign_flip_mc",
        nonzero=m,
        at_least_as_extreme=count,
        draws=resamples,
    )


# ----------------------------------------------------------------------------------- paired bootstrap


def bootstrap_mean_bounds(
    values: Sequence[float], *, alpha: float, seed: int, resamples: int = 10_000
) -> tuple[float, float]:
    """Percentile bootstrap bounds (L, U) of the mean of `values` (the paired differences d_i).

    Draw S = `resamples` samples of n cases with replacement and take each one's mean; sort them. With
    r = max(1, ⌊α·S⌋), L is the r-th smallest and U the r-th largest mean: L is a one-sided lower bound
    and U a one-sided upper bound at level 1 − α, together a two-sided 1 − 2α interval (90% at α = 0.05).
    Resampling whole cases keeps each case's baseline and current scores together (pairing).
    """
    if not values:
        raise ValueError("bootstrap needs at least one value")
    _require_finite(values)
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    data = np.asarray(values, dtype=np.float64)
    n = int(data.size)
    rng = seeded_generator(seed)
    means = np.empty(resamples, dtype=np.float64)
    for start, rows in _blocks(resamples, n):
        means[start : start + rows] = data[_random_indices(rng, rows, n)].mean(axis=1)
    means.sort()
    rank = max(1, int(alpha * resamples + 1e-9))
    return float(means[rank - 1]), float(means[resamples - rank])


def bootstrap_cluster_mean_bounds(
    sums: Sequence[float], sizes: Sequence[int], *, alpha: float, seed: int, resamples: int = 10_000
) -> tuple[float, float]:
    """Percentile bootstrap bounds (L, U) of Δ̂ = Σ_i d_i / n, resampling whole clusters.

    `sums[g]` = D_g = Σ_{i∈g} d_i and `sizes[g]` = n_g over the G clusters. Each resample draws G clusters
    with replacement (g*_1 … g*_G) and takes Δ̂* = Σ_j D_{g*_j} / Σ_j n_{g*_j}, the mean difference over the
    cases of the drawn clusters, so correlated cases stay together. L and U are ranked as in
    `bootstrap_mean_bounds`; with every n_g = 1 the draws and the bounds are exactly that function's.
    """
    if not sums:
        raise ValueError("bootstrap needs at least one cluster")
    if len(sums) != len(sizes):
        raise ValueError("sums and sizes must have one entry per cluster")
    if any(size < 1 for size in sizes):
        raise ValueError("every cluster needs at least one case")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    totals = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(sizes, dtype=np.float64)
    clusters = int(totals.size)
    rng = seeded_generator(seed)
    means = np.empty(resamples, dtype=np.float64)
    for start, rows in _blocks(resamples, clusters):
        drawn = _random_indices(rng, rows, clusters)
        means[start : start + rows] = totals[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    means.sort()
    rank = max(1, int(alpha * resamples + 1e-9))
    return float(means[rank - 1]), float(means[resamples - rank])


# -------------------------------------------------------------------------------------------- clusters


@dataclass(frozen=True)
class Clusters:
    """The paired differences grouped by cluster label (docs/gate.md §1: same template, same document)."""

    sums: list[float]
    """D_g = Σ_{i∈g} d_i, clusters in order of first appearance."""
    sizes: list[int]
    """n_g, the number of cases in cluster g."""

    @property
    def count(self) -> int:
        """G, the number of clusters."""
        return len(self.sums)


def group_by_cluster(diffs: Sequence[float], labels: Sequence[Hashable]) -> Clusters:
    """D_g and n_g for each distinct label, in order of first appearance (so the result is deterministic)."""
    if len(diffs) != len(labels):
        raise ValueError("diffs and labels must be paired (same length)")
    index: dict[Hashable, int] = {}
    sums: list[float] = []
    sizes: list[int] = []
    for d, label in zip(diffs, labels, strict=True):
        g = index.setdefault(label, len(sums))
        if g == len(sums):
            sums.append(0.0)
            sizes.append(0)
        sums[g] += d
        sizes[g] += 1
    return Clusters(sums=sums, sizes=sizes)


def clustered_se(diffs: Sequence[float], labels: Sequence[Hashable]) -> float | None:
    """Cluster-robust standard error of Δ̂ (docs/gate.md §3), None when there are fewer than 2 clusters.

    SE_cl = (1/n) · √( G/(G−1) · Σ_g (Σ_{i∈g} (d_i − Δ̂))² ), with Δ̂ = (1/n) Σ d_i over the n cases and G
    clusters; Σ_{i∈g} (d_i − Δ̂) = D_g − n_g·Δ̂. G/(G−1) is the finite-cluster correction (as in Inspect's
    clustered stderr). With every case its own cluster (G = n) this is s_d/√n exactly.

    Example: d = (−1, −1 | −1, 0 | 0, 0) in clusters A, B, C: Δ̂ = −0.5; residual sums A: −1, B: 0, C: +1;
    SE_cl = (1/6)·√(3/2 · 2) = √3/6 ≈ 0.289 (unclustered s_d/√n = √(1.5/5)/√6 ≈ 0.224).
    """
    grouped = group_by_cluster(diffs, labels)
    clusters, n = grouped.count, len(diffs)
    if clusters < 2:
        return None
    mean = math.fsum(diffs) / n
    squares = math.fsum((total - size * mean) ** 2 for total, size in zip(grouped.sums, grouped.sizes, strict=True))
    return math.sqrt(clusters / (clusters - 1) * squares) / n


# ------------------------------------------------------------------------------------------ multiplicity


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order.

    Sort ascending p₍₁₎ ≤ … ≤ p₍M₎ (ties keep input order); p̃₍j₎ = max_{l ≤ j} min(1, (M − l + 1) · p₍l₎).
    p̃ < α exactly when Holm's step-down rejects: reject while p₍j₎ < α / (M − j + 1), stop at the first
    non-rejection. Example: p = 0.01, 0.03, 0.04 → 0.03, 0.06, 0.06: only the first is below 0.05.
    """
    count = len(p_values)
    order = sorted(range(count), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * count
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (count - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def holm_reject(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down decisions, in the input order: reject H₍j₎ while p₍j₎ < α / (M − j + 1), then stop."""
    count = len(p_values)
    order = sorted(range(count), key=lambda i: (p_values[i], i))
    rejected = [False] * count
    for rank, index in enumerate(order):
        if p_values[index] >= alpha / (count - rank):
            break
        rejected[index] = True
    return rejected


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the input order.

    Sort ascending p₍₁₎ ≤ … ≤ p₍M₎ (ties keep input order); q₍j₎ = min_{l ≥ j} min(1, M · p₍l₎ / l). Calling
    every hypothesis with q < Q a discovery keeps the expected share of false discoveries at or below Q
    (independent or positively dependent tests). Example: p = 0.01, 0.04, 0.03, 0.2 (M = 4) → sorted 0.01,
    0.03, 0.04, 0.2 give M·p/j = 0.04, 0.06, 0.0533, 0.2; the running minimum from the top makes the 0.03
    one 0.0533 → q = 0.04, 0.0533, 0.0533, 0.2 in input order.
    """
    count = len(p_values)
    order = sorted(range(count), key=lambda i: (p_values[i], i))
    adjusted = [0.0] * count
    running = 1.0
    for rank in range(count, 0, -1):
        index = order[rank - 1]
        running = min(running, count * p_values[index] / rank)
        adjusted[index] = running
    return adjusted


# ---------------------------------------------------------------------------------------- Fisher exact


def fisher_one_sided_p(baseline_passes: int, baseline_runs: int, current_passes: int, current_runs: int) -> float:
    """One-sided Fisher exact p for "the candidate passes less often than the baseline" (one case).

    The 2×2 table (baseline a passes of k_B runs, candidate c of k_C) is taken conditional on its margins:
    with m = a + c passes in N = k_B + k_C runs, the baseline's count A is hypergeometric under H0 (same pass
    probability), P[A = x] = C(k_B, x) · C(k_C, m − x) / C(N, m), and
    p = P[A ≥ a] = Σ_{x=a}^{min(k_B, m)} C(k_B, x) · C(k_C, m − x) / C(N, m), computed in exact integers.

    Examples: 5/5 → 0/5: p = C(5,5)·C(5,0)/C(10,5) = 1/252 ≈ 0.00397. 3/3 → 0/3: 1/C(6,3) = 1/20 = 0.05,
    which is why per-case tests need k ≥ 5 (docs/gate.md §8).
    """
    for passes, runs, side in ((baseline_passes, baseline_runs, "baseline"), (current_passes, current_runs, "current")):
        if not 0 <= passes <= runs:
            raise ValueError(f"need 0 <= passes <= runs on the {side} side, got {passes}/{runs}")
    total = baseline_passes + current_passes
    runs = baseline_runs + current_runs
    if runs == 0:
        return 1.0
    top = min(baseline_runs, total)
    tail = sum(
        math.comb(baseline_runs, x) * math.comb(current_runs, total - x) for x in range(baseline_passes, top + 1)
    )
    return float(Fraction(tail, math.comb(runs, total)))


# -------------------------------------------------------------------------------------- rates, pass^k


def wilson_interval(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a proportion at level 1 − α (two-sided).

    p̂ = x/N, z = z_{1−α/2}; centre = (p̂ + z²/2N) / (1 + z²/N);
    half-width = z · √(p̂(1 − p̂)/N + z²/4N²) / (1 + z²/N). N = 0 → (0, 1).
    Example: 45/50 → [0.786, 0.957].
    """
    if trials < 0 or not 0 <= successes <= max(trials, 0):
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if trials == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    p_hat = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (p_hat + z * z / (2.0 * trials)) / denominator
    half = z * math.sqrt(p_hat * (1.0 - p_hat) / trials + z * z / (4.0 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------------------------------------- power


def z_quantile(q: float) -> float:
    """z_q, the q-quantile of the standard normal."""
    return NormalDist().inv_cdf(q)


def paired_sd(diffs: Sequence[float]) -> float | None:
    """s_d, the sample standard deviation (n − 1) of the differences; None when n < 2."""
    return statistics.stdev(diffs) if len(diffs) >= 2 else None


def minimum_detectable_effect(sd: float, n: int, *, alpha: float, power: float) -> float:
    """MDE = (z_{1−α} + z_{power}) · s_d / √n: the drop this run would detect with the given power."""
    if n < 1:
        raise ValueError("need at least one case")
    return (z_quantile(1.0 - alpha) + z_quantile(power)) * sd / math.sqrt(n)


def cases_needed(sd: float, delta: float, *, alpha: float, power: float) -> int:
    """n = ⌈((z_{1−α} + z_{power}) · σ_d / δ)²⌉: cases needed to detect a drop of δ (docs/gate.md §10), at least 1.

    σ_d is the SD of the per-case differences; more repetitions shrink only its within-case part.
    """
    if delta <= 0:
        raise ValueError(f"delta must be > 0, got {delta}")
    return max(1, math.ceil(((z_quantile(1.0 - alpha) + z_quantile(power)) * sd / delta) ** 2))


# -------------------------------------------------------------------------------------------- log ratio


@dataclass(frozen=True)
class LogRatioResult:
    """Cost or latency, current over baseline, by the log-ratio rule."""

    ratio: float
    """exp(mean r_i), r_i = ln(current_i / baseline_i): the geometric mean of the per-case ratios."""
    ci_low: float
    """exp(L): the one-sided lower bound at level 1 − α of the ratio."""
    ci_high: float
    """exp(U): the one-sided upper bound at level 1 − α."""
    n: int
    """Cases with a positive value on both sides."""
    excluded: int
    """Cases with a zero or missing value on either side."""
    regressed: bool
    """exp(L) > 1 + τ."""


def log_ratio_rule(
    baseline: Sequence[float | None],
    current: Sequence[float | None],
    *,
    tau: float,
    alpha: float,
    seed: int,
    resamples: int = 10_000,
) -> LogRatioResult | None:
    """docs/gate.md §7: r_i = ln(c_i / b_i), ratio = exp(mean r), REGRESSED when exp(L) > 1 + τ.

    L is the paired bootstrap's one-sided lower bound of mean r at level 1 − α (see
    `bootstrap_mean_bounds`). Pairs with a zero, negative or missing value on either side are excluded and
    counted. None when no pair is left.
    """
    if len(baseline) != len(current):
        raise ValueError("baseline and current must be paired (same length)")
    logs: list[float] = []
    for b, c in zip(baseline, current, strict=True):
        if b is not None and c is not None and b > 0 and c > 0:
            logs.append(math.log(c / b))
    if not logs:
        return None
    low, high = bootstrap_mean_bounds(logs, alpha=alpha, seed=seed, resamples=resamples)
    return LogRatioResult(
        ratio=math.exp(statistics.fmean(logs)),
        ci_low=math.exp(low),
        ci_high=math.exp(high),
        n=len(logs),
        excluded=len(baseline) - len(logs),
        regressed=math.exp(low) > 1.0 + tau,
    )
