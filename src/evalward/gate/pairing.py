"""Step 4 of `gate.decide`: which cases are compared, and each metric's paired data over them (docs/gate.md §1).

Cases pair by (eval_set_id, case_id) and an identical content hash; the others are listed, never dropped
silently. `pair_metric` turns a metric's scores over the compared cases into the per-case means b_i and c_i the
tests of step 5 read, errored repetitions handled as the policy's `errors` says, both sides alike.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from evalward.gate import stats
from evalward.gate.findings import case_name, finding, plural
from evalward.gate.gate_context import GateContext
from evalward.gate.policy import CASE_PASS_METRIC
from evalward.gate.rule_checks import case_passes
from evalward.gate.scores import ScoredResult
from evalward.model import RunResult
from evalward.model.cases import CaseKey
from evalward.model.verdict import Finding


@dataclass(frozen=True)
class Pairing:
    """What step 4 found: the compared cases, in order, the cases whose content changed, and its findings."""

    compared: tuple[CaseKey, ...]
    """Cases on both sides with the same content hash, not quarantined."""
    changed: frozenset[CaseKey]
    """Cases on both sides whose content hash differs (`changed_case`)."""
    findings: tuple[Finding, ...]


def pair_cases(ctx: GateContext) -> Pairing:
    """Step 4: added, removed and changed cases are listed and left out; the rest are compared."""
    assert ctx.baseline is not None
    findings: list[Finding] = []
    compared: list[CaseKey] = []
    changed: set[CaseKey] = set()
    removed_failing: list[CaseKey] = []
    for key in sorted(set(ctx.cur) | set(ctx.base)):
        if key not in ctx.base:
            findings.append(finding("added_case", "info", f"Case {case_name(key)} is new: not compared.", key=key))
        elif key not in ctx.cur:
            if not _listed_in(ctx.current, key):
                failing = not case_passes(ctx.base[key], ctx.baseline.pass_rule)
                if failing:
                    removed_failing.append(key)
                findings.append(
                    finding(
                        "removed_case",
                        "warning",
                        f"Case {case_name(key)} is in the baseline only: not compared"
                        + (" (it was failing there)." if failing else "."),
                        key=key,
                    )
                )
        else:
            old = _content_hash(ctx.baseline, key, ctx.base[key])
            new = _content_hash(ctx.current, key, ctx.cur[key])
            if old != new:
                changed.add(key)
                findings.append(
                    finding(
                        "changed_case",
                        "warning",
                        f"Case {case_name(key)} changed (content hash {old[:12] or 'none'} → {new[:12] or 'none'}) "
                        "and its baseline could not be re-scored or re-run: not compared.",
                        key=key,
                    )
                )
            elif key not in ctx.quarantined:
                compared.append(key)
    if removed_failing:
        names = ", ".join(case_name(k) for k in removed_failing[:10])
        more = f" and {len(removed_failing) - 10} more" if len(removed_failing) > 10 else ""
        findings.append(
            finding(
                "removed_case",
                "warning",
                f"This change removes {plural(len(removed_failing), 'case')} that failed at the baseline: "
                f"{names}{more}. Removing failing cases makes the pass rate look better without the agent getting "
                "better; check that this is intended.",
            )
        )
    findings.extend(_criteria_mismatches(ctx.current, ctx.baseline))
    for key in compared:
        errored = [r for r in ctx.base[key] if r.status == "error"]
        if errored:
            first = errored[0].error
            what = f"{first.kind}: {first.message}" if first is not None else "no error details recorded"
            findings.append(
                finding(
                    "error",
                    "info",
                    f"Case {case_name(key)} errored in {len(errored)} of {len(ctx.base[key])} baseline repetitions "
                    f"({what}); handled as the current run's errors are (errors={ctx.policy.errors}).",
                    key=key,
                    baseline_value=float(len(errored)),
                )
            )
    if not compared:
        # Fail-closed (docs/gate.md §2): zero comparable results is an error, never a quiet "no regressions".
        findings.append(
            finding(
                "nothing_compared",
                "blocking",
                "No case is comparable (same id and content hash on both sides, not quarantined): nothing was "
                "compared, so there is no verdict; that is an error, not evidence of no regression.",
            )
        )
    return Pairing(compared=tuple(compared), changed=frozenset(changed), findings=tuple(findings))


def _criteria_mismatches(current: RunResult, baseline: RunResult) -> list[Finding]:
    """An eval set on both sides whose criteria differ: its scores are compared as recorded."""
    findings: list[Finding] = []
    base_sets = {info.eval_set_id: info for info in baseline.eval_sets}
    for info in sorted(current.eval_sets, key=lambda i: i.eval_set_id):
        other = base_sets.get(info.eval_set_id)
        if other is None:
            continue
        old_criteria = [m.describe() for m in other.criteria]
        new_criteria = [m.describe() for m in info.criteria]
        if old_criteria != new_criteria:
            findings.append(
                finding(
                    "mismatch",
                    "warning",
                    f"Eval set {info.eval_set_id}: criteria differ ({', '.join(old_criteria) or 'none'} → "
                    f"{', '.join(new_criteria) or 'none'}) and the baseline was not re-scored; scores are compared "
                    "as recorded.",
                    key=None,
                )
            )
    return findings


def _listed_in(current: RunResult, key: CaseKey) -> bool:
    """A baseline case the current run lists but did not run is `missing_case` (step 0), not removed."""
    return any(info.eval_set_id == key[0] and key[1] in info.case_hashes for info in current.eval_sets)


def _content_hash(run: RunResult, key: CaseKey, results: Sequence[ScoredResult]) -> str:
    for result in results:
        if result.content_hash:
            return result.content_hash
    for info in run.eval_sets:
        if info.eval_set_id == key[0]:
            return info.case_hashes.get(key[1], "")
    return ""


# ------------------------------------------------------------------------------------- the paired data


@dataclass(frozen=True)
class PairedMetric:
    """One metric's per-case means over the paired cases."""

    keys: list[CaseKey]
    b: list[float]
    c: list[float]
    k_baseline: int
    k_current: int
    binary: bool
    """Every score is 0 or 1 and every case has exactly one scored repetition on both sides."""
    higher_is_better: bool
    groups: list[Hashable] | None = None
    """The cluster of each case (its label, or the case itself when unlabelled); None when no paired case has
    a label, i.e. the analysis is unclustered."""
    b_scores: list[list[float]] | None = None
    """Each case's scored repetitions on the baseline side (the suite bound reads their spread)."""
    c_scores: list[list[float]] | None = None
    """Each case's scored repetitions on the current side."""

    def oriented(self) -> list[float]:
        """d_i = c_i − b_i, sign reversed for lower-is-better metrics, so d_i < 0 always means worse."""
        sign = 1.0 if self.higher_is_better else -1.0
        return [sign * (c - b) for b, c in zip(self.b, self.c, strict=True)]

    def clusters(self, diffs: Sequence[float]) -> stats.Clusters | None:
        """D_g and n_g of the oriented differences, or None when unclustered."""
        return stats.group_by_cluster(diffs, self.groups) if self.groups is not None else None


