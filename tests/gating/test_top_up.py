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
from evalward._gating.top_up import plan_top_up, uncertain_cases, undecided, with_more_repetitions
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
        n_cases=4,
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


def test_discordant_cases_come_first_by_their_difference_then_flaky_ones() -> None:
    verdict = inconclusive(
        case("stable", 1.0, 1.0),
        case("flaky", 2 / 3, 2 / 3, label="flaky", k=3),
        case("small", 1.0, 2 / 3, k=3),
        case("large", 1.0, 0.0, label="regressed"),
        case("new", 0.0, 0.0, label="new"),
        case("gained", 0.0, 1.0, label="improved"),
    )
    # both directions carry the difference; a stable case and one not compared never run again
    assert uncertain_cases(verdict) == [("s", "gained"), ("s", "large"), ("s", "small"), ("s", "flaky")]


def test_a_quarantined_case_is_not_run_again() -> None:
    quiet = case("q", 1.0, 0.0).model_copy(update={"quarantined": True})
    assert uncertain_cases(inconclusive(quiet, case("x", 0.0, 1.0))) == [("s", "x")]


def test_the_budget_counts_both_sides_and_cuts_the_least_uncertain() -> None:
    verdict = inconclusive(case("a", 1.0, 0.0), case("b", 0.0, 1.0), case("c", 1.0, 0.5, k=2), case("d", 1, 1))
    policy = GatePolicy.model_validate({"top_up": {"max_repetitions": 5, "max_runs": 20}})
    both, _ = plan_top_up(verdict, policy, repetitions=1, base_side=True)
    assert both is not None
    # k = 2 is the run's largest: each case goes to 5, three more repetitions a side, 6 runs a case
    assert (both.extra_repetitions, both.cases, both.agent_runs) == (3, (("s", "a"), ("s", "b"), ("s", "c")), 18)
    one_side, _ = plan_top_up(verdict.model_copy(), policy.model_copy(update={}), repetitions=1, base_side=False)
    assert one_side is not None and len(one_side.cases) == 3 and one_side.agent_runs == 9


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"max_runs": 0}, "turned off"),
        ({"max_repetitions": 0}, "turned off"),
        ({"max_repetitions": 3}, "already ran 3 times"),
        ({"max_runs": 7}, "more than the budget"),
    ],
)
def test_no_top_up_says_why(settings: dict[str, int], reason: str) -> None:
    verdict = inconclusive(case("a", 1.0, 0.0))
    chosen, why = plan_top_up(
        verdict,
        GatePolicy.model_validate({"top_up": settings}),
        repetitions=3 if "already" in reason else 1,
        base_side=True,
    )
    assert chosen is None and reason in why


def test_stable_cases_only_need_more_cases_not_more_repetitions() -> None:
    chosen, why = plan_top_up(
        inconclusive(case("a", 1, 1), case("b", 0, 0)), GatePolicy(), repetitions=1, base_side=True
    )
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


def gate_once(repo: Repo, monkeypatch: pytest.MonkeyPatch, seed: int) -> tuple[dict[str, Any], Path]:
    """`evalward run` (one repetition) on the PR head, then `evalward gate`: the verdict JSON and the database."""
    db = repo.root.parent / f"history-{seed}.db"
    monkeypatch.chdir(repo.root)
    monkeypatch.setenv("SIM_SEED", str(seed))
    env = {"EVALWARD_DB": f"sqlite:///{db}", "SIM_SEED": str(seed)}
    head = git(repo.root, "rev-parse", "HEAD")
    runner = CliRunner()
    run = runner.invoke(cli, ["run", "--commit", head, "--branch", "pr", "--base-branch", "main", "-q"], env=env)
    assert run.exit_code in (0, 1), run.output
    out = repo.root.parent / f"verdict-{seed}.json"
    gate = runner.invoke(cli, ["gate", "--json", str(out), "--markdown", str(out.with_suffix(".md"))], env=env)
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
    repo.change({"README.md": "docs only\n"})
    verdict, db = gate_once(repo, monkeypatch, seed=0)
    top_up = verdict["top_up"]
    assert (top_up["first_outcome"], top_up["second_outcome"], top_up["kept"]) == ("inconclusive", "pass", "second")
    assert verdict["outcome"] == "pass" and verdict["exit_code"] == 0
    # each chosen case went from 1 to k_max = 5 on both sides: the base side ran on demand at the merge-base
    chosen = len(top_up["cases"])
    assert chosen > 0 and top_up["extra_repetitions"] == 4
    assert top_up["current_runs"] == top_up["baseline_runs"] == 4 * chosen
    k = {c["case_id"]: (c["baseline_k"], c["current_k"]) for c in verdict["cases"]}
    assert all(k[name.split("/")[1]] == (5, 5) for name in top_up["cases"])
    assert sum(v == (1, 1) for v in k.values()) == CASES - chosen
    # the agent is seeded by the repetition: draws numbered after the run's own differ from it, so a topped-up flaky
    # case shows mixed results on some side rather than five copies of its first draw
    assert any(c["label"] == "flaky" for c in verdict["cases"] if f"solver/{c['case_id']}" in top_up["cases"])
    assert "Decided after a top-up" in verdict["headline"]
    assert "**Top-up**: Inconclusive at first" in verdict["markdown"]
    # the stored runs are as they ran: the PR's run and the base side's, one repetition a case each
    assert sorted(n for _, n in stored_results(db)) == [CASES, CASES]
    assert git(repo.root, "worktree", "list").count("\n") == 0  # the top-up's worktree was removed too


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
def test_the_top_up_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo", flaky(20))
    settings = 'paths = ["evals/"]\nagent = "agent.py:run"\n[gate]\nseed = 7\n[gate.top_up]\nmax_runs = 0\n'
    repo.change({"evalward.toml": settings})
    verdict, _ = gate_once(repo, monkeypatch, seed=0)
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
    monkeypatch.setenv("SIM_SEED", "0")
    store = open_store(f"sqlite:///{tmp_path / 'history.db'}")
    try:
        context = RunContext(commit=head, branch="pr", base_branch="main")
        prepared = prepare(RunOptions(paths=["evals/"], agent="agent.py:run", context=context))
        outcome = run_and_gate(prepared, store, GatePolicy(seed=7), base_branch="main", repo_dir=repo.root, record="ci")
        top_up = outcome.verdict.top_up
        assert top_up is not None and top_up.kept == "second" and top_up.baseline_runs > 0
        assert outcome.verdict.outcome == "pass"
        recorded = store.recorded_verdicts(outcome.current.run_id)
        assert [(r.source, r.verdict.outcome) for r in recorded] == [("ci", "pass")]
        assert recorded[0].verdict.top_up is not None and recorded[0].verdict.top_up.kept == "second"
        assert len(outcome.current.cases) == CASES  # the run as it ran; the top-up is the verdict's evidence
    finally:
        store.close()
