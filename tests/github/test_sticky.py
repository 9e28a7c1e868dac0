"""The sticky PR comment: one per marker, updated in place, never hijacked, one survivor after a race."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from evalward.github import GitHubClient, upsert_sticky_comment
from evalward.github.sticky import marker_for
from fakes.github_server import FakeGitHub

from .conftest import make_client

REPO = "octo/agent"
PR = 12
MARKER = "<!-- evalward:suite-a -->"


def test_marker_is_sanitised() -> None:
    assert marker_for("suite-a") == MARKER
    # `>`, `<` and spaces could end or bend the HTML comment: each becomes `-`, so
    # "main set --><img>" → "main" "-" "set" "-" "--" "-" "-" "img" "-".
    assert marker_for("evals/main set --><img>") == "<!-- evalward:evals/main-set-----img- -->"
    with pytest.raises(ValueError, match="letter or digit"):
        marker_for("<>")


def test_created_once_then_updated_in_place(fake: FakeGitHub, client: GitHubClient) -> None:
    first = upsert_sticky_comment(client, REPO, PR, "run 1", marker_id="suite-a")
    second = upsert_sticky_comment(client, REPO, PR, "run 2", marker_id="suite-a")
    third = upsert_sticky_comment(client, REPO, PR, "run 3", marker_id="suite-a")
    assert [first.action, second.action, third.action] == ["created", "updated", "updated"]
    assert first.id == second.id == third.id
    comments = fake.comments_on(REPO, PR)
    assert [c["body"] for c in comments] == [f"{MARKER}\nrun 3"]
    assert third.url == comments[0]["html_url"]
    assert len(fake.requests_to("POST", "/comments")) == 1
    assert len(fake.requests_to("PATCH", "/comments/")) == 2


def test_identical_body_is_not_patched(fake: FakeGitHub, client: GitHubClient) -> None:
    upsert_sticky_comment(client, REPO, PR, "same", marker_id="suite-a")
    result = upsert_sticky_comment(client, REPO, PR, "same", marker_id="suite-a")
    assert result.action == "unchanged"
    assert fake.requests_to("PATCH") == []


def test_other_markers_are_other_comments(fake: FakeGitHub, client: GitHubClient) -> None:
    upsert_sticky_comment(client, REPO, PR, "a", marker_id="suite-a")
    upsert_sticky_comment(client, REPO, PR, "b", marker_id="suite-b")
    assert len(fake.comments_on(REPO, PR)) == 2


def test_forged_marker_by_a_human_is_ignored(fake: FakeGitHub, client: GitHubClient) -> None:
    forged = fake.seed_comment(REPO, PR, f"{MARKER}\n✅ All evals passed", login="mallory", type="User")
    result = upsert_sticky_comment(client, REPO, PR, "real report", marker_id="suite-a")
    assert result.action == "created" and result.id != forged["id"]
    bodies = {c["user"]["login"]: c["body"] for c in fake.comments_on(REPO, PR)}
    assert bodies == {"mallory": f"{MARKER}\n✅ All evals passed", "github-actions[bot]": f"{MARKER}\nreal report"}
    assert fake.requests_to("PATCH") == [] and fake.requests_to("DELETE") == []


def test_forged_marker_by_a_human_token_holder_is_ignored(fake: FakeGitHub, waits: list[float]) -> None:
    # Mallory posts through the API herself with a user token; the bot still makes its own comment.
    with make_client(fake, "ghp_user", waits) as mallory:
        mallory.create_issue_comment(REPO, PR, f"{MARKER}\nforged")
    with make_client(fake, "ghs_actions", waits) as bot:
        upsert_sticky_comment(bot, REPO, PR, "real", marker_id="suite-a")
    assert [c["user"]["login"] for c in fake.comments_on(REPO, PR)] == ["mallory", "github-actions[bot]"]


def test_marker_must_start_the_body(fake: FakeGitHub, client: GitHubClient) -> None:
    # A bot comment quoting our marker mid-body (e.g. a review bot) is not ours.
    fake.seed_comment(REPO, PR, f"> quoting\n{MARKER}", login="github-actions[bot]", type="Bot")
    assert upsert_sticky_comment(client, REPO, PR, "x", marker_id="suite-a").action == "created"


def test_app_bot_login_is_configurable(fake: FakeGitHub, client: GitHubClient) -> None:
    fake.seed_comment(REPO, PR, f"{MARKER}\nold", login="evalward-test[bot]", type="Bot")
    result = upsert_sticky_comment(client, REPO, PR, "new", marker_id="suite-a", bot_logins=("evalward-test[bot]",))
    assert result.action == "updated"


def test_body_over_limit_is_refused_before_any_request(fake: FakeGitHub, client: GitHubClient) -> None:
    # marker (25) + "\n" (1) + 65,511 = 65,537 > 65,536.
    with pytest.raises(ValueError, match="65,537 characters"):
        upsert_sticky_comment(client, REPO, PR, "x" * 65_511, marker_id="suite-a")
    assert fake.requests == []
    # 65,510 → exactly 65,536: accepted.
    assert upsert_sticky_comment(client, REPO, PR, "x" * 65_510, marker_id="suite-a").action == "created"


def test_leftover_duplicates_are_cleaned_up(fake: FakeGitHub, client: GitHubClient) -> None:
    older = fake.seed_comment(REPO, PR, f"{MARKER}\nold 1", login="github-actions[bot]", type="Bot")
    fake.seed_comment(REPO, PR, f"{MARKER}\nold 2", login="github-actions[bot]", type="Bot")
    result = upsert_sticky_comment(client, REPO, PR, "new", marker_id="suite-a")
    assert result.id == older["id"] and result.action == "updated"
    assert [c["body"] for c in fake.comments_on(REPO, PR)] == [f"{MARKER}\nnew"]


class _BarrierClient(GitHubClient):
    """Waits for the other racer after the first listing, so both see "no comment yet" and both POST."""

    barrier: threading.Barrier

    def list_issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        comments = super().list_issue_comments(repo, number)
        if not getattr(self, "_waited", False):
            self._waited = True
            self.barrier.wait(timeout=10)
        return comments


@pytest.mark.parametrize("racers", [2, 3])
def test_concurrent_upserts_leave_exactly_one_comment(fake: FakeGitHub, racers: int) -> None:
    barrier = threading.Barrier(racers)
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        with _BarrierClient("ghs_actions", api_url=fake.url, sleep=lambda s: None) as github:
            github.barrier = barrier
            results[name] = upsert_sticky_comment(github, REPO, PR, f"body {name}", marker_id="suite-a")

    names = "ABC"[:racers]
    threads = [threading.Thread(target=run, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len(fake.requests_to("POST", "/comments")) == racers  # the race really happened
    comments = fake.comments_on(REPO, PR)
    assert len(comments) == 1
    assert comments[0]["body"] in {f"{MARKER}\nbody {name}" for name in names}
    assert {results[name].id for name in names} == {comments[0]["id"]}  # all point at the survivor


class _LosingRacer(GitHubClient):
    """Plays out the interleaving where another run posted first and already deleted our comment."""

    fake: FakeGitHub

    def create_issue_comment(self, repo: str, number: int, body: str, *, replay_safe: bool = True) -> dict[str, Any]:
        self.other = self.fake.seed_comment(
            repo, number, f"{MARKER}\nother run", login="github-actions[bot]", type="Bot"
        )
        created = super().create_issue_comment(repo, number, body, replay_safe=replay_safe)
        self.fake.comments.pop(created["id"])  # the other run's clean-up removed ours
        return created


def test_losing_the_race_updates_the_survivor(fake: FakeGitHub) -> None:
    with _LosingRacer("ghs_actions", api_url=fake.url) as github:
        github.fake = fake
        result = upsert_sticky_comment(github, REPO, PR, "ours", marker_id="suite-a")
    assert (result.action, result.id) == ("updated", github.other["id"])
    assert [c["body"] for c in fake.comments_on(REPO, PR)] == [f"{MARKER}\nours"]
