"""The daemon under fire: signed webhook deliveries while its web and worker processes are killed with `kill -9`.

Issue #31's load test, bounded and on 127.0.0.1. It starts one `evalward serve --role web` and two
`evalward serve --role worker` processes on one database (a throwaway PostgreSQL database, created on the
server and dropped at the end, unless `--db` names one), with a fake GitHub (`tests/fakes/github_server.py`)
in this process and bare git repositories under a temp folder: each holds the dice agent and its two-case
eval set on `main`, and one branch per pull request with a commit per push. The workers really clone,
evaluate in the sandbox (bubblewrap where it works here, else unsandboxed), gate and report.

Deliveries are sent open loop at `--rate` per second (request i leaves at t0 + i/rate whatever happened to
the earlier ones): first a push to `main` per repository (a baseline job), then `opened` and many
`synchronize` events with a new head SHA spread over the pull requests — each newer push supersedes the
pull request's older-head jobs; as on GitHub, each push's `pull_request.updated_at` is later than the one
before (a second per delivery), so the daemon can tell the newest push from the newest delivery — and about
10 % replays of an earlier delivery id with the same body, which must create nothing. A few pull requests are by an author without write access: their jobs end `held`.
Meanwhile, at spread-out moments, the web process is killed with SIGKILL and restarted at once (a delivery
refused or reset while it is down is resent with the same id and body once it answers, as GitHub's
redelivery would; these are counted apart and are not 5xx), and a worker process — one running a job,
when one is — is killed and restarted. Then it waits (`--drain-s`) until every job is final and no check
run is open, stops the processes with SIGTERM and checks:

- lost: a distinct delivery never answered, a job key sent but no job row, a PR with a finished
  evaluation but no evalward comment — 0;
- duplicated: more than one job row or `done` per key, more than one evalward comment per PR, more than
  one check run per job, a PR seen with two heads' jobs open at once (the open jobs are looked at every
  0.2 s while it runs: a newer head's job must cancel the others as it is created) — 0;
- stuck: a job still queued or running, a PR whose newest push's job was cancelled — in particular by an older
  push's delivery arriving after it (a resend after a kill, or a request overtaken by a later one): the newest
  push must win whatever order the deliveries arrive in — a job row whose check run is still marked open — 0; `held` jobs are counted apart (final until a maintainer approves);
- check runs left `queued`/`in_progress` at the fake GitHub — 0; answers ≥ 500 — 0;
- left behind: checkout folders under the work dir, a killed worker's processes still alive or any process
  still running from the temp folder, a process that never came back after its kill or did not stop
  cleanly on SIGTERM — 0;

and reports the acknowledgement latency (p50/p90/p99/max of first attempts, resends excluded; and of those
sent away from a web restart, as the resends arrive in a burst when it answers again), jobs by status,
check runs by conclusion, the commit and the load average at start and end. Exits 1 when a must-be-zero
figure is not zero.

Run: `python benchmarks/daemon_under_fire.py` (1,000 deliveries at 25/s, 3 kills of the web and 3 of a
worker: 1–2 minutes on 2 cores, more on a busy machine). Options: `--deliveries`, `--rate`, `--web-kills`,
`--worker-kills`, `--db URL` (an existing database, kept), `--postgres URL` (the server to make the
throwaway database on; default `EVALWARD_TEST_POSTGRES_URL`, else postgres@127.0.0.1:5432), `--sqlite`,
`--keep` (keep the temp folder with the processes' logs); `--help` lists the rest.
`tests/server/test_daemon_under_fire.py` runs a small version.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import hashlib
import hmac
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the fake GitHub and the sandbox probe live in tests/

from tests.fakes.github_server import FakeGitHub, app_keys  # noqa: E402

WEBHOOKS = ROOT / "tests" / "fakes" / "data" / "webhooks"
DICE = ROOT / "examples" / "dice_agent"
SECRET = "daemon-under-fire"
INSTALLATION = 31
AUTHOR, OUTSIDER = "dev", "drive-by"
MARKER = "<!-- evalward:evalward/default -->"
FINAL = ("done", "failed", "cancelled")
PUSHED_FROM = datetime(2025, 1, 1, tzinfo=UTC)
"""The `pull_request.updated_at` of the first delivery; each later one is a second later (GitHub's are seconds)."""
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class Options:
    deliveries: int = 1000
    rate: float = 25.0
    repos: int = 6
    prs_per_repo: int = 8
    held_prs: int = 2
    """Pull requests by an author without write access (their jobs end `held`)."""
    replay_share: float = 0.1
    web_kills: int = 3
    worker_kills: int = 3
    worker_processes: int = 2
    threads: int = 1
    lease_s: float = 3.0
    drain_s: float = 480.0
    seed: int = 31
    db: str | None = None
    """An existing database to use (kept); None: a throwaway one on `postgres`, or SQLite with `sqlite`."""
    postgres: str | None = None
    sqlite: bool = False
    keep: bool = False
    verbose: bool = True


@dataclass(frozen=True)
class Delivery:
    guid: str
    event: str
    body: bytes
    key: str
    """The job key the delivery must create (`evaluate:…` / `baseline:…`)."""
    repo: str
    pr: int | None


@dataclass
class Sent:
    delivery: Delivery
    replay: bool
    status: int | None = None
    latency_s: float | None = None
    """First attempt's acknowledgement time; None when it had to be resent."""
    sent_at_s: float = 0.0
    """When its first attempt left (seconds after the first delivery)."""
    resends: int = 0
    failed_at_s: float | None = None
    """When its first attempt was refused or reset (seconds after the first delivery)."""
    duplicate: bool = False


@dataclass
class Kill:
    what: str
    at_s: float
    pid: int
    busy: bool = False
    down_s: float | None = None
    """How long until the restarted process was up again: the web answering, the worker's threads started."""
    tree: list[tuple[int, str]] = field(default_factory=list)
    """(pid, start time) of the killed worker's descendants, to check they died with it."""


@dataclass
class Report:
    header: list[str]
    lines: list[str]
    must_be_zero: dict[str, int]
    figures: dict[str, Any]

    @property
    def problems(self) -> dict[str, int]:
        return {name: value for name, value in self.must_be_zero.items() if value}


# -- repositories and deliveries ---------------------------------------------------------------------------


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(cwd), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def make_repository(root: Path, repo: str, pushes: dict[int, int]) -> tuple[str, dict[int, list[str]]]:
    """A bare repository at root/git/{repo}.git: `main` with the dice agent and its evals, and a branch `pr-N`
    with `pushes[N]` empty commits on top of main (one per push). Returns (main SHA, {N: the pushes' SHAs})."""
    work = root / "src" / repo
    (work / "evals").mkdir(parents=True)
    for name in ("dice.evalset.json", "test_config.json"):
        shutil.copy(DICE / name, work / "evals" / name)
    shutil.copy(DICE / "agent.py", work / "agent.py")
    (work / "evalward.toml").write_text('paths = ["evals"]\nagent = "agent.py:root_agent"\nbase_branch = "main"\n')
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "dice agent")
    main = git(work, "rev-parse", "HEAD")
    bare = root / "git" / f"{repo}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    stream: list[str] = []
    marks: dict[int, list[int]] = {}
    for number, count in pushes.items():
        for push in range(count):
            mark = len(stream) + 1
            message = f"push {push + 1} to #{number}\n"
            parent = f"from {main}\n" if push == 0 else ""
            stream.append(
                f"commit refs/heads/pr-{number}\nmark :{mark}\ncommitter t <t@e> {1_700_000_000 + mark} +0000\n"
                f"data {len(message)}\n{message}{parent}\n"
            )
            marks.setdefault(number, []).append(mark)
    shas: dict[str, str] = {}
    if stream:
        exported = root / "src" / f"{repo.replace('/', '_')}.marks"
        git(bare, "fast-import", "--quiet", f"--export-marks={exported}", stdin="".join(stream))
        shas = dict(line.split() for line in exported.read_text().splitlines())
    return main, {number: [shas[f":{m}"] for m in ms] for number, ms in marks.items()}


