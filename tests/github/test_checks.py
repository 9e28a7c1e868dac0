"""Commit statuses and check runs: limits applied before sending, annotations in batches of 50."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalward.github import (
    Annotation,
    GitHubClient,
    GitHubPermissionError,
    cut_output_text,
    post_check_run,
    post_commit_status,
)
from fakes.github_server import FakeGitHub

REPO = "octo/agent"
SHA = "f" * 40


def _annotations(n: int) -> list[Annotation]:
    return [Annotation(f"evals/case_{i}.json", i + 1, i + 1, "failure", f"case {i} regressed") for i in range(n)]


def test_commit_status_on_head_sha(fake: FakeGitHub, client: GitHubClient) -> None:
    post_commit_status(
        client, REPO, SHA, state="failure", context="evalward", description="x" * 300, target_url="https://run"
    )
    (status,) = fake.statuses
    assert (status["sha"], status["state"], status["context"]) == (SHA, "failure", "evalward")
    assert len(status["description"]) == 140


def test_commit_status_rejects_unknown_state(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="error, failure, pending, success"):
        post_commit_status(client, REPO, SHA, state="passed", context="evalward")


def test_check_run_with_120_annotations_takes_three_requests(fake: FakeGitHub, client: GitHubClient) -> None:
    run = post_check_run(
        client,
        REPO,
        SHA,
        name="evalward",
        conclusion="failure",
        title="2 regressions",
        summary="## Summary",
        text="details",
        annotations=_annotations(120),
        details_url="https://ci.test/run/1",
        external_id="run-1",
        now=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    create = fake.requests_to("POST", "/check-runs")
    patches = fake.requests_to("PATCH", "/check-runs/")
    # 120 = 50 (create) + 50 + 20 (PATCH, appended).
    assert len(create) == 1 and len(patches) == 2
    sizes = [len(r.body["output"]["annotations"]) for r in [*create, *patches]]
    assert sizes == [50, 50, 20]
    assert create[0].body["status"] == "completed" and create[0].body["completed_at"] == "2025-01-02T03:04:05Z"
    assert all(p.body["output"]["summary"] == "## Summary" for p in patches)  # output never blanked
    stored = fake.annotations_of(run["id"])
    assert [a["path"] for a in stored] == [f"evals/case_{i}.json" for i in range(120)]
    assert run["output"]["annotations_count"] == 120
    assert fake.check_runs[run["id"]]["conclusion"] == "failure"
    assert fake.check_runs[run["id"]]["output"]["text"] == "details"


def test_check_run_without_annotations_is_one_request(fake: FakeGitHub, client: GitHubClient) -> None:
    post_check_run(client, REPO, SHA, name="evalward", conclusion="success", title="ok", summary="all good")
    assert len(fake.requests) == 1
    assert fake.requests[0].body["output"]["annotations"] == []


def test_check_run_annotation_cap_is_noted_in_summary(fake: FakeGitHub, client: GitHubClient) -> None:
    run = post_check_run(
        client, REPO, SHA, name="e", conclusion="failure", title="t", summary="s", annotations=_annotations(75),
        max_annotations=60,
    )  # fmt: skip
    # 75 − 60 = 15 dropped; 60 = 50 + 10.
    assert len(fake.annotations_of(run["id"])) == 60
    assert (
        fake.requests[0].body["output"]["summary"]
        == "s\n\n15 more annotations were not posted (limit 60 per check run)."
    )


def test_summary_and_text_are_cut_to_65535(fake: FakeGitHub, client: GitHubClient) -> None:
    long_text = "line\n" * 20_000  # 100,000 characters
    post_check_run(client, REPO, SHA, name="e", conclusion="neutral", title="t", summary=long_text, text=long_text)
    output = fake.requests[0].body["output"]
    assert len(output["summary"]) <= 65_535 and len(output["text"]) <= 65_535
    assert output["summary"].endswith(
        "100,000 characters exceed GitHub's 65,535; the full report is in the job summary."
    )


def test_cut_output_text_keeps_short_text() -> None:
    assert cut_output_text("short") == "short"
    cut = cut_output_text("a" * 200, limit=100)
    assert len(cut) <= 100 and "200 characters" in cut


def test_check_run_rejects_bad_conclusion(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="found 'stale'"):
        post_check_run(client, REPO, SHA, name="e", conclusion="stale", title="t", summary="s")
    with pytest.raises(ValueError, match="title and a summary"):
        post_check_run(client, REPO, SHA, name="e", conclusion="success", title="", summary="s")


def test_check_run_on_read_only_token_raises_permission_error(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.read_only = True
    with pytest.raises(GitHubPermissionError):
        post_check_run(client, REPO, SHA, name="e", conclusion="success", title="t", summary="s")


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"start_line": 0}, "start_line: expected ≥ 1, found 0"),
        ({"end_line": 1, "start_line": 2}, "end_line: expected ≥ start_line 2, found 1"),
        ({"level": "error"}, "level: expected one of notice, warning, failure, found 'error'"),
        ({"title": "t" * 256}, "title: expected ≤ 255 characters, found 256"),
        ({"message": "m" * 65_537}, "message: expected ≤ 65536 bytes, found 65537"),
        ({"message": ""}, "message: expected text"),
        ({"end_line": 3, "start_column": 1}, "only allowed when start_line == end_line"),
        ({"path": ""}, "path: expected a repository-relative path"),
    ],
)
def test_annotation_validation(kwargs: dict[str, object], problem: str) -> None:
    fields: dict[str, object] = {"path": "a.json", "start_line": 1, "end_line": 1, "level": "warning", "message": "m"}
    fields.update(kwargs)
    with pytest.raises(ValueError) as info:
        Annotation(**fields)  # type: ignore[arg-type]
    assert problem in str(info.value)


def test_annotation_to_api_omits_unset_fields() -> None:
    item = Annotation("a.json", 3, 3, "notice", "m", title="T", start_column=2, end_column=5).to_api()
    assert item == {
        "path": "a.json",
        "start_line": 3,
        "end_line": 3,
        "annotation_level": "notice",
        "message": "m",
        "title": "T",
        "start_column": 2,
        "end_column": 5,
    }


def test_fake_rejects_51_annotations_and_error_level(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.contract_exempt = True
    from evalward.github import GitHubError

    item = {"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m"}
    payload = {"name": "e", "head_sha": SHA, "conclusion": "success", "output": {"title": "t", "summary": "s"}}
    with pytest.raises(GitHubError) as info:
        client.create_check_run(REPO, {**payload, "output": {"title": "t", "summary": "s", "annotations": [item] * 51}})
    assert info.value.status == 422 and "exceeds the maximum of 50" in info.value.message
    with pytest.raises(GitHubError) as info:
        bad = {**item, "annotation_level": "error"}
        client.create_check_run(REPO, {**payload, "output": {"title": "t", "summary": "s", "annotations": [bad]}})
    assert info.value.status == 422 and '"error" is not one of' in info.value.message
    with pytest.raises(GitHubError, match='"title" wasn\'t supplied'):
        client.create_check_run(REPO, {**payload, "output": {"summary": "s"}})
    with pytest.raises(GitHubError, match='"conclusion" wasn\'t supplied'):
        client.create_check_run(REPO, {"name": "e", "head_sha": SHA, "status": "completed"})
