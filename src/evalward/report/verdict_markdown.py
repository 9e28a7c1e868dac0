"""The gate's verdict as GitHub-flavoured markdown: the PR comment body and the job summary.

Layout, by priority (docs/github.md §14, docs/gate.md §6 and §8):
1. head, always kept: first line, the outcome mark (✅ pass / ❌ fail / ⚠️ inconclusive / 💥 error) with the
   gate's headline — what happened in plain words — then the outcome word and the gate's reason; the
   baseline (run, commit, branch, age, how it was chosen) or what having none means; the summary table
   (metric | baseline | this PR | Δ | interval | p (test) | verdict — "this PR" being what the view calls the
   judged run: "this commit" for a push, "run B" for `evalward compare`); when the analysis was clustered,
   which metrics and G; blocking findings, then warnings; the case counts; the per-case tests (Fisher +
   Benjamini–Hochberg, diagnostic) or why none ran (k < 5); for inconclusive metrics the minimum
   detectable effect and the cases needed;
2. one collapsed `<details>` section per flagged case — must-pass failures, then errors, then regressed,
   likely regressed or per-case-test regressed cases, then threshold misses — with the pass counts over
   repetitions, the per-case test when one ran, b_i → c_i per
   gated metric, and, from the first repetition of the judged run that did not pass (against the baseline's
   first passing repetition), the first divergence, the tool-call diff with argument differences, the
   step diff, the responses and the call/token/cost/latency deltas;
3. the arithmetic behind each metric's verdict (the gate's explanation);
4. everything else in one collapsed section: improved, flaky, quarantined, added, removed and changed
   cases and the remaining informational findings.
Sections of 2–4 are whole: when the next one would push the body past `max_chars`, it and all after it
are cut and a note says how many were cut and where the full report is. A footer with the seed and the
policy digest closes the body, so the numbers can be reproduced.

What is shown comes from `verdict_view.VerdictView`; this module only lays it out. Every untrusted string
(case ids, metric names, messages that quote them, agent output) goes through `escape.py`; nothing here
escapes by itself.
"""

from __future__ import annotations

from evalward.model import RunResult
from evalward.model.verdict import Finding, Verdict
from evalward.report import formatting as fmt
from evalward.report.case_evidence import TurnEvidence, diff_lines
from evalward.report.escape import html_inline, md_code_block, md_code_span, md_inline
from evalward.report.markdown import DEFAULT_MAX_CHARS, MIN_MAX_CHARS, full_report_link
from evalward.report.verdict_view import (
    CLUSTERED_TEXT,
    MAX_FINDINGS,
    MAX_HEADLINE_CHARS,
    MAX_LISTED_CASES,
    MAX_MESSAGE_CHARS,
    MAX_REASON_CHARS,
    MAX_TOP_UP_CHARS,
    NO_BASELINE_TEXT,
    OUTCOME_MARKS,
    OUTCOME_WORDS,
    CaseSection,
    ScoreChange,
    VerdictView,
    capitalised,
    plural,
)

MAX_EXPLANATION_CHARS = 2_000
MAX_PER_CASE_LISTED = 10
"""Per-case-test regressions named in the head; all of them get a flagged-case section."""


def render_verdict_markdown(
    current: RunResult,
    verdict: Verdict,
    *,
    baseline: RunResult | None = None,
    title: str = "evalward",
    max_chars: int = DEFAULT_MAX_CHARS,
    details_url: str | None = None,
    subject: str | None = None,
) -> str:
    """The PR comment body for `verdict`, at most `max_chars` characters (see the module docstring).

    `current` and `baseline` supply the evidence of flagged cases (trajectories, responses, usage); `subject`
    names the judged run (`VerdictView.build`). Raises ValueError when `max_chars` is below `MIN_MAX_CHARS`.
    """
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    view = VerdictView.build(current, verdict, baseline, subject=subject)
    head = "\n\n".join(
        part
        for part in (
            _headline(verdict, title),
            _baseline(view),
            _table(view),
            _clustered(view),
            _findings(view.blocking, "Blocking", "❌"),
            _findings(view.warnings, "Warnings", "⚠️"),
            _counts(verdict),
            _per_case(view),
            _inconclusive(view),
        )
        if part
    )
    sections: list[tuple[str, str]] = [("case", _case_section(case, view.subject)) for case in view.cases]
    arithmetic = _arithmetic(view)
    if arithmetic:
        sections.append(("arithmetic", arithmetic))
    rest = _rest(view)
    if rest:
        sections.append(("rest", rest))
    footer = _footer(view)

    body = "\n\n".join([head, *(s for _, s in sections), footer]) + "\n"
    if len(body) <= max_chars:
        return body

    longest_note = _cut_note(sections, max_chars, details_url)
    # The note at its longest (every section cut), the footer, the blank lines around them, the final newline.
    budget = max_chars - len(longest_note) - len(footer) - 5
    kept: list[str] = []
    used = len(head)
    shown = 0
    for _, section in sections:
        if used + 2 + len(section) > budget:
            break
        kept.append(section)
        used += 2 + len(section)
        shown += 1
    note = _cut_note(sections[shown:], max_chars, details_url, total=len(sections))
    text = "\n\n".join([head, *kept, note, footer]) + "\n"
    if len(text) > max_chars:  # only when the head alone is too big: keep whole lines of it
        tail = "\n\n" + note + "\n\n" + footer + "\n"
        keep = head[: max(0, max_chars - len(tail))]
        text = keep[: keep.rfind("\n") if "\n" in keep else 0] + tail
    return text


