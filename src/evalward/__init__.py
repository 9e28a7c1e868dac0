"""evalward: regression gating for AI agents in CI.

The names below are the Python API: what an agent, a test or a custom evaluator is written against. Every
other module is internal (see docs/architecture.md, "Public API") and may change between releases.

    from evalward import evaluate, trace

    def test_agent():
        evaluate(agent="shop.agent:root_agent", eval_set="tests/evals/", num_runs=2)

Names load on first use: `import evalward` (which the `evalward` command does first) imports nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalward import trace
    from evalward.gate.policy import GatePolicy
    from evalward.metrics.base import CaseContext, Metric, Score, TurnContext
    from evalward.model import (
        AgentOutput,
        AgentRequest,
        CaseResult,
        EvalCase,
        EvalSet,
        Invocation,
        MetricResult,
        MetricSpec,
        RunResult,
        ToolCall,
        Usage,
        Verdict,
    )
    from evalward.testing import evaluate, evaluate_async

__version__ = "0.1.0"

_HOME = {
    # pytest: run eval sets as a test, ADK's AgentEvaluator.evaluate with the same arguments
    "evaluate": "evalward.testing",
    "evaluate_async": "evalward.testing",
    # an in-process agent reports its tool calls, sub-agents, steps and usage
    "trace": "evalward.trace",
    # what an agent receives and returns (a dict works too)
    "AgentRequest": "evalward.model",
    "AgentOutput": "evalward.model",
    "ToolCall": "evalward.model",
    "Usage": "evalward.model",
    # eval sets built in code, and the results and verdicts read back from `--json` files
    "EvalSet": "evalward.model",
    "EvalCase": "evalward.model",
    "Invocation": "evalward.model",
    "RunResult": "evalward.model",
    "CaseResult": "evalward.model",
    "MetricResult": "evalward.model",
    "Verdict": "evalward.model",
    # the gate's policy, as `[gate]` in evalward.toml
    "GatePolicy": "evalward.gate.policy",
    # a metric of your own, registered by your package under the `evalward.metrics` entry-point group
    "Metric": "evalward.metrics.base",
    "MetricSpec": "evalward.model",
    "Score": "evalward.metrics.base",
    "TurnContext": "evalward.metrics.base",
    "CaseContext": "evalward.metrics.base",
}

__all__ = [
    "AgentOutput",
    "AgentRequest",
    "CaseContext",
    "CaseResult",
    "EvalCase",
    "EvalSet",
    "GatePolicy",
    "Invocation",
    "Metric",
    "MetricResult",
    "MetricSpec",
    "RunResult",
    "Score",
    "ToolCall",
    "TurnContext",
    "Usage",
    "Verdict",
    "__version__",
    "evaluate",
    "evaluate_async",
    "trace",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(home)
    value = module if home == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
