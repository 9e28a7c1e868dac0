"""Checks at the daemon's HTTP boundary: what a request may carry before any of it reaches the database.

Every value below comes from outside (a header, a path, a query, a body). Each is checked here, where it
enters, so a bad request is answered 400 with the reason instead of failing deeper in (a `RecursionError`
in the JSON parser, a value PostgreSQL refuses, a column too narrow) as a 500 or a misleading 503.

- **JSON depth**: at most `MAX_JSON_DEPTH` nested arrays/objects. GitHub's payloads nest about 6 deep; a
  body 10,000 deep made `json.loads` raise `RecursionError`.
- **NUL characters**: PostgreSQL refuses U+0000 in text and JSON columns, so a string holding one is
  refused wherever it may be stored (body strings, paths, query values).
- **Lengths**: header values and identifiers are bounded (`MAX_HEADER_CHARS`), matching the columns they
  are stored in.

`RequestLineGuard` applies the path and query checks to every route; the webhook and the API apply the
body checks (`load_json`, `check_json_value`) to the bodies they read.

**Bodies: authenticate, then read.** A body is never read before the request has shown it may send one:
the API checks its token first, the webhook streams the body only up to its cap and verifies the signature
before parsing. Every body is read with a cap and a deadline (`read_body_capped`: 413 past the cap, without
reading the rest; 408 past the deadline) and big ones are parsed in a worker thread (`off_loop`), so the
event loop keeps answering `/healthz`. `BodyGuard` caps the bodies of every other route (`/login` included)
the same way, and adds `Connection: close` to any answer given before its request's body was read to the
end, so the server stops reading instead of draining an unwanted upload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from starlette.requests import Request

from evalward.errors import CONTROL_CHARACTER


def error_response(status: int, message: str, **extra: Any) -> JSONResponse:
    """Every error the server answers: `{"error": {"status": …, "message": …}}`."""
    return JSONResponse({"error": {"status": status, "message": message, **extra}}, status_code=status)


MAX_JSON_DEPTH = 100
"""Nesting of arrays and objects a request body may have."""

MAX_HEADER_CHARS = 64
"""`X-GitHub-Event`, `X-GitHub-Delivery` and a payload's `action`: the width of the columns that hold them."""

MAX_PATH_CHARS = 2048
MAX_QUERY_VALUE_CHARS = 1024

_EVENT_NAME = re.compile(r"[a-z0-9_]{1,64}")
_DELIVERY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
"""GitHub sends a GUID; tests and redeliveries use other short tokens. No spaces, controls or separators."""


class BadRequest(ValueError):
    """A request the daemon refuses before acting on it; `str(exc)` says what was wrong and where."""


