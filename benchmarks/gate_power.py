"""Gate power under the **default policy**: how often it fails, passes or says "inconclusive", per situation.

Each trial builds a baseline run and a candidate run (`RunResult`s as `evalward run` records them: one turn
per case, ADK's `tool_trajectory_avg_score` at its default threshold 1.0, so a repetition passes exactly
when the agent made the expected call) and asks `gate.decide` — the function behind `evalward gate`,
`evalward ci` and the daemon — with `GatePolicy()` unchanged. Per-case pass probabilities come from
Beta(4, 1) (mean 0.8, docs/gate.md §10) unless a scenario says otherwise. Two scenarios go through the history
database (`gating.flow.plan_baseline` + `finish_gate`) because what they test is baseline selection.

    python benchmarks/gate_power.py                 # every scenario, 200 trials each (a few minutes)
    python benchmarks/gate_power.py --trials 50     # a quicker look
    python benchmarks/gate_power.py --only null-100x3 drop10-100x3

Goals (issue #11): false alarms ≤ 5% on unchanged agents, detection ≥ 90% of a 10-point drop at 100 × 3.
`tests/benchmarks/test_gate_power.py` runs a reduced version with fixed seeds in CI.
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalward.gate import GatePolicy, decide
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

METRIC = "tool_trajectory_avg_score"
SET = "bench"
STARTED = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Side:
    """One run's behaviour: per case, the probability a repetition passes and the probability it errors."""

    passes: list[float]
    errors: list[float]


