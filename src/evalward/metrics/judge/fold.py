"""A turn's value from its s judge samples, and the per-sample details a report keeps.

Folding s samples (`aggregate`):
- `majority` — correctness, safety, scale=bool: 1 iff #{v = 1} > s/2, so a tie is 0 (ADK's rule: tie →
  invalid); rubric: each rubric by the same majority over its s answers, then the mean over rubrics;
  other scales: the most frequent value, ties broken towards the lowest (a tie never flatters the agent);
- `mean` — (Σ v) / s.

The turn's value is the folded one; the case score is the mean over the turns the metric applies to (as
every turn metric; ADK's "fraction of valid invocations" for `final_response_match_v2`). A turn without
what the judge needs (correctness without a reference response; hallucinations/safety without a response)
is not applicable (`prompts.applies`). Every sample keeps the judge's reasoning in `details`, and the explanation quotes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalward.metrics.judge.replies import JudgeVerdict
from evalward.metrics.judge.spec import JudgeSpec


@dataclass(frozen=True)
class Folded:
    """The turn's value from s samples, with the arithmetic and the reasoning that carries the decision."""

    value: float
    explanation: str
    reasoning: str


def fold_samples(spec: JudgeSpec, verdicts: Sequence[JudgeVerdict]) -> Folded:
    """Fold the samples of one turn by `spec.aggregate` (rules in the module docstring)."""
    if not verdicts:
        raise ValueError("no judge samples to fold")
    s = len(verdicts)
    labels = ", ".join(v.label for v in verdicts)
    if spec.aggregate == "mean":
        value = sum(v.value for v in verdicts) / s
        terms = " + ".join(f"{v.value:.3f}" for v in verdicts)
        explanation = (
            f"{spec.metric}: {value:.3f}" if s == 1 else f"mean of {s} samples ({labels}): ({terms})/{s} = {value:.3f}"
        )
        return Folded(value, explanation, _closest(verdicts, value).reasoning)
    if spec.kind == "rubric":
        return _fold_rubrics(spec, verdicts)
    binary = all(v.value in (0.0, 1.0) for v in verdicts) and (spec.kind != "scale" or spec.scale.kind == "bool")
    if binary:
        ones = sum(1 for v in verdicts if v.value == 1.0)
        value = 1.0 if ones > s / 2 else 0.0
        if s == 1:
            explanation = f"judge: {verdicts[0].label} -> {value:.1f}"
        else:
            rule = (
                f"{ones}/{s} > 1/2"
                if value == 1.0
                else f"{ones}/{s} not > 1/2" + (" (tie -> 0)" if ones * 2 == s else "")
            )
            explanation = f"majority of {s} samples ({labels}): {rule} -> {value:.1f}"
        return Folded(value, explanation, _closest(verdicts, value).reasoning)
    counts = Counter(v.value for v in verdicts)
    top = max(counts.values())
    value = min(v for v, c in counts.items() if c == top)
    tie = " (tie -> lowest)" if sum(1 for c in counts.values() if c == top) > 1 else ""
    explanation = f"most frequent of {s} samples ({labels}): {value:.3f} x{top}{tie}"
    return Folded(value, explanation, _closest(verdicts, value).reasoning)


def _fold_rubrics(spec: JudgeSpec, verdicts: Sequence[JudgeVerdict]) -> Folded:
    s = len(verdicts)
    per_rubric: list[tuple[str, int]] = []
    for index, rubric in enumerate(spec.rubrics):
        yes = sum(1 for v in verdicts if v.items[index][1] == "yes")
        per_rubric.append((rubric.rubric_id, yes))
    passed = [rid for rid, yes in per_rubric if yes > s / 2]
    value = len(passed) / len(per_rubric)
    parts = ", ".join(f"{rid} {yes}/{s}" + (" yes" if yes > s / 2 else " no") for rid, yes in per_rubric)
    explanation = f"rubrics met by majority of {s} sample(s): {parts}; {len(passed)}/{len(per_rubric)} = {value:.3f}"
    return Folded(value, explanation, _closest(verdicts, value).reasoning)


def _closest(verdicts: Sequence[JudgeVerdict], value: float) -> JudgeVerdict:
    """The sample whose value is nearest the folded one (its reasoning explains the outcome)."""
    return min(verdicts, key=lambda v: abs(v.value - value))


def sample_details(verdicts: Sequence[JudgeVerdict]) -> list[dict[str, Any]]:
    """Per-sample diagnostics kept in `MetricResult.details["samples"]`."""
    return [
        {
            "value": v.value,
            "label": v.label,
            "reasoning": v.reasoning,
            **({"items": [list(i) for i in v.items]} if v.items else {}),
        }
        for v in verdicts
    ]
