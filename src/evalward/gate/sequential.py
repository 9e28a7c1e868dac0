"""Two looks sharing α: the first at the run as it ran, the second after a top-up (docs/gate.md §6).

The gate may look twice at a pull request: once at the run as it ran, and, when that first look neither blocks nor
shows non-inferiority, or a case looks newly broken, once more after the agent ran again. Both looks may block, so
they share the false-alarm rate α by a stated **spending rule, the Bonferroni split**: the first look is judged at
α₁ = `first_look_share` · α, the second at α₂ = α − α₁. By the union bound a change that made nothing worse fails
at either look with probability at most α₁ + α₂ = α, whatever the looks' dependence and whatever the top-up
chose to run after seeing the first. Where no second look can happen (no agent at hand, a replay agent, the top-up
turned off — all known before the first look), the single look gets the whole α.

What the second look tests, each part valid given everything the first look saw:

- **The aggregate** (each gated metric, and the error rate): the inverse-normal combination of the first look's
  p-value p₁ and the p-value p₂ of the same test on the top-up's own repetitions alone,
  p = 1 − Φ(w₁·Φ⁻¹(1 − p₁) + w₂·Φ⁻¹(1 − p₂)), w₁² = k/k_max fixed before the first look (the share of
  repetitions the first look holds if the top-up goes to k_max), w₂² = 1 − w₁². The fresh repetitions are
  independent of the first look, so p₂ is a valid p-value whatever the top-up chose, and the combination is
  uniform when nothing changed: the top-up may adapt how many repetitions it adds. A top-up on the current side
  alone has no p₂: the aggregate is then not tested again (it can still pass).
- **Suspect cases** (every baseline repetition passed, every current one failed at the first look) are re-run
  with fresh repetitions on both sides and tested on those alone (the newly-broken count test of
  `gate.stratified`): choosing a case by its outcome and testing it on the same repetitions would count the
  outcome twice. A case that breaks again is newly broken; a flaky one that recovers is not blamed.

The pass rule reads every first-look repetition and the even top-up's (never a suspect's extra confirmations: a
case chosen by its outcome and given more repetitions than the others pulls the mean toward its true value while
the rest keep theirs, which biases Δ̂ toward 0).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from evalward.gate.findings import plural
from evalward.gate.gate_context import single_look, sub_seed
from evalward.gate.policy import GatePolicy
from evalward.gate.suite import projected_bound, zero_failure_bound
from evalward.model import CaseResult, RunResult
from evalward.model.cases import CaseKey
from evalward.model.records import in_key_order, iter_record_keys, joined
from evalward.model.verdict import CaseDiagnostic, Finding, Look, MetricComparison, Verdict

_NORMAL = NormalDist()

_P_FLOOR = 1e-300
"""p-values are clipped into [_P_FLOOR, 1 − 1e-16] before Φ⁻¹ (an exact test can return 0 or 1)."""

NOT_COMPARED = frozenset({"new", "removed", "changed"})

MIN_CONFIRM_REPETITIONS = 5
"""Fresh repetitions a suspect gets on each side at least: enough that one flaky case rarely looks broken again
(a coin flip does with probability 2⁻¹⁰)."""

MAX_CONFIRM_REPETITIONS = 20


def plan_looks(policy: GatePolicy, *, agent_can_run: bool, cases: int, repetitions: int) -> Look:
    """The first look, with the levels of both, decided before the first from the design alone: two looks where the
    agent can run again here and the top-up is on, else one at the whole α and α_pass.

    With two looks, α splits `first_look_share` : the rest, and so does α_pass, except that a first look that could
    not pass whatever it saw gives its share of α_pass to the second: even `cases` × `repetitions` current
    repetitions that all passed bound the drop only by ZF(n·k, share·α_pass) (`gate.suite`), and when that exceeds
    δ_ni the first look cannot show non-inferiority. Example: 20 cases × 1, ZF(20, 0.01) = 0.206 > 0.05, so the
    second look gets all of α_pass = 0.05 and a top-up to 3 repetitions can pass (ZF(60, 0.05) = 0.0487)."""
    alpha, alpha_pass = policy.alpha, policy.alpha_pass
    if not (agent_can_run and policy.top_up.enabled):
        return single_look(policy)
    share = policy.top_up.first_look_share
    first_pass = alpha_pass * share
    widest_margin = max([policy.delta_ni, *(o.delta_ni for o in policy.overrides.values() if o.delta_ni is not None)])
    if zero_failure_bound(max(1, cases * repetitions), first_pass) > widest_margin:
        first_pass = 0.0
    return Look(
        index=1,
        planned=2,
        alpha=alpha,
        alpha_first=alpha * share,
        alpha_second=alpha - alpha * share,
        alpha_pass=alpha_pass,
        alpha_pass_first=first_pass,
        alpha_pass_second=alpha_pass - first_pass,
    )


def second(look: Look) -> Look:
    """The second look of a two-look plan."""
    if look.planned != 2:
        raise ValueError("a second look needs a plan of two looks")
    return look.model_copy(update={"index": 2})


def first_look_weight(repetitions: int, max_repetitions: int) -> float:
    """w₁ = √(k / k_max): the first look's share of the repetitions a full top-up would reach (fixed by the design,
    never by the data, so the combination stays valid)."""
    if max_repetitions <= repetitions:
        return 1.0
    return math.sqrt(repetitions / max_repetitions)


def combine_p(p_first: float, p_top_up: float, weight_first: float) -> float:
    """The inverse-normal combination p = 1 − Φ(w₁·Φ⁻¹(1 − p₁) + w₂·Φ⁻¹(1 − p₂)), w₂ = √(1 − w₁²).

    Example: p₁ = 0.01, p₂ = 0.05, w₁ = w₂ = √½ → z = (2.326 + 1.645)/√2 = 2.808, p = 0.0025."""
    w2 = math.sqrt(max(0.0, 1.0 - weight_first * weight_first))
    z = weight_first * _z(p_first) + w2 * _z(p_top_up)
    return min(1.0, max(0.0, 1.0 - _NORMAL.cdf(z)))


def _z(p: float) -> float:
    return _NORMAL.inv_cdf(1.0 - min(max(p, _P_FLOOR), 1.0 - 1e-16))


def confirm_repetitions(policy: GatePolicy, look: Look, suspects: int) -> int:
    """Fresh repetitions per side for each suspect: the policy's, else the fewest r ≥ `MIN_CONFIRM_REPETITIONS` with
    which every suspect breaking again is significant at the newly-broken test's share of the second look's level:
    (1/C(2r, r))^m < α₂ · newly_broken_share. At the defaults (α₂ = 0.004, share 0.1): r = 7 for one suspect
    (1/3432 ≈ 0.00029 < 0.0004), 5 for two or more."""
    if policy.top_up.confirm_repetitions is not None:
        return policy.top_up.confirm_repetitions
    target = look.alpha_second * max(policy.newly_broken_share, 1e-9)
    for r in range(MIN_CONFIRM_REPETITIONS, MAX_CONFIRM_REPETITIONS + 1):
        if max(1, suspects) * math.log(math.comb(2 * r, r)) > -math.log(target):
            return r
    return MAX_CONFIRM_REPETITIONS


@dataclass(frozen=True)
class TopUpPlan:
    """What the second look runs: suspects confirmed on both sides, even repetitions for the aggregate."""

    suspects: tuple[CaseKey, ...]
    """Cases re-run `confirm_repetitions` times on each side, tested on those repetitions alone."""
    confirm_repetitions: int
    cases: tuple[CaseKey, ...]
    """Cases given `extra_repetitions` more repetitions for the aggregate (every compared case, unless a budget
    cuts the list)."""
    extra_repetitions: int
    head_only: bool
    """The even repetitions run on the current side only."""
    weight_first: float
    """w₁ of the combination test."""

    @property
    def confirm_runs(self) -> int:
        return len(self.suspects) * self.confirm_repetitions * 2

    @property
    def even_runs(self) -> int:
        return len(self.cases) * self.extra_repetitions * (1 if self.head_only else 2)

    @property
    def agent_runs(self) -> int:
        return self.confirm_runs + self.even_runs


def blocking_besides_strict(verdict: Verdict) -> list[Finding]:
    """The blocking findings other than `strict`'s (which fails an inconclusive verdict and is not evidence)."""
    return [f for f in verdict.findings if f.severity == "blocking" and f.kind != "inconclusive"]


