"""`JudgeClient`: one OpenAI-compatible endpoint, asked through the `openai` package.

Per request:
1. Structured output first: `response_format = {type: json_schema, json_schema: {name, schema, strict}}`.
   A server that rejects it (HTTP 400 naming the response format or schema) is asked again at once with
   `{type: json_object}`, then with no response format at all (plain JSON, which the prompts ask for);
   the client remembers the downgrade, so later requests start at the mode that worked.
2. Retries are the `openai` client's (`evalward.openai_requests`): 408, 409, 429, 5xx and connection errors,
   up to `max_retries` times, waiting the server's `retry-after-ms` / `retry-after` or a jittered
   exponential backoff, never when the server says `x-should-retry: false`. Every attempt is counted in
   `JudgeUsage.requests` and every retry in `JudgeUsage.retries`. Other errors (401, 404, 400 for other
   reasons) end the request at once.
3. At most `concurrency` requests are in flight per client (an asyncio semaphore); a throttled request keeps
   its slot while the client waits, so a rate-limited endpoint is not asked harder.
4. Usage: every completion's `prompt_tokens`/`completion_tokens` are added to `JudgeUsage`, with cost from
   the price table.

Start-up: importing `openai` costs most of a second of CPU, so it happens with the first judge request,
not when the run starts: a run whose replies all come from the cache never imports it. It happens in a
worker thread, so turns in flight meanwhile are not stalled (nor their latency inflated) as a first-use
import on the event loop would. The reachability check every judged run makes before any agent runs
(`probe`) therefore speaks HTTP through `httpx` (the transport the `openai` client uses, with its proxy and
certificate settings) and sends the headers the `openai` client would send to the same endpoint.

The API key is handed to the `openai` client and the probe's Authorization header only; error messages name
the key's variable, never its value.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from evalward.judging.judge_config import BASE_URL_ENV, ModelPrice
from evalward.openai_requests import NO_KEY, async_openai_client, counting_attempts

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI

logger = logging.getLogger(__name__)

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""Where the `openai` client sends requests when neither a base URL nor $OPENAI_BASE_URL is given."""

StructuredMode = Literal["json_schema", "json_object", "none"]
_DOWNGRADE: dict[StructuredMode, StructuredMode] = {"json_schema": "json_object", "json_object": "none"}


