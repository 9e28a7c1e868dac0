"""The pydantic-evals comparison benchmark, reduced: both tools score every generated case with both checks and
pass them all, and a wrong expectation fails its case on either side, so the benchmark's count check has teeth.
(The timing: `python benchmarks/vs_pydantic_evals.py`.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    pytest.importorskip("pydantic_evals")
    return load_benchmark("vs_pydantic_evals")


def test_every_command_scores_and_passes_every_case(bench: ModuleType, tmp_path: Path) -> None:
    bench.write_project(tmp_path, 3)
    for label, command in bench.commands(tmp_path).items():
        bench.measure(label, command, tmp_path, 3)  # exits unless all 3 cases were scored and passed
    bench.check_evalward_scores(tmp_path, 3)  # exits unless each case has both metrics at 1.0


@pytest.mark.parametrize("wrong", ["tool call", "answer"])
def test_a_wrong_expectation_fails_its_case_on_every_side(bench: ModuleType, tmp_path: Path, wrong: str) -> None:
    bench.write_project(tmp_path, 3)
    dataset_path, eval_set_path = tmp_path / "orders.dataset.json", tmp_path / "orders.eval.json"
    dataset = json.loads(dataset_path.read_text(encoding="utf-8"))
    eval_set = json.loads(eval_set_path.read_text(encoding="utf-8"))
    peer_case, case = dataset["cases"][1], eval_set["cases"][1]
    if wrong == "tool call":
        peer_case["metadata"]["expected_tool_calls"][0]["args"]["order_id"] = 99
        case["expect"]["tool_calls"][0]["args"]["order_id"] = 99
    else:
        peer_case["expected_output"] = case["expect"]["response"] = "Order 99 has shipped."
    dataset_path.write_text(json.dumps(dataset), encoding="utf-8")
    eval_set_path.write_text(json.dumps(eval_set), encoding="utf-8")
    for command in bench.commands(tmp_path).values():
        done = bench.run_measured(command, tmp_path, bench.environment())
        assert "2 passed, 1 failed, 0 errors" in done.output, done.output
        assert bench.passed_cases(done.output) == 0