def pr_body(
    template: dict[str, Any], repo: str, number: int, head: str, base: str, action: str, author: str, updated_at: str
) -> bytes:
    """A `pull_request` delivery; `updated_at` is when the push happened, as GitHub stamps it (ISO 8601, seconds)."""
    payload = copy.deepcopy(template)
    payload.update({"action": action, "number": number, "installation": {"id": INSTALLATION}})
    payload["repository"]["full_name"] = repo
    payload["sender"]["login"] = author
    pr = payload["pull_request"]
    pr.update({"number": number, "labels": [], "draft": False, "updated_at": updated_at})
    pr["user"]["login"] = author
    pr["head"].update({"sha": head, "ref": f"pr-{number}"})
    pr["head"]["repo"]["full_name"] = repo
    pr["base"].update({"sha": base, "ref": "main"})
    pr["base"]["repo"]["full_name"] = repo
    return json.dumps(payload).encode()


def push_body(template: dict[str, Any], repo: str, sha: str) -> bytes:
    payload = copy.deepcopy(template)
    payload.update({"ref": "refs/heads/main", "after": sha, "installation": {"id": INSTALLATION}})
    payload["repository"].update({"full_name": repo, "default_branch": "main"})
    return json.dumps(payload).encode()


def plan(options: Options, root: Path) -> tuple[list[tuple[Delivery, bool]], set[tuple[str, int]]]:
    """The deliveries in sending order, each with whether it is a replay; and the PRs by an outsider."""
    rng = random.Random(options.seed)
    repos = [f"fire/repo-{i}" for i in range(options.repos)]
    prs = [(repo, n) for repo in repos for n in range(1, options.prs_per_repo + 1)]
    outsiders = set(prs[options.prs_per_repo - 1 :: options.prs_per_repo][: options.held_prs])
    slots: list[tuple[str, int] | int | str] = []  # a PR's next push, a replay of slot i, or a repo's push
    originals: list[int] = []
    pushes: Counter[tuple[str, int]] = Counter()
    for index in range(options.deliveries):
        if index >= len(repos) and rng.random() < options.replay_share:
            slots.append(rng.choice(originals))
            continue
        originals.append(index)
        if index < len(repos):
            slots.append(repos[index])
        else:
            pr = rng.choice(prs)
            pushes[pr] += 1
            slots.append(pr)
    mains: dict[str, str] = {}
    heads: dict[tuple[str, int], list[str]] = {}
    for repo in repos:
        mains[repo], found = make_repository(root, repo, {n: pushes[(r, n)] for r, n in prs if r == repo})
        heads.update({(repo, n): shas for n, shas in found.items()})
    pr_template = json.loads((WEBHOOKS / "pull_request.opened.2.json").read_text())
    push_template = json.loads((WEBHOOKS / "push.event.2.json").read_text())
    out: list[tuple[Delivery, bool]] = []
    nth: Counter[tuple[str, int]] = Counter()
    for index, slot in enumerate(slots):
        guid = f"fire-{index:05d}-{secrets.token_hex(4)}"
        if isinstance(slot, int):
            out.append((out[slot][0], True))
            continue
        if isinstance(slot, str):
            body = push_body(push_template, slot, mains[slot])
            out.append((Delivery(guid, "push", body, f"baseline:{slot}:{mains[slot]}:default", slot, None), False))
            continue
        repo, number = slot
        head = heads[slot][nth[slot]]
        action = "opened" if nth[slot] == 0 else "synchronize"
        nth[slot] += 1
        author = OUTSIDER if slot in outsiders else AUTHOR
        # A push made later has a later updated_at (a replay repeats its original's body, time included).
        pushed_at = (PUSHED_FROM + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = pr_body(pr_template, repo, number, head, mains[repo], action, author, pushed_at)
        out.append((Delivery(guid, "pull_request", body, f"evaluate:{repo}:{head}:default", repo, number), False))
    return out, outsiders


# -- processes ------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_table() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, start time)} of every process."""
    table: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                table[int(entry.name)] = (int(fields[1]), fields[19])
    return table


def descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, start time) of every process below `pid`."""
    table = process_table()
    found: list[tuple[int, str]] = []
    parents = {pid}
    while True:
        more = [(p, start) for p, (ppid, start) in table.items() if ppid in parents and p not in parents]
        if not more:
            return found
        found += more
        parents |= {p for p, _ in more}


def still_alive(tree: list[tuple[int, str]]) -> list[int]:
    """Those of `tree` that are still running (the same process: same pid and start time, not a zombie)."""
    table = process_table()
    alive = []
    for pid, start in tree:
        if table.get(pid, (0, ""))[1] == start:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    alive.append(pid)
    return alive


class Daemon:
    """The web process and the worker processes, started, killed and restarted by this benchmark."""

    def __init__(self, root: Path, db: str, github: FakeGitHub, private_key: str, options: Options) -> None:
        from tests.server.chaos import sandbox_setting

        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.work = root / "jobs"
        self.logs = root / "logs"
        self.logs.mkdir()
        common = {**os.environ, "EVALWARD_DB": db, "EVALWARD_LOG_FORMAT": "text", "EVALWARD_MAX_ATTEMPTS": "3"}
        self.web_env = {**common, "EVALWARD_WEBHOOK_SECRET": SECRET, "EVALWARD_LOG_LEVEL": "WARNING"}
        self.worker_env = {
            **common,
            "EVALWARD_GITHUB_APP_ID": github.app_id,
            "EVALWARD_GITHUB_PRIVATE_KEY": private_key,
            "EVALWARD_GITHUB_API_URL": github.url,
            "EVALWARD_CLONE_URL_TEMPLATE": f"file://{root}/git/{{repo}}.git",
            "EVALWARD_ALLOW_FILE_CLONE_URLS": "true",
            "EVALWARD_WORK_DIR": str(self.work),
            "EVALWARD_LEASE_S": str(options.lease_s),
            "EVALWARD_HEARTBEAT_S": "0.5",
            "EVALWARD_POLL_S": "0.1",
            "EVALWARD_SWEEP_S": "1",
            "EVALWARD_JOB_TIMEOUT_S": "120",
            "EVALWARD_SANDBOX": sandbox_setting(),
        }
        self.threads = options.threads
        self.web = self.start_web()
        self.workers = [self.start_worker(i) for i in range(options.worker_processes)]

    def _start(self, args: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
        with (self.logs / log).open("ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "evalward", "serve", *args],
                cwd=self.root, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            )  # fmt: skip

    def start_web(self) -> subprocess.Popen[bytes]:
        return self._start(["--role", "web", "--port", str(self.port), "--no-redeliver"], self.web_env, "web.log")

    def start_worker(self, index: int) -> subprocess.Popen[bytes]:
        return self._start(["--role", "worker", "--workers", str(self.threads)], self.worker_env, f"worker-{index}.log")

    def workers_started(self, index: int) -> int:
        """How many times worker `index` has logged that its threads started (once per start)."""
        log = self.logs / f"worker-{index}.log"
        return log.read_bytes().count(b"workers started") if log.exists() else 0

    def stop(self) -> list[str]:
        """SIGTERM to every process, then wait (SIGKILL after 60 s); what did not stop cleanly."""
        problems = []
        processes = [("web", self.web), *((f"worker {i}", w) for i, w in enumerate(self.workers))]
        for _, process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, process in processes:
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                problems.append(f"{name} did not stop within 60 s of SIGTERM")
                continue
            if code != 0:
                problems.append(f"{name} exited with {code}")
        return problems


# -- the fire ------------------------------------------------------------------------------------------------


def sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def say(options: Options, message: str) -> None:
    if options.verbose:
        print(message, flush=True)


async def wait_healthy(client: httpx.AsyncClient, timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if (await client.get("/healthz", timeout=2)).status_code == 200:
                return True
        await asyncio.sleep(0.05)
    return False


async def kill_web(daemon: Daemon, client: httpx.AsyncClient, t0: float) -> Kill:
    victim = daemon.web
    kill = Kill("web", time.monotonic() - t0, victim.pid)
    victim.send_signal(signal.SIGKILL)
    await asyncio.to_thread(victim.wait)
    started = time.monotonic()
    daemon.web = daemon.start_web()
    if await wait_healthy(client):
        kill.down_s = time.monotonic() - started
    return kill


async def kill_worker(daemon: Daemon, turn: int, t0: float) -> Kill:
    """Kill worker `turn` (modulo their number) if it is running a job, else another that is (waiting up to 20 s for
    one to be), and restart it. "Running a job": it has child processes (git, the sandboxed evals)."""
    deadline = time.monotonic() + 20
    busy: list[int] = []
    while not busy and time.monotonic() < deadline:
        busy = [i for i, w in enumerate(daemon.workers) if descendants(w.pid)]
        if not busy:
            await asyncio.sleep(0.05)
    turn %= len(daemon.workers)
    index = turn if turn in busy or not busy else busy[0]
    victim = daemon.workers[index]
    kill = Kill(f"worker {index}", time.monotonic() - t0, victim.pid, busy=bool(busy), tree=descendants(victim.pid))
    victim.send_signal(signal.SIGKILL)
    await asyncio.to_thread(victim.wait)
    starts = daemon.workers_started(index)
    started = time.monotonic()
    daemon.workers[index] = daemon.start_worker(index)
    while time.monotonic() - started < 60:  # started (and its SIGTERM handler in place) before the next kill or stop
        if daemon.workers_started(index) > starts:
            kill.down_s = time.monotonic() - started
            break
        await asyncio.sleep(0.05)
    return kill


def kill_times(options: Options, send_s: float) -> list[tuple[float, str]]:
    """When to kill what (seconds after the first delivery): the web's kills spread over the sending, the
    workers' from 30 % of the sending to 5 s into the drain, while jobs still wait (one kill: when the sending
    ends)."""
    times = [(send_s * (k + 0.5) / options.web_kills, "web") for k in range(options.web_kills)]
    n = options.worker_kills
    if n == 1:
        times.append((send_s, "worker"))
    elif n > 1:
        first, last = 0.3 * send_s, send_s + 5
        times += [(first + k * (last - first) / (n - 1), "worker") for k in range(n)]
    return sorted(times)


async def fire(
    options: Options, daemon: Daemon, deliveries: list[tuple[Delivery, bool]]
) -> tuple[list[Sent], list[Kill], float, float]:
    """Send every delivery open loop and kill processes on schedule: (what was sent, the kills, when the first
    delivery left (monotonic), seconds until the last was answered)."""
    sent = [Sent(d, replay) for d, replay in deliveries]
    kills: list[Kill] = []
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
    send_s = len(sent) / options.rate
    async with httpx.AsyncClient(base_url=daemon.url, limits=limits, timeout=30) as client:

        async def send(item: Sent) -> None:
            d = item.delivery
            headers = {"X-GitHub-Event": d.event, "X-GitHub-Delivery": d.guid, "X-Hub-Signature-256": sign(d.body),
                       "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/fire"}  # fmt: skip
            deadline = time.monotonic() + 120
            item.sent_at_s = time.monotonic() - t0
            while True:
                started = time.perf_counter()
                try:
                    response = await client.post("/webhooks/github", content=d.body, headers=headers)
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        return  # never answered: lost
                    if item.failed_at_s is None:
                        item.failed_at_s = time.monotonic() - t0
                    item.resends += 1
                    await asyncio.sleep(0.2)  # refused or reset: the web is down; send again once it answers
                    continue
                if item.resends == 0:
                    item.latency_s = time.perf_counter() - started
                item.status = response.status_code
                with contextlib.suppress(ValueError):
                    item.duplicate = bool(response.json().get("duplicate"))
                return

        async def killer(at_s: float, what: str, turn: int) -> None:
            await asyncio.sleep(max(0.0, t0 + at_s - time.monotonic()))
            kill = await (kill_web(daemon, client, t0) if what == "web" else kill_worker(daemon, turn, t0))
            kills.append(kill)
            down = f", up again after {kill.down_s:.2f} s" if kill.down_s is not None else ", NOT up again"
            busy = " (it was running a job)" if kill.busy else ""
            say(options, f"  {kill.at_s:6.1f} s  kill -9 {kill.what} (pid {kill.pid}){busy}{down}")

        if not await wait_healthy(client):
            raise SystemExit("the web process did not start; see its log")
        t0 = time.monotonic()
        schedule = kill_times(options, send_s)
        turns = Counter[str]()
        killers = []
        for at, what in schedule:
            killers.append(asyncio.create_task(killer(at, what, turns[what])))
            turns[what] += 1
        tasks = []
        for index, item in enumerate(sent):
            delay = t0 + index / options.rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(item)))
        await asyncio.gather(*tasks)
        sent_s = time.monotonic() - t0
        say(options, f"  {sent_s:6.1f} s  sending done; draining")
        await asyncio.gather(*killers)
    return sent, kills, t0, sent_s


# -- reading the outcome --------------------------------------------------------------------------------------


def read_jobs(engine: Any) -> list[Any]:
    from sqlalchemy import select

    from evalward.store.schema import jobs_table

    j = jobs_table.c
    query = select(j.id, j.kind, j.status, j.repo, j.head_sha, j.dedupe_key, j.attempts, j.payload,
                   j.check_run_state, j.last_error)  # fmt: skip
    with engine.connect() as conn:
        return list(conn.execute(query.order_by(j.id)).all())


def read_run_ids(engine: Any) -> list[str]:
    from sqlalchemy import select

    from evalward.store.schema import runs_table

    with engine.connect() as conn:
        return [str(r) for r in conn.execute(select(runs_table.c.run_id)).scalars()]


def github_state(github: FakeGitHub) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(check runs, comments) copied under the fake's lock (its threads keep serving the workers)."""
    with github._lock:
        return [dict(r) for r in github.check_runs.values()], [dict(c) for c in github.comments.values()]


