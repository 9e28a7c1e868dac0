"""Webhook load: signed `pull_request` deliveries at a fixed rate against `evalward serve` on loopback.

Starts `evalward serve --role web` as its own process (SQLite in a temp folder unless `--db` names
another database), then sends `--rate` requests per second for `--seconds` seconds (default 100/s × 30 s
= 3,000), open loop: request i is sent at t0 + i/rate whether or not earlier ones were answered, so a
slow server shows up as latency rather than as a lower send rate. Each delivery is a real example payload
(`tests/fakes/data/webhooks/pull_request.opened.2.json`) with its own delivery id, head SHA and PR number,
spread over 50 repositories, signed with HMAC-SHA256; every 10th request is replayed with the same
delivery id, which must not create a job. Acknowledgement latency = time from sending a request to
reading its response.

Prints p50/p90/p99/max latency (goal: p99 ≤ 50 ms), the server's own view (its histogram of time spent
inside the webhook handler, which excludes the client and the HTTP stack) and checks that no delivery was lost: every request
was answered 202, and the jobs table holds exactly one job per distinct delivery.
Run: `python benchmarks/webhook_load.py [--rate 100] [--seconds 30] [--db URL]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "fakes" / "data" / "webhooks" / "pull_request.opened.2.json"
SECRET = "benchmark-secret"
REPOSITORIES = 50
REPLAY_EVERY = 10


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def delivery(template: dict[str, object], index: int) -> tuple[str, bytes]:
    payload = json.loads(json.dumps(template))
    pr = payload["pull_request"]
    sha = hashlib.sha1(f"head-{index}".encode()).hexdigest()
    repo = f"bench/repo-{index % REPOSITORIES}"
    pr["head"]["sha"] = sha
    pr["number"] = payload["number"] = 1000 + index
    payload["repository"]["full_name"] = repo
    pr["base"]["repo"]["full_name"] = pr["head"]["repo"]["full_name"] = repo
    return f"bench-{index:06d}", json.dumps(payload).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: str, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "EVALWARD_WEBHOOK_SECRET": SECRET,
        "EVALWARD_LOG_LEVEL": "WARNING",
        "EVALWARD_METRICS_PUBLIC": "true",
    }  # it reads /metrics, closed by default
    cmd = [sys.executable, "-m", "evalward", "serve", "--role", "web", "--port", str(port), "--db", db]
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


async def load(url: str, rate: float, seconds: float) -> tuple[list[float], list[int], set[str]]:
    template = json.loads(EXAMPLE.read_text())
    total = int(rate * seconds)
    latencies: list[float] = []
    statuses: list[int] = []
    deliveries: set[str] = set()
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def send(delivery_id: str, body: bytes) -> None:
            headers = {
                "X-GitHub-Event": "pull_request",
                "X-GitHub-Delivery": delivery_id,
                "X-Hub-Signature-256": sign(body),
                "Content-Type": "application/json",
            }
            started = time.perf_counter()
            response = await client.post("/webhooks/github", content=body, headers=headers)
            latencies.append(time.perf_counter() - started)
            statuses.append(response.status_code)

        tasks = []
        t0 = time.perf_counter()
        previous: tuple[str, bytes] | None = None
        for index in range(total):
            delay = t0 + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if index % REPLAY_EVERY == REPLAY_EVERY - 1 and previous is not None:
                item = previous  # GitHub redelivering the previous delivery
            else:
                item = delivery(template, index)
                deliveries.add(item[0])
            previous = item
            tasks.append(asyncio.create_task(send(*item)))
        await asyncio.gather(*tasks)
    return latencies, statuses, deliveries


def count_jobs(db: str) -> int:
    from sqlalchemy import func, select

    from evalward.store import open_store
    from evalward.store.schema import jobs_table

    with open_store(db) as store, store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(jobs_table)).scalar_one())


def server_buckets(metrics_text: str) -> dict[str, int]:
    """{le: cumulative count} of the server's own acknowledgement histogram (time inside the handler)."""
    found: dict[str, int] = {}
    for line in metrics_text.splitlines():
        if line.startswith("evalward_webhook_ack_seconds_bucket{"):
            le = line.split('le="')[1].split('"')[0]
            found[le] = int(float(line.rsplit(" ", 1)[1]))
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--db", help="database URL (default: a SQLite file in a temp folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="webhook-load-") as tmp:
        db = args.db or f"sqlite:///{Path(tmp) / 'load.db'}"
        port = free_port()
        server = start_server(db, port, Path(tmp))
        try:
            latencies, statuses, deliveries = asyncio.run(load(f"http://127.0.0.1:{port}", args.rate, args.seconds))
            buckets = server_buckets(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        jobs = count_jobs(db)
    ms = [v * 1000 for v in latencies]
    print(f"requests: {len(ms)} at {args.rate:g}/s for {args.seconds:g} s ({len(deliveries)} distinct deliveries)")
    print(
        f"ack latency ms: p50 {statistics.median(ms):.1f}  p90 {percentile(ms, 0.90):.1f}  "
        f"p99 {percentile(ms, 0.99):.1f}  max {max(ms):.1f}  (goal p99 <= 50)"
    )
    total = buckets.get("+Inf", 0) or 1
    shares = "  ".join(
        f"<= {float(le) * 1000:g} ms: {100 * buckets[le] / total:.1f}%" for le in ("0.005", "0.01", "0.05")
    )
    print(f"server-side handling (evalward_webhook_ack_seconds): {shares}")
    not_202 = [s for s in statuses if s != 202]
    print(f"answers: {len(statuses) - len(not_202)} × 202, {len(not_202)} other {sorted(set(not_202))}")
    print(f"jobs stored: {jobs} (expected {len(deliveries)}: one per distinct delivery, none for replays)")
    lost = len(not_202) > 0 or jobs != len(deliveries)
    print("no delivery lost" if not lost else "DELIVERIES LOST")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
