"""A metric a team might publish for evalward, with its options as a pydantic model.

`mentions_order`: 1 when the agent's answer names the last number of the question (the order it asks about), else
0; the option `prefix` is what must come before the number, e.g. "Order ".
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

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
