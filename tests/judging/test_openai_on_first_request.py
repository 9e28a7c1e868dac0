"""A judged run imports `openai` (most of a second of CPU) with its first judge request, not at start-up; a run
served from the cache never imports it. The start-up probe, which now speaks `httpx`, still sends what the
`openai` client would and still stops a run whose judge is unreachable (`test_run_judged`).

The runs are fresh interpreters, so what other tests imported does not count.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from tests.fakes.openai_server import FakeOpenAI, Reply

from evalward.judging.judge_client import openai_headers

AGENT = """\
import json
import sys


def run(request):
    # Called once start-up (the judge's probe included) is over, before the case is judged.
    with open({mark!r}, "w") as f:
        json.dump(sorted(m for m in ("openai", "httpx") if m in sys.modules), f)
    return "We have 20 songs by James Brown"
"""

PROBE = """\
import json
import sys
import threading

importers = set()


def watch(event, args):
    if event == "import" and str(args[0]).startswith("openai."):
        importers.add(threading.current_thread() is threading.main_thread())


sys.addaudithook(watch)
from evalward._cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
print(json.dumps({{"imported": "openai" in sys.modules, "on_the_main_thread": sorted(importers)}}), file=sys.stderr)
"""


def evalward_run(
    args: list[str], tmp_path: Path, base_url: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`evalward run ARGS` in a fresh interpreter; (the process, whether `openai` was imported by its end, and
    whether its modules were loaded on the main thread (the event loop's), in another, or both)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALWARD_"))}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=["run", *args])],
        cwd=tmp_path,
        env={**environment, "OPENAI_BASE_URL": base_url, "EVALWARD_DB": f"sqlite:///{tmp_path}/h.db"},
        capture_output=True,
        text=True,
        timeout=180,
    )
    last = completed.stderr.strip().splitlines()[-1] if completed.stderr.strip() else ""
    assert last.startswith("{"), completed.stdout + completed.stderr
    imports: dict[str, Any] = json.loads(last)
    return completed, imports


def test_openai_is_imported_by_the_first_judge_request_and_not_at_all_when_cached(tmp_path: Path) -> None:
    mark = tmp_path / "seen_by_the_agent.json"
    (tmp_path / "agent.py").write_text(AGENT.format(mark=str(mark)), encoding="utf-8")
    eval_set = {
        "evalward": 1,
        "eval_set_id": "one",
        "metrics": [{"name": "answer_correctness", "threshold": 1.0}],
        "cases": [{"id": "c1", "query": "How many songs by James Brown?", "expect": {"response": "20 songs"}}],
    }
    (tmp_path / "one.json").write_text(json.dumps(eval_set), encoding="utf-8")
    args = [str(tmp_path / "one.json"), "--agent", f"{tmp_path / 'agent.py'}:run", "--judge-model", "judge-model"]

    with FakeOpenAI(models=["judge-model"]) as fake:
        fake.responder = lambda body: Reply.json({"reasoning": "20 either way", "is_correct": True})
        first, first_imported = evalward_run(args, tmp_path, fake.base_url)
        seen_first = json.loads(mark.read_text(encoding="utf-8"))
        second, second_imported = evalward_run(args, tmp_path, fake.base_url)
        probes = [r for r in fake.requests if r.method == "GET"]

    assert "judge: 1 replies (0 cached), 1 requests" in first.stdout, first.stdout + first.stderr
    assert seen_first == ["httpx"]  # the probe has run (over httpx); openai has not been imported yet
    # ... and is, for the judge request, in a worker thread only: the event loop never stalled on it.
    assert first_imported == {"imported": True, "on_the_main_thread": [False]}
    assert "judge: 1 replies (1 cached), 0 requests" in second.stdout, second.stdout + second.stderr
    # Every reply came from the cache: openai was never needed.
    assert second_imported == {"imported": False, "on_the_main_thread": []}
    assert [(r.path, r.status, r.authorized) for r in probes] == [("/v1/models", 200, True)] * 2


def test_the_probe_sends_the_headers_the_openai_client_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway-Key: g-1\nAccept: application/json")
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"object": "list", "data": []})

    async def list_models() -> None:
        transport = httpx.MockTransport(record)
        async with httpx.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(base_url="http://judge.test/v1", api_key="sk-1", http_client=http)
            await client.models.list()

    asyncio.run(list_models())
    theirs = {k.lower(): v for k, v in sent[0].headers.items()}
    ours = {k.lower(): v for k, v in openai_headers("sk-1").items()}
    # Everything but the client's telemetry and what httpx adds by itself.
    telemetry = {"user-agent", "content-type", "accept-encoding", "connection", "host", "content-length"}
    relevant = {k: v for k, v in theirs.items() if k not in telemetry and not k.startswith("x-stainless")}
    assert {k: ours.get(k) for k in relevant} == relevant  # all the openai client sends, the probe sends alike
    # ... and no more, but for $OPENAI_CUSTOM_HEADERS, which openai releases before 2.x ignore.
    assert set(ours) - set(relevant) <= {"x-gateway-key"}
    assert ours["x-gateway-key"] == "g-1" and ours["openai-organization"] == "org-1"
