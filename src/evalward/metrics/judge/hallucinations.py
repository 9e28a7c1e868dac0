"""`hallucinations_v1`: the responses checked and their contexts, the two requests, their replies, the fold.

As ADK 2.13's `HallucinationsV1Evaluator` defines it:
1. Responses checked per turn: the final response; with `evaluate_intermediate_nl_responses: true` also every
   intermediate response (sub-agents' texts), each a step of its own. Empty texts are skipped.
2. Context of a step (`grounding_context`): the instructions when the case carries them (system messages in
   `inputs.messages`), the user query, then what the agent did before that response, in order: its tool
   calls with their outputs and its earlier responses. The final response sees everything of the turn; an
   intermediate response sees the calls before it (`IntermediateResponse.calls_before`; unknown → all of
   the turn's calls) and the responses before it.
3. Two judge requests per step: one segments the response into sentences (`segment_prompt`: copied word for
   word, one per bullet point, a table as one sentence), one labels every sentence against the context
   (`grounding_prompt`): `supported`, `unsupported`, `contradictory`, `disputed`, `not_applicable`.
4. Step score = #{supported or not_applicable} / #sentences (ADK counts `not_applicable` — greetings,
   opinions, questions, arithmetic — as grounded); a segmentation with no sentence leaves the step unscored.
   With s > 1 samples the labelling request is sampled s times (segmentation once) and folded by
   `aggregate`: `mean` of the s step scores (default), or `majority` per sentence (grounded iff more than
   s/2 samples say so; a tie is ungrounded). ADK asks once whatever `num_samples` says, hence s = 1 by default.
5. Turn score = mean of its scored steps (none → not applicable); case score = mean over scored turns.
One deliberate difference: the labelling reply must label every segmented sentence (a reply that drops one
is unreadable and asked again), where ADK averages whatever labels it can parse — so a dropped sentence
can never raise the score.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalward.metrics.judge.prompts import (
    GROUNDING_SYSTEM,
    HALLUCINATION_LABELS,
    SEGMENT_SCHEMA,
    SEGMENT_SYSTEM,
    JudgePrompt,
    activity,
    case_instructions,
    reply_schema,
    turn_question,
)
from evalward.metrics.judge.replies import JudgeReplyError, JudgeVerdict, reply_object, shorten
from evalward.metrics.judge.spec import JudgeSpec
from evalward.model import AgentOutput, IntermediateResponse, Invocation, ToolCall
from evalward.model.text import compact_json

StepKind = Literal["intermediate", "final"]

GROUNDED_LABELS: frozenset[str] = frozenset({"supported", "not_applicable"})
"""Labels ADK counts as grounded (score 1); the other three score 0."""


# --- the responses checked and their contexts -----------------------------------------------------------------


@dataclass(frozen=True)
class ResponseStep:
    """One natural-language response the hallucinations judge checks, with the context it is checked against."""

    kind: StepKind
    text: str
    context: str
    author: str | None = None
    position_known: bool = True
    """False for an intermediate response whose place among the tool calls the agent did not report."""

    def describe(self) -> str:
        if self.kind == "final":
            return "final response"
        return "intermediate response" + (f" by {self.author}" if self.author else "")


def grounding_context(
    question: str,
    instructions: str | None,
    calls: Sequence[ToolCall],
    responses: Sequence[IntermediateResponse],
) -> str:
    """The CONTEXT a response is checked against (module docstring, step 2)."""
    parts = [f"INSTRUCTIONS:\n{instructions}"] if instructions else []
    parts.append(f"USER QUERY:\n{question}")
    numbered = [
        "\n".join([f"{number}. {entry[0]}", *entry[1:]])
        for number, entry in enumerate(activity(calls, responses), start=1)
    ]
    parts.append("WHAT THE AGENT DID BEFORE THIS RESPONSE, IN ORDER:\n" + ("\n".join(numbered) or "(nothing)"))
    return "\n\n".join(parts)


def hallucination_steps(spec: JudgeSpec, expected: Invocation, actual: AgentOutput) -> list[ResponseStep]:
    """The responses of one turn to check, each with its context (module docstring, steps 1–2)."""
    question = turn_question(expected)
    instructions = case_instructions(expected.inputs)
    calls = actual.tool_calls
    responses = actual.intermediate_responses
    steps: list[ResponseStep] = []
    if spec.evaluate_intermediate:
        for index, response in enumerate(responses):
            if not response.text.strip():
                continue
            before = len(calls) if response.calls_before is None else min(response.calls_before, len(calls))
            context = grounding_context(question, instructions, calls[:before], responses[:index])
            steps.append(
                ResponseStep("intermediate", response.text, context, response.author, response.calls_before is not None)
            )
    if actual.response is not None and actual.response.strip():
        context = grounding_context(question, instructions, calls, responses)
        steps.append(ResponseStep("final", actual.response, context))
    return steps


# --- the two requests and their replies -----------------------------------------------------------------------


def segment_prompt(step: ResponseStep) -> JudgePrompt:
    """The request that splits a response into sentences."""
    messages = (
        {"role": "system", "content": SEGMENT_SYSTEM},
        {"role": "user", "content": f"RESPONSE:\n{step.text}"},
    )
    return JudgePrompt(messages=messages, schema_name=SEGMENT_SCHEMA[0], schema=SEGMENT_SCHEMA[1])


def grounding_prompt(spec: JudgeSpec, step: ResponseStep, sentences: Sequence[str]) -> JudgePrompt:
    """The request that labels every sentence of a response against the response's context."""
    name, schema = reply_schema(spec)
    numbered = "\n".join(f"{n}. {json.dumps(s, ensure_ascii=False)}" for n, s in enumerate(sentences, start=1))
    messages = (
        {"role": "system", "content": GROUNDING_SYSTEM},
        {"role": "user", "content": f"CONTEXT:\n{step.context}\n\nSENTENCES:\n{numbered}"},
    )
    return JudgePrompt(messages=messages, schema_name=name, schema=schema)


