"""verdict_view.py, verdict_markdown.py and verdict_terminal.py: the verdict as PR comment and terminal output, against snapshots, plus structure,
size and injection checks.

The runs and verdicts are built by hand (`build_*` below, reused by test_html.py); one test feeds runs
through `gate.decide` to check the renderer against the gate's real output.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from evalward.gate import GatePolicy, decide
from evalward.model import (
    AgentTarget,
    BaselineInfo,
    CaseDiagnostic,
    CaseError,
    CaseResult,
    EvalSetInfo,
    Finding,
    InvocationResult,
    MetricComparison,
    MetricResult,
    RunContext,
    RunResult,
    ToolCall,
    Usage,
    Verdict,
    VerdictCounts,
)
from evalward.report.verdict_markdown import render_verdict_markdown
from evalward.report.verdict_terminal import print_verdict
from evalward.report.verdict_view import age_text, delta_text, interval_label

GFM = MarkdownIt("commonmark").enable("table")
STARTED = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
DIGEST = "d" * 64
TRAJ = "tool_trajectory_avg_score"

HOSTILE = (
    "@octocat see #1 </details> ```\n"
    "<!-- evalward:x --> <script>alert(1)</script> <img src=x onerror=alert(1)>\n"
    "::set-output name=x::y ##[warning]legacy\n"
    "\u202eevil\u2066 [bold]x[/bold] | col |"
)
"""Every injection the verdict reports must neutralise."""


# ------------------------------------------------------------------------------------------ builders


def _traj_metric(score: float) -> MetricResult:
    return MetricResult(
        name=TRAJ,
        score=score,
        threshold=1.0,
        status="passed" if score >= 1.0 else "failed",
        explanation=f"exact match: {score:.3f}",
    )


def build_result(
    case_id: str,
    repetition: int,
    *,
    seat: str = "aisle",
    response: str = "Booked AF123, seat aisle.",
    must_pass: bool = False,
    tokens: int = 100,
    cost: float = 0.01,
    latency: float = 1.0,
    expected_seat: str = "aisle",
    error: bool = False,
) -> CaseResult:
    """One repetition of a booking case: passes when the agent books `expected_seat`."""
    expected = [
        ToolCall(name="search_flights", args={"destination": "Paris"}),
        ToolCall(name="book_flight", args={"flight_id": "AF123", "seat": expected_seat}),
    ]
    actual = [
        ToolCall(name="search_flights", args={"destination": "Paris"}),
        ToolCall(name="book_flight", args={"flight_id": "AF123", "seat": seat}),
    ]
    score = 1.0 if seat == expected_seat else 0.0
    metric = _traj_metric(score)
    return CaseResult(
        eval_set_id="travel",
        case_id=case_id,
        repetition=repetition,
        status="error" if error else ("passed" if score == 1.0 else "failed"),
        metric_results=[] if error else [metric],
        invocations=[
            InvocationResult(
                turn=0,
                query="Book me an aisle seat to Paris.",
                expected_response="Booked AF123, seat aisle.",
                actual_response=response,
                expected_tool_calls=expected,
                actual_tool_calls=actual,
                metric_results=[] if error else [metric],
            )
        ],
        error=CaseError(kind="timeout", message="turn 1 exceeded the 30s timeout", turn=0) if error else None,
        usage=Usage(input_tokens=tokens, output_tokens=tokens // 2, cost_usd=cost),
        latency_s=latency,
        content_hash=f"hash-{case_id}",
        must_pass=must_pass,
    )


def build_run(run_id: str, cases: list[CaseResult], *, commit: str, branch: str, repetitions: int = 3) -> RunResult:
    return RunResult(
        run_id=run_id,
        passed=all(c.status == "passed" for c in cases),
        repetitions=repetitions,
        started_at=STARTED,
        agent=AgentTarget(kind="python", target="travel_agent.agent:root_agent"),
        eval_sets=[EvalSetInfo(eval_set_id="travel", format="native", content_hash="a" * 64)],
        context=RunContext(repository="acme/travel", commit=commit, branch=branch, pr_number=7),
        cases=cases,
    )


def build_baseline_run() -> RunResult:
    """book_flight and greeting pass 3/3."""
    cases = [build_result("book_flight", r, must_pass=True) for r in range(3)]
    cases += [build_result("greeting", r, latency=0.5) for r in range(3)]
    return build_run("run-base", cases, commit="b" * 40, branch="main")


def build_current_run() -> RunResult:
    """book_flight now books a window seat in every repetition (0/3), uses more tokens and says so."""
    cases = [
        build_result(
            "book_flight",
            r,
            seat="window",
            response="Booked AF123 with a window seat.",
            must_pass=True,
            tokens=180,
            cost=0.015,
            latency=1.5,
        )
        for r in range(3)
    ]
    cases += [build_result("greeting", r, latency=0.5) for r in range(3)]
    return build_run("run-pr-7", cases, commit="c" * 40, branch="feature/window")


def _comparison(**overrides: object) -> MetricComparison:
    fields: dict[str, object] = {
        "metric": TRAJ,
        "gated": True,
        "baseline_mean": 1.0,
        "current_mean": 0.5,
        "delta": -0.5,
        "ci_low": -1.0,
        "ci_high": 0.0,
        "p_value": 0.5,
        "p_adjusted": 0.5,
        "test": "sign_flip_exact",
        "n_cases": 2,
        "k_baseline": 3,
        "k_current": 3,
        "delta_block": 0.02,
        "delta_ni": 0.05,
        "verdict": "inconclusive",
        "explanation": f"{TRAJ} (gated): n=2 paired cases; mean 1.000 → 0.500, Δ̂ = -0.500",
    }
    fields.update(overrides)
    return MetricComparison.model_validate(fields)


def _baseline_info() -> BaselineInfo:
    return BaselineInfo(
        run_id="run-base",
        commit="b" * 40,
        branch="main",
        age_s=3 * 3600 + 720,  # 3.2 h
        chosen_by="merge-base bbbbbbb by exact SHA and fingerprint",
    )


def build_fail_verdict() -> Verdict:
    """What the gate says about build_current_run vs build_baseline_run (hand-built, numbers chosen)."""
    must = Finding(
        kind="must_pass",
        severity="blocking",
        message="Must-pass case travel/book_flight failed or errored in 3 of 3 repetitions (allowed: 0); "
        "hard gates are not statistical.",
        case_id="book_flight",
        eval_set_id="travel",
        current_value=0.0,
    )
    threshold = Finding(
        kind="threshold",
        severity="blocking",
        message=f"Case travel/book_flight: {TRAJ} must be >= 1; failed in 3 of 3 repetitions.",
        case_id="book_flight",
        eval_set_id="travel",
        metric=TRAJ,
        current_value=0.0,
    )
    likely = Finding(
        kind="regression",
        severity="info",
        message=f"Case travel/book_flight likely regressed: {TRAJ} 1.000 → 0.000 (drop ≥ 0.5).",
        case_id="book_flight",
        eval_set_id="travel",
        metric=TRAJ,
        baseline_value=1.0,
        current_value=0.0,
    )
    latency = Finding(
        kind="latency",
        severity="warning",
        message="p50 latency ratio 1.25 [1.20, 1.30]: regressed beyond 1 + τ = 1.1 (informational).",
        effect=1.25,
        ci_low=1.2,
        ci_high=1.3,
        test="log_ratio_bootstrap",
    )
    return Verdict(
        outcome="fail",
        reason="Failed: Must-pass case travel/book_flight failed or errored in 3 of 3 repetitions (allowed: 0); "
        "hard gates are not statistical (and 1 more blocking finding).",
        current_run_id="run-pr-7",
        findings=[must, threshold, latency, likely],
        metrics=[_comparison(mde=1.7, n_needed=14_450)],
        cases=[
            CaseDiagnostic(
                eval_set_id="travel",
                case_id="book_flight",
                label="regressed",
                baseline_passes=3,
                baseline_k=3,
                current_passes=0,
                current_k=3,
                baseline_scores={TRAJ: 1.0},
                current_scores={TRAJ: 0.0},
                likely_regressed_metrics=[TRAJ],
            ),
            CaseDiagnostic(
                eval_set_id="travel",
                case_id="greeting",
                label="stable_pass",
                baseline_passes=3,
                baseline_k=3,
                current_passes=3,
                current_k=3,
                baseline_scores={TRAJ: 1.0},
                current_scores={TRAJ: 1.0},
            ),
        ],
        baseline=_baseline_info(),
        counts=VerdictCounts(compared=2),
        alpha=0.05,
        seed=12345,
        policy_digest=DIGEST,
    )


def build_pass_verdict() -> Verdict:
    """A pass: 0.900 → 0.950 over 40 cases, one improved and one new case."""
    metric = _comparison(
        baseline_mean=0.9,
        current_mean=0.95,
        delta=0.05,
        ci_low=0.0125,
        ci_high=0.0875,
        p_value=0.998,
        p_adjusted=0.998,
        test="mcnemar_exact",
        n_cases=40,
        k_baseline=1,
        k_current=1,
        verdict="pass",
        explanation="",
    )
    return Verdict(
        outcome="pass",
        reason=f"Passed: no gated metric ({TRAJ}) regressed over 40 compared cases, and every hard check passed.",
        current_run_id="run-pr-7",
        findings=[
            Finding(
                kind="improvement",
                severity="info",
                message=f"{TRAJ} improved: 0.900 → 0.950.",
                metric=TRAJ,
            ),
            Finding(
                kind="added_case",
                severity="info",
                message="Case travel/new_one is new: not compared.",
                case_id="new_one",
                eval_set_id="travel",
            ),
        ],
        metrics=[metric],
        cases=[
            CaseDiagnostic(
                eval_set_id="travel",
                case_id="fixed",
                label="improved",
                baseline_passes=0,
                baseline_k=1,
                current_passes=1,
                current_k=1,
            ),
            CaseDiagnostic(eval_set_id="travel", case_id="new_one", label="new", current_passes=1, current_k=1),
        ],
        baseline=_baseline_info(),
        counts=VerdictCounts(compared=40, added=1),
        seed=7,
        policy_digest=DIGEST,
    )


def build_inconclusive_verdict() -> Verdict:
    """Δ̂ = −0.167 over 30 cases, p = 0.0625: neither a regression nor non-inferior; MDE 0.209, ≈3287 cases."""
    metric = _comparison(
        baseline_mean=0.967,
        current_mean=0.8,
        delta=-0.167,
        ci_low=-0.3,
        ci_high=-0.033,
        p_value=0.0625,
        p_adjusted=0.0625,
        test="mcnemar_exact",
        n_cases=30,
        k_baseline=1,
        k_current=1,
        verdict="inconclusive",
        mde=0.209,
        n_needed=3287,
        explanation=f"{TRAJ} (gated): n=30 paired cases, k=1/1 (baseline/current); mean 0.967 → 0.800, "
        "Δ̂ = -0.167; exact McNemar: n10=6 worse, n01=1 better; p = P[Bin(7, ½) ≥ 6] = 8/128 = 0.0625",
    )
    return Verdict(
        outcome="inconclusive",
        reason=f"Inconclusive: {TRAJ} moved -0.167 over 30 cases, which is neither a significant regression "
        "nor shown to be within 0.05 of the baseline; ≈3287 cases would settle a 0.02 drop.",
        current_run_id="run-pr-7",
        findings=[
            Finding(
                kind="inconclusive",
                severity="warning",
                message=f"{TRAJ}: Δ̂ = -0.167, L = -0.300: may be noise; minimum detectable effect 0.209.",
                metric=TRAJ,
            )
        ],
        metrics=[metric],
        baseline=_baseline_info(),
        counts=VerdictCounts(compared=30),
        seed=99,
        policy_digest=DIGEST,
    )


def build_no_baseline_verdict() -> Verdict:
    return Verdict(
        outcome="inconclusive",
        reason="Inconclusive: there is no baseline to compare with (on_missing_baseline=neutral), and every "
        "absolute check passed.",
        current_run_id="run-pr-7",
        findings=[
            Finding(
                kind="no_baseline",
                severity="warning",
                message="No baseline run to compare with: no regression check was possible.",
            )
        ],
        seed=1,
        policy_digest=DIGEST,
    )


# ---------------------------------------------------------------------------------------- helpers


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.starts: list[str] = []
        self.ends: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def tags(markdown: str) -> _Tags:
    parser = _Tags()
    parser.feed(GFM.render(markdown))
    return parser


def terminal(current: RunResult, verdict: Verdict, baseline: RunResult | None = None) -> str:
    console = Console(record=True, width=100, force_terminal=False)
    print_verdict(current, verdict, console, baseline=baseline)
    return console.export_text()


def _lines_after(text: str, marker: str) -> list[str]:
    lines = text.split("\n")
    return [lines[i + 1] for i, line in enumerate(lines) if line.endswith(marker)]


Snapshot = Callable[[str, str], None]


# ------------------------------------------------------------------------------------------- numbers


def test_interval_label_is_two_sided_from_one_sided_bounds():
    # one-sided bounds at 1 − α each: 1 − 2·0.05 = 0.90; 1 − 2·0.025 = 0.95; 1 − 2·0.1 = 0.80
    assert interval_label(0.05) == "90% interval"
    assert interval_label(0.025) == "95% interval"
    assert interval_label(0.1) == "80% interval"


def test_delta_text_shows_absolute_and_relative_change():
    # 0.950 − 0.900 = +0.050; 0.05 / 0.9 = +5.6%
    assert delta_text(_comparison(baseline_mean=0.9, current_mean=0.95, delta=0.05)) == "+0.050 / +5.6%"
    # baseline mean 0: no relative change
    assert delta_text(_comparison(baseline_mean=0.0, current_mean=0.2, delta=0.2)) == "+0.200"
    assert delta_text(_comparison(delta=None)) == "—"


def test_age_text():
    assert age_text(45) == "45 s"
    assert age_text(12 * 60) == "12 min"
    assert age_text(3 * 3600 + 720) == "3.2 h"  # 11520 s / 3600 = 3.2
    assert age_text(4.5 * 86400) == "4.5 days"


# ------------------------------------------------------------------------------------------ snapshots


def test_fail_snapshot(snapshot: Snapshot):
    text = render_verdict_markdown(
        build_current_run(), build_fail_verdict(), baseline=build_baseline_run(), details_url="https://ci.example/1"
    )
    snapshot("verdict_fail.md", text)


def test_pass_snapshot(snapshot: Snapshot):
    snapshot("verdict_pass.md", render_verdict_markdown(build_current_run(), build_pass_verdict()))


def test_inconclusive_snapshot(snapshot: Snapshot):
    snapshot("verdict_inconclusive.md", render_verdict_markdown(build_current_run(), build_inconclusive_verdict()))


def test_no_baseline_snapshot(snapshot: Snapshot):
    snapshot("verdict_no_baseline.md", render_verdict_markdown(build_current_run(), build_no_baseline_verdict()))


def test_fail_terminal_snapshot(snapshot: Snapshot):
    text = terminal(build_current_run(), build_fail_verdict(), build_baseline_run())
    snapshot("verdict_fail.terminal.txt", text)


def test_inconclusive_terminal_snapshot(snapshot: Snapshot):
    snapshot("verdict_inconclusive.terminal.txt", terminal(build_current_run(), build_inconclusive_verdict()))


def test_no_baseline_terminal_snapshot(snapshot: Snapshot):
    snapshot("verdict_no_baseline.terminal.txt", terminal(build_current_run(), build_no_baseline_verdict()))


# ------------------------------------------------------------------------------------------ structure


def test_fail_structure():
    text = render_verdict_markdown(build_current_run(), build_fail_verdict(), baseline=build_baseline_run())
    assert text.startswith("### ❌ evalward: gate failed\n\nFailed: Must-pass case travel/book\\_flight failed")
    assert (
        "**Baseline**: run `run-base` · commit `bbbbbbbbbbbb` · branch `main` · 3.2 h old · chosen by merge-base"
        in text
    )
    # the interval column is labelled from α = 0.05 (one-sided bounds → 90% two-sided), never "95%"
    assert "| metric | baseline | this PR | Δ | 90% interval | p (test) | verdict |" in text
    assert "95%" not in text
    # hand calculation: 1.000 → 0.500 is Δ̂ = −0.5, relative −0.5/1.0 = −50.0%
    assert (
        f"| {TRAJ.replace('_', chr(92) + '_')} (n=2, k=3/3) | 1.000 | 0.500 | -0.500 / -50.0% | [-1.000, +0.000] |"
        in text
    )
    parsed = tags(text)
    # one section for book_flight, one for the arithmetic; every <details> closed
    assert parsed.starts.count("details") == parsed.ends.count("details") == 2
    assert all(line == "" for line in _lines_after(text, "</summary>"))
    # pass counts, per-case b_i → c_i, the first divergence and the argument diff
    assert "**Passes over repetitions**: baseline 3/3 → now 0/3" in text
    assert "| tool\\_trajectory\\_avg\\_score | 1.000 | 0.000 | -1.000 |" in text
    assert (
        '**First divergence** at expected call 2: expected `book_flight(flight_id="AF123", seat="aisle")`, '
        'this PR `book_flight(flight_id="AF123", seat="window")`'
    ) in text
    assert '- call 2 `book_flight`: `seat: expected "aisle", found "window"`' in text
    # against the baseline's first passing repetition: 150 → 270 tokens, 2 calls each
    assert "Resources: calls 2 → 2 · tokens 150 → 270 (+120) · cost $0.0100 → $0.0150 (+$0.0050)" in text
    # the baseline made the expected calls, so only the diff against the expectation is shown
    assert "The baseline made the expected calls and steps." in text
    assert "Tool calls vs baseline" not in text
    assert "Baseline response: the expected one." in text
    assert text.rstrip("\n").endswith(f"seed 12345 · α = 0.05 · policy sha256 `{DIGEST}`</sub>")


def test_pass_lists_the_rest_in_one_collapsed_section():
    text = render_verdict_markdown(build_current_run(), build_pass_verdict())
    assert text.startswith("### ✅ evalward: gate passed\n")
    # 0.950 − 0.900 = +0.050, 0.05/0.9 = +5.6%
    assert "| 0.900 | 0.950 | +0.050 / +5.6% | [+0.013, +0.087] | 0.998 (exact McNemar) | ✅ pass |" in text
    assert "<details><summary>Other cases and findings: 1 improved, 1 added, 1 note</summary>" in text
    assert "**Improved** (1): `travel/fixed`" in text
    assert "**Added (not compared)** (1): `travel/new_one`" in text


def test_inconclusive_shows_mde_and_cases_needed():
    text = render_verdict_markdown(build_current_run(), build_inconclusive_verdict())
    assert text.startswith("### ⚠️ evalward: gate inconclusive\n")
    assert (
        "this run can only detect drops of about 0.209 or more (minimum detectable effect); "
        "≈3,287 paired cases would detect a 0.02 drop (this run compared 30)."
    ) in text


def test_no_baseline_says_what_it_means():
    text = render_verdict_markdown(build_current_run(), build_no_baseline_verdict())
    assert "**Baseline**: no baseline: there was no run to compare with, stored or run on demand" in text
    assert "| metric |" not in text


def test_without_expectations_the_baseline_is_the_reference():
    current = build_current_run()
    for result in current.cases:
        result.invocations[0].expected_tool_calls = None
        result.invocations[0].expected_response = None
    text = render_verdict_markdown(current, build_fail_verdict(), baseline=build_baseline_run())
    assert (
        '**First divergence** at baseline call 2: baseline `book_flight(flight_id="AF123", seat="aisle")`, '
        'this PR `book_flight(flight_id="AF123", seat="window")`'
    ) in text
    assert "Tool calls vs baseline (`-` baseline, `+` this PR):" in text
    assert "! first divergence at baseline call 2" in text
    assert "Baseline response:\n\n```text\nBooked AF123, seat aisle.\n```" in text


def test_renders_what_decide_returns():
    base, head = build_baseline_run(), build_current_run()
    verdict = decide(head, base, GatePolicy(metrics=[TRAJ]))
    assert verdict.outcome == "fail"
    text = render_verdict_markdown(head, verdict, baseline=base)
    parsed = tags(text)
    assert parsed.starts.count("details") == parsed.ends.count("details")
    # the must-pass section leads, with the baseline's 3/3 against this PR's 0/3
    first = re.search(r"<summary>(.*?)</summary>", text)
    assert first is not None
    assert "travel/book_flight" in first.group(1)
    assert "passes 3/3 → 0/3" in first.group(1)
    assert f"seed {verdict.seed} " in text
    out = terminal(head, verdict, base)
    assert "GATE FAIL" in out and "travel/book_flight" in out


# ---------------------------------------------------------------------------------------------- size


def _many_regressed(n: int) -> tuple[RunResult, RunResult, Verdict]:
    base_cases, cur_cases, diagnostics = [], [], []
    for index in range(n):
        case_id = f"case_{index:03d}"
        base_cases += [build_result(case_id, r) for r in range(3)]
        cur_cases += [build_result(case_id, r, seat="window", response="word " * 300) for r in range(3)]
        diagnostics.append(
            CaseDiagnostic(
                eval_set_id="travel",
                case_id=case_id,
                label="regressed",
                baseline_passes=3,
                baseline_k=3,
                current_passes=0,
                current_k=3,
                baseline_scores={TRAJ: 1.0},
                current_scores={TRAJ: 0.0},
                likely_regressed_metrics=[TRAJ],
            )
        )
    verdict = build_fail_verdict().model_copy(update={"cases": diagnostics, "findings": []})
    base = build_run("run-base", base_cases, commit="b" * 40, branch="main")
    cur = build_run("run-pr-7", cur_cases, commit="c" * 40, branch="x")
    return cur, base, verdict


def test_many_regressed_cases_stay_under_the_limit_with_a_cut_note():
    cur, base, verdict = _many_regressed(300)
    text = render_verdict_markdown(cur, verdict, baseline=base, details_url="https://ci.example/runs/1")
    assert len(text) <= 60_000
    shown = text.count("<details>")
    assert 0 < shown < 300
    assert shown == text.count("</details>")
    parsed = tags(text)
    assert parsed.starts.count("details") == parsed.ends.count("details")
    lines = text.rstrip("\n").split("\n")
    # 300 case sections + the arithmetic = 301 sections; the rest section is empty here
    assert lines[-3] == (
        f"✂️ **{301 - shown} of 301 sections not shown** ({300 - shown} flagged cases, the arithmetic) to keep "
        "this comment under 60,000 characters. Full report: [full report](https://ci.example/runs/1)."
    )
    assert lines[-1].startswith("<sub>Reproduce:")


def test_any_limit_is_respected_and_sections_stay_whole():
    cur, base, verdict = _many_regressed(3)
    full = render_verdict_markdown(cur, verdict, baseline=base)
    for limit in range(500, len(full) + 50, 97):
        text = render_verdict_markdown(cur, verdict, baseline=base, max_chars=limit)
        assert len(text) <= limit
        assert text.count("<details>") == text.count("</details>")
        assert text.startswith("### ❌ evalward: gate failed")


def test_too_small_limit_is_refused():
    with pytest.raises(ValueError, match="max_chars must be at least 500, got 10"):
        render_verdict_markdown(build_current_run(), build_fail_verdict(), max_chars=10)


# ----------------------------------------------------------------------------------------- injection


def hostile_pair() -> tuple[RunResult, RunResult, Verdict]:
    """Attacker-shaped text in case ids, tool names and arguments, responses, messages and run ids."""
    case_id = f"case {HOSTILE}"
    base = build_baseline_run()
    cur = build_current_run()
    for run in (base, cur):
        for result in run.cases:
            if result.case_id == "book_flight":
                result.case_id = case_id
    for result in cur.cases:
        if result.case_id == case_id:
            turn = result.invocations[0]
            turn.actual_response = HOSTILE
            turn.query = HOSTILE
            turn.actual_tool_calls[1] = ToolCall(name=f"book{HOSTILE}", args={HOSTILE: HOSTILE, "seat": HOSTILE})
    verdict = build_fail_verdict()
    for finding in verdict.findings:
        if finding.case_id == "book_flight":
            finding.case_id = case_id
            finding.message = f"Case travel/{case_id} failed: {HOSTILE}"
    verdict.cases[0].case_id = case_id
    verdict.reason = f"Failed: {HOSTILE}"
    verdict.metrics[0].metric = f"metric {HOSTILE}"
    assert verdict.baseline is not None
    verdict.baseline.chosen_by = HOSTILE
    verdict.baseline.branch = HOSTILE
    return cur, base, verdict


def test_markdown_injection_is_neutralised():
    cur, base, verdict = hostile_pair()
    text = render_verdict_markdown(cur, verdict, baseline=base, title=HOSTILE)
    html = GFM.render(text)
    parsed = tags(text)
    prose = re.sub(r"<(pre|code)>.*?</\1>", "", html, flags=re.DOTALL)
    assert re.search(r"@(?!\u200b)", prose) is None
    assert re.search(r"#\d", prose) is None
    assert "octocat" in prose
    assert "<!--" not in text and parsed.comments == []
    # our sections only: the hostile </details> closes nothing
    assert parsed.starts.count("details") == parsed.ends.count("details") == 2
    assert "img" not in parsed.starts and "script" not in parsed.starts and "a" not in parsed.starts
    assert "\u202e" not in text and "\u2066" not in text
    assert "::" not in text and "##[" not in text
    # the summary table keeps its 7 columns despite "| col |"
    table = re.search(r"<table>.*?</table>", html, flags=re.DOTALL)
    assert table is not None
    assert {row.count("<td") for row in re.findall(r"<tr>(.*?)</tr>", table.group(0), flags=re.DOTALL)} - {0} == {7}


def test_terminal_injection_is_neutralised():
    cur, base, verdict = hostile_pair()
    text = terminal(cur, verdict, base)
    assert "[bold]x[/bold]" in text
    assert "::" not in text and "##[" not in text
    assert "\u202e" not in text and "\u2066" not in text
    # names and messages are one line each: no hostile text starts a line
    for line in text.split("\n"):
        assert not line.lstrip().startswith(("<!--", "::", "@octocat"))
