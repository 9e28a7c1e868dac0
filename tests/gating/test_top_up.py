"""The top-up of an inconclusive verdict (docs/gate.md §6, `_gating.top_up`): which cases run again, how many
runs the budget allows, and end to end — an unchanged agent with flaky cases that one repetition leaves
undecided is settled by the top-up; a real drop the top-up sees is never turned into a regression; the stored runs
stay as they ran.

The end-to-end tests use `test_scenarios`' repository (an ADK eval set, an agent whose per-case behaviour comes from
`behaviour.json`, seeded by case, repetition, trial seed and side) at one repetition: the top-up must number its
repetitions after the run's own, or a seeded agent would replay the same draws.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evalward._cli.main import cli
from evalward._gating.top_up import plan_top_up, undecided, with_more_repetitions
from evalward.gate import GatePolicy
from evalward.model import CaseResult, RunResult
from evalward.model.verdict import CaseDiagnostic, Finding, MetricComparison, Verdict
from gating.test_scenarios import CASES, Repo, flaky, git

# ------------------------------------------------------------------------------------------------ choosing


def metric(verdict: str = "inconclusive", *, gated: bool = True, guard: bool = False) -> MetricComparison:
    return MetricComparison(
        metric="case_pass",
        gated=gated,
        guard=guard,
        baseline_mean=0.8,
        current_mean=0.75,
        delta=-0.05,
        n_cases=40,
        k_baseline=1,
        k_current=1,
        delta_block=0.02,
        delta_ni=0.05,
        verdict=verdict,  # type: ignore[arg-type]
    )


def case(
    case_id: str, before: float, after: float, *, label: str = "stable_pass", k: int = 1, passes: int | None = None
) -> CaseDiagnostic:
    return CaseDiagnostic(
        eval_set_id="s",
        case_id=case_id,
        label=label,  # type: ignore[arg-type]
        baseline_passes=round(before * k) if passes is None else passes,
        baseline_k=k,
        current_passes=round(after * k),
        current_k=k,
        baseline_scores={"case_pass": before},
        current_scores={"case_pass": after},
    )


def inconclusive(*cases: CaseDiagnostic, outcome: str = "inconclusive", **extra: Any) -> Verdict:
    return Verdict(outcome=outcome, reason="", metrics=[metric()], cases=list(cases), **extra)  # type: ignore[arg-type]


def test_every_compared_case_gets_the_same_extra_repetitions_when_the_budget_allows() -> None:
    verdict = inconclusive(
        *(case(f"c{i}", 1.0, 1.0 if i % 2 else 0.0) for i in range(6)), case("new", 0, 0, label="new")
    )
    policy = GatePolicy.model_validate({"top_up": {"max_repetitions": 5, "max_runs": 30}})
    both, _ = plan_top_up(verdict, policy, repetitions=1, base_side=True)
    # 6 compared cases × 2 sides: 30 runs buy two more repetitions each (k_max 5 would allow four)
    assert both is not None and (len(both.cases), both.extra_repetitions, both.agent_runs) == (6, 2, 24)
    one_side, _ = plan_top_up(verdict, policy, repetitions=1, base_side=False)
    assert one_side is not None and (one_side.extra_repetitions, one_side.agent_runs) == (4, 24)  # capped by k_max
    assert ("s", "new") not in both.cases


def test_a_small_budget_gives_one_repetition_to_cases_chosen_without_looking_at_their_results() -> None:
    """Topping up the discordant cases only would shrink Δ̂ toward zero (benchmarks/top_up_power.py --design
    targeted): the cases that get the budget are drawn from the verdict's seed, known flippers first."""
    cases = [case(f"c{i:02d}", 1.0, 0.0 if i < 10 else 1.0) for i in range(40)]
    cases[30] = cases[30].model_copy(update={"flip_rate": 0.4})
    cases[31] = cases[31].model_copy(update={"flip_rate": 0.6})
    cases[32] = cases[32].model_copy(update={"flip_rate": 0.1})  # below flaky_flip_rate (0.2): not known to flip
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 20}})
    chosen, _ = plan_top_up(inconclusive(*cases, seed=1), policy, repetitions=1, base_side=True)
    assert chosen is not None and chosen.extra_repetitions == 1 and len(chosen.cases) == 10
    assert chosen.cases[:2] == (("s", "c31"), ("s", "c30"))
    # the draw is the seed's, not the results': the ten discordant cases are not the ones chosen
    assert set(chosen.cases) != {("s", f"c{i:02d}") for i in range(10)}
    again, _ = plan_top_up(inconclusive(*cases, seed=1), policy, repetitions=1, base_side=True)
    other, _ = plan_top_up(inconclusive(*cases, seed=2), policy, repetitions=1, base_side=True)
    assert again == chosen and other is not None and other.cases[2:] != chosen.cases[2:]


