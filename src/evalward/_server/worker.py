"""Workers: threads that claim jobs from the queue, keep their lease alive, and run a handler per job kind.

One `Worker.run_once`:
1. `queue.claim(lease_s, max_per_repo)`; nothing → sleep `poll_s`;
2. a heartbeat thread extends the lease every `heartbeat_s` and, in between, looks every `cancel_poll_s`
   whether the job is still ours; when it is not (cancelled by a newer head SHA, or re-claimed after our
   lease expired) it sets `ctx.abort`, the handler kills its child processes (their process group) and
   stops, and the worker reports nothing;
3. the handler's result → `complete`; `RetryableJobError` (clone failed, GitHub unreachable) → back to
   `queued` while attempts remain; `JobHeld` (the author has no write access) → `held` until a maintainer
   approves; `JobRefused` (e.g. no sandbox) → `failed` with its message; any other exception → `failed`
   with the message (and a traceback in the log).
4. `maintenance` (the handlers' housekeeping: close the check runs of jobs that ended without their worker,
   remove job folders nobody holds) runs when the worker starts, after every job, and every `sweep_s`
   while it is idle.

Shutdown (`WorkerPool.stop(grace_s)`, on SIGTERM): no new claims; running jobs get `grace_s` to finish,
then are aborted and released (`queued`, attempt not counted) for another worker to take.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalward._server.metrics import ServerMetrics
from evalward.store.job_queue import ClaimedJob, JobQueue

log = logging.getLogger("evalward._server.worker")


class RetryableJobError(Exception):
    """A failure worth another attempt (network, clone, GitHub 5xx)."""


class JobAborted(Exception):
    """The job was cancelled or the worker is shutting down; nothing is reported."""


class JobHeld(Exception):
    """Not to be run until a maintainer approves it; the message says why (stored as the job's last error)."""


class JobRefused(Exception):
    """Never to be run as things are (no sandbox on this machine); the job fails with the message as its error."""


@dataclass
class JobContext:
    job: ClaimedJob
    abort: threading.Event
    worker_id: str
    shutting_down: threading.Event

    @property
    def aborted(self) -> bool:
        return self.abort.is_set() or self.shutting_down.is_set()

    def check(self) -> None:
        if self.aborted:
            raise JobAborted


Handler = Callable[[JobContext], Mapping[str, Any] | None]
Maintenance = Callable[[], object]


@dataclass
class WorkerOptions:
    lease_s: float = 60.0
    heartbeat_s: float = 10.0
    poll_s: float = 1.0
    max_per_repo: int | None = 2
    sweep_s: float = 30.0
    """An idle worker runs `maintenance` this often."""
    cancel_poll_s: float = 1.0
    """A running job is checked for cancellation this often (a read; the lease is written every `heartbeat_s`)."""


class Worker:
    """One claim-run-report loop; `run` until `stop` is set."""

    def __init__(
        self,
        queue: JobQueue,
        handlers: Mapping[str, Handler],
        options: WorkerOptions,
        *,
        metrics: ServerMetrics | None = None,
        worker_id: str | None = None,
        maintenance: Maintenance | None = None,
    ) -> None:
        self.queue = queue
        self.handlers = dict(handlers)
        self.options = options
        self.metrics = metrics
        self.worker_id = worker_id or uuid.uuid4().hex[:8]
        self.maintenance = maintenance
        self.stop = threading.Event()
        self.abort_running = threading.Event()
        self.current: ClaimedJob | None = None
        self._maintained = float("-inf")

    def run(self) -> None:
        self.maintain()
        while not self.stop.is_set():
            try:
                worked = self.run_once()
            except Exception:
                log.exception("worker %s: queue unavailable, retrying", self.worker_id)
                worked = False
            if worked or time.monotonic() - self._maintained >= self.options.sweep_s:
                self.maintain()
            if not worked:
                self.stop.wait(self.options.poll_s)

    def maintain(self) -> None:
        """Run `maintenance`, logging (not raising) its failures."""
        if self.maintenance is None:
            return
        self._maintained = time.monotonic()
        try:
            self.maintenance()
        except Exception:
            log.exception("worker %s: maintenance failed; trying again later", self.worker_id)

    def run_once(self) -> bool:
        """Claim and run one job; False when there was none."""
        job = self.queue.claim(
            lease_s=self.options.lease_s, max_per_repo=self.options.max_per_repo, kinds=list(self.handlers)
        )
        if job is None:
            return False
        self.current = job
        try:
            self._execute(job)
        finally:
            self.current = None
        return True

    def _execute(self, job: ClaimedJob) -> None:
        abort = threading.Event()
        lost = threading.Event()
        done = threading.Event()
        extra = {"job": job.id, "kind": job.kind, "repo": job.repo, "attempt": job.attempt, "worker": self.worker_id}

        def heartbeat() -> None:
            every = min(self.options.cancel_poll_s, self.options.heartbeat_s)
            beaten = time.monotonic()
            while not done.wait(every):
                try:
                    if time.monotonic() - beaten >= self.options.heartbeat_s:
                        beaten = time.monotonic()
                        ours = self.queue.heartbeat(job, lease_s=self.options.lease_s)
                    else:
                        ours = self.queue.still_ours(job)
                    if not ours:
                        lost.set()
                        abort.set()
                        return
                except Exception:
                    log.warning("heartbeat failed; retrying", extra=extra)
                if self.abort_running.is_set():
                    abort.set()

        beat = threading.Thread(target=heartbeat, name=f"heartbeat-{job.id}", daemon=True)
        beat.start()
        started = time.monotonic()
        status = "done"
        log.info("job started", extra=extra)
        try:
            result = self.handlers[job.kind](JobContext(job, abort, self.worker_id, self.abort_running))
            if not self.queue.complete(job, result=dict(result or {})):
                status = "lost"
        except JobAborted:
            if lost.is_set():
                status = "lost"
            else:
                status = "released"
                self.queue.release(job)
        except JobHeld as exc:
            status = "held"
            self.queue.hold(job, str(exc))
        except JobRefused as exc:
            status = "failed"
            log.error("job refused: %s", exc, extra=extra)
            self.queue.fail(job, str(exc), retry=False)
        except RetryableJobError as exc:
            status = "retry"
            self.queue.fail(job, f"{type(exc).__name__}: {exc}", retry=True)
        except Exception as exc:
            status = "failed"
            log.error("job failed", extra={**extra, "error": traceback.format_exc(limit=5)})
            self.queue.fail(job, f"{type(exc).__name__}: {exc}", retry=False)
        finally:
            done.set()
            beat.join(timeout=5)
        elapsed = time.monotonic() - started
        if self.metrics is not None:
            self.metrics.jobs_finished.inc(kind=job.kind, status=status)
            self.metrics.job_seconds.observe(elapsed, kind=job.kind)
        log.info("job %s", status, extra={**extra, "seconds": round(elapsed, 3)})


@dataclass
class WorkerPool:
    """N worker threads in this process."""

    queue: JobQueue
    handlers: Mapping[str, Handler]
    options: WorkerOptions
    size: int = 1
    metrics: ServerMetrics | None = None
    maintenance: Maintenance | None = None
    workers: list[Worker] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    @property
    def busy(self) -> int:
        return sum(1 for w in self.workers if w.current is not None)

    def start(self) -> None:
        for index in range(self.size):
            worker = Worker(
                self.queue,
                self.handlers,
                self.options,
                metrics=self.metrics,
                worker_id=f"{uuid.uuid4().hex[:6]}-{index}",
                maintenance=self.maintenance,
            )
            thread = threading.Thread(target=worker.run, name=f"evalward-worker-{index}", daemon=True)
            self.workers.append(worker)
            self.threads.append(thread)
            thread.start()
        log.info("workers started", extra={"workers": self.size})

    def stop(self, grace_s: float) -> None:
        """Stop claiming; give running jobs `grace_s`, then abort and release them."""
        for worker in self.workers:
            worker.stop.set()
        deadline = time.monotonic() + grace_s
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self.threads):
            log.warning("grace period over: releasing running jobs")
            for worker in self.workers:
                worker.abort_running.set()
            for thread in self.threads:
                thread.join(timeout=30)
        log.info("workers stopped")
