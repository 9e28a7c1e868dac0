"""App JWT claims and the installation-token cache, against the fake's JWT check."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import jwt
import pytest
from tests.server.daemon import app_keys

from evalward.github import GitHubClient, GitHubError, InstallationTokenCache, app_jwt
from evalward.github.sticky import upsert_sticky_comment
from fakes.github_server import FakeGitHub

from .contract import check_requests

NOW = 1_700_000_000


@pytest.fixture(scope="module")
def keys() -> tuple[str, str]:
    return app_keys()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def app_fake(keys: tuple[str, str], clock: Clock) -> Iterator[FakeGitHub]:
    with FakeGitHub(app_public_key=keys[1], app_id="12345", clock=clock) as server:
        yield server
        assert check_requests(server.requests) == []


def test_jwt_claims(keys: tuple[str, str]) -> None:
    token = app_jwt("Iv1.abc", keys[0], now=NOW)
    claims = jwt.decode(token, keys[1], algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False})
    # iat = now − 60, exp = now + 9·60 = now + 540.
    assert claims == {"iat": NOW - 60, "exp": NOW + 540, "iss": "Iv1.abc"}
    assert jwt.get_unverified_header(token)["alg"] == "RS256"


def test_jwt_accepts_datetime(keys: tuple[str, str]) -> None:
    token = app_jwt("1", keys[0], now=datetime.fromtimestamp(NOW, UTC))
    assert jwt.decode(token, options={"verify_signature": False})["iat"] == NOW - 60


def test_installation_token_cached_until_five_minutes_before_expiry(
    app_fake: FakeGitHub, keys: tuple[str, str], clock: Clock
) -> None:
    cache = InstallationTokenCache(
        lambda: GitHubClient(None, api_url=app_fake.url, sleep=lambda s: None), "12345", keys[0], clock=clock
    )
    first = cache.token_for(7)
    assert len(first) > 40  # the fake's tokens are longer than classic ones; nothing assumes a length
    clock.now = NOW + 3600 - 301  # 5 min 1 s before expiry: still cached
    assert cache.token_for(7) == first
    clock.now = NOW + 3600 - 299  # inside the 5-minute margin: refreshed
    second = cache.token_for(7)
    assert second != first
    assert len(app_fake.requests_to("POST", "/access_tokens")) == 2
    assert first not in repr(cache) and second not in repr(cache)


def test_installation_tokens_are_per_installation(app_fake: FakeGitHub, keys: tuple[str, str], clock: Clock) -> None:
    cache = InstallationTokenCache(lambda: GitHubClient(None, api_url=app_fake.url), "12345", keys[0], clock=clock)
    assert cache.token_for(1) != cache.token_for(2)
    cache.invalidate(1)
    cache.token_for(1)
    assert len(app_fake.requests_to("POST", "/access_tokens")) == 3


def test_installation_token_posts_as_the_app_bot(app_fake: FakeGitHub, keys: tuple[str, str], clock: Clock) -> None:
    cache = InstallationTokenCache(lambda: GitHubClient(None, api_url=app_fake.url), "12345", keys[0], clock=clock)
    with GitHubClient(cache.token_for(3), api_url=app_fake.url) as github:
        login = github.get_authenticated_app_login(app_jwt("12345", keys[0], now=NOW))
        assert login == "evalward-test[bot]"
        result = upsert_sticky_comment(github, "octo/agent", 1, "hi", marker_id="s", bot_logins=(login,))
        again = upsert_sticky_comment(github, "octo/agent", 1, "hi 2", marker_id="s", bot_logins=(login,))
    assert (result.action, again.action) == ("created", "updated")


def test_repo_installation_lookup(app_fake: FakeGitHub, keys: tuple[str, str]) -> None:
    app_fake.installations["octo/agent"] = 77
    with GitHubClient(None, api_url=app_fake.url) as github:
        assert github.get_repo_installation_id("octo/agent", app_jwt("12345", keys[0], now=NOW)) == 77


def test_wrong_issuer_is_rejected(app_fake: FakeGitHub, keys: tuple[str, str]) -> None:
    with GitHubClient(None, api_url=app_fake.url) as github, pytest.raises(GitHubError) as info:
        github.create_installation_token(1, app_jwt("999", keys[0], now=NOW))
    assert info.value.status == 401
