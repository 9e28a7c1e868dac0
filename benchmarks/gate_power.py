"""Gate power under the **default policy**, as a new adopter gets it: how often it fails, passes or stays
inconclusive, and what a pull request costs in agent runs, per situation.

Each trial draws a baseline run and a candidate run (`RunResult`s as `evalward run` records them: one turn per
case, ADK's `tool_trajectory_avg_score` at its default threshold 1.0, so a repetition passes exactly when the agent
made the expected call) and gates them the way `evalward ci` does with a fresh history and the base side run on
demand: the first look (`gate.sequential.plan_looks`, then `gate.decide`), the top-up's plan (`plan_top_up`) and
the second look (`run_second_look`) — the same functions, with the agent replaced by draws from the same per-case
probabilities (the top-up's repetitions are drawn anew). `GatePolicy()` unchanged. Per-case pass probabilities
come from Beta(4, 1) (mean 0.8, docs/gate.md §10) unless a scenario says otherwise. Two scenarios go through the
history database (`_gating.flow.plan_baseline` + `finish_gate`, no agent at hand: one look) because what they
test is baseline selection.

Printed per scenario: the shares of fail, inconclusive, pass and error, a Wilson 95% interval on the fail rate, the
share decided at the second look, the mean agent runs per pull request as a multiple of one run of the suite
(cases × repetitions; the run + the base side + the top-up, no carried history), the goal and whether it was met.

    python benchmarks/gate_power.py                 # every scenario, 200 trials (×5 for most unchanged agents)
    python benchmarks/gate_power.py --trials 50     # a quicker look
    python benchmarks/gate_power.py --only flaky-few drop10-100x3

A statistical simulation, not a timing: nothing here depends on the machine's speed or load (it runs in this
process, and no figure printed is a time; the load average is printed at the start and the end all the same).
`tests/benchmarks/test_gate_power.py` runs a reduced version with fixed seeds in CI.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalward.gate import GatePolicy, decide
from evalward.gate.second_look_rules import run_second_look
from evalward.gate.sequential import plan_looks, plan_top_up
from evalward.model import (
    AgentTarget,
    CaseError,
    CaseResult,
    EvalSetInfo,
    MetricResult,
    MetricSpec,
    RunContext,
    RunResult,
    Verdict,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import load_average  # a sibling script, found through the path above

METRIC = "tool_trajectory_avg_score"
SET = "bench"
STARTED = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Side:
    """One side's behaviour: per case, the probability a repetition passes and the probability it errors."""

    passes: list[float]
    errors: list[float]


def case_id(index: int) -> str:
    return f"case-{index:04d}"


def draw(side: Side, indices: Sequence[int], first: int, count: int, rng: random.Random) -> list[CaseResult]:
    """Repetitions `first` … `first + count − 1` of the cases at `indices`, drawn from `side`."""
    results: list[CaseResult] = []
    for i in indices:
        p, e = side.passes[i], side.errors[i]
        for rep in range(first, first + count):
            if rng.random() < e:
                results.append(
                    CaseResult(
                        eval_set_id=SET,
                        case_id=case_id(i),
                        repetition=rep,
                        status="error",
                        error=CaseError(kind="timeout", message="turn 0 did not finish within 60s"),
                        content_hash=f"h{i}",
                    )
                )
                continue
            ok = rng.random() < p
            results.append(
                CaseResult(
                    eval_set_id=SET,
                    case_id=case_id(i),
                    repetition=rep,
                    status="passed" if ok else "failed",
                    metric_results=[
                        MetricResult(
                            name=METRIC, score=1.0 if ok else 0.0, threshold=1.0, status="passed" if ok else "failed"
                        )
                    ],
                    content_hash=f"h{i}",
                )
            )
    return results