# ------------------------------------------------------------------------------------------- head


def _headline(verdict: Verdict, title: str) -> str:
    """First line: what happened in plain words (`Verdict.headline`); then the outcome and the deciding
    statistics. A verdict recorded before headlines existed keeps the older layout (outcome, then reason)."""
    mark = OUTCOME_MARKS[verdict.outcome]
    outcome = f"{md_inline(title, max_len=80)}: gate {OUTCOME_WORDS[verdict.outcome]}"
    reason = md_inline(verdict.reason, max_len=MAX_REASON_CHARS)
    if not verdict.headline:
        return f"### {mark} {outcome}\n\n{reason}"
    return f"### {mark} {md_inline(verdict.headline, max_len=MAX_HEADLINE_CHARS)}\n\n**{outcome}.** {reason}"


def _baseline(view: VerdictView) -> str:
    facts = view.baseline
    if facts is None:
        return f"**Baseline**: {NO_BASELINE_TEXT}."
    parts = [f"run {md_code_span(facts.run_id, max_len=64)}"]
    if facts.commit:
        parts.append(f"commit {md_code_span(facts.commit[:12], max_len=12)}")
    if facts.branch:
        parts.append(f"branch {md_code_span(facts.branch, max_len=80)}")
    if facts.age:
        parts.append(facts.age)
    chosen = facts.chosen_by
    parts.append(f"chosen by {md_inline(chosen, max_len=300)}" if chosen else "how it was chosen is not recorded")
    text = "**Baseline**: " + " · ".join(parts)
    notes = view.baseline_notes
    if notes:
        text += "\n" + "\n".join(f"- {md_inline(note, max_len=300)}" for note in notes[:10])
    if view.top_up:
        text += f"\n\n**Top-up**: {md_inline(view.top_up, max_len=MAX_TOP_UP_CHARS)}"
    if view.agent_runs:
        text += f"\n\n**Agent runs**: {md_inline(view.agent_runs, max_len=300)}"
    return text


def _table(view: VerdictView) -> str:
    if not view.metrics:
        return ""
    rows = [
        f"| metric | baseline | {view.subject} | Δ | {view.interval_label} | p (test) | verdict |",
        "| --- | ---: | ---: | ---: | :---: | --- | --- |",
    ]
    for m in view.metrics:
        rows.append(
            f"| {md_inline(m.comparison.metric, max_len=80)} ({m.sample}) "
            f"| {m.baseline_mean} | {m.current_mean} | {m.delta} "
            f"| {m.interval} | {m.p} | {m.verdict} |"
        )
    return "\n".join(rows)


def _clustered(view: VerdictView) -> str:
    if not view.clustered:
        return ""
    facts = "; ".join(f"{md_inline(metric, max_len=80)}: {text}" for metric, text in view.clustered)
    return f"**Clustered analysis**: {CLUSTERED_TEXT}. {facts}."


def _per_case(view: VerdictView) -> str:
    if view.per_case_heading is None:
        return ""
    text = f"**Per-case tests**: {view.per_case_heading}"
    flagged = view.per_case_regressions
    if flagged:
        items = [f"{md_code_span(label, max_len=120)} {numbers}" for label, numbers in flagged[:MAX_PER_CASE_LISTED]]
        more = f", … and {len(flagged) - MAX_PER_CASE_LISTED} more" if len(flagged) > MAX_PER_CASE_LISTED else ""
        text += ": " + "; ".join(items) + more
    return text + "."


def _finding(finding: Finding, mark: str = "") -> str:
    mark = f"{mark} " if mark else ""
    return f"- {mark}**{finding.kind.replace('_', ' ')}**: {md_inline(finding.message, max_len=MAX_MESSAGE_CHARS)}"


def _capped(items: list[str], total: int) -> list[str]:
    if total > len(items):
        items = [*items, f"- … and {total - len(items)} more"]
    return items


