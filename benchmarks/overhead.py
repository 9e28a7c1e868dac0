"""Executor overhead: evalward's wall time over the ideal `cases × latency / concurrency`.

A synthetic agent answers every turn after exactly 50 ms (asyncio sleep); 1000 single-turn cases run at
concurrency 50, so the ideal wall time is 1000 × 0.05 / 50 = 1.0 s. The ratio includes everything a
real run does per case: request building, the agent call, scoring (trajectory + ROUGE), and — in the
second measurement — writing each result to a SQLite history database as it completes, through a history
writer process started before the eval file loads, as `evalward run` does (`store.writer_process`); its end
(the writer storing the last results and closing the database) is inside the timing.

Loading the eval file (parsing, validation, content hashes) happens before the run starts and is not part
of the ratio; it is printed beside it so it cannot hide there.

Both settings run in this process, after a warm-up run of each (no latency, not counted: the metrics, the gate
and the history database imported and used once, so no import or first-use compile falls inside a timing),
then in turns, round by round; the load average is printed at the start and the end of the timed rounds.

For scale, it also times asyncio's own timers on the same schedule (`concurrency` tasks each sleeping
`cases / concurrency` × `latency`, nothing else), on asyncio's stock loop and on the loop evalward runs agents on
(`runners.event_loop`, whose timers fire when due instead of up to 1 ms late): the floor no executor can go under.

Goals (issue #33): ratio ≤ 1.03 without history, ≤ 1.05 with it. Run: `python benchmarks/overhead.py [--cases N] [--latency S] [-j N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from evalward._pipeline import RunOptions, prepare, run_blocking
from evalward.model import AgentOutput, AgentRequest, AgentTarget
from evalward.runners.event_loop import run_on_time
from evalward.store.writer_process import HistoryProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import IN_PROCESS, load_average  # a sibling script, found through the path above


class SleepyAgent:
    """Answers every turn with the expected call after a fixed delay."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    @property
    def target(self) -> AgentTarget:
        return AgentTarget(kind="python", target="benchmarks.overhead:SleepyAgent", config_hash="")

    async def start(self) -> None:
        return None

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        await asyncio.sleep(self.latency_s)
        return AgentOutput(
            response=f"Looked up order {request.case_id} and it has shipped.",
            tool_calls=[{"name": "lookup_order", "args": {"order_id": request.case_id}}],  # type: ignore[list-item]
        )

    async def aclose(self) -> None:
        return None


def write_eval_set(folder: Path, cases: int) -> Path:
    conversation = [
        {
            "eval_id": f"case-{i:05d}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"Where is order case-{i:05d}?"}]},
                    "final_response": {"parts": [{"text": f"Order case-{i:05d} has shipped."}]},
                    "intermediate_data": {
                        "tool_uses": [{"name": "lookup_order", "args": {"order_id": f"case-{i:05d}"}}]
                    },
                }
            ],
        }
        for i in range(cases)
    ]
    path = folder / "bench.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "bench", "eval_cases": conversation}), encoding="utf-8")
    return path


LOAD_TIMES: list[float] = []


def timers_alone(*, cases: int, latency: float, concurrency: int, timely: bool) -> float:
    """Wall time of the same schedule with nothing but sleeps, on asyncio's stock loop or evalward's."""

    async def sleeper() -> None:
        for _ in range(cases // concurrency):
            await asyncio.sleep(latency)

    async def schedule() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(sleeper() for _ in range(concurrency)))
        return time.perf_counter() - started

    return run_on_time(schedule()) if timely else asyncio.run(schedule())


def measure(path: Path, *, latency: float, concurrency: int, db_url: str | None) -> float:
    history = None if db_url is None else HistoryProcess()
    loading = time.perf_counter()
    prepared = prepare(RunOptions(paths=[str(path)], agent="-", concurrency=concurrency, timeout_s=30))
    LOAD_TIMES.append(time.perf_counter() - loading)
    agent = SleepyAgent(latency)
    started = time.perf_counter()
    run = run_blocking(prepared, store=None if history is None else history.open(db_url), agent=agent)
    if history is not None:
        history.close()
    elapsed = time.perf_counter() - started
    assert len(run.cases) == len(prepared.sets[0].cases), "every case must have a result"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("-j", "--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="measurements per setting (median reported)")
    args = parser.parse_args()
    ideal = args.cases * args.latency / args.concurrency
    with tempfile.TemporaryDirectory() as tmp:
        db_url = f"sqlite:///{tmp}/history.db"
        path = write_eval_set(Path(tmp), args.cases)
        for warm_up in (None, db_url):  # not counted: imports (metrics, gate, store) and first uses
            measure(path, latency=0.0, concurrency=args.concurrency, db_url=warm_up)
        del LOAD_TIMES[:]
        load_at_start = load_average()
        plain: list[float] = []
        stored: list[float] = []
        stock_timers: list[float] = []
        timely_timers: list[float] = []
        schedule = {"cases": args.cases, "latency": args.latency, "concurrency": args.concurrency}
        for _ in range(args.rounds):  # in turns, so a noisy neighbour slows both settings alike
            plain.append(measure(path, latency=args.latency, concurrency=args.concurrency, db_url=None))
            stored.append(measure(path, latency=args.latency, concurrency=args.concurrency, db_url=db_url))
            stock_timers.append(timers_alone(**schedule, timely=False))
            timely_timers.append(timers_alone(**schedule, timely=True))
        load_at_end = load_average()
    print(
        f"cases={args.cases} latency={args.latency}s concurrency={args.concurrency} ideal={ideal:.3f}s, {args.rounds} rounds"
    )
    print(f"{IN_PROCESS}; {load_at_start} at the start, {load_at_end} at the end")
    for label, walls in (("without history", plain), ("with SQLite history", stored)):
        median = statistics.median(walls)
        print(
            f"{label}: median wall={median:.3f}s ratio={median / ideal:.3f} "
            f"(min {min(walls) / ideal:.3f}, max {max(walls) / ideal:.3f})"
            + (" (goal <= 1.03)" if label == "without history" else " (goal <= 1.05)")
        )
    print(
        f"asyncio's timers alone on this schedule: {statistics.median(stock_timers) / ideal:.3f} on its stock loop, "
        f"{statistics.median(timely_timers) / ideal:.3f} on the loop evalward runs agents on (medians)"
    )
    print(f"loading the eval file before each run (not in the ratio): median {statistics.median(LOAD_TIMES):.3f}s")


if __name__ == "__main__":
    main()