def run_of(run_id: str, side: Side, repeat: int, rng: random.Random, *, target: str = "agent.py:run") -> RunResult:
    n = len(side.passes)
    info = EvalSetInfo(
        eval_set_id=SET,
        format="adk_evalset",
        content_hash="set",
        criteria=[MetricSpec(name=METRIC, threshold=1.0)],
        case_hashes={case_id(i): f"h{i}" for i in range(n)},
        case_input_hashes={case_id(i): f"in{i}" for i in range(n)},
    )
    return RunResult(
        run_id=run_id,
        passed=False,
        repetitions=repeat,
        started_at=STARTED,
        agent=AgentTarget(kind="python", target=target, config_hash=target),
        eval_sets=[info],
        cases=draw(side, range(n), 0, repeat, rng),
        evalward_version="0.2.0",
    )


def beta(rng: random.Random, n: int, a: float = 4.0, b: float = 1.0) -> list[float]:
    return [rng.betavariate(a, b) for _ in range(n)]


@dataclass(frozen=True)
class Outcome:
    """One trial: the verdict and the agent runs it cost (the run, the base side, the top-up)."""

    verdict: Verdict
    agent_runs: int
    one_run: int
    """cases × repetitions: one run of the suite."""


def gated(base: Side, head: Side, repeat: int, rng: random.Random, index: int, policy: GatePolicy) -> Outcome:
    """The two looks as `evalward ci` takes them, the base side run on demand and the top-up's runs drawn."""
    n = len(head.passes)
    current, baseline = run_of(f"h{index}", head, repeat, rng), run_of(f"b{index}", base, repeat, rng)
    look = plan_looks(policy, agent_can_run=True, cases=n, repetitions=repeat)
    first = decide(current, baseline, policy, look=look)
    spent = 2 * n * repeat
    plan, _ = plan_top_up(first, policy, repetitions=repeat, base_side=True)
    if plan is None:
        return Outcome(first, spent, n * repeat)

    def run_more(
        cases: Sequence[tuple[str, str]], start: int, count: int, both: bool
    ) -> tuple[list[CaseResult], list[CaseResult]]:
        indices = [int(key[1].removeprefix("case-")) for key in cases]
        return draw(head, indices, start, count, rng), draw(base, indices, start, count, rng) if both else []

    second = run_second_look(first, current, baseline, policy, plan, run_more)
    added = second.top_up.current_runs + second.top_up.baseline_runs if second.top_up is not None else 0
    return Outcome(second, spent + added, n * repeat)


@dataclass(frozen=True)
class Goal:
    """What a scenario must show: bounds on the outcome shares and on the agent runs per PR (× one run)."""

    fail_at_least: float | None = None
    fail_at_most: float | None = None
    pass_at_least: float | None = None
    pass_at_most: float | None = None
    runs_at_most: float | None = None
    margin: bool = False
    """A drop of exactly δ_ni, where the promise is "passes at most α_pass of the time" and a good design sits right
    at it: met unless the pass rate is significantly above (its Wilson interval lies above the bound)."""

    def text(self) -> str:
        parts = []
        if self.fail_at_least is not None:
            parts.append(f"fail ≥ {self.fail_at_least:.0%}")
        if self.fail_at_most is not None:
            parts.append(f"fail ≤ {self.fail_at_most:.0%}")
        if self.pass_at_least is not None:
            parts.append(f"pass ≥ {self.pass_at_least:.0%}")
        if self.pass_at_most is not None:
            parts.append(f"pass ≤ {self.pass_at_most:.0%}" + (" (not significantly above)" if self.margin else ""))
        if self.runs_at_most is not None:
            parts.append(f"runs ≤ {self.runs_at_most:g}×")
        return ", ".join(parts) or "—"

    def met(self, tally: Tally) -> bool:
        checks = [
            self.fail_at_least is None or tally.rate("fail") >= self.fail_at_least,
            self.fail_at_most is None or tally.rate("fail") <= self.fail_at_most,
            self.pass_at_least is None or tally.rate("pass") >= self.pass_at_least,
            self.pass_at_most is None
            or (wilson(tally.outcomes["pass"], tally.trials)[0] if self.margin else tally.rate("pass"))
            <= self.pass_at_most,
            self.runs_at_most is None or tally.runs_per_pr <= self.runs_at_most,
        ]
        return all(checks)


