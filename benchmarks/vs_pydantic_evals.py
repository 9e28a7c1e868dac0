"""End to end against pydantic-evals: the same model-free cases run by `Dataset.evaluate_sync` and by `evalward run`,
each scoring the same two exact checks.

A temporary folder gets N one-turn cases (default 2,000; "Where is order N?", expecting the tool call
`lookup_order(order_id=N)` and the answer "Order N has shipped.", as in `vs_adk_eval.py`), in each tool's own
format, and the same model-free agent for each:
- `orders.dataset.json`, a pydantic-evals `Dataset` file: `inputs` the question, `expected_output` the answer,
  `metadata.expected_tool_calls` the call; the dataset's evaluators are `EqualsExpected` (built in:
  `output == expected_output`) and `ToolTrajectoryExact`, a custom `Evaluator` in the generated script: the
  (name, arguments) list of the calls the task recorded (`set_eval_attribute("tool_calls", …)`, pydantic-evals'
  way for a task to report more than its output) equals the expected list, order included;
- `run_pydantic_evals.py`: loads the file (`Dataset.from_file`, given the custom evaluator type), runs
  `evaluate_sync(answer, progress=False)`, and prints how many cases passed both checks; `answer` is the task, a
  plain function doing the agent's work: it reads the order id, builds the tool's result, records the call and
  returns the answer;
- `orders.eval.json`: the same cases in evalward's native format, with the criteria `tool_trajectory_avg_score`
  (`match_type: EXACT`: names and arguments equal, in order; 1 or 0) and `response_exact` (the answer equals the
  expected one after NFKC normalisation and trimming, which changes nothing in these ASCII answers; 1 or 0), each
  at threshold 1.0, and nothing else (no `test_config.json`, so no other criterion is added);
- `shop_callable.py:answer`, the plain function `vs_adk_eval.py` gives evalward: the same work, returning the
  answer and the call.

Why these checks. pydantic-evals' own `TrajectoryMatch` reads tool calls from OpenTelemetry spans, which a plain
function task does not make, and compares names only; ADK's EXACT trajectory compares names and arguments, so the
pydantic-evals side gets an evaluator that does what `tool_trajectory_avg_score` EXACT does, on the calls the task
reports. For the answer, evalward's `response_match_score` is ROUGE-1, not an equality: `response_exact` is the
honest counterpart of `EqualsExpected`. (Running `EqualsExpected` itself through evalward's custom-metric support
would time evalward calling pydantic-evals' code, not evalward's own scoring.)

Then, in one run, each command is timed as a subprocess (wall time, CPU time, peak RSS from `os.wait4`), each at
its default concurrency (evalward 4 cases at a time; `evaluate_sync` every case at once, the sync task in anyio's
worker threads), progress display off on both sides (`-q`, `progress=False`), neither printing a per-case table,
interleaved run by run, as a user runs it: bytecode cached (`measuring.user_env`: no `PYTHONDONTWRITEBYTECODE`),
after a warm-up round that is not counted:
- `python run_pydantic_evals.py orders.dataset.json`;
- `evalward run orders.eval.json --agent shop_callable.py:answer --no-history -q`;
- `evalward run orders.eval.json --agent shop_callable.py:answer -q`: the default history, `.evalward/history.db`
  (SQLite) in the working folder, removed before each run, so every run creates a fresh one.
Every command must score every case and pass them all (exit code 0, and the count of passed cases it prints), or
the benchmark stops. Before timing, one more evalward run writes its `--json` report and every case's two metric
results are checked (both present, both 1.0); the pydantic-evals script checks each case's two assertions itself.
The load average is printed at the start and the end of the measured runs.

Goal (issue #33): evalward with its history ≥ 1.5× faster (wall) than `evaluate_sync`; the ratios pydantic-evals ÷
evalward are printed for both evalward commands.
Run: `python benchmarks/vs_pydantic_evals.py [--cases N] [--runs R]` (medians of R runs, default 5; pydantic-evals
must be importable by the interpreter running this script: the `test` extra pins it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Sibling scripts, found through the path above.
from measuring import interleaved, passed_cases, run_measured, user_env
from vs_adk_eval import CALLABLE

GOAL = 1.5
"""`evaluate_sync` ÷ evalward with history, in wall time, at least."""
PEER = "pydantic-evals"
NO_HISTORY = "evalward --no-history"
HISTORY = "evalward (history)"

PYDANTIC_EVALS_RUN = '''
"""pydantic-evals' side: the dataset file evaluated with `evaluate_sync`; prints how many cases passed both checks."""

import re
import sys
from dataclasses import dataclass
from typing import Any

from pydantic_evals import Dataset, set_eval_attribute
from pydantic_evals.evaluators import Evaluator, EvaluatorContext

CHECKS = {"EqualsExpected", "ToolTrajectoryExact"}


@dataclass
class ToolTrajectoryExact(Evaluator[str, str, dict[str, Any]]):
    """The calls the task recorded equal the expected ones: names and arguments, in order (ADK's EXACT)."""

    def evaluate(self, ctx: EvaluatorContext[str, str, dict[str, Any]]) -> bool:
        actual = [(call["name"], call["args"]) for call in ctx.attributes.get("tool_calls", [])]
        expected = [(call["name"], call["args"]) for call in (ctx.metadata or {}).get("expected_tool_calls", [])]
        return actual == expected


def answer(query: str) -> str:
    """The model-free agent: one `lookup_order` call, recorded, then the answer."""
    order_id = int(re.findall(r"\\d+", query)[-1])
    result = {"order_id": order_id, "status": "shipped"}
    set_eval_attribute("tool_calls", [{"name": "lookup_order", "args": {"order_id": order_id}, "result": result}])
    return f"Order {order_id} has {result['status']}."


