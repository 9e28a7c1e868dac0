"""`evalward ci`'s own options (the gate, reporting, where it runs), each defined once (`evalward._options`).

The run values, report files and recording options it shares with `evalward run` are the families of
`_options.families`; `CiOptions` (`_ci.inputs`) holds them all.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from evalward._gating import BaselineRunMode
from evalward._options.option import Option
from evalward.errors import UsageError
from evalward.github.publish import CommentMode
from evalward.github.sticky import DEFAULT_BOT_LOGINS

PULL_REQUEST_TARGET_CONSENT = "i-understand-this-runs-untrusted-code"
"""The value of `allow-pull-request-target` that lets evalward run on `pull_request_target` (module `event`)."""
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
NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._/-]{0,99}$")
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


def _fail_on_problem(value: str) -> str | None:
    try:
        parse_fail_on(value)
    except UsageError as exc:
        return str(exc).split(": ", 1)[1]
    return None


def _name_problem(value: str) -> str | None:
    if NAME_OK.match(value):
        return None
    return (
        f"expected letters, digits, spaces and . _ / - (at most 100, starting with a letter or digit), found {value!r}"
    )


def _logins_problem(value: str) -> str | None:
    bad = [login for login in re.split(r"[,\s]+", value) if login and not _LOGIN_OK.match(login)]
    return f"expected GitHub logins such as my-app[bot], found {', '.join(map(repr, bad))}" if bad else None


def _consent_problem(value: str) -> str | None:
    if value == PULL_REQUEST_TARGET_CONSENT:
        return None
    return f"expected exactly {PULL_REQUEST_TARGET_CONSENT!r} (or leave it out), found {value!r}"


class CiValues(BaseModel):
    """What `evalward ci` alone is told: the baseline and what fails the step, the reports, where it runs."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    working_directory: Annotated[
        str | None,
        Option(
            flag=None,
            env="EVALWARD_WORKING_DIRECTORY",
            toml=None,
            section="where it runs",
            help="Folder to run in (relative to the workspace); eval paths, evalward.toml, setup and "
            "results-artifact are relative to it",
            input="working-directory",
            default_text="the workspace",
        ),
    ] = None
    setup: Annotated[
        str | None,
        Option(
            flag="--setup",
            env="EVALWARD_SETUP",
            toml=None,
            metavar="COMMANDS",
            section="where it runs",
            help="Shell commands (bash, one per line) run before the evals in the action's environment, e.g. "
            "pip install -r requirements.txt; a failure exits 3",
            list_separators="",
        ),
    ] = None
    allow_pull_request_target: Annotated[
        Literal["i-understand-this-runs-untrusted-code"] | None,
        Option(
            flag="--allow-pull-request-target",
            env="EVALWARD_ALLOW_PULL_REQUEST_TARGET",
            toml=None,
            metavar="CONSENT",
            section="where it runs",
            help="Run on pull_request_target, which gives PR code a write token and secrets: only with the value "
            "i-understand-this-runs-untrusted-code",
            input_check=_consent_problem,
        ),
    ] = None
    baseline: Annotated[
        str,
        Option(
            flag="--baseline",
            env="EVALWARD_BASELINE",
            toml=None,
            section="history and the gate",
            help="auto | RUN_ID | commit:SHA | branch:NAME | none",
            input_help="auto, a run id, commit:SHA, branch:NAME or none.",
        ),
    ] = "auto"
    baseline_run: Annotated[
        BaselineRunMode,
        Option(
            flag="--baseline-run",
            env="EVALWARD_BASELINE_RUN",
            toml=None,
            section="history and the gate",
            help="Run the base side on demand: missing = only for cases the stored baseline lacks, always, never",
        ),
    ] = "missing"
    fail_on: Annotated[
        frozenset[str],
        Option(
            flag="--fail-on",
            env="EVALWARD_FAIL_ON",
            toml=None,
            section="history and the gate",
            help="What fails the step: regression, threshold, inconclusive (comma-separated), or none (report only)",
            input_check=_fail_on_problem,
        ),
    ] = DEFAULT_FAIL_ON
    server_url: Annotated[
        str | None,
        Option(
            flag="--server-url",
            env="EVALWARD_SERVER_URL",
            toml=None,
            section="history and the gate",
            help="Upload the run to an evalward server (`evalward serve`) at this URL, with the token "
            "EVALWARD_SERVER_TOKEN (team history without a shared database)",
        ),
    ] = None
    server_token: Annotated[
        str | None,
        Option(
            flag=None,
            env="EVALWARD_SERVER_TOKEN",
            toml=None,
            section="history and the gate",
            help="Upload token of this repository on the evalward server (a secret: never a flag or a settings key)",
            input="server-token",
        ),
    ] = None
    name: Annotated[
        str,
        Option(
            flag="--name",
            env="EVALWARD_NAME",
            toml=None,
            section="reporting",
            help="Name of this suite, used in the status context, the check name and the comment marker",
            input_check=_name_problem,
        ),
    ] = DEFAULT_NAME
    comment: Annotated[
        CommentMode,
        Option(
            flag="--comment",
            env="EVALWARD_COMMENT",
            toml=None,
            section="reporting",
            help="Sticky PR comment: always, on-change (the verdict changed), on-failure (and once more when it "
            "passes again) or never",
        ),
    ] = "always"
    comment_authors: Annotated[
        tuple[str, ...],
        Option(
            flag="--comment-author",
            env="EVALWARD_COMMENT_AUTHOR",
            input="comment-author",
            toml=None,
            section="reporting",
            help="Login(s) that write the sticky comment: github-actions[bot] (with the job's token), your App's "
            "<slug>[bot] with an App token, or the user of a PAT",
            list_separators=r"[,\s]+",
            input_check=_logins_problem,
        ),
    ] = DEFAULT_BOT_LOGINS
    commit_status: Annotated[
        bool,
        Option(
            flag="--commit-status",
            off_flag="--no-commit-status",
            env="EVALWARD_COMMIT_STATUS",
            toml=None,
            section="reporting",
            help="Post a commit status (context evalward/<name>) on the head SHA",
        ),
    ] = True
    check_run: Annotated[
        bool,
        Option(
            flag="--check-run",
            off_flag="--no-check-run",
            env="EVALWARD_CHECK_RUN",
            toml=None,
            section="reporting",
            help="Post a check run with annotations on the eval files (needs checks:write)",
        ),
    ] = True
    results_artifact: Annotated[
        str | None,
        Option(
            flag="--results-artifact",
            env="EVALWARD_RESULTS_ARTIFACT",
            toml=None,
            path="folder",
            section="reporting",
            help="Folder to write the results artifact to (run, verdict, HTML report, PR number and head SHA)",
        ),
    ] = DEFAULT_ARTIFACT_DIR
    merge_shards: Annotated[
        str | None,
        Option(
            flag="--merge-shards",
            env="EVALWARD_MERGE_SHARDS",
            toml=None,
            path="folder",
            section="reporting",
            metavar="DIR",
            help="Merge-and-gate job: the folder holding the shard jobs' results artifacts, merged (failing closed "
            "when one is missing), then gated and reported",
        ),
    ] = None

    @field_validator("fail_on", mode="before")
    @classmethod
    def _fail_on_text(cls, value: Any) -> Any:
        return parse_fail_on(value) if isinstance(value, str) else value

    @field_validator("comment_authors", mode="before")
    @classmethod
    def _authors(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [login for login in re.split(r"[,\s]+", value) if login]
        return tuple(value) or DEFAULT_BOT_LOGINS
