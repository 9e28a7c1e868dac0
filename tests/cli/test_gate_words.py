"""`evalward run` → `gate` / `compare` end to end: the words every report uses agree with each other and with the
outcome — failed expectations are thresholds, "0 added" lists no added case, a case's passes are counted ("passed
3 of 3, now 0 of 3", "always" only from the base branch's history), and the judged run is named by what it is
(this commit, run B), never "this PR" outside a pull request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

AGENT = """\
import os


def root_agent(request):
    if request["case_id"] in os.environ.get("BROKEN_CASES", "").split(","):
        return {"response": "sorry", "tool_calls": []}  # the change under review: this case loses its tool call
    return {"response": "hello", "tool_calls": [{"name": "wave", "args": {}}]}
"""

CHECKS = """\
def polite(outputs):  # the case expects a response: `outputs` is the answer text
    return "please" in (outputs or "")
"""

CASES = """\
  - {id: waves, query: wave at me, expect: {tool_calls: [{name: wave, args: {}}]}}
  - {id: nods, query: nod at me, expect: {tool_calls: [{name: wave, args: {}}]}}
  - {id: greets, query: say good morning, expect: {response: good morning}}
  - id: polite
    query: ask politely
    expect: {response: please}
    metrics: [{name: polite, evaluator: "checks:polite", threshold: null}]
