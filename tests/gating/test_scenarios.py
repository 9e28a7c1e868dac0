"""docs/gate.md §9 through the real CLI with the default policy: a git repository, a fresh history database, a pull
request whose merge-base agent is run on demand, and the situations a gate must get right.

Each repository holds an ADK eval set of `CASES` one-turn cases (`solve N` → expected call `solve(x=N)`,
ADK's `tool_trajectory_avg_score` at threshold 1.0, ADK's default) and an agent whose behaviour per case
comes from `behaviour.json` beside it: the probability that it makes the expected call, and whether it
raises. Its randomness is seeded from the case, the repetition, a trial seed and the side it runs on (the
base side runs in a worktree called `evalward-base-…`), so every trial is reproducible.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalward._cli.main import cli

CASES = 60
REPEAT = 3

AGENT = """
import hashlib, json, os, random
from pathlib import Path

BEHAVIOUR = json.loads((Path(__file__).parent / "behaviour.json").read_text())


def run(request):
    x = int(request["query"].split()[-1])
    side = "base" if "evalward-base-" in os.getcwd() else "head"
    seed = f"{os.environ.get('SIM_SEED', '0')}|{side}|{x}|{request['repetition']}"
    rng = random.Random(hashlib.sha256(seed.encode()).hexdigest())
    rule = BEHAVIOUR.get(str(x), {})
    if rule.get("raise"):
        raise RuntimeError(f"case {x} is not supported")
    if rng.random() < rule.get("p", 1.0):
        return {"response": "done", "tool_calls": [{"name": "solve", "args": {"x": x}}]}
    return {"response": "done", "tool_calls": [{"name": "guess", "args": {}}]}
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def eval_set(set_id: str, ids: range) -> dict[str, object]:
    return {
        "eval_set_id": set_id,
        "eval_cases": [
            {
                "eval_id": f"case-{i:03d}",
                "conversation": [
                    {
                        "invocation_id": f"inv-{i}",
                        "user_content": {"role": "user", "parts": [{"text": f"solve {i}"}]},
                        "final_response": {"role": "model", "parts": [{"text": "done"}]},
                        "intermediate_data": {"tool_uses": [{"name": "solve", "args": {"x": i}}]},
                    }
                ],
            }
            for i in ids
        ],
    }