class OpenJobsWatch(threading.Thread):
    """Looks at the open jobs every 0.2 s while the benchmark runs: no PR may ever have two heads' jobs open at once
    (a newer head's job cancels the PR's other open jobs in the transaction that creates it). Only a live look
    sees a breach: the PR's next push cancels both jobs, and the final state shows nothing."""

    def __init__(self, engine: Any) -> None:
        super().__init__(name="open-jobs-watch", daemon=True)
        self.engine = engine
        self.halt = threading.Event()
        self.doubled: set[tuple[str, Any]] = set()
        self.looks = 0

    def run(self) -> None:
        from sqlalchemy import select

        from evalward.store.schema import jobs_table

        j = jobs_table.c
        query = select(j.repo, j.payload).where(j.kind == "evaluate", j.status.in_(("held", "queued", "running")))
        while not self.halt.wait(0.2):
            try:
                with self.engine.connect() as conn:
                    rows = conn.execute(query).all()
            except Exception:  # the database is busy or restarting: look again next time
                continue
            self.looks += 1
            open_per_pr = Counter((r.repo, (r.payload or {}).get("pr_number")) for r in rows)
            self.doubled |= {pr for pr, n in open_per_pr.items() if n > 1 and pr[1] is not None}


def settled(engine: Any, github: FakeGitHub) -> tuple[bool, str]:
    """Whether every job is final (or held), no check run is open and no job row still owes one; and a line."""
    from sqlalchemy import func, select

    from evalward.store.schema import jobs_table

    j = jobs_table.c
    with engine.connect() as conn:
        rows = conn.execute(select(j.status, j.check_run_state, func.count()).group_by(j.status, j.check_run_state))
        counts = [(status, state, int(n)) for status, state, n in rows]
    runs, _ = github_state(github)
    busy = sum(n for status, _, n in counts if status in ("queued", "running"))
    owing = sum(n for status, state, n in counts if status in FINAL and state in ("opening", "open"))
    open_runs = sum(1 for r in runs if r["status"] != "completed")
    by_status: Counter[str] = Counter()
    for status, _, n in counts:
        by_status[status] += n
    line = f"{busy} jobs queued or running, {open_runs} check runs open, {owing} owed; " + ", ".join(
        f"{s} {n}" for s, n in sorted(by_status.items())
    )
    return busy == 0 and open_runs == 0 and owing == 0, line


