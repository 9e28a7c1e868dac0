"""Where history, the base side and the gate meet: make the baseline of a run, then decide.

See `evalward._gating.flow` for the steps; `rescore` re-scores a stored baseline under the current
instrument, `base_side` runs the merge-base's agent on demand.
"""

from evalward._gating.base_side import BASELINE_RUN_MODES, BaselineRunMode
from evalward._gating.flow import (
    BaselinePlan,
    GateOutcome,
    RemoteSearch,
    gate_run,
    header_of,
    load_current_run,
    load_policy,
    plan_baseline,
    run_and_gate,
)
from evalward.store.gitinfo import resolve_merge_base

__all__ = [
    "BASELINE_RUN_MODES",
    "BaselinePlan",
    "BaselineRunMode",
    "GateOutcome",
    "RemoteSearch",
    "gate_run",
    "header_of",
    "load_current_run",
    "load_policy",
    "plan_baseline",
    "resolve_merge_base",
    "run_and_gate",
]
