"""Fixtures: a fake GitHub per test, a client that records its waits instead of sleeping, and the contract check.

Every request a test sends to the fake is checked against GitHub's REST description when the test ends
(`contract.check_requests`), unless the test set `fake.contract_exempt` to send invalid requests on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalward.github import GitHubClient
from fakes.github_server import FakeGitHub

from .contract import check_requests


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server
        if not server.contract_exempt:
            problems = check_requests(server.requests)
            assert not problems, "requests that break GitHub's REST contract:\n" + "\n".join(problems)


@pytest.fixture
def waits() -> list[float]:
    return []


def make_client(fake: FakeGitHub, token: str | None, waits: list[float], **kwargs: object) -> GitHubClient:
    options: dict[str, object] = {"sleep": waits.append, "jitter": lambda: 1.0, "clock": lambda: 1_700_000_000.0}
    options.update(kwargs)
    return GitHubClient(token, api_url=fake.url, **options)  # type: ignore[arg-type]


@pytest.fixture
def client(fake: FakeGitHub, waits: list[float]) -> Iterator[GitHubClient]:
    """The Actions bot (`ghs_actions` → github-actions[bot]); waits recorded, never slept."""
    with make_client(fake, "ghs_actions", waits) as github:
        yield github
