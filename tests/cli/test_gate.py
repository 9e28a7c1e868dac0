"""`evalward gate`, `compare`, `runs`, `history`, `export`/`import` and `merge` through the real command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gating.test_scenarios import git

ROOT = Path(__file__).resolve().parents[2]
DICE = ROOT / "examples" / "dice_agent"
GOOD = f"{DICE}/agent.py:root_agent"


def cli(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=tmp_path,
        env={**os.environ, "EVALWARD_DB": f"sqlite:///{tmp_path}/h.db", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_id_of(completed: subprocess.CompletedProcess[str]) -> str:
    return completed.stdout.strip().splitlines()[-1].removeprefix("run id: ")


DICE_SOURCE = (DICE / "agent.py").read_text()
BROKEN_SOURCE = (
    DICE_SOURCE
    + """

_original = root_agent


def root_agent(request):  # the PR's change: it forgets the check_prime call
    out = _original(request)
    out["tool_calls"] = [c for c in out["tool_calls"] if c["name"] != "check_prime"]
    return out
"""
)


def baseline_and_pr(tmp_path: Path, *, broken: bool, repeat: int = 3) -> str:
    """A baseline on main and a PR run of the same agent target, whose code the PR may have changed."""
    agent_file = tmp_path / "agent_under_test.py"
    agent_file.write_text(DICE_SOURCE)
    target = f"{agent_file}:root_agent"
    evals = str(DICE / "dice.evalset.json")
    base = cli(
        ["run", evals, "--agent", target, "--repeat", str(repeat), "--commit", "a" * 40, "--branch", "main"], tmp_path
    )
    assert base.returncode == 0, base.stdout + base.stderr
    if broken:
        agent_file.write_text(BROKEN_SOURCE)
    pr = cli(
        [
            "run",
            evals,
            "--agent",
            target,
            "--repeat",
            str(repeat),
            "--commit",
            "b" * 40,
            "--branch",
            "feature",
            "--base-branch",
            "main",
            "--base-sha",
            "a" * 40,
        ],
        tmp_path,
    )
    assert pr.returncode == (1 if broken else 0), pr.stdout + pr.stderr
    return run_id_of(pr)


def test_gate_does_not_fail_an_unchanged_agent(tmp_path: Path) -> None:
    # two cases × 3 repetitions, all passing on both sides: nothing got worse, but two cases are too few to
    # show that nothing did (a pass needs evidence), so the gate says so instead of claiming a pass
    run_id = baseline_and_pr(tmp_path, broken=False)
    gate = cli(["gate", "--run", run_id, "--json", "v.json", "--markdown", "c.md"], tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["outcome"] == "inconclusive"
    assert verdict["headline"].startswith("Not enough evidence either way: 100% of repetitions pass, 100% at the")
    assert verdict["baseline"]["chosen_by"].startswith("merge-base")
    assert (tmp_path / "c.md").read_text().startswith("### ⚠️ Not enough evidence either way")


def test_gate_fails_a_regression_and_shows_the_diff(tmp_path: Path) -> None:
    run_id = baseline_and_pr(tmp_path, broken=True, repeat=5)
    gate = cli(["gate", "--run", run_id, "--markdown", "c.md", "--html", "r.html", "--json", "v.json"], tmp_path)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    # Same agent target, changed code: the baseline is the merge-base run. The prime-check case passed all five
    # repetitions there and fails all five now: by chance that split has probability 1/C(10, 5) = 1/252. The
    # second look could not run (this folder is no git checkout, so no base side), so the first look is the only
    # one, at the whole α = 0.005: the pass-rate test (p = 1/252 < 0.005) blocks; the newly-broken test alone
    # could not reach its share (0.1 · 0.005), and the case is named first.
    assert verdict["baseline"]["chosen_by"].startswith("merge-base")
    assert {f["kind"] for f in verdict["findings"] if f["severity"] == "blocking"} == {"regression"}
    assert verdict["newly_broken"]["p_value"] == pytest.approx(1 / 252)
    assert verdict["look"]["planned"] == 1 and "one look decided" in verdict["headline"]
    comment = (tmp_path / "c.md").read_text()
    # Counted, not "always": one run on main is no history to say the case always passed.
    assert comment.startswith("### ❌ 1 case passed 5 of 5, now 0 of 5: dice\\_basic/roll\\_16\\_sided")
    assert "always" not in verdict["headline"]
    assert "- check_prime(" in comment  # the expected call the PR dropped, in the diff block
    assert len(comment) < 65_536
    assert "<html" in (tmp_path / "r.html").read_text()
    # The verdict that gated the run is kept with it (the dashboard shows this one, not a recomputation).
    from evalward.store import open_store

    with open_store(f"sqlite:///{tmp_path}/h.db") as store:
        [recorded] = store.recorded_verdicts(run_id)
    assert (recorded.source, recorded.verdict.outcome) == ("gate", "fail")
    assert recorded.verdict.model_dump(mode="json") == verdict


def test_a_first_run_without_a_base_side_is_judged_by_its_thresholds(tmp_path: Path) -> None:
    # a fresh history and a base commit that is not in any checkout: nothing to compare with, ever — the
    # thresholds alone decide (ADK's semantics), and the report says so
    pr = cli(
        ["run", str(DICE / "dice.evalset.json"), "--agent", GOOD, "--commit", "c" * 40, "--branch", "x",
         "--base-branch", "main", "--base-sha", "d" * 40],
        tmp_path,
    )  # fmt: skip
    gate = cli(["gate", "--run", run_id_of(pr), "--json", "v.json"], tmp_path)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["outcome"] == "pass"
    [finding] = [f for f in verdict["findings"] if f["kind"] == "no_baseline"]
    assert "a first run: no stored history" in finding["message"]
    assert "judged by the absolute thresholds alone" in finding["message"]


def test_a_missing_baseline_with_history_is_an_error_or_the_policy_says(tmp_path: Path) -> None:
    # the history has runs, but none at this PR's base, and the base cannot be checked out: no verdict (exit 3)
    other = cli(
        ["run", str(DICE / "dice.evalset.json"), "--agent", GOOD, "--commit", "e" * 40, "--branch", "main"], tmp_path
    )
    assert other.returncode == 0, other.stderr
    pr = cli(
        ["run", str(DICE / "dice.evalset.json"), "--agent", GOOD, "--commit", "c" * 40, "--branch", "x",
         "--base-branch", "main", "--base-sha", "d" * 40],
        tmp_path,
    )  # fmt: skip
    run_id = run_id_of(pr)
    error = cli(["gate", "--run", run_id, "--json", "v.json"], tmp_path)
    assert error.returncode == 3, error.stdout + error.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["outcome"] == "error"
    assert verdict["reason"].startswith("Error: No baseline could be made")
    neutral = cli(["gate", "--run", run_id, "--on-missing-baseline", "neutral", "--json", "n.json"], tmp_path)
    assert neutral.returncode == 0
    assert json.loads((tmp_path / "n.json").read_text())["outcome"] == "inconclusive"
    # undecided and --strict: exit 2, told apart from a regression (docs/gate.md §6)
    undecided = cli(["gate", "--run", run_id, "--on-missing-baseline", "neutral", "--strict"], tmp_path)
    assert undecided.returncode == 2, undecided.stdout + undecided.stderr
    strict = cli(["gate", "--run", run_id, "--on-missing-baseline", "fail"], tmp_path)
    assert strict.returncode == 1


def test_gate_refuses_latest_as_baseline(tmp_path: Path) -> None:
    run_id = baseline_and_pr(tmp_path, broken=False)
    refused = cli(["gate", "--run", run_id, "--baseline", "latest"], tmp_path)
    assert refused.returncode == 2
    assert "whatever ran last" in refused.stderr


def test_runs_history_export_import(tmp_path: Path) -> None:
    run_id = baseline_and_pr(tmp_path, broken=False)
    runs = cli(["runs"], tmp_path)
    assert runs.returncode == 0 and run_id in runs.stdout
    history = cli(["history", "--metric", "tool_trajectory_avg_score"], tmp_path)
    assert history.returncode == 0 and "tool_trajectory_avg_score" in history.stdout
    exported = cli(["export", run_id, "--out", "run.json"], tmp_path)
    assert exported.returncode == 0
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["run_id"] == run_id and data["schema_version"] == 1
    other_db = {"EVALWARD_DB": f"sqlite:///{tmp_path}/other.db"}
    imported = cli(["import", "run.json"], tmp_path, **other_db)
    assert imported.returncode == 0 and f"imported {run_id}" in imported.stdout
    again = cli(["import", "run.json"], tmp_path, **other_db)
    assert again.returncode == 0
    assert cli(["runs"], tmp_path, **other_db).stdout.count(run_id) == 1


def test_shards_merge_and_fail_closed(tmp_path: Path) -> None:
    evals = str(DICE)
    ids = []
    for shard in ("1/2", "2/2"):
        done = cli(
            ["run", evals, "--agent", GOOD, "--shard", shard, "--group-id", "g1", "--commit", "e" * 40], tmp_path
        )
        assert done.returncode == 0, done.stderr
        ids.append(run_id_of(done))
    merged = cli(["merge", "--group-id", "g1", "--json", "merged.json"], tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert len(json.loads((tmp_path / "merged.json").read_text())["cases"]) == 3
    missing = cli(["merge", ids[0]], tmp_path)
    assert missing.returncode == 2
    assert "shard" in missing.stderr


# --- the local flow works like CI: a laptop checkout, the commands the README gives ----------------------------

QUICK_START_RUN = ["run", "examples/dice_agent", "--agent", "examples/dice_agent/agent.py:root_agent"]
"""README "Quick start", word for word: relative paths from the repository's top-level folder."""


