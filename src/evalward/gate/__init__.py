"""The gate: a pure `decide(current, baseline, policy) -> Verdict` telling real regressions from noise.

See `evalward.gate.decide` for the policy as a numbered list and docs/gate.md for the method.
"""

from evalward.gate.decide import compare, decide
from evalward.gate.policy import CASE_PASS_METRIC, GatePolicy, MetricOverride, QuarantineEntry, RatioGate

__all__ = [
    "CASE_PASS_METRIC",
    "GatePolicy",
    "MetricOverride",
    "QuarantineEntry",
    "RatioGate",
    "compare",
    "decide",
]
