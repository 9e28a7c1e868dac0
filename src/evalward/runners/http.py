"""Run an agent behind an HTTP endpoint: target `http://…` or `https://…`.

Each turn is one `POST` of the `AgentRequest` JSON to the URL; the answer is read as follows:

| response | result |
| --- | --- |
| 2xx with an `AgentOutput` JSON object | the turn's output |
| 2xx with anything else (not JSON, wrong shape) | `malformed_output`, naming the bad field |
| 2xx with `{"error": …}` | `agent_error` (retryable if `"retryable": true`) |
| 429 | retryable `agent_error` |
| 502, 503, 504, connection refused/reset | retryable `crash` |
| other status | `agent_error` with the status and the start of the body |

A `Retry-After` header (seconds or an HTTP date) is passed to the executor as the minimum wait before the
retry. Credentials in the URL (`https://user:pass@host/…`) are sent as basic auth and removed from the
target shown in reports, as are the values of query parameters that look like secrets (`token`, `key`, …).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from evalward.backoff import server_wait_s
from evalward.errors import UsageError
from evalward.model import AgentOutput, AgentRequest, AgentTarget, ErrorKind, canonical_hash
from evalward.redact import url_without_credentials
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.outputs import coerce_output, snippet

if TYPE_CHECKING:
    import httpx

RETRYABLE_STATUSES = {429, 502, 503, 504}
"""Statuses that mean "try again later" rather than "this request is wrong"."""

BODY_SNIPPET_CHARS = 300
"""How much of an error body is quoted in a failure message."""

CONNECT_TIMEOUT_S = 30.0
"""Connect timeout; reading the answer has no timeout of its own (the executor's per-turn timeout applies)."""


class HttpAgent:
    """An agent reached by POSTing each turn's request to a URL."""

    def __init__(self, url: str, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.hostname:
            raise UsageError(f"agent target {url_without_credentials(url)!r}: expected an http(s) URL with a host")
        self._url = url
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    @property
    def target(self) -> AgentTarget:
        shown = url_without_credentials(self._url)
        return AgentTarget(kind="http", target=shown, config_hash=canonical_hash({"kind": "http", "url": shown}))

    async def start(self) -> None:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S), transport=self._transport
            )

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        import httpx

        if self._client is None:
            await self.start()
        assert self._client is not None
        shown = url_without_credentials(self._url)
        try:
            response = await self._client.post(self._url, json=request.model_dump(mode="json"))
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            raise AgentFailure(
                "crash", f"could not reach the agent at {shown}: {type(exc).__name__}: {exc}", retryable=True
            ) from exc
        except httpx.TimeoutException as exc:
            raise AgentFailure("crash", f"connecting to the agent at {shown} timed out: {exc}", retryable=True) from exc
        return _interpret(response, shown)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _interpret(response: httpx.Response, shown_url: str) -> AgentOutput:
    status = response.status_code
    if 200 <= status < 300:
        try:
            payload: Any = json.loads(response.content)
        except ValueError:
            raise AgentFailure(
                "malformed_output",
                f"the agent at {shown_url} answered HTTP {status} with a body that is not JSON: "
                f"{snippet(response.content, BODY_SNIPPET_CHARS)}",
            ) from None
        return coerce_output(payload)
    body = snippet(response.content, BODY_SNIPPET_CHARS) if response.content else "(empty body)"
    message = f"the agent at {shown_url} answered HTTP {status} {response.reason_phrase}: {body}"
    if status in RETRYABLE_STATUSES:
        retry_after = server_wait_s(response.headers)
        kind: ErrorKind = "agent_error" if status == 429 else "crash"
        raise AgentFailure(kind, message, retryable=True, retry_after_s=retry_after)
    raise AgentFailure("agent_error", message)
