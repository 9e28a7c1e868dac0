"""The confusion table of a single-step evaluation: expected label × actual label, per output key.

Read from the run's per-turn `output_match` results (their `details.expected` / `details.actual`), so it
shows exactly what was scored. A key the agent did not return counts under the actual label `(missing)`;
non-string labels are shown as compact JSON. Rows are expected labels, columns actual labels (both
sorted, `(missing)` last); the diagonal is what was right:

    accuracy = Σ diagonal / total,   recall(label) = diagonal(label) / row total(label).

Markdown escapes every label with `escape.md_inline`; plain text (for terminals and logs) with
`escape.workflow_command_safe` on one line per label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evalward.model import RunResult
from evalward.model.text import compact_json
from evalward.report.escape import md_inline, truncate, workflow_command_safe

MISSING = "(missing)"
LABEL_CHARS = 40


@dataclass(frozen=True)
class Confusion:
    """Counts of (expected, actual) labels for one output key."""

    key: str
    counts: dict[tuple[str, str], int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def correct(self) -> int:
        return sum(n for (expected, actual), n in self.counts.items() if expected == actual)

    @property
    def expected_labels(self) -> list[str]:
        return _ordered({e for e, _ in self.counts})

    @property
    def actual_labels(self) -> list[str]:
        return _ordered({a for _, a in self.counts} | set(self.expected_labels) - {MISSING})

    def row_total(self, expected: str) -> int:
        return sum(n for (e, _), n in self.counts.items() if e == expected)


def _ordered(labels: set[str]) -> list[str]:
    return sorted(labels - {MISSING}) + ([MISSING] if MISSING in labels else [])


def _label(value: object) -> str:
    return value if isinstance(value, str) else compact_json(value)


def confusions(run: RunResult, metric: str = "output_match") -> list[Confusion]:
    """One `Confusion` per output key scored by `metric`, in key order."""
    counts: dict[str, Counter[tuple[str, str]]] = {}
    for case in run.cases:
        for turn in case.invocations:
            for result in turn.metric_results:
                if result.name != metric or result.status in ("error", "not_applicable"):
                    continue
                expected = result.details.get("expected") or {}
                actual = result.details.get("actual") or {}
                for key, value in expected.items():
                    got = _label(actual[key]) if key in actual else MISSING
                    counts.setdefault(key, Counter())[(_label(value), got)] += 1
    return [Confusion(key, dict(counts[key])) for key in sorted(counts)]


def _accuracy(c: Confusion) -> str:
    share = c.correct / c.total if c.total else 0.0
    return f"{c.correct}/{c.total} correct ({share:.1%})"


def render_confusion_markdown(tables: Sequence[Confusion]) -> str:
    """The tables as GitHub-flavoured markdown (every label escaped)."""
    if not tables:
        return ""
    parts = ["### Single-step evaluation"]
    for c in tables:
        columns = c.actual_labels
        parts.append(f"**{md_inline(c.key, max_len=LABEL_CHARS)}**: {_accuracy(c)}")
        header = (
            "| expected \\ actual | " + " | ".join(md_inline(a, max_len=LABEL_CHARS) for a in columns) + " | recall |"
        )
        rule = "| --- | " + " | ".join("---:" for _ in columns) + " | ---: |"
        rows = [header, rule]
        for expected in c.expected_labels:
            cells = [str(c.counts.get((expected, actual), 0)) for actual in columns]
            right, total = c.counts.get((expected, expected), 0), c.row_total(expected)
            label = md_inline(expected, max_len=LABEL_CHARS)
            rows.append(f"| {label} | " + " | ".join(cells) + f" | {right}/{total} |")
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


def render_confusion_text(tables: Sequence[Confusion]) -> str:
    """The tables as aligned plain text (labels made log-safe, one line each)."""
    lines: list[str] = []
    for c in tables:
        columns = [_plain(a) for a in c.actual_labels]
        rows = [(_plain(e), e) for e in c.expected_labels]
        first = max([len("expected \\ actual"), *(len(label) for label, _ in rows)])
        widths = [max(len(name), 3) for name in columns]
        lines.append(f"{_plain(c.key)}: {_accuracy(c)}")
        lines.append(
            "  "
            + "expected \\ actual".ljust(first)
            + "  "
            + "  ".join(n.rjust(w) for n, w in zip(columns, widths, strict=True))
            + "  recall"
        )
        for label, expected in rows:
            cells = [
                str(c.counts.get((expected, actual), 0)).rjust(w)
                for actual, w in zip(c.actual_labels, widths, strict=True)
            ]
            right, total = c.counts.get((expected, expected), 0), c.row_total(expected)
            lines.append("  " + label.ljust(first) + "  " + "  ".join(cells) + f"  {right}/{total}")
    return "\n".join(lines) + ("\n" if lines else "")


def _plain(text: str) -> str:
    return workflow_command_safe(truncate(" ".join(text.split()), LABEL_CHARS))
