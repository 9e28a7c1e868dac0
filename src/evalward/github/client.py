"""A small synchronous client for the GitHub REST endpoints evalward calls (docs/github.md §8), with §9's retry rule.

Error tree:

    InfrastructureError (evalward.errors, exit code 3)
    └── GitHubError                 any non-2xx answer we gave up on, or a network failure after the retries
        ├── GitHubPermissionError   403 "Resource not accessible by integration" (a read-only token, e.g. a
        │                           fork PR): never retried, so callers can fall back to job summary + log
        └── GitHubUncertainError    a request that is not safe to replay (`replay_safe=False`) may have been
                                    applied: the answer was lost (timeout, dropped connection) or was a 5xx

Retry rule (GitHub docs "Rate limits for the REST API", in this order):

1. 403/429 that is a *secondary* limit (429, or a message mentioning "secondary rate limit"/"abuse"):
   wait `retry-after` seconds if that header is present; else, if `x-ratelimit-remaining` is `0`, until
   `x-ratelimit-reset`; else 60 s. The k-th consecutive limit on one request (k = 0, 1, …) multiplies the
   `retry-after` or 60 s base by 2^k (exponential back-off); a reset time is exact and not multiplied.
2. 403/429 with `x-ratelimit-remaining: 0` (the *primary* limit): wait until `x-ratelimit-reset`.
3. 5xx answers and network errors: evalward's one back-off (`evalward.backoff.backoff_wait`, base 1 s):
   wait = 2^k × (0.5 + jitter()/2) s after the k-th failure (k = 0, 1, …), jitter() ∈ [0, 1).
4. A wait longer than `max_wait_s` (default 15 min) is not slept: the client gives up at once, because a CI
   job should fail visibly rather than hang for an hour.
4a. With `retry_budget_s`, the time the client may lose to GitHub not answering — failed attempts (5xx,
   network errors) plus the back-off slept after them, over the client's whole life — is capped: a retry
   that would go past it is not made. So an unreachable GitHub costs a CI job at most that long in total,
   whatever it posts (`evalward ci` uses 20 s). Rate-limit waits (rules 1 and 2) do not count against it.
5. A request sent with `replay_safe=False` (creating a check run: a second POST makes a second run) is not
   replayed after an answer that leaves it unknown whether GitHub applied it — a network error once the
   connection was made, or a 5xx (a proxy may have passed the request on). It raises
   `GitHubUncertainError` and the caller looks before it tries again (`checks.create_check_run_once`).
   Connection failures (nothing was sent) and rate-limit answers (nothing was applied) are retried as usual.

After `max_retries` retries (so `max_retries + 1` attempts) it raises `GitHubError`. The token is sent
only to `api_url`'s origin (pagination links elsewhere are refused) and never appears in a message, a log
line or a repr.
"""

from __future__ import annotations

import logging
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast
from urllib.parse import quote, urlsplit

import httpx

from evalward.backoff import backoff_wait
from evalward.errors import InfrastructureError
from evalward.redact import redact_data, register_secret

log = logging.getLogger("evalward.github")
_T = TypeVar("_T")

API_VERSION = "2022-11-28"
MEDIA_TYPE = "application/vnd.github+json"
STATUS_DESCRIPTION_MAX = 140
"""GitHub answers 422 "description is too long (maximum is 140 characters)" beyond this (not in the spec)."""
COMMIT_STATES = ("error", "failure", "pending", "success")
PER_PAGE_MAX = 100
PULL_FILES_MAX = 3000
"""`pulls/list-files` returns at most 3,000 files, whatever the paging."""

SECONDARY_DEFAULT_WAIT_S = 60.0
BACKOFF_BASE_S = 1.0
PERMISSION_MESSAGE = "Resource not accessible by integration"

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SECONDARY_HINTS = ("secondary rate limit", "abuse")


class GitHubError(InfrastructureError):
    """GitHub answered with an error (or could not be reached) for `request` (`METHOD /path`)."""

    def __init__(self, status: int | None, message: str, request: str) -> None:
        self.status = status
        self.message = message
        self.request = request
        where = f"{status}" if status is not None else "no answer"
        super().__init__(f"GitHub API {request}: {where}: {message}")


class GitHubPermissionError(GitHubError):
    """403 "Resource not accessible by integration": the token may read but not write (fork PRs, §7)."""


class GitHubUncertainError(GitHubError):
    """A `replay_safe=False` request whose outcome is unknown: GitHub may or may not have applied it."""


