"""A replayed turn checked against the eval case that scores it.

A recording answers the question it was recorded with. Filed under a case whose query has changed since
(the eval set was edited, or the trace was tagged with the wrong case id), its answer and tool calls are
scored against expectations written for another question, and may well pass. So when a turn was recorded
with its user query, that query must be the case's: the same text once Unicode is normalised (NFC) and runs
of whitespace are collapsed (a YAML block scalar's trailing newline is no change of question). Anything else
is a mismatch, which `evalward import-traces` reports naming the case and both queries, and by default
scores as an error (`--query-mismatch warn` scores the turn anyway).

A turn recorded without a query cannot be checked; the recording's own warnings say why
(`genai.content_warnings`), and they are reported with the case too.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass

from evalward.traces.recording_set import Row

QUOTED_LIMIT = 200
"""Characters of a query shown in a message; longer ones are cut (with `…`)."""


def normalized(query: str) -> str:
    return " ".join(unicodedata.normalize("NFC", query).split())


def same_query(recorded: str, asked: str) -> bool:
    """Whether a recorded query is the eval case's (module docstring)."""
    return normalized(recorded) == normalized(asked)


def quoted(text: str, limit: int = QUOTED_LIMIT) -> str:
    """`text` as a JSON string on one line (quotes and control characters escaped: it comes from outside),
    cut to `limit` characters."""
    shown = text if len(text) <= limit else text[:limit] + "…"
    return json.dumps(shown, ensure_ascii=False)


@dataclass(frozen=True)
class TurnCheck:
    """What checking one replayed turn found: whether its recorded query is another question, and the
    warnings to show for it (each naming the case and turn)."""

    mismatch: str | None
    """The error message for a recorded query that is not the case's, else None."""
    warnings: tuple[str, ...]


def check_turn(row: Row, asked: str, *, fail_on_mismatch: bool) -> TurnCheck:
    """Check the recorded turn `row` that answers a turn whose query is `asked`."""
    _, case_id, turn, _ = row.key
    where = f"case {case_id!r} turn {turn}"
    warnings = [f"{where}: {warning}" for warning in row.warnings]
    mismatch = None
    if row.query is not None and not same_query(row.query, asked):
        mismatch = (
            f"the recording answers another question: it was recorded with the query {quoted(row.query)}, "
            f"the eval case asks {quoted(asked)}"
        )
        consequence = (
            "the turn is scored as an error (--query-mismatch warn scores it anyway)"
            if fail_on_mismatch
            else "scored anyway (--query-mismatch warn)"
        )
        warnings.insert(0, f"{where}: {mismatch}; {consequence}")
    return TurnCheck(mismatch=mismatch, warnings=tuple(warnings))
