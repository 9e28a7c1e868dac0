"""What every step of the gate reads: the two runs, the policy, each run's results grouped by case.

`GateContext.read` reads each run's results once (`gate.scores`) and derives what the steps share: the seed, the
day the quarantine is checked against and the quarantined cases. The context is frozen: a step takes it and
returns its findings and results, and `gate.decide` puts them together in the policy's order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from evalward.gate.policy import GatePolicy
from evalward.gate.scores import ScoredResult, scored
from evalward.model import RunResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import Look, NoBaseline

if TYPE_CHECKING:
    from evalward.gate.sequential import SecondLookInputs


@dataclass(frozen=True)
class GateContext:
    """One evaluation of the policy: its inputs and what is derived from them before any step runs."""

    current: RunResult
    baseline: RunResult | None
    policy: GatePolicy
    flip_rates: Mapping[CaseKey, float]
    """(eval_set_id, case_id) → the case's flip rate on the base branch (history)."""
    absolute_checks: bool
    """Steps 1 and 2 apply (`decide`), or not (`compare`)."""
    absence: NoBaseline | None
    """Why `baseline` is None; None when there is a baseline."""
    today: date
    """The day the quarantine entries are checked against."""
    seed: int
    current_results: Sequence[ScoredResult]
    baseline_results: Sequence[ScoredResult]
    cur: Mapping[CaseKey, Sequence[ScoredResult]]
    """The current run's results by case, repetitions in order, keys sorted."""
    base: Mapping[CaseKey, Sequence[ScoredResult]]
    """The baseline's results, grouped alike (empty without a baseline)."""
    quarantined: frozenset[CaseKey]
    """Cases of either run with a quarantine entry not expired on `today`."""
    look: Look
    """Which look this is and the levels of both (docs/gate.md §6)."""
    second: SecondLookInputs | None = None
    """At the second look: the first look's p-values, the top-up's own repetitions and the confirmations."""

    @classmethod
    def read(
        cls,
        current: RunResult,
        baseline: RunResult | None,
        policy: GatePolicy,
        flip_rates: Mapping[CaseKey, float],
        today: date | None,
        *,
        absolute_checks: bool,
        absence: NoBaseline | None,
        look: Look | None = None,
        second: SecondLookInputs | None = None,
    ) -> GateContext:
        """The context of one evaluation. Each run's results are read once, into what the steps read of them
        (`gate.scores`): a large run's full results may live in a temporary file, and are never all held here."""
        day = today or _run_day(current) or date.min
        current_results = scored(current.cases)
        baseline_results = scored(baseline.cases) if baseline is not None else []
        cur = _group(current_results)
        base = _group(baseline_results)
        return cls(
            current=current,
            baseline=baseline,
            policy=policy,
            flip_rates=flip_rates,
            absolute_checks=absolute_checks,
            absence=absence,
            today=day,
            seed=policy.seed if policy.seed is not None else _derive_seed(current, baseline),
            current_results=current_results,
            baseline_results=baseline_results,
            cur=cur,
            base=base,
            quarantined=_quarantined_keys(policy, day, [*cur, *base]),
            look=look or single_look(policy),
            second=second,
        )

    @property
    def pass_level(self) -> float:
        """This look's share of α_pass: the one-sided level of the bound a pass needs."""
        return self.look.pass_level

    @property
    def level(self) -> float:
        """The nominal significance level of this look: what the tests that block are judged against."""
        return self.look.level

    def judged_absolutely(self) -> bool:
        """No baseline, and the thresholds alone decide: no base side at all, or `on_missing_baseline="absolute"`."""
        if self.baseline is not None or self.absence is None:
            return False
        return self.absence.kind == "no_base" or self.policy.on_missing_baseline == "absolute"

    def cluster_label(self, key: CaseKey) -> str | None:
        """The case's cluster label: the current run's (the eval set under review), else the baseline's."""
        for results in (self.cur.get(key, ()), self.base.get(key, ())):
            for result in results:
                if result.cluster is not None:
                    return result.cluster
        return None

    def cluster_groups(self, keys: Sequence[CaseKey]) -> list[Hashable] | None:
        """The cluster of each case (its label, or the case itself when unlabelled); None when no case has a
        label, i.e. the analysis is unclustered (docs/gate.md §1)."""
        labels = [self.cluster_label(key) for key in keys]
        if not any(label is not None for label in labels):
            return None
        # Tagged tuples: an unlabelled case never shares a cluster with a label that happens to equal its id.
        return [
            ("label", label) if label is not None else ("case", *key) for key, label in zip(keys, labels, strict=True)
        ]


def single_look(policy: GatePolicy) -> Look:
    """One look at the whole α: where no second look can follow (`evalward compare`, a finished run judged without
    its agent)."""
    return Look(
        index=1,
        planned=1,
        alpha=policy.alpha,
        alpha_first=policy.alpha,
        alpha_second=0.0,
        alpha_pass=policy.alpha_pass,
        alpha_pass_first=policy.alpha_pass,
        alpha_pass_second=0.0,
    )


def sub_seed(seed: int, label: str) -> int:
    """A seed per purpose, so adding a metric does not change another metric's numbers."""
    return int(hashlib.sha256(f"{seed}:{label}".encode()).hexdigest()[:16], 16)


def _derive_seed(current: RunResult, baseline: RunResult | None) -> int:
    base_id = baseline.run_id if baseline is not None else ""
    return int(hashlib.sha256(f"{current.run_id}|{base_id}".encode()).hexdigest()[:16], 16)


def _run_day(run: RunResult) -> date | None:
    moment = run.started_at or run.finished_at
    return moment.date() if moment is not None else None


def _group(results: Sequence[ScoredResult]) -> dict[CaseKey, list[ScoredResult]]:
    """Case results by (eval_set_id, case_id), repetitions in order, keys sorted."""
    grouped: dict[CaseKey, list[ScoredResult]] = {}
    for result in results:
        grouped.setdefault((result.eval_set_id, result.case_id), []).append(result)
    return {key: sorted(grouped[key], key=lambda r: r.repetition) for key in sorted(grouped)}


def _quarantined_keys(policy: GatePolicy, today: date, keys: Sequence[CaseKey]) -> frozenset[CaseKey]:
    active = [q for q in policy.quarantine if q.until >= today]
    return frozenset(key for key in set(keys) if any(q.matches(*key) for q in active))