_SENTENCE_TAG = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)


def parse_segments(text: str) -> tuple[str, ...]:
    """The sentences of a segmentation reply: `{"sentences": [...]}` (strings, or objects with `sentence`),
    or — from a server without JSON output — `<sentence>…</sentence>` tags. Blank entries are dropped."""
    try:
        obj = reply_object(text)
    except JudgeReplyError:
        tagged = _SENTENCE_TAG.findall(text)
        if tagged:
            return tuple(t.strip() for t in tagged if t.strip())
        raise
    entries = obj.get("sentences")
    if not isinstance(entries, list):
        raise JudgeReplyError(f"expected 'sentences' to be a list of strings, found {compact_json(entries)}")
    sentences: list[str] = []
    for position, entry in enumerate(entries):
        value = entry.get("sentence", entry.get("text")) if isinstance(entry, Mapping) else entry
        if not isinstance(value, str):
            raise JudgeReplyError(f"sentences[{position}] must be a string, found {compact_json(entry)}")
        if value.strip():
            sentences.append(value.strip())
    return tuple(sentences)


def _label(value: Any, position: int) -> str:
    text = re.sub(r"[\s-]+", "_", value.strip().strip("`*'\"").strip().lower()) if isinstance(value, str) else ""
    if text not in HALLUCINATION_LABELS:
        raise JudgeReplyError(
            f"sentences[{position}].label must be one of {', '.join(HALLUCINATION_LABELS)}, found {compact_json(value)}"
        )
    return text


