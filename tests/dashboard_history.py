"""A realistic history for the dashboard, made by the real pipeline and the real gate: what the dashboard tests
look at in Chromium and what `benchmarks/dashboard_pages.py` times.

Repository `acme/music` (a music-store agent as a model-free Python callable, 37 ADK cases × 3 repetitions, a
tool-trajectory and a response-match criterion, three flaky cases, token usage and cost reported per turn):

- 25 runs on `main`, one a commit, an hour apart; each gated against the previous commit's run, as the daemon
  gates a push to the base branch. Commit 8 breaks a tool argument in 6 cases and commit 11 fixes it; commit 17
  changes the wording of 4 answers and commit 19 fixes it; from commit 14 on, each turn costs 120 input tokens
  more (a longer prompt).
- Pull request #41 (`faster-search`): push 1 changes nothing, push 2 breaks a tool argument in 5 cases, push 3
  fixes it. Pull request #42 (`greeting`): push 1 changes nothing, push 2 breaks one answer and is run twice.
  Every push is gated against `main`'s newest run.

Repository `acme/shop` (optional, `big_cases`): two runs of a generated N-case set, the second answering 1 case
in 100 wrongly — the run and compare pages at scale.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.order_cases import write_order_set

from evalward._gating import gate_run
from evalward._pipeline import RunOptions, prepare, run_prepared
from evalward.gate import GatePolicy
from evalward.model import RunContext, RunResult, Verdict
from evalward.store import Store

REPOSITORY = "acme/music"
SHOP = "acme/shop"
ARTISTS = [
    "AC/DC", "Accept", "Aerosmith", "Alanis Morissette", "Alice In Chains", "Antonio Carlos Jobim", "Apocalyptica",
    "Audioslave", "BackBeat", "Billy Cobham", "Black Label Society", "Black Sabbath", "Body Count",
    "Bruce Dickinson", "Buddy Guy", "Caetano Veloso", "Chico Buarque", "Chico Science", "Cidade Negra",
    "Cláudio Zoli", "Various Artists", "Led Zeppelin", "Frank Zappa", "Marcos Valle", "Milton Nascimento",
    "Azymuth", "Gilberto Gil", "João Gilberto", "Bebel Gilberto", "Jorge Vercilo", "Baby Consuelo", "Ney Matogrosso",
    "Luiz Melodia", "Nando Reis", "Pedro Luís", "Os Paralamas", "Dread Zeppelin",
]  # fmt: skip
CASES = len(ARTISTS)  # 37
REPETITIONS = 3
MAIN_COMMITS = 25
ARGUMENT_BROKEN = (8, 11)
"""Commits [8, 11) of `main` ask the catalog for 50 albums instead of 5 in cases 3, 9, 14, 22, 27 and 31."""
WORDING_BROKEN = (17, 19)
"""Commits [17, 19) of `main` answer cases 6, 12, 20 and 33 in other words."""
ARGUMENT_CASES = (3, 9, 14, 22, 27, 31)
WORDING_CASES = (6, 12, 20, 33)
FLAKY_CASES = (4, 18, 29)
"""Cases whose answer is wrong in about one call in six, on every commit."""
LONGER_PROMPT = 14
"""From commit 14 of `main` on, the agent's prompt is longer: every turn costs 120 input tokens more."""
START = datetime(2026, 3, 2, 9, tzinfo=UTC)

AGENT = '''
"""A music store's catalog agent, model-free: one `search_catalog` call, then the answer."""

import hashlib
import threading

ARGUMENT_BROKEN = {argument_broken!r}
WORDING_BROKEN = {wording_broken!r}
FLAKY = {flaky!r}
SEED = {seed!r}
EXTRA_TOKENS = {extra_tokens!r}
_calls: dict[str, int] = {{}}
_lock = threading.Lock()


def answer(request: dict) -> dict:
    query = request["query"]
    number = int(query.split("#")[1].split(":")[0])
    artist = query.split(": ", 1)[1]
    with _lock:
        call = _calls[query] = _calls.get(query, -1) + 1
    limit = 50 if number in ARGUMENT_BROKEN else 5
    albums = 1 + number % 4
    reply = f"I found {{albums}} albums by {{artist}} in the catalog."
    if number in WORDING_BROKEN:
        reply = f"Sure thing. The store carries {{artist}}, see the shelves for details."
    roll = hashlib.sha256(f"{{SEED}}:{{query}}:{{call}}".encode()).digest()[0]
    if number in FLAKY and roll < 43:  # 43/256: about one call in six
        reply = f"Sorry, I could not reach the catalog for {{artist}}."
    tokens_in, tokens_out = 310 + EXTRA_TOKENS + 7 * len(artist), 24 + number % 9
    return {{
        "response": reply,
        "tool_calls": [{{"name": "search_catalog", "args": {{"artist": artist, "limit": limit}},
                         "result": {{"albums": albums}}}}],
        "usage": {{"input_tokens": tokens_in, "output_tokens": tokens_out,
                   "cost_usd": round(tokens_in * 2.5e-6 + tokens_out * 1e-5, 6)}},
    }}
'''


