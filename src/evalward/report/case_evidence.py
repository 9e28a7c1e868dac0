"""The evidence one case gives: its results in a run, the pair of repetitions compared, what each turn shows
against the expectation and the baseline, and the resources used.

The verdict's flagged-case sections (`verdict_view.py`, docs/github.md §14) and the HTML page's failing case
results (`html.py`) both show it. Plain data and plain text only: every string from a run is untrusted and
left for the renderer to escape through `escape.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from evalward.model import CaseResult, InvocationResult, MetricResult, RunResult
from evalward.model.records import pick_where
from evalward.report import formatting as fmt
from evalward.report.diff import TrajectoryDiff, diff_text, steps_diff, trajectory_diff

COST_FORMAT = "${:.4f}"


def case_results(run: RunResult, eval_set_id: str, case_id: str) -> list[CaseResult]:
    """The case's results in `run`, repetitions in order."""
    # Found by the records' keys: of a large run kept in a temporary file, only these results are read.
    found = pick_where(run.cases, lambda key: key[0] == eval_set_id and key[1] == case_id)
    return sorted(found, key=lambda c: c.repetition)


def pick_repetitions(
    current: RunResult, baseline: RunResult | None, eval_set_id: str, case_id: str
) -> tuple[CaseResult | None, CaseResult | None]:
    """(the judged run's first repetition that did not pass — else its first —, the baseline's first passing
    repetition — else the same repetition index, else its first): the pair the evidence compares."""
    now = case_results(current, eval_set_id, case_id)
    before = case_results(baseline, eval_set_id, case_id) if baseline is not None else []
    cur = next((c for c in now if c.status != "passed"), now[0] if now else None)
    base = next((b for b in before if b.status == "passed"), None)
    if base is None and before:
        same = [b for b in before if cur is not None and b.repetition == cur.repetition]
        base = same[0] if same else before[0]
    return cur, base


@dataclass(frozen=True)
class Divergence:
    """Where two call (or step) lists first part: 1-based position in the reference list and both sides
    (None where a side has nothing at that point)."""

    position: int
    reference: str | None
    actual: str | None


def first_divergence(diff: TrajectoryDiff) -> Divergence | None:
    for line in diff.lines:
        if line.op == " ":
            continue
        position = (diff.first_divergence or 0) + 1
        if line.op == "~":
            return Divergence(position, line.text, line.actual_text)
        if line.op == "-":
            return Divergence(position, line.text, None)
        return Divergence(position, None, line.text)
    return None


DiffUnit = Literal["call", "step"]
DiffReference = Literal["expected", "baseline"]


@dataclass
class TurnEvidence:
    """What one turn of the flagged repetition shows against the expectation and the baseline."""

    turn: int
    turn_count: int
    query: str
    failing: list[MetricResult]
    vs_expected: TrajectoryDiff | None
    vs_baseline: TrajectoryDiff | None
    steps_vs_expected: TrajectoryDiff | None
    steps_vs_baseline: TrajectoryDiff | None
    expected_response: str | None
    baseline_response: str | None
    """Only when it differs from the judged run's response."""
    current_response: str | None
    agent_error: str | None
    baseline_as_expected: bool = False
    """The baseline's calls and steps were the expected ones (so a diff against it would repeat the
    diff against the expectation, and is left out)."""

    def diffs(self) -> list[tuple[TrajectoryDiff, DiffUnit, DiffReference]]:
        """The turn's diffs in reading order, each with its unit and what it is compared against."""
        labelled: list[tuple[TrajectoryDiff | None, DiffUnit, DiffReference]] = [
            (self.vs_expected, "call", "expected"),
            (self.vs_baseline, "call", "baseline"),
            (self.steps_vs_expected, "step", "expected"),
            (self.steps_vs_baseline, "step", "baseline"),
        ]
        return [(diff, unit, reference) for diff, unit, reference in labelled if diff is not None]

    @property
    def interesting(self) -> bool:
        return bool(
            self.failing
            or self.vs_expected
            or self.vs_baseline
            or self.steps_vs_expected
            or self.steps_vs_baseline
            or self.baseline_response is not None
            or self.agent_error
        )

    def divergence(self) -> tuple[str, str, Divergence] | None:
        """(reference name, unit, divergence) from the first diff there is: calls vs expected, calls vs
        baseline, steps vs expected, steps vs baseline."""
        for reference, unit, diff in (
            ("expected", "call", self.vs_expected),
            ("baseline", "call", self.vs_baseline),
            ("expected", "step", self.steps_vs_expected),
            ("baseline", "step", self.steps_vs_baseline),
        ):
            if diff is not None and (found := first_divergence(diff)) is not None:
                return reference, unit, found
        return None


