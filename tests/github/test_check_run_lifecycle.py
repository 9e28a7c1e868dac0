"""Check runs over real HTTP: in progress then completed by id, and never two from a create whose answer was lost.

The fake's `502_after` / `disconnect_after` faults carry the POST out and then answer 502 or drop the
connection, as a proxy time-out or a network cut after GitHub applied the request would.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalward.github import (
    Annotation,
    GitHubClient,
    GitHubError,
    GitHubUncertainError,
    create_check_run_once,
    post_check_run,
    start_check_run,
)
from fakes.github_server import FakeGitHub

REPO = "octo/agent"
SHA = "a" * 40
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def _annotations(n: int) -> list[Annotation]:
    return [Annotation(f"evals/case_{i}.json", i + 1, i + 1, "warning", f"case {i}") for i in range(n)]


@pytest.mark.parametrize("fault", ["502_after", "disconnect_after"])
def test_a_create_whose_answer_was_lost_is_found_and_updated_not_sent_again(
    fake: FakeGitHub, client: GitHubClient, waits: list[float], fault: str
) -> None:
    fake.inject(fault, 1, path_contains="/check-runs", method="POST")
    run = post_check_run(
        client, REPO, SHA, name="evalward", conclusion="failure", title="2 regressions", summary="s",
        annotations=_annotations(60), external_id="evalward:run-7", now=NOW,
    )  # fmt: skip

    [stored] = fake.check_runs.values()
    assert run["id"] == stored["id"] and stored["conclusion"] == "failure"
    # One POST (applied, answer lost), a look-up by name, then PATCHes of that run: no second POST.
    assert [(r.method, r.path.split("/")[-1]) for r in fake.requests] == [
        ("POST", "check-runs"),
        ("GET", "check-runs"),
        ("PATCH", str(stored["id"])),
        ("PATCH", str(stored["id"])),
    ]
    lookup = fake.requests[1]
    assert lookup.path == f"/repos/{REPO}/commits/{SHA}/check-runs"
    assert (lookup.query["check_name"], lookup.query["filter"]) == (["evalward"], ["all"])
    # The recovery PATCH leaves the annotations out (the lost POST added the first 50): 50 + 10, no repeats.
    assert "annotations" not in fake.requests[2].body["output"]
    assert [a["path"] for a in fake.annotations_of(stored["id"])] == [f"evals/case_{i}.json" for i in range(60)]
    assert waits == [1.0]  # one back-off before looking


def test_a_create_that_failed_before_it_was_applied_is_sent_again(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.inject("502", 1, path_contains="/check-runs", method="POST")
    run = post_check_run(client, REPO, SHA, name="evalward", conclusion="success", title="ok", summary="s")

    [stored] = fake.check_runs.values()
    assert run["id"] == stored["id"] and stored["external_id"].startswith("evalward:")
    assert [r.method for r in fake.requests] == ["POST", "GET", "POST"]


def test_another_run_of_the_same_name_is_not_taken_for_ours(fake: FakeGitHub, client: GitHubClient) -> None:
    # An earlier run (another workflow run, another job) has the same name on the same commit.
    earlier = post_check_run(client, REPO, SHA, name="evalward", conclusion="success", title="ok", summary="s")
    fake.inject("disconnect_after", 1, path_contains="/check-runs", method="POST")
    ours = post_check_run(client, REPO, SHA, name="evalward", conclusion="failure", title="bad", summary="s")

    assert ours["id"] != earlier["id"]
    assert sorted((r["id"], r["conclusion"]) for r in fake.check_runs.values()) == [
        (earlier["id"], "success"),
        (ours["id"], "failure"),
    ]


def test_uncertain_creates_give_up_after_the_client_retries(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.inject("502", 20, path_contains="/check-runs", method="POST")
    with pytest.raises(GitHubUncertainError) as info:
        create_check_run_once(client, REPO, {"name": "e", "head_sha": SHA, "external_id": "x", "status": "in_progress"})
    assert info.value.status == 502 and "may have been applied" in info.value.message
    assert len(fake.requests_to("POST", "/check-runs")) == 6  # 1 + max_retries (5)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert fake.check_runs == {}


def test_create_check_run_once_needs_an_external_id(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="external_id"):
        create_check_run_once(client, REPO, {"name": "e", "head_sha": SHA})


def test_other_requests_still_retry_a_lost_answer(fake: FakeGitHub, client: GitHubClient, waits: list[float]) -> None:
    # GETs and PATCHes with a full body are safe to send again: the client retries them itself.
    fake.add_pull(REPO, 3, head_sha=SHA, base_sha="b" * 40)
    fake.inject("disconnect", 1, path_contains="/pulls/3")
    assert client.get_pull(REPO, 3)["number"] == 3
    assert waits == [1.0]
    fake.inject("disconnect", 1, path_contains="/check-runs", method="POST")
    # A connection dropped before any answer on a create is uncertain too: raised, not re-sent.
    with pytest.raises(GitHubUncertainError):
        client.create_check_run(REPO, {"name": "e", "head_sha": SHA}, replay_safe=False)
    assert len(fake.requests_to("POST", "/check-runs")) == 1 and waits == [1.0]


def test_start_then_complete_is_one_check_run(fake: FakeGitHub, client: GitHubClient) -> None:
    started = start_check_run(
        client, REPO, SHA, name="evalward", external_id="evalward:default:job1", title="Running the evals",
        summary="attempt 1", details_url="https://evalward.test/jobs", now=NOW,
    )  # fmt: skip
    stored = fake.check_runs[started["id"]]
    assert (stored["status"], stored["started_at"], stored["conclusion"]) == (
        "in_progress",
        "2025-01-02T03:04:05Z",
        None,
    )

    done = post_check_run(
        client, REPO, SHA, name="evalward", conclusion="success", title="pass", summary="all good",
        check_run_id=started["id"], now=NOW,
    )  # fmt: skip
    assert done["id"] == started["id"] and len(fake.check_runs) == 1
    assert (stored["status"], stored["conclusion"], stored["completed_at"]) == (
        "completed",
        "success",
        "2025-01-02T03:04:05Z",
    )
    assert [r.method for r in fake.requests] == ["GET", "POST", "PATCH"]


def test_a_retried_job_reuses_its_open_run_but_never_reopens_a_completed_one(
    fake: FakeGitHub, client: GitHubClient
) -> None:
    def start(attempt: int) -> int:
        run = start_check_run(
            client, REPO, SHA, name="evalward", external_id="evalward:default:job9", title="Running",
            summary=f"attempt {attempt}",
        )  # fmt: skip
        return int(run["id"])

    first = start(1)
    assert start(2) == first  # the worker died mid-job: the next attempt takes over the same run
    assert fake.check_runs[first]["output"]["summary"] == "attempt 2"
    post_check_run(client, REPO, SHA, name="evalward", conclusion="failure", title="t", summary="s", check_run_id=first)
    # Completed runs cannot go back to in_progress (GitHub keeps them completed): a new run starts.
    third = start(3)
    assert third != first and fake.check_runs[third]["status"] == "in_progress"
    assert fake.check_runs[first]["conclusion"] == "failure"


def test_the_fake_refuses_to_reopen_a_completed_run(fake: FakeGitHub, client: GitHubClient) -> None:
    run = post_check_run(client, REPO, SHA, name="e", conclusion="success", title="t", summary="s")
    with pytest.raises(GitHubError) as info:
        client.update_check_run(REPO, run["id"], {"status": "in_progress"})
    assert info.value.status == 422
