"""An LlmAgent driven by a scripted model (no network) that calls an agent used as a tool.

`helper` (LlmAgent, scripted model) calls the `researcher` agent tool, then answers with its result.
`researcher` (a BaseAgent) calls `search_web` inside the agent tool's own runner: ADK's evaluation never
sees that call (google/adk-python#3493); evalward's observer does.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.agent_tool import AgentTool
from google.genai import types


class Researcher(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        def event(*parts: types.Part) -> Event:
            return Event(
                invocation_id=ctx.invocation_id,
                author=self.name,
                content=types.Content(role="model", parts=list(parts)),
            )

        yield event(types.Part(function_call=types.FunctionCall(name="search_web", args={"q": "tides"}, id="w1")))
        yield event(
            types.Part(function_response=types.FunctionResponse(name="search_web", response={"r": "6am"}, id="w1"))
        )
        yield event(types.Part(text="High tide at 6am."))


class ScriptedModel(BaseLlm):
    """Asks for the researcher first; answers from the tool result once it is in the conversation."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1] if llm_request.contents else None
        results = [p.function_response for p in (last.parts or [])] if last else []
        if results and results[0] is not None:
            answer: Any = results[0].response
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=f"Answer: {answer}")]))
            return
        call = types.FunctionCall(name="researcher", args={"request": "when is high tide?"}, id="r1")
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


root_agent = LlmAgent(
    name="helper",
    model=ScriptedModel(),
    instruction="Answer with the researcher's help.",
    tools=[AgentTool(agent=Researcher(name="researcher", description="Researches a question."))],
)