_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""Transport errors raised before the request left this process: always safe to send again."""

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
"""`repos/get-collaborator-permission-level` answers that mean write access (GitHub maps maintain to write)."""


@dataclass(frozen=True)
class InstallationToken:
    """An installation access token and when it expires (`expires_at`, timezone-aware UTC)."""

    token: str = field(repr=False)
    expires_at: datetime


def _error_message(response: httpx.Response) -> str:
    """`message` from GitHub's JSON error body, with each `errors[].message` appended (422 details)."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if not isinstance(payload, dict):
        return response.reason_phrase
    message = str(payload.get("message") or response.reason_phrase)
    details = [
        str(item["message"])
        for item in payload.get("errors") or []
        if isinstance(item, dict) and item.get("message") and item.get("message") != message
    ]
    return f"{message}: {'; '.join(details)}" if details else message


def _header_float(response: httpx.Response, name: str) -> float | None:
    value = response.headers.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _check_repo(repo: str) -> str:
    if not _REPO.match(repo):
        raise ValueError(f"repository must look like 'owner/name', found {repo!r}")
    return repo


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


def cut(text: str, max_len: int) -> str:
    """`text` cut to `max_len` characters, the last one `…` when anything was cut."""
    return text if len(text) <= max_len else text[: max_len - 1] + "…"


