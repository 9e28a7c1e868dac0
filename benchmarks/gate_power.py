"""Gate power: false-alarm and detection rates of `evalward gate`, simulated through the real CLI.

Each trial stores a baseline run on `main` and a candidate run on a PR branch (100 cases × 3 repetitions,
per-case pass probabilities drawn from Beta(4, 1), mean 0.8 — GATE.md §10), then runs `evalward gate`.
"No change" trials use the same probabilities on both sides (any `fail` is a false alarm); "drop" trials
lower every probability by 10 points on the candidate (a `fail` is a detection).
Goals: false-alarm rate ≤ 5%, detection rate ≥ 90%. The gate policy turns absolute thresholds off
(`[gate] thresholds = "off"`): with per-case pass rates near 0.8 some case misses its threshold in every
run, and this benchmark measures the paired regression test, not the absolute floor.

The CLI runs in-process through click (the same code path as the `evalward` command, without paying
interpreter start-up 400 times). Run: `python benchmarks/gate_power.py [--trials N]`.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import tempfile
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from evalward.cli.main import cli

AGENT = Path(__file__).resolve().parent / "gate_power_agent" / "agent.py"


def write_eval_set(folder: Path, cases: int, seed: int) -> Path:
    rng = random.Random(seed)
    doc = {
        "evalward": 1,
        "eval_set_id": "power",
        "metrics": [{"name": "trajectory_exact", "threshold": 1.0}],
        "cases": [
            {
                "id": f"case-{i:03d}",
                "query": "solve it",
                "inputs": {"p": round(rng.betavariate(4, 1), 4)},
                "expect": {"tool_calls": [{"name": "solve", "args": {}}]},
            }
            for i in range(cases)
        ],
    }
    path = folder / "power.eval.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    (folder / "evalward.toml").write_text('[gate]\nthresholds = "off"\n', encoding="utf-8")
    return path


def invoke(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    return result.exit_code, result.output


def trial(folder: Path, index: int, drop: float, repeat: int) -> bool:
    """True when the gate failed the candidate."""
    db = f"sqlite:///{folder}/h{index}.db"
    eval_set = folder / "power.eval.yaml"
    common = ["run", str(eval_set), "--agent", f"{AGENT}:agent", "--repeat", str(repeat), "-j", "8", "-q"]
    base = {"EVALWARD_DB": db, "EVALWARD_SIM_SEED": f"{index}-base", "EVALWARD_SIM_DROP": "0"}
    code, out = invoke([*common, "--commit", f"base{index}", "--branch", "main"], base)
    assert code in (0, 1), out
    head = {"EVALWARD_DB": db, "EVALWARD_SIM_SEED": f"{index}-head", "EVALWARD_SIM_DROP": str(drop)}
    code, out = invoke(
        [*common, "--commit", f"head{index}", "--branch", "pr", "--base-branch", "main", "--base-sha", f"base{index}"],
        head,
    )
    assert code in (0, 1), out
    run_id = out.strip().splitlines()[-1].removeprefix("run id: ")
    settings = str(folder / "evalward.toml")
    code, out = invoke(["--config", settings, "gate", "--run", run_id, "--base-branch", "main"], {"EVALWARD_DB": db})
    assert code in (0, 1), out
    return code == 1


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40, help="trials per condition")
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.pop("EVALWARD_DB", None)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_eval_set(folder, args.cases, seed=7)
        alarms = sum(trial(folder, i, 0.0, args.repeat) for i in range(args.trials))
        detections = sum(trial(folder, 1000 + i, 0.10, args.repeat) for i in range(args.trials))
    n = args.trials
    lo, hi = wilson(alarms, n)
    dlo, dhi = wilson(detections, n)
    print(
        f"{args.cases} cases × {args.repeat} repetitions, {n} trials per condition ({time.perf_counter() - started:.0f}s)"
    )
    print(f"false-alarm rate (no change): {alarms}/{n} = {alarms / n:.1%}  95% CI [{lo:.1%}, {hi:.1%}]  (goal ≤ 5%)")
    print(
        f"detection rate (10-point drop): {detections}/{n} = {detections / n:.1%}  95% CI [{dlo:.1%}, {dhi:.1%}]  (goal ≥ 90%)"
    )


if __name__ == "__main__":
    main()
