"""The top-up and the second look through the real CLI and pipeline (docs/gate.md §6, `_gating.top_up`): an unchanged
agent that one repetition leaves undecided is settled; a drop the top-up finds blocks, at the second look's level;
the stored runs stay as they ran. The pure planning and deciding are tested in tests/gate/test_sequential.py.

The tests use `test_scenarios`' repository (an ADK eval set, an agent whose per-case behaviour comes from
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
from evalward.gate import GatePolicy
from evalward.model import CaseResult, RunResult
from evalward.model.verdict import Verdict
from gating.test_scenarios import CASES, Repo, flaky, git


def result(case_id: str, repetition: int) -> CaseResult:
    return CaseResult(eval_set_id="s", case_id=case_id, repetition=repetition, status="passed")


def undecided_verdict() -> Verdict:
    return Verdict(outcome="inconclusive", reason="")


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
def test_an_unchanged_agent_left_undecided_by_one_repetition_is_settled_at_the_second_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"README.md": "docs only\n"})
    verdict, db = gate_once(repo, monkeypatch, seed=3)
    top_up = verdict["top_up"]
    # 60 cases × 1 repetition cannot pass (ZF(60, 0.01) > 0.05, so the first look gave its share of α_pass to the
    # second); seed 3 of this repository: six flaky cases failed at first (suspects, re-run 5 times on each side,
    # all recovered), and k_max = 6 repetitions of every case show non-inferiority
    assert (top_up["first_outcome"], top_up["second_outcome"]) == ("inconclusive", "pass")
    assert verdict["outcome"] == "pass" and verdict["exit_code"] == 0
    assert verdict["look"]["index"] == 2 and verdict["look"]["alpha_pass_first"] == 0.0
    assert (len(top_up["cases"]), top_up["extra_repetitions"], top_up["head_only"]) == (CASES, 5, False)
    suspects = len(top_up["confirmed_cases"])
    assert suspects == 6 and top_up["confirm_repetitions"] == 5
    assert top_up["current_runs"] == top_up["baseline_runs"] == 5 * CASES + 5 * suspects
    assert verdict["confirmation"]["recovered"] == top_up["confirmed_cases"]
    # what the pull request cost, in agent runs: the run, the base side on demand, the top-up
    runs = verdict["agent_runs"]
    assert (runs["current"], runs["base_side"], runs["top_up_current"]) == (CASES, CASES, 5 * CASES + 5 * suspects)
    # the agent is seeded by the repetition: the added repetitions are numbered after the run's own and draw anew,
    # so flaky cases show mixed results instead of six copies of their first draw
    assert sum(c["label"] == "flaky" for c in verdict["cases"]) >= 15
    assert (
        "(Decided at the second look: 6 suspect cases re-run 5 times on each side; 60 cases 5 more times"
        in (verdict["headline"])
    )
    assert "**Top-up**: At the first look 6 cases looked newly broken" in verdict["markdown"]
    # the stored runs are as they ran: the PR's run and the base side's, one repetition a case each
    assert sorted(n for _, n in stored_results(db)) == [CASES, CASES]
    assert git(repo.root, "worktree", "list").count("\n") == 0  # the top-up's worktrees were removed too


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "outcome", "exit_code"), [(3, "pass", 0), (0, "fail", 2)])
def test_under_strict_the_top_up_settles_what_it_can_and_the_rest_stays_undecided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, outcome: str, exit_code: int
) -> None:
    """`--strict` (the Action's `fail-on: inconclusive`) fails an undecided verdict: the top-up runs first, and what
    it settles passes; what stays undecided fails as undecided (exit 2), never as a regression."""
    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"README.md": "docs only\n"})
    verdict, _ = gate_once(repo, monkeypatch, seed, "--strict")
    assert verdict["top_up"]["first_outcome"] == "fail" and verdict["look"]["index"] == 2
    assert (verdict["outcome"], verdict["exit_code"]) == (outcome, exit_code)
    assert {f["kind"] for f in verdict["findings"] if f["severity"] == "blocking"} <= {"inconclusive"}


@pytest.mark.slow
def test_a_drop_the_top_up_finds_blocks_at_the_second_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second look spends its share of α (Bonferroni split): a drop it finds is a regression, exit 1."""
    behaviour = flaky(10)
    repo = Repo(tmp_path / "repo", behaviour)
    repo.change({"behaviour.json": json.dumps({**behaviour, **{str(i): {"p": 0.5} for i in range(20, 26)}})})
    verdict, _ = gate_once(repo, monkeypatch, seed=1)
    top_up = verdict["top_up"]
    # seed 1 of this repository: one repetition cannot tell; six more on each side can
    assert (top_up["first_outcome"], top_up["second_outcome"]) == ("inconclusive", "fail")
    assert verdict["outcome"] == "fail" and verdict["exit_code"] == 1
    gated = next(m for m in verdict["metrics"] if m["gated"] and not m["guard"])
    assert (gated["verdict"], gated["k_current"], gated["level"]) == ("regressed", 6, 0.004)
    # the combination of the first look's p and the top-up's own
    assert gated["p_first"] is not None and gated["p_top_up"] is not None
    assert verdict["headline"].startswith("Fewer runs pass: ")
    assert "(Decided at the second look:" in verdict["headline"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("settings", "flags"),
    [
        (SETTINGS + "[gate.top_up]\nmax_runs = 0\n", ()),
        (SETTINGS, ("--top-up-runs", "0")),
    ],
)
def test_the_top_up_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str, flags: tuple[str, ...]
) -> None:
    """In the policy, or for one `evalward gate` (re-rendering a verdict on a laptop without running the agent):
    then there is one look, at the whole α."""
    repo = Repo(tmp_path / "repo", flaky(20))
    repo.change({"README.md": "docs only\n", "evalward.toml": settings})
    verdict, _ = gate_once(repo, monkeypatch, 3, *flags)
    assert verdict["outcome"] == "inconclusive"
    assert verdict["look"] == {**verdict["look"], "index": 1, "planned": 1, "alpha_first": 0.005}
    assert verdict["top_up"]["message"] == (
        "No top-up: the top-up is turned off (gate.top_up), so the first look was the only one, at the whole α."
    )
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
        policy = GatePolicy.model_validate({"seed": 7})
        outcome = run_and_gate(prepared, store, policy, base_branch="main", repo_dir=repo.root, record="ci")
        verdict = outcome.verdict
        assert verdict.top_up is not None and verdict.top_up.baseline_runs > 0
        assert verdict.look is not None and verdict.look.index == 2
        assert verdict.outcome == "pass"
        assert verdict.agent_runs is not None and verdict.agent_runs.base_side == CASES
        recorded = store.recorded_verdicts(outcome.current.run_id)
        assert [(r.source, r.verdict.outcome) for r in recorded] == [("ci", "pass")]
        assert recorded[0].verdict.look is not None and recorded[0].verdict.look.index == 2
        assert len(outcome.current.cases) == CASES  # the run as it ran; the top-up is the verdict's evidence
    finally:
        store.close()


