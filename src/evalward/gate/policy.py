"""The gate's policy: significance, margins, which metrics gate, and how errors, gaps and flaky cases count.

Lives in the repository's config (versioned with the code, never on a server); unknown keys are refused
and `GatePolicy.model_json_schema()` gives editors a schema. Defaults follow docs/gate.md §6.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalward.model import canonical_hash

CASE_PASS_METRIC = "case_pass"
"""Pseudo-metric: a case repetition's status as a score (passed = 1, failed = 0): the pass rate the gate compares
when the criteria have thresholds."""

ERROR_RATE_METRIC = "error_rate"
"""Pseudo-metric: the share of a case's repetitions that errored (lower is better), compared under errors=compare."""


class MetricOverride(BaseModel):
    """Per-metric margins that replace the policy-wide ones."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    delta_block: float | None = Field(default=None, gt=0, description="δ_block for this metric.")
    delta_ni: float | None = Field(default=None, gt=0, description="δ_ni for this metric.")
    primary: bool = Field(default=False, description="Gate on this metric only; the others are reported.")


class QuarantineEntry(BaseModel):
    """A known-flaky case: reported but not gated until `until` (inclusive)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    case_id: str
    eval_set_id: str | None = Field(default=None, description="Restrict to one eval set; None = any set.")
    until: date = Field(description="Last day the quarantine holds; afterwards the case is gated again.")
    reason: str = Field(description="Why, e.g. a link to the issue tracking the flakiness.")

    def matches(self, eval_set_id: str, case_id: str) -> bool:
        return self.case_id == case_id and self.eval_set_id in (None, eval_set_id)


class RatioGate(BaseModel):
    """The log-ratio rule for cost or latency (docs/gate.md §7)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    gate: bool = Field(default=False, description="True: a regression blocks; False: informational (warning).")
    tau: float = Field(default=0.10, ge=0, description="Tolerated increase: regressed when exp(L) > 1 + τ.")


class TopUpPolicy(BaseModel):
    """The second look (docs/gate.md §6, `gate.sequential`): when the first look neither blocks nor passes, or a case
    looks newly broken, the agent runs again and the gate decides once more, the two looks sharing α."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    max_repetitions: int = Field(
        default=6,
        ge=0,
        le=100,
        description="k_max: the most repetitions per case on each side after the top-up (the run's own count); the "
        "top-up adds the fewest that could show non-inferiority, and k_max when none could. At or below the run's "
        "repetitions, no even top-up. 0 turns the top-up off (one look, at the whole α).",
    )
    first_look_share: float = Field(
        default=0.2,
        gt=0,
        le=1,
        description="The first look's share of α when a second look is possible (Bonferroni split: the first look "
        "is judged at share × α, the second at the rest). A strict first look leaves the PRs near a boundary to the "
        "second, which sees more repetitions.",
    )
    confirm_repetitions: int | None = Field(
        default=None,
        ge=3,
        le=20,
        description="Fresh repetitions on each side for each suspect case (passed every baseline repetition, failed "
        "every current one). None: the fewest with which one case that stays broken is significant at its share of "
        "the second look's α.",
    )
    max_runs: int | None = Field(
        default=None,
        ge=0,
        description="A cap on the agent runs the top-up may spend, both sides counted; None: what the design needs "
        "(at most k_max repetitions per case and side, plus the confirmations). 0 turns the top-up off.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        ge=0,
        description="A budget in US dollars as well: at most this much, at the mean recorded cost of one agent run "
        "of this run (`usage.cost_usd`); None, or a run that recorded no cost, leaves `max_runs` alone to limit it.",
    )

    @property
    def enabled(self) -> bool:
        """Whether a second look can happen at all (known before the first, so the first can be given its share)."""
        return self.max_repetitions > 0 and self.max_runs != 0