@dataclass
class Push:
    """A run of a pull request's push: its run id, commit and the verdict the gate recorded."""

    run_id: str
    commit: str
    verdict: Verdict | None


@dataclass
class DashboardHistory:
    """What `build` stored, for tests to look up rather than hard-code."""

    url: str
    main_runs: list[str] = field(default_factory=list)
    main_commits: list[str] = field(default_factory=list)
    main_verdicts: dict[str, Verdict] = field(default_factory=dict)
    pulls: dict[int, list[Push]] = field(default_factory=dict)
    big_runs: tuple[str, str] | None = None

    def main_run_at(self, commit_index: int) -> str:
        return self.main_runs[commit_index]


def sha(kind: str, number: int) -> str:
    """A stable 40-hex commit id for `kind` ("main", "pr41", …) and a number, looking like git's."""
    return hashlib.sha1(f"{kind}:{number}".encode()).hexdigest()


def eval_set() -> dict[str, object]:
    cases = []
    for number, artist in enumerate(ARTISTS):
        query = f"Find albums #{number}: {artist}"
        cases.append(
            {
                "eval_id": f"albums_by_{number:02d}",
                "conversation": [
                    {
                        "invocation_id": f"inv-{number}",
                        "user_content": {"role": "user", "parts": [{"text": query}]},
                        "final_response": {
                            "role": "model",
                            "parts": [{"text": f"I found {1 + number % 4} albums by {artist} in the catalog."}],
                        },
                        "intermediate_data": {
                            "tool_uses": [{"name": "search_catalog", "args": {"artist": artist, "limit": 5}}]
                        },
                    }
                ],
                "session_input": {"app_name": "music_store", "user_id": "user", "state": {}},
            }
        )
    return {"eval_set_id": "catalog", "name": "catalog", "eval_cases": cases}


def write_agent(folder: Path, *, argument: bool, wording: tuple[int, ...], seed: str, extra_tokens: int = 120) -> Path:
    """The project folder of one run: the eval set, its criteria and the agent as it is at that commit."""
    folder.mkdir(parents=True)
    (folder / "catalog.evalset.json").write_text(json.dumps(eval_set()), encoding="utf-8")
    criteria = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    (folder / "test_config.json").write_text(json.dumps(criteria), encoding="utf-8")
    source = AGENT.format(
        argument_broken=set(ARGUMENT_CASES) if argument else set(),
        wording_broken=set(wording),
        flaky=set(FLAKY_CASES),
        seed=seed,
        extra_tokens=extra_tokens,
    )
    (folder / "catalog_agent.py").write_text(source.lstrip(), encoding="utf-8")
    return folder


def run_and_store(
    store: Store, folder: Path, *, run_id: str, context: RunContext, started: datetime, repeat: int = REPETITIONS
) -> RunResult:
    """One run through the pipeline (as `evalward run` makes it), stored with `started` as its start."""
    options = RunOptions(
        paths=[str(folder / "catalog.evalset.json")],
        agent=f"{folder / 'catalog_agent.py'}:answer",
        config_path=str(folder / "test_config.json"),
        repeat=repeat,
        concurrency=8,
        run_id=run_id,
        agent_cwd=folder,
        context=context,
    )
    prepared = prepare(options)
    # A thread of its own, so async tests (which already run a loop) can call this too.
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(asyncio.run, run_prepared(prepared, store=store)).result()
    run = run.model_copy(update={"started_at": started, "finished_at": started + timedelta(seconds=41)})
    store.finish_run(run)
    return run


