"""Flat memory at any size, for recordings: `replay:` and `import-traces` on 10,000 to 1,000,000 recorded outputs.

For each size (recorded outputs = cases × repetitions) a temporary folder gets the ADK eval set of one-turn
cases `benchmarks/vs_adk_eval.py` writes ("Where is order N?", expecting `lookup_order(order_id=N)` and
"Order N has shipped."), split into files of at most 25,000 cases in `evals/` (`orders_1`, `orders_2`, …:
the loader refuses a document of more than 1,000,000 JSON values, ~40,000 of these cases), and:
- `outputs.jsonl`: a correct recorded output for every case × repetition, one JSON line each, without an
  eval set id (so each lookup also takes the "recorded without an eval set" fallback);
- `traces.jsonl` (with `--import-traces`): one OpenTelemetry trace per case (invoke_agent → execute_tool and
  chat spans, GenAI 1.37 attributes), as OTLP JSON lines the way a Collector's file exporter writes them:
  batches of 100 traces, each trace's child spans in one line and its root span in the next.
Each command runs as a subprocess, timed from outside (wall time; peak RSS from `os.wait4`):
- `evalward run evals --agent replay:outputs.jsonl --test-config test_config.json --no-history -q
  --repeat R` (every case × repetition replayed and scored);
- `evalward import-traces traces.jsonl --eval-set evals --test-config test_config.json` into a SQLite
  history (with `--import-traces`; one repetition per case);
- `load_recordings(outputs.jsonl)` alone under `tracemalloc` (peak and kept): the part of the run's memory
  the recordings cost; the rest belongs to the eval set and the run's results.
Every run must score and pass every case × repetition (its exit code and the count it prints), or the
benchmark stops. Each command runs as a user's does, bytecode cached (`measuring.user_env`), after a warm-up
round on at most `WARM_UP_OUTPUTS` outputs that is not counted; each row shows the load average when it finished.

Goal (issue #16): a 1,000,000-output `replay:` run ≤ 500 MB peak RSS; the recordings alone well under 100 MB.
Run: `python benchmarks/replay_scale.py [--sizes 10000,100000] [--repeat 10] [--import-traces]`; for the goal,
`python benchmarks/replay_scale.py --sizes 1000000 --repeat 10` (100,000 cases × 10; ~15 minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import BYTECODE, in_child, load_average, measure, passed_cases
from vs_adk_eval import write_project  # the same generated project as the `adk eval` benchmark

RUN_RSS_GOAL_MB = 500.0
GOAL_OUTPUTS = 1_000_000
LOAD_GOAL_MB = 100.0
TRACES_PER_LINE = 100
CASES_PER_FILE = 25_000
"""Cases per eval file: ~625,000 JSON values, under the loader's 1,000,000 a document."""
WARM_UP_OUTPUTS = 2_000
"""The warm-up round's size at most: past the 500 results a run keeps in memory, so its spill path is warm too."""

Row = tuple[str, int, int, float, float, str]
"""(command, outputs, cases, wall seconds, peak RSS in MB, load average when it finished)."""

LOAD_PROBE = """
import json, sys, tracemalloc
from evalward.traces.recordings import load_recordings
tracemalloc.start()
recordings = load_recordings(sys.argv[1])
kept, peak = tracemalloc.get_traced_memory()
print(json.dumps({"turns": len(recordings), "kept": kept, "peak": peak}))
"""


def split_eval_set(folder: Path, per_file: int = CASES_PER_FILE) -> None:
    """`orders.evalset.json` as files of `per_file` cases in `folder / "evals"` (module docstring)."""
    whole = json.loads((folder / "orders.evalset.json").read_text(encoding="utf-8"))
    (folder / "orders.evalset.json").unlink()
    (folder / "evals").mkdir()
    cases = whole["eval_cases"]
    for part, start in enumerate(range(0, len(cases), per_file), start=1):
        eval_set = {**whole, "eval_set_id": f"orders_{part}", "name": f"orders_{part}"}
        eval_set["eval_cases"] = cases[start : start + per_file]
        (folder / "evals" / f"orders_{part}.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")


