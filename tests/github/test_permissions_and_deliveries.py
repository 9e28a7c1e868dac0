"""Collaborator permission and the App's webhook delivery log, over real HTTP against the fake GitHub."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.server.daemon import app_keys

from evalward._server.redeliver import RedeliveryReport, failed_deliveries, redeliver_failed
from evalward.github import WRITE_PERMISSIONS, GitHubClient, GitHubError, app_jwt
from fakes.github_server import FakeGitHub

from .conftest import make_client

REPO = "octo/agent"


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return app_keys()


@pytest.mark.parametrize(
    ("role", "permission", "writes"),
    [
        ("admin", "admin", True),
        ("maintain", "write", True),  # GitHub reports maintain as the legacy base role write
        ("write", "write", True),
        ("triage", "read", False),
        ("read", "read", False),
        (None, "none", False),  # not a collaborator: 404
    ],
)
def test_collaborator_permission(
    fake: FakeGitHub, client: GitHubClient, role: str | None, permission: str, writes: bool
) -> None:
    if role is not None:
        fake.permissions[(REPO, "dev")] = role
    answer = client.get_collaborator_permission(REPO, "dev")
    assert (answer, answer in WRITE_PERMISSIONS) == (permission, writes)
    [request] = fake.requests
    assert request.path == f"/repos/{REPO}/collaborators/dev/permission"


def test_a_permission_error_other_than_404_is_raised_after_retries(
    fake: FakeGitHub, client: GitHubClient, waits: list[float]
) -> None:
    fake.inject("502", 10, path_contains="/permission")
    with pytest.raises(GitHubError) as info:
        client.get_collaborator_permission(REPO, "dev")
    assert info.value.status == 502 and len(waits) == 5


def _seed(fake: FakeGitHub, guid: str, code: int, *, at: datetime, redelivery: bool = False) -> dict[str, Any]:
    payload = {"action": "opened", "installation": {"id": 1}, "repository": {"id": 7}}
    return fake.log_delivery(
        "pull_request", payload, guid=guid, status_code=code, delivered_at=at.timestamp(), redelivery=redelivery
    )


def test_deliveries_are_listed_newest_first_across_cursor_pages(keys: tuple[str, str], waits: list[float]) -> None:
    private, public = keys
    with FakeGitHub(app_public_key=public) as fake:
        now = datetime.now(UTC)
        for i in range(230):
            _seed(fake, f"g-{i}", 202, at=now - timedelta(minutes=230 - i))
        tokens: list[str] = []

        def jwt() -> str:
            tokens.append(app_jwt(fake.app_id, private))
            return tokens[-1]

        with make_client(fake, None, waits, clock=lambda: now.timestamp()) as client:
            guids = [d["guid"] for d in client.list_app_hook_deliveries(jwt)]
        assert guids == [f"g-{i}" for i in reversed(range(230))]
        pages = fake.requests_to("GET", "/app/hook/deliveries")
        assert [r.query.get("cursor") is not None for r in pages] == [False, True, True]
        assert len(tokens) == 3  # a fresh JWT per page


def test_failed_deliveries_keep_guids_without_a_successful_attempt_in_the_last_three_days() -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)

    def item(i: int, guid: str, code: int, hours_ago: float) -> dict[str, Any]:
        at = (now - timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"id": i, "guid": guid, "status_code": code, "delivered_at": at}

    items = [  # newest first, as GitHub lists them
        item(9, "redelivered-ok", 202, 1),
        item(8, "down", 0, 2),
        item(7, "timed-out", 502, 3),
        item(6, "redelivered-ok", 503, 5),
        item(5, "down", 0, 10),
        item(4, "too-old", 500, 73),
        item(3, "older", 500, 80),
    ]
    report = RedeliveryReport()
    assert failed_deliveries(items, now=now, report=report) == {"down": 8, "timed-out": 7}
    assert report.listed == 5  # stopped at the first delivery past 3 days


def test_redeliver_failed_resends_only_what_the_database_lacks(keys: tuple[str, str], waits: list[float]) -> None:
    private, public = keys
    with FakeGitHub(app_public_key=public) as fake:
        now = datetime.now(UTC)
        _seed(fake, "lost", 0, at=now - timedelta(hours=5))
        _seed(fake, "received-but-slow", 0, at=now - timedelta(hours=4))
        _seed(fake, "fine", 202, at=now - timedelta(hours=3))
        old = _seed(fake, "ancient", 0, at=now - timedelta(days=4))
        fake.hook_deliveries.sort(key=lambda d: d["delivered_at"])  # ids follow time, as GitHub's do
        for index, entry in enumerate(fake.hook_deliveries):
            entry["id"] = 100 + index
        asked: list[list[str]] = []

        def recorded(guids: list[str]) -> set[str]:
            asked.append(guids)
            return {"received-but-slow"}

        with make_client(fake, None, waits, clock=lambda: now.timestamp()) as client:
            report = redeliver_failed(client, lambda: app_jwt(fake.app_id, private), recorded, now=now)
        assert old["guid"] == "ancient"
        assert asked == [["lost", "received-but-slow"]]
        assert (report.failed, report.already_recorded, report.requested) == (
            ["lost", "received-but-slow"],
            ["received-but-slow"],
            ["lost"],
        )
        lost_id = next(d["id"] for d in fake.hook_deliveries if d["guid"] == "lost")
        assert fake.redelivery_requests == [lost_id]


def test_redelivery_endpoints_need_the_apps_jwt(keys: tuple[str, str], waits: list[float]) -> None:
    _private, public = keys
    with FakeGitHub(app_public_key=public) as fake, make_client(fake, "ghs_actions", waits) as client:
        fake.contract_exempt = True
        with pytest.raises(GitHubError) as info:
            list(client.list_app_hook_deliveries(lambda: "not-a-jwt"))
        assert info.value.status == 401
