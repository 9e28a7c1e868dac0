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
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Receive, Scope, Send

from evalward.errors import CONTROL_CHARACTER

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
    a file name, as a 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                check_request_line(scope.get("path", ""), scope.get("query_string", b""))
            except BadRequest as exc:
                from evalward._server.app import error_response

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