def write_outputs(path: Path, cases: int, repeat: int) -> None:
    """A correct recorded output for every case × repetition (module docstring)."""
    with path.open("w", encoding="utf-8") as file:
        for n in range(1, cases + 1):
            output = {
                "response": f"Order {n} has shipped.",
                "tool_calls": [{"name": "lookup_order", "args": {"order_id": n}}],
            }
            for repetition in range(repeat):
                file.write(json.dumps({"case_id": f"order_{n}", "repetition": repetition, "output": output}) + "\n")


def _attributes(**values: Any) -> list[dict[str, Any]]:
    encoded = []
    for key, value in values.items():
        typed = {"intValue": str(value)} if isinstance(value, int) else {"stringValue": str(value)}
        encoded.append({"key": key.replace("__", "."), "value": typed})
    return encoded


def _span(n: int, span_id: str, name: str, parent: str, start_ms: int, end_ms: int, **attrs: Any) -> dict[str, Any]:
    base = 1_700_000_000_000_000_000 + n * 1_000_000_000
    return {
        "traceId": f"{n:032x}",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(base + start_ms * 1_000_000),
        "endTimeUnixNano": str(base + end_ms * 1_000_000),
        "attributes": _attributes(**attrs),
    }


def trace_spans(n: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(child spans, root span) of case `order_n`'s one traced turn."""
    answer = json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": f"Order {n} has shipped."}],
                "finish_reason": "stop",
            }
        ]
    )
    root = _span(
        n,
        "a1",
        "invoke_agent shop",
        "",
        0,
        100,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="shop",
        evalward__case_id=f"order_{n}",
        gen_ai__input__messages=json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": f"Where is order {n}?"}]}]
        ),
        gen_ai__output__messages=answer,
    )
    tool = _span(
        n,
        "t1",
        "execute_tool lookup_order",
        "a1",
        10,
        20,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="lookup_order",
        gen_ai__tool__call__arguments=json.dumps({"order_id": n}),
    )
    chat = _span(n, "c1", "chat model", "a1", 30, 90, gen_ai__operation__name="chat", gen_ai__output__messages=answer)
    return [tool, chat], root


def write_traces(path: Path, cases: int) -> None:
    """OTLP JSON lines (module docstring): per batch, the child spans in one line, the roots in the next."""

    def line(spans: list[dict[str, Any]]) -> str:
        scope = {"scope": {"name": "shop"}, "spans": spans}
        return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}) + "\n"

    with path.open("w", encoding="utf-8") as file:
        for first in range(1, cases + 1, TRACES_PER_LINE):
            built = [trace_spans(n) for n in range(first, min(first + TRACES_PER_LINE, cases + 1))]
            file.write(line([span for children, _ in built for span in children]))
            file.write(line([root for _, root in built]))


def generate(folder: Path, cases: int, repeat: int, cases_per_file: int, traces: bool) -> None:
    """The eval files, the recorded outputs and (with `traces`) the traces of one size, into `folder`."""
    write_project(folder, cases)
    split_eval_set(folder, cases_per_file)
    write_outputs(folder / "outputs.jsonl", cases, repeat)
    if traces:
        write_traces(folder / "traces.jsonl", cases)


