"""`evalward run` → `gate` / `compare` end to end with cluster labels and k = 5: the clustered analysis and
the per-case tests in the JSON verdict, the PR comment and the HTML report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = """\
import os


def root_agent(request):
    word = request["query"].split()[-1]
    broken = os.environ.get("BROKEN_PREFIX")
    if broken and request["case_id"].startswith(broken):
        return {"response": "sorry", "tool_calls": []}  # the PR's change: cases of document A lose the lookup
    return {"response": word, "tool_calls": [{"name": "lookup", "args": {"key": word}}]}
"""

EVALS = """\
evalward: 1
eval_set_id: docs
metrics: [tool_trajectory_avg_score]
cases:
  - {id: a1, cluster: doc-a, query: find alpha, expect: {tool_calls: [{name: lookup, args: {key: alpha}}]}}
  - {id: a2, cluster: doc-a, query: find beta, expect: {tool_calls: [{name: lookup, args: {key: beta}}]}}
  - {id: b1, cluster: doc-b, query: find gamma, expect: {tool_calls: [{name: lookup, args: {key: gamma}}]}}
  - {id: b2, cluster: doc-b, query: find delta, expect: {tool_calls: [{name: lookup, args: {key: delta}}]}}
  - {id: c1, query: find epsilon, expect: {tool_calls: [{name: lookup, args: {key: epsilon}}]}}
  - {id: c2, query: find zeta, expect: {tool_calls: [{name: lookup, args: {key: zeta}}]}}
"""


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


def test_clustered_gate_with_per_case_tests(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "docs.eval.yaml").write_text(EVALS)
    # The clustered arithmetic below (SE_cl, one unit of evidence per cluster for a pass) is the population frame's,
    # worked at α = 0.05 (docs/gate.md §3, §6a).
    (tmp_path / "evalward.toml").write_text('[gate]\ninference = "population"\nalpha = 0.05\n')
    common = ["run", "docs.eval.yaml", "--agent", "agent.py:root_agent", "--repeat", "5"]
    base = cli([*common, "--commit", "a" * 40, "--branch", "main"], tmp_path)
    assert base.returncode == 0, base.stdout + base.stderr
    pr = cli(
        [*common, "--commit", "b" * 40, "--branch", "feature", "--base-branch", "main", "--base-sha", "a" * 40],
        tmp_path,
        BROKEN_PREFIX="a",
    )
    assert pr.returncode == 1, pr.stdout + pr.stderr
    pr_id = run_id_of(pr)

    gate = cli(["gate", "--run", pr_id, "--json", "v.json", "--markdown", "c.md", "--html", "r.html"], tmp_path)
    # a1 and a2 (one document, one cluster) fail every repetition now: one unit of evidence among four
    # clusters, which can neither block nor show non-inferiority — inconclusive, and said so
    assert gate.returncode == 0, gate.stdout + gate.stderr
    verdict = json.loads((tmp_path / "v.json").read_text())
    assert verdict["outcome"] == "inconclusive"
    assert verdict["baseline"]["chosen_by"].startswith("merge-base")
    [rate, metric] = verdict["metrics"]
    assert (rate["metric"], rate["n_clusters"], rate["verdict"]) == ("case_pass", 4, "inconclusive")
    # newly broken, counted per cluster: doc-a is broken; q = 1/252 per case, ≤ 2/252 for the cluster, which
    # cannot reach the test's share of α (0.1 · 0.05 = 0.005): shown as a warning
    broken = verdict["newly_broken"]
    assert (broken["unit"], broken["eligible"], broken["cases"]) == ("cluster", 1, ["docs/a1", "docs/a2"])
    assert broken["p_value"] == pytest.approx(2 / 252) and not broken["significant"]
    # Clusters: doc-a {a1, a2}, doc-b {b1, b2}, and c1, c2 on their own → G = 4. Only doc-a changed:
    # D = (−2, 0, 0, 0), one non-zero cluster sum → 2 sign vectors, the identity alone reaches −2 → p = 1/2.
    # (Unclustered, the two case drops would give p = 1/4.)
    assert (metric["n_clusters"], metric["n_cases"], metric["test"], metric["p_value"]) == (
        4,
        6,
        "sign_flip_exact",
        0.5,
    )
    # Δ̂ = −2/6 = −1/3; D_g − n_g·Δ̂: doc-a −2 + 2/3 = −4/3, doc-b 0 + 2/3 = 2/3, c1 1/3, c2 1/3
    # → Σ² = 16/9 + 4/9 + 1/9 + 1/9 = 22/9; SE_cl = (1/6)·√(4/3 · 22/9) = √(88/27)/6 = 0.300890
    assert round(metric["se"], 6) == 0.300890
    # k = 5 on both sides: all six cases get a Fisher test. a1, a2: 5/5 → 0/5, p = 1/252 each; the other
    # four p = 1. BH over 6: sorted 1/252, 1/252, 1, … → 6·(1/252)/2 = 1/84 for both → flagged.
    assert verdict["per_case_tests"]["tested"] == 6 and verdict["per_case_tests"]["flagged"] == 2
    flagged = {c["case_id"]: (c["fisher_p"], round(c["fisher_q"], 6), c["cluster"]) for c in verdict["cases"]}
    assert flagged["a1"] == (1 / 252, round(1 / 84, 6), "doc-a")
    assert flagged["c1"] == (1.0, 1.0, None)
    assert not any(f["severity"] == "blocking" and f.get("test") == "fisher_exact" for f in verdict["findings"])

    comment = (tmp_path / "c.md").read_text()
    assert "(n=6, G=4 clusters, k=5/5)" in comment
    assert "0.5 (exact sign-flip over 4 clusters)" in comment
    assert "G=4 clusters, and one sign per cluster can reach at best p = 2^-4 = 0.0625" in comment
    assert "**Clustered analysis**" in comment and "G = 4 clusters over n = 6 cases, SE_cl = 0.301" in comment
    assert "2 regressed (per-case test): `docs/a1` 5/5 → 0/5, p = 0.003968, q = 0.0119" in comment
    page = (tmp_path / "r.html").read_text()
    assert "<th>Fisher p</th><th>BH q</th>" in page and "Clustered analysis" in page
    assert "G = 4 clusters over n = 6 cases" in gate.stdout and "Per-case tests" in gate.stdout

    # `compare` (base first) reaches the same clustered statistics
    compared = cli(["compare", run_id_of(base), pr_id, "--json", "cmp.json"], tmp_path)
    assert compared.returncode == 0, compared.stdout + compared.stderr  # no threshold checks in compare
    again = json.loads((tmp_path / "cmp.json").read_text())
    assert (again["metrics"][1]["n_clusters"], again["metrics"][1]["p_value"]) == (4, 0.5)
    assert again["per_case_tests"]["flagged"] == 2
