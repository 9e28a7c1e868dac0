"""Assembling a running daemon from settings: the store (migrated) and the worker pool with its handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from evalward._server.evaluate import Handlers
from evalward._server.github_access import GitHubAccess
from evalward._server.settings import ServerSettings
from evalward._server.worker import WorkerOptions, WorkerPool
from evalward.store import open_store
from evalward.store.job_queue import JobQueue

if TYPE_CHECKING:
    from evalward._server.metrics import ServerMetrics
    from evalward.store import Store


def build_store(settings: ServerSettings) -> Store:
    return open_store(settings.db)


def build_pool(
    settings: ServerSettings,
    store: Store,
    *,
    metrics: ServerMetrics | None = None,
    transport_factory: Callable[[], Any] | None = None,
    github_options: Mapping[str, Any] | None = None,
) -> WorkerPool:
    """`settings.workers` worker threads running the production handlers, and their housekeeping between jobs
    (`Handlers.maintenance`: closing check runs of jobs that ended without their worker, removing stale job
    folders). `github_options`: extra `GitHubClient` arguments, e.g. a recording `sleep` in tests."""
    queue = JobQueue(store.engine, max_attempts=settings.max_attempts)
    handlers = Handlers(
        settings,
        store,
        queue,
        GitHubAccess(settings, transport_factory=transport_factory, client_options=dict(github_options or {})),
    )
    options = WorkerOptions(
        lease_s=settings.lease_s,
        heartbeat_s=settings.heartbeat_s,
        poll_s=settings.poll_s,
        max_per_repo=settings.max_jobs_per_repo,
        sweep_s=settings.sweep_s,
    )
    return WorkerPool(
        queue, handlers.table(), options, size=settings.workers, metrics=metrics, maintenance=handlers.maintenance
    )
