"""A deterministic trip-planning agent for the simulated-user tests (no model): it asks where to go until the
user names Paris, then plans the trip with one tool call."""

from __future__ import annotations

from typing import Any


def run(request: dict[str, Any]) -> dict[str, Any]:
    query = request["query"].lower()
    if query.strip() == "hello":
        return {"response": "Hello! I plan trips.", "tool_calls": []}
    if "paris" in query:
        return {
            "response": "Here is your plan: 3 days in Paris with the Louvre, Orsay and Montmartre.",
            "tool_calls": [{"name": "plan_trip", "args": {"city": "Paris", "days": 3}, "result": {"ok": True}}],
        }
    if "thank" in query or "great" in query:
        return {"response": "Enjoy your trip!", "tool_calls": []}
    return {"response": "Where would you like to go, and for how many days?", "tool_calls": []}