class GitHubClient:
    """Sync httpx client for `api_url` (read `GITHUB_API_URL`; GHES is `https://HOST/api/v3`)."""

    def __init__(
        self,
        token: str | None,
        *,
        api_url: str,
        transport: httpx.BaseTransport | None = None,
        max_retries: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = "evalward",
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
        max_wait_s: float = 900.0,
        timeout_s: float = 30.0,
        connect_timeout_s: float | None = None,
        retry_budget_s: float | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not api_url:
            raise ValueError("api_url is required (GITHUB_API_URL)")
        self.api_url = api_url.rstrip("/")
        self._origin = urlsplit(self.api_url)[:2]
        self._token = token
        register_secret(token, "GitHub token")
        self.max_retries = max_retries
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter
        self.max_wait_s = max_wait_s
        self.retry_budget_s = retry_budget_s
        self.retry_spent_s = 0.0  # seconds lost to failed attempts and their back-off so far (rule 4a)
        self._monotonic = monotonic
        self._http = httpx.Client(
            base_url=self.api_url + "/",
            transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s or timeout_s),
            headers={"Accept": MEDIA_TYPE, "X-GitHub-Api-Version": API_VERSION, "User-Agent": user_agent},
        )

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token={'***' if self._token else None})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport and retries ---------------------------------------------------------------------

    def _url(self, path_or_url: str) -> str:
        """An absolute URL on `api_url`; absolute URLs (pagination links) must share its origin."""
        if "://" not in path_or_url:
            return self.api_url + "/" + path_or_url.lstrip("/")
        if urlsplit(path_or_url)[:2] != self._origin:
            raise GitHubError(None, "refusing to follow a link to another host", "GET (pagination)")
        return path_or_url

    def _rate_limit_wait(self, response: httpx.Response, streak: int) -> float | None:
        """Seconds to wait before retrying a 403/429, or None when it is not a rate limit."""
        if response.status_code not in (403, 429):
            return None
        remaining = response.headers.get("x-ratelimit-remaining")
        reset = _header_float(response, "x-ratelimit-reset")
        message = _error_message(response).lower()
        secondary = response.status_code == 429 or any(hint in message for hint in _SECONDARY_HINTS)
        until_reset = max(reset - self._clock(), 1.0) if reset is not None else None
        if secondary:
            retry_after = _header_float(response, "retry-after")
            if retry_after is not None:
                return max(retry_after, 0.0) * 2.0**streak
            if remaining == "0" and until_reset is not None:
                return until_reset
            return SECONDARY_DEFAULT_WAIT_S * 2.0**streak
        if remaining == "0":
            return until_reset if until_reset is not None else SECONDARY_DEFAULT_WAIT_S
        return None

    def _backoff(self, attempt: int) -> float:
        return backoff_wait(attempt + 1, base_s=BACKOFF_BASE_S, jitter=self._jitter)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, str | int] | None = None,
        bearer: str | None = None,
        replay_safe: bool = True,
    ) -> httpx.Response:
        """Send with retries; return the 2xx response or raise `GitHubError`. `bearer` overrides the token (JWT).

        `replay_safe=False`: raise `GitHubUncertainError` instead of retrying when the request may have been
        applied (rule 5 of the module docstring)."""
        url = self._url(path)
        label = f"{method} {urlsplit(url).path}"
        # Every body GitHub receives passes here: the last point where a secret could still be caught.
        json = redact_data(json)
        token = bearer if bearer is not None else self._token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        rate_limited = 0
        attempt = 0
        while True:
            status: int | None
            started = self._monotonic()
            unanswered = False
            try:
                response = self._http.request(method, url, json=json, params=params, headers=headers)
            except httpx.TransportError as exc:
                self.retry_spent_s += self._monotonic() - started
                status, message, wait = None, f"network error: {type(exc).__name__}", self._backoff(attempt)
                unanswered = True
                if not replay_safe and not isinstance(exc, _NOT_SENT):
                    raise GitHubUncertainError(None, f"{message} (the request may have been applied)", label) from exc
            else:
                status = response.status_code
                if response.is_success:
                    return response
                message = _error_message(response)
                if status == 403 and PERMISSION_MESSAGE.lower() in message.lower():
                    raise GitHubPermissionError(status, message, label)
                limit_wait = self._rate_limit_wait(response, rate_limited)
                if limit_wait is not None:
                    rate_limited += 1
                    wait = limit_wait
                elif status >= 500:
                    self.retry_spent_s += self._monotonic() - started
                    unanswered = True
                    if not replay_safe:
                        raise GitHubUncertainError(status, f"{message} (the request may have been applied)", label)
                    wait = self._backoff(attempt)
                else:
                    raise GitHubError(status, message, label)
            if attempt >= self.max_retries:
                raise GitHubError(status, f"{message} (gave up after {attempt + 1} attempts)", label)
            if unanswered and not self._within_budget(wait):
                raise GitHubError(
                    status,
                    f"{message} (gave up after {attempt + 1} attempts: GitHub has not answered for "
                    f"{self.retry_spent_s:.0f} s, and waiting {wait:.0f} s more would exceed the "
                    f"{self.retry_budget_s:.0f} s retry budget)",
                    label,
                )
            if unanswered:
                self.retry_spent_s += wait
            if wait > self.max_wait_s:
                raise GitHubError(
                    status, f"{message} (retry would need a {wait:.0f} s wait, over {self.max_wait_s:.0f} s)", label
                )
            attempt += 1
            log.warning(
                "%s answered %s: %s; retrying in %.1f s (retry %d of %d)",
                label,
                status if status is not None else "nothing",
                message,
                wait,
                attempt,
                self.max_retries,
            )
            self._sleep(wait)

    def _within_budget(self, wait: float) -> bool:
        return self.retry_budget_s is None or self.retry_spent_s + wait <= self.retry_budget_s

    def backoff(self, attempt: int) -> None:
        """Sleep the 5xx back-off of retry `attempt` (0, 1, …): for callers that retry on their own. Raises
        `GitHubError` instead when the wait would exceed the retry budget (rule 4a)."""
        wait = self._backoff(attempt)
        if not self._within_budget(wait):
            raise GitHubError(
                None,
                f"gave up: GitHub has not answered for {self.retry_spent_s:.0f} s, and waiting {wait:.0f} s more "
                f"would exceed the {self.retry_budget_s:.0f} s retry budget",
                "retry",
            )
        self.retry_spent_s += wait
        self._sleep(wait)

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        return response.json() if response.content else None

    def _paginate(
        self,
        path: str,
        params: Mapping[str, str | int],
        limit: int | None = None,
        *,
        key: str | None = None,
        bearer: Callable[[], str] | None = None,
    ) -> Iterator[Any]:
        """Every item of every page, following `Link: rel="next"` (GitHub's paging; page numbers or cursors).

        `key`: the items are the array under that key of each page's object (`{"total_count", "check_runs"}`).
        `bearer`: called for each page's JWT, so a long listing never outlives one token."""
        url: str | None = path
        query: Mapping[str, str | int] | None = params
        seen = 0
        while url is not None:
            response = self.request("GET", url, params=query, bearer=bearer() if bearer else None)
            page = response.json()
            items = page.get(key) if key is not None and isinstance(page, dict) else page
            if not isinstance(items, list):
                what = f"a JSON object with an array {key!r}" if key else "a JSON array"
                raise GitHubError(response.status_code, f"expected {what}", f"GET {urlsplit(str(url)).path}")
            for item in items:
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            url = response.links.get("next", {}).get("url")
            query = None  # the next link carries the query

    # -- endpoints ---------------------------------------------------------------------------------

    def list_issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """All comments of an issue or PR, oldest first (`issues/list-comments`, every page, 100 per page)."""
        path = f"repos/{_check_repo(repo)}/issues/{int(number)}/comments"
        return list(self._paginate(path, {"per_page": PER_PAGE_MAX}))

    def create_issue_comment(self, repo: str, number: int, body: str, *, replay_safe: bool = True) -> dict[str, Any]:
        """`issues/create-comment`. Not idempotent: the sticky comment passes `replay_safe=False` and looks for
        its comment before posting again (`sticky.upsert_sticky_comment`)."""
        path = f"repos/{_check_repo(repo)}/issues/{int(number)}/comments"
        return cast(dict[str, Any], self._json("POST", path, json={"body": body}, replay_safe=replay_safe))

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        path = f"repos/{_check_repo(repo)}/issues/comments/{int(comment_id)}"
        return cast(dict[str, Any], self._json("PATCH", path, json={"body": body}))

    def delete_issue_comment(self, repo: str, comment_id: int) -> None:
        self.request("DELETE", f"repos/{_check_repo(repo)}/issues/comments/{int(comment_id)}")

    def remove_issue_label(self, repo: str, number: int, name: str) -> bool:
        """`issues/remove-label`: take label `name` off an issue or PR; False when it was not on it (404).

        The name is one path segment, so it is percent-encoded whole (`evalward:run` → `evalward%3Arun`; a
        `/` in a label must not become another path segment)."""
        path = f"repos/{_check_repo(repo)}/issues/{int(number)}/labels/{_segment(name)}"
        try:
            self.request("DELETE", path)
        except GitHubError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def create_commit_status(
        self,
        repo: str,
        sha: str,
        state: str,
        context: str,
        description: str | None = None,
        target_url: str | None = None,
    ) -> dict[str, Any]:
        """`repos/create-commit-status`; `description` is cut to 140 characters (GitHub's undocumented limit)."""
        if state not in COMMIT_STATES:
            raise ValueError(f"commit status state must be one of {', '.join(COMMIT_STATES)}, found {state!r}")
        body: dict[str, Any] = {"state": state, "context": context}
        if description is not None:
            body["description"] = cut(description, STATUS_DESCRIPTION_MAX)
        if target_url is not None:
            body["target_url"] = target_url
        path = f"repos/{_check_repo(repo)}/statuses/{_segment(sha)}"
        return cast(dict[str, Any], self._json("POST", path, json=body))

    def create_check_run(self, repo: str, payload: Mapping[str, Any], *, replay_safe: bool = True) -> dict[str, Any]:
        """`checks/create`. Not idempotent: prefer `checks.create_check_run_once`, which passes `replay_safe=False`."""
        path = f"repos/{_check_repo(repo)}/check-runs"
        return cast(dict[str, Any], self._json("POST", path, json=dict(payload), replay_safe=replay_safe))

    def list_check_runs_for_ref(
        self, repo: str, ref: str, *, check_name: str | None = None, filter: str = "all"
    ) -> list[dict[str, Any]]:
        """`checks/list-for-ref`: check runs on a commit (every page); `filter="all"` includes superseded ones."""
        params: dict[str, str | int] = {"filter": filter, "per_page": PER_PAGE_MAX}
        if check_name is not None:
            params["check_name"] = check_name
        path = f"repos/{_check_repo(repo)}/commits/{_segment(ref)}/check-runs"
        return list(self._paginate(path, params, key="check_runs"))

    def update_check_run(
        self, repo: str, check_run_id: int, payload: Mapping[str, Any], *, replay_safe: bool = True
    ) -> dict[str, Any]:
        """`checks/update`. Replaying it is harmless except for `output.annotations`, which GitHub appends:
        batches of annotations go with `replay_safe=False` (see `checks.post_check_run`)."""
        path = f"repos/{_check_repo(repo)}/check-runs/{int(check_run_id)}"
        return cast(dict[str, Any], self._json("PATCH", path, json=dict(payload), replay_safe=replay_safe))

    def get_pull(self, repo: str, number: int) -> dict[str, Any]:
        return cast(dict[str, Any], self._json("GET", f"repos/{_check_repo(repo)}/pulls/{int(number)}"))

    def list_pull_files(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The PR's changed files (`pulls/list-files`; GitHub stops at 3,000)."""
        path = f"repos/{_check_repo(repo)}/pulls/{int(number)}/files"
        return list(self._paginate(path, {"per_page": PER_PAGE_MAX}, limit=PULL_FILES_MAX))

    def compare(self, repo: str, base: str, head: str) -> dict[str, Any]:
        """`repos/compare-commits-with-basehead` for `BASE...HEAD`; the merge base is `merge_base_commit.sha`."""
        basehead = quote(f"{base}...{head}", safe="/:.")
        return cast(dict[str, Any], self._json("GET", f"repos/{_check_repo(repo)}/compare/{basehead}"))

    def merge_base(self, repo: str, base: str, head: str) -> str:
        """The merge-base commit SHA of `base` and `head` (the baseline commit for a PR, §4)."""
        sha = (self.compare(repo, base, head).get("merge_base_commit") or {}).get("sha")
        if not isinstance(sha, str) or not sha:
            raise GitHubError(200, "compare answer has no merge_base_commit.sha", f"GET compare {base}...{head}")
        return sha

    def get_collaborator_permission(self, repo: str, username: str) -> str:
        """`repos/get-collaborator-permission-level`: `admin`, `write`, `read` or `none` (404 → `none`).

        GitHub reports the legacy base role: maintain counts as `write`, triage as `read`; `role_name` would
        name custom roles, but only the base role decides write access."""
        path = f"repos/{_check_repo(repo)}/collaborators/{_segment(username)}/permission"
        try:
            answer = self._json("GET", path)
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        permission = answer.get("permission") if isinstance(answer, dict) else None
        if not isinstance(permission, str):
            raise GitHubError(200, f"answer has no permission string, found {permission!r}", f"GET {path}")
        return permission

    def list_app_hook_deliveries(self, jwt: Callable[[], str], *, per_page: int = PER_PAGE_MAX) -> Iterator[Any]:
        """`apps/list-webhook-deliveries`, newest first, page after page (cursor links); `jwt` makes each page's JWT.

        Each delivery attempt is one item (`id`, `guid`, `delivered_at`, `redelivery`, `status_code`, `event`,
        `action`, …); a redelivery has its own `id` and the original `guid`."""
        return self._paginate("app/hook/deliveries", {"per_page": min(per_page, PER_PAGE_MAX)}, bearer=jwt)

    def redeliver_app_hook_delivery(self, delivery_id: int, jwt: str) -> None:
        """`apps/redeliver-webhook-delivery`: GitHub sends the delivery again (same GUID), asynchronously."""
        self.request("POST", f"app/hook/deliveries/{int(delivery_id)}/attempts", bearer=jwt)

    def get_authenticated_app_login(self, jwt: str) -> str:
        """The App's bot login (`{slug}[bot]`), the author of the comments it posts (`apps/get-authenticated`)."""
        app = self._json("GET", "app", bearer=jwt)
        return f"{app['slug']}[bot]"

    def get_repo_installation_id(self, repo: str, jwt: str) -> int:
        """The App's installation id for `repo` (`apps/get-repo-installation`)."""
        return int(self._json("GET", f"repos/{_check_repo(repo)}/installation", bearer=jwt)["id"])

    def create_installation_token(
        self,
        installation_id: int,
        jwt: str,
        *,
        repositories: list[str] | None = None,
        permissions: Mapping[str, str] | None = None,
    ) -> InstallationToken:
        """`apps/create-installation-access-token`, authenticated by the App's JWT."""
        body: dict[str, Any] = {}
        if repositories is not None:
            body["repositories"] = repositories
        if permissions is not None:
            body["permissions"] = dict(permissions)
        path = f"app/installations/{int(installation_id)}/access_tokens"
        answer = self._json("POST", path, json=body or None, bearer=jwt)
        expires = datetime.fromisoformat(str(answer["expires_at"]).replace("Z", "+00:00"))
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        return InstallationToken(token=str(answer["token"]), expires_at=expires)


def send_once(client: GitHubClient, send: Callable[[], _T], landed: Callable[[], _T | None]) -> _T:
    """Send a request that must not be applied twice (rule 5 of the module docstring): `send` makes it with
    `replay_safe=False`; after an uncertain answer, back off and ask `landed` whether GitHub applied it after
    all (its result is returned when it did; None sends again). At most `client.max_retries` re-sends, then
    the last `GitHubUncertainError` is raised."""
    attempt = 0
    while True:
        try:
            return send()
        except GitHubUncertainError:
            if attempt >= client.max_retries:
                raise
            client.backoff(attempt)
            attempt += 1
        found = landed()
        if found is not None:
            return found
