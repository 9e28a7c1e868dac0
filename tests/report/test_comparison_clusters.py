"""The clustered analysis and the per-case tests in the comparison reports: markdown, HTML, terminal, JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from markdown_it import MarkdownIt
from rich.console import Console

from evalward.gate import GatePolicy, decide
from evalward.model import CaseResult, EvalSetInfo, MetricResult, RunResult, Verdict
from evalward.report.html import render_html
from evalward.report.verdict_markdown import render_verdict_markdown
from evalward.report.verdict_terminal import print_verdict

HOSTILE = "@octocat #1 </details> ```\n<!-- x --> <script>alert(1)</script> <img src=x> | col |"
"""Attacker-shaped case id text."""
STARTED = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
POLICY = GatePolicy(metrics=["m"])


def build(run_id: str, scores: Mapping[str, Sequence[float]], clusters: Mapping[str, str]) -> RunResult:
    """A run of metric `m` over eval set `s`: per case its scores over repetitions (≥ 0.5 passes)."""
    cases = [
        CaseResult(
            eval_set_id="s",
            case_id=case_id,
            repetition=repetition,
            status="passed" if value >= 0.5 else "failed",
            metric_results=[MetricResult(name="m", score=value, status="informational")],
            content_hash=f"hash-{case_id}",
            cluster=clusters.get(case_id),
        )
        for case_id, values in scores.items()
        for repetition, value in enumerate(values)
    ]
    info = EvalSetInfo(eval_set_id="s", format="native", content_hash="h", case_hashes={c: f"hash-{c}" for c in scores})
    return RunResult(
        run_id=run_id,
        status="complete",
        passed=all(c.status == "passed" for c in cases),
        repetitions=max(len(v) for v in scores.values()),
        started_at=STARTED,
        eval_sets=[info],
        cases=cases,
    )


SIX = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C", "c2": "C"}


def clustered_k1() -> tuple[RunResult, RunResult, Verdict]:
    """The GATE-test hand example: d = (−1, −1 | −1, 0 | 0, 0) in clusters A, B, C at k = 1."""
    base = build("base", {c: [1.0] for c in SIX}, SIX)
    head = build("head", {"a1": [0.0], "a2": [0.0], "b1": [0.0], "b2": [1.0], "c1": [1.0], "c2": [1.0]}, SIX)
    return base, head, decide(head, base, POLICY)


def per_case_k5(first_case: str = "c0") -> tuple[RunResult, RunResult, Verdict]:
    """c0 5/5 → 0/5 (p = 1/252), c1 5/5 → 5/5 (p = 1), c2 5/5 → 4/5 (p = 0.5); BH q = 1/84, 1, 0.75."""
    before = {first_case: [1.0] * 5, "c1": [1.0] * 5, "c2": [1.0] * 5}
    after = {first_case: [0.0] * 5, "c1": [1.0] * 5, "c2": [1.0, 1.0, 1.0, 1.0, 0.0]}
    base, head = build("base", before, {}), build("head", after, {})
    return base, head, decide(head, base, POLICY)


def terminal(current: RunResult, verdict: Verdict, baseline: RunResult) -> str:
    console = Console(record=True, width=200, force_terminal=False)
    print_verdict(current, verdict, console, baseline=baseline)
    return console.export_text()


def test_markdown_says_the_analysis_was_clustered_and_shows_g() -> None:
    base, head, verdict = clustered_k1()
    text = render_verdict_markdown(head, verdict, baseline=base)
    # p = 1/4 from the 4 sign vectors over the cluster sums (−2, −1); SE_cl = √3/6 = 0.289
    assert "| m (n=6, G=3 clusters, k=1/1) | 1.000 | 0.500 | -0.500 / -50.0% |" in text
    assert "| 0.25 (exact sign-flip over 3 clusters) | ⚠️ inconclusive |" in text
    assert (
        "**Clustered analysis**: cases sharing a cluster label are analysed as one unit: one sign flip per "
        "cluster, whole clusters resampled by the bootstrap, and the clustered standard error SE_cl; unlabelled "
        "cases are clusters of one. m: G = 3 clusters over n = 6 cases, SE_cl = 0.289."
    ) in text


def test_markdown_explains_why_no_per_case_test_ran() -> None:
    base, head, verdict = clustered_k1()
    text = render_verdict_markdown(head, verdict, baseline=base)
    # k = 1: the best a case can do is 1/1 → 0/1, p = 1/C(2,1) = 0.5
    assert (
        "**Per-case tests**: not run: a case needs k ≥ 5 runs on both sides to be tested on its own (here "
        "k = 1/1, baseline/this run; even 1/1 → 0/1 passes only reaches one-sided Fisher p = 1/C(2,1) = 0.5)."
    ) in text


def test_markdown_k3_note_matches_gate_md() -> None:
    base = build("base", {"x": [1.0] * 3, "y": [1.0] * 3}, {})
    head = build("head", {"x": [0.0] * 3, "y": [1.0] * 3}, {})
    text = render_verdict_markdown(head, decide(head, base, POLICY), baseline=base)
    # docs/gate.md §8: with k = 3 even 3/3 → 0/3 only reaches p = 1/C(6,3) = 0.05
    assert (
        "(here k = 3/3, baseline/this run; even 3/3 → 0/3 passes only reaches one-sided Fisher p = 1/C(6,3) = 0.05)"
        in text
    )


def test_markdown_lists_per_case_regressions_and_details_them() -> None:
    base, head, verdict = per_case_k5()
    text = render_verdict_markdown(head, verdict, baseline=base)
    assert (
        "**Per-case tests**: diagnostic, not gating: one-sided Fisher exact test per case with ≥ 5 runs on both "
        "sides, Benjamini–Hochberg q < 0.1 across the 3 tested cases; 1 regressed (per-case test): "
        "`s/c0` 5/5 → 0/5, p = 0.003968, q = 0.0119."
    ) in text
    # the case gets a section saying why, with the test
    assert "regressed (per-case test, q = 0.0119) · passes 5/5 → 0/5</summary>" in text
    assert (
        "**Per-case test**: one-sided Fisher exact p = 0.003968, Benjamini–Hochberg q = 0.0119 → regressed "
        "(per-case test) (diagnostic: this test alone never fails the gate)"
    ) in text
    assert "Clustered analysis" not in text  # no labels, no clustered wording
    assert "G=" not in text


def test_html_shows_clusters_and_the_per_case_columns() -> None:
    base, head, verdict = clustered_k1()
    page = render_html(head, verdict=verdict, baseline=base)
    assert "(n=6, G=3 clusters, k=1/1)" in page
    assert "<p><strong>Clustered analysis</strong>: cases sharing a cluster label" in page
    assert "<code>m</code>: G = 3 clusters over n = 6 cases, SE_cl = 0.289.</p>" in page
    assert "<p><strong>Per-case tests</strong>: not run: a case needs k ≥ 5 runs" in page
    assert "<th>Fisher p</th>" not in page  # nothing was tested

    base, head, verdict = per_case_k5()
    page = render_html(head, verdict=verdict, baseline=base)
    assert "<th>b_i → c_i</th><th>Fisher p</th><th>BH q</th></tr>" in page
    # c0 flagged (q in red), c2 tested but not flagged
    assert "<td class=num>0.003968</td><td class='num regressed'>0.0119</td>" in page
    assert "<td class=num>0.5</td><td class='num'>0.75</td>" in page
    assert "1 regressed (per-case test): <code>s/c0</code> 5/5 → 0/5, p = 0.003968, q = 0.0119.</p>" in page


def test_terminal_shows_both() -> None:
    base, head, verdict = clustered_k1()
    text = terminal(head, verdict, base)
    assert "m (n=6, G=3 clusters, k=1/1)" in text
    assert "Clustered m: G = 3 clusters over n = 6 cases, SE_cl = 0.289;" in text
    assert "Per-case tests: not run: a case needs k ≥ 5 runs on both sides" in text
    base, head, verdict = per_case_k5()
    text = terminal(head, verdict, base)
    assert "  ✗ s/c0  5/5 → 0/5, p = 0.003968, q = 0.0119" in text
    assert "per-case test: one-sided Fisher exact p = 0.003968, Benjamini–Hochberg q = 0.0119 → regressed" in text


def test_verdict_json_carries_the_new_fields_and_old_json_still_loads() -> None:
    _, _, verdict = per_case_k5()
    data = json.loads(verdict.model_dump_json())
    assert data["per_case_tests"] == {
        "min_runs": 5,
        "q_threshold": 0.1,
        "tested": 3,
        "untested": 0,
        "flagged": 1,
        "k_baseline": 5,
        "k_current": 5,
    }
    c0 = next(c for c in data["cases"] if c["case_id"] == "c0")
    assert (c0["fisher_p"], c0["per_case_regressed"], c0["cluster"]) == (1 / 252, True, None)
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
    # a verdict stored before these fields existed still reads, with nothing clustered or tested
    del data["per_case_tests"]
    for case in data["cases"]:
        for key in ("fisher_p", "fisher_q", "per_case_regressed", "cluster"):
            del case[key]
    for metric in data["metrics"]:
        del metric["n_clusters"], metric["se"]
    old = Verdict.model_validate(data)
    assert old.per_case_tests is None and old.metrics[0].n_clusters is None
    assert not any(c.per_case_regressed for c in old.cases)

    _, _, clustered = clustered_k1()
    metric = json.loads(clustered.model_dump_json())["metrics"][0]
    assert (metric["n_clusters"], round(metric["se"], 6)) == (3, 0.288675)


def test_hostile_case_ids_in_the_per_case_list_are_escaped() -> None:
    base, head, verdict = per_case_k5(first_case=f"x {HOSTILE}")
    text = render_verdict_markdown(head, verdict, baseline=base)
    [line] = [line for line in text.split("\n") if line.startswith("**Per-case tests**")]
    assert line.endswith("q = 0.0119.")  # the id stayed on the line, inside its code span
    rendered = MarkdownIt("commonmark").enable("table").render(line)
    prose = rendered.split("<code>")[0] + rendered.split("</code>")[-1]
    assert "@octocat" not in prose and "<script>" not in rendered and "<img" not in rendered
    page = render_html(head, verdict=verdict, baseline=base)
    assert "<script>" not in page and "<img src=x>" not in page and "&lt;img src=x&gt;" in page
