"""An ADK-style dice-and-primes agent, deterministic and offline, for evalward's quick start.

It speaks evalward's agent protocol: `root_agent(request)` gets `{case_id, turn, query, history, ...}` and
returns `{response, tool_calls}`. Rolls come from a generator seeded by the case and turn, so every run of
the same eval set gives the same answers.
"""

from __future__ import annotations

import random
import re
from typing import Any

CAPABILITIES = "I can roll dice of different sizes and check if a number is prime."


def roll_die(sides: int, rng: random.Random) -> int:
    """The tool: one roll of a die with `sides` faces."""
    return rng.randint(1, sides)


def check_prime(nums: list[int]) -> dict[int, bool]:
    """The tool: which of `nums` are prime."""

    def is_prime(n: int) -> bool:
        return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))

    return {n: is_prime(n) for n in nums}


def root_agent(request: dict[str, Any]) -> dict[str, Any]:
    query = request["query"].lower()
    rng = random.Random(f"{request['case_id']}/{request['turn']}")
    calls: list[dict[str, Any]] = []

    roll = re.search(r"roll (?:a |an )?(\d+)?[- ]?(?:sided )?(?:die|dice)( twice)?", query)
    prime = re.search(r"is (\d+)\s+a prime", query)
    if roll:
        sides = int(roll.group(1) or 6)
        times = 2 if roll.group(2) else 1
        results = []
        for _ in range(times):
            value = roll_die(sides, rng)
            results.append(value)
            calls.append({"name": "roll_die", "args": {"sides": sides}, "result": value})
        if times == 1:
            response = f"I rolled a {sides} sided die and got {results[0]}."
        else:
            response = (
                f"I have rolled a {sides} sided die twice. "
                f"The first roll was {results[0]} and the second roll was {results[1]}."
            )
    elif prime:
        number = int(prime.group(1))
        verdict = check_prime([number])
        calls.append({"name": "check_prime", "args": {"nums": [number]}, "result": verdict})
        response = f"Yes, {number} is a prime number." if verdict[number] else f"No, {number} is not a prime number."
    elif "what can you do" in query or query.strip() in {"hi", "hello"}:
        response = f"Hello! {CAPABILITIES}"
    else:
        response = f"I'm sorry, I cannot help with that. {CAPABILITIES}"
    return {"response": response, "tool_calls": calls}
