"""CLI start-up: wall time of `evalward --help` beside a bare `python -c pass`, and wall time and peak RSS
of a 1-case `evalward run` of two shipped examples; medians of several runs.

Goals: `evalward --help` ≤ 0.4 s (heavy modules are imported only by the command that needs them); a 1-case
run with its history ≤ 0.3 s and ≤ 60 MB peak (issue #33; the largest process: the run's or its history
writer's). The dice run is also timed with `--no-history`, to show what the database costs. The 1-case sets are the first case of `examples/dice_agent`
(ADK format, scored with ROUGE-1 `response_match_score`) and of `examples/music_store/e2e.json`, written to
a temporary folder with a temporary history database: the first run creates it (a fresh CI checkout), the
median is of the runs after it.

For scale, the benchmark also times the floor: the libraries a run's process cannot do without (pydantic, click,
rich's console and table, asyncio; SQLAlchemy is its history writer process's, `store.writer_process`), imported as a run imports
them (cyclic GC paused, as the `evalward` command does) and used as a run first uses them: `import pydantic` alone
loads almost nothing, its internals and its plugin discovery load when the first model is built, so the floor
builds one. What a run takes above the floor is evalward's own start-up (its modules, its models, the run).
The machine's speed drifts between seconds, so the floor and the runs are measured in turns, round by round,
and each median is of the same rounds.

With `--instructions`, the floor and the two runs are counted in instructions instead (valgrind's callgrind,
hash seed fixed): the count is the same run after run whatever the machine's load, so a change to start-up can be
judged on a machine whose speed drifts by half within minutes (each count takes ~40 s under valgrind).

Bytecode: `pip install` compiles every module, but under PYTHONDONTWRITEBYTECODE=1 (common in containers) an
editable install would recompile evalward's ~80 modules, and the examples their agents, on every start. Every
command runs as a user's does (`measuring.user_env`: without that variable, this checkout's `src/` first on the
path), after a warm-up round that is not counted (against a history database of its own, so the first run
measured still creates one), so the bytecode is cached as an installed evalward has it. Every command, from
`python -c pass` to the runs, takes its turn in every round; the load average is printed at the start and the
end of the rounds.
Run: `python benchmarks/startup.py [--runs N] [--instructions]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BYTECODE, load_average, user_env  # a sibling script, found through the path above

ROOT = Path(__file__).resolve().parents[1]
FLOOR_LIBRARIES = "click, rich.console, rich.table, asyncio, pydantic"
FLOOR = (
    "import gc; gc.disable()\n"
    f"import {FLOOR_LIBRARIES}\n"
    "class First(pydantic.BaseModel):\n"
    "    x: int = pydantic.Field(default=0)\n"
)


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one run of `command`; the RSS is the child's own `ru_maxrss`."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {process.returncode}:\n{stderr}")
    return wall, usage.ru_maxrss / 1024  # Linux reports kilobytes


def instructions(command: list[str], env: dict[str, str]) -> int:
    """The instructions `command` executes, counted by valgrind's callgrind with Python's hash seed fixed."""
    completed = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        cwd=ROOT,
        env={**env, "PYTHONHASHSEED": "0"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    found = re.search(r"Collected : (\d+)", completed.stderr)
    if found is None:
        sys.exit(f"valgrind could not count {' '.join(command)}:\n{completed.stderr[-2000:]}")
    return int(found[1])


def count_instructions(commands: dict[str, list[str]], env: dict[str, str]) -> None:
    """Print the instructions of the floor and of each run (each run's database made by a run before it)."""
    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    counts = {label: instructions(command, env) for label, command in commands.items()}
    floor = counts.pop("floor")
    print(f"floor (the libraries):     {floor / 1e6:,.0f} M instructions (import {FLOOR_LIBRARIES}; one model)")
    for label, count in counts.items():
        print(f"{label + ':':<26} {count / 1e6:,.0f} M instructions ({count / floor:.2f}x the floor)")


def one_case_sets(folder: Path) -> dict[str, list[str]]:
    """The `evalward run` arguments of each 1-case example, its eval file written into `folder`."""
    dice = json.loads((ROOT / "examples/dice_agent/dice.evalset.json").read_text(encoding="utf-8"))
    dice["eval_cases"] = dice["eval_cases"][:1]
    (folder / "dice").mkdir()
    (folder / "dice/one.evalset.json").write_text(json.dumps(dice), encoding="utf-8")
    shutil.copy(ROOT / "examples/dice_agent/test_config.json", folder / "dice/test_config.json")
    music = json.loads((ROOT / "examples/music_store/e2e.json").read_text(encoding="utf-8"))
    (folder / "music.json").write_text(json.dumps(music[:1]), encoding="utf-8")
    return {
        "1-case ADK run (dice)": [str(folder / "dice"), "--agent", "examples/dice_agent/agent.py:root_agent"],
        "1-case run (music store)": [str(folder / "music.json"), "--agent", "examples/music_store/agent.py:run_graph"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind), not time")
    args = parser.parse_args()
    evalward = [sys.executable, "-m", "evalward"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = user_env(EVALWARD_DB=f"sqlite:///{folder}/history.db", MUSIC_STORE_DB=str(folder / "m.db"))
        commands = {
            "bare": [sys.executable, "-c", "pass"],
            "help": [*evalward, "--help"],
            "run help": [*evalward, "run", "--help"],
            "floor": [sys.executable, "-c", FLOOR],
        }
        runs = {label: [*evalward, "run", *run_args] for label, run_args in one_case_sets(folder).items()}
        runs["1-case ADK run, --no-history"] = [*runs["1-case ADK run (dice)"], "--no-history"]
        commands.update(runs)
        # The warm-up round (bytecode written, not counted), against databases of its own.
        warm_up = user_env(EVALWARD_DB=f"sqlite:///{folder}/warm-up.db", MUSIC_STORE_DB=str(folder / "warm-up-m.db"))
        for command in commands.values():
            measure(command, warm_up)
        firsts = {label: measure(command, env) for label, command in runs.items()}
        if args.instructions:
            count_instructions({"floor": commands["floor"], **runs}, env)
            return
        load_at_start = load_average()
        samples: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
        for round_ in range(args.runs):
            order = list(commands)[round_ % len(commands) :] + list(commands)[: round_ % len(commands)]
            for label in order:
                samples[label].append(measure(commands[label], env))
        load_at_end = load_average()
    medians = {
        label: (statistics.median(s[0] for s in rows), statistics.median(s[1] for s in rows))
        for label, rows in samples.items()
    }
    bare, help_, run_help = medians.pop("bare")[0], medians.pop("help")[0], medians.pop("run help")[0]
    print(f"medians of {args.runs} rounds; {BYTECODE}; {load_at_start} at the start, {load_at_end} at the end")
    print(f"python -c pass:            {bare:.3f}s")
    print(f"evalward --help:           {help_:.3f}s (goal <= 0.4s; {help_ / bare:.1f}x a bare interpreter)")
    print(f"evalward run --help:       {run_help:.3f}s")
    floor, floor_rss = medians.pop("floor")
    print(f"floor (the libraries):     {floor:.3f}s, peak RSS {floor_rss:.0f} MB (import {FLOOR_LIBRARIES}; one model)")
    for label, (wall, rss) in medians.items():
        print(
            f"{label + ':':<26} {wall:.3f}s, peak RSS {rss:.0f} MB (goal <= 0.3s, <= 60 MB); "
            f"evalward's own {1000 * (wall - floor):.0f} ms above the floor"
        )
        first, first_rss = firsts[label]
        if "no-history" not in label:
            print(f"{'  its first run:':<26} {first:.3f}s, peak RSS {first_rss:.0f} MB (creates the history database)")


if __name__ == "__main__":
    main()
