"""GitHubClient against the fake GitHub: headers, paging, the §9 retry rule and the permission error."""

from __future__ import annotations

import logging

import httpx
import pytest

from evalward.github import GitHubClient, GitHubError, GitHubPermissionError
from fakes.github_server import FakeGitHub

from .conftest import make_client

REPO = "octo/agent"
SHA = "a" * 40
NOW = 1_700_000_000  # the client's injected clock (conftest.make_client)


def test_headers_and_auth_are_sent(fake: FakeGitHub, client: GitHubClient) -> None:
    client.create_commit_status(REPO, SHA, "success", "evalward", "ok")
    request = fake.requests[-1]
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["user-agent"] == "evalward"
    assert request.identity == "github-actions[bot]"  # the token reached the server…
    assert "authorization" not in request.headers  # …and the fake's log keeps no credential


def test_token_never_in_repr_or_errors(fake: FakeGitHub, waits: list[float], caplog: pytest.LogCaptureFixture) -> None:
    secret = "ghs_actions"
    fake.inject("502", count=10)
    caplog.set_level(logging.DEBUG, logger="evalward.github")
    with make_client(fake, secret, waits, max_retries=1) as github:
        assert secret not in repr(github)
        with pytest.raises(GitHubError) as info:
            github.get_pull(REPO, 1)
    assert secret not in str(info.value) and secret not in repr(info.value)
    assert secret not in caplog.text
    assert "GET /repos/octo/agent/pulls/1 answered 502" in caplog.text


def test_list_issue_comments_reads_every_page(fake: FakeGitHub, client: GitHubClient) -> None:
    for index in range(230):
        fake.seed_comment(REPO, 7, f"comment {index}", login="someone")
    comments = client.list_issue_comments(REPO, 7)
    # 230 comments at 100 per page = pages of 100, 100, 30.
    assert [c["body"] for c in comments] == [f"comment {i}" for i in range(230)]
    gets = fake.requests_to("GET", "/comments")
    assert [r.query.get("page", ["1"]) for r in gets] == [["1"], ["2"], ["3"]]
    assert all(r.query["per_page"] == ["100"] for r in gets)