def test_a_quarantined_case_is_not_run_again() -> None:
    quiet = case("q", 1.0, 0.0).model_copy(update={"quarantined": True})
    chosen, _ = plan_top_up(
        inconclusive(quiet, *(case(f"x{i}", 0, 1) for i in range(5))), GatePolicy(), repetitions=1, base_side=True
    )
    assert chosen is not None and ("s", "q") not in chosen.cases and len(chosen.cases) == 5


@pytest.mark.parametrize(
    ("settings", "repetitions", "reason"),
    [
        ({"max_runs": 0}, 1, "turned off"),
        ({"max_repetitions": 0}, 1, "turned off"),
        ({"max_repetitions": 3}, 3, "already ran 3 times"),
        ({"max_runs": 1}, 1, "more than the budget"),
    ],
)
def test_no_top_up_says_why(settings: dict[str, int], repetitions: int, reason: str) -> None:
    verdict = inconclusive(*(case(f"c{i}", 1.0, 0.0) for i in range(6)))
    policy = GatePolicy.model_validate({"top_up": settings})
    chosen, why = plan_top_up(verdict, policy, repetitions=repetitions, base_side=True)
    assert chosen is None and reason in why


def test_too_few_cases_need_more_cases_not_more_repetitions() -> None:
    verdict = inconclusive(case("a", 1, 0), case("b", 0, 1)).model_copy(
        update={"metrics": [metric().model_copy(update={"n_cases": 2})]}
    )
    chosen, why = plan_top_up(verdict, GatePolicy(), repetitions=1, base_side=True)
    assert chosen is None and "only more cases can" in why


def test_only_an_undecided_comparison_is_topped_up() -> None:
    assert undecided(inconclusive(case("a", 1, 0)))
    strict = Finding(
        kind="inconclusive", severity="blocking", message="strict: an inconclusive verdict fails the gate."
    )
    assert undecided(inconclusive(case("a", 1, 0), outcome="fail", findings=[strict]))  # under strict
    broken = Finding(kind="must_pass", severity="blocking", message="a must-pass case failed")
    assert not undecided(inconclusive(case("a", 1, 0), outcome="fail", findings=[strict, broken]))
    passed = Verdict(outcome="pass", reason="", metrics=[metric("pass")], cases=[case("a", 1, 0)])
    assert not undecided(passed)
    guard_only = Verdict(outcome="inconclusive", reason="", metrics=[metric(guard=True)], cases=[case("a", 1, 0)])
    assert not undecided(guard_only)


def result(case_id: str, repetition: int) -> CaseResult:
    return CaseResult(eval_set_id="s", case_id=case_id, repetition=repetition, status="passed")


def test_more_repetitions_join_the_run_in_key_order_and_never_overwrite() -> None:
    run = RunResult(run_id="r", status="complete", passed=True, cases=[result("a", 0), result("b", 0)])
    grown = with_more_repetitions(run, [result("a", 1), result("a", 2)])
    assert [c.key for c in grown.cases] == [("s", "a", 0), ("s", "a", 1), ("s", "a", 2), ("s", "b", 0)]
    assert len(run.cases) == 2  # the run itself is unchanged
    with pytest.raises(ValueError, match="reused repetition numbers"):
        with_more_repetitions(run, [result("b", 0)])