Trial = Callable[[random.Random, int], Outcome]


@dataclass(frozen=True)
class Scenario:
    name: str
    situation: str
    goal: Goal
    trial: Trial
    weight: int = 1
    """Trials as a multiple of `--trials`: a false-fail goal of 1% needs ≥ 1,000 trials to be seen."""


def paired(repeat: int, make: Callable[[random.Random], tuple[Side, Side]]) -> Trial:
    def trial(rng: random.Random, index: int) -> Outcome:
        base, head = make(rng)
        return gated(base, head, repeat, rng, index, GatePolicy())

    return trial


def stable(n: int) -> list[float]:
    return [1.0] * n


def zeros(n: int) -> list[float]:
    return [0.0] * n


def same(passes: list[float], errors: float = 0.0) -> tuple[Side, Side]:
    side = Side(passes, [errors] * len(passes))
    return side, side


def dropped(passes: list[float], drop: float) -> tuple[Side, Side]:
    return Side(passes, zeros(len(passes))), Side([max(0.0, p - drop) for p in passes], zeros(len(passes)))


def flaky_few(n: int, flaky: int, p: float = 0.5) -> list[float]:
    return [p] * flaky + [1.0] * (n - flaky)


def broken(base: list[float], cases: int) -> tuple[Side, Side]:
    """The first `cases` go from always passing to never passing; the rest behave as `base` says on both sides."""
    before = [1.0] * cases + base[cases:]
    after = [0.0] * cases + base[cases:]
    return Side(before, zeros(len(base))), Side(after, zeros(len(base)))


def errors_hide(n: int) -> tuple[Side, Side]:
    # the baseline's agent errors on cases 0–9; the candidate fixes them and breaks cases 10–19
    passes = flaky_few(n, 10, 0.5)[::-1]  # a few flaky cases at the end
    base = Side(passes, [1.0] * 10 + zeros(n - 10))
    head = Side([1.0] * 10 + [0.0] * 10 + passes[20:], zeros(n))
    return base, head


def clustered_trial(rng: random.Random, index: int) -> Outcome:
    """30 identical-behaviour cases in 3 clusters: can the gate claim anything with G = 3?"""
    side = Side(beta(rng, 30), zeros(30))
    policy = GatePolicy()
    current, baseline = run_of(f"h{index}", side, 3, rng), run_of(f"b{index}", side, 3, rng)
    for run in (current, baseline):
        run.cases = [c.model_copy(update={"cluster": f"g{int(c.case_id[-4:]) % 3}"}) for c in run.cases]
    look = plan_looks(policy, agent_can_run=False, cases=30, repetitions=3)
    return Outcome(decide(current, baseline, policy, look=look), 180, 90)


def history_trial(kind: str) -> Trial:
    """Baseline selection through a real SQLite history: the stored base run, then the flow's decision (as
    `evalward gate` on a stored run, without the agent: one look)."""
    from evalward._gating.flow import finish_gate, first_look, plan_baseline
    from evalward.store import open_store

    def trial(rng: random.Random, index: int) -> Outcome:
        passes = beta(rng, 100)
        base = run_of(f"b{index}", Side(passes, zeros(100)), 3, rng)
        base.context = RunContext(repository="o/r", commit="a" * 40, branch="main")
        head_target = "agent_v2.py:run" if kind == "new-target" else "agent.py:run"
        head = run_of(f"h{index}", Side(passes, zeros(100)), 3, rng, target=head_target)
        head.context = RunContext(
            repository="o/r", commit="b" * 40, branch="pr", base_branch="main", merge_base="a" * 40
        )
        if kind == "added-file":
            extra = run_of("x", Side(beta(rng, 20), zeros(20)), 3, rng)
            info = extra.eval_sets[0].model_copy(update={"eval_set_id": "extra"})
            head.eval_sets.append(info)
            head.cases.extend(c.model_copy(update={"eval_set_id": "extra"}) for c in extra.cases)
        policy = GatePolicy()
        with tempfile.TemporaryDirectory() as tmp, open_store(f"sqlite:///{Path(tmp) / 'h.db'}") as store:
            store.begin_run(base, [c.key for c in base.cases])
            store.finish_run(base.model_copy(update={"status": "complete", "finished_at": STARTED}))
            plan = plan_baseline(
                store,
                head,
                baseline_spec="auto",
                base_branch="main",
                repo_dir=Path(tmp),
                remote=None,
                baseline_run="never",
                can_run_base_side=False,
            )
            look = first_look(policy, None, head)
            verdict = finish_gate(store, head, policy, plan, None, instrument=None, look=look).verdict
        return Outcome(verdict, len(head.cases), len(head.cases))

    return trial