def load_json(body: bytes | str, *, max_depth: int = MAX_JSON_DEPTH, where: str = "the body") -> Any:
    """The parsed JSON of `body`, refusing (BadRequest) invalid JSON, nesting deeper than `max_depth` and
    strings holding NUL characters."""
    try:
        value = json.loads(body)
    except RecursionError:
        raise BadRequest(f"{where}: JSON nested more than {max_depth} levels deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"{where} is not valid JSON: {exc}") from None
    check_json_value(value, max_depth=max_depth, where=where)
    return value


def check_json_value(value: Any, *, max_depth: int = MAX_JSON_DEPTH, where: str = "the body") -> None:
    """Walk a parsed JSON value without recursion: BadRequest past `max_depth` or at a NUL in a key or string."""
    pending: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while pending:
        node, depth, path = pending.pop()
        if isinstance(node, str):
            if "\x00" in node:
                raise BadRequest(f"{where}: at {path}: NUL characters (\\u0000) are not accepted")
            continue
        if not isinstance(node, dict | list):
            continue
        if depth > max_depth:
            raise BadRequest(f"{where}: JSON nested more than {max_depth} levels deep (at {path[:200]}…)")
        if isinstance(node, dict):
            for key, item in node.items():
                if "\x00" in key:
                    raise BadRequest(f"{where}: at {path}: NUL characters (\\u0000) are not accepted in keys")
                pending.append((item, depth + 1, f"{path}.{key[:40]}"))
        else:
            pending.extend((item, depth + 1, f"{path}[{index}]") for index, item in enumerate(node))


def check_event_name(value: str) -> str:
    """`X-GitHub-Event`: lower-case letters, digits and `_`, at most 64 characters (GitHub's names are shorter)."""
    if not _EVENT_NAME.fullmatch(value):
        raise BadRequest(f"X-GitHub-Event: expected an event name (a-z, 0-9, _; ≤ 64 characters), found {value[:80]!r}")
    return value


def check_delivery_id(value: str) -> str:
    """`X-GitHub-Delivery`: a GUID-like token, at most 64 characters."""
    if not _DELIVERY_ID.fullmatch(value):
        raise BadRequest(
            f"X-GitHub-Delivery: expected a delivery GUID (letters, digits, '-', '.', '_'; ≤ 64), found {value[:80]!r}"
        )
    return value


def check_action(payload: dict[str, Any]) -> None:
    """A payload's `action`, when present: a string of at most 64 characters (it is stored with the delivery)."""
    action = payload.get("action")
    if action is None:
        return
    if not isinstance(action, str) or not _EVENT_NAME.fullmatch(action):
        raise BadRequest(f"body: at $.action: expected an action name (a-z, 0-9, _; ≤ 64), found {str(action)[:80]!r}")


def check_text(value: str, *, where: str, max_chars: int) -> str:
    """A path segment or query value: no NUL or other control characters, at most `max_chars`."""
    if len(value) > max_chars:
        raise BadRequest(f"{where}: longer than {max_chars} characters")
    if CONTROL_CHARACTER.search(value):
        raise BadRequest(f"{where}: control characters (NUL included) are not accepted")
    return value


class RequestLineGuard:
    """ASGI middleware: a path or query value with a control character (NUL included) or beyond its length
    limit is answered 400 before any route sees it — such a value can only fail later, in the database or
    a file name, as a 500. Request line and headers over `max_header_bytes` are 431: the server's HTTP
    parser bounds what it buffers of headers still arriving, not headers that arrive in one read."""

    def __init__(self, app: ASGIApp, *, max_header_bytes: int | None = None) -> None:
        self.app = app
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path", b"")) + len(scope.get("query_string", b""))
            size += sum(len(name) + len(value) + 4 for name, value in scope.get("headers", []))
            if self.max_header_bytes is not None and size > self.max_header_bytes:
                message = f"the request line and headers are larger than {self.max_header_bytes:,} bytes"
                response = error_response(431, message)
                response.headers["connection"] = "close"
                await response(scope, receive, send)
                return
            try:
                check_request_line(scope.get("path", ""), scope.get("query_string", b""))
            except BadRequest as exc:
                await error_response(400, str(exc))(scope, receive, send)
                return
        await self.app(scope, receive, send)


def check_request_line(path: str, query_string: bytes) -> None:
    """BadRequest for a path or query value that `check_text` refuses (or a query that is not UTF-8)."""
    check_text(path, where="the request path", max_chars=MAX_PATH_CHARS)
    try:
        pairs = parse_qsl(query_string.decode("utf-8"), keep_blank_values=True, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the query string is not UTF-8 text") from None
    for name, value in pairs:
        check_text(name, where="a query parameter name", max_chars=MAX_HEADER_CHARS)
        check_text(value, where=f"query parameter {name!r}", max_chars=MAX_QUERY_VALUE_CHARS)


# -- bodies ------------------------------------------------------------------------------------------------

T = TypeVar("T")

KIB = 1024
MIB = 1024 * KIB

DEFAULT_BODY_LIMIT = 64 * KIB
"""The body cap of every route that does not read (and cap) its body itself."""

INLINE_BYTES = 64 * KIB
"""Bodies up to this size are parsed on the event loop (a thread hop costs more than the parse)."""

DRAIN_BYTES = 64 * KIB
DRAIN_S = 1.0
"""An answer given before a small body was read (a 401 to an unsigned webhook) first reads and discards the
rest of it, at most this much for this long, so the connection can be kept; a larger body is not read."""


class PayloadTooLarge(Exception):
    """A body over its route's cap; `str(exc)` is the answer's message."""


class BodyTimeout(Exception):
    """A body that did not arrive within the deadline; `str(exc)` is the answer's message."""


class BodyTooLarge(HTTPException):
    """Raised by `BodyGuard`'s receive: answered 413 by the app's HTTPException handler."""


def too_large_message(what: str, limit: int) -> str:
    return f"{what} is larger than {size_text(limit)}; the server did not read the rest"


def too_slow_message(what: str, timeout_s: float) -> str:
    return f"{what} did not arrive within {timeout_s:g} s"


def size_text(size: int) -> str:
    """`64 MiB`, `16 KiB` or `1,000 bytes`: a limit as the operator configured it."""
    for unit, name in ((MIB, "MiB"), (KIB, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit:,} {name}"
    return f"{size:,} bytes"


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The request's `Content-Length`, when it declares a well-formed one."""
    raw = headers.get("content-length")
    return int(raw) if raw is not None and raw.strip().isdigit() else None


async def read_body_capped(request: Request, limit: int, *, timeout_s: float, what: str = "the body") -> bytes:
    """The raw body, read as it arrives. PayloadTooLarge as soon as it is (or declares to be) over `limit` bytes,
    without reading the rest; BodyTimeout when it has not arrived `timeout_s` after this call."""
    declared = declared_length(request.headers)
    if declared is not None and declared > limit:
        raise PayloadTooLarge(too_large_message(what, limit))
    chunks: list[bytes] = []
    size = 0
    try:
        with anyio.fail_after(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(too_large_message(what, limit))
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout(too_slow_message(what, timeout_s)) from None
    return b"".join(chunks)


async def off_loop(size: int, function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` — in a worker thread when it works on more than `INLINE_BYTES` (parsing and validating
    megabytes of JSON would stall every other request on the event loop), inline otherwise."""
    if size <= INLINE_BYTES:
        return function(*args)
    return await run_in_threadpool(function, *args)


class BodyGuard:
    """ASGI middleware for every request body.

    - Routes that read their body themselves (`own_limits`: path prefixes whose handlers authenticate first
      and then call `read_body_capped`) are left to do so. Every other route's body (`/login`'s included)
      is capped at `limits.get(path, default_limit)` bytes: a larger `Content-Length` is 413 before the
      app runs, a larger stream is 413 once it passes the cap; and it must arrive within `timeout_s` (408).
    - An answer that starts before its request's body was read to the end first reads and discards what is
      left when that is small (`DRAIN_BYTES`, within `DRAIN_S`) and the answer is not about the body (408,
      413); otherwise it carries `Connection: close`: the server then closes the connection instead of
      reading on, so a refused upload costs nothing more (`listen.HeaderGuard` lingers briefly so the answer
      still reaches the client).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        timeout_s: float,
        own_limits: tuple[str, ...] = (),
        limits: Mapping[str, int] | None = None,
        default_limit: int = DEFAULT_BODY_LIMIT,
    ) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.own_limits = own_limits
        self.limits = dict(limits or {})
        self.default_limit = default_limit

    def limit_for(self, path: str) -> int | None:
        """The cap this middleware applies to `path`; None when the route caps its body itself."""
        if path.startswith(self.own_limits):
            return None
        return self.limits.get(path, self.default_limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        declared = declared_length(headers)
        pending = "transfer-encoding" in headers or bool(declared)
        limit = self.limit_for(scope.get("path", ""))
        what = "the request body"
        started = False
        received = 0
        deadline: float | None = None

        async def guarded_receive() -> Message:
            nonlocal pending, received, deadline
            if limit is None:
                message = await receive()
            else:
                if deadline is None:
                    deadline = anyio.current_time() + self.timeout_s
                try:
                    with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                        message = await receive()
                except TimeoutError:
                    if started:
                        return {"type": "http.disconnect"}
                    raise HTTPException(408, too_slow_message(what, self.timeout_s)) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if not message.get("more_body", False):
                    pending = False
                if limit is not None and received > limit:
                    if started:  # too late to answer 413: the app sees a client that went away
                        return {"type": "http.disconnect"}
                    raise BodyTooLarge(413, too_large_message(what, limit))
            elif message["type"] == "http.disconnect":
                pending = False
            return message

        async def drain() -> None:
            """Read and discard the rest of a small body; `pending` stays True when it did not all come."""
            nonlocal pending, received
            left = declared - received if declared is not None else DRAIN_BYTES
            if left > DRAIN_BYTES:
                return
            with anyio.move_on_after(DRAIN_S):
                while pending and received <= (declared or 0) + DRAIN_BYTES:
                    message = await receive()
                    if message["type"] != "http.request":
                        pending = False
                    else:
                        received += len(message.get("body", b""))
                        pending = bool(message.get("more_body", False))

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if pending and message["status"] not in (408, 413):
                    await drain()
                if pending:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        if limit is not None and declared is not None and declared > limit:
            await error_response(413, too_large_message(what, limit))(scope, receive, guarded_send)
            return
        await self.app(scope, guarded_receive, guarded_send)