# ------------------------------------------------------------------------------------------------ end to end

SETTINGS = 'paths = ["evals/"]\nagent = "agent.py:run"\n[gate]\nseed = 7\n'
"""`test_scenarios`' evalward.toml."""


def gate_once(repo: Repo, monkeypatch: pytest.MonkeyPatch, seed: int, *gate_args: str) -> tuple[dict[str, Any], Path]:
    """`evalward run` (one repetition) on the PR head, then `evalward gate [gate_args]`: the verdict JSON and the
    database."""
    db = repo.root.parent / f"history-{seed}.db"
    monkeypatch.chdir(repo.root)
    monkeypatch.setenv("SIM_SEED", str(seed))
    env = {"EVALWARD_DB": f"sqlite:///{db}", "SIM_SEED": str(seed)}
    head = git(repo.root, "rev-parse", "HEAD")
    runner = CliRunner()
    run = runner.invoke(cli, ["run", "--commit", head, "--branch", "pr", "--base-branch", "main", "-q"], env=env)
    assert run.exit_code in (0, 1), run.output
    out = repo.root.parent / f"verdict-{seed}.json"
    outputs = ["--json", str(out), "--markdown", str(out.with_suffix(".md"))]
    gate = runner.invoke(cli, ["gate", *outputs, *gate_args], env=env)
    verdict: dict[str, Any] = json.loads(out.read_text())
    verdict["exit_code"] = gate.exit_code
    verdict["markdown"] = out.with_suffix(".md").read_text()
    return verdict, db


def stored_results(db: Path) -> list[tuple[str, int]]:
    from evalward.store import open_store

    store = open_store(f"sqlite:///{db}")
    try:
        return [(row.run_id, len(store.load_run(row.run_id).cases)) for row in store.list_runs(limit=10)]
    finally:
        store.close()


@pytest.mark.slow
def test_an_unchanged_agent_left_undecided_by_one_repetition_is_settled_by_the_top_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo", flaky(20))
    # a budget for every case to reach k_max = 5 on both sides: 60 cases × 4 more × 2 sides
    repo.change({"README.md": "docs only\n", "evalward.toml": SETTINGS + "[gate.top_up]\nmax_runs = 480\n"})
    verdict, db = gate_once(repo, monkeypatch, seed=3)
    top_up = verdict["top_up"]
    # seed 3 of this repository: one repetition cannot tell; five can
    assert (top_up["first_outcome"], top_up["second_outcome"], top_up["kept"]) == ("inconclusive", "pass", "second")
    assert verdict["outcome"] == "pass" and verdict["exit_code"] == 0
    assert (len(top_up["cases"]), top_up["extra_repetitions"]) == (CASES, 4)
    assert top_up["current_runs"] == top_up["baseline_runs"] == 4 * CASES  # the base side ran at the merge-base
    assert {(c["baseline_k"], c["current_k"]) for c in verdict["cases"]} == {(5, 5)}
    # the agent is seeded by the repetition: the added repetitions are numbered after the run's own and draw anew,
    # so flaky cases show mixed results instead of five copies of their first draw
    assert sum(c["label"] == "flaky" for c in verdict["cases"]) >= 15
    assert "Decided after a top-up" in verdict["headline"]
    assert "**Top-up**: Inconclusive at first" in verdict["markdown"]
    # the stored runs are as they ran: the PR's run and the base side's, one repetition a case each
    assert sorted(n for _, n in stored_results(db)) == [CASES, CASES]
    assert git(repo.root, "worktree", "list").count("\n") == 0  # the top-up's worktree was removed too


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "outcome", "exit_code"), [(3, "pass", 0), (1, "fail", 2)])
def test_under_strict_the_top_up_settles_what_it_can_and_the_rest_stays_undecided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, outcome: str, exit_code: int
) -> None:
    """`--strict` (the Action's `fail-on: inconclusive`) fails an undecided verdict: the top-up runs first, and what
    it settles passes; what stays undecided fails as undecided (exit 2), never as a regression."""
    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"README.md": "docs only\n", "evalward.toml": SETTINGS + "[gate.top_up]\nmax_runs = 480\n"})
    verdict, _ = gate_once(repo, monkeypatch, seed, "--strict")
    assert verdict["top_up"]["first_outcome"] == "fail" and verdict["top_up"]["kept"] == "second"
    assert (verdict["outcome"], verdict["exit_code"]) == (outcome, exit_code)
    assert {f["kind"] for f in verdict["findings"] if f["severity"] == "blocking"} <= {"inconclusive"}