def gate_and_record(store: Store, run: RunResult, baseline: str) -> Verdict:
    verdict = gate_run(store, run, GatePolicy(), baseline_spec=baseline, repo_dir=None).verdict
    store.record_verdict(verdict, source="serve")
    return verdict


def build(store: Store, url: str, work: Path, *, big_cases: int = 0) -> DashboardHistory:
    """Store the history of the module docstring in `store` (at `url`), making run folders under `work`."""
    history = DashboardHistory(url=url)
    for index in range(MAIN_COMMITS):
        commit = sha("main", index)
        folder = write_agent(
            work / f"main-{index}",
            argument=ARGUMENT_BROKEN[0] <= index < ARGUMENT_BROKEN[1],
            wording=WORDING_CASES if WORDING_BROKEN[0] <= index < WORDING_BROKEN[1] else (),
            seed=commit,
            extra_tokens=120 if index >= LONGER_PROMPT else 0,
        )
        before = history.main_commits[-1] if history.main_commits else None
        context = RunContext(repository=REPOSITORY, commit=commit, branch="main", base_branch="main", base_sha=before)
        run = run_and_store(
            store, folder, run_id=f"main-{index:02d}", context=context, started=START + timedelta(hours=index)
        )
        if history.main_runs:
            history.main_verdicts[run.run_id] = gate_and_record(store, run, history.main_runs[-1])
        history.main_runs.append(run.run_id)
        history.main_commits.append(commit)

    newest_main = history.main_runs[-1]
    later = START + timedelta(hours=MAIN_COMMITS)
    plans = {
        41: ("faster-search", [(1, False, ()), (2, True, ()), (3, False, ())]),
        42: ("greeting", [(1, False, ()), (2, False, (12,)), (2, False, (12,))]),
    }
    for pr_number, (branch, pushes) in plans.items():
        history.pulls[pr_number] = []
        for attempt, (push, argument, wording) in enumerate(pushes):
            commit = sha(f"pr{pr_number}", push)
            run_id = f"pr{pr_number}-push{push}" + (f"-rerun{attempt}" if attempt >= push else "")
            folder = write_agent(work / run_id, argument=argument, wording=wording, seed=commit)
            context = RunContext(
                repository=REPOSITORY,
                commit=commit,
                branch=branch,
                base_branch="main",
                base_sha=history.main_commits[-1],
                merge_base=history.main_commits[-1],
                pr_number=pr_number,
            )
            later += timedelta(minutes=20)
            run = run_and_store(store, folder, run_id=run_id, context=context, started=later)
            history.pulls[pr_number].append(Push(run_id, commit, gate_and_record(store, run, newest_main)))

    if big_cases:
        history.big_runs = big_shop_runs(store, work / "shop", big_cases, later + timedelta(hours=1))
    return history


SHOP_AGENT = '''
"""A shop's order agent, model-free; `WRONG_EVERY` > 0 answers the orders ending in 7 of each hundred wrongly."""

WRONG_EVERY = {wrong!r}


def answer(request: dict) -> dict:
    order_id = int(request["query"].split()[-1].rstrip("?"))
    reply = f"Order {{order_id}} has shipped."
    if WRONG_EVERY and order_id % 100 == 7:
        reply = "I could not find that order."
    return {{"response": reply,
             "tool_calls": [{{"name": "lookup_order", "args": {{"order_id": order_id}}, "result": {{"ok": True}}}}]}}
'''


def big_shop_runs(store: Store, work: Path, cases: int, started: datetime) -> tuple[str, str]:
    """Two runs of a generated `cases`-case set in `acme/shop` (`shop-first`, then `shop-second`, which answers
    1 case in 100 wrongly); the second gated against the first."""
    runs: list[RunResult] = []
    for index, run_id in enumerate(("shop-first", "shop-second")):
        folder = work / run_id
        folder.mkdir(parents=True)
        write_order_set(folder, cases, "catalog.evalset.json")
        (folder / "catalog_agent.py").write_text(SHOP_AGENT.format(wrong=index).lstrip(), encoding="utf-8")
        context = RunContext(repository=SHOP, commit=sha("shop", index), branch="main", base_branch="main")
        runs.append(
            run_and_store(
                store, folder, run_id=run_id, context=context, started=started + timedelta(hours=index), repeat=1
            )
        )
    gate_and_record(store, runs[1], runs[0].run_id)
    return runs[0].run_id, runs[1].run_id
