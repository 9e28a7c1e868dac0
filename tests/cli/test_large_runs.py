"""A 2,000-case run reports the same whether its results stay in memory or go to a temporary file.

`evalward.spill` moves a run's case results and summaries to a temporary file past
`EVALWARD_MAX_RECORDS_IN_MEMORY` records, and the JSON and JUnit reports are then written case by case. What a
user sees must not change: the same run with every record kept in memory and with every record spilled
gives the same JSON, JUnit, markdown and terminal output, apart from run ids and times. Both runs also keep
their history (SQLite), so the database side is exercised at this size too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.order_cases import write_order_set

ROOT = Path(__file__).resolve().parents[2]
CASES = 2000

AGENT = """
def answer(request):
    n = int(request["query"].split()[-1].rstrip("?"))
    if n % 13 == 0:
        raise RuntimeError(f"order {n} is lost")
    shipped = "is on its way" if n % 7 == 0 else "has shipped"
    return {
        "response": f"Order {n} {shipped}.",
        "tool_calls": [{"name": "lookup_order", "args": {"order_id": n if n % 11 else n + 1}}],
    }
"""


def write_eval_set(folder: Path) -> Path:
    path = write_order_set(folder, CASES)
    (folder / "shop.py").write_text(AGENT, encoding="utf-8")
    return path


def run(folder: Path, name: str, max_in_memory: str) -> dict[str, str]:
    out = folder / name
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalward",
            "run",
            str(folder / "orders.evalset.json"),
            "--agent",
            f"{folder / 'shop.py'}:answer",
            "--json",
            str(out / "run.json"),
            "--junit",
            str(out / "junit.xml"),
            "--markdown",
            str(out / "report.md"),
        ],
        cwd=folder,
        env={
            **os.environ,
            "EVALWARD_DB": f"sqlite:///{out}.db",
            "EVALWARD_MAX_RECORDS_IN_MEMORY": max_in_memory,
            "COLUMNS": "160",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 1, completed.stderr  # some cases fail: the gate of a plain run says so
    reports = {path.name: path.read_text(encoding="utf-8") for path in sorted(out.iterdir())}
    reports["terminal"] = completed.stdout
    return reports


_TIMES = re.compile(
    r'"(?:started_at|finished_at|latency_s|run_id)": [^,\n]*|time="[^"]*"|timestamp="[^"]*"'
    r"|\b\d{8}T\d{6}-[0-9a-f]{6}\b|\b[0-9a-f]{12,32}\b|\d+(?:\.\d+)?\s?(?:ms|s)\b|\d{4}-\d\d-\d\dT[\d:.+]+Z?"
)


def without_ids_and_times(text: str) -> str:
    shown = (TIMED_METRIC, TIMED_METRIC.replace("_", "\\_"))  # as is, and escaped for markdown
    lines = (line for line in text.splitlines() if not any(name in line for name in shown))
    return _TIMES.sub("…", "\n".join(lines))


TIMED_METRIC = "invocation_duration_v1"
"""ADK's informational efficiency metric whose score is the turn's duration: a time like any other."""


def without_times(value: Any) -> Any:
    """The parsed JSON report with every time, id and duration score replaced by a placeholder."""
    if isinstance(value, dict):
        if value.get("name") == TIMED_METRIC:
            return {**value, "score": "…", "explanation": "…", "details": "…"}
        return {
            key: "…"
            if key in ("started_at", "finished_at", "latency_s", "run_id", TIMED_METRIC)
            else without_times(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value


def scores(run_json: str) -> list[Any]:
    return [(c["case_id"], c["status"], c["metrics"]) for c in without_times(json.loads(run_json))["cases"]]


def test_reports_are_the_same_with_results_in_memory_or_spilled(tmp_path: Path) -> None:
    write_eval_set(tmp_path)
    kept = run(tmp_path, "kept", str(CASES * 10))
    spilled = run(tmp_path, "spilled", "0")
    assert set(kept) == {"run.json", "junit.xml", "report.md", "terminal"}
    statuses = [status for _, status, _ in scores(kept["run.json"])]
    assert statuses.count("error") == CASES // 13 and statuses.count("failed") > 100  # a run worth reporting
    assert scores(spilled["run.json"]) == scores(kept["run.json"])
    kept_json, spilled_json = (without_times(json.loads(r.pop("run.json"))) for r in (kept, spilled))
    kept_json["summary"].pop(TIMED_METRIC), spilled_json["summary"].pop(TIMED_METRIC)
    assert spilled_json == kept_json
    for name in kept:
        assert without_ids_and_times(spilled[name]) == without_ids_and_times(kept[name]), name
