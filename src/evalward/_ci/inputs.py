"""The Action's inputs: `INPUT_<NAME>` → the `EVALWARD_*` variable of the matching `evalward ci` option.

The runner exports each input as `INPUT_<NAME>` (upper-cased, dashes kept, docs/github.md §2) and enforces
neither `required` nor types. `apply_action_inputs` validates every given input at once and copies it onto
its variable, so the Action, a laptop and the daemon share one code path; an empty input means "not given",
and a given input wins over the same `EVALWARD_*` variable. `CiOptions` is everything `evalward ci` can be
told, whichever way it was told.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from evalward._run_values import RunValues, parse_rate
from evalward.errors import UsageError
from evalward.github.actions import read_inputs
from evalward.github.publish import COMMENT_MODES, CommentMode
from evalward.github.sticky import DEFAULT_BOT_LOGINS

ACTION_INPUTS: dict[str, str] = {
    # what runs (the options of `evalward run`; see evalward._cli.click_options)
    "eval-paths": "EVALWARD_PATHS",
    "agent": "EVALWARD_AGENT",
    "test-config": "EVALWARD_TEST_CONFIG",
    "metrics": "EVALWARD_METRICS",
    "metrics-mode": "EVALWARD_METRICS_MODE",
    "evaluator-types": "EVALWARD_EVALUATOR_TYPES",
    "repeat": "EVALWARD_REPEAT",
    "concurrency": "EVALWARD_CONCURRENCY",
    "timeout": "EVALWARD_TIMEOUT",
    "rate-limit": "EVALWARD_RATE_LIMIT",
    "retries": "EVALWARD_RETRIES",
    "shard": "EVALWARD_SHARD",
    "case": "EVALWARD_CASE",
    "sample": "EVALWARD_SAMPLE",
    "initial-session-file": "EVALWARD_INITIAL_SESSION_FILE",
    "pass-rule": "EVALWARD_PASS_RULE",
    "agent-processes": "EVALWARD_AGENT_PROCESSES",
    "judge-model": "EVALWARD_JUDGE_MODEL",
    "judge-base-url": "EVALWARD_JUDGE_BASE_URL",
    "judge-api-key-env": "EVALWARD_JUDGE_API_KEY_ENV",
    "judge-concurrency": "EVALWARD_JUDGE_CONCURRENCY",
    "judge-prices": "EVALWARD_JUDGE_PRICES",
    "no-judge-cache": "EVALWARD_NO_JUDGE_CACHE",
    "user-model": "EVALWARD_USER_MODEL",
    "user-base-url": "EVALWARD_USER_BASE_URL",
    "user-max-turns": "EVALWARD_USER_MAX_TURNS",
    "step": "EVALWARD_STEP",
    "stepwise": "EVALWARD_STEPWISE",
    "system-prompt": "EVALWARD_SYSTEM_PROMPT",
    "tools": "EVALWARD_TOOLS",
    "max-steps": "EVALWARD_MAX_STEPS",
    "json": "EVALWARD_JSON",
    "junit": "EVALWARD_JUNIT",
    "markdown": "EVALWARD_MARKDOWN",
    # where it runs
    "config": "EVALWARD_CONFIG",
    "working-directory": "EVALWARD_WORKING_DIRECTORY",
    "setup": "EVALWARD_SETUP",
    "allow-pull-request-target": "EVALWARD_ALLOW_PULL_REQUEST_TARGET",
    # history and the gate
    "database-url": "EVALWARD_DB",
    "baseline": "EVALWARD_BASELINE",
    "baseline-run": "EVALWARD_BASELINE_RUN",
    "base-branch": "EVALWARD_BASE_BRANCH",
    "fail-on": "EVALWARD_FAIL_ON",
    "server-url": "EVALWARD_SERVER_URL",
    "server-token": "EVALWARD_SERVER_TOKEN",
    # reporting
    "name": "EVALWARD_NAME",
    "comment": "EVALWARD_COMMENT",
    "comment-author": "EVALWARD_COMMENT_AUTHOR",
    "commit-status": "EVALWARD_COMMIT_STATUS",
    "check-run": "EVALWARD_CHECK_RUN",
    "results-artifact": "EVALWARD_RESULTS_ARTIFACT",
    "merge-shards": "EVALWARD_MERGE_SHARDS",
}
"""Action input → the `EVALWARD_*` variable of the matching `evalward ci` option (`github-token` is read as
`INPUT_GITHUB-TOKEN` directly and never copied anywhere)."""

PULL_REQUEST_TARGET_CONSENT = "i-understand-this-runs-untrusted-code"
"""The value of `allow-pull-request-target` that lets evalward run on `pull_request_target` (module `flow`)."""
FAIL_CLASSES: dict[str, frozenset[str]] = {
    "regression": frozenset({"regression", "newly_broken", "cost", "latency"}),
    "threshold": frozenset({"threshold", "must_pass"}),
    "inconclusive": frozenset({"inconclusive"}),
}
"""Which blocking finding kinds each `fail-on` value covers; other blocking kinds (errors, missing cases,
mismatches, no baseline) fail the step whenever `fail-on` is not `none`."""
DEFAULT_FAIL_ON = frozenset({"regression", "threshold"})
DEFAULT_NAME = "evals"
DEFAULT_ARTIFACT_DIR = "evalward-results"
BASELINE_RUN_MODES = ("missing", "always", "never")
NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._/-]{0,99}$")
_BOOLEANS = {"true": "true", "false": "false", "yes": "true", "no": "false", "1": "true", "0": "false"}
_LOGIN_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$")


def parse_fail_on(text: str | None) -> frozenset[str]:
    """`regression,threshold` (commas or spaces) → the set; `none` → empty (report only); unknown → UsageError."""
    if text is None or not text.strip():
        return DEFAULT_FAIL_ON
    items = [item for item in re.split(r"[,\s]+", text.strip().lower()) if item]
    unknown = [item for item in items if item not in (*FAIL_CLASSES, "none")]
    if unknown:
        raise UsageError(
            f"fail-on {text!r}: unknown {', '.join(unknown)}; expected a comma-separated subset of "
            "regression, threshold, inconclusive, or none"
        )
    if "none" in items and len(items) > 1:
        raise UsageError(f"fail-on {text!r}: `none` cannot be combined with other values")
    return frozenset(item for item in items if item != "none")


def _whole(minimum: int) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        if not value.isdigit() or int(value) < minimum:
            return f"expected a whole number of at least {minimum}, found {value!r}"
        return None

    return check


def _number(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    return None if number >= 0 else f"expected a number of seconds ≥ 0 (0 = no limit), found {value!r}"


def _choice(*choices: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value.lower() in choices else f"expected one of {', '.join(choices)}, found {value!r}"

    return check


def _boolean(value: str) -> str | None:
    return None if value.lower() in _BOOLEANS else f"expected true or false, found {value!r}"


def _fail_on(value: str) -> str | None:
    try:
        parse_fail_on(value)
    except UsageError as exc:
        return str(exc).split(": ", 1)[1]
    return None


def _rate(value: str) -> str | None:
    try:
        parse_rate(value)
    except UsageError:
        return f"expected N/s or N/min with N > 0, found {value!r}"
    return None


def _shard(value: str) -> str | None:
    index, sep, count = value.partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return None
    return f"expected I/N with 1 <= I <= N (e.g. ${{{{ matrix.shard }}}}/4), found {value!r}"


def _name(value: str) -> str | None:
    if NAME_OK.match(value):
        return None
    return (
        f"expected letters, digits, spaces and . _ / - (at most 100, starting with a letter or digit), found {value!r}"
    )


def _logins(value: str) -> str | None:
    bad = [login for login in re.split(r"[,\s]+", value) if login and not _LOGIN_OK.match(login)]
    return f"expected GitHub logins such as my-app[bot], found {', '.join(map(repr, bad))}" if bad else None


def _consent(value: str) -> str | None:
    if value == PULL_REQUEST_TARGET_CONSENT:
        return None
    return f"expected exactly {PULL_REQUEST_TARGET_CONSENT!r} (or leave it out), found {value!r}"


_CHECKS: dict[str, Callable[[str], str | None]] = {
    "repeat": _whole(1),
    "concurrency": _whole(1),
    "agent-processes": _whole(1),
    "judge-concurrency": _whole(1),
    "max-steps": _whole(1),
    "sample": _whole(1),
    "retries": _whole(0),
    "timeout": _number,
    "metrics-mode": _choice("add", "replace"),
    "pass-rule": _choice("per-run", "mean-over-runs"),
    "comment": _choice(*COMMENT_MODES),
    "baseline-run": _choice(*BASELINE_RUN_MODES),
    "commit-status": _boolean,
    "check-run": _boolean,
    "no-judge-cache": _boolean,
    "step": _boolean,
    "stepwise": _boolean,
    "fail-on": _fail_on,
    "rate-limit": _rate,
    "shard": _shard,
    "name": _name,
    "comment-author": _logins,
    "allow-pull-request-target": _consent,
}
"""Input → why its value is unusable (or None). Inputs without a check take any text."""
_LOWER_CASE = ("comment", "baseline-run", "metrics-mode", "pass-rule")
_LISTS = ("eval-paths", "metrics", "case", "comment-author")
"""Inputs holding several values, separated by spaces, commas (logins) or newlines."""


def apply_action_inputs(env: MutableMapping[str, str]) -> dict[str, str]:
    """Validate every given `INPUT_*` at once, then copy each onto its `EVALWARD_*` variable; return them.

    Lists (`eval-paths`, `metrics`, `case`, `comment-author`) may be separated by spaces or newlines; booleans accept
    true/false/yes/no/1/0; `setup` keeps its lines. Raises UsageError (exit 2) naming each bad input, its
    variable, what was expected and what was found, before anything is applied.
    """
    given = read_inputs(env, ACTION_INPUTS)
    problems = [
        f"input `{name}` (INPUT_{name.upper()}): {problem}"
        for name, value in given.items()
        if name in _CHECKS and (problem := _CHECKS[name](value)) is not None
    ]
    if problems:
        raise UsageError("invalid action inputs:\n" + "\n".join("  " + p for p in problems))
    for name, value in given.items():
        if name in _LISTS:
            value = " ".join(re.split(r"[,\s]+" if name == "comment-author" else r"\s+", value)).strip()
        elif _CHECKS.get(name) is _boolean:
            value = _BOOLEANS[value.lower()]
        elif name in _LOWER_CASE:
            value = value.lower()
        env[ACTION_INPUTS[name]] = value
    return given


def enter_working_directory(env: MutableMapping[str, str]) -> Path | None:
    """`working-directory` (EVALWARD_WORKING_DIRECTORY): make it the working directory of this process, before
    the settings file is read, so paths, evalward.toml and the setup commands are relative to it."""
    value = env.get("EVALWARD_WORKING_DIRECTORY", "").strip()
    if not value:
        return None
    folder = Path(value)
    if not folder.is_dir():
        raise UsageError(
            f"input `working-directory` (INPUT_WORKING-DIRECTORY, EVALWARD_WORKING_DIRECTORY): expected a folder "
            f"relative to {Path.cwd()}, found {value!r}, which is not one"
        )
    os.chdir(folder)
    return folder.resolve()


@dataclass
class CiOptions:
    """Everything `evalward ci` can be told (flags, `EVALWARD_*` variables, action inputs, evalward.toml)."""

    run: RunValues = field(default_factory=RunValues)
    """What runs and how it is scored: the same values as `evalward run`."""
    db_url: str | None = None
    baseline: str = "auto"
    baseline_run: str = "missing"
    """When the gate runs the base side on demand: `missing` (only the cases the stored baseline lacks),
    `always`, `never`. Carried to the gate (`_run_and_gate`)."""
    base_branch: str | None = None
    fail_on: frozenset[str] = DEFAULT_FAIL_ON
    comment: CommentMode = "always"
    commit_status: bool = True
    check_run: bool = True
    name: str = DEFAULT_NAME
    results_artifact: str | None = DEFAULT_ARTIFACT_DIR
    merge_shards: str | None = None
    json_path: str | None = None
    junit_path: str | None = None
    markdown_path: str | None = None
    comment_authors: tuple[str, ...] = DEFAULT_BOT_LOGINS
    server_url: str | None = None
    run_id: str | None = None
    group_id: str | None = None
    setup: str | None = None
    """Shell commands run before the evals (`setup` module)."""
    allow_pull_request_target: bool = False
    gate_settings: dict[str, Any] = field(default_factory=dict)
    config_path: str | None = None

    @property
    def shard(self) -> str | None:
        return self.run.shard

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> CiOptions:
        """From `evalward ci`'s keyword arguments (or a test's): run values go to `run`, the rest by name;
        None and empty values mean "not given". Bad values raise UsageError."""
        own = {f.name for f in fields(cls)} - {"run"}
        given = {k: v for k, v in values.items() if k in own and v is not None and v != ""}
        if isinstance(given.get("fail_on"), str):
            given["fail_on"] = parse_fail_on(given["fail_on"])
        if "comment_authors" in given:
            given["comment_authors"] = tuple(given["comment_authors"]) or DEFAULT_BOT_LOGINS
        consent = given.get("allow_pull_request_target")
        if isinstance(consent, str):
            problem = _consent(consent)
            if problem is not None:
                raise UsageError(f"--allow-pull-request-target (EVALWARD_ALLOW_PULL_REQUEST_TARGET): {problem}")
            given["allow_pull_request_target"] = True
        run = values.get("run")
        return cls(run=run if isinstance(run, RunValues) else RunValues.from_values(values), **given)
