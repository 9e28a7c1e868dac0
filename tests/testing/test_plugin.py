"""A small test project using evalward's pytest plugin, run by a real `pytest` subprocess.

The project (written to a temporary directory) has a Python agent module, an ADK eval set with its
`test_config.json`, and tests that call `evaluate` (sync) and `evaluate_async` (async), one passing and
one failing; the session writes `--evalward-json`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

AGENT = textwrap.dedent(
    """\
    def root_agent(request):
        query = request["query"]
        if "weather" in query:
            city = query.rsplit(" ", 1)[-1]
            return {"response": f"It is sunny in {city}.",
                    "tool_calls": [{"name": "get_weather", "args": {"city": city}}]}
        # Wrong tool for everything else, so the second eval set fails its trajectory criterion.
        return {"response": "I cannot help with that.", "tool_calls": [{"name": "search", "args": {}}]}
    """
)


def adk_case(eval_id: str, query: str, response: str, tool: str, args: dict[str, str]) -> dict[str, object]:
    return {
        "eval_id": eval_id,
        "conversation": [
            {
                "user_content": {"role": "user", "parts": [{"text": query}]},
                "final_response": {"role": "model", "parts": [{"text": response}]},
                "intermediate_data": {"tool_uses": [{"name": tool, "args": args}]},
            }
        ],
        "session_input": {"app_name": "weather", "user_id": "u"},
    }


TESTS = textwrap.dedent(
    """\
    import pytest

    from evalward.testing import evaluate, evaluate_async


    def test_weather_passes():
        run = evaluate(agent="weather_agent:root_agent", eval_set="evals/good", num_runs=2)
        assert run.passed and run.repetitions == 2


    async def test_booking_fails_with_every_failure_listed():
        await evaluate_async(agent="weather_agent:root_agent", eval_set="evals/bad", num_runs=2)


    async def test_sync_form_inside_a_loop_points_to_the_async_form():
        with pytest.raises(RuntimeError, match="evaluate_async"):
            evaluate(agent="weather_agent:root_agent", eval_set="evals/good")
    """
)


def make_project(root: Path) -> None:
    (root / "weather_agent.py").write_text(AGENT, encoding="utf-8")
    (root / "test_weather.py").write_text(TESTS, encoding="utf-8")
    (root / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
        encoding="utf-8",
    )
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}}
    good = root / "evals" / "good"
    bad = root / "evals" / "bad"
    for folder in (good, bad):
        folder.mkdir(parents=True)
        (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    good_set = {
        "eval_set_id": "weather",
        "eval_cases": [
            adk_case("paris", "weather in Paris", "It is sunny in Paris.", "get_weather", {"city": "Paris"})
        ],
    }
    bad_set = {
        "eval_set_id": "booking",
        "eval_cases": [
            adk_case("book", "book a table", "Your table is booked.", "book_table", {"party": "2"}),
            adk_case("rome", "weather in Rome", "It is sunny in Rome.", "get_weather", {"city": "Rome"}),
        ],
    }
    (good / "weather.test.json").write_text(json.dumps(good_set), encoding="utf-8")
    (bad / "booking.test.json").write_text(json.dumps(bad_set), encoding="utf-8")


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Autoload off, plugins named: the run does not depend on which other plugins this machine has.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(root)}
    env.pop("EVALWARD_PYTEST_JSON", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_asyncio.plugin",
            "-p",
            "evalward.testing.plugin",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_project_using_the_plugin_gets_one_assertion_per_test_and_a_run_json(tmp_path: Path) -> None:
    make_project(tmp_path)
    completed = run_pytest(tmp_path, "--evalward-json", "out/run.json")
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "1 failed, 2 passed" in output
    # Hand calculation for case 'book' (2 runs, both identical): trajectory EXACT search() vs book_table(...)
    # → 0.0 per run, mean 0.0 < 1.0; ROUGE-1 of "I cannot help with that." vs "Your table is booked." shares no
    # token → 0.0 < 0.5. Case 'rome' passes (trajectory 1.0, ROUGE 1.0).
    assert (
        "AssertionError: evalward: 1 of 2 case(s) failed (agent weather_agent:root_agent, 2 run(s) per case, "
        "mean over runs):"
    ) in output
    assert "- case 'book' (eval set 'booking'):" in output
    assert "tool_trajectory_avg_score failed: expected >= 1, got 0 = mean of 2 runs" in output
    assert "response_match_score failed: expected >= 0.5, got 0 = mean of 2 runs" in output
    assert "case 'rome'" not in output
    # The in-loop call raised before running, so 2 calls were recorded: paris x2 passed, rome x2 passed, book x2
    # failed.
    assert "evalward: wrote run" in output and "(2 evaluate call(s); 4 passed, 2 failed, 0 errors)" in output

    run = json.loads((tmp_path / "out" / "run.json").read_text())
    # 2 calls merged: weather/paris x2 + booking/{book,rome} x2.
    assert sorted({(c["eval_set_id"], c["case_id"]) for c in run["cases"]}) == [
        ("booking", "book"),
        ("booking", "rome"),
        ("weather", "paris"),
    ]
    assert len(run["cases"]) == 6
    assert run["pass_rule"] == "mean_over_runs"
    assert run["passed"] is False


def test_without_the_option_nothing_is_written(tmp_path: Path) -> None:
    make_project(tmp_path)
    completed = run_pytest(tmp_path, "-k", "weather_passes")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "evalward: wrote" not in completed.stdout
    assert not (tmp_path / "out").exists()


def test_the_plugin_is_registered_as_a_pytest11_entry_point_and_loaded_here(pytestconfig: object) -> None:
    from importlib.metadata import entry_points

    [entry] = [e for e in entry_points(group="pytest11") if e.name == "evalward"]
    assert entry.value == "evalward.testing.plugin"
    # This very session autoloaded it: the option exists.
    assert pytestconfig.getoption("evalward_json") is None  # type: ignore[attr-defined]


def test_under_xdist_the_controller_writes_every_workers_runs(tmp_path: Path) -> None:
    make_project(tmp_path)
    completed = run_pytest(tmp_path, "-p", "xdist.plugin", "-n", "2", "--evalward-json", "out/run.json")
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "1 failed, 2 passed" in output
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    # Both evaluate calls are in the one file, whichever worker made them.
    assert sorted({(c["eval_set_id"], c["case_id"]) for c in run["cases"]}) == [
        ("booking", "book"),
        ("booking", "rome"),
        ("weather", "paris"),
    ]
    assert len(run["cases"]) == 6 and run["passed"] is False
    assert "(2 evaluate call(s); 4 passed, 2 failed, 0 errors)" in output