def measure_size(
    outputs: int, repeat: int, cases_per_file: int, import_traces: bool
) -> tuple[list[Row], tuple[int, float, float]]:
    """The rows of one size (module docstring), and what `load_recordings` alone kept and peaked at (lines, MB,
    MB); exits when a command failed or did not pass every case."""
    evalward = [sys.executable, "-m", "evalward"]
    cases = max(1, outputs // repeat)
    outputs = cases * repeat
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # In a process of its own, so this one stays small (measuring.py).
        in_child("replay_scale", "generate", folder, cases, repeat, cases_per_file, import_traces)
        common = ["--test-config", "test_config.json"]
        command = [*evalward, "run", "evals", "--agent", "replay:outputs.jsonl", *common]
        wall, rss, output = measure([*command, "--no-history", "-q", "--repeat", str(repeat)], folder)
        if passed_cases(output) != outputs:
            sys.exit(f"replay of {outputs} outputs did not pass every case:\n{output[-3000:]}")
        rows.append(("run replay:", outputs, cases, wall, rss, load_average()))
        _, _, probe = measure([sys.executable, "-c", LOAD_PROBE, "outputs.jsonl"], folder)
        found = json.loads(probe.strip().splitlines()[-1])
        if import_traces:
            db = ["--db", f"sqlite:///{folder / 'history.db'}"]
            command = [*evalward, "import-traces", "traces.jsonl", "--eval-set", "evals", *common, *db]
            wall, rss, output = measure(command, folder)
            if passed_cases(output) != cases:
                sys.exit(f"import of {cases} traces did not pass every case:\n{output[-3000:]}")
            rows.append(("import-traces", cases, cases, wall, rss, load_average()))
    return rows, (found["turns"], found["kept"] / 1e6, found["peak"] / 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000", help="recorded outputs (cases × --repeat), comma-separated")
    parser.add_argument("--repeat", type=int, default=10, help="repetitions per case (--repeat of the run)")
    parser.add_argument("--import-traces", action="store_true", help="also import one trace per case")
    parser.add_argument("--cases-per-file", type=int, default=CASES_PER_FILE, help="cases per eval file")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    rows: list[Row] = []
    loads: list[tuple[int, float, float]] = []
    # The warm-up round (bytecode written, not counted).
    measure_size(min(sizes[0], WARM_UP_OUTPUTS), args.repeat, args.cases_per_file, args.import_traces)
    for outputs in sizes:
        size_rows, recordings = measure_size(outputs, args.repeat, args.cases_per_file, args.import_traces)
        rows += size_rows
        loads.append(recordings)
    print(f"one-turn ADK cases, correct recorded outputs, --repeat {args.repeat} (outputs = cases × repetitions)")
    print(BYTECODE)
    print(f"{'command':<14} {'outputs':>9} {'cases':>8} {'wall':>9} {'per output':>11} {'peak RSS':>9}  load after it")
    for command_name, count, cases, wall, rss, load in rows:
        print(
            f"{command_name:<14} {count:>9} {cases:>8} {wall:>8.1f}s {wall / count * 1e3:>9.3f}ms {rss:>6.0f} MB  {load}"
        )
    print("load_recordings alone, under tracemalloc (slower than without)")
    for turns, kept, peak in loads:
        print(f"  {turns:>9} lines: kept {kept:6.1f} MB ({kept * 1e6 / turns:.0f} bytes a line), peak {peak:6.1f} MB")
    largest = max((row for row in rows if row[0] == "run replay:"), key=lambda row: row[1])
    if largest[1] >= GOAL_OUTPUTS:
        met = "met" if largest[4] <= RUN_RSS_GOAL_MB else "NOT met"
        print(f"goal: a {largest[1]}-output replay run ≤ {RUN_RSS_GOAL_MB:g} MB: {met} ({largest[4]:.0f} MB)")
    else:
        print(
            f"goal: a {GOAL_OUTPUTS}-output replay run ≤ {RUN_RSS_GOAL_MB:g} MB: not measured (--sizes {GOAL_OUTPUTS})"
        )
    peak_load = max(loads, key=lambda load: load[0])
    met = "met" if peak_load[2] <= LOAD_GOAL_MB else "NOT met"
    print(f"goal: recordings of {peak_load[0]} lines peak < {LOAD_GOAL_MB:g} MB: {met} ({peak_load[2]:.1f} MB)")


if __name__ == "__main__":
    main()