@pytest.mark.slow
def test_a_drop_seen_only_by_the_top_up_never_becomes_a_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    behaviour = flaky(10)
    repo = Repo(tmp_path / "repo", behaviour)
    repo.change({"behaviour.json": json.dumps({**behaviour, **{str(i): {"p": 0.5} for i in range(20, 26)}})})
    verdict, _ = gate_once(repo, monkeypatch, seed=0)
    top_up = verdict["top_up"]
    # seed 0 of this repository: one repetition cannot tell; the top-up's second look would block
    assert (top_up["first_outcome"], top_up["second_outcome"], top_up["kept"]) == ("inconclusive", "fail", "first")
    assert verdict["outcome"] == "inconclusive" and verdict["exit_code"] == 0
    assert not [f for f in verdict["findings"] if f["severity"] == "blocking"]
    warning = next(f for f in verdict["findings"] if f["kind"] == "inconclusive" and f["severity"] == "warning")
    assert "never make a regression" in warning["message"]
    gated = next(m for m in verdict["metrics"] if m["gated"])
    assert (gated["verdict"], gated["k_current"]) == ("inconclusive", 1)  # the first verdict's numbers stand


@pytest.mark.slow
@pytest.mark.parametrize(
    ("settings", "flags"),
    [
        (SETTINGS + "[gate.top_up]\nmax_runs = 0\n", ()),
        (SETTINGS + "[gate.top_up]\nmax_runs = 480\n", ("--top-up-runs", "0")),
    ],
)
def test_the_top_up_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str, flags: tuple[str, ...]
) -> None:
    """In the policy, or for one `evalward gate` (re-rendering a verdict on a laptop without running the agent)."""
    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"evalward.toml": settings})
    verdict, _ = gate_once(repo, monkeypatch, 3, *flags)
    assert verdict["outcome"] == "inconclusive"
    assert verdict["top_up"]["message"] == "No top-up: the top-up is turned off (gate.top_up)."
    assert verdict["top_up"]["current_runs"] == 0


