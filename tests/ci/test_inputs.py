"""Action inputs → EVALWARD_* variables, validation, fail-on, and the exit-code decision."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from evalward._ci import apply_action_inputs, decide_exit, parse_fail_on, recorded_verdict
from evalward._cli.main import cli
from evalward.errors import UsageError
from evalward.model.verdict import Finding, Verdict


def test_each_input_maps_to_its_variable_with_dashes_kept() -> None:
    env = {
        "INPUT_EVAL-PATHS": "evals/smoke\n evals/full  ",
        "INPUT_DATABASE-URL": "postgresql+psycopg://ci@db/evals",
        "INPUT_FAIL-ON": "regression, inconclusive",
        "INPUT_COMMIT-STATUS": "False",
        "INPUT_COMMENT": "On-Change",
        "INPUT_REPEAT": "3",
        "INPUT_SHARD": "2/4",
        "INPUT_BASELINE": "",  # a `with:` key set to "" is "not given"
    }
    applied = apply_action_inputs(env)
    assert env["EVALWARD_PATHS"] == "evals/smoke evals/full"
    assert env["EVALWARD_DB"] == "postgresql+psycopg://ci@db/evals"
    assert env["EVALWARD_FAIL_ON"] == "regression, inconclusive"
    assert env["EVALWARD_COMMIT_STATUS"] == "false"
    assert env["EVALWARD_COMMENT"] == "on-change"
    assert env["EVALWARD_REPEAT"] == "3" and env["EVALWARD_SHARD"] == "2/4"
    assert "EVALWARD_BASELINE" not in env and "baseline" not in applied


def test_run_inputs_judge_inputs_and_lists_map_too() -> None:
    env = {
        "INPUT_JUDGE-MODEL": "gpt-4o-mini",
        "INPUT_JUDGE-BASE-URL": "http://127.0.0.1:8000/v1",
        "INPUT_JUDGE-API-KEY-ENV": "MY_JUDGE_KEY",
        "INPUT_NO-JUDGE-CACHE": "yes",
        "INPUT_STEPWISE": "False",
        "INPUT_METRICS": "response_match_score=0.5\ntool_trajectory_avg_score",
        "INPUT_PASS-RULE": "Mean-Over-Runs",
        "INPUT_COMMENT-AUTHOR": "my-app[bot], octocat",
        "INPUT_BASELINE-RUN": "always",
        "INPUT_SETUP": "pip install -r requirements.txt\npip install -e .",
        "INPUT_ALLOW-PULL-REQUEST-TARGET": "i-understand-this-runs-untrusted-code",
    }
    apply_action_inputs(env)
    assert env["EVALWARD_JUDGE_MODEL"] == "gpt-4o-mini" and env["EVALWARD_JUDGE_API_KEY_ENV"] == "MY_JUDGE_KEY"
    assert env["EVALWARD_JUDGE_BASE_URL"] == "http://127.0.0.1:8000/v1"
    assert (env["EVALWARD_NO_JUDGE_CACHE"], env["EVALWARD_STEPWISE"]) == ("true", "false")
    assert env["EVALWARD_METRICS"] == "response_match_score=0.5 tool_trajectory_avg_score"
    assert env["EVALWARD_PASS_RULE"] == "mean-over-runs" and env["EVALWARD_BASELINE_RUN"] == "always"
    assert env["EVALWARD_COMMENT_AUTHOR"] == "my-app[bot] octocat"
    assert env["EVALWARD_SETUP"] == "pip install -r requirements.txt\npip install -e ."  # lines kept
    assert env["EVALWARD_ALLOW_PULL_REQUEST_TARGET"] == "i-understand-this-runs-untrusted-code"


def test_every_bad_input_is_reported_at_once() -> None:
    env = {
        "INPUT_REPEAT": "three",
        "INPUT_COMMENT": "sometimes",
        "INPUT_SHARD": "5/4",
        "INPUT_CHECK-RUN": "maybe",
        "INPUT_TIMEOUT": "-1",
        "INPUT_BASELINE-RUN": "sometimes",
        "INPUT_JUDGE-CONCURRENCY": "0",
        "INPUT_ALLOW-PULL-REQUEST-TARGET": "yes",
        "INPUT_COMMENT-AUTHOR": "@octocat",
    }
    with pytest.raises(UsageError) as caught:
        apply_action_inputs(env)
    message = str(caught.value)
    assert "input `repeat` (INPUT_REPEAT): expected a whole number of at least 1, found 'three'" in message
    assert "input `comment` (INPUT_COMMENT): expected one of always, on-change, on-failure, never" in message
    assert "input `shard` (INPUT_SHARD)" in message and "input `check-run` (INPUT_CHECK-RUN)" in message
    assert "input `timeout` (INPUT_TIMEOUT): expected a number of at least 0, found '-1'" in message
    assert "input `baseline-run` (INPUT_BASELINE-RUN): expected one of missing, always, never" in message
    assert "input `judge-concurrency` (INPUT_JUDGE-CONCURRENCY): expected a whole number of at least 1" in message
    assert (
        "input `allow-pull-request-target` (INPUT_ALLOW-PULL-REQUEST-TARGET): expected exactly "
        "'i-understand-this-runs-untrusted-code' (or leave it out), found 'yes'" in message
    )
    assert "input `comment-author` (INPUT_COMMENT-AUTHOR): expected GitHub logins" in message
    assert not any(key.startswith("EVALWARD_") for key in env)  # nothing applied when anything is wrong


def test_missing_required_inputs_exit_2_with_a_clear_message(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals").mkdir()
    env = {"INPUT_EVAL-PATHS": "evals", "GITHUB_EVENT_NAME": "workflow_dispatch", "INPUT_AGENT": ""}
    for key in ("EVALWARD_AGENT", "EVALWARD_PATHS", "GITHUB_EVENT_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
        monkeypatch.delenv(key, raising=False)
    before = dict(os.environ)
    try:
        result = CliRunner().invoke(cli, ["ci", "--db", f"sqlite:///{tmp_path}/h.db"], env=env)
    finally:
        # `evalward ci` copies the inputs onto EVALWARD_* in the real environment (as in the Action's process);
        # CliRunner restores only what it set itself, so put the environment back for the tests that follow
        os.environ.clear()
        os.environ.update(before)
    assert result.exit_code == 2
    assert "no agent: set the `agent` input (INPUT_AGENT), EVALWARD_AGENT" in result.output


def test_fail_on_parsing() -> None:
    assert parse_fail_on(None) == {"regression", "threshold"}
    assert parse_fail_on("none") == frozenset()
    assert parse_fail_on("Threshold inconclusive") == {"threshold", "inconclusive"}
    with pytest.raises(UsageError, match="unknown flaky"):
        parse_fail_on("regression,flaky")


def _verdict(outcome: str, *kinds: str) -> Verdict:
    findings = [Finding(kind=k, severity="blocking", message=k) for k in kinds]  # type: ignore[arg-type]
    return Verdict(outcome=outcome, reason="", findings=findings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcome", "kinds", "fail_on", "code", "conclusion"),
    [
        ("pass", (), {"regression", "threshold"}, 0, "success"),
        ("inconclusive", (), {"regression", "threshold"}, 0, "neutral"),
        ("fail", ("regression",), {"regression"}, 1, "failure"),
        ("fail", ("threshold",), {"regression"}, 0, "neutral"),  # a threshold miss, not asked to fail on
        ("fail", ("must_pass",), {"threshold"}, 1, "failure"),
        # strict turned it into a blocking finding: undecided, exit 2 (docs/gate.md §6), still a failing check
        ("fail", ("inconclusive",), {"inconclusive"}, 2, "failure"),
        ("fail", ("inconclusive", "regression"), {"inconclusive", "regression"}, 1, "failure"),
        ("fail", ("error",), {"threshold"}, 1, "failure"),  # hard gates fail whatever is named
        ("fail", ("error",), set(), 0, "neutral"),  # `none`: report only
    ],
)
def test_exit_code_by_fail_on(
    outcome: str, kinds: tuple[str, ...], fail_on: set[str], code: int, conclusion: str
) -> None:
    decision = decide_exit(_verdict(outcome, *kinds), fail_on)
    assert (decision.exit_code, decision.conclusion) == (code, conclusion)
    assert decision.state == ("failure" if code else "success")


def test_recorded_verdict_reads_only_the_second_line() -> None:
    assert recorded_verdict("<!-- evalward:CI/evals -->\n<!-- evalward-verdict: fail -->\nbody") == "fail"
    assert recorded_verdict("<!-- evalward:CI/evals -->\nbody\n<!-- evalward-verdict: fail -->") is None
