"""What an agent did: tool calls, messages, its output for a turn, and the request it was given.

These models are also the agent protocol: `AgentRequest` is what every runner sends and `AgentOutput`
is what every agent returns (as a dict, JSON object or the model itself).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalward.model.text import format_call

CallStatus = Literal["ok", "error", "deferred"]


class ToolCall(BaseModel):
    """One call of a tool (or of an agent, for hand-offs)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    name: str = Field(description="Tool or agent name; case-sensitive.")
    args: dict[str, Any] | None = Field(
        default=None, description="Decoded arguments; None when absent (ADK treats absent args as != {})."
    )
    agent: str | None = Field(default=None, description="The agent that issued the call (multi-agent attribution).")
    result: Any = Field(default=None, description="The tool's output, when recorded.")
    id: str | None = Field(default=None, description="Provider call id, joins calls with their results.")
    status: CallStatus = Field(default="ok", description="`ok`, `error` or `deferred`.")
    step: int | None = Field(default=None, description="Model step that issued it; parallel calls share a step.")

    def signature(self) -> str:
        """`name(k=v, …)` with JSON values, for diffs and reports."""
        return format_call(self.name, self.args)


class IntermediateResponse(BaseModel):
    """A natural-language response produced on the way to the final one (ADK sub-agents)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    author: str = Field(description="The agent that produced it.")
    text: str
    calls_before: int | None = Field(
        default=None,
        ge=0,
        description="How many of the turn's tool calls came before this response (its place in the turn); "
        "None when the agent does not say. The hallucinations judge shows a response only what preceded it.",
    )


class Message(BaseModel):
    """A chat message in OpenAI shape: history handed to agents and recorded reference trajectories."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = Field(default=None, description="Calls requested by an assistant message.")
    tool_call_id: str | None = Field(default=None, description="For role `tool`: the call this answers.")
    name: str | None = Field(default=None, description="Tool name (role `tool`) or agent name.")


class Usage(BaseModel):
    """Resources one turn used, as reported by the agent."""

    # `model_requests`/`model_retries` are not pydantic's: pydantic < 2.10 warns about the `model_` prefix
    # on import unless the protected namespaces are switched off (2.10+ protects only its own method names).
    model_config = ConfigDict(defer_build=True, extra="forbid", protected_namespaces=())

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model_requests: int | None = None
    model_retries: int | None = Field(
        default=None, description="Retries behind those requests (rate limits, server errors), not counted in them."
    )

    def plus(self, other: Usage | None) -> Usage:
        """Field-wise sum; a field stays None only when both sides are None."""
        if other is None:
            return self

        def add(a: float | int | None, b: float | int | None) -> Any:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            cost_usd=add(self.cost_usd, other.cost_usd),
            model_requests=add(self.model_requests, other.model_requests),
            model_retries=add(self.model_retries, other.model_retries),
        )


_OUTPUT_FIELDS = {
    "response",
    "tool_calls",
    "trajectory",
    "agents",
    "intermediate_responses",
    "state",
    "usage",
    "outputs",
    "error",
    "retryable",
}


class AgentOutput(BaseModel):
    """What the agent returned for one turn (the agent protocol's response).

    Keys beyond the documented ones (e.g. `route`) are kept in `outputs` so datasets can compare them.
    An agent may report a failure with `error` (and `retryable: true` to ask for a retry).
    """

    model_config = ConfigDict(defer_build=True, extra="forbid")

    response: str | None = Field(default=None, description="The final response text.")
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls made during the turn, in order.")
    trajectory: list[str] | None = Field(
        default=None, description="Step names (graph nodes, agents, tools) when the agent reports them."
    )
    agents: list[str] | None = Field(default=None, description="Agents that took part, in order of first call.")
    intermediate_responses: list[IntermediateResponse] = Field(default_factory=list)
    state: Any = Field(default=None, description="Session/environment state after the turn, if reported.")
    usage: Usage | None = None
    outputs: dict[str, Any] = Field(default_factory=dict, description="Any other output keys, e.g. `route`.")
    error: str | None = Field(default=None, description="The agent's own report that the turn failed.")
    retryable: bool = Field(default=False, description="With `error`: the failure is transient; retry the turn.")

    @model_validator(mode="before")
    @classmethod
    def _collect_extra_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            extra = {k: v for k, v in data.items() if k not in _OUTPUT_FIELDS}
            if extra:
                data = {k: v for k, v in data.items() if k in _OUTPUT_FIELDS}
                data["outputs"] = {**extra, **(data.get("outputs") or {})}
        return data

    def steps(self) -> list[str]:
        """The reported step names, or else the tool-call names in order."""
        return list(self.trajectory) if self.trajectory is not None else [c.name for c in self.tool_calls]

    def agent_names(self) -> list[str]:
        """Reported agents, or else the distinct agents that issued calls, in order of first appearance."""
        if self.agents is not None:
            return list(self.agents)
        seen: list[str] = []
        for call in self.tool_calls:
            if call.agent is not None and call.agent not in seen:
                seen.append(call.agent)
        return seen

    def tools_by_agent(self) -> dict[str, list[str]]:
        """Tool names per issuing agent, in call order (duplicates kept)."""
        grouped: dict[str, list[str]] = {}
        for call in self.tool_calls:
            grouped.setdefault(call.agent or "", []).append(call.name)
        return grouped


class AgentRequest(BaseModel):
    """What the agent receives for one turn (the agent protocol's request)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    case_id: str
    turn: int = Field(description="0-based index of the turn within the case.")
    query: str = Field(description="The user's message for this turn.")
    inputs: dict[str, Any] = Field(default_factory=dict, description="Structured inputs from the eval case.")
    history: list[Message] = Field(
        default_factory=list, description="Earlier turns: user, assistant (with tool calls) and tool messages."
    )
    session_id: str = Field(description="Unique per case and repetition; stable across its turns.")
    session_state: dict[str, Any] = Field(default_factory=dict, description="Initial session state of the case.")
    repetition: int = Field(default=0, description="0-based repetition index.")
    next_action_only: bool = Field(
        default=False,
        description="Teacher forcing: `history` ends with this turn's user message and a reference prefix "
        "(assistant tool calls and tool results); answer with the next action only — the tool calls of one "
        "model step, not executed, or the final response.",
    )


class Trajectory(BaseModel):
    """The normalised view of what an agent did in one turn, as the trajectory metrics read it."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    tool_calls: list[ToolCall] = Field(default_factory=list, description="Calls in order.")
    steps: list[str] = Field(default_factory=list, description="Step names: reported ones, else the call names.")
    agents: list[str] = Field(default_factory=list, description="Agents that took part.")

    @classmethod
    def of(cls, output: AgentOutput) -> Trajectory:
        return cls(tool_calls=list(output.tool_calls), steps=output.steps(), agents=output.agent_names())