"""
EVALS = "evalward: 1\neval_set_id: shop\ncases:\n" + CASES
"""Two cases the agent passes (`waves`, `nods`) and two it never can: `greets` expects a response, which is scored
by `response_rouge1` without a threshold (nothing can pass it), and `polite` is failed by a pass/fail check
without a threshold."""
EXTRA_CASE = "  - {id: extra, query: wave again, expect: {tool_calls: [{name: wave, args: {}}]}}\n"


def cli(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalward", *args],
        cwd=tmp_path,
        env={**os.environ, "EVALWARD_DB": f"sqlite:///{tmp_path}/h.db", "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def run_id_of(completed: subprocess.CompletedProcess[str]) -> str:
    return completed.stdout.strip().splitlines()[-1].removeprefix("run id: ")


def workspace(tmp_path: Path, evals: str = EVALS) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "shop.eval.yaml").write_text(evals)


def run(tmp_path: Path, *args: str, broken: str = "", expect: int = 1) -> str:
    """`evalward run` of the shop eval set (two of its cases always fail, so exit 1); its run id."""
    done = cli(["run", "shop.eval.yaml", "--agent", "agent.py:root_agent", *args], tmp_path, BROKEN_CASES=broken)
    assert done.returncode == expect, done.stdout + done.stderr
    return run_id_of(done)


def reports(tmp_path: Path) -> tuple[dict[str, Any], str, str]:
    """The verdict JSON, the markdown and the HTML a gate or compare wrote."""
    verdict = json.loads((tmp_path / "v.json").read_text())
    return verdict, (tmp_path / "c.md").read_text(), (tmp_path / "r.html").read_text()


OUTPUTS = ["--json", "v.json", "--markdown", "c.md", "--html", "r.html"]


def test_without_a_baseline_failed_expectations_fail_the_gate_and_name_the_cases(tmp_path: Path) -> None:
    workspace(tmp_path)
    run_id = run(tmp_path, "--repeat", "2", "--commit", "a" * 40, "--branch", "main")
    gate = cli(["gate", "--run", run_id, "--baseline", "none", *OUTPUTS], tmp_path)

    # Every repetition of greets and polite failed (the run said so): judged by its thresholds alone, the gate
    # fails, exit 1, and says which cases — never "every case met its thresholds".
    assert gate.returncode == 1, gate.stdout + gate.stderr
    verdict, markdown, html = reports(tmp_path)
    assert verdict["outcome"] == "fail"
    assert gate.stdout.startswith("GATE FAIL  2 cases miss their thresholds: shop/greets, shop/polite.")
    assert markdown.startswith("### ❌ 2 cases miss their thresholds: shop/greets, shop/polite.")
    for said in (gate.stdout, markdown, html):
        assert "Every case met" not in said
    blocking = {f["case_id"]: f["message"] for f in verdict["findings"] if f["severity"] == "blocking"}
    assert set(blocking) == {"greets", "polite"}
    assert blocking["greets"] == (
        "Case shop/greets failed in 2 of 2 repetitions: no metric could pass it (response_rouge1 is informational, "
        "without a threshold; tool_trajectory_avg_score did not apply); a case passes only when a metric with a "
        "threshold, or a pass/fail check, passes it."
    )
    assert blocking["polite"].startswith("Case shop/polite: the pass/fail check polite failed in 2 of 2 repetitions")

    # No baseline, so no case is "added": the count says 0 and no report lists the cases as added.
    assert verdict["counts"]["added"] == 0
    assert "Cases: 0 compared, 0 added," in gate.stdout
    assert "**Cases**: 0 compared · 0 added ·" in markdown
    assert "0 compared · 0 added ·" in html
    for said in (gate.stdout, markdown, html):
        assert "Added (not compared)" not in said
    assert "<td class=muted>not compared (no baseline)</td>" in html
    assert "<td class=muted>new</td>" not in html

    # A run on the base branch with no pull request: "this commit" wherever the judged run is named.
    assert "**Repetition 1** of this commit (failed)" in markdown
    for said in (gate.stdout, markdown, html):
        assert "this PR" not in said


def test_a_newly_broken_case_is_counted_and_always_only_when_history_says_so(tmp_path: Path) -> None:
    workspace(tmp_path)
    # Two runs on main: waves passed 3 of 3 in both, so the base branch's history has it never flipping.
    run(tmp_path, "--repeat", "3", "--commit", "1" * 40, "--branch", "main")
    run(tmp_path, "--repeat", "3", "--commit", "2" * 40, "--branch", "main")
    pr = run(
        tmp_path,
        "--repeat", "3", "--commit", "3" * 40, "--branch", "feature", "--base-branch", "main",
        "--base-sha", "2" * 40, "--pr", "7",
        broken="waves",
    )  # fmt: skip
    gate = cli(["gate", "--run", pr, *OUTPUTS], tmp_path)
    assert gate.returncode in (0, 1), gate.stdout + gate.stderr
    verdict, markdown, _ = reports(tmp_path)
    # waves: 3/3 at the baseline → 0/3 now, by chance with probability 1/C(6,3) = 0.05 (one case: shown, not
    # blocking); its flip rate on main is 0 of 1 pair → "always" is what the history says.
    assert verdict["newly_broken"]["cases"] == ["shop/waves"]
    assert [d["flip_rate"] for d in verdict["cases"] if d["case_id"] == "waves"] == [0.0]
    said = "1 case passed 3 of 3, now 0 of 3: shop/waves. It always passed on the base branch before."
    assert said in verdict["headline"]
    assert said in gate.stdout
    assert said in markdown.splitlines()[0]
    assert "always passed now always" not in verdict["headline"]
    # A pull request's run: "this PR" in the reports.
    assert "| metric | baseline | this PR |" in markdown


def test_compare_names_its_second_run_run_b_and_lists_the_added_case(tmp_path: Path) -> None:
    workspace(tmp_path)
    a = run(tmp_path, "--repeat", "2", "--commit", "a" * 40, "--branch", "main")
    (tmp_path / "shop.eval.yaml").write_text(EVALS + EXTRA_CASE)
    b = run(tmp_path, "--repeat", "2", "--commit", "b" * 40, "--branch", "feature", "--pr", "7", broken="nods")
    compare = cli(["compare", a, b, *OUTPUTS], tmp_path)
    assert compare.returncode in (0, 1), compare.stdout + compare.stderr
    verdict, markdown, html = reports(tmp_path)

    # `compare A B` judges run B, a pull request's run or not: every report calls it "run B".
    [header] = [line for line in compare.stdout.splitlines() if "metric" in line and "baseline" in line]
    assert "run B" in header
    assert "| metric | baseline | run B |" in markdown
    assert "<th>baseline</th><th>run B</th>" in html
    assert "**Repetition 1** of run B (failed)" in markdown
    for said in (compare.stdout, markdown, html):
        assert "this PR" not in said

    # One case only in run B: one added, and the one listed.
    assert verdict["counts"]["added"] == 1
    assert "Cases: 4 compared, 1 added," in compare.stdout
    assert "Added (not compared) (1): shop/extra" in compare.stdout
    assert "**Cases**: 4 compared · 1 added ·" in markdown
    assert "**Added (not compared)** (1): `shop/extra`" in markdown
    assert "4 compared · 1 added ·" in html