def undecided_metrics(verdict: Verdict) -> list[MetricComparison]:
    """The gated metrics (guards excepted: they never make a verdict inconclusive) left inconclusive."""
    return [m for m in verdict.metrics if m.gated and not m.guard and m.verdict == "inconclusive"]


def suspects_of(verdict: Verdict) -> list[CaseKey]:
    """Compared cases that passed every baseline repetition and no current one: they look newly broken."""
    return [
        (c.eval_set_id, c.case_id)
        for c in verdict.cases
        if c.label not in NOT_COMPARED
        and not c.quarantined
        and c.baseline_k
        and c.current_k
        and c.baseline_passes == c.baseline_k
        and c.current_passes == 0
    ]


def plan_top_up(
    verdict: Verdict,
    policy: GatePolicy,
    *,
    repetitions: int,
    base_side: bool,
    cost_per_run: float | None = None,
) -> tuple[TopUpPlan | None, str]:
    """What the second look should run after `verdict` (the first look), or None and why not.

    `repetitions`: the run's repetitions per case (k); `base_side`: whether the base side can run here;
    `cost_per_run`: the mean recorded cost of one agent run (US dollars), which turns `max_cost_usd` into runs.

    - Suspects (`suspects_of`) are confirmed when the base side can run, `confirm_repetitions` each side.
    - When a gated metric is undecided, every compared case gets e more repetitions: the fewest (up to k_max − k)
      with which the suite bound, projected from the first look's data (the means kept, the noise shrunk as more
      repetitions would shrink it), reaches δ_ni; k_max − k when none does, so a real drop meets the most evidence.
      On the current side only when every compared case passed every repetition on both sides (only the zero-failure
      bound over the current side is missing), or when the base side cannot run.
    - The policy's `max_runs` / `max_cost_usd` cap it: confirmations first, then fewer even repetitions, then
      fewer cases (those known to flip on the base branch first, then an order drawn from the verdict's seed)."""
    settings = policy.top_up
    look = verdict.look
    if look is None or look.planned < 2 or look.index != 1:
        return None, "only one look was planned (the agent cannot run again here, or the top-up is off)"
    if verdict.outcome == "error":
        return None, "the first look reached no verdict"
    if blocking_besides_strict(verdict):
        return None, "the first look already blocks"
    open_metrics = undecided_metrics(verdict)
    suspects = suspects_of(verdict) if base_side else []
    confirm = confirm_repetitions(policy, look, len(suspects)) if suspects else 0
    compared = top_up_order(verdict, policy.flaky_flip_rate)
    current_k = max([repetitions, *(c.current_k or 0 for c in verdict.cases if c.label not in NOT_COMPARED)])
    room = settings.max_repetitions - current_k
    # On the current side only when nothing failed anywhere at the first look: only the zero-failure bound over the
    # current side's repetitions is then missing, and base-side repetitions would add nothing to it. Once the current
    # side has failed somewhere the base side runs too, so the second look can test the change (and block it).
    head_only = not base_side or all(
        c.baseline_k and c.baseline_passes == c.baseline_k and c.current_k and c.current_passes == c.current_k
        for c in verdict.cases
        if c.label not in NOT_COMPARED and not c.quarantined
    )
    extra = (
        _even_repetitions(open_metrics, current_k, room, head_only, look.alpha_pass_second)
        if open_metrics and room > 0
        else 0
    )
    if not suspects and not extra:
        if not open_metrics:
            return None, "the first look decided"
        if room <= 0:
            return None, (
                f"the cases already ran {current_k} times, the top-up's limit (gate.top_up.max_repetitions = "
                f"{settings.max_repetitions})"
            )
        return None, "no case was compared"
    budget = _budget(settings.max_runs, settings.max_cost_usd, cost_per_run)
    cases: tuple[CaseKey, ...] = tuple(compared) if extra else ()
    plan = TopUpPlan(
        suspects=tuple(suspects),
        confirm_repetitions=confirm,
        cases=cases,
        extra_repetitions=extra,
        head_only=head_only,
        weight_first=first_look_weight(current_k, settings.max_repetitions),
    )
    if budget is None or plan.agent_runs <= budget:
        return plan, ""
    return _within(plan, budget)


