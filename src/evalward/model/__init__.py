"""The vocabulary every stage shares: eval sets going in, trajectories and scores coming out."""

from typing import TYPE_CHECKING, Any

from evalward.model.agent_io import (
    AgentOutput,
    AgentRequest,
    IntermediateResponse,
    Message,
    ToolCall,
    Trajectory,
    Usage,
)
from evalward.model.cases import CaseEdit, CaseSequence
from evalward.model.evalset import (
    DEFAULT_MAX_TURNS,
    STOP_SIGNAL,
    ConversationScenario,
    Criteria,
    EvalCase,
    EvalFormat,
    EvalSet,
    Invocation,
    MetricSpec,
    SessionInput,
    SourceLocation,
    UserBehavior,
    UserPersona,
    UserSimulatorConfig,
    canonical_hash,
)
from evalward.model.results import (
    SCHEMA_VERSION,
    AgentTarget,
    CaseError,
    CaseResult,
    CaseStatus,
    CaseSummary,
    ErrorKind,
    EvalSetInfo,
    InvocationResult,
    MetricResult,
    MetricStatus,
    MetricSummary,
    RunContext,
    RunResult,
    SimulationEnd,
    SimulationResult,
)

if TYPE_CHECKING:
    from evalward.model.verdict import (
        VERDICT_SCHEMA_VERSION,
        BaselineInfo,
        CaseDiagnostic,
        Finding,
        MetricComparison,
        NewlyBroken,
        NoBaseline,
        PerCaseTests,
        Verdict,
        VerdictCounts,
    )

# The gate's vocabulary (ten pydantic models) loads on first use: a run that gates nothing never needs it.
_VERDICT_NAMES = frozenset(
    {
        "VERDICT_SCHEMA_VERSION",
        "BaselineInfo",
        "CaseDiagnostic",
        "Finding",
        "MetricComparison",
        "NewlyBroken",
        "NoBaseline",
        "PerCaseTests",
        "Verdict",
        "VerdictCounts",
    }
)

__all__ = [
    "DEFAULT_MAX_TURNS",
    "SCHEMA_VERSION",
    "STOP_SIGNAL",
    "VERDICT_SCHEMA_VERSION",
    "AgentOutput",
    "AgentRequest",
    "AgentTarget",
    "BaselineInfo",
    "CaseDiagnostic",
    "CaseEdit",
    "CaseError",
    "CaseResult",
    "CaseSequence",
    "CaseStatus",
    "CaseSummary",
    "ConversationScenario",
    "Criteria",
    "ErrorKind",
    "EvalCase",
    "EvalFormat",
    "EvalSet",
    "EvalSetInfo",
    "Finding",
    "IntermediateResponse",
    "Invocation",
    "InvocationResult",
    "Message",
    "MetricComparison",
    "MetricResult",
    "MetricSpec",
    "MetricStatus",
    "MetricSummary",
    "NewlyBroken",
    "NoBaseline",
    "PerCaseTests",
    "RunContext",
    "RunResult",
    "SessionInput",
    "SimulationEnd",
    "SimulationResult",
    "SourceLocation",
    "ToolCall",
    "Trajectory",
    "Usage",
    "UserBehavior",
    "UserPersona",
    "UserSimulatorConfig",
    "Verdict",
    "VerdictCounts",
    "canonical_hash",
]


def __getattr__(name: str) -> Any:
    if name in _VERDICT_NAMES:
        # start-up: the gate's models (~7 ms) load when first named; a run never names them.
        from evalward.model import verdict

        return getattr(verdict, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