def test_a_replayed_agent_gets_one_look() -> None:
    """Recordings cannot draw anew: more repetitions of a `replay:` agent would repeat (or miss) what was recorded,
    so no second look is planned and the first gets the whole α."""
    from evalward._gating.flow import first_look
    from evalward._pipeline import PreparedRun, RunOptions

    run = RunResult(run_id="r", status="complete", passed=False, repetitions=1, cases=[result("c0", 0)])
    replay = PreparedRun(options=RunOptions(paths=[], agent="replay:runs.json"), sets=[], warnings=[])
    live = PreparedRun(options=RunOptions(paths=[], agent="agent.py:run"), sets=[], warnings=[])
    assert first_look(GatePolicy(), replay, run).planned == 1
    assert first_look(GatePolicy(), None, run).planned == 1
    assert first_look(GatePolicy(), live, run).planned == 2


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
    outcome = GateOutcome(current=run, baseline=run, verdict=undecided_verdict(), search=BaselineSearch(choice=None))
    assert _cost_per_run(outcome) == pytest.approx(0.02)
    free = outcome.current.model_copy(update={"cases": [costing("a", None)]})
    assert (
        _cost_per_run(GateOutcome(current=free, baseline=run, verdict=outcome.verdict, search=outcome.search)) is None
    )
