"""Start-up redelivery (docs/github.md §10): ask GitHub to resend the App's failed webhook deliveries we never got.

GitHub never redelivers by itself, and only deliveries of the past 3 days can be redelivered. So when the
web role starts with a GitHub App configured (and `redeliver_on_start`), a background thread:

1. waits `redeliver_delay_s` (`evalward serve` listens on its socket before the app starts, so what GitHub
   sends back meanwhile waits in the backlog; the delay only spares the first requests);
2. lists the App's deliveries (`GET /app/hook/deliveries`, JWT, 100 a page, newest first, cursor links)
   until they are older than 3 days — one item per attempt, redeliveries included, all sharing the GUID;
3. keeps the GUIDs none of whose attempts got a 2xx answer and which the database has not recorded
   (`webhook_deliveries`: the web role records every delivery it accepts);
4. asks GitHub to resend each (`POST /app/hook/deliveries/{id}/attempts`), oldest first, at most
   `redeliver_max` per start.

A resent delivery keeps its GUID and its body; the webhook handler's idempotent enqueue (jobs keyed by
repository, head SHA and eval set; re-runs and installation records by the SHA-256 of the signed body, which a
resend repeats byte for byte) turns a delivery that did reach us after all into no second job. Nothing
here delays start-up or stops the server: every error is logged and the thread ends.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evalward._server.logs import REDACTOR
from evalward.github.app_auth import app_jwt
from evalward.github.client import GitHubClient, GitHubError

if TYPE_CHECKING:
    from evalward._server.settings import ServerSettings
    from evalward.store.job_queue import JobQueue

log = logging.getLogger("evalward._server.redeliver")

REDELIVERY_WINDOW = timedelta(days=3)
"""GitHub redelivers only deliveries of the past 3 days."""
MAX_LISTED = 10_000
"""Stop listing after this many delivery attempts (100 pages), even when they are all recent."""


@dataclass
class RedeliveryReport:
    """What one start-up pass did."""

    listed: int = 0
    failed: list[str] = field(default_factory=list)
    """GUIDs with no successful attempt in the window, oldest first."""
    already_recorded: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _delivered_at(item: dict[str, Any]) -> datetime | None:
    raw = item.get("delivered_at")
    if not isinstance(raw, str):
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _succeeded(item: dict[str, Any]) -> bool:
    code = item.get("status_code")
    return isinstance(code, int) and 200 <= code < 300


def failed_deliveries(items: Iterable[dict[str, Any]], *, now: datetime, report: RedeliveryReport) -> dict[str, int]:
    """{GUID: the id of its newest attempt} for GUIDs without a 2xx attempt in the window, oldest GUID first.

    `items` come newest first; listing stops at the first one older than the window."""
    cutoff = now - REDELIVERY_WINDOW
    succeeded: set[str] = set()
    newest_attempt: dict[str, int] = {}
    for item in items:
        delivered = _delivered_at(item)
        if delivered is not None and delivered < cutoff:
            break
        report.listed += 1
        guid, delivery_id = item.get("guid"), item.get("id")
        if not isinstance(guid, str) or not guid or not isinstance(delivery_id, int):
            continue
        if _succeeded(item):
            succeeded.add(guid)
        newest_attempt.setdefault(guid, delivery_id)
        if report.listed >= MAX_LISTED:
            log.warning("redelivery: stopped listing after %d delivery attempts", report.listed)
            break
    failed = [(guid, attempt) for guid, attempt in newest_attempt.items() if guid not in succeeded]
    return dict(reversed(failed))


def redeliver_failed(
    client: GitHubClient,
    jwt: Callable[[], str],
    recorded: Callable[[list[str]], set[str]],
    *,
    now: datetime | None = None,
    max_requests: int = 200,
    stop: threading.Event | None = None,
) -> RedeliveryReport:
    """One pass of steps 2–4 of the module docstring; `recorded(guids)` answers which GUIDs the database has."""
    report = RedeliveryReport()
    moment = now or datetime.now(UTC)
    failed = failed_deliveries(client.list_app_hook_deliveries(jwt), now=moment, report=report)
    report.failed = list(failed)
    known = recorded(report.failed)
    report.already_recorded = [guid for guid in report.failed if guid in known]
    for guid, delivery_id in failed.items():
        if guid in known:
            continue
        if stop is not None and stop.is_set():
            break
        if len(report.requested) >= max_requests:
            log.warning("redelivery: request cap of %d reached; the rest stay failed in GitHub", max_requests)
            break
        try:
            client.redeliver_app_hook_delivery(delivery_id, jwt())
        except GitHubError as exc:
            report.errors.append(f"{guid}: {exc}")
            log.warning("redelivery of %s failed: %s", guid, exc, extra={"delivery": guid})
            continue
        report.requested.append(guid)
    return report


def start_redelivery(
    settings: ServerSettings, queue: JobQueue, *, transport_factory: Callable[[], Any] | None = None
) -> tuple[threading.Thread, threading.Event] | None:
    """Start the background pass when the settings ask for it; (thread, stop event), or None."""
    if settings.role == "worker" or not settings.redeliver_on_start or not settings.app_configured:
        return None
    stop = threading.Event()

    def run() -> None:
        if stop.wait(settings.redeliver_delay_s):
            return
        started = time.monotonic()
        try:
            key = settings.private_key_pem() or ""
            REDACTOR.add(key)
            transport = transport_factory() if transport_factory else None
            with GitHubClient(None, api_url=settings.github_api_url, transport=transport, max_retries=3) as client:
                report = redeliver_failed(
                    client,
                    lambda: app_jwt(str(settings.github_app_id), key),
                    queue.recorded_deliveries,
                    max_requests=settings.redeliver_max,
                    stop=stop,
                )
            queue.prune_deliveries(REDELIVERY_WINDOW * 2)
        except Exception as exc:  # a background nicety: never let it take the server down
            log.warning("redelivery at start-up failed: %s: %s", type(exc).__name__, exc)
            return
        log.info(
            "redelivery at start-up: %d attempts listed, %d failed deliveries, %d already received, %d resent",
            report.listed,
            len(report.failed),
            len(report.already_recorded),
            len(report.requested),
            extra={
                "redelivered": report.requested,
                "errors": report.errors,
                "seconds": round(time.monotonic() - started, 3),
            },
        )

    thread = threading.Thread(target=run, name="evalward-redeliver", daemon=True)
    thread.start()
    return thread, stop
