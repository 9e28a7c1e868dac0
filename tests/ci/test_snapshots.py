"""Snapshots of what a gated regression looks like on GitHub: comment, job summary, check run, status.

The input is a results artifact committed under `data/regression-artifact/` (a `bad` agent run against
its `good` baseline: 6 of 10 cases lost their tool call), so ids, times and latencies are fixed. Rendered
text is compared whole with `snapshots/`; after an intended change of the renderers, regenerate them with
`EVALWARD_UPDATE_SNAPSHOTS=1 pytest tests/ci/test_snapshots.py` and review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from evalward._ci import Rendered, decide_exit, read_artifact, render_outcome

HERE = Path(__file__).resolve().parent
ARTIFACT = HERE / "data" / "regression-artifact"
SNAPSHOTS = HERE / "snapshots"


@pytest.fixture(scope="module")
def rendered() -> Rendered:
    artifact = read_artifact(ARTIFACT)
    assert artifact.verdict is not None
    decision = decide_exit(artifact.verdict, artifact.meta.fail_on)
    return render_outcome(
        artifact.run,
        artifact.verdict,
        artifact.baseline,
        decision,
        name=artifact.meta.name,
        details_url="https://github.test/Codertocat/Hello-World/actions/runs/9002",
        root=None,
    )


def check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("EVALWARD_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing snapshot {path}; run with EVALWARD_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its snapshot"


def test_comment_snapshot(rendered: Rendered) -> None:
    check("comment.md", rendered.comment_body)
    assert len(rendered.comment_body) < 65_536 - 100


def test_job_summary_snapshot(rendered: Rendered) -> None:
    check("summary.md", rendered.summary)


def test_check_run_snapshot(rendered: Rendered) -> None:
    check("check-title.txt", rendered.check_title + "\n")
    check("check-summary.md", rendered.check_summary)
    check("check-text.md", rendered.check_text)
    check(
        "annotations.json", json.dumps([asdict(a) for a in rendered.annotations], indent=2, ensure_ascii=False) + "\n"
    )
    # 6 failing cases: the 6 threshold findings name them (blocking → failure), each on its own line.
    assert [a.level for a in rendered.annotations] == ["failure"] * 6
    assert len({a.line for a in rendered.annotations}) == 6


def test_status_description_snapshot(rendered: Rendered) -> None:
    check("status.txt", rendered.status_description + "\n")
    assert len(rendered.status_description) <= 140
