"""Two metrics a team might publish for evalward, each with its options as a pydantic model.

- `mentions_order`: 1 when the agent's answer names the last number of the question (the order it asks about),
  else 0; the option `prefix` is what must come before the number, e.g. "Order ".
- `short_answer`: 1 when the answer has at most `max_words` words (default 12), else 0. It is `async def`, as a
  metric that asks a service would be: evalward awaits it.
"""

from __future__ import annotations

import asyncio
import re

from pydantic import BaseModel, ConfigDict, Field

from evalward import Metric, Score, TurnContext

_NUMBER = re.compile(r"\d+")


class MentionsOrderOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt option is an error, not a silent default

    prefix: str = ""


class MentionsOrder(Metric):
    name = "mentions_order"
    description = "The answer names the order the question asks about."
    Options = MentionsOrderOptions

    def score_turn(self, ctx: TurnContext[MentionsOrderOptions]) -> Score | None:
        numbers = _NUMBER.findall(ctx.expected.query)
        if not numbers:
            return None
        wanted = f"{ctx.options.prefix}{numbers[-1]}"
        found = wanted in (ctx.actual.response or "")
        return Score(1.0 if found else 0.0, f"{wanted!r} {'named' if found else 'not named'} in the answer")


class ShortAnswerOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_words: int = Field(default=12, ge=1)


class ShortAnswer(Metric):
    name = "short_answer"
    description = "The answer has at most max_words words."
    Options = ShortAnswerOptions

    async def score_turn(self, ctx: TurnContext[ShortAnswerOptions]) -> Score | None:
        await asyncio.sleep(0)  # where a metric calling a service would wait for its reply
        words = len((ctx.actual.response or "").split())
        limit = ctx.options.max_words
        return Score(1.0 if words <= limit else 0.0, f"{words} word(s), at most {limit}")