async def drain(options: Options, engine: Any, github: FakeGitHub, t0: float) -> bool:
    deadline = time.monotonic() + options.drain_s
    shown = 0.0
    while True:
        done, line = await asyncio.to_thread(settled, engine, github)
        if done:
            say(options, f"  {time.monotonic() - t0:6.1f} s  settled: {line}")
            return True
        if time.monotonic() > deadline:
            say(options, f"  drain deadline passed: {line}")
            return False
        if time.monotonic() - shown >= 10:
            shown = time.monotonic()
            say(options, f"  {time.monotonic() - t0:6.1f} s  {line}")
        await asyncio.sleep(0.25)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


LATE = "PRs whose last pushed head was cancelled by an older push's delivery arriving after it"
SUPERSEDED = "superseded by "


def push_order(deliveries: list[Delivery], jobs: list[Any], by_key: dict[str, list[Any]]) -> tuple[int, int, int]:
    """(PRs whose newest push's job was cancelled; of them, those cancelled by an older push's delivery arriving
    after it; deliveries of an older push that found a newer push's job already there and were recorded cancelled
    at once).

    A PR's pushes are in the order their deliveries were first sent (each a second later `updated_at`), not in the
    order of the job rows: a late delivery of an older push makes a newer row (`jobs` are ordered by id)."""
    pushed: dict[tuple[str, int], list[str]] = defaultdict(list)
    for delivery in deliveries:  # sending order
        if delivery.pr is not None:
            pushed[(delivery.repo, delivery.pr)].append(delivery.key)
    newest_cancelled = late = 0
    for keys in pushed.values():
        rows = by_key.get(keys[-1], [])
        if not any(j.status == "cancelled" for j in rows):
            continue
        newest_cancelled += 1
        older = {by_key[k][0].head_sha[:12] for k in keys[:-1] if by_key.get(k)}
        late += any((j.last_error or "").removeprefix(SUPERSEDED) in older for j in rows)

    def pr_of(job: Any) -> Any:
        return (job.payload or {}).get("pr_number")

    first_row = {(j.repo, pr_of(j), (j.head_sha or "")[:12]): j.id for j in reversed(jobs) if j.kind == "evaluate"}
    # Cancelled by a head whose row was made before its own: it cannot have been cancelled by that row's creation
    # (it did not exist yet), so it was recorded cancelled as it arrived.
    recorded_late = sum(
        1
        for j in jobs
        if j.kind == "evaluate"
        and j.status == "cancelled"
        and (j.last_error or "").startswith(SUPERSEDED)
        and first_row.get((j.repo, pr_of(j), j.last_error.removeprefix(SUPERSEDED)), j.id) < j.id
    )
    return newest_cancelled, late, recorded_late


