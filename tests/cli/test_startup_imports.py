"""`evalward --help` answers at interpreter speed: the heavy modules load only for the commands that use them."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

HEAVY = (
    "pydantic",  # the option families are pydantic models: the group's own options are built without them
    "evalward.report",
    "evalward.redact",
    "evalward.store",
    "sqlalchemy",
    "alembic",
    "openai",
    "numpy",
    "rich",
    "jinja2",
    "markupsafe",
)
TEMPLATING = ("jinja2", "evalward.report.templating")
"""Loaded when an HTML page is rendered, and only then. (markupsafe is not watched here: a new history
database loads it through alembic's mako.)"""
DICE = Path(__file__).resolve().parents[2] / "examples" / "dice_agent"


def loaded_after(args: list[str], watched: tuple[str, ...], cwd: Path) -> list[str]:
    """The modules of `watched` that `evalward ARGS` (run in a fresh interpreter) has imported when it ends."""
    probe = (
        "import sys\n"
        "from evalward._cli.main import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {watched!r} if m in sys.modules), file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True, cwd=cwd
    )
    loaded: list[str] = ast.literal_eval(completed.stderr.strip().splitlines()[-1])
    return loaded


def imported_with(module: str) -> set[str]:
    """The modules a fresh interpreter holds after importing `module` alone."""
    probe = f"import sys, {module}\nprint(sorted(sys.modules))"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(ast.literal_eval(completed.stdout.strip()))


def test_help_imports_none_of_the_heavy_modules() -> None:
    probe = (
        "import sys\n"
        "from evalward._cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "Usage: evalward" in completed.stdout
    assert completed.stderr.strip().splitlines()[-1] == "[]", completed.stderr[-2000:]


# What a 1-case run of a JSON eval set with deterministic metrics never needs: the ORM, migrations, the judge and
# its client, the renderers of files nobody asked for, YAML, the pattern engine, the gate's statistics, the step
# scorers (no reference trajectory), the user simulator (no scenario), the TOML parser (no settings file).
NOT_FOR_A_PLAIN_RUN = (
    "sqlalchemy.orm",
    "alembic",
    "openai",
    "httpx",
    "numpy",
    "yaml",
    "regex",
    "jinja2",
    "evalward.judging.judged_case",
    "evalward.judging.judged_results",
    "evalward.metrics.judge",  # the package: any of its modules loads it
    "evalward.metrics.judge.spec",
    "evalward.metrics.judge.prompts",
    "evalward.metrics.judge.hallucinations",
    "evalward.metrics.judge.replies",
    "evalward.metrics.judge.fold",
    "evalward.report.html",
    "evalward.report.junit",
    "evalward.report.case_evidence",
    "evalward.report.verdict_view",
    "evalward.report.verdict_markdown",
    "evalward.report.verdict_terminal",
    "evalward.gate",
    "evalward.metrics.stepwise",
    "evalward.metrics.args",
    "evalward.runners.user_simulator",
    "evalward.openai_requests",
    "tomllib",
)


def test_a_plain_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    eval_set = {
        "eval_set_id": "one",
        "eval_cases": [
            {
                "eval_id": "roll",
                "conversation": [
                    {
                        "invocation_id": "i1",
                        "user_content": {"role": "user", "parts": [{"text": "roll a die"}]},
                        "final_response": {"role": "model", "parts": [{"text": "You rolled a 4"}]},
                        "intermediate_data": {"tool_uses": [{"name": "roll_die", "args": {"sides": 6}}]},
                    }
                ],
            }
        ],
    }
    (tmp_path / "one.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")
    (tmp_path / "agent.py").write_text(
        "def agent(request):\n"
        "    return {'response': 'You rolled a 4', 'tool_calls': [{'name': 'roll_die', 'args': {'sides': 6}}]}\n",
        encoding="utf-8",
    )
    report = tmp_path / "run.json"
    args = ["run", str(tmp_path / "one.evalset.json"), "--agent", f"{tmp_path / 'agent.py'}:agent"]
    args += ["--db", f"sqlite:///{tmp_path / 'history.db'}", "--json", str(report)]
    assert loaded_after(args, NOT_FOR_A_PLAIN_RUN, tmp_path) == []
    assert json.loads(report.read_text(encoding="utf-8"))["passed"] is True


def test_a_run_without_html_never_imports_jinja2(tmp_path: Path) -> None:
    args = ["run", str(DICE), "--agent", f"{DICE}/agent.py:root_agent", "--db", f"sqlite:///{tmp_path}/h.db"]
    markdown = [*args, "--markdown", str(tmp_path / "c.md"), "--json", str(tmp_path / "r.json")]
    assert loaded_after(markdown, TEMPLATING, tmp_path) == []
    assert (tmp_path / "c.md").is_file()
    # The probe sees it when a page is written: `gate --html` renders the report through the templates.
    run_id = json.loads((tmp_path / "r.json").read_text())["run_id"]
    html = ["gate", "--run", run_id, "--db", f"sqlite:///{tmp_path}/h.db", "--html", str(tmp_path / "r.html")]
    assert loaded_after(html, TEMPLATING, tmp_path) == sorted(TEMPLATING)
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_store_package_and_git_lookups_load_without_sqlalchemy() -> None:
    """`--no-history` runs still look up git (the run's commit); that must not import the database layer."""
    import evalward.store as store

    probe = "import sys\nimport evalward.store.gitinfo\nprint('sqlalchemy' in sys.modules)\n"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.strip() == "False", completed.stderr[-2000:]
    assert sorted(store.__all__) == sorted(store._HOME)
    assert all(getattr(store, name) is not None for name in store.__all__)


# What a 1-case run of the dice example (ADK eval set, trajectory + ROUGE-1 criteria, a Python callable) loads
# only on other paths: the other eval-file formats, the metric families its criteria do not name, the gate's
# verdict models, the HTML escaping of markdown reports.
NOT_FOR_A_DICE_RUN = (
    "evalward.loaders.native",
    "evalward.loaders.langsmith",
    "evalward.loaders.benchmarks",
    "evalward.loaders.multi_agent_cases",
    "evalward.loaders.adk_legacy",
    "evalward.metrics.trajectory",
    "evalward.metrics.trajectory_alignment",
    "evalward.metrics.trajectory_options",
    "evalward.metrics.trajectory_weighted",
    "evalward.metrics.tools",
    "evalward.metrics.multi_agent",
    "evalward.metrics.state",
    "evalward.metrics.response",
    "evalward.model.verdict",
    "html",
    "difflib",
)


def test_a_one_case_dice_run_loads_one_format_and_the_metrics_it_scores(tmp_path: Path) -> None:
    dice = json.loads((DICE / "dice.evalset.json").read_text(encoding="utf-8"))
    dice["eval_cases"] = dice["eval_cases"][:1]
    (tmp_path / "one.evalset.json").write_text(json.dumps(dice), encoding="utf-8")
    (tmp_path / "test_config.json").write_text((DICE / "test_config.json").read_text(encoding="utf-8"))
    report = tmp_path / "run.json"
    args = ["run", str(tmp_path), "--agent", f"{DICE}/agent.py:root_agent", "--db", f"sqlite:///{tmp_path}/h.db"]
    # What the terminal renderer's own import brings is not evalward's doing (rich 13, the oldest allowed,
    # imports `html` in rich.console; newer ones do not).
    watched = tuple(m for m in NOT_FOR_A_DICE_RUN if m not in imported_with("rich.console"))
    assert loaded_after([*args, "--json", str(report)], watched, tmp_path) == []
    scored = json.loads(report.read_text(encoding="utf-8"))
    assert scored["passed"] is True
    assert len(scored["cases"]) == 1


def test_a_quiet_run_prints_its_line_without_rich(tmp_path: Path) -> None:
    """`-q` prints one plain line; the terminal tables (and rich's import) are for the full report."""
    args = ["run", str(DICE), "--agent", f"{DICE}/agent.py:root_agent", "--no-history", "-q"]
    assert loaded_after(args, ("rich", "evalward.report.terminal"), tmp_path) == []
