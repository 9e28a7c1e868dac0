"""`mentions_order`: 1 when the agent's answer names the last number of the question (the order it asks about),
else 0; `prefix` (an option) is what must come before the number, e.g. "Order "."""

from __future__ import annotations

import re

from evalward import Metric, MetricSpec, Score, TurnContext

_NUMBER = re.compile(r"\d+")


class MentionsOrder(Metric):
    name = "mentions_order"
    description = "The answer names the order the question asks about."

    def check_options(self, spec: MetricSpec) -> list[str]:
        unknown = [key for key in spec.options if key != "prefix"]
        return [f"unknown option {key!r} (known: prefix)" for key in unknown]

    def score_turn(self, ctx: TurnContext) -> Score | None:
        numbers = _NUMBER.findall(ctx.expected.query)
        if not numbers:
            return None
        wanted = f"{ctx.spec.options.get('prefix', '')}{numbers[-1]}"
        found = wanted in (ctx.actual.response or "")
        return Score(1.0 if found else 0.0, f"{wanted!r} {'named' if found else 'not named'} in the answer")
