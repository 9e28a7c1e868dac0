"""The workflow files: actions pinned by commit SHA, least privilege, history saved also on failure, the fork
and shard rules, the release's tags — and the README's main workflow, which is exactly examples/workflows/evals.yml."""

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
    assert names == {
        "evals.yml",
        "evals-report.yml",
        "sharded.yml",
        "cache-sqlite.yml",
        "postgres.yml",
        "composite.yml",
        "services.yml",
    }


@pytest.mark.parametrize("path", EXAMPLES + OURS, ids=lambda p: p.name)
def test_actions_are_pinned_and_permissions_are_least_privilege(path: Path) -> None:
    workflow = load(path)
    assert workflow["permissions"] == {"contents": "read"}, "top level: read only; jobs ask for more"
    for step in steps(workflow):
        uses = step.get("uses")
        if uses is None or uses in ("./", "./run") or uses.startswith("docker://"):
            continue
        if uses.startswith(("OWNER/evalward@", "OWNER/evalward/run@")):  # the examples' placeholder for this Action
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


def evalward_steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return [s for s in steps(workflow) if s.get("uses", "").startswith(("OWNER/evalward@", "OWNER/evalward/run@"))]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_history_is_saved_also_when_the_gate_fails(path: Path) -> None:
    """The plain actions/cache saves only on success: failing main runs would vanish from the history."""
    workflow = load(path)
    used = [s.get("uses", "") for s in steps(workflow)]
    assert not any(u.startswith("actions/cache@") for u in used), f"{path.name}: use actions/cache/restore + save"
    for job in workflow["jobs"].values():
        job_steps = job.get("steps", [])
        saves = [s for s in job_steps if s.get("uses", "").startswith("actions/cache/save@")]
        for save in saves:
            assert save.get("if") == "always()", f"{path.name}: the history must be saved with if: always()"
            [restore] = [s for s in job_steps if s.get("uses", "").startswith("actions/cache/restore@")]
            assert save["with"]["key"] == restore["with"]["key"] and save["with"]["path"] == restore["with"]["path"]
            assert (
                job_steps.index(restore)
                < job_steps.index(evalward_steps({"jobs": {"j": job}})[0])
                < job_steps.index(save)
            )


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_inputs_are_declared_by_the_action(path: Path) -> None:
    declared = set(load(ROOT / "action.yml")["inputs"])
    for step in evalward_steps(load(path)):
        assert set(step.get("with", {})) <= declared, f"{path.name}: {set(step['with']) - declared}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_pull_request_gates_check_out_the_history(path: Path) -> None:
    """A gated pull request needs its merge-base: every job that gates checks out with fetch-depth 0."""
    workflow = load(path)
    for name, job in workflow["jobs"].items():
        gates = [s for s in evalward_steps({"jobs": {name: job}}) if "shard" not in s.get("with", {})]
        if not gates:
            continue
        [checkout] = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout@")]
        assert checkout.get("with", {}).get("fetch-depth") == 0, f"{path.name}: job {name} needs fetch-depth: 0"


def readme_workflow() -> str:
    """The YAML block right after `<!-- examples/workflows/evals.yml -->` in README.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- examples/workflows/evals\.yml -->\n```yaml\n(.*?)```\n", readme, flags=re.DOTALL)
    assert match, "README.md must show examples/workflows/evals.yml after <!-- examples/workflows/evals.yml -->"
    return match.group(1)


def test_the_readme_workflow_is_exactly_the_example_file() -> None:
    assert readme_workflow() == (ROOT / "examples" / "workflows" / "evals.yml").read_text(encoding="utf-8")


def test_the_readme_workflow_is_pinned_least_privilege_and_keeps_history() -> None:
    workflow = yaml.safe_load(readme_workflow())
    assert workflow[True] == {"pull_request": None, "merge_group": None, "push": {"branches": ["main"]}}  # YAML `on`
    assert workflow["permissions"] == {"contents": "read"}
    [job] = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "statuses": "write", "checks": "write"}
    uses = [s["uses"] for s in job["steps"]]
    assert [u.split("@")[0] for u in uses] == [
        "actions/checkout",
        "actions/cache/restore",
        "OWNER/evalward",
        "actions/cache/save",
        "actions/upload-artifact",
    ]
    assert all(PINNED.match(u) for u in uses if not u.startswith("OWNER/"))
    checkout, restore, evalward, save, upload = job["steps"]
    assert checkout["with"]["fetch-depth"] == 0
    assert save["if"] == "always()" and save["with"]["key"] == restore["with"]["key"]
    assert restore["with"]["path"] == save["with"]["path"] == ".evalward/history.db"
    assert upload["if"] == "always()" and upload["with"]["path"] == "evalward-results/"
    assert set(evalward["with"]) <= set(load(ROOT / "action.yml")["inputs"])


def test_the_release_tags_the_version_and_moves_the_major_tag() -> None:
    workflow = load(ROOT / ".github" / "workflows" / "release.yml")
    assert workflow[True] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    image = workflow["jobs"]["image"]
    [build] = [s for s in image["steps"] if s.get("uses", "").startswith("docker/build-push-action@")]
    tags = build["with"]["tags"].strip().splitlines()
    assert tags == [
        "${{ steps.meta.outputs.image }}:${{ steps.meta.outputs.version }}",
        "${{ steps.meta.outputs.image }}:${{ steps.meta.outputs.major }}",
    ]
    [meta] = [s for s in image["steps"] if s.get("id") == "meta"]
    assert "pyproject.toml" in meta["run"]  # the tag must be the package's version
    major = workflow["jobs"]["major-tag"]
    assert major["needs"] == "image" and major["permissions"] == {"contents": "write"}
    script = " ".join(s.get("run", "") for s in major["steps"])
    assert 'git tag --force "$MAJOR"' in script and 'git push --force origin "refs/tags/$MAJOR"' in script