dataset = Dataset[str, str, dict[str, Any]].from_file(sys.argv[1], custom_evaluator_types=[ToolTrajectoryExact])
report = dataset.evaluate_sync(answer, progress=False)
passed = sum(
    1
    for case in report.cases
    if set(case.assertions) == CHECKS and all(result.value is True for result in case.assertions.values())
)
print(f"pydantic-evals: {passed} passed, {len(report.cases) - passed} failed, {len(report.failures)} errors")
'''


def write_project(folder: Path, cases: int) -> None:
    """The pydantic-evals dataset and script, the evalward eval set and the callable, in `folder`."""
    numbers = range(1, cases + 1)
    dataset = {
        "name": "orders",
        "cases": [
            {
                "name": f"order_{n}",
                "inputs": f"Where is order {n}?",
                "expected_output": f"Order {n} has shipped.",
                "metadata": {"expected_tool_calls": [{"name": "lookup_order", "args": {"order_id": n}}]},
            }
            for n in numbers
        ],
        "evaluators": ["EqualsExpected", "ToolTrajectoryExact"],
    }
    (folder / "orders.dataset.json").write_text(json.dumps(dataset), encoding="utf-8")
    (folder / "run_pydantic_evals.py").write_text(PYDANTIC_EVALS_RUN.lstrip(), encoding="utf-8")
    eval_set = {
        "evalward": 1,
        "eval_set_id": "orders",
        "metrics": [
            {"name": "tool_trajectory_avg_score", "threshold": 1.0, "match_type": "EXACT"},
            {"name": "response_exact", "threshold": 1.0},
        ],
        "cases": [
            {
                "id": f"order_{n}",
                "query": f"Where is order {n}?",
                "expect": {
                    "response": f"Order {n} has shipped.",
                    "tool_calls": [{"name": "lookup_order", "args": {"order_id": n}}],
                },
            }
            for n in numbers
        ],
    }
    (folder / "orders.eval.json").write_text(json.dumps(eval_set), encoding="utf-8")
    (folder / "shop_callable.py").write_text(CALLABLE.lstrip(), encoding="utf-8")


def commands(folder: Path) -> dict[str, list[str]]:
    evalward = [sys.executable, "-m", "evalward", "run", str(folder / "orders.eval.json")]
    evalward += ["--agent", f"{folder / 'shop_callable.py'}:answer", "-q"]
    return {
        PEER: [sys.executable, str(folder / "run_pydantic_evals.py"), str(folder / "orders.dataset.json")],
        NO_HISTORY: [*evalward, "--no-history"],
        HISTORY: evalward,
    }


def environment() -> dict[str, str]:
    """A user's environment (`user_env`) without `EVALWARD_DB`, so the history is the default one."""
    return {name: value for name, value in user_env(PYTHONUNBUFFERED="1").items() if name != "EVALWARD_DB"}


def measure(label: str, command: list[str], folder: Path, cases: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one run; exits when the command failed or scored too
    few cases. CPU time (user + system, every thread) is the steadier figure on a machine shared with other work."""
    shutil.rmtree(folder / ".evalward", ignore_errors=True)  # a fresh default history for every run
    done = run_measured(command, folder, environment())
    found = passed_cases(done.output)
    if done.exit_code != 0 or found != cases:
        sys.exit(
            f"{label}: exit code {done.exit_code}, {found}/{cases} cases scored and passed:\n{done.output[-3000:]}"
        )
    return done.wall_s, done.cpu_s, done.peak_rss_mb


def check_evalward_scores(folder: Path, cases: int) -> None:
    """One evalward run with a `--json` report (not timed): every case has both metric results, each 1.0."""
    report = folder / "report.json"
    command = [*commands(folder)[NO_HISTORY], "--json", str(report)]
    done = run_measured(command, folder, environment())
    if done.exit_code != 0:
        sys.exit(f"evalward --json: exit code {done.exit_code}:\n{done.output[-3000:]}")
    results = json.loads(report.read_text(encoding="utf-8"))["cases"]
    wanted = {"tool_trajectory_avg_score", "response_exact"}
    scored = [{m["name"]: m["score"] for m in case["metric_results"]} for case in results if case["status"] == "passed"]
    if len(scored) != cases or any(set(s) != wanted or set(s.values()) != {1.0} for s in scored):
        sys.exit(f"evalward's report does not show {cases} cases with exactly {sorted(wanted)} at 1.0")
    report.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5, help="runs of each command; medians are printed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, args.cases)
        check_evalward_scores(folder, args.cases)
        runs = commands(folder)
        timed = interleaved(list(runs), lambda label: measure(label, runs[label], folder, args.cases), args.runs)
    medians = timed.medians
    print(
        f"{args.cases} one-turn cases, model-free Python agent, exact tool trajectory + exact answer, "
        f"median of {args.runs}"
    )
    timed.print_table(args.cases)
    peer_wall, peer_cpu = medians[PEER][0], medians[PEER][1]
    for label in (NO_HISTORY, HISTORY):
        ratio, cpu_ratio = peer_wall / medians[label][0], peer_cpu / medians[label][1]
        goal = f" (goal ≥ {GOAL:g}×: {'met' if ratio >= GOAL else 'NOT met'})" if label == HISTORY else ""
        print(f"{PEER} / {label:<22} {ratio:4.2f}× wall{goal}, {cpu_ratio:4.2f}× CPU")


if __name__ == "__main__":
    main()