def _findings(found: list[Finding], heading: str, mark: str) -> str:
    if not found:
        return ""
    items = [_finding(f, mark) for f in found[:MAX_FINDINGS]]
    return f"**{heading}**\n\n" + "\n".join(_capped(items, len(found)))


def _counts(verdict: Verdict) -> str:
    c = verdict.counts
    return (
        f"**Cases**: {c.compared} compared · {c.added} added · {c.removed} removed · {c.changed} changed · "
        f"{c.errored} errored · {c.quarantined} quarantined"
    )


def _inconclusive(view: VerdictView) -> str:
    if not view.inconclusive:
        return ""
    lines = ["**Why inconclusive**", ""]
    lines += [f"- {md_inline(metric, max_len=80)}: {text}." for metric, text in view.inconclusive]
    return "\n".join(lines)


# ------------------------------------------------------------------------------- flagged cases


def _case_section(section: CaseSection, subject: str) -> str:
    case = section.case
    before, now = section.passes_before, section.passes_now
    mark = "💥" if case.errored else "❌"
    why = "; ".join(case.reasons)
    extra = " · quarantined" if case.diagnostic is not None and case.diagnostic.quarantined else ""
    blocks = [
        f"<details><summary>{mark} <code>{html_inline(case.label, max_len=120)}</code> — "
        f"{html_inline(why, max_len=200)} · passes {before} → {now}{extra}</summary>",
        f"**Passes over repetitions**: baseline {before} → now {now}",
    ]
    if section.per_case_test is not None:
        blocks.append(f"**Per-case test**: {section.per_case_test} (diagnostic: this test alone never fails the gate)")
    table = _case_scores(section.scores, subject)
    if table:
        blocks.append(table)
    if case.findings:
        items = [_finding(f) for f in case.findings[:MAX_FINDINGS]]
        blocks.append("\n".join(_capped(items, len(case.findings))))

    cur, base = section.repetition, section.baseline_repetition
    if cur is not None:
        compared_with = (
            f" against baseline repetition {fmt.ordinal(base.repetition)} ({base.status})" if base is not None else ""
        )
        blocks.append(f"**Repetition {fmt.ordinal(cur.repetition)}** of {subject} ({cur.status}){compared_with}:")
        if cur.error is not None:
            where = f" in turn {fmt.ordinal(cur.error.turn)}" if cur.error.turn is not None else ""
            blocks.append(f"Error {md_code_span(cur.error.kind)}{where}:")
            blocks.append(md_code_block(cur.error.message, "text", max_len=fmt.MAX_ERROR_CHARS))
        if section.resources:
            blocks.append("Resources: " + " · ".join(section.resources))
        turns = section.turns
        for turn in turns[: fmt.MAX_TURNS_PER_CASE]:
            blocks.extend(_turn(turn, subject, has_baseline=base is not None))
        if len(turns) > fmt.MAX_TURNS_PER_CASE:
            blocks.append(f"*… {len(turns) - fmt.MAX_TURNS_PER_CASE} more turns with differences not shown.*")
    else:
        blocks.append(f"*{capitalised(subject)} has no result for this case.*")
    blocks.append("</details>")
    return "\n\n".join(blocks)


def _case_scores(scores: list[ScoreChange], subject: str) -> str:
    if not scores:
        return ""
    rows = [f"| gated metric | baseline b_i | {subject} c_i | c_i − b_i |", "| --- | ---: | ---: | ---: |"]
    for s in scores:
        rows.append(f"| {md_inline(s.metric, max_len=80)} | {s.baseline} | {s.current} | {s.change} |")
    return "\n".join(rows)


def _divergence(turn: TurnEvidence, subject: str) -> str | None:
    found = turn.divergence()
    if found is None:
        return None
    reference, unit, d = found
    where = f"**First divergence** at {reference} {unit} {d.position}: "
    if d.reference is not None and d.actual is not None:
        return (
            where
            + f"{reference} {md_code_span(d.reference, max_len=300)}, {subject} "
            + md_code_span(d.actual, max_len=300)
        )
    if d.reference is not None:
        return where + f"{subject} skipped {md_code_span(d.reference, max_len=300)}"
    return where + f"{subject} added {md_code_span(d.actual or '', max_len=300)}"