def _differs(diff: TrajectoryDiff) -> TrajectoryDiff | None:
    return None if diff.identical else diff


def turn_evidence(cur: CaseResult, base: CaseResult | None) -> list[TurnEvidence]:
    """Per turn of `cur` (paired with the baseline's turn of the same index), what differs."""
    base_turns: dict[int, InvocationResult] = {t.turn: t for t in base.invocations} if base is not None else {}
    evidence: list[TurnEvidence] = []
    for turn in cur.invocations:
        before = base_turns.get(turn.turn)
        errored_here = cur.error is not None and cur.error.turn == turn.turn
        failing = [m for m in turn.metric_results if fmt.is_failing(m)]
        as_expected = (
            before is not None
            and (turn.expected_tool_calls is not None or turn.expected_trajectory is not None)
            and (turn.expected_tool_calls is None or before.actual_tool_calls == turn.expected_tool_calls)
            and (turn.expected_trajectory is None or before.actual_trajectory == turn.expected_trajectory)
        )
        evidence.append(
            TurnEvidence(
                turn=turn.turn,
                turn_count=len(cur.invocations),
                query=turn.query,
                failing=failing,
                vs_expected=_differs(trajectory_diff(turn.expected_tool_calls, turn.actual_tool_calls))
                if turn.expected_tool_calls is not None
                else None,
                vs_baseline=_differs(trajectory_diff(before.actual_tool_calls, turn.actual_tool_calls))
                if before is not None and not as_expected
                else None,
                steps_vs_expected=_differs(steps_diff(turn.expected_trajectory, turn.actual_trajectory))
                if turn.expected_trajectory is not None
                else None,
                steps_vs_baseline=_differs(steps_diff(before.actual_trajectory, turn.actual_trajectory))
                if before is not None and not as_expected
                else None,
                expected_response=turn.expected_response,
                baseline_response=before.actual_response
                if before is not None and before.actual_response != turn.actual_response
                else None,
                current_response=turn.actual_response,
                agent_error=(turn.output.error if turn.output is not None and turn.output.error else None)
                or (cur.error.message if errored_here and cur.error is not None else None),
                baseline_as_expected=as_expected,
            )
        )
    return evidence


def resource_deltas(cur: CaseResult, base: CaseResult | None) -> list[str]:
    """`calls 2 → 3 (+1)`, `tokens 120 → 180 (+60)`, `cost $0.0100 → $0.0150`, `latency 1.30s → 2.10s`:
    what the repetition used against the baseline's, for each resource either side recorded."""

    def calls(result: CaseResult) -> int:
        return sum(len(t.actual_tool_calls) for t in result.invocations)

    def tokens(result: CaseResult) -> int | None:
        u = result.usage
        if u is None or (u.input_tokens is None and u.output_tokens is None):
            return None
        return (u.input_tokens or 0) + (u.output_tokens or 0)

    def cost(result: CaseResult) -> float | None:
        return result.usage.cost_usd if result.usage is not None else None

    def pair(name: str, now: float | None, before: float | None, show: str) -> str | None:
        if now is None and before is None:
            return None
        text = f"{name} {fmt.MISSING if before is None else show.format(before)} → "
        text += fmt.MISSING if now is None else show.format(now)
        if now is not None and before is not None and now != before:
            step = now - before
            text += f" ({'+' if step > 0 else '-'}{show.format(abs(step))})"
        return text

    parts = [
        pair("calls", calls(cur), calls(base) if base is not None else None, "{:g}"),
        pair("tokens", tokens(cur), tokens(base) if base is not None else None, "{:,}"),
        pair("cost", cost(cur), cost(base) if base is not None else None, COST_FORMAT),
        pair("latency", cur.latency_s, base.latency_s if base is not None else None, fmt.LATENCY_FORMAT),
    ]
    return [p for p in parts if p is not None]


def diff_lines(diff: TrajectoryDiff, unit: str, reference: str) -> list[str]:
    """The diff's lines (cut at `fmt.MAX_DIFF_LINES`), the first-divergence line naming `reference`."""
    lines = diff_text(diff, unit=unit, max_lines=fmt.MAX_DIFF_LINES)
    if reference == "expected":
        return lines
    # diff_text names the reference "expected"; only its own `!` marker line says so (content lines
    # always start with ` `, `-`, `+` or `…`), so renaming it cannot touch untrusted text.
    marker = f"! first divergence at expected {unit}"
    return [
        f"! first divergence at {reference} {unit}" + line[len(marker) :] if line.startswith(marker) else line
        for line in lines
    ]
