"""The workflow files: actions pinned by commit SHA, least privilege, and the fork and shard rules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "workflows").glob("*.yml"))
OURS = [ROOT / ".github" / "workflows" / name for name in ("self-test.yml", "release.yml", "ci.yml")]
PINNED = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[0-9a-f]{40}$")


def load(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_the_example_set_is_complete() -> None:
    names = {p.name for p in EXAMPLES}
    assert names == {"evals.yml", "evals-report.yml", "sharded.yml", "cache-sqlite.yml", "postgres.yml"}


@pytest.mark.parametrize("path", EXAMPLES + OURS, ids=lambda p: p.name)
def test_actions_are_pinned_and_permissions_are_least_privilege(path: Path) -> None:
    workflow = load(path)
    assert workflow["permissions"] == {"contents": "read"}, "top level: read only; jobs ask for more"
    for step in steps(workflow):
        uses = step.get("uses")
        if uses is None or uses == "./" or uses.startswith("docker://"):
            continue
        if uses.startswith("OWNER/evalward@"):  # the example's placeholder for this Action
            assert path in EXAMPLES
            continue
        assert PINNED.match(uses), f"{path.name}: {uses} is not pinned by commit SHA"


def test_the_report_workflow_never_runs_pull_request_code() -> None:
    workflow = load(ROOT / "examples" / "workflows" / "evals-report.yml")
    assert workflow[True] == {"workflow_run": {"workflows": ["Evals"], "types": ["completed"]}}  # YAML `on`
    used = [s.get("uses", "") for s in steps(workflow)]
    assert not any(u.startswith("actions/checkout") for u in used)
    assert not any("run" in s for s in steps(workflow))
    [download] = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/download-artifact@")]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    [post] = [s for s in steps(workflow) if s.get("uses", "").startswith("docker://")]
    assert post["with"]["args"] == "report --from-artifact evalward-results"


def test_the_evals_workflow_uploads_the_artifact_the_report_workflow_reads() -> None:
    workflow = load(ROOT / "examples" / "workflows" / "evals.yml")
    [upload] = [s for s in steps(workflow) if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["name"] == "evalward-results" and upload["if"].startswith("always()")


def test_the_sharded_gate_runs_even_when_a_shard_failed() -> None:
    workflow = load(ROOT / "examples" / "workflows" / "sharded.yml")
    assert workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    [shard_step] = [s for s in workflow["jobs"]["shard"]["steps"] if s.get("uses") == "OWNER/evalward@v0"]
    assert shard_step["with"]["shard"] == "${{ matrix.shard }}/4"
    gate = workflow["jobs"]["gate"]
    assert gate["needs"] == "shard" and gate["if"] == "always()"
    [merge] = [s for s in gate["steps"] if s.get("uses") == "OWNER/evalward@v0"]
    assert merge["with"]["merge-shards"] == "shards"


def test_the_self_test_uses_the_action_from_this_repository() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "self-test.yml")
    [action] = [s for s in steps(workflow) if s.get("uses") == "./"]
    assert action["with"]["eval-paths"] == "examples/dice_agent"
