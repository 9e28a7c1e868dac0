"""The contract check itself, and one pass over every client call against GitHub's REST description.

(Every other test's requests are checked too, by the `fake` fixture's teardown in conftest.py.)
"""

from __future__ import annotations

from typing import Any

from evalward.github import Annotation, GitHubClient, post_check_run, upsert_sticky_comment
from fakes.github_server import FakeGitHub, RecordedRequest

from .contract import check_request, load_subset, match_operation

HEADERS = {"accept": "application/vnd.github+json", "x-github-api-version": "2022-11-28"}
SHA = "e" * 40


def _request(method: str, path: str, body: Any = None, query: dict[str, list[str]] | None = None) -> RecordedRequest:
    return RecordedRequest(method, path, query or {}, dict(HEADERS), body)


def test_subset_records_its_source() -> None:
    subset = load_subset()
    assert subset["package_version"] == "23.0.2"
    assert len(subset["operations"]) == 20


def test_valid_requests_pass() -> None:
    assert check_request(_request("POST", "/repos/o/r/issues/1/comments", {"body": "hi"})) == []
    assert check_request(_request("GET", "/repos/o/r/issues/1/comments", query={"per_page": ["100"]})) == []
    assert (
        check_request(_request("POST", f"/repos/o/r/statuses/{SHA}", {"state": "success", "description": None})) == []
    )


def test_multi_segment_parameters_match() -> None:
    found = match_operation("GET", "/repos/o/r/compare/main...feature/deep/branch")
    assert found is not None
    op, values = found
    assert op.operation_id == "repos/compare-commits-with-basehead"
    assert values["basehead"] == "main...feature/deep/branch"


def test_typo_in_body_key_is_flagged() -> None:
    body = {"name": "e", "head_sha": SHA, "conclusion": "success", "ouput": {"title": "t", "summary": "s"}}
    assert check_request(_request("POST", "/repos/o/r/check-runs", body)) == [
        "POST /repos/o/r/check-runs (checks/create): body: undeclared key 'ouput'"
    ]


def test_nested_undeclared_key_is_flagged() -> None:
    item = {"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": "m", "line": 3}
    body = {"output": {"summary": "s", "annotations": [item]}}
    problems = check_request(_request("PATCH", "/repos/o/r/check-runs/5", body))
    assert problems == [
        "PATCH /repos/o/r/check-runs/5 (checks/update): body.output.annotations[0]: undeclared key 'line'"
    ]


def test_schema_enum_and_limits_are_flagged() -> None:
    body = {"state": "passed", "description": "d" * 141}
    problems = check_request(_request("POST", f"/repos/o/r/statuses/{SHA}", body))
    assert any("'passed' is not one of" in p for p in problems)
    assert any("status description has 141 characters (max 140)" in p for p in problems)


def test_conclusion_rules_are_flagged() -> None:
    body = {"name": "e", "head_sha": SHA, "status": "completed"}
    problems = check_request(_request("POST", "/repos/o/r/check-runs", body))
    assert any("status 'completed' needs a conclusion" in p for p in problems)


def test_integer_path_parameter_and_unknown_path_are_flagged() -> None:
    problems = check_request(_request("PATCH", "/repos/o/r/issues/comments/abc", {"body": "x"}))
    assert problems == [
        "PATCH /repos/o/r/issues/comments/abc (issues/update-comment): path parameter comment_id='abc' is not a integer"
    ]
    assert check_request(_request("GET", "/repos/o/r/nonsense")) == [
        "GET /repos/o/r/nonsense: no operation in the description matches"
    ]


def test_missing_version_header_is_flagged() -> None:
    request = _request("GET", "/repos/o/r/pulls/1")
    del request.headers["x-github-api-version"]
    assert check_request(request) == ["GET /repos/o/r/pulls/1 (pulls/get): X-GitHub-Api-Version header is None"]


def test_every_client_call_conforms(fake: FakeGitHub, client: GitHubClient) -> None:
    repo = "octo/agent"
    fake.add_pull(repo, 9, head_sha=SHA, base_sha="b" * 40)
    fake.pull_files[(repo, 9)] = [{"filename": f"f{i}.py"} for i in range(3)]
    fake.set_compare(repo, "main", "feature", merge_base_sha="c" * 40)
    upsert_sticky_comment(client, repo, 9, "one", marker_id="s")
    upsert_sticky_comment(client, repo, 9, "two", marker_id="s")
    comment = client.create_issue_comment(repo, 9, "temporary")
    client.delete_issue_comment(repo, comment["id"])
    client.create_commit_status(repo, SHA, "pending", "evalward", "running", "https://ci.test/1")
    annotations = [Annotation("a.json", 1, 1, "warning", "m", title="t", raw_details="r")] * 60
    post_check_run(client, repo, SHA, name="evalward", conclusion="neutral", title="t", summary="s",
                   annotations=annotations, details_url="https://ci.test/1", external_id="x")  # fmt: skip
    client.get_pull(repo, 9)
    assert len(client.list_pull_files(repo, 9)) == 3
    client.compare(repo, "main", "feature")

    seen = set()
    for request in fake.requests:
        assert check_request(request) == []
        found = match_operation(request.method, request.path)
        assert found is not None
        seen.add(found[0].operation_id)
    assert seen == {
        "issues/list-comments",
        "issues/create-comment",
        "issues/update-comment",
        "issues/delete-comment",
        "repos/create-commit-status",
        "checks/create",
        "checks/update",
        "pulls/get",
        "pulls/list-files",
        "repos/compare-commits-with-basehead",
    }
