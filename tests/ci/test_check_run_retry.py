"""`evalward ci` when GitHub applies the check-run POST but the answer is lost: still exactly one check run."""

from __future__ import annotations

import pytest

from .conftest import PR_HEAD, Workspace, pull_request_payload, summary


@pytest.mark.parametrize("fault", ["502_after", "disconnect_after"])
def test_a_lost_check_run_answer_leaves_one_check_run(workspace: Workspace, fault: str) -> None:
    workspace.push()
    workspace.agent("bad")
    workspace.fake.inject(fault, 1, path_contains="/check-runs", method="POST")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)

    assert result.exit_code == 1  # the regression decides, not the hiccup
    checks = [r for r in workspace.fake.check_runs.values() if r["head_sha"] == PR_HEAD]
    assert [(c["name"], c["status"], c["conclusion"]) for c in checks] == [("evalward/evals", "completed", "failure")]
    posts = [r for r in workspace.fake.requests_to("POST", "/check-runs") if r.body["head_sha"] == PR_HEAD]
    assert len(posts) == 1
    # The run was found by its external_id and updated in place.
    lookup = workspace.fake.requests_to("GET", f"/commits/{PR_HEAD}/check-runs")
    assert len(lookup) == 1 and checks[0]["external_id"] == posts[0].body["external_id"]
    assert "could not post the check run" not in log and "could not post the check run" not in summary(env)


@pytest.mark.parametrize("fault", ["502_after", "disconnect_after"])
def test_a_lost_comment_answer_is_not_posted_twice(workspace: Workspace, fault: str) -> None:
    from .conftest import PR_NUMBER, REPO

    workspace.push()
    workspace.fake.inject(fault, 1, path_contains=f"/issues/{PR_NUMBER}/comments", method="POST")
    env = workspace.env("pull_request", pull_request_payload())
    result, _log = workspace.run(env)

    assert result.exit_code == 0
    # GitHub applied the first POST; evalward looked before posting again and found it: one POST, one comment.
    assert len(workspace.fake.requests_to("POST", f"/issues/{PR_NUMBER}/comments")) == 1
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert comment["body"].startswith("<!-- evalward:")
    assert result.comment_url and str(comment["id"]) in result.comment_url
    assert not workspace.fake.requests_to("DELETE", "/issues/comments/")


@pytest.mark.parametrize("fault", ["502_after", "disconnect_after"])
def test_a_lost_annotation_batch_answer_does_not_duplicate_annotations(workspace: Workspace, fault: str) -> None:
    import json

    from .conftest import eval_set

    many = [f"City{i:03d}" for i in range(120)]
    (workspace.root / "evals" / "weather.eval.json").write_text(json.dumps(eval_set(many), indent=2))
    workspace.agent("allbad")
    # The first annotation PATCH (annotations 51-100) is applied, then its answer is lost.
    workspace.fake.inject(fault, 1, path_contains="/check-runs/", method="PATCH")
    env = workspace.env("pull_request", pull_request_payload())
    result, _log = workspace.run(env, baseline="none")

    assert result.exit_code == 1
    [check] = [r for r in workspace.fake.check_runs.values() if r["head_sha"] == PR_HEAD]
    # GitHub appends annotations: a blind re-send would have left 170. evalward read annotations_count (100)
    # after the lost answer, saw the batch had landed, and sent only the last 20.
    assert len(workspace.fake.annotations_of(int(check["id"]))) == 120
    patches = workspace.fake.requests_to("PATCH", "/check-runs/")
    assert [len(p.body["output"]["annotations"]) for p in patches] == [50, 20]