def _turn(turn: TurnEvidence, subject: str, *, has_baseline: bool) -> list[str]:
    blocks = [
        f"**Turn {fmt.ordinal(turn.turn)} of {turn.turn_count}** — query: "
        f"{md_inline(turn.query, max_len=fmt.MAX_QUERY_CHARS)}"
    ]
    if turn.failing:
        failing = ", ".join(
            f"{md_inline(m.name, max_len=80)} {fmt.score(m.score)} ({fmt.threshold(m.threshold, m.higher_is_better)})"
            for m in turn.failing
        )
        blocks.append(f"Failing: {failing}")
    divergence = _divergence(turn, subject)
    if divergence:
        blocks.append(divergence)
    if turn.baseline_as_expected and (turn.vs_expected or turn.steps_vs_expected):
        blocks.append("The baseline made the expected calls and steps.")
    for diff, unit, reference in turn.diffs():
        what = "Tool calls" if unit == "call" else "Steps"
        blocks.append(f"{what} vs {reference} (`-` {reference}, `+` {subject}):")
        blocks.append(md_code_block("\n".join(diff_lines(diff, unit, reference)), "diff"))
        if diff.arg_diffs:
            items = [
                f"- call {fmt.ordinal(a.call_index)} {md_code_span(a.name, max_len=80)}: "
                f"{md_code_span(a.describe(), max_len=300)}"
                for a in diff.arg_diffs[: fmt.MAX_DIFF_LINES]
            ]
            blocks.append(f"Argument differences ({reference} → {subject}):\n\n" + "\n".join(items))
    if turn.agent_error:
        blocks.append("The agent reported an error:")
        blocks.append(md_code_block(turn.agent_error, "text", max_len=fmt.MAX_ERROR_CHARS))
    if turn.expected_response is not None:
        blocks.append("Expected response:")
        blocks.append(md_code_block(turn.expected_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    if turn.baseline_response is not None and turn.baseline_response == turn.expected_response:
        blocks.append("Baseline response: the expected one.")
    elif turn.baseline_response is not None:
        blocks.append("Baseline response:")
        blocks.append(md_code_block(turn.baseline_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    if turn.current_response is not None:
        same = " (same as the baseline's)" if has_baseline and turn.baseline_response is None else ""
        blocks.append(f"{capitalised(subject)}'s response{same}:")
        blocks.append(md_code_block(turn.current_response, "text", max_len=fmt.MAX_RESPONSE_CHARS))
    return blocks


# ---------------------------------------------------------------------------- the rest, the footer


def _arithmetic(view: VerdictView) -> str:
    if not view.explained:
        return ""
    items = [
        f"- {md_inline(metric, max_len=80)}: {md_inline(explanation, max_len=MAX_EXPLANATION_CHARS)}"
        for metric, explanation in view.explained
    ]
    return "<details><summary>How the metric verdicts were computed</summary>\n\n" + "\n".join(items) + "\n\n</details>"


def _case_list(labels: list[str]) -> str:
    shown = ", ".join(md_code_span(label, max_len=120) for label in labels[:MAX_LISTED_CASES])
    if len(labels) > MAX_LISTED_CASES:
        shown += f", … and {len(labels) - MAX_LISTED_CASES} more"
    return shown


def _rest(view: VerdictView) -> str:
    lists = view.other_lists
    info = view.other_findings
    if not lists and not info:
        return ""
    summary = ", ".join(f"{len(labels)} {title.split(' (')[0].lower()}" for title, labels in lists)
    if info:
        summary += (", " if summary else "") + plural(len(info), "note")
    blocks = [f"<details><summary>Other cases and findings: {summary}</summary>"]
    blocks += [f"**{title}** ({len(labels)}): {_case_list(labels)}" for title, labels in lists]
    if info:
        items = [_finding(f, "ℹ️") for f in info[:MAX_FINDINGS]]
        blocks.append("**Notes**\n\n" + "\n".join(_capped(items, len(info))))
    blocks.append("</details>")
    return "\n\n".join(blocks)


def _footer(view: VerdictView) -> str:
    verdict = view.verdict
    runs = f"run {md_code_span(view.current_run_id, max_len=64)}"
    if view.baseline_run_id:
        runs += f" vs {md_code_span(view.baseline_run_id, max_len=64)}"
    digest = md_code_span(verdict.policy_digest, max_len=80) if verdict.policy_digest else "not recorded"
    return f"<sub>Reproduce: {runs} · seed {verdict.seed} · α = {verdict.alpha:g} · policy sha256 {digest}</sub>"


def _cut_note(cut: list[tuple[str, str]], max_chars: int, details_url: str | None, *, total: int | None = None) -> str:
    total = len(cut) if total is None else total
    kinds = [kind for kind, _ in cut]
    what = []
    if kinds.count("case"):
        what.append(plural(kinds.count("case"), "flagged case"))
    if "arithmetic" in kinds:
        what.append("the arithmetic")
    if "rest" in kinds:
        what.append("the other cases and findings")
    where = full_report_link(details_url) if details_url else "the job summary or the JSON report artifact"
    return (
        f"✂️ **{len(cut)} of {plural(total, 'section')} not shown** ({', '.join(what) or 'none'}) to keep this "
        f"comment under {max_chars:,} characters. Full report: {where}."
    )
