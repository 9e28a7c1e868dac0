"""End to end against `adk eval`: the same generated ADK eval set run by `adk eval` and by `evalward run`.

A temporary folder gets a 2,000-case ADK eval set (one turn each: "Where is order N?", expecting the tool
call `lookup_order(order_id=N)` and the answer "Order N has shipped."), a test_config.json with the two
metrics ADK computes offline (`tool_trajectory_avg_score`, `response_match_score`), and two model-free
agents giving the same answers:
- `shop_agent/`, an ADK agent package whose `root_agent` is a `BaseAgent` yielding the events an LLM agent
  yields for one tool call (the function call, its response, the answer), as the repository's parity
  agents do; with `--llm-agent` it is instead an `LlmAgent` whose model is a scripted `BaseLlm` and whose
  `lookup_order` is a real function tool, so each case also goes through ADK's LLM flow (two model calls);
- `shop_callable.py:answer`, a plain Python function returning the same call and answer.
Then, in one run, each command is timed as a subprocess (wall time, CPU time, peak RSS from `os.wait4`), each
at its default concurrency (4 for all three), interleaved run by run, as a user runs it: with its bytecode
cached (`measuring.user_env`: no `PYTHONDONTWRITEBYTECODE`), after a warm-up round that is not counted:
- `adk eval shop_agent <set> --config_file_path test_config.json`;
- `evalward run <set> --agent adk:shop_agent --test-config test_config.json -q`;
- `evalward run <set> --agent shop_callable.py:answer --test-config test_config.json -q`, and the same with
  `--no-history`.
Both evalward commands keep the default history (`.evalward/history.db` in the folder, one more run each time,
as a team's grows): the figures are what a user gets without opting out of anything.
Every command must score every case and pass them all (exit code 0, and the count of passed cases it
prints), or the benchmark stops: a fast run that skipped cases proves nothing. The load average is printed
at the start and the end of the measured runs.

Goals (issues #14, #33): `adk eval` / `evalward --agent adk:` ≥ 3×; `adk eval` / `evalward` with a callable
≥ 10× (history on). With `--llm-agent`, ADK's own LLM flow (~6 ms a turn, which both tools run) dominates and
the `adk:` ratio is far lower; it is printed for information.
Run: `python benchmarks/vs_adk_eval.py [--cases N] [--runs R] [--llm-agent]` (medians of R runs; the `adk`
command of `google-adk[eval]` must be beside the interpreter).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measuring import interleaved, run_measured, user_env  # a sibling script, found through the path above

ROOT = Path(__file__).resolve().parents[1]
GOALS = {"evalward adk:": 3.0, "evalward callable": 10.0}

AGENT = '''
"""A model-free ADK agent: the events an LLM agent yields for one tool call, scripted."""

import re
from collections.abc import AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.genai import types


class ShopAgent(BaseAgent):
    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        query = " ".join(p.text for p in ctx.user_content.parts or [] if p.text)
        order_id = int(re.findall(r"\\d+", query)[-1])
        result = {"order_id": order_id, "status": "shipped"}
        call = types.FunctionCall(name="lookup_order", args={"order_id": order_id}, id="call-1")
        response = types.FunctionResponse(name="lookup_order", response=result, id="call-1")
        for part in (
            types.Part(function_call=call),
            types.Part(function_response=response),
            types.Part(text=f"Order {order_id} has {result['status']}."),
        ):
            yield Event(
                invocation_id=ctx.invocation_id, author=self.name, content=types.Content(role="model", parts=[part])
            )


root_agent = ShopAgent(name="shop")
'''

LLM_AGENT = '''
"""A model-free ADK LlmAgent: a scripted model calls the `lookup_order` tool, then answers from its result."""

import re
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def lookup_order(order_id: int) -> dict:
    """The status of an order."""
    return {"order_id": order_id, "status": "shipped"}


class ScriptedModel(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        result = next((p.function_response for p in last.parts or [] if p.function_response), None)
        if result is not None:
            text = f"Order {result.response['order_id']} has {result.response['status']}."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        query = " ".join(p.text for p in last.parts or [] if p.text)
        call = types.FunctionCall(name="lookup_order", args={"order_id": int(re.findall(r"\\d+", query)[-1])})
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))


root_agent = LlmAgent(
    name="shop", model=ScriptedModel(), instruction="Answer questions about orders.", tools=[lookup_order]
)
'''

CALLABLE = '''
"""The same agent as a plain function: one `lookup_order` call, then the answer."""

import re


def answer(request: dict) -> dict:
    order_id = int(re.findall(r"\\d+", request["query"])[-1])
    result = {"order_id": order_id, "status": "shipped"}
    return {
        "response": f"Order {order_id} has {result['status']}.",
        "tool_calls": [{"name": "lookup_order", "args": {"order_id": order_id}, "result": result}],
    }
'''


def write_project(folder: Path, cases: int, *, llm_agent: bool = False) -> None:
    """The agent package, the callable, the eval set and the test config, in `folder`."""
    package = folder / "shop_agent"
    package.mkdir()
    (package / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (package / "agent.py").write_text((LLM_AGENT if llm_agent else AGENT).lstrip(), encoding="utf-8")
    (folder / "shop_callable.py").write_text(CALLABLE.lstrip(), encoding="utf-8")
    eval_cases = [
        {
            "eval_id": f"order_{n}",
            "conversation": [
                {
                    "invocation_id": f"inv-{n}",
                    "user_content": {"role": "user", "parts": [{"text": f"Where is order {n}?"}]},
                    "final_response": {"role": "model", "parts": [{"text": f"Order {n} has shipped."}]},
                    "intermediate_data": {"tool_uses": [{"name": "lookup_order", "args": {"order_id": n}}]},
                }
            ],
            "session_input": {"app_name": "shop_agent", "user_id": "user", "state": {}},
        }
        for n in range(1, cases + 1)
    ]
    eval_set = {"eval_set_id": "orders", "name": "orders", "eval_cases": eval_cases}
    (folder / "orders.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")


def commands(folder: Path) -> dict[str, list[str]]:
    adk = Path(sys.executable).parent / "adk"
    evalward = [sys.executable, "-m", "evalward", "run", str(folder / "orders.evalset.json")]
    common = ["--test-config", str(folder / "test_config.json"), "-q"]
    # The callable keeps the default history (a SQLite file in the folder, growing run by run as a team's
    # does); the `adk:` row and the no-history row show what the database costs.
    no_history = [*common, "--no-history"]
    return {
        "adk eval": [
            str(adk),
            "eval",
            str(folder / "shop_agent"),
            str(folder / "orders.evalset.json"),
            "--config_file_path",
            str(folder / "test_config.json"),
        ],
        "evalward adk:": [*evalward, "--agent", f"adk:{folder / 'shop_agent'}", *common],
        "evalward callable": [*evalward, "--agent", f"{folder / 'shop_callable.py'}:answer", *common],
        "evalward callable --no-history": [*evalward, "--agent", f"{folder / 'shop_callable.py'}:answer", *no_history],
    }


def scored_cases(label: str, output: str) -> int:
    """How many cases the command says it scored and passed (0 when its summary is missing)."""
    if label == "adk eval":
        passed = re.search(r"Tests passed: (\d+)\s+Tests failed: (\d+)", output)
        return int(passed.group(1)) if passed and passed.group(2) == "0" else 0
    verdict = re.search(r"(\d+) passed, (\d+) failed, (\d+) errors", output)
    return int(verdict.group(1)) if verdict and verdict.group(2) == verdict.group(3) == "0" else 0


def measure(label: str, command: list[str], folder: Path, cases: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one run; exits when the command failed or scored too
    few cases. CPU time (user + system) is the steadier figure on a machine shared with other work."""
    shutil.rmtree(folder / "shop_agent" / ".adk", ignore_errors=True)  # adk eval's result history
    done = run_measured(command, folder, user_env(PYTHONUNBUFFERED="1"))
    found = scored_cases(label, done.output)
    if done.exit_code != 0 or found != cases:
        sys.exit(
            f"{label}: exit code {done.exit_code}, {found}/{cases} cases scored and passed:\n{done.output[-3000:]}"
        )
    return done.wall_s, done.cpu_s, done.peak_rss_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3, help="runs of each command; medians are printed")
    parser.add_argument("--llm-agent", action="store_true", help="run the LlmAgent variant (scripted model)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, args.cases, llm_agent=args.llm_agent)
        runs = commands(folder)
        timed = interleaved(list(runs), lambda label: measure(label, runs[label], folder, args.cases), args.runs)
    medians = timed.medians
    agent = "LlmAgent + scripted model" if args.llm_agent else "scripted BaseAgent"
    print(
        f"{args.cases} one-turn cases ({agent}), tool_trajectory_avg_score + response_match_score, median of {args.runs}"
    )
    timed.print_table(args.cases)
    adk_wall, adk_cpu = medians["adk eval"][0], medians["adk eval"][1]
    for label, goal in GOALS.items():
        ratio = adk_wall / medians[label][0]
        verdict = "met" if ratio >= goal else "NOT met"
        cpu_ratio = adk_cpu / medians[label][1]
        print(f"adk eval / {label:<18} {ratio:4.1f}× wall (goal ≥ {goal:g}×: {verdict}), {cpu_ratio:4.1f}× CPU")


if __name__ == "__main__":
    main()
