"""How the daemon's workers talk to GitHub: installation tokens from the App's key (cached, and added to the log
redactor the moment they exist), the App's bot login, and collaborator permissions cached per (repo, login)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward._server.logs import REDACTOR
from evalward._server.settings import ServerSettings
from evalward.github.app_auth import InstallationTokenCache, app_jwt
from evalward.github.client import GitHubClient


@dataclass
class GitHubAccess:
    """How a worker talks to GitHub: installation tokens from the App's key, or a fixed token (tests, GHES PAT)."""

    settings: ServerSettings
    transport_factory: Callable[[], Any] | None = None
    client_options: Mapping[str, Any] = field(default_factory=dict)
    """Extra `GitHubClient` keyword arguments (tests: `sleep`, `jitter`)."""
    clock: Callable[[], float] = time.monotonic
    _cache: Any = None
    _bot_login: str | None = None
    _permissions: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _client(self, token: str | None) -> GitHubClient:
        transport = self.transport_factory() if self.transport_factory else None
        options: dict[str, Any] = {"max_retries": 3, **self.client_options}
        return GitHubClient(token, api_url=self.settings.github_api_url, transport=transport, **options)

    def permission(self, repo: str, login: str, token: str) -> str:
        """`login`'s base permission on `repo` (admin/write/read/none), cached `permission_cache_s`.

        Only answers are cached: an error (raised as `GitHubError` after the client's retries) is asked
        again next time."""
        key = (repo.lower(), login.lower())
        now = self.clock()
        with self._lock:
            cached = self._permissions.get(key)
        if cached is not None and now - cached[0] < self.settings.permission_cache_s:
            return cached[1]
        with self._client(token) as client:
            answer = client.get_collaborator_permission(repo, login)
        with self._lock:
            self._permissions[key] = (now, answer)
        return answer

    def token(self, installation_id: int | None) -> str | None:
        """An installation token, or None when the App is not configured or the job names no installation."""
        if not self.settings.app_configured or installation_id is None:
            return None

        with self._lock:
            if self._cache is None:
                key = self.settings.private_key_pem() or ""
                REDACTOR.add(key)
                self._cache = InstallationTokenCache(lambda: self._client(None), str(self.settings.github_app_id), key)
        token: str = self._cache.token_for(installation_id)
        REDACTOR.add(token)
        return token

    def bot_login(self) -> str | None:
        """`{slug}[bot]`, the author of our sticky comments (asked once with the App's JWT)."""
        if not self.settings.app_configured:
            return None
        with self._lock:
            if self._bot_login is None:
                jwt = app_jwt(str(self.settings.github_app_id), self.settings.private_key_pem() or "")
                with self._client(None) as client:
                    self._bot_login = client.get_authenticated_app_login(jwt)
            return self._bot_login

    def client(self, token: str) -> GitHubClient:
        return self._client(token)
