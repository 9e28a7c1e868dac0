"""A worker process for the queue tests: `python -m tests.server.queue_worker DB_URL LOG_DIR`.

It runs the real `Worker` loop with one handler, `probe`, that appends `start <job> <pid>` to
LOG_DIR/start.log, sleeps `payload["sleep_s"]`, then appends `done <job> <pid>` to LOG_DIR/done.log
(O_APPEND writes of one short line are atomic, so several processes can share the files). SIGTERM
stops it gracefully.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from evalward._server.worker import JobContext, Worker, WorkerOptions
from evalward.store import open_store
from evalward.store.job_queue import JobQueue


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main(db_url: str, log_dir: str, lease_s: float, heartbeat_s: float) -> None:
    logs = Path(log_dir)
    store = open_store(db_url, upgrade=False)

    def probe(ctx: JobContext) -> dict[str, int]:
        _append(logs / "start.log", f"start {ctx.job.id} {os.getpid()}")
        deadline = time.monotonic() + float(ctx.job.payload.get("sleep_s", 0))
        while time.monotonic() < deadline:
            ctx.check()
            time.sleep(0.01)
        _append(logs / "done.log", f"done {ctx.job.id} {os.getpid()}")
        return {"pid": os.getpid()}

    worker = Worker(
        JobQueue(store.engine),
        {"probe": probe},
        WorkerOptions(lease_s=lease_s, heartbeat_s=heartbeat_s, poll_s=0.05, max_per_repo=None),
    )
    signal.signal(signal.SIGTERM, lambda *_: worker.stop.set())
    _append(logs / "ready.log", str(os.getpid()))
    worker.run()
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
