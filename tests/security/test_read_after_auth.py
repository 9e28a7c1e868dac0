"""Authenticate, then read (issue #31, rows 2, 3 and 10), against the server on a real socket with the
production uvicorn configuration.

- Row 2: a wrong token on an upload was answered only after the whole body had been read, parsed and
  validated on the event loop (59 MiB: 403 after 7.1 s, /healthz stalled 6.6 s). Now the token is checked
  first and the answer closes the connection, so the body is never read; bodies that may be read are capped
  (413, unread beyond) and timed (408).
- Row 3: `POST /login` read any body whole (200 MiB: RSS 64 → 263 MiB). Now it is capped at 16 KiB.
- Row 10: `/metrics` was open to anyone; a 409 told an upload-token holder that another repository's run id
  existed. Now `/metrics` needs a token, and another repository's runs look exactly like runs that do not exist.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import delivery_headers, make_settings
from tests.server.production import ProductionServer, connect, head, read_answer, serve

from evalward._server.tokens import hash_token
from evalward.store import open_store

MIB = 1024 * 1024
UPLOAD_A = "ewt_upload-token-of-acme-dice"
UPLOAD_B = "ewt_upload-token-of-other-agent"
READ = "ewt_read-token"
METRICS = "ewt_metrics-token"
REPO_A = "acme/dice"
REPO_B = "other/agent"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ProductionServer]:
    db = f"sqlite:///{tmp_path / 'server.db'}"
    settings = make_settings(
        db,
        read_token_hashes=[hash_token(READ)],
        upload_token_hashes={REPO_A: [hash_token(UPLOAD_A)], REPO_B: [hash_token(UPLOAD_B)]},
        metrics_token_hashes=[hash_token(METRICS)],
        max_upload_bytes=4 * MIB,
        max_webhook_bytes=1 * MIB,
        body_timeout_s=1.0,
    )
    with open_store(db) as store, serve(settings, store) as live:
        yield live


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def ask_without_body(port: int, path: str, declared: int, headers: dict[str, str]) -> tuple[int, str, bool, float]:
    """Send only the head of a request declaring a `declared`-byte body: (status, message, closed, seconds).
    An answer at all proves the server did not wait for the body."""
    with connect(port) as sock:
        started = time.monotonic()
        sock.sendall(
            head("POST", path, {**headers, "Content-Type": "application/json", "Content-Length": str(declared)})
        )
        status, answer_headers, body, closed = read_answer(sock)
        elapsed = time.monotonic() - started
    assert answer_headers.get("connection") == "close", answer_headers
    return status, httpx.Response(status, content=body).json()["error"]["message"], closed, elapsed


# -- row 2: the token before the body ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "declared"),
    [("/api/v1/runs", 59 * MIB), ("/api/v1/runs/some-run/verdicts", 13 * MIB), ("/api/v1/runs/some-run/baseline", MIB)],
)
def test_a_wrong_or_missing_token_is_answered_before_the_body_is_read(
    server: ProductionServer, path: str, declared: int
) -> None:
    status, message, closed, seconds = ask_without_body(server.port, path, declared, bearer("junk"))
    assert status == 403 and "this token may not" in message
    assert closed and seconds < 2.0
    status, message, closed, _ = ask_without_body(server.port, path, declared, {})
    assert status == 401 and "required" in message and closed
    # A read token is no upload token: the verdict is refused as early.
    if path.endswith("/verdicts"):
        assert ask_without_body(server.port, path, declared, bearer(READ))[0] == 403


def test_an_unsigned_webhook_is_refused_before_its_body_is_read(server: ProductionServer) -> None:
    headers = delivery_headers("ping", b"", secret=None)
    status, message, closed, _ = ask_without_body(server.port, "/webhooks/github", 20 * MIB, headers)
    assert (status, closed) == (401, True) and "X-Hub-Signature-256" in message
    # A well-formed signature makes the body worth reading, up to max_webhook_bytes: over it is 413, unread.
    headers["X-Hub-Signature-256"] = "sha256=" + "0" * 64
    status, message, closed, _ = ask_without_body(server.port, "/webhooks/github", 20 * MIB, headers)
    assert (status, closed) == (413, True) and "larger than 1 MiB" in message
    # A real delivery still goes through.
    body = b'{"zen": "Design for failure."}'
    response = httpx.post(f"{server.url}/webhooks/github", content=body, headers=delivery_headers("ping", body))
    assert response.status_code == 200, response.text


def test_bodies_past_their_cap_are_413_unread_and_slow_bodies_408(server: ProductionServer) -> None:
    # The right token: a declared body over max_upload_bytes is refused before it is sent ...
    status, message, closed, _ = ask_without_body(server.port, "/api/v1/runs", 64 * MIB, bearer(UPLOAD_A))
    assert (status, closed) == (
        413,
        True,
    ) and message == "the run is larger than 4 MiB; the server did not read the rest"
    # ... and a chunked one as soon as it passes the cap.
    with connect(server.port) as sock:
        sock.sendall(head("POST", "/api/v1/runs", {**bearer(UPLOAD_A), "Transfer-Encoding": "chunked"}))
        sent = 0
        try:
            while sent < 64 * MIB:
                sock.sendall(chunked(b"x" * 65536))
                sent += 65536
        except OSError:  # the server answered and closed
            pass
        assert sent < 64 * MIB
    # A body that stops arriving: 408 once body_timeout_s (1 s here) has passed.
    with connect(server.port) as sock:
        started = time.monotonic()
        sock.sendall(head("POST", "/api/v1/runs", {**bearer(UPLOAD_A), "Content-Length": "1000"}) + b"{")
        status, _, _, closed = read_answer(sock)
        assert (status, closed) == (408, True) and 0.9 < time.monotonic() - started < 5


ATTACKER = """
import socket, sys, threading
port, size = int(sys.argv[1]), int(sys.argv[2])
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
block, attempts, most = b"x" * (1024 * 1024), 0, 0
while not stop.is_set():
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(("POST /api/v1/runs HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer junk\\r\\n"
                          f"Content-Type: application/json\\r\\nContent-Length: {size}\\r\\n\\r\\n").encode())
            while sent < size and not stop.is_set():
                sock.sendall(block)
                sent += len(block)
        except OSError:  # refused and closed: the rest is never read
            pass
    attempts, most = attempts + 1, max(most, sent)
    if attempts == 1:
        print("attacking", flush=True)
    stop.wait(0.01)  # the next 60 MiB upload: one attack after another, not a connection flood
