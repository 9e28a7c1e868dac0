"""A judge's reply as the judge cache keeps it: shared by `judging` (which decides what is kept) and `store`
(which keeps it), so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CachedReply:
    """A judge's reply as cached: its text and the tokens it cost when it was first asked."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