NO_FALSE_FAIL = Goal(fail_at_most=0.01)
"""An unchanged agent: at most 1 false fail in 100 (docs/gate.md §6: α = 0.005 shared by the two looks)."""

SCENARIOS: list[Scenario] = [
    # The situations of the gate issue (#29), at the defaults a new adopter gets.
    Scenario("8-broken-3", "8 deterministic cases × 1, 3 always pass → never pass", Goal(fail_at_least=1.0),
             paired(1, lambda rng: broken(stable(8), 3))),
    Scenario("20x1-broken-3", "20 cases × 1, 3 always → never, 2 coin flips", Goal(fail_at_least=0.9),
             paired(1, lambda rng: broken(flaky_few(20, 2)[::-1], 3))),
    Scenario("20x1-stable", "20 deterministic cases × 1, unchanged", Goal(pass_at_least=0.9, runs_at_most=4.0),
             paired(1, lambda rng: same(stable(20)))),
    Scenario("flaky-few", "unchanged agent, 10 of 100 cases coin flips, 100×3",
             Goal(fail_at_most=0.01, pass_at_least=0.9, runs_at_most=2.3),
             paired(3, lambda rng: same(flaky_few(100, 10))), weight=5),
    Scenario("drop10-100x3", "a true 10-point drop, Beta(4,1), 100×3", Goal(fail_at_least=0.9),
             paired(3, lambda rng: dropped(beta(rng, 100), 0.10))),
    Scenario("five-broken", "5 of 100 cases always pass → never pass, 100×3", Goal(fail_at_least=0.99),
             paired(3, lambda rng: broken(beta(rng, 100), 5))),
    # The margin: a true drop of exactly δ_ni = 0.05 may pass at most α_pass = 5% of the time.
    Scenario("margin-100x3", "a true 5-point drop (δ_ni), 10 coin flips + 90 cases at 0.944, 100×3",
             Goal(pass_at_most=0.05, margin=True),
             paired(3, lambda rng: (Side(flaky_few(100, 10), zeros(100)),
                                    Side(flaky_few(100, 10)[:10] + [1 - 0.05 * 100 / 90] * 90, zeros(100))))),
    Scenario("margin-beta-100x3", "a true 5-point drop (δ_ni), Beta(4,1), 100×3", Goal(pass_at_most=0.05, margin=True),
             paired(3, lambda rng: dropped(beta(rng, 100), 0.05))),
    Scenario("margin-20x1", "20 cases × 1 that each fail 5% of the time now (δ_ni)",
             Goal(pass_at_most=0.05, margin=True),
             paired(1, lambda rng: (Side(stable(20), zeros(20)), Side([0.95] * 20, zeros(20)))), weight=5),
    # Unchanged agents elsewhere.
    Scenario("null-20x1", "unchanged agent, Beta(4,1), 20×1", NO_FALSE_FAIL, paired(1, lambda rng: same(beta(rng, 20))),
             weight=5),
    Scenario("null-100x3", "unchanged agent, Beta(4,1), 100×3", NO_FALSE_FAIL,
             paired(3, lambda rng: same(beta(rng, 100))), weight=5),
    Scenario("null-flaky-100x3", "unchanged agent, Beta(0.5,0.5), 100×3", NO_FALSE_FAIL,
             paired(3, lambda rng: same(beta(rng, 100, 0.5, 0.5))), weight=5),
    Scenario("timeouts-500x5", "unchanged agent, 500×5, 0.1% of repetitions time out", NO_FALSE_FAIL,
             paired(5, lambda rng: same(beta(rng, 500), 0.001))),
    Scenario("clusters-3", "unchanged agent, 30 cases in 3 clusters, 30×3 (one look)", NO_FALSE_FAIL, clustered_trial,
             weight=5),
    Scenario("new-target", "PR changes the agent target, same behaviour, 100×3 (stored baseline, one look)",
             NO_FALSE_FAIL, history_trial("new-target"), weight=5),
    Scenario("added-file", "PR adds an eval file of 20 cases, 100×3 (stored baseline, one look)", NO_FALSE_FAIL,
             history_trial("added-file"), weight=5),
    # Regressions elsewhere.
    Scenario("errors-hide", "baseline errors on 10 cases, PR breaks 10 others, 100×3", Goal(fail_at_least=0.95),
             paired(3, lambda rng: errors_hide(100))),
    Scenario("drop10-20x1", "a true 10-point drop at 20×1", Goal(pass_at_most=0.05),
             paired(1, lambda rng: dropped(beta(rng, 20), 0.10))),
    Scenario("drop10-flaky-100x3", "a true 10-point drop, Beta(0.5,0.5), 100×3", Goal(fail_at_least=0.5),
             paired(3, lambda rng: dropped(beta(rng, 100, 0.5, 0.5), 0.10))),
    Scenario("drop5-500x5", "a true 5-point drop, Beta(4,1), 500×5", Goal(fail_at_least=0.9),
             paired(5, lambda rng: dropped(beta(rng, 500), 0.05))),
]  # fmt: skip


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class Tally:
    scenario: Scenario
    outcomes: Counter[str]
    second_looks: int
    runs: float
    """Σ agent runs ÷ one run of the suite, over the trials."""
    seconds: float

    @property
    def trials(self) -> int:
        return sum(self.outcomes.values())

    def rate(self, outcome: str) -> float:
        return self.outcomes[outcome] / self.trials if self.trials else 0.0

    @property
    def runs_per_pr(self) -> float:
        return self.runs / self.trials if self.trials else 0.0


