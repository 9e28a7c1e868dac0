"""What makes a stored run usable as a baseline: the instrument, never the agent (docs/gate.md §9).

The agent (its target, prompt, model, tools, code) is the **treatment**: a pull request that edits it is
exactly what the gate judges, so a different agent is recorded and shown (`agent_changes`), never a reason
to refuse a baseline. The **instrument** is the eval set, the metrics and the grader:

- case inputs (turn queries and inputs, initial session) pair cases: same id and input hash → the same
  case (`input_overlap`); a different input hash is a different case, run on the base side on demand;
- expectations, criteria (thresholds, match types, options, the judge's identity) and the scorer version
  change only how recorded outputs are scored, so a baseline measured with another instrument is
  **re-scored** from its recorded outputs under the current one (`evalward._gating.rescore`);
  `instrument_differences` says what differs, for the report.

`comparability_key(run)` is sha256 of the instrument (criteria per eval set, scorer `major.minor`). It is
stored with every run for history queries; baseline selection no longer refuses on it.
"""

from __future__ import annotations

from typing import Any

from evalward.model import RunResult, canonical_hash


def scorer_version(evalward_version: str) -> str:
    """`major.minor` of an evalward version string (`0.3.1` → `0.3`); the string itself if unparsable."""
    parts = evalward_version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else evalward_version


def instrument_payload(run: RunResult) -> dict[str, Any]:
    """The instrument a run was scored with: each eval set's criteria (judge identity included) and the scorer."""
    eval_sets: list[dict[str, Any]] = [
        {
            "eval_set_id": info.eval_set_id,
            "criteria": sorted((spec.model_dump(mode="json") for spec in info.criteria), key=lambda s: str(s["name"])),
        }
        for info in sorted(run.eval_sets, key=lambda i: i.eval_set_id)
    ]
    return {"eval_sets": eval_sets, "scorer": scorer_version(run.evalward_version)}


def comparability_key(run: RunResult) -> str:
    """sha256 of `instrument_payload(run)` (see the module docstring)."""
    return canonical_hash(instrument_payload(run))


def case_keys(run: RunResult) -> dict[tuple[str, str], tuple[str, str]]:
    """{(eval set, case id): (input hash, content hash)} over the cases a run lists; the input hash falls back to
    the content hash for runs recorded before input hashes were (so only identical cases pair there)."""
    keys: dict[tuple[str, str], tuple[str, str]] = {}
    for info in run.eval_sets:
        for case_id, content in info.case_hashes.items():
            keys[(info.eval_set_id, case_id)] = (info.case_input_hashes.get(case_id) or f"content:{content}", content)
    return keys


def same_input(mine: tuple[str, str], theirs: tuple[str, str]) -> bool:
    """Two cases ask the agent the same thing (equal input hashes; equal content when one has no input hash)."""
    if mine[0].startswith("content:") or theirs[0].startswith("content:"):
        return mine[1] == theirs[1]
    return mine[0] == theirs[0]


def input_overlap(current: RunResult, baseline: RunResult) -> tuple[int, int, int, int]:
    """(same input, changed input, added, removed) case counts by (eval set, case id)."""
    mine, theirs = case_keys(current), case_keys(baseline)
    same = sum(1 for key, value in mine.items() if key in theirs and same_input(value, theirs[key]))
    changed = sum(1 for key, value in mine.items() if key in theirs and not same_input(value, theirs[key]))
    added = sum(1 for key in mine if key not in theirs)
    removed = sum(1 for key in theirs if key not in mine)
    return same, changed, added, removed


def instrument_differences(current: RunResult, other: RunResult) -> list[str]:
    """How `other` was measured differently from `current`, one phrase per part; empty when the same."""
    mine, theirs = instrument_payload(current), instrument_payload(other)
    reasons: list[str] = []
    my_sets = {s["eval_set_id"]: s for s in mine["eval_sets"]}
    their_sets = {s["eval_set_id"]: s for s in theirs["eval_sets"]}
    for set_id in sorted(set(my_sets) & set(their_sets)):
        if my_sets[set_id]["criteria"] != their_sets[set_id]["criteria"]:
            reasons.append(f"criteria of eval set {set_id!r} differ (metrics, thresholds or judge options)")
    if mine["scorer"] != theirs["scorer"]:
        reasons.append(f"scorer version differs (evalward {theirs['scorer']} vs {mine['scorer']})")
    return reasons


def agent_changes(baseline: RunResult, current: RunResult) -> list[str]:
    """What changed in the agent between the runs (the treatment), for the report; empty when nothing did."""
    before, after = baseline.agent, current.agent
    if before is None or after is None:
        return []
    changes: list[str] = []
    if before.kind != after.kind or before.target != after.target:
        changes.append(f"agent target changed: {before.target} → {after.target}")
    elif before.config_hash != after.config_hash:
        changes.append("agent configuration changed (system prompt, tools, model or runner settings)")
    return changes
