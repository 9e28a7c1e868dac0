"""What changed between two runs, case by case: the view the dashboard's compare page (`_server.compare_page`)
serves from the history and `evalward compare --html` writes from the runs it loaded.

Each case is put in one class by its share of passing repetitions, b in the baseline and c in the candidate:
- `added` / `removed`: in one run only;
- `errored`: a repetition of the candidate ended in an error;
- `regressed`: c < b; `improved`: c > b;
- `still failing`: c = b < 1; `unchanged`: c = b = 1.
A case is also `flaky` when either side's repetitions disagree (0 < share < 1). Rows sort by class (`CLASSES`
order) then Δ, by Δ, or by case id. A changed case's response is shown as a word diff of the first repetition's
responses on each side.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalward.model import CaseResult, RunResult
from evalward.model.case_tally import CaseTally, tally_cases

CLASSES = ("regressed", "errored", "improved", "still failing", "added", "removed", "unchanged")
"""In the order the page lists them: what needs a look first."""
FILTERS = ("all", *CLASSES, "flaky")
SORTS = ("change", "delta", "case")


@dataclass(frozen=True)
class CaseRow:
    eval_set_id: str
    case_id: str
    baseline: CaseTally | None
    candidate: CaseTally | None
    change: str
    flaky: bool

    @property
    def delta(self) -> float | None:
        """candidate share − baseline share (None for a case in one run only)."""
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate.share - self.baseline.share


def classify(baseline: CaseTally | None, candidate: CaseTally | None) -> str:
    """The case's class (see the module docstring)."""
    if candidate is None:
        return "removed"
    if baseline is None:
        return "added"
    if candidate.errors:
        return "errored"
    if candidate.share < baseline.share:
        return "regressed"
    if candidate.share > baseline.share:
        return "improved"
    return "still failing" if candidate.share < 1 else "unchanged"


def compare_rows(
    baseline: Mapping[tuple[str, str], CaseTally], candidate: Mapping[tuple[str, str], CaseTally]
) -> list[CaseRow]:
    rows = []
    for key in sorted(baseline.keys() | candidate.keys()):
        b, c = baseline.get(key), candidate.get(key)
        flaky = any(side is not None and 0 < side.passes < side.results for side in (b, c))
        rows.append(CaseRow(key[0], key[1], b, c, classify(b, c), flaky))
    return rows


def select_rows(rows: list[CaseRow], show: str, query: str, sort: str) -> list[CaseRow]:
    """The rows `show` and `query` keep, in `sort` order."""
    kept = [
        r
        for r in rows
        if (show == "all" or (show == "flaky" and r.flaky) or r.change == show)
        and (not query or query.lower() in r.case_id.lower())
    ]
    if sort == "case":
        return sorted(kept, key=lambda r: (r.case_id, r.eval_set_id))
    by_delta = sorted(kept, key=lambda r: (r.delta if r.delta is not None else 0.0, r.case_id, r.eval_set_id))
    if sort == "delta":
        return by_delta
    order = {name: i for i, name in enumerate(CLASSES)}
    return sorted(by_delta, key=lambda r: order[r.change])


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """(`same` | `del` | `add`, text) pieces turning `before` into `after`, word by word (spaces kept)."""
    old, new = re.findall(r"\S+|\s+", before), re.findall(r"\S+|\s+", after)
    pieces: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(("same", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(("del", "".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(("add", "".join(new[j1:j2])))
    return pieces


def responses_text(cases: Sequence[Any]) -> str:
    """The first repetition's responses, one line per turn."""
    if not cases:
        return ""
    return "\n".join(turn.actual_response or "" for turn in cases[0].invocations)


def class_anchor(name: str) -> str:
    """The id of the static report's first row of class `name` (or `flaky`), which its count links to."""
    return "change-" + name.replace(" ", "-")


def gated_metrics(summary: Mapping[str, Any]) -> list[str]:
    """The metrics of a run's summary with a threshold (its criteria), sorted: a column each."""
    return sorted(name for name, metric in summary.items() if metric.threshold is not None)


def class_counts(rows: Sequence[CaseRow]) -> dict[str, int]:
    """{class: cases in it} for every class, and `flaky`: the header's counts."""
    counts = {name: sum(r.change == name for r in rows) for name in CLASSES}
    counts["flaky"] = sum(r.flaky for r in rows)
    return counts


def response_diffs(
    rows: Sequence[CaseRow],
    baseline_cases: Mapping[tuple[str, str], Sequence[Any]],
    candidate_cases: Mapping[tuple[str, str], Sequence[Any]],
) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """{case key: word diff of its responses} for the rows that changed and whose first repetitions answered
    differently; `*_cases`: each side's case results by key, by repetition."""
    texts: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for row in rows:
        if row.change == "unchanged":
            continue
        key = (row.eval_set_id, row.case_id)
        before = responses_text(baseline_cases.get(key, ()))
        after = responses_text(candidate_cases.get(key, ()))
        if before != after:
            texts[key] = word_diff(before, after)
    return texts


@dataclass(frozen=True)
class ChangesView:
    """Two runs case by case, as the static report shows them: every class counted, the changed rows in class order
    (the dashboard's default sort), the unchanged ones apart, and the response diffs of the changed ones."""

    counts: dict[str, int]
    changed: list[CaseRow]
    unchanged: list[CaseRow]
    texts: dict[tuple[str, str], list[tuple[str, str]]]
    gated: list[str]
    """The candidate's gated metrics (a threshold in its summary): a column each."""


def changes_between(baseline: RunResult, candidate: RunResult) -> ChangesView:
    """`baseline` → `candidate` case by case, from the runs' own case results (`tally_cases`): the numbers the
    dashboard's compare page reads from the history's rows."""
    rows = select_rows(compare_rows(tally_cases(baseline.cases), tally_cases(candidate.cases)), "all", "", "change")
    changed = [r for r in rows if r.change != "unchanged"]
    wanted = {(r.eval_set_id, r.case_id) for r in changed}
    sides: list[dict[tuple[str, str], list[CaseResult]]] = []
    for run in (baseline, candidate):
        found: dict[tuple[str, str], list[CaseResult]] = {}
        for case in run.cases:
            key = (case.eval_set_id, case.case_id)
            if key in wanted:
                found.setdefault(key, []).append(case)
        for results in found.values():
            results.sort(key=lambda case: case.repetition)
        sides.append(found)
    return ChangesView(
        counts=class_counts(rows),
        changed=changed,
        unchanged=[r for r in rows if r.change == "unchanged"],
        texts=response_diffs(changed, sides[0], sides[1]),
        gated=gated_metrics(candidate.summary),
    )
