"""The gate decides, through `evalward ci` as a new adopter runs it (issue #29): a pull-request event, a fresh history
database, the base side run on demand at the merge-base, the default policy (no margins loosened).

- 8 deterministic cases, the PR breaks a tool call in 3 of them: **fail**, exit 1, the first line names the 3
  (the first look at 1 repetition cannot block, p = 1/8; the three are re-run 5 times on each side and break again);
- 20 deterministic cases, nothing changed: **pass**, exit 0, at 4 runs of the suite (the run, the base side, two more
  repetitions of the PR side: 60 passing repetitions bound the drop by ZF(60, 0.05) = 0.0487 ≤ 0.05).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from evalward._ci import run_ci

from .conftest import AGENT, EXAMPLES, HOSTILE, REPO, Workspace, eval_set, git, outputs, summary

CITIES = [
    "Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Perth", "Delhi", "Rome", "Seoul",
    "Bern", "Kyiv", "Doha", "Riga", "Baku", "Suva", "Male", "Apia", "Agra", "Nice",
]  # fmt: skip


def repository(root: Path, cities: list[str], broken: list[str]) -> tuple[str, str]:
    """`master` with the eval set and the agent (its `bad` mode drops the tool call for `broken`), then the PR's
    branch one commit ahead: (base SHA, head SHA)."""
    root.mkdir()
    (root / "evals").mkdir()
    (root / "evals" / "weather.eval.json").write_text(json.dumps(eval_set(cities), indent=2) + "\n")
    (root / "agent.py").write_text(AGENT.format(broken=broken, hostile=HOSTILE))
    (root / ".gitignore").write_text("agent_mode.txt\n*.db\n.gh*/\nevalward-results/\n")
    git(root, "init", "--quiet", "--initial-branch=master")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "evals and the agent")
    base = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", "-b", "changes")
    (root / "README.md").write_text("the change\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "the pull request's change")
    return base, git(root, "rev-parse", "HEAD")


def gate_pull_request(workspace: Workspace, base: str, head: str) -> tuple[int, dict[str, object], str]:
    """`evalward ci` on the PR event at the defaults: (exit code, the verdict JSON, the PR comment)."""
    payload = copy.deepcopy(EXAMPLES["pull_request"][0])
    payload["pull_request"]["head"]["sha"] = head
    payload["pull_request"]["base"]["sha"] = base
    env = workspace.env("pull_request", payload)
    options = workspace.options(gate_settings={})  # the default policy, nothing loosened
    result = run_ci(
        options,
        env=env,
        out=io.StringIO(),
        err=io.StringIO(),
        client_factory=workspace.client_factory,
        root=workspace.root,
    )
    verdict = json.loads((workspace.root / "evalward-results" / "verdict.json").read_text())
    [comment] = workspace.fake.comments_on(REPO, int(payload["number"]))
    assert outputs(env)["passed"] == ("true" if result.exit_code == 0 else "false")
    assert verdict["headline"].split(" (")[0] in summary(env).replace("\\_", "_")
    return result.exit_code, verdict, str(comment["body"])


def test_three_broken_cases_of_eight_fail_the_pull_request_and_are_named_first(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace.root.parent / "eight"
    broken = CITIES[:3]
    base, head = repository(root, CITIES[:8], broken)
    workspace.root = root
    monkeypatch.chdir(root)
    workspace.agent("bad")
    exit_code, verdict, comment = gate_pull_request(workspace, base, head)
    assert exit_code == 1 and verdict["outcome"] == "fail"
    names = ", ".join(sorted(f"weather/{city.lower()}" for city in broken))
    assert str(verdict["headline"]).startswith(
        f"3 cases passed 1 of 1, now 0 of 1, and again 0 of 5 (5 of 5 at the baseline) when re-run: {names}."
    )
    assert comment.splitlines()[2].startswith("### ❌ 3 cases passed 1 of 1, now 0 of 1")
    assert verdict["look"]["index"] == 2 and verdict["confirmation"]["still_broken"] == names.split(", ")
    # the run (8), the base side on demand (8), the three suspects 5 times on each side (30): nothing more
    assert verdict["agent_runs"] == {**verdict["agent_runs"], "current": 8, "base_side": 8, "top_up_current": 15}
    assert "**Agent runs**: 8 for this run, 8 on the base side (run on demand), 30 in the top-up" in comment


def test_twenty_unchanged_deterministic_cases_pass_at_four_runs_of_the_suite(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace.root.parent / "twenty"
    base, head = repository(root, CITIES, [])
    workspace.root = root
    monkeypatch.chdir(root)
    exit_code, verdict, comment = gate_pull_request(workspace, base, head)
    assert exit_code == 0 and verdict["outcome"] == "pass"
    runs = verdict["agent_runs"]
    assert (runs["current"], runs["base_side"], runs["top_up_current"], runs["top_up_baseline"]) == (20, 20, 40, 0)
    assert verdict["top_up"]["head_only"] and verdict["look"]["index"] == 2
    assert "80 in all, 4.0× one run of the suite" in comment
    assert [c["conclusion"] for c in workspace.fake.check_runs.values()][-1] == "success"
