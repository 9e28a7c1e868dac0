"""Metrics from a third-party package: installed with pip, registered under the `evalward.metrics` entry-point
group, named in test_config.json like a built-in, their options validated as their `Options` models, scored in a
run (one of them `async def`), an option typo located with the option names the metric takes; and a run of
built-in metrics never reads the installed packages' entry points."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fakes" / "metric_package"

AGENT = """
import re
def answer(request):
    number = re.findall(r"\\d+", request["query"])[-1]
    return "Order " + number + " has shipped." if number != "3" else "It has shipped."
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package installed by pip into a folder of its own (the test's PYTHONPATH)."""
    target = tmp_path_factory.mktemp("site")
    # Built from a copy: the build writes beside its sources, and another worker may be building it too.
    source = tmp_path_factory.mktemp("package") / PACKAGE.name
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*install, "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (target / "order_metrics" / "__init__.py").is_file()
    return target


def project(folder: Path, criteria: dict[str, object]) -> Path:
    cases = [
        {
            "eval_id": f"order_{n}",
            "conversation": [
                {
                    "user_content": {"parts": [{"text": f"Where is order {n}?"}]},
                    "final_response": {"parts": [{"text": f"Order {n} has shipped."}]},
                }
            ],
        }
        for n in (1, 2, 3)
    ]
    (folder / "orders.evalset.json").write_text(json.dumps({"eval_set_id": "orders", "eval_cases": cases}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": criteria}, indent=2))
    (folder / "agent.py").write_text(AGENT)
    return folder / "orders.evalset.json"


def run(folder: Path, site: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "evalward", "run", "orders.evalset.json", "--agent", "agent.py:answer"]
    return subprocess.run(
        [*command, "--no-history", *extra],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_packages_metrics_are_named_in_test_config_and_scored(tmp_path: Path, site: Path) -> None:
    criteria = {
        "mentions_order": {"threshold": 1.0, "prefix": "Order "},
        "short_answer": {"threshold": 1, "max_words": 3},
    }
    project(tmp_path, criteria)
    done = run(tmp_path, site, "--json", "run.json")
    assert done.returncode == 1, done.stderr  # order 3's answer does not name it; the others are 4 words long
    report = json.loads((tmp_path / "run.json").read_text())
    results = {
        (case["case_id"], result["name"]): result for case in report["cases"] for result in case["metric_results"]
    }
    scores = {key: result["score"] for key, result in results.items() if key[1] in criteria}
    assert scores == {
        ("order_1", "mentions_order"): 1.0,
        ("order_2", "mentions_order"): 1.0,
        ("order_3", "mentions_order"): 0.0,
        # the async metric, awaited: "Order 1 has shipped." has 4 words, "It has shipped." 3
        ("order_1", "short_answer"): 0.0,
        ("order_2", "short_answer"): 0.0,
        ("order_3", "short_answer"): 1.0,
    }
    assert results["order_3", "mentions_order"]["explanation"].startswith("'Order 3' not named in the answer")
    assert results["order_1", "short_answer"]["explanation"].startswith("4 word(s), at most 3")
    assert {case["case_id"]: case["status"] for case in report["cases"]} == {
        "order_1": "failed",
        "order_2": "failed",
        "order_3": "failed",
    }


def test_a_packages_metric_option_typo_and_bad_value_are_located(tmp_path: Path, site: Path) -> None:
    criteria = {
        "mentions_order": {"threshold": 1.0, "prefx": "Order "},
        "short_answer": {"threshold": 1, "max_words": 0},
    }
    project(tmp_path, criteria)
    done = run(tmp_path, site)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if "test_config.json:" in line]
    assert len(lines) == 2, done.stderr
    typo, value = lines
    assert "test_config.json:5:7: mentions_order: unknown option 'prefx'" in typo  # the key, under `"threshold"`
    assert "at $.criteria.mentions_order.prefx" in typo and "expected one of prefix; found 'prefx'" in typo
    assert "test_config.json:9:20: short_answer: option max_words: Input should be greater than or equal to 1" in value
    assert "at $.criteria.short_answer.max_words" in value and "found number 0" in value


def test_without_the_package_the_name_is_an_unknown_criterion(tmp_path: Path) -> None:
    project(tmp_path, {"mentions_order": 1.0})
    done = run(tmp_path, tmp_path / "nothing-installed")
    assert done.returncode == 2 and "unknown criterion 'mentions_order'" in done.stderr


def test_a_run_of_built_in_metrics_never_reads_the_entry_points(tmp_path: Path) -> None:
    project(tmp_path, {"response_match_score": 0.5})
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['evalward', 'run', 'orders.evalset.json', '--agent', 'agent.py:answer', '--no-history', '-q']\n"
        "try:\n    runpy.run_module('evalward', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "import evalward.metrics.registry as registry\n"
        "print('entry points read:', registry._PLUGINS is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert "entry points read: False" in done.stdout, done.stderr


def test_evalward_metrics_lists_a_packages_metric(site: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "evalward", "metrics"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    listed = {line.split()[0]: line for line in done.stdout.splitlines() if "[package" in line}
    assert "[package, turn] The answer names the order the question asks about." in listed["mentions_order"]
    assert "[package, turn] The answer has at most max_words words." in listed["short_answer"]