class Repo:
    """A repository with `main` (the base) and a `pr` branch off it."""

    def __init__(self, root: Path, behaviour: dict[str, dict[str, object]]) -> None:
        self.root = root
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        (root / "agent.py").write_text(AGENT)
        (root / "behaviour.json").write_text(json.dumps(behaviour))
        evals = root / "evals"
        evals.mkdir()
        (evals / "solver.evalset.json").write_text(json.dumps(eval_set("solver", range(CASES))))
        (evals / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
        (root / "evalward.toml").write_text('paths = ["evals/"]\nagent = "agent.py:run"\n[gate]\nseed = 7\n')
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "base")
        git(root, "checkout", "-q", "-b", "pr")

    def change(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", "change")

    def gate(self, monkeypatch: pytest.MonkeyPatch, seed: int) -> dict[str, object]:
        """`evalward run` on the PR head, then `evalward gate` (fresh history database each time)."""
        db = self.root.parent / f"history-{seed}.db"
        monkeypatch.chdir(self.root)
        env = {"EVALWARD_DB": f"sqlite:///{db}", "SIM_SEED": str(seed)}
        monkeypatch.setenv("SIM_SEED", str(seed))  # the base side's agent process inherits the environment
        head = git(self.root, "rev-parse", "HEAD")
        runner = CliRunner()
        run = runner.invoke(
            cli,
            ["run", "--repeat", str(REPEAT), "--commit", head, "--branch", "pr", "--base-branch", "main", "-q"],
            env=env,
            catch_exceptions=False,
        )
        assert run.exit_code in (0, 1), run.output
        verdict_file = self.root.parent / f"verdict-{seed}.json"
        gate = runner.invoke(cli, ["gate", "--json", str(verdict_file)], env=env, catch_exceptions=False)
        verdict: dict[str, object] = json.loads(verdict_file.read_text())
        verdict["exit_code"] = gate.exit_code
        return verdict


def flaky(count: int) -> dict[str, dict[str, object]]:
    return {str(i): {"p": 0.5} for i in range(count)}


def blocking_kinds(verdict: dict[str, object]) -> set[str]:
    findings = verdict["findings"]
    assert isinstance(findings, list)
    return {f["kind"] for f in findings if f["severity"] == "blocking"}


def test_a_fresh_history_gets_a_paired_verdict_from_the_base_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo", flaky(10))
    repo.change({"README.md": "docs only\n"})
    verdict = repo.gate(monkeypatch, seed=1)
    baseline = verdict["baseline"]
    assert isinstance(baseline, dict)
    assert baseline["on_demand_cases"] == CASES
    assert baseline["commit"] == git(repo.root, "rev-parse", "main")
    assert baseline["chosen_by"].startswith("base side run on demand at the merge-base")
    assert not [f for f in verdict["findings"] if f["kind"] == "no_baseline"]  # type: ignore[union-attr]
    assert verdict["outcome"] != "fail" and verdict["exit_code"] == 0
    # the base side's run is stored at the merge-base for the next pull request, and `latest` is still the PR's
    assert git(repo.root, "worktree", "list").count("\n") == 0  # the worktree was removed


def test_an_unchanged_agent_with_flaky_cases_is_never_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo", flaky(10))
    repo.change({"README.md": "docs only\n"})
    outcomes = [repo.gate(monkeypatch, seed)["outcome"] for seed in range(5)]
    assert "fail" not in outcomes, outcomes


def test_five_cases_always_to_never_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    behaviour = flaky(10)
    repo = Repo(tmp_path / "repo", behaviour)
    broken = {**behaviour, **{str(i): {"p": 0.0} for i in range(20, 25)}}
    repo.change({"behaviour.json": json.dumps(broken)})
    verdicts = [repo.gate(monkeypatch, seed) for seed in range(5)]
    assert sum(v["outcome"] == "fail" for v in verdicts) >= 4
    assert all("newly_broken" in blocking_kinds(v) for v in verdicts if v["outcome"] == "fail")
    assert all(v["exit_code"] == 1 for v in verdicts if v["outcome"] == "fail")


def test_a_new_agent_target_that_breaks_cases_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo", flaky(10))
    broken = {**flaky(10), **{str(i): {"p": 0.0} for i in range(20, 40)}}
    repo.change(
        {
            "agent_v2.py": AGENT.replace('"behaviour.json"', '"behaviour_v2.json"'),
            "behaviour_v2.json": json.dumps(broken),
            "evalward.toml": 'paths = ["evals/"]\nagent = "agent_v2.py:run"\n[gate]\nseed = 7\n',
        }
    )
    verdict = repo.gate(monkeypatch, seed=3)
    assert verdict["outcome"] == "fail"
    baseline = verdict["baseline"]
    assert isinstance(baseline, dict)
    assert "agent target changed: agent.py:run → agent_v2.py:run" in baseline["notes"]


def test_a_new_agent_target_with_the_same_behaviour_is_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo", flaky(10))
    repo.change(
        {
            "agent_v2.py": AGENT,
            "evalward.toml": 'paths = ["evals/"]\nagent = "agent_v2.py:run"\n[gate]\nseed = 7\n',
        }
    )
    verdict = repo.gate(monkeypatch, seed=4)
    assert verdict["outcome"] != "fail"
    assert verdict["baseline"] is not None
    assert not [f for f in verdict["findings"] if f["kind"] == "no_baseline"]  # type: ignore[union-attr]


def test_baseline_errors_do_not_hide_other_broken_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the base agent raises on cases 0–9; the PR fixes them and breaks cases 30–39
    repo = Repo(tmp_path / "repo", {str(i): {"raise": True} for i in range(10)})
    repo.change({"behaviour.json": json.dumps({str(i): {"p": 0.0} for i in range(30, 40)})})
    verdict = repo.gate(monkeypatch, seed=5)
    assert verdict["outcome"] == "fail"
    counts = verdict["counts"]
    assert isinstance(counts, dict) and counts["baseline_errored"] == 10
    assert "newly_broken" in blocking_kinds(verdict)


def test_a_pull_request_adding_an_eval_file_compares_the_shared_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo", flaky(10))
    repo.change({"evals/extra.evalset.json": json.dumps(eval_set("extra", range(CASES, CASES + 10)))})
    verdict = repo.gate(monkeypatch, seed=6)
    assert verdict["outcome"] != "fail"
    counts = verdict["counts"]
    assert isinstance(counts, dict) and counts["compared"] == CASES + 10


def test_a_loosened_threshold_is_compared_after_re_scoring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the first gate stores the base side; a later PR from the same base loosens the threshold: the stored
    # baseline is re-scored under the new criteria instead of being refused
    repo = Repo(tmp_path / "repo", flaky(10))
    repo.change({"README.md": "docs\n"})
    first = repo.gate(monkeypatch, seed=8)
    assert first["outcome"] != "fail"
    db = repo.root.parent / "history-8.db"
    git(repo.root, "checkout", "-q", "main")
    git(repo.root, "checkout", "-q", "-b", "pr2")
    repo.change({"evals/test_config.json": json.dumps({"criteria": {"tool_trajectory_avg_score": 0.0}})})
    monkeypatch.chdir(repo.root)
    env = {"EVALWARD_DB": f"sqlite:///{db}", "SIM_SEED": "8"}
    runner = CliRunner()
    head = git(repo.root, "rev-parse", "HEAD")
    run = runner.invoke(cli, ["run", "--repeat", str(REPEAT), "--commit", head, "--branch", "pr2", "--base-branch",
                              "main", "-q"], env=env, catch_exceptions=False)  # fmt: skip
    assert run.exit_code == 0, run.output
    out = repo.root.parent / "second.json"
    gate = runner.invoke(cli, ["gate", "--json", str(out)], env=env, catch_exceptions=False)
    verdict = json.loads(out.read_text())
    assert gate.exit_code == 0, gate.output
    assert verdict["baseline"]["rescored_cases"] == CASES * REPEAT
    assert verdict["baseline"]["on_demand_cases"] == 0
    assert not [f for f in verdict["findings"] if f["kind"] in ("changed_case", "mismatch")]


def test_a_sampled_run_is_compared_on_its_sample_with_a_full_stored_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the first gate stores the base side for all 60 cases; a later PR runs a sample of 10: those 10 are compared
    # with their stored baseline, and the other 50 are not "removed" cases
    repo = Repo(tmp_path / "repo", {})
    repo.change({"README.md": "docs\n"})
    assert repo.gate(monkeypatch, seed=9)["outcome"] == "pass"
    db = repo.root.parent / "history-9.db"
    git(repo.root, "checkout", "-q", "main")
    git(repo.root, "checkout", "-q", "-b", "pr2")
    repo.change({"NOTES.md": "more docs\n"})
    monkeypatch.chdir(repo.root)
    env = {"EVALWARD_DB": f"sqlite:///{db}", "SIM_SEED": "9"}
    runner = CliRunner()
    head = git(repo.root, "rev-parse", "HEAD")
    run = runner.invoke(cli, ["run", "--sample", "10", "--repeat", str(REPEAT), "--commit", head, "--branch", "pr2",
                              "--base-branch", "main", "-q"], env=env, catch_exceptions=False)  # fmt: skip
    assert run.exit_code == 0, run.output
    out = repo.root.parent / "sampled.json"
    gate = runner.invoke(cli, ["gate", "--json", str(out)], env=env, catch_exceptions=False)
    verdict = json.loads(out.read_text())
    assert gate.exit_code == 0, gate.output
    assert verdict["counts"]["compared"] == 10
    assert verdict["counts"]["removed"] == 0
    assert not [f for f in verdict["findings"] if f["kind"] in ("removed_case", "missing_case")]
    assert verdict["baseline"]["on_demand_cases"] == 0
    assert (
        "50 baseline case(s) outside this run's selection (--sample 10 (10 of 60 cases)) not compared"
        in verdict["baseline"]["notes"]
    )


def test_the_environment_is_not_changed_by_the_scenarios() -> None:
    assert "SIM_SEED" not in os.environ