class JudgeCallError(Exception):
    """A judge request failed for good (after retries, or with an error that retrying cannot fix)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class JudgeUsage:
    """What the judges of one run used."""

    requests: int = 0
    """HTTP requests sent (retries and format fallbacks included)."""
    completions: int = 0
    """Replies received."""
    cached: int = 0
    """Replies served from the cache (no request)."""
    shared: int = 0
    """Replies to a request another case had in flight with the same cache key (no request of their own)."""
    retries: int = 0
    unreadable: int = 0
    """Replies that did not parse and were asked again."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """Summed over priced models; None when no call was priced."""
    unpriced_models: set[str] = field(default_factory=set)

    def add(self, model: str, input_tokens: int, output_tokens: int, price: ModelPrice | None) -> float | None:
        """Count one completion; return its cost (None without a price)."""
        self.completions += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if price is None:
            self.unpriced_models.add(model)
            return None
        cost = price.cost(input_tokens, output_tokens)
        self.cost_usd = (self.cost_usd or 0.0) + cost
        return cost

    def describe(self) -> str:
        """`judge: 12 replies (4 cached, 2 shared), 6 requests, 3 retries, 1,200 in / 300 out tokens, $0.0012`
        (`shared` only when some were)."""
        replies = self.completions + self.cached + self.shared
        shared = f", {self.shared} shared" if self.shared else ""
        text = f"judge: {replies} replies ({self.cached} cached{shared}), {self.requests} requests"
        if self.retries:
            text += f", {self.retries} retries"
        if self.unreadable:
            text += f", {self.unreadable} unreadable replies asked again"
        text += f", {self.input_tokens:,} in / {self.output_tokens:,} out tokens"
        if self.cost_usd is not None:
            text += f", ${self.cost_usd:.4f}"
        if self.unpriced_models:
            text += f" (no price for {', '.join(sorted(self.unpriced_models))})"
        return text


@dataclass(frozen=True)
class Completion:
    """A judge reply: its text and token counts."""

    text: str
    input_tokens: int
    output_tokens: int


class JudgeClient:
    """One endpoint (base URL + key variable); see the module docstring for its rules."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        api_key_env: str,
        concurrency: int = 4,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        prices: dict[str, ModelPrice] | None = None,
        usage: JudgeUsage | None = None,
    ) -> None:
        self.base_url = base_url
        self.api_key_env = api_key_env
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.prices = dict(prices or {})
        self.usage = usage if usage is not None else JudgeUsage()
        self.mode: StructuredMode = "json_schema"
        self._semaphore = asyncio.Semaphore(concurrency)
        self._client: AsyncOpenAI | None = None
        self._building: asyncio.Future[AsyncOpenAI] | None = None

    @property
    def where(self) -> str:
        return self.base_url or "the OpenAI API (api.openai.com)"

    async def _openai(self) -> AsyncOpenAI:
        """The `openai` client, built by the first request in a worker thread (module docstring: start-up).

        Not on the event loop: importing `openai` there would stall every turn in flight for most of a second,
        and with them their measured latency. Callers arriving meanwhile wait for the same build.
        """
        if self._client is None:
            if self._building is None:
                self._building = asyncio.ensure_future(asyncio.to_thread(self._build))
            building = self._building
            try:
                # shield: a caller cancelled while waiting must not cancel the build the others wait for.
                client = await asyncio.shield(building)
            except Exception:
                if self._building is building:
                    self._building = None  # the next request tries again
                raise
            if self._client is None:
                self._client = client
        return self._client

    def _build(self) -> AsyncOpenAI:
        # What the first request would otherwise import on the event loop: `client.chat` loads the resources.
        importlib.import_module("openai.resources.chat")
        return async_openai_client(
            base_url=self.base_url, api_key=self._api_key, timeout_s=self.timeout_s, max_retries=self.max_retries
        )

    async def aclose(self) -> None:
        building, self._building = self._building, None
        if building is not None:
            if not building.done():
                await asyncio.wait({building})  # a thread cannot be stopped: let it finish, then close its client
            if not building.cancelled() and building.exception() is None and self._client is None:
                self._client = building.result()
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def probe(self, model: str, timeout_s: float) -> list[str]:
        """Check the endpoint answers (`GET /models`); return the models it lists ([] when it lists none).

        Raises JudgeCallError when it cannot be reached or rejects the key. A server without `/models`
        (404) is reachable. Sent with `httpx`, not the `openai` client (module docstring: start-up), once
        and without retries, as the `openai` client would send it.
        """
        import httpx

        url = (self.base_url or os.environ.get(BASE_URL_ENV) or OPENAI_DEFAULT_BASE_URL).rstrip("/") + "/models"
        try:
            # follow_redirects as the `openai` client's own httpx client does.
            async with httpx.AsyncClient(timeout=timeout_s, follow_redirects=True) as client:
                response = await client.get(url, headers=openai_headers(self._api_key))
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            # The words of the `openai` client's APITimeoutError and APIConnectionError, so messages read as before.
            what = "Request timed out." if isinstance(exc, httpx.TimeoutException) else "Connection error."
            raise JudgeCallError(f"cannot reach {self.where}: {what} ({type(exc).__name__}: {exc})") from exc
        status = response.status_code
        if status == 404:
            return []
        if status in (401, 403):
            raise JudgeCallError(
                f"{self.where} rejected the API key from ${self.api_key_env} (HTTP {status})", status=status
            )
        if status >= 400:
            raise JudgeCallError(f"{self.where} answered HTTP {status}", status=status)
        return _listed_models(response)

    async def complete(
        self,
        *,
        model: str,
        messages: Sequence[dict[str, Any]],
        schema_name: str,
        schema: dict[str, Any],
        parameters: dict[str, Any] | None = None,
    ) -> Completion:
        """Ask `model` once (retrying per the module docstring) and return the reply with its token counts."""
        client = await self._openai()
        import openai  # loaded by `_openai` by now

        while True:
            mode = self.mode
            kwargs: dict[str, Any] = dict(parameters or {})
            if mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": schema, "strict": True},
                }
            elif mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            async with self._semaphore:
                with counting_attempts() as attempts:
                    try:
                        response = await client.chat.completions.create(
                            model=model,
                            messages=cast(Any, list(messages)),  # plain dicts in OpenAI's message shape
                            **kwargs,
                        )
                    except openai.APIStatusError as exc:
                        if exc.status_code == 400 and mode in _DOWNGRADE and _mentions_format(exc):
                            self.mode = _DOWNGRADE[mode]
                            logger.info(
                                "%s rejected response_format %s; falling back to %s", self.where, mode, self.mode
                            )
                            continue
                        raise JudgeCallError(
                            f"{self.where} answered HTTP {exc.status_code} for model {model!r}: {_message(exc)}"
                            + _after(attempts.retries),
                            status=exc.status_code,
                        ) from exc
                    except openai.APIConnectionError as exc:
                        raise JudgeCallError(
                            f"cannot reach {self.where}: {_cause(exc)}{_after(attempts.retries)}"
                        ) from exc
                    finally:
                        self._count(attempts.requests)
                    return self._completion(model, response)

    def _count(self, requests: int) -> None:
        # A request that never reached the transport (refused before sending) still counts once.
        sent = max(1, requests)
        self.usage.requests += sent
        self.usage.retries += sent - 1
        if sent > 1:
            logger.info("judge request to %s needed %d retries", self.where, sent - 1)

    def _completion(self, model: str, response: Any) -> Completion:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise JudgeCallError(f"{self.where} returned no choices for model {model!r}")
        message = choices[0].message
        text = message.content
        if text is None:
            refusal = getattr(message, "refusal", None)
            raise JudgeCallError(
                f"the judge {model!r} returned no content" + (f" (refusal: {refusal})" if refusal else "")
            )
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.usage.add(model, input_tokens, output_tokens, self.prices.get(model))
        return Completion(text=text, input_tokens=input_tokens, output_tokens=output_tokens)


