"""A crash is never mistaken for "criteria not met": exit 3, one line, and `evalward ci` still reports.

Exit 1 means the run finished and failed its criteria, so a bug in evalward must not exit 1. Any
unexpected exception ends with exit 3 and one line naming the exception, the evalward source line and where
to report it; the traceback only with `--debug` or `EVALWARD_DEBUG`. `evalward ci` still writes
`verdict=error`, a job summary and an error status on the commit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ci.conftest import PR_HEAD, Workspace, outputs, pull_request_payload, summary
from evalward._cli.main import main
from evalward.errors import EXIT_INFRASTRUCTURE, ISSUES_URL


def _explode(*_args: object, **_kwargs: object) -> None:
    raise KeyError("a bug: the planner lost 'case-7'")


def _main(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    return int(exited.value.code or 0)


def test_an_unexpected_exception_is_exit_3_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EVALWARD_DEBUG", raising=False)
    monkeypatch.setattr("evalward._cli.validate_cmd.prepare", _explode)  # where `validate` calls it
    assert _main(["validate", str(tmp_path)]) == EXIT_INFRASTRUCTURE
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert line.startswith("error: internal error: KeyError: ")
    assert "(at tests/security/test_crash_contract.py:" not in line  # the innermost evalward frame, not ours
    assert "evalward/" in line and ISSUES_URL in line and "EVALWARD_DEBUG=1" in line
    assert "Traceback" not in err


@pytest.mark.parametrize("how", ["--debug", "EVALWARD_DEBUG"])
def test_the_traceback_is_printed_on_request(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("evalward._cli.validate_cmd.prepare", _explode)  # where `validate` calls it
    argv = ["validate", str(tmp_path)]
    if how == "--debug":
        argv.insert(0, "--debug")
    else:
        monkeypatch.setenv("EVALWARD_DEBUG", "1")
    assert _main(argv) == EXIT_INFRASTRUCTURE
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_explode" in err
    assert err.strip().splitlines()[-1].startswith("error: internal error: KeyError")


@pytest.mark.parametrize("stage", ["running", "reporting"])
def test_evalward_ci_answers_a_crash_with_verdict_error_a_summary_and_an_error_status(
    stage: str, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace.push()
    target = "evalward._ci.ci_flow.run_and_gate" if stage == "running" else "evalward._ci.ci_flow.render_outcome"
    monkeypatch.setattr(target, _explode)
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)
    assert result.exit_code == EXIT_INFRASTRUCTURE
    assert outputs(env)["verdict"] == "error"
    assert "could not run" in summary(env) and "internal error: KeyError" in summary(env)
    assert "Traceback" not in log
    errored = [s for s in workspace.fake.statuses if s["sha"] == PR_HEAD and s["state"] == "error"]
    assert errored, workspace.fake.statuses


def test_a_catastrophic_regex_is_a_metric_error_within_the_run_timeout(tmp_path: Path) -> None:
    """`^(a|a)*$` on 40 a's and a b backtracks 2^40 times with `re`; with the time limit it is one case's
    metric error, and the run finishes."""
    evals = tmp_path / "redos.eval.json"
    evals.write_text(
        json.dumps(
            {
                "evalward": 1,
                "eval_set_id": "redos",
                "metrics": [{"name": "response_regex", "threshold": 1.0, "pattern": "^(a|a)*$"}],
                "cases": [{"id": "evil", "query": "say it"}],
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "agent.py").write_text("def run(request):\n    return {'response': 'a' * 40 + 'b'}\n", "utf-8")
    argv = [sys.executable, "-m", "evalward", "run", str(evals), "--agent", "agent.py:run", "--timeout", "5"]
    argv += ["--db", f"sqlite:///{tmp_path / 'h.db'}", "--json", str(tmp_path / "run.json")]
    completed = subprocess.run(
        argv,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr[-2000:]
    [case] = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["cases"]
    assert case["status"] == "error" and case["error"]["kind"] == "metric_error"
    assert "did not finish within 1 s" in case["error"]["message"]