def measure(scenario: Scenario, trials: int, seed: int) -> Tally:
    rng = random.Random(f"{seed}:{scenario.name}")
    started = time.perf_counter()
    outcomes: Counter[str] = Counter()
    second_looks = 0
    runs = 0.0
    for index in range(trials):
        outcome = scenario.trial(rng, index)
        outcomes[outcome.verdict.outcome] += 1
        second_looks += outcome.verdict.look is not None and outcome.verdict.look.index == 2
        runs += outcome.agent_runs / outcome.one_run
    return Tally(scenario, outcomes, second_looks, runs, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per scenario (× its weight)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="scenario names to run")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    print(
        f"default policy (GatePolicy()), {args.trials} trials per scenario (× weight), seed {args.seed}; a seeded "
        f"simulation in this process, nothing timed, so the figures do not depend on the machine ({load_average()})\n"
    )
    print(
        "| scenario | situation | trials | fail | inconclusive | pass | error | fail rate 95% CI | second look "
        "| agent runs per PR | goal | met |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |")
    for scenario in chosen:
        tally = measure(scenario, args.trials * scenario.weight, args.seed)
        low, high = wilson(tally.outcomes["fail"], tally.trials)
        print(
            f"| {scenario.name} | {scenario.situation} | {tally.trials} | {tally.rate('fail'):.1%} | "
            f"{tally.rate('inconclusive'):.1%} | {tally.rate('pass'):.1%} | {tally.rate('error'):.1%} | "
            f"[{low:.1%}, {high:.1%}] | {tally.second_looks / tally.trials:.0%} | {tally.runs_per_pr:.2f}× | "
            f"{scenario.goal.text()} | {'yes' if scenario.goal.met(tally) else 'NOT met'} |",
            flush=True,
        )
    print(f"\n{load_average()} at the end")


if __name__ == "__main__":
    main()
