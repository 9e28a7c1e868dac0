"""What the gate's second look ran and what gating a pull request cost, as plain text (docs/gate.md §6).

Shared by every report (`verdict_view` puts them in the view; the HTML template calls them). Untrusted case names
stay raw: each renderer escapes.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalward.model.verdict import CaseDiagnostic, Verdict

MAX_TOP_UP_CASES = 10
"""Case names the top-up line lists before "and N more"."""


def top_up_text(verdict: Verdict) -> str | None:
    """The top-up and the second look in plain words, with the suspects it re-ran (and, when a budget kept the even
    repetitions to some cases, those); None when none was considered (docs/gate.md §6)."""
    top_up = verdict.top_up
    if top_up is None:
        return None
    text = top_up.message
    if top_up.confirmed_cases:
        text += " Suspects re-run: " + _some(top_up.confirmed_cases)
    if top_up.cases and top_up.cases != [f"{c.eval_set_id}/{c.case_id}" for c in verdict.cases if _compared(c)]:
        text += " Cases given more repetitions: " + _some(top_up.cases)
    return text


def _some(names: Sequence[str]) -> str:
    more = len(names) - MAX_TOP_UP_CASES
    return ", ".join(names[:MAX_TOP_UP_CASES]) + (f" and {more} more." if more > 0 else ".")


def _compared(case: CaseDiagnostic) -> bool:
    return case.label not in ("new", "removed", "changed") and not case.quarantined


def agent_runs_text(verdict: Verdict) -> str | None:
    """What gating cost in agent runs, e.g. "20 for this run, 20 on the base side (run on demand), 40 in the
    top-up: 80 in all, 4.0× one run of the suite"; None when the caller recorded none."""
    runs = verdict.agent_runs
    if runs is None or not runs.current:
        return None
    parts = [f"{runs.current:,} for this run"]
    if runs.base_side:
        parts.append(f"{runs.base_side:,} on the base side (run on demand)")
    top_up = runs.top_up_current + runs.top_up_baseline
    if top_up:
        where = (
            f"{runs.top_up_current:,} + {runs.top_up_baseline:,} on the base side"
            if runs.top_up_baseline
            else ("this side only")
        )
        parts.append(f"{top_up:,} in the top-up ({where})")
    text = ", ".join(parts) + f": {runs.this_job:,} in all, {runs.ratio or 0:.1f}× one run of the suite"
    if runs.stored_baseline:
        text += f"; {runs.stored_baseline:,} baseline repetitions came from the history"
    return text
