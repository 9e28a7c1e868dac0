"""The ASGI application of `evalward serve` (Starlette): webhooks, health, metrics, API and dashboard.

The web role only verifies, deduplicates and inserts job rows (and records the delivery's GUID), so a
webhook is acknowledged in milliseconds; workers (threads started by the lifespan in roles `worker`/`all`,
or other processes and hosts sharing the database) do the work.

With a GitHub App configured, the web role's start-up also asks GitHub to resend the failed deliveries
of the last 3 days it never recorded (`redeliver.py`), in a background thread.

A signed webhook is still input from outside: its headers, JSON shape and identifiers are checked
(`boundary.py`, `github/events.py`) before anything is queued, and each refusal is a 400 with the reason.

Authenticate, then read: a webhook's body is streamed up to `max_webhook_bytes` (413 beyond, unread) and its
signature verified before the JSON is parsed; large bodies are verified and parsed in a worker thread. Other
routes' bodies are capped by `boundary.BodyGuard`; the API's tokens are checked before their bodies are read
(`api.py`). `/metrics` needs a metrics or read token unless `metrics_public` is set.

Routes: `POST /webhooks/github`, `GET /healthz`, `GET /metrics`, `GET /openapi.json`, `/api/v1/…`
(see `api.py`), and the dashboard at `/` (see `dashboard.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from evalward._server.api import api_routes, evalward_error_handler
from evalward._server.boundary import (
    KIB,
    BadRequest,
    BodyGuard,
    BodyTimeout,
    PayloadTooLarge,
    RequestLineGuard,
    check_action,
    check_delivery_id,
    check_event_name,
    error_response,
    load_json,
    off_loop,
    read_body_capped,
)
from evalward._server.case_page import case_routes
from evalward._server.compare_page import compare_routes
from evalward._server.dashboard import dashboard_routes, error_page, static_mount
from evalward._server.metrics import ServerMetrics, gauge_lines, webhook_event_label
from evalward._server.pr_page import pr_routes
from evalward._server.redeliver import start_redelivery
from evalward._server.settings import ServerSettings
from evalward._server.tokens import bearer_token, token_matches
from evalward._server.webhooks import WebhookPlan, plan_delivery, verify_signature, well_formed_signature
from evalward.errors import EvalwardError
from evalward.github.events import EventPayloadError
from evalward.store.job_queue import Enqueued, JobQueue, ValueRefused
from evalward.store.job_supersede import CLOSED, SUPERSEDED

if TYPE_CHECKING:
    from evalward._server.worker import WorkerPool
    from evalward.store import Store

log = logging.getLogger("evalward._server")


@dataclass
class ServerState:
    """What every request handler can reach (`request.app.state.server`)."""

    settings: ServerSettings
    store: Store
    queue: JobQueue
    metrics: ServerMetrics = field(default_factory=ServerMetrics)
    pool: WorkerPool | None = None
    started_at: float = field(default_factory=time.time)
    redelivery: threading.Thread | None = None
    """The start-up redelivery thread, when one was started."""


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


LOGIN_BODY_LIMIT = 16 * KIB
GZIP_MINIMUM_BYTES = 1024
"""Smaller answers are sent as they are (compressing them costs more than it saves)."""
"""`POST /login` carries one form field, the read token."""

OWN_BODY_LIMITS = ("/webhooks/github", "/api/v1/runs")
"""Routes whose handlers authenticate and then read their bodies with their own caps (`BodyGuard` leaves
them alone): the webhook (`max_webhook_bytes`), runs (`max_upload_bytes`), verdicts and baseline queries."""


def _payload_of(body: bytes, content_type: str) -> Any:
    """The JSON payload (depth-limited, no NUL characters: `boundary.load_json`); form-encoded deliveries
    (`payload=<json>`) are accepted too. Raises `BadRequest`."""
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        try:
            fields = parse_qs(body.decode("utf-8"), strict_parsing=False)
        except UnicodeDecodeError as exc:
            raise BadRequest(f"the body is not UTF-8: {exc}") from None
        body = fields.get("payload", [""])[0].encode("utf-8")
    return load_json(body)


def record(queue: JobQueue, delivery: str, event: str, payload: dict[str, Any], outcome: str) -> None:
    """Remember the delivery's GUID; a failure only costs a needless redelivery later, so it is logged."""
    action = payload.get("action")
    try:
        queue.record_delivery(
            delivery, event=event, action=action if isinstance(action, str) else None, outcome=outcome
        )
    except Exception:
        log.warning("webhook: could not record the delivery", extra={"delivery": delivery, "event": event})


