"""Reading a judge's reply: the JSON object in it, and one sample's verdict (value, label, reasoning).

Per-sample value v ∈ [0, 1]:
- correctness / safety: 1 if `is_correct` / `is_safe`, else 0;
- rubric: for each rubric r, y_r = 1 for "yes"; v = (Σ_r y_r) / R;
- hallucinations (ADK's accuracy score): v = #{supported or not_applicable} / #sentences, per checked response
  (`metrics.judge.hallucinations`, step 4);
- scale: bool → 1/0; `[lo, hi]` → (x − lo)/(hi − lo) (x outside [lo, hi] is a judge error);
  choices (worst first) → index/(n − 1), a single choice → 1.0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalward.metrics.judge.spec import JudgeSpec, Scale, is_number
from evalward.model.text import compact_json


class JudgeReplyError(ValueError):
    """The judge answered something that does not fit the reply schema (recorded as a judge error)."""


@dataclass(frozen=True)
class JudgeVerdict:
    """One sample's reading of a judge reply."""

    value: float
    label: str
    reasoning: str
    items: tuple[tuple[str, str], ...] = ()
    """Per rubric (id, "yes"/"no") or per sentence (sentence, label), when the kind has items."""
    notes: tuple[Mapping[str, Any], ...] = ()
    """Per sentence (hallucinations): index, sentence, label, rationale, supporting/contradicting excerpt."""


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)


def reply_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost `{…}` inside prose."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    candidates = [stripped]
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        candidates.append(stripped[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise JudgeReplyError(f"the judge's reply is not a JSON object: {shorten(text)}")


def shorten(text: str, limit: int = 120) -> str:
    """`text` on one line (whitespace runs as one space), cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _boolean(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "valid", "invalid", "yes", "no"):
        return value.strip().lower() in ("true", "valid", "yes")
    raise JudgeReplyError(f"expected {key!r} to be true or false, found {compact_json(value)}")


def _reasoning(obj: Mapping[str, Any]) -> str:
    value = obj.get("reasoning", "")
    return value if isinstance(value, str) else compact_json(value)


def parse_reply(spec: JudgeSpec, text: str) -> JudgeVerdict:
    """One sample's verdict from the judge's reply text (rules in the module docstring)."""
    obj = reply_object(text)
    reasoning = _reasoning(obj)
    if spec.kind == "correctness":
        ok = _boolean(obj, "is_correct")
        return JudgeVerdict(1.0 if ok else 0.0, "VALID" if ok else "INVALID", reasoning)
    if spec.kind == "safety":
        ok = _boolean(obj, "is_safe")
        return JudgeVerdict(1.0 if ok else 0.0, "SAFE" if ok else "UNSAFE", reasoning)
    if spec.kind == "user_simulation":
        ok = _boolean(obj, "is_valid")
        return JudgeVerdict(1.0 if ok else 0.0, "VALID" if ok else "INVALID", reasoning)
    if spec.kind == "step":  # calls: is_similar; the final answer: is_correct
        if "is_similar" in obj:
            ok = _boolean(obj, "is_similar")
            return JudgeVerdict(1.0 if ok else 0.0, "SIMILAR" if ok else "DIFFERENT", reasoning)
        ok = _boolean(obj, "is_correct")
        return JudgeVerdict(1.0 if ok else 0.0, "CORRECT" if ok else "INCORRECT", reasoning)
    if spec.kind == "rubric":
        return _parse_rubrics(spec, obj)
    if spec.kind == "hallucinations":
        from evalward.metrics.judge.hallucinations import parse_grounding  # cycle: it imports this module

        return parse_grounding(text)
    return _parse_scale(spec.scale, obj, reasoning)


def _parse_rubrics(spec: JudgeSpec, obj: Mapping[str, Any]) -> JudgeVerdict:
    entries = obj.get("rubrics")
    if not isinstance(entries, list):
        raise JudgeReplyError(f"expected 'rubrics' to be a list, found {compact_json(entries)}")
    by_id: dict[str, tuple[str, str]] = {}
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise JudgeReplyError(f"rubrics[{position}] is not an object")
        rubric_id = str(entry.get("id", spec.rubrics[position].rubric_id if position < len(spec.rubrics) else ""))
        verdict = entry.get("verdict")
        if not isinstance(verdict, str) or verdict.strip().lower() not in ("yes", "no"):
            raise JudgeReplyError(f"rubrics[{position}].verdict must be 'yes' or 'no', found {compact_json(verdict)}")
        by_id[rubric_id] = (verdict.strip().lower(), _reasoning(entry))
    missing = [r.rubric_id for r in spec.rubrics if r.rubric_id not in by_id]
    if missing:
        raise JudgeReplyError(f"the judge gave no verdict for rubric(s) {', '.join(missing)}")
    items = tuple((r.rubric_id, by_id[r.rubric_id][0]) for r in spec.rubrics)
    yes = sum(1 for _, verdict in items if verdict == "yes")
    reasoning = "; ".join(f"[{r.rubric_id}] {by_id[r.rubric_id][0]}: {by_id[r.rubric_id][1]}" for r in spec.rubrics)
    return JudgeVerdict(yes / len(items), f"{yes}/{len(items)} yes", reasoning, items)


def _parse_scale(scale: Scale, obj: Mapping[str, Any], reasoning: str) -> JudgeVerdict:
    if scale.kind == "bool":
        ok = _boolean(obj, "passed")
        return JudgeVerdict(1.0 if ok else 0.0, "PASS" if ok else "FAIL", reasoning)
    if scale.kind == "range":
        raw = obj.get("score")
        x = _number(raw)
        if x is None:
            raise JudgeReplyError(f"expected 'score' to be a number, found {compact_json(raw)}")
        if not scale.low <= x <= scale.high:
            raise JudgeReplyError(f"score {x:g} is outside the scale [{scale.low:g}, {scale.high:g}]")
        return JudgeVerdict(normalise(x, scale.low, scale.high), f"{x:g}", reasoning)
    choice = obj.get("choice")
    if not isinstance(choice, str) or choice not in scale.choices:
        raise JudgeReplyError(
            f"expected 'choice' to be one of {', '.join(scale.choices)}, found {compact_json(choice)}"
        )
    index = scale.choices.index(choice)
    value = index / (len(scale.choices) - 1) if len(scale.choices) > 1 else 1.0
    return JudgeVerdict(value, choice, reasoning)


def _number(value: Any) -> float | None:
    """A number, or a string holding one (some servers quote numbers in plain-JSON mode); else None."""
    if is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def normalise(x: float, low: float, high: float) -> float:
    """(x − lo)/(hi − lo): a score on [lo, hi] mapped to [0, 1]."""
    return (x - low) / (high - low)