def analyse(
    sent: list[Sent],
    kills: list[Kill],
    jobs: list[Any],
    run_ids: list[str],
    watch: OpenJobsWatch,
    github: FakeGitHub,
    leftovers: dict[str, int],
) -> tuple[list[str], dict[str, int], dict[str, Any]]:
    """(report lines, the must-be-zero figures, figures for the tests)."""
    lines: list[str] = []
    zero: dict[str, int] = {}
    distinct = {s.delivery.guid: s for s in sent if not s.replay}
    answered = [s for s in sent if s.status is not None]
    statuses = Counter(s.status for s in answered)
    latencies = [s.latency_s * 1000 for s in sent if s.latency_s is not None]
    resent = [s for s in sent if s.resends]
    lines.append("Deliveries")
    lines.append(
        f"  sent: {len(sent)} ({len(distinct)} distinct, {len(sent) - len(distinct)} replays of an earlier id)"
    )
    other = {str(k): v for k, v in sorted(statuses.items(), key=lambda kv: kv[0] or 0) if k != 202}
    lines.append(f"  answered 202: {statuses[202]}; other answers: {sum(other.values())} {other or ''}".rstrip())
    replays = [s for s in sent if s.replay and s.status == 202]
    lines.append(f"  replays answered as duplicates (no job): {sum(s.duplicate for s in replays)} of {len(replays)}")
    outages = [(k.at_s, k.at_s + (k.down_s or 0.0) + 0.5) for k in kills if k.what == "web"]
    while_up = [s for s in resent if not any(a <= (s.failed_at_s or 0.0) <= b for a, b in outages)]
    lines.append(
        f"  resent after a kill (refused or reset while the web was down, sent again with the same id): "
        f"{len(resent) - len(while_up)} ({sum(s.duplicate for s in resent if not s.replay)} of them had reached the "
        f"database before the kill); refused or reset while the web was up, resent: {len(while_up)}"
    )
    zero["unanswered deliveries"] = len(sent) - len(answered)
    zero["answers >= 500"] = sum(n for code, n in statuses.items() if code is not None and code >= 500)
    lines.append(f"  answers >= 500: {zero['answers >= 500']}; never answered: {zero['unanswered deliveries']}")
    lines.append(
        f"  ack latency ms (first attempts only; the {len(sent) - len(latencies)} resends excluded): "
        f"p50 {percentile(latencies, 0.5):.1f}  p90 {percentile(latencies, 0.9):.1f}  "
        f"p99 {percentile(latencies, 0.99):.1f}  max {max(latencies, default=float('nan')):.1f}"
    )

    calm = [
        s.latency_s * 1000
        for s in sent
        if s.latency_s is not None and not any(a <= s.sent_at_s <= b + 5 for a, b in outages)
    ]
    lines.append(
        f"  of these, the {len(calm)} sent while the web was up and not within 5 s of its restart: "
        f"p50 {percentile(calm, 0.5):.1f}  p90 {percentile(calm, 0.9):.1f}  p99 {percentile(calm, 0.99):.1f}  "
        f"max {max(calm, default=float('nan')):.1f}"
    )
    lines.append("Kills")
    for kill in sorted(kills, key=lambda k: k.at_s):
        what = f"answering again after {kill.down_s:.2f} s" if kill.down_s is not None else ""
        if kill.what != "web":
            what = "running a job" if kill.busy else "idle"
            what += f", {len(kill.tree)} child processes; " + (
                f"its threads started again after {kill.down_s:.2f} s" if kill.down_s is not None else "never started"
            )
        lines.append(f"  {kill.at_s:6.1f} s  kill -9 {kill.what}: {what or 'never answered again'}")
    zero["killed processes that never came back"] = sum(1 for k in kills if k.down_s is None)
    zero["processes of killed workers still alive"] = sum(len(still_alive(k.tree)) for k in kills)

    lines.append("Jobs")
    by_key: dict[str, list[Any]] = defaultdict(list)
    for job in jobs:
        by_key[job.dedupe_key].append(job)
    expected = {s.delivery.key for s in distinct.values()}
    status_counts = Counter(j.status for j in jobs)
    lines.append(f"  rows: {len(jobs)} for {len(expected)} distinct job keys sent; by status: "
                 + ", ".join(f"{s} {n}" for s, n in sorted(status_counts.items())))  # fmt: skip
    zero["lost (job keys sent, no job row)"] = len(expected - set(by_key))
    zero["unexpected job rows"] = len(set(by_key) - expected)
    zero["duplicated job rows per key"] = sum(len(v) - 1 for v in by_key.values())
    zero["more than one done per key"] = sum(1 for v in by_key.values() if sum(j.status == "done" for j in v) > 1)
    zero["stuck (queued or running after the drain)"] = status_counts["queued"] + status_counts["running"]
    zero["final jobs whose check run is still marked open"] = sum(
        1 for j in jobs if j.status in FINAL and j.check_run_state in ("opening", "open")
    )
    newest_cancelled, late, recorded_late = push_order([s.delivery for s in distinct.values()], jobs, by_key)
    zero["PRs whose newest push's job was cancelled"] = newest_cancelled
    zero[LATE] = late
    verdicts = Counter(((j.payload or {}).get("result") or {}).get("conclusion") for j in jobs if j.status == "done")
    lines.append("  evaluations done, by conclusion: " + ", ".join(f"{k} {n}" for k, n in sorted(verdicts.items())))
    retaken = sum(1 for j in jobs if j.attempts > 1)
    failures = Counter((j.last_error or "").split(":")[0][:70] for j in jobs if j.status == "failed")
    stored = Counter(r.split("-")[0] for r in run_ids if r.startswith("job") and not r.endswith("-base"))
    lines.append(f"  held (author without write access; final until a maintainer approves): {status_counts['held']}")
    lines.append(f"  retaken after their worker died (attempts > 1): {retaken}; failed: {dict(failures) or 0}")
    lines.append(f"  {LATE}: {late}; PRs whose newest push's job was cancelled (for any reason): {newest_cancelled}")
    lines.append(
        f"  deliveries of an older push arriving after a newer push's job existed (a resend after a kill, a request "
        f"overtaken), recorded cancelled at once and cancelling nothing: {recorded_late}"
    )
    lines.append(f"  jobs whose evals were stored by two attempts (a retaken job ran again): "
                 f"{sum(1 for n in stored.values() if n > 1)}")  # fmt: skip
    zero["PRs seen with two heads' jobs open at once"] = len(watch.doubled)
    lines.append(
        f"  PRs seen with two heads' jobs open at once (the open jobs looked at {watch.looks} times, every 0.2 s): "
        f"{len(watch.doubled)}"
    )

    lines.append("GitHub")
    runs, comments = github_state(github)
    by_status = Counter(f"{r['status']}/{r['conclusion']}" if r["conclusion"] else r["status"] for r in runs)
    lines.append(f"  check runs: {len(runs)}; " + ", ".join(f"{k} {n}" for k, n in sorted(by_status.items())))
    zero["check runs left queued or in_progress"] = sum(1 for r in runs if r["status"] != "completed")
    per_job = Counter(
        r["external_id"] for r in runs if str(r.get("external_id", "")).startswith("evalward:default:job")
    )
    zero["jobs with more than one check run"] = sum(1 for n in per_job.values() if n > 1)
    ours = [c for c in comments if str(c["body"]).startswith(MARKER)]
    comments_per_pr = Counter((c["_repo"], c["_issue"]) for c in ours)
    zero["PRs with more than one evalward comment"] = sum(1 for n in comments_per_pr.values() if n > 1)
    commented = {(j.repo, j.payload.get("pr_number")) for j in jobs if j.status == "done"
                 and ((j.payload or {}).get("result") or {}).get("comment")}  # fmt: skip
    zero["PRs with a reported evaluation but no comment"] = len(commented - set(comments_per_pr))
    lines.append(f"  evalward comments: {len(ours)} on {len(comments_per_pr)} pull requests")

    lines.append("After the drain")
    zero.update(leftovers)
    for name, value in leftovers.items():
        lines.append(f"  {name}: {value}")
    figures = {
        "p99_ms": percentile(latencies, 0.99),
        "statuses": dict(statuses),
        "jobs": dict(status_counts),
        "resent": len(resent),
        "resent_while_up": len(while_up),
        "watch_looks": watch.looks,
        "kills": sorted((k.what.split()[0], k.busy) for k in kills),
        "check_runs": len(runs),
        "comments": len(ours),
    }
    return lines, zero, figures