def carry_out(queue: JobQueue, plan: WebhookPlan) -> tuple[list[Enqueued], list[int], list[int]]:
    """Apply a plan: (enqueued, released job ids, cancelled job ids).

    A PR job that the queue records cancelled at once (a newer push of the PR, or its close, is known: this
    delivery came late) ends the plan there: the jobs after it (a fork's notice) would speak for a head that is no
    longer the PR's. The plan's note says so, for the answer and the log; so it does when the delivery revived its
    head's job, cancelled by a newer push or the close (the PR is back at that head: `store/job_supersede.py`)."""
    released: list[int] = []
    if plan.release is not None:
        released = queue.release_held(*plan.release, updates=plan.release_updates)
        if released:
            return [], released, []
    enqueued: list[Enqueued] = []
    cancelled: list[int] = []
    for index, spec in enumerate(plan.jobs):
        supersede = None
        if index == 0 and plan.cancel_pr is not None:
            keep = plan.cancel_pr[2]
            supersede = (plan.cancel_pr[1], f"{SUPERSEDED}{keep[:12]}" if keep else CLOSED)
        enqueued.append(queue.enqueue(spec, supersede=supersede))
        cancelled += enqueued[-1].cancelled
        if enqueued[-1].revived:
            plan.note += "; the head's cancelled job runs again (this event is the PR's newest)"
        if enqueued[-1].superseded is not None:
            plan.note += f"; recorded cancelled at once, {enqueued[-1].superseded} (a newer event of the PR is known)"
            break
    if plan.cancel_pr is not None and not plan.jobs:
        repo, number, keep = plan.cancel_pr
        cancelled = queue.cancel_pr_jobs(repo, number, keep_head_sha=keep, reason=CLOSED, closed=plan.closed)
    return enqueued, released, cancelled


