"""Dashboard pages on the realistic history the dashboard tests use (`tests/dashboard_history.py`): server time and
size of every page, and the time `evalward compare --html` takes to write the same comparison.

The history: `acme/music` with 25 gated commits of `main` (37 cases × 3), two pull requests of three pushes, and
`acme/shop` with two runs of a generated `--cases`-case set (2,000 by default), the second answering 1 case in
100 wrongly. Each page is requested through the server's ASGI app in this process (no socket: the figure is the
server's time, first byte to last), a warm-up request first, then in turns; medians of `--rounds`. Sizes are of
the HTML as sent with and without gzip. The repository page's charts are drawn once per new run and then kept
(`_server.charts`): its figure is the kept case; its first draw is printed apart.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the fixture generator lives in tests/
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BYTECODE, IN_PROCESS, load_average, run_measured, user_env  # a sibling script
from tests import dashboard_history  # the history the dashboard tests look at

GOAL_S = 0.3
SCALE_PAGES = {"run page", "run page, cases that did not pass", "compare page", "compare page, regressed only"}


def pages(history: dashboard_history.DashboardHistory) -> dict[str, str]:
    assert history.big_runs is not None
    first, second = history.big_runs
    repo = f"/repos/{dashboard_history.REPOSITORY}"
    broken = history.main_run_at(dashboard_history.ARGUMENT_BROKEN[0])
    case = f"albums_by_{dashboard_history.ARGUMENT_CASES[0]:02d}"
    return {
        "run page": f"/runs/{second}",
        "run page, cases that did not pass": f"/runs/{second}?show=failing",
        "compare page": f"/compare/{first}...{second}",
        "compare page, regressed only": f"/compare/{first}...{second}?show=regressed",
        "repository page (25 runs, charts kept)": repo,
        "pull request page": f"{repo}/pulls/41",
        "case page": f"{repo}/cases/catalog/{case}?branch=main",
        "run page, 37 × 3 cases": f"/runs/{broken}",
    }


async def time_pages(db: str, paths: dict[str, str], rounds: int) -> tuple[dict[str, tuple[float, int, int]], float]:
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
            started = time.perf_counter()
            (await http.get(paths["repository page (25 runs, charts kept)"])).raise_for_status()
            first_draw = time.perf_counter() - started
            for path in paths.values():  # warm-up: templates compiled, first queries made
                (await http.get(path)).raise_for_status()
            times: dict[str, list[float]] = {label: [] for label in paths}
            sizes: dict[str, tuple[int, int]] = {}
            for _ in range(rounds):
                for label, path in paths.items():
                    started = time.perf_counter()
                    answer = await http.get(path, headers={"Accept-Encoding": "identity"})
                    times[label].append(time.perf_counter() - started)
                    answer.raise_for_status()
                    zipped = await http.get(path, headers={"Accept-Encoding": "gzip"})
                    sizes[label] = (len(answer.content), int(zipped.headers.get("content-length", 0)))
    return {label: (statistics.median(times[label]), *sizes[label]) for label in paths}, first_draw


def time_compare_html(db: str, history: dashboard_history.DashboardHistory, folder: Path, rounds: int) -> float:
    """Median wall time of `evalward compare FIRST SECOND --html` as a user runs it (warm-up round not counted)."""
    assert history.big_runs is not None
    command = [sys.executable, "-m", "evalward", "compare", *history.big_runs, "--db", db]
    command += ["--html", str(folder / "compare.html")]
    walls = []
    for round_number in range(rounds + 1):
        done = run_measured(command, folder, user_env())
        if done.exit_code not in (0, 1):
            sys.exit(f"evalward compare failed:\n{done.output[-2000:]}")
        if round_number:
            walls.append(done.wall_s)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from evalward.store import open_store

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = f"sqlite:///{folder / 'history.db'}"
        with open_store(db) as store:
            history = dashboard_history.build(store, db, folder / "work", big_cases=args.cases)
        paths = pages(history)
        load_at_start = load_average()
        timed, first_draw = asyncio.run(time_pages(db, paths, args.rounds))
        compare_s = time_compare_html(db, history, folder, min(args.rounds, 3))
        report_kb = (folder / "compare.html").stat().st_size / 1024
        load_at_end = load_average()
    print(
        f"{args.cases}-case runs and a 25-commit history in SQLite, medians of {args.rounds}; {IN_PROCESS}; "
        f"{load_at_start} at the start, {load_at_end} at the end"
    )
    print(f"{'page':<42} {'server time':>11} {'HTML':>10} {'gzip':>9}")
    for label, (seconds, raw, zipped) in timed.items():
        goal = f"  (goal ≤ {GOAL_S} s: {'met' if seconds <= GOAL_S else 'NOT met'})" if label in SCALE_PAGES else ""
        print(f"{label:<42} {seconds:>10.3f}s {raw / 1024:>8.0f} KB {zipped / 1024:>6.0f} KB{goal}")
    print(f"repository page, charts drawn the first time: {first_draw:.2f} s")
    print(
        f"`evalward compare --html`, {args.cases} cases: {compare_s:.2f} s wall ({report_kb:.0f} KB written); "
        f"{BYTECODE}"
    )


if __name__ == "__main__":
    main()
