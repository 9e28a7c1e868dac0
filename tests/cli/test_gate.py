"""`evalward gate`, `compare`, `runs`, `history`, `export`/`import` and `merge` through the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
    # repetitions there and fails all five now: by chance that split has probability 1/C(10, 5) = 1/252 —
    # newly broken (its share of α is 0.1 · 0.05 = 0.005 > 1/252).
    assert verdict["baseline"]["chosen_by"].startswith("merge-base")
    assert "newly_broken" in {f["kind"] for f in verdict["findings"] if f["severity"] == "blocking"}
    assert verdict["newly_broken"]["p_value"] == pytest.approx(1 / 252)
    comment = (tmp_path / "c.md").read_text()
    assert comment.startswith("### ❌ 1 case that always passed now always fails: dice\\_basic/roll\\_16\\_sided")
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
