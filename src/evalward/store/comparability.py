"""What makes two runs' scores comparable, as one hash.

`comparability_key(run)` is sha256 of the canonical JSON of:

    {"eval_sets": [{"eval_set_id": …, "criteria": [MetricSpec…sorted by name]} …sorted by id],
     "agent": {"kind": …, "target": …, "config_hash": …},
     "scorer": "<evalward major>.<minor>"}

- criteria carry every metric's threshold and options, which is where a judge's model and prompt live,
  so a different judge is a different key (GATE.md §9: grader identity);
- the agent's kind, target string and runner-configuration hash;
- the scorer version: evalward's major.minor release (metric implementations may change between minor
  releases; patch releases must not change scores and only produce a note).

Per-case content hashes are deliberately *not* in the key: the gate pairs cases by id and compares only
cases whose content hash is equal on both sides, listing added, removed and changed cases separately
(GATE.md §1). Putting them in the key would make any edit of one case refuse the whole baseline.
`RunResult.fingerprint` (exact eval-set content, used for resuming) stays the stricter identity.
"""

from __future__ import annotations

from typing import Any

from evalward.model import RunResult, canonical_hash


def scorer_version(evalward_version: str) -> str:
    """`major.minor` of an evalward version string (`0.3.1` → `0.3`); the string itself if unparsable."""
    parts = evalward_version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else evalward_version


def comparability_payload(run: RunResult) -> dict[str, Any]:
    """The values hashed by `comparability_key`, for explaining a mismatch part by part."""
    eval_sets: list[dict[str, Any]] = [
        {
            "eval_set_id": info.eval_set_id,
            "criteria": sorted((spec.model_dump(mode="json") for spec in info.criteria), key=lambda s: str(s["name"])),
        }
        for info in sorted(run.eval_sets, key=lambda i: i.eval_set_id)
    ]
    return {
        "eval_sets": eval_sets,
        "agent": None
        if run.agent is None
        else {"kind": run.agent.kind, "target": run.agent.target, "config_hash": run.agent.config_hash},
        "scorer": scorer_version(run.evalward_version),
    }


def comparability_key(run: RunResult) -> str:
    """sha256 of `comparability_payload(run)` (see the module docstring for what is in it and why)."""
    return canonical_hash(comparability_payload(run))


def comparability_differences(current: RunResult, other: RunResult) -> list[str]:
    """Why `other` is not comparable with `current`, one phrase per differing part; empty when comparable."""
    mine, theirs = comparability_payload(current), comparability_payload(other)
    reasons: list[str] = []
    my_sets = {s["eval_set_id"]: s for s in mine["eval_sets"]}
    their_sets = {s["eval_set_id"]: s for s in theirs["eval_sets"]}
    if set(my_sets) != set(their_sets):
        reasons.append(f"eval sets differ ({sorted(their_sets)} vs {sorted(my_sets)})")
    for set_id in sorted(set(my_sets) & set(their_sets)):
        if my_sets[set_id]["criteria"] != their_sets[set_id]["criteria"]:
            reasons.append(f"criteria of eval set {set_id!r} differ (metrics, thresholds or judge options)")
    if mine["agent"] != theirs["agent"]:
        reasons.append("agent target or configuration differs")
    if mine["scorer"] != theirs["scorer"]:
        reasons.append(f"scorer version differs (evalward {theirs['scorer']} vs {mine['scorer']})")
    return reasons