def _excerpt(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
        return None
    return value if isinstance(value, str) else compact_json(value)


def parse_grounding(text: str, sentences: Sequence[str] | None = None) -> JudgeVerdict:
    """One sample's labels for the sentences of a response; v = #grounded / #sentences.

    With `sentences` (what the segmentation gave), the reply must label each exactly once — matched by
    `index` when every entry has a distinct valid one, else by position — or it is unreadable.
    """
    obj = reply_object(text)
    entries = obj.get("sentences")
    if not isinstance(entries, list):
        raise JudgeReplyError(f"expected 'sentences' to be a list, found {compact_json(entries)}")
    parsed: list[dict[str, Any]] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise JudgeReplyError(f"sentences[{position}] is not an object")
        rationale = entry.get("rationale", entry.get("reasoning", ""))
        parsed.append(
            {
                "index": entry.get("index"),
                "sentence": str(entry.get("sentence", "")),
                "label": _label(entry.get("label"), position),
                "rationale": rationale if isinstance(rationale, str) else compact_json(rationale),
                "supporting_excerpt": _excerpt(entry, "supporting_excerpt"),
                "contradicting_excerpt": _excerpt(entry, "contradicting_excerpt"),
            }
        )
    if sentences is not None:
        parsed = _match_sentences(parsed, sentences)
    if not parsed:
        raise JudgeReplyError("the judge labelled no sentence")
    grounded = sum(1 for p in parsed if p["label"] in GROUNDED_LABELS)
    items = tuple((str(p["sentence"]), str(p["label"])) for p in parsed)
    reasons = [
        f"{p['label']}: {shorten(str(p['sentence']), 80)}" + (f" ({p['rationale']})" if p["rationale"] else "")
        for p in parsed
        if p["label"] not in GROUNDED_LABELS
    ]
    return JudgeVerdict(
        grounded / len(parsed),
        f"{grounded}/{len(parsed)} grounded",
        "; ".join(reasons) or "every sentence is grounded",
        items,
        tuple(parsed),
    )


def _match_sentences(parsed: list[dict[str, Any]], sentences: Sequence[str]) -> list[dict[str, Any]]:
    n = len(sentences)
    indexes = [p["index"] for p in parsed]
    by_index = all(isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= n for i in indexes) and len(
        set(indexes)
    ) == len(indexes)
    if by_index:
        ordered: list[dict[str, Any] | None] = [None] * n
        for p in parsed:
            ordered[p["index"] - 1] = p
        missing = [str(k + 1) for k, p in enumerate(ordered) if p is None]
        if missing:
            raise JudgeReplyError(
                f"the judge labelled {len(parsed)} of {n} sentences; no label for {', '.join(missing)}"
            )
        matched = [p for p in ordered if p is not None]
    elif len(parsed) == n:
        matched = parsed
    else:
        raise JudgeReplyError(f"the judge labelled {len(parsed)} sentences, the response has {n}")
    # The segmented sentence is the one shown: the judge's echo may differ in whitespace or quotes.
    return [
        {**p, "index": k, "sentence": sentence}
        for k, (p, sentence) in enumerate(zip(matched, sentences, strict=True), start=1)
    ]


# --- folding a response's samples -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StepGrounding:
    """A checked response after folding its samples."""

    value: float
    sentences: tuple[tuple[str, str, int], ...]
    """(sentence, label shown, samples that found it grounded)."""
    explanation: str


_LABEL_ORDER = ("contradictory", "disputed", "unsupported", "not_applicable", "supported")
"""Worst first: which label is shown for a sentence when samples tie."""


def fold_grounding(spec: JudgeSpec, step: ResponseStep, verdicts: Sequence[JudgeVerdict]) -> StepGrounding:
    """One response's score from s labelling samples (module docstring, step 4)."""
    if not verdicts:
        raise ValueError("no judge samples to fold")
    s = len(verdicts)
    n = len(verdicts[0].items)
    rows: list[tuple[str, str, int]] = []
    for k in range(n):
        labels = [v.items[k][1] for v in verdicts]
        votes = sum(1 for label in labels if label in GROUNDED_LABELS)
        counts = Counter(labels)
        top = max(counts.values())
        shown = next(label for label in _LABEL_ORDER if counts.get(label) == top)
        rows.append((verdicts[0].items[k][0], shown, votes))
    if s == 1:
        value = verdicts[0].value
        head = f"{step.describe()}: {verdicts[0].label} = {value:.3f}"
    elif spec.aggregate == "majority":
        grounded = sum(1 for _, _, votes in rows if votes > s / 2)
        value = grounded / n
        head = f"{step.describe()}: {grounded}/{n} grounded by majority of {s} samples = {value:.3f}"
    else:
        value = sum(v.value for v in verdicts) / s
        terms = ", ".join(v.label.removesuffix(" grounded") for v in verdicts)
        head = f"{step.describe()}: mean of {s} samples ({terms}) = {value:.3f}"
    listed = " | ".join(
        f"[{label}{'' if s == 1 else f' {votes}/{s}'}] {json.dumps(shorten(sentence, 70), ensure_ascii=False)}"
        for sentence, label, votes in rows
    )
    return StepGrounding(value, tuple(rows), f"{head}: {listed}")