print(attempts, most, flush=True)
"""


def test_healthz_stays_fast_while_a_60_mib_upload_with_a_bad_token_is_sent(server: ProductionServer) -> None:
    """The attacker of row 2, bounded: 60 MiB bodies with a bad token, one connection after another from
    another process, while /healthz is asked 100 times. Before: 403 after 7.1 s, /healthz stalled 6.6 s.

    The bound is 200 ms, or three times the p99 of the same probes without the attack when the machine is
    too loaded for that (the unfixed server stalls for seconds either way)."""

    def p99(values: list[float]) -> float:
        return sorted(values)[int(0.99 * len(values)) - 1]

    latencies: list[float] = []
    idle: list[float] = []
    with httpx.Client(base_url=server.url, timeout=10) as http:
        for _ in range(50):  # the same probes without an attack (the client's connection opens here too)
            started = time.perf_counter()
            assert http.get("/healthz").status_code == 200
            idle.append(time.perf_counter() - started)
            time.sleep(0.01)
        attacker = subprocess.Popen(
            [sys.executable, "-c", ATTACKER, str(server.port), str(60 * MIB)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert attacker.stdout is not None and attacker.stdout.readline().strip() == "attacking"
            for _ in range(100):
                started = time.perf_counter()
                assert http.get("/healthz").status_code == 200
                latencies.append(time.perf_counter() - started)
                time.sleep(0.01)  # pacing, not synchronisation: 100 probes over about 1.5 s of attack
            report, _ = attacker.communicate("", timeout=30)
        finally:
            if attacker.poll() is None:
                attacker.kill()
                attacker.communicate()
    attempts, most = (int(v) for v in report.split())
    ordered = sorted(latencies)
    print(  # the measured figures, shown with -rP
        f"/healthz under a 60 MiB bad-token upload: p50 {statistics.median(ordered) * 1000:.1f} ms, "
        f"p99 {p99(ordered) * 1000:.1f} ms, max {ordered[-1] * 1000:.1f} ms (without the attack: p50 "
        f"{statistics.median(idle) * 1000:.1f} ms, p99 {p99(idle) * 1000:.1f} ms); {attempts} attack connections, "
        f"at most {most / MIB:.0f} MiB sent on one before the server closed it"
    )
    assert p99(ordered) < max(0.2, 3 * p99(idle)), ordered[-5:]
    assert attempts >= 2 and most < 60 * MIB


# -- row 3: /login -------------------------------------------------------------------------------------------


def test_login_bodies_are_capped(server: ProductionServer) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, message, closed, seconds = ask_without_body(server.port, "/login", 200 * MIB, form)
    assert (status, closed) == (413, True) and seconds < 2.0
    assert message == "the request body is larger than 16 KiB; the server did not read the rest"
    with connect(server.port) as sock:  # no length declared: refused once 16 KiB have arrived
        sock.sendall(head("POST", "/login", {**form, "Transfer-Encoding": "chunked"}))
        sock.sendall(chunked(b"token=" + b"a" * 20_000))
        status, _, _, closed = read_answer(sock)
        assert (status, closed) == (413, True)
    with connect(server.port) as sock:  # and it must arrive within body_timeout_s
        sock.sendall(head("POST", "/login", {**form, "Content-Length": "100"}) + b"token=")
        status, _, _, closed = read_answer(sock)
        assert (status, closed) == (408, True)
    # A real sign-in still works.
    signed_in = httpx.post(f"{server.url}/login?next=/jobs", data={"token": READ})
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/jobs"


# -- row 10: /metrics and other repositories' run ids -----------------------------------------------------------


def test_metrics_need_a_token(server: ProductionServer) -> None:
    with httpx.Client(base_url=server.url) as http:
        closed = http.get("/metrics")
        assert closed.status_code == 401 and "metrics token" in closed.json()["error"]["message"]
        assert "evalward_jobs" not in closed.text
        assert http.get("/metrics", headers=bearer(UPLOAD_A)).status_code == 401
        for token in (METRICS, READ):
            opened = http.get("/metrics", headers=bearer(token))
            assert opened.status_code == 200 and "evalward_webhook_deliveries_total" in opened.text


def test_another_repositorys_run_ids_are_not_revealed(server: ProductionServer, tmp_path: Path) -> None:
    from tests.server.runs import dice_run

    from evalward.run_json import render_json

    with open_store(f"sqlite:///{tmp_path / 'action.db'}") as action_store:
        run_a = dice_run(action_store, tmp_path, run_id="nightly-1", repository=REPO_A, commit="a" * 40)
    context_b = run_a.context.model_copy(update={"repository": REPO_B})
    same_id_b = run_a.model_copy(update={"context": context_b})
    with httpx.Client(base_url=server.url, timeout=30) as http:

        def upload(run: object, token: str) -> httpx.Response:
            return http.post("/api/v1/runs", content=render_json(run), headers=bearer(token))  # type: ignore[arg-type]

        assert upload(run_a, UPLOAD_A).status_code == 201
        # The token's own repository: 409, "already uploaded" (evalward ci takes it as success).
        again = upload(run_a, UPLOAD_A)
        assert again.status_code == 409 and "already stored" in again.json()["error"]["message"]
        # Another repository's token with the same id: the answer a run id the server cannot use gets.
        taken = upload(same_id_b, UPLOAD_B)
        unusable = upload(same_id_b.model_copy(update={"run_id": "nightly/1"}), UPLOAD_B)
        assert (taken.status_code, unusable.status_code) == (422, 422)
        assert taken.json()["error"]["message"] == unusable.json()["error"]["message"].replace("nightly/1", "nightly-1")
        assert REPO_A not in taken.text
        # Verdicts and baseline queries on another repository's run: the answer of a run that is not stored.
        for suffix in ("verdicts", "baseline"):
            foreign = http.post(f"/api/v1/runs/nightly-1/{suffix}", json={}, headers=bearer(UPLOAD_B))
            missing = http.post(f"/api/v1/runs/no-such-run/{suffix}", json={}, headers=bearer(UPLOAD_B))
            assert (foreign.status_code, missing.status_code) == (404, 404)
            assert foreign.json()["error"]["message"] == missing.json()["error"]["message"].replace(
                "no-such-run", "nightly-1"
            )
        # The owner (and a reader) still reach it.
        assert http.post("/api/v1/runs/nightly-1/baseline", json={}, headers=bearer(UPLOAD_A)).status_code == 200
        assert http.post("/api/v1/runs/nightly-1/baseline", json={}, headers=bearer(READ)).status_code == 200