def local_checkout(tmp_path: Path) -> Path:
    """A clone-like checkout with no remote: the dice example committed on `main`, the history untracked."""
    repo = tmp_path / "repo"
    (repo / "examples").mkdir(parents=True)
    shutil.copytree(DICE, repo / "examples" / "dice_agent", ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gitignore").write_text(".evalward/\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "dice example")
    return repo


def start_feature(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "NOTES.md").write_text("a change that is not the agent's\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature work")


def on_laptop(args: list[str], repo: Path) -> subprocess.CompletedProcess[str]:
    """`evalward ARGS` in `repo` as typed in a local shell: no Actions variables, no EVALWARD_* settings, and no
    git configuration of the user's (its init.defaultBranch would take part in finding the base branch)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALWARD_"))}
    env.update({"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=180
    )


def test_a_local_feature_branch_is_gated_at_its_merge_base_with_the_local_main(tmp_path: Path) -> None:
    repo = local_checkout(tmp_path)
    on_main = on_laptop(QUICK_START_RUN, repo)
    assert on_main.returncode == 0, on_main.stdout + on_main.stderr
    main_run = run_id_of(on_main)
    # on main itself nothing is guessed: a commit that is its own merge-base has no base side (as before)
    main_gate = on_laptop(["gate", "--json", "main.json"], repo)
    assert main_gate.returncode == 0, main_gate.stdout + main_gate.stderr
    assert "base branch main" not in main_gate.stderr
    main_verdict = json.loads((repo / "main.json").read_text())
    assert main_verdict["baseline"] is None
    [no_base] = [f for f in main_verdict["findings"] if f["kind"] == "no_baseline"]
    assert "no base branch or base commit is known for this run" in no_base["message"]

    start_feature(repo)
    pr = on_laptop(QUICK_START_RUN, repo)  # records no base branch: none was given, there is no event
    assert pr.returncode == 0, pr.stdout + pr.stderr
    gate = on_laptop(["gate", "--json", "v.json"], repo)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "note: base branch main (the local default branch: no remote)" in gate.stderr
    verdict = json.loads((repo / "v.json").read_text())
    merge_base = git(repo, "merge-base", "main", "HEAD")
    assert verdict["baseline"]["run_id"] == main_run
    assert verdict["baseline"]["chosen_by"] == (
        f"merge-base {merge_base[:7]} on main; base branch main (the local default branch: no remote)"
    )
    assert not [f for f in verdict["findings"] if f["kind"] == "no_baseline"]


def test_the_quick_start_run_then_gate_compares_with_the_base_side_run_on_demand(tmp_path: Path) -> None:
    # The README's quick start on a feature branch with a fresh history: `evalward gate` reads the run's eval
    # files back (by their absolute paths) to run the base side; the legacy `dice.test.json`, whose case id is its
    # path, must be the case the run stored, not an eval set that "changed since the run" (which left the gate
    # without a baseline: GATE ERROR, exit 3).
    repo = local_checkout(tmp_path)
    start_feature(repo)
    run = on_laptop(QUICK_START_RUN, repo)
    assert run.returncode == 0, run.stdout + run.stderr
    gate = on_laptop(["gate", "--json", "v.json"], repo)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "changed since the run" not in gate.stderr
    assert "GATE ERROR" not in gate.stdout
    verdict = json.loads((repo / "v.json").read_text())
    assert verdict["outcome"] != "error"
    assert verdict["baseline"]["on_demand_cases"] == 3  # every case, the legacy file's too, ran at the merge-base
    assert verdict["baseline"]["chosen_by"].endswith("; base branch main (the local default branch: no remote)")
    exported = on_laptop(["export", run_id_of(run)], repo)
    assert exported.returncode == 0, exported.stderr
    stored = {case["case_id"] for case in json.loads(exported.stdout)["cases"]}
    assert "examples/dice_agent/dice.test.json" in stored  # the id of the path as typed from the top-level folder
