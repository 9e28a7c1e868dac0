"""A fake GitHub REST API on a real socket (127.0.0.1, random port), with in-memory state.

It speaks the endpoints evalward uses (docs/github.md §8) and enforces GitHub's limits with GitHub's own 422
messages, including the ones the OpenAPI description lacks (65,536-character comments, 140-character
status descriptions, 50 annotations per request, check-run conclusion rules). Every request is recorded
(method, path relative to the API root, query, headers without `Authorization`, JSON body) so tests and
the contract check can inspect what the client really sent.

Identities: each token maps to a user; `ghs_actions` is `github-actions[bot]` (a Bot) and `ghp_user` is
`mallory` (a User). Installation tokens minted by `POST /app/installations/{id}/access_tokens` (JWT
checked against `app_public_key`) belong to `{app_slug}[bot]`.

Faults: `inject("secondary" | "secondary_reset" | "primary" | "429" | "502" | "disconnect", count, ...)`
answers the next `count` matching requests with that failure; `"502_after"` and `"disconnect_after"` first
carry the request out, then answer 502 or drop the connection (a POST that succeeded but whose answer was
lost); `read_only = True` (or a token in `read_only_tokens`) answers writes with 403 "Resource not
accessible by integration".

Collaborators: `permissions[(repo, login)] = role` (admin, maintain, write, triage, read); the permission
endpoint answers the legacy base role (maintain → write, triage → read) and 404 for anyone else.

Labels: `labels[(repo, number)]` holds the label names of an issue or PR; `DELETE …/issues/{n}/labels/{name}`
(the name percent-encoded) takes one off, 404 "Label does not exist" when it is not there.

The App's webhook: with `hook_url` and `hook_secret` set, `send_webhook(event, payload)` POSTs a signed
delivery to the daemon and logs the attempt (status code 0 when nothing answered), as GitHub's delivery
log does; `GET /app/hook/deliveries` lists the log newest first with cursor paging and
`POST /app/hook/deliveries/{id}/attempts` sends that delivery again, with the same GUID, after answering.
A completed check run cannot be set back to `in_progress` (422 here; GitHub keeps it completed).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

COMMENT_BODY_MAX = 65_536
STATUS_DESCRIPTION_MAX = 140
ANNOTATIONS_PER_REQUEST = 50
OUTPUT_TEXT_MAX = 65_535
ANNOTATION_TITLE_MAX = 255
ANNOTATION_TEXT_MAX_BYTES = 64 * 1024
STATES = ("error", "failure", "pending", "success")
CHECK_STATUSES = ("queued", "in_progress", "completed")
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out")
LEVELS = ("notice", "warning", "failure")
PERMISSION_MESSAGE = "Resource not accessible by integration"
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach "
    "out to GitHub Support for help, please include the request ID."
)
DOCS = "https://docs.github.com/rest"


@dataclass(frozen=True)
class Identity:
    login: str
    type: str = "User"
    id: int = 1


DEFAULT_IDENTITIES = {
    "ghs_actions": Identity("github-actions[bot]", "Bot", 41898282),
    "ghp_user": Identity("mallory", "User", 1001),
    "ghs_other_bot": Identity("other-app[bot]", "Bot", 5005),
}


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    identity: str | None = None
    status: int = 0


@dataclass
class Fault:
    kind: str
    remaining: int
    path_contains: str | None = None
    method: str | None = None
    reset_at: int | None = None
    retry_after: int | None = 1


AFTER_FAULTS = ("502_after", "disconnect_after")
ROLE_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}


class _Reply(Exception):
    """Raised inside a handler to answer at once."""

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def _validation(resource: str, field_name: str, message: str) -> _Reply:
    return _Reply(
        422,
        {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "code": "custom", "field": field_name, "message": message}],
            "documentation_url": DOCS,
        },
    )


def _invalid(message: str) -> _Reply:
    return _Reply(422, {"message": f"Invalid request.\n\n{message}", "documentation_url": DOCS})


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Route = tuple[str, re.Pattern[str], Callable[..., tuple[int, Any, dict[str, str]]]]


class FakeGitHub:
    """In-memory GitHub; use as a context manager or call `start()`/`stop()`."""

    def __init__(
        self,
        *,
        identities: dict[str, Identity] | None = None,
        api_prefix: str = "",
        app_id: str = "12345",
        app_slug: str = "evalward-test",
        app_public_key: str | None = None,
        token_lifetime_s: int = 3600,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.identities = dict(DEFAULT_IDENTITIES if identities is None else identities)
        self.api_prefix = api_prefix.rstrip("/")
        self.app_id = app_id
        self.app_slug = app_slug
        self.app_public_key = app_public_key
        self.token_lifetime_s = token_lifetime_s
        self.clock = clock
        self.requests: list[RecordedRequest] = []
        self.comments: dict[int, dict[str, Any]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.labels: dict[tuple[str, int], list[str]] = {}
        """Label names on each issue or PR; `issues/remove-label` takes one off (404 when it is not there)."""
        self.pull_files: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.compares: dict[tuple[str, str], dict[str, Any]] = {}
        self.installations: dict[str, int] = {}
        self.installation_tokens: dict[str, tuple[Identity, float, int]] = {}
        self.read_only = False
        self.read_only_tokens: set[str] = set()
        self.faults: list[Fault] = []
        self.permissions: dict[tuple[str, str], str] = {}
        self.hook_url: str | None = None
        self.hook_secret: str | None = None
        self.hook_deliveries: list[dict[str, Any]] = []
        """Every delivery attempt, oldest first, as `apps/list-webhook-deliveries` shows them."""
        self.redelivery_requests: list[int] = []
        self._hook_bodies: dict[str, tuple[str, bytes]] = {}
        self._hook_changed = threading.Condition(threading.RLock())
        self._senders: list[threading.Thread] = []
        self.contract_exempt = False
        """Set by tests that send deliberately invalid requests, so the contract check skips them."""
        self._next_id = 1000
        self._ratelimit_remaining = 5000
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes: list[Route] = [
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._list_comments),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments"), self._create_comment),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)"), self._update_comment),
            ("DELETE", re.compile(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)"), self._delete_comment),
            ("DELETE", re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/labels/(.+)"), self._remove_label),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/statuses/(.+)"), self._create_status),
            ("POST", re.compile(r"/repos/([^/]+/[^/]+)/check-runs"), self._create_check_run),
            ("PATCH", re.compile(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)"), self._update_check_run),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)"), self._get_pull),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/files"), self._list_pull_files),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/compare/(.+)"), self._compare),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/commits/([^/]+)/check-runs"), self._list_check_runs_for_ref),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission"), self._get_permission),
            ("GET", re.compile(r"/repos/([^/]+/[^/]+)/installation"), self._repo_installation),
            ("GET", re.compile(r"/app"), self._get_app),
            ("POST", re.compile(r"/app/installations/(\d+)/access_tokens"), self._create_installation_token),
            ("GET", re.compile(r"/app/hook/deliveries"), self._list_hook_deliveries),
            ("POST", re.compile(r"/app/hook/deliveries/(\d+)/attempts"), self._redeliver),
        ]

    # -- lifecycle ---------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API root, as `GITHUB_API_URL` would give it."""
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{self.api_prefix}"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Buffer the answer so headers and body leave in one segment (flushed after each request);
            # unbuffered, the body waits for a delayed ACK (~40 ms per request).
            wbufsize = 64 * 1024

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body, headers = fake._handle(self.command, self.path, dict(self.headers.items()), raw)
                if status == -1:  # injected disconnect: close without answering
                    self.close_connection = True
                    return
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if payload:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def do_PATCH(self) -> None:
                self._serve()

            def do_DELETE(self) -> None:
                self._serve()

            def do_PUT(self) -> None:
                self._serve()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01})
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        for sender in list(self._senders):
            sender.join(timeout=30)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test set-up -------------------------------------------------------------------------------

    def inject(
        self,
        kind: str,
        count: int = 1,
        *,
        path_contains: str | None = None,
        method: str | None = None,
        reset_at: int | None = None,
        retry_after: int | None = 1,
    ) -> None:
        """Answer the next `count` matching requests with a fault (see the module docstring)."""
        assert kind in ("secondary", "secondary_reset", "primary", "429", "502", "disconnect", *AFTER_FAULTS), kind
        with self._lock:
            self.faults.append(Fault(kind, count, path_contains, method, reset_at, retry_after))

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def seed_comment(self, repo: str, issue: int, body: str, *, login: str, type: str = "User") -> dict[str, Any]:
        """A comment written by someone else (e.g. a forged marker by a human)."""
        with self._lock:
            return self._store_comment(repo, issue, body, Identity(login, type, 7))

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str,
        base_sha: str,
        head_ref: str = "feature",
        base_ref: str = "main",
        head_repo: str | None = "",
    ) -> dict[str, Any]:
        """A PR; `head_repo=None` models a deleted fork, `""` (default) the same repository."""
        head_repo_obj = None if head_repo is None else {"full_name": head_repo or repo}
        pull = {
            "number": number,
            "state": "open",
            "draft": False,
            "head": {"sha": head_sha, "ref": head_ref, "repo": head_repo_obj},
            "base": {"sha": base_sha, "ref": base_ref, "repo": {"full_name": repo}},
            "html_url": f"https://github.test/{repo}/pull/{number}",
        }
        self.pulls[(repo, number)] = pull
        return pull

    def set_compare(self, repo: str, base: str, head: str, *, merge_base_sha: str, **extra: Any) -> None:
        self.compares[(repo, f"{base}...{head}")] = {
            "merge_base_commit": {"sha": merge_base_sha},
            "status": "ahead",
            "ahead_by": 1,
            "behind_by": 0,
            **extra,
        }

    def comments_on(self, repo: str, issue: int) -> list[dict[str, Any]]:
        with self._lock:
            return sorted(
                (c for c in self.comments.values() if c["_repo"] == repo and c["_issue"] == issue),
                key=lambda c: int(c["id"]),
            )

    def requests_to(self, method: str, path_contains: str = "") -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method and path_contains in r.path]

    # -- dispatch ----------------------------------------------------------------------------------

    def _handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            parts = urlsplit(raw_path)
            path = unquote(parts.path)
            if self.api_prefix and path.startswith(self.api_prefix):
                path = path[len(self.api_prefix) :]
            query = parse_qs(parts.query, keep_blank_values=True)
            lowered = {k.lower(): v for k, v in headers.items()}
            auth = lowered.pop("authorization", None)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            record = RecordedRequest(method, path, query, lowered, body)
            self.requests.append(record)
            try:
                status, payload, extra = self._dispatch(method, path, query, auth, body, record)
            except _Reply as reply:
                status, payload, extra = reply.status, reply.body, reply.headers
            after = self._after_fault(method, path) if 200 <= status < 300 else None
            if after == "502_after":
                status, payload, extra = 502, {"message": "Server Error"}, {}
            elif after == "disconnect_after":
                status, payload, extra = -1, None, {}
            record.status = status
            return status, payload, {**self._ratelimit_headers(), **extra}

    def _ratelimit_headers(self) -> dict[str, str]:
        self._ratelimit_remaining = max(self._ratelimit_remaining - 1, 1)
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(self._ratelimit_remaining),
            "x-ratelimit-used": str(5000 - self._ratelimit_remaining),
            "x-ratelimit-reset": str(int(self.clock()) + 3600),
            "x-ratelimit-resource": "core",
        }

    def _matching_faults(self, method: str, path: str, *, after: bool) -> list[Fault]:
        return [
            f
            for f in self.faults
            if f.remaining > 0
            and (f.kind in AFTER_FAULTS) == after
            and (not f.method or f.method == method)
            and (not f.path_contains or f.path_contains in path)
        ]

    def _after_fault(self, method: str, path: str) -> str | None:
        """The fault to answer with once the request was carried out, if one is pending."""
        for fault in self._matching_faults(method, path, after=True):
            fault.remaining -= 1
            return fault.kind
        return None

    def _fault(self, method: str, path: str) -> None:
        for fault in self._matching_faults(method, path, after=False):
            fault.remaining -= 1
            reset = str(fault.reset_at if fault.reset_at is not None else int(self.clock()) + 60)
            if fault.kind == "secondary":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                raise _Reply(403, {"message": SECONDARY_MESSAGE, "documentation_url": DOCS}, headers)
            if fault.kind == "secondary_reset":
                headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
                raise _Reply(403, {"message": SECONDARY_MESSAGE, "documentation_url": DOCS}, headers)
            if fault.kind == "primary":
                headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}
                raise _Reply(
                    403, {"message": "API rate limit exceeded for installation.", "documentation_url": DOCS}, headers
                )
            if fault.kind == "429":
                headers = {"retry-after": str(fault.retry_after)} if fault.retry_after is not None else {}
                raise _Reply(429, {"message": "Too Many Requests"}, headers)
            if fault.kind == "502":
                raise _Reply(502, {"message": "Server Error"})
            if fault.kind == "disconnect":
                raise _Reply(-1)

    def _identity(self, auth: str | None) -> tuple[Identity, str]:
        if not auth or " " not in auth:
            raise _Reply(401, {"message": "Requires authentication", "documentation_url": DOCS})
        scheme, token = auth.split(" ", 1)
        if scheme.lower() not in ("bearer", "token"):
            raise _Reply(401, {"message": "Bad credentials", "documentation_url": DOCS})
        if token in self.identities:
            return self.identities[token], token
        minted = self.installation_tokens.get(token)
        if minted is not None:
            identity, expires, _installation = minted
            if expires <= self.clock():
                raise _Reply(401, {"message": "Bad credentials", "documentation_url": DOCS})
            return identity, token
        raise _Reply(401, {"message": "Bad credentials", "documentation_url": DOCS})

    def _dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        auth: str | None,
        body: Any,
        record: RecordedRequest,
    ) -> tuple[int, Any, dict[str, str]]:
        self._fault(method, path)
        for route_method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if route_method == method and match:
                if path.startswith("/app"):
                    return handler(*match.groups(), auth=auth, body=body, query=query)
                if path.endswith("/installation"):
                    return handler(*match.groups(), auth=auth, body=body, query=query)
                identity, token = self._identity(auth)
                record.identity = identity.login
                if method != "GET" and (self.read_only or token in self.read_only_tokens):
                    raise _Reply(403, {"message": PERMISSION_MESSAGE, "documentation_url": DOCS})
                return handler(*match.groups(), identity=identity, body=body, query=query)
        raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})

    # -- comments ----------------------------------------------------------------------------------

    def _store_comment(self, repo: str, issue: int, body: str, identity: Identity) -> dict[str, Any]:
        comment_id = self._new_id()
        now = _iso(self.clock())
        comment = {
            "id": comment_id,
            "node_id": f"IC_{comment_id}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{comment_id}",
            "html_url": f"https://github.test/{repo}/pull/{issue}#issuecomment-{comment_id}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{issue}",
            "body": body,
            "user": {"login": identity.login, "id": identity.id, "type": identity.type},
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
            "_repo": repo,
            "_issue": issue,
        }
        self.comments[comment_id] = comment
        return comment

    @staticmethod
    def _public(comment: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in comment.items() if not k.startswith("_")}

    def _page_params(self, query: dict[str, list[str]]) -> tuple[int, int]:
        try:
            per_page = min(int(query.get("per_page", ["30"])[0]), 100)
            page = max(int(query.get("page", ["1"])[0]), 1)
        except ValueError as exc:
            raise _Reply(422, {"message": "Invalid per_page or page"}) from exc
        return max(per_page, 1), page

    def _paged(self, path: str, items: list[Any], query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page, page = self._page_params(query)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        kept = {k: v[0] for k, v in query.items() if k not in ("per_page", "page")}

        def link(n: int) -> str:
            return f"<{self.url}{path}?{urlencode({**kept, 'per_page': per_page, 'page': n})}>"

        links = []
        if page < last:
            links += [f'{link(page + 1)}; rel="next"', f'{link(last)}; rel="last"']
        if page > 1:
            links += [f'{link(1)}; rel="first"', f'{link(page - 1)}; rel="prev"']
        return 200, chunk, {"Link": ", ".join(links)} if links else {}

    def _list_comments(self, repo: str, issue: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        comments = [self._public(c) for c in self.comments_on(repo, int(issue))]
        return self._paged(f"/repos/{repo}/issues/{issue}/comments", comments, kw["query"])

    @staticmethod
    def _comment_body(body: Any) -> str:
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            raise _invalid('"body" wasn\'t supplied.')
        text: str = body["body"]
        if len(text) > COMMENT_BODY_MAX:
            raise _validation("IssueComment", "data", f"Body is too long (maximum is {COMMENT_BODY_MAX} characters)")
        return text

    def _create_comment(self, repo: str, issue: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        text = self._comment_body(kw["body"])
        return 201, self._public(self._store_comment(repo, int(issue), text, kw["identity"])), {}

    def _own_comment(self, repo: str, comment_id: str) -> dict[str, Any]:
        comment = self.comments.get(int(comment_id))
        if comment is None or comment["_repo"] != repo:
            raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
        return comment

    def _update_comment(self, repo: str, comment_id: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        comment = self._own_comment(repo, comment_id)
        comment["body"] = self._comment_body(kw["body"])
        comment["updated_at"] = _iso(self.clock())
        return 200, self._public(comment), {}

    def _delete_comment(self, repo: str, comment_id: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._own_comment(repo, comment_id)
        del self.comments[int(comment_id)]
        return 204, None, {}

    # -- labels ------------------------------------------------------------------------------------

    def _remove_label(self, repo: str, number: str, name: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        """`issues/remove-label`: 200 with the labels left, or 404 "Label does not exist" as GitHub answers."""
        names = self.labels.get((repo, int(number)), [])
        if name not in names:
            raise _Reply(404, {"message": "Label does not exist", "documentation_url": DOCS})
        names.remove(name)
        return 200, [{"name": left} for left in names], {}

    # -- statuses ----------------------------------------------------------------------------------

    def _create_status(self, repo: str, sha: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        body = kw["body"] if isinstance(kw["body"], dict) else {}
        state = body.get("state")
        if state not in STATES:
            raise _invalid(f"For 'properties/state', {json.dumps(state)} is not one of {list(STATES)}.")
        description = body.get("description")
        if isinstance(description, str) and len(description) > STATUS_DESCRIPTION_MAX:
            raise _validation(
                "Status", "description", f"description is too long (maximum is {STATUS_DESCRIPTION_MAX} characters)"
            )
        status = {
            "id": self._new_id(),
            "sha": sha,
            "state": state,
            "description": description,
            "target_url": body.get("target_url"),
            "context": body.get("context") or "default",
            "creator": {"login": kw["identity"].login, "type": kw["identity"].type},
            "_repo": repo,
        }
        self.statuses.append(status)
        return 201, self._public(status), {}

    # -- check runs --------------------------------------------------------------------------------

    def _check_output(self, output: Any, *, creating: bool) -> list[dict[str, Any]]:
        if not isinstance(output, dict):
            raise _invalid("For 'properties/output', it is not an object.")
        if creating and not output.get("title"):
            raise _invalid('"title" wasn\'t supplied.')
        if not output.get("summary"):
            raise _invalid('"summary" wasn\'t supplied.')
        for key in ("summary", "text"):
            value = output.get(key)
            if isinstance(value, str) and len(value) > OUTPUT_TEXT_MAX:
                raise _validation("CheckRun", key, f"{key} is too long (maximum is {OUTPUT_TEXT_MAX} characters)")
        annotations = output.get("annotations") or []
        if len(annotations) > ANNOTATIONS_PER_REQUEST:
            raise _invalid(f"For 'properties/annotations', {len(annotations)} items exceeds the maximum of 50.")
        for index, item in enumerate(annotations):
            for key in ("path", "start_line", "end_line", "annotation_level", "message"):
                if key not in item:
                    raise _invalid(f'"{key}" wasn\'t supplied (annotations[{index}]).')
            if item["annotation_level"] not in LEVELS:
                raise _invalid(
                    f"For 'items', {json.dumps(item['annotation_level'])} is not one of {list(LEVELS)} "
                    f"(annotations[{index}].annotation_level)."
                )
            if len(str(item.get("title") or "")) > ANNOTATION_TITLE_MAX:
                raise _validation("CheckRun", "title", f"title is too long (maximum is {ANNOTATION_TITLE_MAX})")
            for key in ("message", "raw_details"):
                if len(str(item.get(key) or "").encode()) > ANNOTATION_TEXT_MAX_BYTES:
                    raise _validation("CheckRun", key, f"{key} is too long (maximum is 64 KB)")
            if ("start_column" in item or "end_column" in item) and item["start_line"] != item["end_line"]:
                raise _validation("CheckRun", "start_column", "columns are only allowed on a single line")
        return list(annotations)

    @staticmethod
    def _check_status_rules(body: dict[str, Any], previous: dict[str, Any] | None) -> tuple[str, str | None]:
        status = body.get("status")
        conclusion = body.get("conclusion")
        if status is not None and status not in CHECK_STATUSES:
            raise _invalid(f"For 'properties/status', {json.dumps(status)} is not one of {list(CHECK_STATUSES)}.")
        if previous is not None and previous["status"] == "completed" and status in ("queued", "in_progress"):
            raise _validation("CheckRun", "status", f"a completed check run cannot be set back to {status}")
        if conclusion is not None:
            if conclusion not in CONCLUSIONS:
                raise _invalid(
                    f"For 'properties/conclusion', {json.dumps(conclusion)} is not one of {list(CONCLUSIONS)}."
                )
            if conclusion == "stale":
                raise _validation("CheckRun", "conclusion", "conclusion cannot be set to stale")
            return "completed", conclusion
        if status == "completed" or (status is None and body.get("completed_at")):
            raise _invalid('"conclusion" wasn\'t supplied.')
        if previous is not None:
            return str(status or previous["status"]), previous.get("conclusion")
        return str(status or "queued"), None

    def _create_check_run(self, repo: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        body = kw["body"] if isinstance(kw["body"], dict) else {}
        for key in ("name", "head_sha"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise _invalid(f'"{key}" wasn\'t supplied.')
        status, conclusion = self._check_status_rules(body, None)
        annotations = self._check_output(body["output"], creating=True) if "output" in body else []
        run_id = self._new_id()
        run = {
            "id": run_id,
            "head_sha": body["head_sha"],
            "name": body["name"],
            "status": status,
            "conclusion": conclusion,
            "details_url": body.get("details_url"),
            "external_id": body.get("external_id"),
            "started_at": body.get("started_at") or _iso(self.clock()),
            "completed_at": body.get("completed_at") or (_iso(self.clock()) if status == "completed" else None),
            "html_url": f"https://github.test/{repo}/runs/{run_id}",
            "output": {k: v for k, v in (body.get("output") or {}).items() if k != "annotations"},
            "app": {"slug": "github-actions" if kw["identity"].login == "github-actions[bot]" else self.app_slug},
            "_annotations": annotations,
            "_repo": repo,
        }
        self.check_runs[run_id] = run
        return 201, self._run_view(run), {}

    def _update_check_run(self, repo: str, run_id: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        run = self.check_runs.get(int(run_id))
        if run is None or run["_repo"] != repo:
            raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
        body = kw["body"] if isinstance(kw["body"], dict) else {}
        run["status"], run["conclusion"] = self._check_status_rules(body, run)
        if "output" in body:
            run["_annotations"] += self._check_output(body["output"], creating=False)
            run["output"] = {k: v for k, v in body["output"].items() if k != "annotations"}
        for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
            if key in body:
                run[key] = body[key]
        if run["status"] == "completed" and not run.get("completed_at"):
            run["completed_at"] = _iso(self.clock())
        return 200, self._run_view(run), {}

    def _list_check_runs_for_ref(self, repo: str, ref: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        query = kw["query"]
        name = query.get("check_name", [None])[0]
        status = query.get("status", [None])[0]
        runs = [
            r
            for r in sorted(self.check_runs.values(), key=lambda r: -int(r["id"]))
            if r["_repo"] == repo and r["head_sha"] == ref and (name is None or r["name"] == name)
        ]
        if query.get("filter", ["latest"])[0] == "latest":
            newest: dict[str, dict[str, Any]] = {}
            for run in runs:
                newest.setdefault(run["name"], run)
            runs = list(newest.values())
        if status is not None:
            runs = [r for r in runs if r["status"] == status]
        code, page, headers = self._paged(
            f"/repos/{repo}/commits/{ref}/check-runs", [self._run_view(r) for r in runs], query
        )
        return code, {"total_count": len(runs), "check_runs": page}, headers

    def _run_view(self, run: dict[str, Any]) -> dict[str, Any]:
        view = self._public(run)
        view["output"] = {**run["output"], "annotations_count": len(run["_annotations"])}
        return view

    def annotations_of(self, run_id: int) -> list[dict[str, Any]]:
        return list(self.check_runs[run_id]["_annotations"])

    # -- pulls, compare ----------------------------------------------------------------------------

    def _get_pull(self, repo: str, number: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
        return 200, pull, {}

    def _list_pull_files(self, repo: str, number: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        files = self.pull_files.get((repo, int(number)), [])
        return self._paged(f"/repos/{repo}/pulls/{number}/files", files, kw["query"])

    def _compare(self, repo: str, basehead: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        answer = self.compares.get((repo, basehead))
        if answer is None:
            raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
        return 200, answer, {}

    # -- collaborators ------------------------------------------------------------------------------

    def _get_permission(self, repo: str, username: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        role = self.permissions.get((repo, username))
        if role is None:
            raise _Reply(404, {"message": f"{username} is not a user", "documentation_url": DOCS})
        permission = ROLE_PERMISSION[role]
        user = {"login": username, "id": 77, "type": "User", "site_admin": False}
        return 200, {"permission": permission, "role_name": role, "user": user}, {}

    # -- the App's webhook -------------------------------------------------------------------------

    def send_webhook(
        self, event: str, payload: dict[str, Any], *, guid: str | None = None, redelivery: bool = False
    ) -> dict[str, Any]:
        """POST one signed delivery to `hook_url` (synchronously) and log the attempt; return the log entry."""
        import httpx

        guid = guid or str(uuid.uuid4())
        body = json.dumps(payload).encode()
        with self._hook_changed:
            self._hook_bodies.setdefault(guid, (event, body))
        event, body = self._hook_bodies[guid]
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": guid,
            "X-GitHub-Hook-ID": "1",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": self.app_id,
            "X-Hub-Signature-256": "sha256="
            + hmac.new((self.hook_secret or "").encode(), body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
        }
        started = time.monotonic()
        try:
            if not self.hook_url:
                raise httpx.ConnectError("no hook URL configured")
            response = httpx.post(self.hook_url, content=body, headers=headers, timeout=10)
            code, status = (
                response.status_code,
                ("OK" if response.is_success else f"Invalid HTTP Response: {response.status_code}"),
            )
        except httpx.HTTPError as exc:
            code, status = 0, f"failed to connect to host ({type(exc).__name__})"
        return self.log_delivery(
            event, json.loads(body), guid=guid, status_code=code, status=status, redelivery=redelivery,
            duration=time.monotonic() - started,
        )  # fmt: skip

    def log_delivery(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        guid: str,
        status_code: int,
        status: str | None = None,
        redelivery: bool = False,
        delivered_at: float | None = None,
        duration: float = 0.01,
    ) -> dict[str, Any]:
        """Add one attempt to the delivery log (what `send_webhook` does after sending; tests seed history)."""
        with self._lock, self._hook_changed:
            self._hook_bodies.setdefault(guid, (event, json.dumps(payload).encode()))
            installation = payload.get("installation")
            repository = payload.get("repository")
            entry = {
                "id": self._new_id(),
                "guid": guid,
                "delivered_at": _iso(self.clock() if delivered_at is None else delivered_at),
                "redelivery": redelivery,
                "duration": round(duration, 3),
                "status": status or ("OK" if 200 <= status_code < 300 else f"Invalid HTTP Response: {status_code}"),
                "status_code": status_code,
                "event": event,
                "action": payload.get("action"),
                "installation_id": installation.get("id") if isinstance(installation, dict) else None,
                "repository_id": repository.get("id") if isinstance(repository, dict) else None,
                "throttled_at": None,
            }
            self.hook_deliveries.append(entry)
            self._hook_changed.notify_all()
            return entry

    def wait_for_deliveries(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout_s: float = 30) -> bool:
        """Block until `predicate(hook_deliveries)` holds (redeliveries are sent from background threads)."""
        with self._hook_changed:
            return self._hook_changed.wait_for(lambda: predicate(list(self.hook_deliveries)), timeout=timeout_s)

    def _list_hook_deliveries(self, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._verify_jwt(kw["auth"])
        query = kw["query"]
        per_page, _page = self._page_params(query)
        cursor = query.get("cursor", [None])[0]
        wanted = query.get("status", [None])[0]
        with self._hook_changed:
            items = sorted(self.hook_deliveries, key=lambda d: -int(d["id"]))
        if wanted is not None:
            items = [d for d in items if (200 <= d["status_code"] < 300) == (wanted == "success")]
        if cursor is not None:
            if not cursor.startswith("v1_") or not cursor[3:].isdigit():
                raise _Reply(422, {"message": "Invalid cursor", "documentation_url": DOCS})
            items = [d for d in items if int(d["id"]) < int(cursor[3:])]
        chunk = items[:per_page]
        headers = {}
        if len(items) > per_page:
            next_query = {
                **({"status": wanted} if wanted else {}),
                "per_page": per_page,
                "cursor": f"v1_{chunk[-1]['id']}",
            }
            headers["Link"] = f'<{self.url}/app/hook/deliveries?{urlencode(next_query)}>; rel="next"'
        return 200, [dict(d) for d in chunk], headers

    def _redeliver(self, delivery_id: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._verify_jwt(kw["auth"])
        with self._hook_changed:
            found = next((d for d in self.hook_deliveries if d["id"] == int(delivery_id)), None)
            if found is None:
                raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
            self.redelivery_requests.append(int(delivery_id))
        event, body = self._hook_bodies[found["guid"]]
        # GitHub answers 202 and delivers later: the fake sends from a thread once this answer is out.
        sender = threading.Thread(
            target=self.send_webhook, args=(event, json.loads(body)), kwargs={"guid": found["guid"], "redelivery": True},
            daemon=True,
        )  # fmt: skip
        self._senders.append(sender)
        sender.start()
        return 202, {}, {}

    # -- App auth ----------------------------------------------------------------------------------

    def _verify_jwt(self, auth: str | None) -> dict[str, Any]:
        import jwt

        if self.app_public_key is None:
            raise _Reply(401, {"message": "App auth not configured in the fake"})
        if not auth or not auth.lower().startswith("bearer "):
            raise _Reply(401, {"message": "A JSON web token could not be decoded", "documentation_url": DOCS})
        token = auth.split(" ", 1)[1]
        now = self.clock()
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self.app_public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"], "verify_exp": False, "verify_iat": False},
            )
        except jwt.PyJWTError as exc:
            raise _Reply(401, {"message": f"A JSON web token could not be decoded ({exc})"}) from exc
        if str(claims["iss"]) != self.app_id:
            raise _Reply(401, {"message": "'Issuer' claim ('iss') must be an Integer"})
        if claims["exp"] <= now:
            raise _Reply(401, {"message": "'Expiration time' claim ('exp') is too far in the past"})
        if claims["exp"] > now + 600:
            raise _Reply(401, {"message": "'Expiration time' claim ('exp') is too far in the future"})
        if claims["iat"] > now + 5:
            raise _Reply(
                401, {"message": "'Issued at' claim ('iat') must be an Integer representing a time in the past"}
            )
        return claims

    def _get_app(self, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._verify_jwt(kw["auth"])
        return 200, {"id": int(self.app_id), "slug": self.app_slug, "name": self.app_slug}, {}

    def _repo_installation(self, repo: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._verify_jwt(kw["auth"])
        if repo not in self.installations:
            raise _Reply(404, {"message": "Not Found", "documentation_url": DOCS})
        return 200, {"id": self.installations[repo], "app_slug": self.app_slug}, {}

    def _create_installation_token(self, installation_id: str, **kw: Any) -> tuple[int, Any, dict[str, str]]:
        self._verify_jwt(kw["auth"])
        # Longer than 40 characters on purpose: clients must not assume a token length (§11).
        token = f"ghs_{installation_id}_{secrets.token_urlsafe(48)}"
        expires = self.clock() + self.token_lifetime_s
        identity = Identity(f"{self.app_slug}[bot]", "Bot", 9000)
        self.installation_tokens[token] = (identity, expires, int(installation_id))
        answer = {
            "token": token,
            "expires_at": _iso(expires),
            "permissions": {"checks": "write", "pull_requests": "write", "statuses": "write"},
            "repository_selection": "selected",
        }
        return 201, answer, {}


def app_keys() -> tuple[str, str]:
    """A fresh RSA key pair for a fake GitHub App: (private PEM, public PEM) — `FakeGitHub(app_public_key=…)`
    checks the App's JWTs with the public one."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public