def _even_repetitions(
    open_metrics: Sequence[MetricComparison], k: int, room: int, head_only: bool, alpha_pass: float
) -> int:
    """The fewest extra repetitions (1 … room) with which every undecided metric's projected suite bound reaches
    its δ_ni; `room` when none does (or a metric has no suite bound: the population frame)."""
    for extra in range(1, room + 1):
        factor = (k + extra) / k
        if all(
            m.bound is not None
            and projected_bound(
                m.bound, baseline_factor=1.0 if head_only else factor, current_factor=factor, alpha_pass=alpha_pass
            )
            <= m.delta_ni + 1e-12
            for m in open_metrics
        ):
            return extra
    return room


def _budget(max_runs: int | None, max_cost_usd: float | None, cost_per_run: float | None) -> int | None:
    budget = max_runs
    if max_cost_usd is not None and cost_per_run:
        affordable = math.floor(max_cost_usd / cost_per_run + 1e-9)
        budget = affordable if budget is None else min(budget, affordable)
    return budget


def _within(plan: TopUpPlan, budget: int) -> tuple[TopUpPlan | None, str]:
    """`plan` cut to `budget` agent runs: confirmations first, then fewer even repetitions, then fewer cases."""
    per_suspect = plan.confirm_repetitions * 2
    suspects = plan.suspects[: budget // per_suspect] if per_suspect else ()
    left = budget - len(suspects) * per_suspect
    sides = 1 if plan.head_only else 2
    cases, extra = plan.cases, plan.extra_repetitions
    if cases:
        extra = min(extra, left // (sides * len(cases)))
        if extra < 1:
            extra = 1
            cases = cases[: left // sides]
    if not cases:
        extra = 0
    if not suspects and not cases:
        return None, f"one more repetition of one case is more than the budget ({budget} agent runs)"
    return (
        TopUpPlan(
            suspects=tuple(suspects),
            confirm_repetitions=plan.confirm_repetitions,
            cases=tuple(cases),
            extra_repetitions=extra,
            head_only=plan.head_only,
            weight_first=plan.weight_first,
        ),
        "",
    )


def top_up_order(verdict: Verdict, flaky_flip_rate: float) -> list[CaseKey]:
    """The compared cases in the order a capped even top-up takes them: cases known to flip on the base branch
    first (history, most flipping first), then an order drawn from the verdict's seed — never by this comparison's
    own results: averaging extra repetitions of the cases that came out worse with their first one pulls exactly
    those toward their true difference while the rest keep an observed difference of zero, which biases Δ̂ toward
    0 (docs/gate.md §6)."""
    compared = [c for c in verdict.cases if c.label not in NOT_COMPARED and not c.quarantined]
    seed = sub_seed(verdict.seed, "top_up")

    def rank(case: CaseDiagnostic) -> tuple[int, float, str]:
        known = case.flip_rate is not None and case.flip_rate >= flaky_flip_rate
        draw = hashlib.sha256(f"{seed}|{case.eval_set_id}|{case.case_id}".encode()).hexdigest()
        return (0 if known else 1, -(case.flip_rate or 0.0) if known else 0.0, draw)

    return [(c.eval_set_id, c.case_id) for c in sorted(compared, key=rank)]


@dataclass(frozen=True)
class SecondLookInputs:
    """What `gate.decide` needs at the second look besides the cumulative runs (the first look's repetitions plus
    the even top-up's)."""

    first: Verdict
    """The first look's verdict: its tests' p-values p₁ and its suspects."""
    weight_first: float
    fresh: tuple[RunResult, RunResult] | None
    """The even top-up's own repetitions (current, baseline) when both sides ran, else None."""
    confirm: tuple[RunResult, RunResult] | None
    """The suspects' fresh repetitions (current, baseline), when they were re-run."""

    def first_p(self) -> Mapping[str, float]:
        """The first look's raw p-value of each test that shares α (the gated metrics' and the error rate's)."""
        return {m.metric: m.p_value for m in self.first.metrics if m.gated and m.p_value is not None}


def next_repetition(run: RunResult, cases: Sequence[CaseKey]) -> int:
    """The first repetition number none of `cases` has used in `run` (a top-up numbers its runs from here, so an
    agent seeded by the repetition draws anew)."""
    wanted = set(cases)
    return max((key[2] + 1 for key in iter_record_keys(run.cases) if (key[0], key[1]) in wanted), default=0)


def with_more_repetitions(run: RunResult, extra: Sequence[CaseResult]) -> RunResult:
    """`run` with `extra` results added as further repetitions of their cases; a repetition number the run has
    already used is a programming error (the top-up numbers its runs after the run's own)."""
    if not extra:
        return run
    wanted = {(r.eval_set_id, r.case_id) for r in extra}
    used = {key for key in iter_record_keys(run.cases) if (key[0], key[1]) in wanted}
    clashes = [r.key for r in extra if r.key in used]
    if clashes:
        raise ValueError(f"the top-up reused repetition numbers of the run: {clashes[:3]}")
    return run.model_copy(update={"cases": in_key_order(joined(run.cases, list(extra)))})


def only(run: RunResult, results: Sequence[CaseResult]) -> RunResult:
    """`run`'s header (eval sets, context, agent) holding only `results`: a top-up's own repetitions as a run."""
    return run.model_copy(update={"cases": in_key_order(list(results))})


@dataclass(frozen=True)
class TopUpResults:
    """What the top-up ran, per part and side (empty where a part or side did not run)."""

    confirm_current: Sequence[CaseResult] = ()
    confirm_baseline: Sequence[CaseResult] = ()
    even_current: Sequence[CaseResult] = ()
    even_baseline: Sequence[CaseResult] = ()

    @property
    def current_runs(self) -> int:
        return len(self.confirm_current) + len(self.even_current)

    @property
    def baseline_runs(self) -> int:
        return len(self.confirm_baseline) + len(self.even_baseline)


def what_ran(plan: TopUpPlan, ran: TopUpResults) -> str:
    """The top-up's runs in a few words, e.g. "3 suspect cases re-run 7 times on each side; 20 cases 2 more times
    on this side only (82 agent runs)"."""
    parts: list[str] = []
    if ran.confirm_current:
        parts.append(
            f"{plural(len(plan.suspects), 'suspect case')} re-run {plan.confirm_repetitions} times on each side"
        )
    if ran.even_current:
        where = "on each side" if ran.even_baseline else "on this side only"
        times = "time" if plan.extra_repetitions == 1 else "times"
        parts.append(f"{plural(len(plan.cases), 'case')} {plan.extra_repetitions} more {times} {where}")
    total = ran.current_runs + ran.baseline_runs
    return "; ".join(parts) + f" ({plural(total, 'agent run')})"


def top_up_message(first: Verdict, second_verdict: Verdict, plan: TopUpPlan, ran: TopUpResults) -> str:
    """One or two plain sentences: why the second look happened, what ran, what it decided."""
    why = []
    if plan.suspects:
        why.append(f"{plural(len(plan.suspects), 'case')} looked newly broken")
    if plan.extra_repetitions:
        why.append("the first look could neither block nor show non-inferiority")
    level = second_verdict.look.alpha_second if second_verdict.look is not None else 0.0
    return (
        f"At the first look {' and '.join(why) or 'the verdict was open'}; the top-up ran {what_ran(plan, ran)} and "
        f"the second look, at level {level:.4g} of α = {first.alpha:g}, decided: {second_verdict.outcome}."
    )