def direction(ctx: GateContext, metric: str) -> bool:
    """Whether higher is better for `metric`, as the first result scoring it says (True when none does)."""
    for results in (ctx.current_results, ctx.baseline_results):
        for result in results:
            found = result.metric(metric)
            if found is not None:
                return found.higher_is_better
    return True


def pair_metric(ctx: GateContext, compared: Sequence[CaseKey], metric: str, higher_is_better: bool) -> PairedMetric:
    """`metric`'s b_i and c_i over the compared cases scored on both sides (step 5)."""
    worst = (
        _worst_value(ctx, metric, higher_is_better)
        if metric != CASE_PASS_METRIC and ctx.policy.errors in ("fail", "count_as_failure")
        else None
    )
    keys: list[CaseKey] = []
    b: list[float] = []
    c: list[float] = []
    b_scores: list[list[float]] = []
    c_scores: list[list[float]] = []
    k_b = k_c = 0
    binary = True
    for key in compared:
        before = case_scores(ctx, ctx.base[key], metric, worst)
        after = case_scores(ctx, ctx.cur[key], metric, worst)
        if not before or not after:
            continue
        keys.append(key)
        b.append(statistics.fmean(before))
        c.append(statistics.fmean(after))
        b_scores.append(before)
        c_scores.append(after)
        k_b, k_c = max(k_b, len(before)), max(k_c, len(after))
        binary = binary and len(before) == 1 and len(after) == 1
        binary = binary and all(s in (0.0, 1.0) for s in (*before, *after))
    return PairedMetric(
        keys=keys,
        b=b,
        c=c,
        k_baseline=k_b,
        k_current=k_c,
        binary=binary and bool(keys),
        higher_is_better=higher_is_better,
        groups=ctx.cluster_groups(keys),
        b_scores=b_scores,
        c_scores=c_scores,
    )


def case_scores(
    ctx: GateContext, results: Sequence[ScoredResult], metric: str, worst: float | None = None
) -> list[float]:
    """Scores of one case's repetitions for `metric`, errors handled per policy (steps 0 and 5).

    Under `errors` = fail or count_as_failure an errored repetition scores `worst` (0 for `case_pass`), and is
    left out when that is None; otherwise it is left out."""
    scores: list[float] = []
    for result in results:
        found = None if metric == CASE_PASS_METRIC else result.metric(metric)
        errored = result.status == "error" or (found is not None and found.status == "error")
        if errored:
            # Both sides alike, so identical runs with the same errors compare as equal.
            if ctx.policy.errors in ("fail", "count_as_failure"):
                score = 0.0 if metric == CASE_PASS_METRIC else worst
                if score is not None:
                    scores.append(score)
            continue
        if metric == CASE_PASS_METRIC:
            scores.append(1.0 if result.status == "passed" else 0.0)
        elif found is not None and found.score is not None:
            scores.append(found.score)
    return scores


def _worst_value(ctx: GateContext, metric: str, higher_is_better: bool) -> float | None:
    """The worst score an errored repetition takes under fail/count_as_failure: 0 when higher is better;
    for a lower-is-better metric the largest value seen in either run (never its best value), None when it
    was never scored (the repetition is then left out)."""
    if higher_is_better:
        return 0.0
    seen = [
        m.score
        for results in (ctx.current_results, ctx.baseline_results)
        for r in results
        if (m := r.metric(metric)) is not None and m.score is not None
    ]
    return max(seen) if seen else None
