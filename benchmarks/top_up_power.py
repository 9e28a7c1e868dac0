"""What the top-up of an inconclusive verdict buys and what it costs, under the default policy, side by side.

Each trial builds a baseline and a candidate run as `gate_power.py` does (one turn per case, ADK's
`tool_trajectory_avg_score` at threshold 1.0, per-case pass probabilities from Beta(4, 1)) and asks `gate.decide`
with `GatePolicy()`. When that first verdict is undecided, the top-up's own functions take over
(`_gating.top_up.plan_top_up`: which cases, how many repetitions within the budget; `settle`: which verdict
stands): the chosen cases get their extra repetitions on both sides, drawn from the same per-case probabilities,
and `decide` runs again. Printed per situation: the outcome rates without the top-up (the first verdict) and
with it (the verdict that stands), and the agent runs the top-up spent on average when it ran.

What to read: on an unchanged agent, "inconclusive" should turn into "pass" while "fail" never rises (the top-up
cannot create a regression); on a true drop of 10 points (twice δ_ni), "pass" is a false pass and must stay
rare; a drop of δ_ni itself (5 points) is the margin, where either answer is defensible.

    python benchmarks/top_up_power.py                # 100 trials per situation (a few minutes)
    python benchmarks/top_up_power.py --trials 30    # a quicker look
    python benchmarks/top_up_power.py --max-runs 300 --max-repetitions 10   # another budget
    python benchmarks/top_up_power.py --design targeted   # rerun only the discordant cases: biased, see below
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_power import Side, beta, dropped, run_of, same, wilson

from evalward._gating import top_up as top_up_module
from evalward._gating.top_up import TopUpPlan, plan_top_up, settle, undecided, with_more_repetitions
from evalward.gate import GatePolicy, decide
from evalward.model import CaseResult, Verdict


@dataclass(frozen=True)
class Situation:
    name: str
    cases: int
    repeat: int
    make: Callable[[random.Random, int], tuple[Side, Side]]
    should: str


SITUATIONS = [
    Situation("null-60x1", 60, 1, lambda rng, n: same(beta(rng, n)), "not fail"),
    Situation("null-100x1", 100, 1, lambda rng, n: same(beta(rng, n)), "not fail"),
    Situation("null-30x3", 30, 3, lambda rng, n: same(beta(rng, n)), "not fail"),
    Situation("drop5-60x1", 60, 1, lambda rng, n: dropped(beta(rng, n), 0.05), "either (the margin)"),
    Situation("drop10-60x1", 60, 1, lambda rng, n: dropped(beta(rng, n), 0.10), "not pass"),
    Situation("drop10-100x3", 100, 3, lambda rng, n: dropped(beta(rng, n), 0.10), "not pass"),
]


def targeted_plan(
    verdict: Verdict, policy: GatePolicy, *, repetitions: int, base_side: bool
) -> tuple[TopUpPlan | None, str]:
    """The design `--design targeted` measures (and evalward rejects): only the cases this comparison found
    discordant (|c_i − b_i| > 0, largest first) or mixed on a side, each raised to k_max, within the budget."""
    open_metrics = top_up_module.inconclusive_metrics(verdict)
    ranked: list[tuple[float, str, str]] = []
    for case in verdict.cases:
        if case.label in ("new", "removed", "changed") or case.quarantined:
            continue
        gaps = [
            abs(c - b)
            for m in open_metrics
            if (c := case.current_scores.get(m)) is not None and (b := case.baseline_scores.get(m)) is not None
        ]
        mixed = any(
            passes is not None and k is not None and 0 < passes < k
            for passes, k in ((case.current_passes, case.current_k), (case.baseline_passes, case.baseline_k))
        )
        if max(gaps, default=0.0) > 0 or mixed:
            ranked.append((-max(gaps, default=0.0), case.eval_set_id, case.case_id))
    extra = policy.top_up.max_repetitions - repetitions
    per_case = extra * (2 if base_side else 1)
    if extra <= 0 or not ranked or policy.top_up.max_runs < per_case:
        return None, "nothing to top up"
    chosen = tuple((s, c) for _, s, c in sorted(ranked))[: policy.top_up.max_runs // per_case]
    return TopUpPlan(cases=chosen, extra_repetitions=extra, base_side=base_side), ""


def more_of(run_id: str, side: Side, chosen: TopUpPlan, first: int, rng: random.Random) -> list[CaseResult]:
    """The chosen cases' extra repetitions, numbered from `first` (as the top-up numbers them)."""
    wanted = {case_id for _, case_id in chosen.cases}
    drawn = run_of(run_id, side, chosen.extra_repetitions, rng).cases
    return [
        result.model_copy(update={"repetition": first + result.repetition})
        for result in drawn
        if result.case_id in wanted
    ]


