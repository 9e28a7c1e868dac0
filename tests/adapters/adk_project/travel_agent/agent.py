"""A model-free ADK agent for parity tests: scripted events, no LLM, no network.

`travel_root` transfers to the `flights` sub-agent, which searches (a function call and its response),
says what it found (an intermediate text), and books when asked; `travel_root` then answers. The
destination is read from the user's message; `home` from the session state.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.genai import types

AIRPORTS = {"lisbon": "LIS", "paris": "CDG", "rome": "FCO"}


def _event(ctx: InvocationContext, author: str, *parts: types.Part) -> Event:
    return Event(invocation_id=ctx.invocation_id, author=author, content=types.Content(role="model", parts=list(parts)))


def _call(name: str, args: dict[str, Any], call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))


def _response(name: str, response: dict[str, Any], call_id: str) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(name=name, response=response, id=call_id))


def _query(ctx: InvocationContext) -> str:
    parts = ctx.user_content.parts if ctx.user_content and ctx.user_content.parts else []
    return " ".join(p.text for p in parts if p.text).lower()


class FlightsAgent(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        query = _query(ctx)
        city = next((c for c in AIRPORTS if c in query), "paris")
        # A deliberate slip: Rome is searched under Paris's code, so that case fails its trajectory.
        code = AIRPORTS["paris"] if city == "rome" else AIRPORTS[city]
        yield _event(ctx, self.name, _call("search_flights", {"to": code}, "c-search"))
        yield _event(ctx, self.name, _response("search_flights", {"flights": 2}, "c-search"))
        yield _event(ctx, self.name, types.Part(text=f"Found 2 flights to {code}."))
        if "book" in query:
            yield _event(ctx, self.name, _call("book_flight", {"to": code, "seats": 1}, "c-book"))
            yield _event(ctx, self.name, _response("book_flight", {"ok": True}, "c-book"))


class TravelRoot(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        query = _query(ctx)
        home = ctx.session.state.get("home", "home")
        if not any(c in query for c in AIRPORTS):
            yield _event(ctx, self.name, types.Part(text="Where would you like to fly?"))
            return
        yield _event(ctx, self.name, _call("transfer_to_agent", {"agent_name": "flights"}, "c-transfer"))
        yield _event(ctx, self.name, _response("transfer_to_agent", {"result": None}, "c-transfer"))
        async for event in self.sub_agents[0].run_async(ctx):
            yield event
        city = next(c for c in AIRPORTS if c in query)
        verb = "booked" if "book" in query else "found"
        yield _event(ctx, self.name, types.Part(text=f"Flights from {home} to {city.title()} {verb}."))


root_agent = TravelRoot(name="travel_root", sub_agents=[FlightsAgent(name="flights")])
