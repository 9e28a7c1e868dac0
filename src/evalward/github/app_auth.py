"""GitHub App authentication (docs/github.md §11): the App's JWT, and installation tokens cached per installation.

JWT claims: `iat` = now − 60 s (GitHub's clock may run behind ours), `exp` = now + 9 min (GitHub refuses
more than 10), `iss` = the client ID (recommended) or the App ID, signed RS256 with the App's PEM key.
Installation tokens live one hour (`expires_at`); the cache hands out a token until 5 minutes before it
expires, then asks for a new one. Tokens are opaque strings of any length (the stateless `ghs_APPID_JWT`
format is much longer than 40 characters) and never logged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from evalward.github.client import GitHubClient, InstallationToken

JWT_BACKDATE_S = 60
JWT_LIFETIME_S = 9 * 60
REFRESH_MARGIN_S = 5 * 60


def app_jwt(app_id_or_client_id: str, private_key_pem: str, *, now: float | datetime | None = None) -> str:
    """An RS256 JWT for the App: {iat: now − 60, exp: now + 540, iss: app_id_or_client_id}."""
    import jwt  # PyJWT[crypto]; imported lazily since only the App daemon needs it

    moment = int(now.timestamp()) if isinstance(now, datetime) else int(time.time() if now is None else now)
    claims = {"iat": moment - JWT_BACKDATE_S, "exp": moment + JWT_LIFETIME_S, "iss": str(app_id_or_client_id)}
    return str(jwt.encode(claims, private_key_pem, algorithm="RS256"))


class InstallationTokenCache:
    """Installation tokens per installation id, refreshed `refresh_margin_s` before they expire (thread-safe)."""

    def __init__(
        self,
        client_factory: Callable[[], GitHubClient],
        app_id: str,
        private_key: str,
        *,
        clock: Callable[[], float] = time.time,
        refresh_margin_s: float = REFRESH_MARGIN_S,
    ) -> None:
        self._client_factory = client_factory
        self._app_id = app_id
        self._private_key = private_key
        self._clock = clock
        self._margin = refresh_margin_s
        self._tokens: dict[int, InstallationToken] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InstallationTokenCache(app_id={self._app_id!r}, cached={sorted(self._tokens)})"

    def token_for(self, installation_id: int) -> str:
        """A valid installation token for `installation_id`, from the cache while it has > 5 min to live."""
        with self._lock:
            cached = self._tokens.get(installation_id)
            now = self._clock()
            if cached is not None and cached.expires_at.timestamp() - self._margin > now:
                return cached.token
            jwt = app_jwt(self._app_id, self._private_key, now=now)
            client = self._client_factory()
            try:
                fresh = client.create_installation_token(installation_id, jwt)
            finally:
                client.close()
            self._tokens[installation_id] = fresh
            return fresh.token

    def invalidate(self, installation_id: int) -> None:
        """Forget a token (after a 401: revoked or expired early)."""
        with self._lock:
            self._tokens.pop(installation_id, None)