def test_secondary_limit_with_retry_after_waits_then_backs_off(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.inject("secondary", count=3, retry_after=1)
    assert client.create_issue_comment(REPO, 1, "hello")["body"] == "hello"
    # retry-after 1 s, doubled for each consecutive limit: 1·2^0, 1·2^1, 1·2^2.
    assert waits == [1.0, 2.0, 4.0]
    assert len(fake.requests_to("POST", "/comments")) == 4


def test_secondary_limit_with_remaining_zero_waits_until_reset(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.inject("secondary_reset", reset_at=NOW + 42)
    client.create_commit_status(REPO, SHA, "pending", "evalward")
    # No retry-after, x-ratelimit-remaining 0: wait reset − now = 42 s.
    assert waits == [42.0]


def test_secondary_limit_without_headers_waits_a_minute_then_doubles(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.inject("secondary", count=2, retry_after=None)
    client.create_commit_status(REPO, SHA, "pending", "evalward")
    # Neither header: at least 60 s, then 60·2 = 120 s.
    assert waits == [60.0, 120.0]


def test_429_is_a_secondary_limit(fake: FakeGitHub, client: GitHubClient, waits: list[float]) -> None:
    fake.add_pull(REPO, 5, head_sha=SHA, base_sha="b" * 40)
    fake.inject("429", retry_after=3)
    assert client.get_pull(REPO, 5)["head"]["sha"] == SHA
    assert waits == [3.0]


def test_primary_limit_waits_until_reset(fake: FakeGitHub, client: GitHubClient, waits: list[float]) -> None:
    fake.add_pull(REPO, 3, head_sha=SHA, base_sha="b" * 40)
    fake.inject("primary", reset_at=NOW + 300)
    assert client.get_pull(REPO, 3)["number"] == 3
    assert waits == [300.0]  # reset − now = 300 s, no earlier retry


def test_wait_beyond_max_wait_gives_up_at_once(fake: FakeGitHub, waits: list[float]) -> None:
    fake.inject("primary", reset_at=NOW + 3600)
    with make_client(fake, "ghs_actions", waits, max_wait_s=900) as github, pytest.raises(GitHubError) as info:
        github.get_pull(REPO, 3)
    assert waits == []
    assert info.value.status == 403
    assert "3600 s wait" in info.value.message


def test_5xx_backs_off_exponentially_with_jitter(fake: FakeGitHub, waits: list[float]) -> None:
    fake.add_pull(REPO, 2, head_sha=SHA, base_sha="b" * 40)
    fake.inject("502", count=3)
    # jitter() = 0.5 → factor 0.5 + 0.5/2 = 0.75; waits 0.75·2^0, 0.75·2^1, 0.75·2^2.
    with make_client(fake, "ghs_actions", waits, jitter=lambda: 0.5) as github:
        assert github.get_pull(REPO, 2)["number"] == 2
    assert waits == [0.75, 1.5, 3.0]


def test_network_errors_are_retried(fake: FakeGitHub, client: GitHubClient, waits: list[float]) -> None:
    fake.add_pull(REPO, 2, head_sha=SHA, base_sha="b" * 40)
    fake.inject("disconnect", count=2)
    assert client.get_pull(REPO, 2)["number"] == 2
    assert waits == [1.0, 2.0]  # jitter() = 1.0 → factor 1; 2^0, 2^1


def test_gives_up_after_max_retries(fake: FakeGitHub, waits: list[float]) -> None:
    fake.inject("502", count=100)
    with make_client(fake, "ghs_actions", waits, max_retries=3) as github, pytest.raises(GitHubError) as info:
        github.create_issue_comment(REPO, 1, "x")
    assert info.value.status == 502
    assert info.value.message == "Server Error (gave up after 4 attempts)"
    assert info.value.request == "POST /repos/octo/agent/issues/1/comments"
    assert waits == [1.0, 2.0, 4.0]
    assert len(fake.requests) == 4  # 1 + 3 retries


def test_read_only_token_raises_permission_error_without_retry(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.read_only = True
    with pytest.raises(GitHubPermissionError) as info:
        client.create_issue_comment(REPO, 1, "x")
    assert info.value.status == 403
    assert info.value.message == "Resource not accessible by integration"
    assert waits == [] and len(fake.requests) == 1
    assert client.list_issue_comments(REPO, 1) == []  # reads still work


def test_validation_error_message_carries_details(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.contract_exempt = True  # sends an over-long body on purpose
    with pytest.raises(GitHubError) as info:
        client.create_issue_comment(REPO, 1, "x" * 65_537)
    assert info.value.status == 422
    assert info.value.message == "Validation Failed: Body is too long (maximum is 65536 characters)"


def test_status_description_is_cut_to_140(fake: FakeGitHub, client: GitHubClient) -> None:
    status = client.create_commit_status(REPO, SHA, "failure", "evalward", "d" * 200, "https://ci.test/run/1")
    # 139 characters kept + "…" = 140.
    assert status["description"] == "d" * 139 + "…"
    assert len(fake.requests[-1].body["description"]) == 140


def test_fake_rejects_long_status_description_like_github(fake: FakeGitHub) -> None:
    fake.contract_exempt = True
    answer = httpx.post(
        f"{fake.url}/repos/{REPO}/statuses/{SHA}",
        json={"state": "success", "description": "d" * 141},
        headers={"Authorization": "Bearer ghs_actions"},
    )
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["message"] == "description is too long (maximum is 140 characters)"


def test_compare_gives_merge_base(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.set_compare(REPO, "main", "feature/x", merge_base_sha="c" * 40)
    assert client.merge_base(REPO, "main", "feature/x") == "c" * 40
    assert fake.requests[-1].path == "/repos/octo/agent/compare/main...feature/x"


def test_ghes_api_prefix_is_honoured(waits: list[float]) -> None:
    with FakeGitHub(api_prefix="/api/v3") as ghes:
        with make_client(ghes, "ghs_actions", waits) as github:
            github.create_commit_status(REPO, SHA, "success", "evalward")
        assert ghes.statuses[0]["state"] == "success"
        assert ghes.requests[0].path == f"/repos/{REPO}/statuses/{SHA}"


def test_pagination_link_to_another_host_is_refused() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=[{"id": 1}], headers={"Link": '<https://evil.test/next>; rel="next"'})

    github = GitHubClient("secret-token", api_url="https://api.github.test", transport=httpx.MockTransport(handler))
    with github, pytest.raises(GitHubError, match="another host"):
        github.list_issue_comments(REPO, 1)


def test_bad_repository_name_is_refused(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="owner/name"):
        client.get_pull("octo/agent/../../x", 1)