class GatePolicy(BaseModel):
    """How `gate.decide` judges a run against its baseline."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    alpha: float = Field(
        default=0.005,
        gt=0,
        lt=0.5,
        description="The false-alarm rate: the chance the gate fails a change that made nothing worse, shared by its "
        "looks (docs/gate.md §6). The one-sided tests that block are judged against it.",
    )
    alpha_pass: float = Field(
        default=0.05,
        gt=0,
        lt=0.5,
        description="The one-sided level of the bounds behind a pass: the chance of passing a change whose true drop "
        "is δ_ni. The reported interval is a two-sided 1 − 2·alpha_pass interval (90%).",
    )
    inference: Literal["suite", "population"] = Field(
        default="suite",
        description="`suite`: the question is these cases; the agent's repetitions are the noise, and a case that "
        "passed every repetition is evidence (docs/gate.md §6a). `population`: the cases are a sample of a task "
        "distribution; bounds resample cases and a pass needs about 3/δ_ni of them (benchmark-style suites).",
    )
    power: float = Field(default=0.8, gt=0, lt=1, description="Power used for the MDE and sample-size advice.")
    delta_block: float = Field(default=0.02, gt=0, description="δ_block: smallest drop worth blocking.")
    delta_ni: float = Field(default=0.05, gt=0, description="δ_ni: non-inferiority margin.")
    metrics: list[str] | None = Field(
        default=None,
        description="Metrics to gate. None: when the run's criteria have thresholds, the case pass rate "
        f"(`{CASE_PASS_METRIC}`: thresholds decide each case's pass/fail, the gate asks whether passing got worse) "
        "and the thresholded metrics are compared and reported; without thresholds, every score-like metric "
        f"scored in both runs, else `{CASE_PASS_METRIC}`.",
    )
    overrides: dict[str, MetricOverride] = Field(default_factory=dict, description="Per-metric margins.")
    primary_metric: str | None = Field(
        default=None, description="Gate on this metric only; the others are compared and reported."
    )
    correction: Literal["holm", "none"] = Field(default="holm", description="Multiplicity correction.")
    thresholds: Literal["change", "block", "warn", "off"] = Field(
        default="change",
        description="How the run's absolute thresholds (ADK semantics: they decide each case's pass/fail) count. "
        "`change`: the gate blocks when passing got worse than at the baseline (the paired pass-rate test and "
        "newly broken cases); a case that also failed at the baseline is reported as still failing; only a run "
        "with no base side at all is judged by the thresholds alone. `block`: any case × metric missing its "
        "threshold blocks (ADK's absolute rule, flaky cases included). `warn`: reported only. `off`: ignored.",
    )
    must_pass_allowed_failures: int = Field(
        default=0, ge=0, description="Repetitions a must_pass case may fail (0 = pass^k)."
    )
    on_missing_baseline: Literal["error", "absolute", "neutral", "fail"] = Field(
        default="error",
        description="A base side exists (there is a merge-base) but no baseline could be stored or run. `error`: "
        "no verdict, exit 3 (infrastructure), never a silent pass; `absolute`: judge by the thresholds alone, as "
        "for a first run; `neutral`: inconclusive unless an absolute check failed; `fail`: blocking.",
    )
    errors: Literal["compare", "fail", "count_as_failure", "ignore"] = Field(
        default="compare",
        description="`compare`: errored repetitions (either side alike) are left out of the scores and the error "
        "*rate* is compared with the baseline's, blocking when it rose beyond noise; `fail`: any errored case of "
        "the current run blocks; `count_as_failure`: a warning, and an errored repetition scores the worst value "
        "(either run); `ignore`: info, errored repetitions left out.",
    )
    newly_broken_share: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="Share of α spent on the newly-broken test (cases that passed every repetition at the baseline "
        "and fail every one now, k ≥ 3 on both sides); 0 turns it off. The pass-rate test gets the rest.",
    )
    error_rate_share: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="Share of α spent on the error-rate test (errors=compare) when some compared case errored.",
    )
    missing_cases: Literal["fail", "warn"] = Field(
        default="fail", description="A case of the eval set with no (or too few) results."
    )
    quarantine: list[QuarantineEntry] = Field(default_factory=list)
    flaky_flip_rate: float = Field(
        default=0.2, ge=0, le=1, description="A base-branch flip rate at or above this labels a case flaky."
    )
    cost: RatioGate = Field(default_factory=RatioGate)
    latency: RatioGate = Field(default_factory=RatioGate)
    resamples: int = Field(default=10_000, ge=100, description="S for the bootstrap and Monte Carlo sign flips.")
    exact_enumeration_max_n: int = Field(
        default=16, ge=0, le=20, description="Enumerate all 2^m sign vectors when m ≤ this many non-zero d_i."
    )
    seed: int | None = Field(
        default=None, description="Resampling seed; None derives it from the two run ids (re-renders agree)."
    )
    strict: bool = Field(default=False, description="An inconclusive verdict fails.")
    top_up: TopUpPolicy = Field(
        default_factory=TopUpPolicy,
        description="The second look: an undecided verdict, or a case that looks newly broken, gets more "
        "repetitions where the agent can run, and the looks share α.",
    )

    @model_validator(mode="after")
    def _one_primary(self) -> GatePolicy:
        primaries = sorted(name for name, o in self.overrides.items() if o.primary)
        if self.primary_metric is not None and self.primary_metric not in primaries:
            primaries.append(self.primary_metric)
        if len(primaries) > 1:
            raise ValueError(f"at most one primary metric; found {', '.join(sorted(primaries))}")
        return self

    def primary(self) -> str | None:
        """The primary metric from `primary_metric` or an override with `primary: true`."""
        if self.primary_metric is not None:
            return self.primary_metric
        return next((name for name, o in sorted(self.overrides.items()) if o.primary), None)

    def margins(self, metric: str) -> tuple[float, float]:
        """(δ_block, δ_ni) for `metric`, overrides first."""
        override = self.overrides.get(metric)
        delta_block = override.delta_block if override and override.delta_block is not None else self.delta_block
        delta_ni = override.delta_ni if override and override.delta_ni is not None else self.delta_ni
        return delta_block, delta_ni

    def digest(self) -> str:
        """sha256 of the canonical JSON, so a verdict names the exact policy it was made under."""
        return canonical_hash(self.model_dump(mode="json"))