# -- running it ------------------------------------------------------------------------------------------------


def postgres_admin_url(server: str | None) -> Any:
    from sqlalchemy.engine import make_url

    url = make_url(server or os.environ.get("EVALWARD_TEST_POSTGRES_URL") or DEFAULT_POSTGRES)
    return url.set(drivername="postgresql+psycopg") if url.drivername in ("postgres", "postgresql") else url


@contextlib.contextmanager
def database(options: Options, tmp: Path) -> Iterator[tuple[str, str]]:
    """(URL, what it is): `options.db`, a SQLite file in `tmp`, or a throwaway PostgreSQL database (dropped after)."""
    if options.db:
        yield options.db, "the database given"
        return
    if options.sqlite:
        yield f"sqlite:///{tmp / 'fire.db'}", "SQLite"
        return
    from sqlalchemy import create_engine, text

    admin_url = postgres_admin_url(options.postgres)
    name = f"evalward_fire_{secrets.token_hex(4)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield admin_url.set(database=name).render_as_string(hide_password=False), f"PostgreSQL (database {name})"
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def commit() -> str:
    def out(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    head = out("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" with uncommitted changes" if out("status", "--porcelain", "--untracked-files=no") else "")


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run(options: Options) -> Report:
    """The whole benchmark; the report's `problems` are the must-be-zero figures that are not zero."""
    from evalward.store import open_store

    started = time.monotonic()
    header = [f"commit {commit()}; load average at start {load()} ({os.cpu_count()} CPUs)"]
    tmp = Path(tempfile.mkdtemp(prefix="daemon-under-fire-"))
    private, public = app_keys()
    try:
        with database(options, tmp) as (db, db_name), FakeGitHub(app_public_key=public) as github:
            deliveries, outsiders = plan(options, tmp)
            for repo in {d.repo for d, _ in deliveries}:
                github.permissions[(repo, AUTHOR)] = "write"
            header.append(
                f"{len(deliveries)} deliveries at {options.rate:g}/s over {options.repos} repositories and "
                f"{options.repos * options.prs_per_repo} pull requests ({len(outsiders)} by an author without write "
                f"access), one web and {options.worker_processes} worker processes ({options.threads} thread each) "
                f"on {db_name}; {options.web_kills} kill -9 of the web, {options.worker_kills} of a worker"
            )
            for line in header:
                say(options, line)
            store = open_store(db)  # migrated here, before the processes start
            try:
                daemon = Daemon(tmp, db, github, private, options)
                watch = OpenJobsWatch(store.engine)
                watch.start()
                try:
                    sent, kills, t0, send_s = asyncio.run(fire(options, daemon, deliveries))
                    drained = asyncio.run(drain(options, store.engine, github, t0))
                    drain_s = time.monotonic() - t0 - send_s
                    deadline = time.monotonic() + 15
                    while any(daemon.work.glob("*")) and time.monotonic() < deadline:
                        time.sleep(0.2)  # the workers' sweep removes what a killed worker left
                finally:
                    watch.halt.set()
                    watch.join()
                    stopped = daemon.stop()
                leftovers = {
                    "checkout folders left under the work dir": len(list(daemon.work.glob("*"))),
                    "processes still running from the temp folder": len(strays(tmp)),
                    "processes that did not stop cleanly on SIGTERM": len(stopped),
                    "drain deadline passed": int(not drained),
                }
                jobs, run_ids = read_jobs(store.engine), read_run_ids(store.engine)
            finally:
                store.close()
            lines, zero, figures = analyse(sent, kills, jobs, run_ids, watch, github, leftovers)
        lines += [f"  {problem}" for problem in stopped]
        if options.keep:
            lines.append(f"kept: {tmp} (logs/ holds each process's log)")
    finally:
        if not options.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    total = time.monotonic() - started
    lines.insert(0, f"Timing: sending {send_s:.1f} s, then draining {drain_s:.1f} s; {total:.0f} s in all")
    lines.append(f"load average at end {load()}")
    wrong = {name: value for name, value in zero.items() if value}
    lines.append(
        "every must-be-zero figure is zero: nothing lost, duplicated, stuck or left in_progress, no 5xx"
        if not wrong
        else "MUST-BE-ZERO FIGURES THAT ARE NOT: " + ", ".join(f"{k} {v}" for k, v in wrong.items())
    )
    return Report(header, lines, zero, {**figures, "seconds": total})


def strays(root: Path) -> list[int]:
    """Processes (other than this one) whose command line names the temp folder: git, bwrap, evals."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if str(root).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def main(argv: list[str] | None = None) -> int:
    defaults = Options()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--deliveries", type=int, default=defaults.deliveries)
    parser.add_argument("--rate", type=float, default=defaults.rate, help="deliveries per second")
    parser.add_argument("--repos", type=int, default=defaults.repos)
    parser.add_argument("--prs-per-repo", type=int, default=defaults.prs_per_repo)
    parser.add_argument("--held-prs", type=int, default=defaults.held_prs)
    parser.add_argument("--web-kills", type=int, default=defaults.web_kills)
    parser.add_argument("--worker-kills", type=int, default=defaults.worker_kills)
    parser.add_argument("--worker-processes", type=int, default=defaults.worker_processes)
    parser.add_argument("--threads", type=int, default=defaults.threads, help="worker threads per worker process")
    parser.add_argument("--lease-s", type=float, default=defaults.lease_s)
    parser.add_argument("--drain-s", type=float, default=defaults.drain_s)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--db", help="an existing database URL to use (kept)")
    parser.add_argument("--postgres", help="the PostgreSQL server to make the throwaway database on")
    parser.add_argument("--sqlite", action="store_true", help="a SQLite file in the temp folder")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs, repositories)")
    args = parser.parse_args(argv)
    options = Options(**vars(args))
    report = run(options)
    print("\n".join(report.lines))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