def trial(
    situation: Situation, rng: random.Random, index: int, policy: GatePolicy, plan: Callable[..., Any], seed: int
) -> tuple[str, str, int]:
    """(first outcome, outcome that stands, agent runs the top-up spent)."""
    base_side, head_side = situation.make(rng, situation.cases)
    head = run_of(f"h{index}", head_side, situation.repeat, rng)
    base = run_of(f"b{index}", base_side, situation.repeat, rng)
    first = decide(head, base, policy)
    if not undecided(first):
        return first.outcome, first.outcome, 0
    chosen, _ = plan(first, policy, repetitions=situation.repeat, base_side=True)
    if chosen is None:
        return first.outcome, first.outcome, 0
    # the top-up's draws come from a generator of their own, so every design sees the same first verdicts
    extra_rng = random.Random(f"{seed}:{situation.name}:{index}:top-up")
    extra_head = more_of(f"h{index}+", head_side, chosen, situation.repeat, extra_rng)
    extra_base = more_of(f"b{index}+", base_side, chosen, situation.repeat, extra_rng)
    second = decide(with_more_repetitions(head, extra_head), with_more_repetitions(base, extra_base), policy)
    final: Verdict = settle(first, second, chosen, len(extra_head), len(extra_base))
    return first.outcome, final.outcome, len(extra_head) + len(extra_base)


@dataclass
class Tally:
    firsts: Counter[str]
    """Outcomes without the top-up (the first verdicts)."""
    finals: Counter[str]
    """Outcomes that stand with it."""
    spent: list[int]
    """Agent runs of each top-up that ran."""


def measure(
    situation: Situation, trials: int, seed: int, policy: GatePolicy, plan: Callable[..., Any] = plan_top_up
) -> Tally:
    """`trials` trials of `situation`; raises if a top-up ever turned a verdict into a fail."""
    rng = random.Random(f"{seed}:{situation.name}")
    tally = Tally(Counter(), Counter(), [])
    for index in range(trials):
        first, final, runs = trial(situation, rng, index, policy, plan, seed)
        tally.firsts[first] += 1
        tally.finals[final] += 1
        if runs:
            tally.spent.append(runs)
        # the top-up may narrow, never create a regression
        if final == "fail" and first != "fail":
            raise AssertionError(f"{situation.name} trial {index}: a top-up made a fail")
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=100, help="trials per situation")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="situation names to run")
    parser.add_argument("--max-repetitions", type=int, help="gate.top_up.max_repetitions (default: the policy's)")
    parser.add_argument("--max-runs", type=int, help="gate.top_up.max_runs (default: the policy's)")
    parser.add_argument(
        "--design",
        choices=("evalward", "targeted"),
        default="evalward",
        help="`targeted`: only the cases this comparison found discordant or mixed, each raised to k_max: shows why "
        "the top-up never chooses cases by the comparison's own results",
    )
    args = parser.parse_args()
    plan = targeted_plan if args.design == "targeted" else plan_top_up
    settings = {"max_repetitions": args.max_repetitions, "max_runs": args.max_runs}
    policy = GatePolicy.model_validate({"top_up": {k: v for k, v in settings.items() if v is not None}})
    print(
        f"default policy but the top-up (k_max {policy.top_up.max_repetitions}, budget {policy.top_up.max_runs} runs, "
        f"design {args.design}), "
        f"{args.trials} trials per situation, seed {args.seed}\n"
    )
    print("| situation | should | without top-up: fail / inconclusive / pass | with top-up | runs spent | s |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for situation in SITUATIONS:
        if args.only and situation.name not in args.only:
            continue
        started = time.perf_counter()
        tally = measure(situation, args.trials, args.seed, policy, plan)

        def rates(counts: Counter[str]) -> str:
            return " / ".join(f"{counts[o] / args.trials:.0%}" for o in ("fail", "inconclusive", "pass"))

        lo, hi = wilson(tally.finals["pass"], args.trials)
        mean_runs = f"{sum(tally.spent) / len(tally.spent):.0f}" if tally.spent else "—"
        print(
            f"| {situation.name} | {situation.should} | {rates(tally.firsts)} | {rates(tally.finals)} (pass 95% CI "
            f"[{lo:.0%}, {hi:.0%}]) | {mean_runs} | {time.perf_counter() - started:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