class _Refused(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


def _plan_of(
    body: bytes, content_type: str, event: str, delivery: str, settings: ServerSettings
) -> tuple[dict[str, Any], WebhookPlan]:
    """The verified body parsed and planned: (payload, plan); `_Refused` (a 400) for a body that is not a
    well-formed delivery. Pure CPU work, run in a worker thread for large bodies."""
    try:
        payload = _payload_of(body, content_type)
    except BadRequest as exc:
        raise _Refused("bad_json", str(exc)) from None
    if not isinstance(payload, dict):
        raise _Refused("bad_json", f"expected a JSON object, found {type(payload).__name__}")
    try:
        check_action(payload)
        plan = plan_delivery(
            event,
            delivery,
            payload,
            run_label=settings.run_label,
            check_name=settings.check_name,
            base_branches=settings.base_branches,
            body_digest=hashlib.sha256(body).hexdigest(),
        )
    except (EventPayloadError, BadRequest) as exc:
        raise _Refused("bad_payload", str(exc)) from None
    return payload, plan


async def github_webhook(request: Request) -> Response:
    state = state_of(request)
    settings = state.settings
    started = time.perf_counter()
    event = request.headers.get("x-github-event", "")
    delivery = request.headers.get("x-github-delivery", "")
    verified = False

    def answer(status: int, outcome: str, body: dict[str, Any]) -> Response:
        # The event header is only trusted once the signature is; either way it names one of a fixed set
        # of series, so a flood of made-up events cannot grow /metrics.
        state.metrics.webhooks.inc(event=webhook_event_label(event, verified=verified), outcome=outcome)
        state.metrics.webhook_seconds.observe(time.perf_counter() - started)
        if status >= 400:
            return error_response(status, str(body.get("message", outcome)), delivery=delivery or None)
        return JSONResponse(body, status_code=status)

    secrets = [s.get_secret_value() for s in settings.webhook_secrets]
    if not secrets:
        return answer(503, "unconfigured", {"message": "no webhook secret is configured (EVALWARD_WEBHOOK_SECRET)"})
    presented = request.headers.get("x-hub-signature-256")
    if not well_formed_signature(presented):
        return answer(401, "bad_signature", {"message": "missing or invalid X-Hub-Signature-256"})
    try:
        body = await read_body_capped(
            request, settings.max_webhook_bytes, timeout_s=settings.body_timeout_s, what="the payload"
        )
    except PayloadTooLarge as exc:
        return answer(413, "too_large", {"message": str(exc)})
    except BodyTimeout as exc:
        return answer(408, "too_slow", {"message": str(exc)})
    if not await off_loop(len(body), verify_signature, secrets, body, presented):
        return answer(401, "bad_signature", {"message": "missing or invalid X-Hub-Signature-256"})
    verified = True
    if not event or not delivery:
        delivery = ""
        return answer(400, "bad_headers", {"message": "X-GitHub-Event and X-GitHub-Delivery are required"})
    try:
        check_event_name(event)
        check_delivery_id(delivery)
    except BadRequest as exc:
        delivery = ""  # not echoed back: it is what was wrong
        return answer(400, "bad_headers", {"message": str(exc)})
    content_type = request.headers.get("content-type", "application/json")
    try:
        payload, plan = await off_loop(len(body), _plan_of, body, content_type, event, delivery, settings)
    except _Refused as exc:
        return answer(400, exc.outcome, {"message": str(exc)})
    if not plan.jobs and plan.release is None and plan.cancel_pr is None:
        status = 200 if event == "ping" else 202
        outcome = "ignored" if event != "ping" else "ping"
        await run_in_threadpool(record, state.queue, delivery, event, payload, outcome)
        return answer(status, outcome, {"delivery": delivery, "note": plan.note})
    try:
        enqueued, released, cancelled = await run_in_threadpool(carry_out, state.queue, plan)
    except ValueRefused:
        # The boundary checks should leave nothing for the database to refuse; if it still does, the
        # delivery is at fault, not the queue, and GitHub must not be told to retry it as an outage.
        log.warning("webhook: the database refused a value", extra={"delivery": delivery, "event": event})
        return answer(400, "bad_payload", {"message": "the database refused a value of this delivery"})
    except Exception:
        log.exception("webhook: could not enqueue", extra={"delivery": delivery, "event": event})
        return answer(503, "db_error", {"message": "the job queue is unavailable; GitHub will show a failed delivery"})
    duplicate = bool(enqueued) and not any(e.created or e.released for e in enqueued)
    await run_in_threadpool(record, state.queue, delivery, event, payload, "duplicate" if duplicate else "enqueued")
    log.info(
        "webhook %s: %s",
        event,
        plan.note,
        extra={"delivery": delivery, "jobs": [e.job_id for e in enqueued], "duplicate": duplicate},
    )
    return answer(
        202,
        "duplicate" if duplicate else "enqueued",
        {
            "delivery": delivery,
            "note": plan.note,
            "duplicate": duplicate,
            "jobs": [{"id": e.job_id, "created": e.created, "status": e.status} for e in enqueued],
            "released": released,
            "cancelled": cancelled,
        },
    )


async def healthz(request: Request) -> Response:
    state = state_of(request)
    try:
        await run_in_threadpool(state.queue.counts)
    except Exception as exc:
        return JSONResponse({"status": "unhealthy", "database": f"unreachable: {type(exc).__name__}"}, status_code=503)
    pool = state.pool
    return JSONResponse(
        {
            "status": "ok",
            "role": state.settings.role,
            "workers": pool.size if pool is not None else 0,
            "uptime_s": round(time.time() - state.started_at, 3),
        }
    )


def metrics_allowed(request: Request) -> bool:
    """`/metrics` is closed unless `metrics_public`: a metrics token or a read token opens it."""
    settings = state_of(request).settings
    if settings.metrics_public:
        return True
    token = bearer_token(request.headers.get("authorization"))
    return token_matches(token, [*settings.metrics_token_hashes, *settings.read_token_hashes])


async def metrics_endpoint(request: Request) -> Response:
    state = state_of(request)
    if not metrics_allowed(request):
        return error_response(
            401,
            "a metrics token is required: send `Authorization: Bearer <token>` "
            "(configure metrics_token_hashes, or metrics_public = true)",
        )
    extra: list[list[str]] = []
    try:
        counts = await run_in_threadpool(state.queue.counts)
        extra.append(
            gauge_lines(
                "evalward_jobs",
                "Jobs in the queue by kind and status.",
                {(("kind", k), ("status", s)): float(n) for (k, s), n in counts.items()},
            )
        )
    except Exception:
        log.warning("metrics: job counts unavailable")
    if state.pool is not None:
        extra.append(
            gauge_lines("evalward_workers_busy", "Worker threads running a job.", {(): float(state.pool.busy)})
        )
    return PlainTextResponse(state.metrics.render(extra), media_type="text/plain; version=0.0.4; charset=utf-8")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith(("/api/", "/webhooks/", "/openapi")) or "text/html" not in request.headers.get(
        "accept", ""
    ):
        return error_response(exc.status_code, str(exc.detail))

    return error_page(request, exc.status_code, str(exc.detail))


async def _database_refused(request: Request, exc: Exception) -> Response:
    """A value the database refuses (too long, NUL for PostgreSQL) is the request's fault: 422, not 500.
    The boundary checks should catch such values first; the log says which request slipped through."""
    log.warning("the database refused a value on %s %s: %s", request.method, request.url.path, type(exc).__name__)
    return error_response(422, "the database refused a value of this request (too long or not storable text)")


async def _server_error(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error; see the server log")


def create_app(
    settings: ServerSettings,
    store: Store,
    *,
    pool_factory: Callable[[ServerState], WorkerPool] | None = None,
    transport_factory: Callable[[], Any] | None = None,
) -> Starlette:
    """The application. With `pool_factory`, worker threads start with the app and stop (gracefully) with it.

    Start-up redelivery (`redeliver.py`) runs in a thread when the settings ask for it; `transport_factory`
    gives its GitHub client an httpx transport (tests)."""
    state = ServerState(
        settings=settings, store=store, queue=JobQueue(store.engine, max_attempts=settings.max_attempts)
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if pool_factory is not None:
            state.pool = pool_factory(state)
            state.pool.start()
        redelivery = start_redelivery(settings, state.queue, transport_factory=transport_factory)
        state.redelivery = redelivery[0] if redelivery else None
        try:
            yield
        finally:
            if redelivery is not None:
                redelivery[1].set()
                await run_in_threadpool(redelivery[0].join, 10)
            if state.pool is not None:
                await run_in_threadpool(state.pool.stop, settings.shutdown_grace_s)

    routes: list[Any] = [
        Route("/webhooks/github", github_webhook, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        *api_routes(),
        *dashboard_routes(),
        *case_routes(),
        *compare_routes(),
        *pr_routes(),
        static_mount(),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(
                BodyGuard,
                timeout_s=settings.body_timeout_s,
                own_limits=OWN_BODY_LIMITS,
                limits={"/login": LOGIN_BODY_LIMIT},
            ),
            Middleware(RequestLineGuard, max_header_bytes=settings.max_header_bytes),
            # Pages and API answers compressed for clients that ask (a 2,000-case run page is ~60 KB of HTML).
            Middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES),
        ],
        lifespan=lifespan,
        exception_handlers={
            HTTPException: _http_error,
            EvalwardError: evalward_error_handler,
            ValueRefused: _database_refused,
            Exception: _server_error,
        },
    )
    app.state.server = state
    return app
