"""Dashboard pages of a 2,000-case run: server time and size of the run page and the compare page.

Two runs of the same generated 2,000-case ADK set (the model-free callable of `vs_adk_eval.py`) are stored in a
SQLite history by `evalward run`; the second run's agent answers 1 case in 100 wrongly, so the compare page has
regressions to list. Each page is then requested through the server's ASGI app in this process (no socket: the
figure is the server's time, first byte to last), a warm-up request first, then in turns; medians of `--rounds`.
Sizes are of the HTML as sent with and without gzip.

Goals (issue #34): run page and compare page ≤ 0.3 s for a 2,000-case run on SQLite.
Run: `python benchmarks/dashboard_pages.py [--cases N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import IN_PROCESS, load_average, run_measured, user_env  # a sibling script, through the path above
from vs_adk_eval import write_project  # the same generated set and callable

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "run page": "/runs/second",
    "run page, cases that did not pass": "/runs/second?show=failing",
    "compare page": "/compare/first...second",
    "compare page, regressed only": "/compare/first...second?show=regressed",
}
GOAL_S = 0.3
WRONG = """
import shop_callable


def answer(request):
    reply = shop_callable.answer(request)
    if request["query"].endswith("7?") and int(request["query"].split()[-1][:-1]) % 100 == 7:
        reply = {**reply, "response": "I could not find that order."}
    return reply
"""


def store_runs(folder: Path, db: str) -> None:
    (folder / "shop_wrong.py").write_text(WRONG, encoding="utf-8")
    for run_id, agent in (("first", "shop_callable.py:answer"), ("second", "shop_wrong.py:answer")):
        command = [sys.executable, "-m", "evalward", "run", str(folder / "orders.evalset.json")]
        command += ["--agent", str(folder / agent), "--test-config", str(folder / "test_config.json")]
        command += ["--db", db, "--run-id", run_id, "-q"]
        done = run_measured(command, folder, user_env(PYTHONPATH=str(folder)))
        if done.exit_code not in (0, 1):
            sys.exit(f"evalward run failed:\n{done.output[-2000:]}")


async def time_pages(db: str, rounds: int) -> dict[str, tuple[float, int, int]]:
    import httpx

    from evalward._server.app import create_app
    from evalward._server.settings import ServerSettings
    from evalward.store import open_store

    with open_store(db) as store:
        settings = ServerSettings.model_validate(
            {"db": db, "webhook_secrets": ["bench"], "role": "web", "workers": 0, "public_read": True}
        )
        app = create_app(settings, store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as http:
            for path in PAGES.values():  # warm-up: templates compiled, first queries made
                (await http.get(path)).raise_for_status()
            times: dict[str, list[float]] = {label: [] for label in PAGES}
            sizes: dict[str, tuple[int, int]] = {}
            for _ in range(rounds):
                for label, path in PAGES.items():
                    started = time.perf_counter()
                    answer = await http.get(path, headers={"Accept-Encoding": "identity"})
                    times[label].append(time.perf_counter() - started)
                    answer.raise_for_status()
                    zipped = await http.get(path, headers={"Accept-Encoding": "gzip"})
                    sizes[label] = (len(answer.content), int(zipped.headers.get("content-length", 0)))
    return {label: (statistics.median(times[label]), *sizes[label]) for label in PAGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, args.cases)
        db = f"sqlite:///{folder / 'history.db'}"
        store_runs(folder, db)
        load_at_start = load_average()
        timed = asyncio.run(time_pages(db, args.rounds))
        load_at_end = load_average()
    print(
        f"{args.cases}-case runs in SQLite, medians of {args.rounds}; {IN_PROCESS}; {load_at_start} at the start, "
        f"{load_at_end} at the end"
    )
    print(f"{'page':<38} {'server time':>11} {'HTML':>10} {'gzip':>9}")
    for label, (seconds, raw, zipped) in timed.items():
        verdict = "met" if seconds <= GOAL_S else "NOT met"
        print(
            f"{label:<38} {seconds:>10.3f}s {raw / 1024:>8.0f} KB {zipped / 1024:>6.0f} KB  (goal ≤ {GOAL_S} s: {verdict})"
        )


if __name__ == "__main__":
    main()