@pytest.mark.slow
def test_the_action_path_tops_up_while_the_base_side_runs_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run_and_gate` (the Action's `evalward ci`): the run, the base side and the top-up in one call; the verdict
    recorded in the history is the final one."""
    from evalward._gating import run_and_gate
    from evalward._pipeline import RunOptions, prepare
    from evalward.model import RunContext
    from evalward.store import open_store

    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"README.md": "docs only\n"})
    head = git(repo.root, "rev-parse", "HEAD")
    monkeypatch.chdir(repo.root)
    monkeypatch.setenv("SIM_SEED", "3")
    store = open_store(f"sqlite:///{tmp_path / 'history.db'}")
    try:
        context = RunContext(commit=head, branch="pr", base_branch="main")
        prepared = prepare(RunOptions(paths=["evals/"], agent="agent.py:run", context=context))
        policy = GatePolicy.model_validate({"seed": 7, "top_up": {"max_runs": 480}})
        outcome = run_and_gate(prepared, store, policy, base_branch="main", repo_dir=repo.root, record="ci")
        top_up = outcome.verdict.top_up
        assert top_up is not None and top_up.kept == "second" and top_up.baseline_runs > 0
        assert outcome.verdict.outcome == "pass"
        recorded = store.recorded_verdicts(outcome.current.run_id)
        assert [(r.source, r.verdict.outcome) for r in recorded] == [("ci", "pass")]
        assert recorded[0].verdict.top_up is not None and recorded[0].verdict.top_up.kept == "second"
        assert len(outcome.current.cases) == CASES  # the run as it ran; the top-up is the verdict's evidence
    finally:
        store.close()


def test_a_replayed_agent_is_not_topped_up() -> None:
    """Recordings cannot draw anew: more repetitions of a `replay:` agent would repeat (or miss) what was recorded."""
    from evalward._gating.flow import BaselinePlan, GateOutcome
    from evalward._gating.top_up import top_up
    from evalward._pipeline import PreparedRun, RunOptions
    from evalward.store import BaselineSearch

    cases = [case(f"c{i}", 1.0, 0.0 if i < 3 else 1.0) for i in range(10)]
    run = RunResult(run_id="r", status="complete", passed=False, cases=[result("c0", 0)])
    outcome = GateOutcome(current=run, baseline=run, verdict=inconclusive(*cases), search=BaselineSearch(choice=None))
    prepared = PreparedRun(options=RunOptions(paths=[], agent="replay:runs.json"), sets=[], warnings=[])
    plan = BaselinePlan(merge_base=None, search=outcome.search, flip_rates=None, base_side_possible=False)
    after = top_up(outcome, prepared, GatePolicy(), plan, base_branch=None, repo_dir=None)
    assert after.verdict.outcome == "inconclusive" and after.verdict.top_up is not None
    assert after.verdict.top_up.message.startswith("No top-up: a replay: agent")
    assert after.verdict.top_up.current_runs == 0


def test_a_cost_budget_turns_into_runs_at_the_runs_own_cost() -> None:
    verdict = inconclusive(*(case(f"c{i}", 1.0, 0.0 if i < 4 else 1.0) for i in range(40)))
    policy = GatePolicy.model_validate({"top_up": {"max_runs": 100, "max_cost_usd": 0.5}})
    # $0.02 a run: $0.50 buys 25 runs, fewer than max_runs: 12 cases get one more repetition on each side
    chosen, _ = plan_top_up(verdict, policy, repetitions=1, base_side=True, cost_per_run=0.02)
    assert chosen is not None and (len(chosen.cases), chosen.extra_repetitions) == (12, 1)
    # a cheap agent: max_runs limits (50 cases' worth, here all 40 once each side)
    cheap, _ = plan_top_up(verdict, policy, repetitions=1, base_side=True, cost_per_run=0.0001)
    assert cheap is not None and (len(cheap.cases), cheap.extra_repetitions) == (40, 1)
    # no recorded cost: max_runs alone
    unknown, _ = plan_top_up(verdict, policy, repetitions=1, base_side=True, cost_per_run=None)
    assert unknown == cheap
    pricey, why = plan_top_up(verdict, policy, repetitions=1, base_side=True, cost_per_run=0.3)
    assert pricey is None and "gate.top_up.max_cost_usd = 0.5 at $0.3 a run" in why


def test_the_cost_of_a_run_is_the_mean_of_the_recorded_costs() -> None:
    from evalward._gating.flow import GateOutcome
    from evalward._gating.top_up import _cost_per_run
    from evalward.model import Usage
    from evalward.store import BaselineSearch

    def costing(case_id: str, cost: float | None) -> CaseResult:
        return result(case_id, 0).model_copy(update={"usage": Usage(cost_usd=cost) if cost is not None else None})

    run = RunResult(
        run_id="r", status="complete", passed=True, cases=[costing("a", 0.01), costing("b", 0.03), costing("c", None)]
    )
    outcome = GateOutcome(current=run, baseline=run, verdict=inconclusive(), search=BaselineSearch(choice=None))
    assert _cost_per_run(outcome) == pytest.approx(0.02)
    free = outcome.current.model_copy(update={"cases": [costing("a", None)]})
    assert (
        _cost_per_run(GateOutcome(current=free, baseline=run, verdict=outcome.verdict, search=outcome.search)) is None
    )
