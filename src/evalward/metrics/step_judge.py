"""Judged teacher-forced steps (`match: judge` on a step metric), the pure part: when to ask, what to ask.

Exact matching (the default) fails an agent that paraphrases a search query ("Denis Villeneuve brother"
for a recorded "Denis Villanueve Brother"). With `match: judge`, an LLM judge decides each step instead
(guide 001's scoring):

- step j ≤ m: the agent proposed calls. No calls at all → c_j = 0 without asking; the same calls as the
  reference (as a multiset, `stepwise.same_multiset`) → c_j = 1 without asking; otherwise the judge is
  shown the user's request, the expected calls and the proposed calls (names and JSON arguments) and
  answers `{reasoning, is_similar}`: c_j = 1 iff the proposed calls are sufficiently similar to achieve
  what the expected ones would (parallel calls compared as a whole, in any order);
- step m+1 (the final answer): calls → c_j = 0; an empty answer → 0; otherwise the judge is shown the
  request, the reference answer and the agent's answer and answers `{reasoning, is_correct}`: c_j = 1 iff
  the answer is factually correct according to the reference (more detail is fine, a contradiction is not).
  Without a reference answer (none in the trajectory, no `expect.response`) the exact rule applies.

With s samples (`num_samples`, default 1) the verdicts fold by majority (a tie is 0), as for every judged
metric. Replies are cached like every judge reply, so re-running unchanged steps asks nothing; the step's
verdict and the judge's reasoning go to the step's entry in `details.steps`.

Which criterion configures the judge: the step metrics of a turn share one set of credits, so the first
step criterion of the case with `match: judge` decides for all of them (its `judge_model`,
`judge_model_options`, `num_samples`, …); without one, every step is compared exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import field_validator

from evalward.metrics.metric_options import StrictOptions
from evalward.metrics.registry import STEPWISE_METRICS
from evalward.model import MetricSpec, ToolCall

if TYPE_CHECKING:  # the judge machinery is imported only when a step is judged
    from evalward.metrics.judge.prompts import JudgePrompt  # cycle: metrics.judge.prompts imports this module

STEP_CALLS_SYSTEM = """You check one step of an AI agent against a reference trajectory.
At this point the reference agent made the EXPECTED tool calls; the agent under test made the PROPOSED calls instead.
Decide whether the proposed calls are close enough to the expected ones to count as the same step: the same tools, asked for the same information or action.
Tolerate differences that do not change what the calls would return or do: wording, spelling variants of a name, letter case, argument order, call order, equivalent phrasings of a search.
Do not tolerate a different tool, a different target (another person, place, date, id or amount), a missing call or an extra call that does something else.
Reply with a JSON object: {"reasoning": "<your reasoning, briefly>", "is_similar": true or false}."""

STEP_ANSWER_SYSTEM = """You check the final answer of an AI agent against a reference answer.
Decide whether the agent's ANSWER is factually correct according to the REFERENCE ANSWER, for the user's REQUEST.
Judge facts only: wording, format and extra correct detail do not matter; a wrong, missing or contradicting fact does.
Reply with a JSON object: {"reasoning": "<your reasoning, briefly>", "is_correct": true or false}."""


def _schema(key: str) -> dict[str, Any]:
    properties = {"reasoning": {"type": "string"}, key: {"type": "boolean"}}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


CALLS_SCHEMA: tuple[str, dict[str, Any]] = ("step_similarity", _schema("is_similar"))
ANSWER_SCHEMA: tuple[str, dict[str, Any]] = ("step_answer_correctness", _schema("is_correct"))

MATCH_OPTION = "match"


def judges_steps(spec: MetricSpec) -> bool:
    """True for a step criterion (or its alias) with `match: judge`."""
    return spec.name in STEPWISE_METRICS and spec.options.get(MATCH_OPTION) == "judge"


def step_judge_spec(specs: Sequence[MetricSpec]) -> MetricSpec | None:
    """The criterion whose judge decides the case's steps (module docstring), or None: exact matching."""
    return next((s for s in specs if judges_steps(s)), None)


class ExactStepOptions(StrictOptions):
    """A step criterion compared exactly (the default): `match` is its only option."""

    unknown_option: ClassVar[str | None] = (
        "option {key} needs match: judge; with exact matching the only option is 'match'"
    )

    match: Literal["exact"] = "exact"

    @field_validator("match", mode="before")
    @classmethod
    def _match(cls, value: object) -> object:
        if value not in ("exact", "judge") or not isinstance(value, str):
            raise ValueError("match must be 'exact' or 'judge'")
        return value


def step_options_model(spec: MetricSpec) -> type[StrictOptions]:
    """The options model of a step criterion: the judge's options with `match: judge`, else `match` alone."""
    if judges_steps(spec):
        from evalward.metrics.judge.spec import StepJudgeOptions  # cycle: metrics.judge.spec imports this module

        return StepJudgeOptions
    return ExactStepOptions


def calls_json(calls: Sequence[ToolCall]) -> str:
    """Calls as the judge sees them: one JSON object per line, `{"name": …, "arguments": {…}}`."""
    if not calls:
        return "(no tool calls)"
    return "\n".join(
        json.dumps({"name": c.name, "arguments": c.args or {}}, ensure_ascii=False, sort_keys=True) for c in calls
    )


def calls_prompt(request: str, expected: Sequence[ToolCall], proposed: Sequence[ToolCall]) -> JudgePrompt:
    """The request asking whether `proposed` is sufficiently similar to `expected`."""
    from evalward.metrics.judge.prompts import JudgePrompt  # cycle: metrics.judge.prompts imports this module

    user = f"REQUEST:\n{request}\n\nEXPECTED CALLS:\n{calls_json(expected)}\n\nPROPOSED CALLS:\n{calls_json(proposed)}"
    messages = ({"role": "system", "content": STEP_CALLS_SYSTEM}, {"role": "user", "content": user})
    return JudgePrompt(messages=messages, schema_name=CALLS_SCHEMA[0], schema=CALLS_SCHEMA[1])


def answer_prompt(request: str, reference: str, answer: str) -> JudgePrompt:
    """The request asking whether `answer` is factually correct according to `reference`."""
    from evalward.metrics.judge.prompts import JudgePrompt  # cycle: metrics.judge.prompts imports this module

    user = f"REQUEST:\n{request}\n\nREFERENCE ANSWER:\n{reference}\n\nANSWER:\n{answer}"
    messages = ({"role": "system", "content": STEP_ANSWER_SYSTEM}, {"role": "user", "content": user})
    return JudgePrompt(messages=messages, schema_name=ANSWER_SCHEMA[0], schema=ANSWER_SCHEMA[1])