def run_of(run_id: str, side: Side, repeat: int, rng: random.Random, *, target: str = "agent.py:run") -> RunResult:
    cases: list[CaseResult] = []
    for i, (p, e) in enumerate(zip(side.passes, side.errors, strict=True)):
        for rep in range(repeat):
            if rng.random() < e:
                cases.append(
                    CaseResult(
                        eval_set_id=SET,
                        case_id=f"case-{i:04d}",
                        repetition=rep,
                        status="error",
                        error=CaseError(kind="timeout", message="turn 0 did not finish within 60s"),
                        content_hash=f"h{i}",
                    )
                )
                continue
            ok = rng.random() < p
            cases.append(
                CaseResult(
                    eval_set_id=SET,
                    case_id=f"case-{i:04d}",
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
    n = len(side.passes)
    info = EvalSetInfo(
        eval_set_id=SET,
        format="adk_evalset",
        content_hash="set",
        criteria=[MetricSpec(name=METRIC, threshold=1.0)],
        case_hashes={f"case-{i:04d}": f"h{i}" for i in range(n)},
        case_input_hashes={f"case-{i:04d}": f"in{i}" for i in range(n)},
    )
    return RunResult(
        run_id=run_id,
        passed=False,
        repetitions=repeat,
        started_at=STARTED,
        agent=AgentTarget(kind="python", target=target, config_hash=target),
        eval_sets=[info],
        cases=cases,
        evalward_version="0.2.0",
    )


def beta(rng: random.Random, n: int, a: float = 4.0, b: float = 1.0) -> list[float]:
    return [rng.betavariate(a, b) for _ in range(n)]


@dataclass(frozen=True)
class Scenario:
    name: str
    situation: str
    expect: str
    """`fail` (a regression: the fail rate is the detection rate) or `no fail` (the fail rate is false alarms)."""
    trial: Callable[[random.Random, int], Verdict]


def paired(
    n: int, repeat: int, make: Callable[[random.Random], tuple[Side, Side]]
) -> Callable[[random.Random, int], Verdict]:
    def trial(rng: random.Random, index: int) -> Verdict:
        base, head = make(rng)
        return decide(run_of(f"h{index}", head, repeat, rng), run_of(f"b{index}", base, repeat, rng), GatePolicy())

    return trial


def same(passes: list[float], errors: float = 0.0) -> tuple[Side, Side]:
    side = Side(passes, [errors] * len(passes))
    return side, side


def dropped(passes: list[float], drop: float) -> tuple[Side, Side]:
    zeros = [0.0] * len(passes)
    return Side(passes, zeros), Side([max(0.0, p - drop) for p in passes], zeros)


def flaky_few(n: int, flaky: int, p: float = 0.5) -> list[float]:
    return [p] * flaky + [1.0] * (n - flaky)


def always_never(rng: random.Random, n: int, broken: int) -> tuple[Side, Side]:
    passes = beta(rng, n)
    base = [1.0] * broken + passes[broken:]
    head = [0.0] * broken + passes[broken:]
    zeros = [0.0] * n
    return Side(base, zeros), Side(head, zeros)


def errors_hide(n: int) -> tuple[Side, Side]:
    # the baseline's agent errors on cases 0–9; the candidate fixes them and breaks cases 10–19
    passes = flaky_few(n, 10, 0.5)[::-1]  # a few flaky cases at the end
    base = Side(passes, [1.0] * 10 + [0.0] * (n - 10))
    head = Side([1.0] * 10 + [0.0] * 10 + passes[20:], [0.0] * n)
    return base, head


def clustered_trial(rng: random.Random, index: int) -> Verdict:
    """30 identical-behaviour cases in 3 clusters: can the gate claim anything with G = 3?"""
    passes = beta(rng, 30)
    base_run = run_of(f"b{index}", Side(passes, [0.0] * 30), 3, rng)
    head_run = run_of(f"h{index}", Side(passes, [0.0] * 30), 3, rng)
    for run in (base_run, head_run):
        run.cases = [c.model_copy(update={"cluster": f"g{int(c.case_id[-4:]) % 3}"}) for c in run.cases]
    return decide(head_run, base_run, GatePolicy())


def history_trial(kind: str) -> Callable[[random.Random, int], Verdict]:
    """Baseline selection through a real SQLite history: the stored base run, then the flow's decision."""
    from evalward._gating.flow import finish_gate, plan_baseline
    from evalward.store import open_store

    def trial(rng: random.Random, index: int) -> Verdict:
        passes = beta(rng, 100)
        base = run_of(f"b{index}", Side(passes, [0.0] * 100), 3, rng)
        base.context = RunContext(repository="o/r", commit="a" * 40, branch="main")
        head_target = "agent_v2.py:run" if kind == "new-target" else "agent.py:run"
        head = run_of(f"h{index}", Side(passes, [0.0] * 100), 3, rng, target=head_target)
        head.context = RunContext(
            repository="o/r", commit="b" * 40, branch="pr", base_branch="main", merge_base="a" * 40
        )
        if kind == "added-file":
            extra = run_of("x", Side(beta(rng, 20), [0.0] * 20), 3, rng)
            info = extra.eval_sets[0].model_copy(update={"eval_set_id": "extra"})
            head.eval_sets.append(info)
            head.cases.extend(c.model_copy(update={"eval_set_id": "extra"}) for c in extra.cases)
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
            return finish_gate(store, head, GatePolicy(), plan, None, instrument=None).verdict

    return trial


SCENARIOS: list[Scenario] = [
    Scenario("flaky-few", "unchanged agent, 10 of 100 cases coin flips, 100×3", "no fail",
             paired(100, 3, lambda rng: same(flaky_few(100, 10)))),
    Scenario("new-target", "PR changes the agent target, same behaviour, 100×3 (stored baseline)", "no fail",
             history_trial("new-target")),
    Scenario("added-file", "PR adds an eval file of 20 cases, 100×3 (stored baseline)", "no fail",
             history_trial("added-file")),
    Scenario("errors-hide", "baseline errors on 10 cases, PR breaks 10 others, 100×3", "fail",
             paired(100, 3, lambda rng: errors_hide(100))),
    Scenario("five-broken", "5 of 100 cases always pass → never pass, 100×3", "fail",
             paired(100, 3, lambda rng: always_never(rng, 100, 5))),
    Scenario("drop10-20x1", "a true 10-point drop at 20×1", "fail",
             paired(20, 1, lambda rng: dropped(beta(rng, 20), 0.10))),
    Scenario("timeouts-500x5", "unchanged agent, 500×5, 0.1% of repetitions time out", "no fail",
             paired(500, 5, lambda rng: same(beta(rng, 500), 0.001))),
    Scenario("clusters-3", "unchanged agent, 30 cases in 3 clusters, 30×3", "no fail", clustered_trial),
    Scenario("null-20x1", "unchanged agent, Beta(4,1), 20×1", "no fail",
             paired(20, 1, lambda rng: same(beta(rng, 20)))),
    Scenario("null-100x3", "unchanged agent, Beta(4,1), 100×3", "no fail",
             paired(100, 3, lambda rng: same(beta(rng, 100)))),
    Scenario("drop10-100x3", "a true 10-point drop, Beta(4,1), 100×3", "fail",
             paired(100, 3, lambda rng: dropped(beta(rng, 100), 0.10))),
    Scenario("null-flaky-100x3", "unchanged agent, Beta(0.5,0.5), 100×3", "no fail",
             paired(100, 3, lambda rng: same(beta(rng, 100, 0.5, 0.5)))),
    Scenario("drop10-flaky-100x3", "a true 10-point drop, Beta(0.5,0.5), 100×3", "fail",
             paired(100, 3, lambda rng: dropped(beta(rng, 100, 0.5, 0.5), 0.10))),
    Scenario("null-500x5", "unchanged agent, Beta(4,1), 500×5", "no fail",
             paired(500, 5, lambda rng: same(beta(rng, 500)))),
    Scenario("drop5-500x5", "a true 5-point drop, Beta(4,1), 500×5", "fail",
             paired(500, 5, lambda rng: dropped(beta(rng, 500), 0.05))),
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
    seconds: float

    @property
    def trials(self) -> int:
        return sum(self.outcomes.values())

    def rate(self, outcome: str) -> float:
        return self.outcomes[outcome] / self.trials if self.trials else 0.0


def measure(scenario: Scenario, trials: int, seed: int) -> Tally:
    rng = random.Random(f"{seed}:{scenario.name}")
    started = time.perf_counter()
    outcomes: Counter[str] = Counter(scenario.trial(rng, index).outcome for index in range(trials))
    return Tally(scenario, outcomes, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per scenario")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="scenario names to run")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    print(f"default policy (GatePolicy()), {args.trials} trials per scenario, seed {args.seed}\n")
    print("| scenario | situation | should | fail | inconclusive | pass | error | fail rate 95% CI |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    for scenario in chosen:
        tally = measure(scenario, args.trials, args.seed)
        fails = tally.outcomes["fail"]
        lo, hi = wilson(fails, tally.trials)
        print(
            f"| {scenario.name} | {scenario.situation} | {scenario.expect} | {tally.rate('fail'):.1%} | "
            f"{tally.rate('inconclusive'):.1%} | {tally.rate('pass'):.1%} | {tally.rate('error'):.1%} | "
            f"[{lo:.1%}, {hi:.1%}] |",
            flush=True,
        )


if __name__ == "__main__":
    main()