def openai_headers(api_key: str | None) -> dict[str, str]:
    """The headers of a request the `openai` client (as `async_openai_client` builds it) would send, beyond
    its telemetry: the key (or the keyless placeholder), the organisation and project from $OPENAI_ORG_ID and
    $OPENAI_PROJECT_ID, then the `Name: value` lines of $OPENAI_CUSTOM_HEADERS (which gateways may require;
    as in the `openai` client, they win over the others)."""
    headers = {"Accept": "application/json", "Authorization": f"Bearer {api_key or NO_KEY}"}
    for name, variable in (("OpenAI-Organization", "OPENAI_ORG_ID"), ("OpenAI-Project", "OPENAI_PROJECT_ID")):
        value = os.environ.get(variable)
        if value is not None:
            headers[name] = value
    for line in os.environ.get("OPENAI_CUSTOM_HEADERS", "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return headers


def _listed_models(response: httpx.Response) -> list[str]:
    """The ids of `{"data": [{"id": ...}, ...]}`; [] for a body of another shape (the server answered, which is
    all the probe needs to know)."""
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return []
    if not isinstance(data, list):
        return []
    return [str(m["id"]) for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def _mentions_format(exc: Any) -> bool:
    text = _message(exc).lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object", "schema", "structured"))


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{exc} ({type(cause).__name__}: {cause})" if cause is not None else str(exc)


def _after(retries: int) -> str:
    return f" (after {retries} retries)" if retries else ""
