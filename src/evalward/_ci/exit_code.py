"""What a verdict means for the step: its exit code, its GitHub states and the `regressions` output.

Exit codes (docs/gate.md §6), the same for `evalward gate` (every class named) and the Action (`fail-on`): 0 the
gate passed or failed only on what `fail-on` does not name; 1 it failed on a named class — `regression`
(regression, newly broken, cost, latency findings), `threshold` (threshold, must-pass) — or on a hard gate
(errors, missing cases, mismatches, no baseline under `on_missing_baseline = "fail"`) unless `fail-on` is
`none`; 2 it failed only because it could not decide and `inconclusive` is named (the policy's `strict`), as
bad input does; 3 infrastructure, and the verdict `error`: no baseline could be stored or run
(`on_missing_baseline = "error"`), or a baseline but no comparable case — which no `fail-on` turns into a pass.

`passed` is "true" exactly when the step exits 0 because the gate did not block it: the verdict passed, was
inconclusive (without `strict`), or failed only on what `fail-on` does not name. It is "false" whenever the step
fails for the verdict (exit 1 or 2), when no verdict was reached (exit 2 or 3), and empty for a shard, which is
not gated (its `verdict` is empty too). `passed_output` is the one place that says so.

`regressions` counts the blocking findings that say the change made things worse: kinds `regression` (a
gated metric, or a case the gate blocks on), `cost`, `latency`, `threshold` and `must_pass` — whatever
`fail-on: regression,threshold` can fail on. Errors, missing cases, mismatches and "no baseline" block too
but are not regressions: the `verdict` output says the gate failed, `regressions` says how many things got
worse.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from evalward._ci.inputs import FAIL_CLASSES
from evalward.errors import EXIT_FAILED, EXIT_INFRASTRUCTURE, EXIT_OK, EXIT_UNDECIDED
from evalward.gate.conclusion import NO_VERDICT_KINDS
from evalward.github.publish import GateStates
from evalward.model.verdict import Verdict

REGRESSION_KINDS = FAIL_CLASSES["regression"] | FAIL_CLASSES["threshold"]
"""Blocking findings counted by the `regressions` output (module docstring)."""
ALL_FAIL_CLASSES = frozenset(FAIL_CLASSES)
"""`fail-on` naming every class: any blocking finding fails (`evalward gate` and the daemon)."""


@dataclass(frozen=True)
class Decision(GateStates):
    """What the verdict means for this step under `fail-on` (GitHub's states: `GateStates`)."""

    exit_code: int = EXIT_OK
    regressions: int = 0
    failed_on: tuple[str, ...] = ()


def passed_output(decision: Decision | None, *, gated: bool = True) -> str:
    """The `passed` output (module docstring): "true" exactly when the gate did not block the step, "false" when it
    did or no verdict was reached (`decision` None), "" for a shard (`gated` False)."""
    if not gated:
        return ""
    return "true" if decision is not None and not decision.failing else "false"


def count_regressions(verdict: Verdict) -> int:
    """Blocking findings of the `REGRESSION_KINDS` (module docstring)."""
    return sum(1 for f in verdict.blocking() if f.kind in REGRESSION_KINDS)


def decide_exit(verdict: Verdict, fail_on: Collection[str]) -> Decision:
    """Map the verdict onto the step's exit code and GitHub states (see the module docstring)."""
    if verdict.outcome == "error":
        why = tuple(dict.fromkeys(f.kind for f in verdict.blocking() if f.kind in NO_VERDICT_KINDS))
        return Decision(
            outcome="error",
            failing=True,
            exit_code=EXIT_INFRASTRUCTURE,
            regressions=0,
            failed_on=why or ("no_baseline",),
        )
    named = set().union(*(FAIL_CLASSES[c] for c in fail_on)) if fail_on else set()
    every_class = set().union(*FAIL_CLASSES.values())
    failed_on: list[str] = []
    if verdict.outcome == "fail" and fail_on:
        for finding in verdict.blocking():
            if finding.kind in named or finding.kind not in every_class:
                failed_on.append(finding.kind)
    failing = bool(failed_on)
    undecided = failing and set(failed_on) <= FAIL_CLASSES["inconclusive"]
    return Decision(
        outcome=verdict.outcome,
        failing=failing,
        exit_code=EXIT_UNDECIDED if undecided else EXIT_FAILED if failing else EXIT_OK,
        regressions=count_regressions(verdict),
        failed_on=tuple(dict.fromkeys(failed_on)),
    )
