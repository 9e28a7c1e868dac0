"""The option families besides `RunValues` (`_options.run_values`), each option defined once (`_options.option`).

- `ReportFileValues`: the report files (`--json`, `--junit`, `--markdown`);
- `RecordingValues`: where and as what a run is recorded (`--db`, `--run-id`, `--group-id`, `--base-branch`);
- `LocalRunValues`: `evalward run`'s options that a CI job takes from its event or does not need;
- `SettingsFileValues`: the settings file itself (the group's `--config`).

`evalward ci`'s own options are `_ci.ci_values.CiValues`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict

from evalward._options.group_options import SETTINGS_FILE
from evalward._options.option import Option


class ReportFileValues(BaseModel):
    """The report files a run writes besides the history."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    json_path: Annotated[
        str | None,
        Option(
            flag="--json",
            env="EVALWARD_JSON",
            path="file",
            help="Write the run as JSON",
            input_help="Also write the run as JSON to this file.",
        ),
    ] = None
    junit_path: Annotated[
        str | None,
        Option(
            flag="--junit",
            env="EVALWARD_JUNIT",
            path="file",
            help="Write JUnit XML",
            input_help="Also write JUnit XML to this file.",
        ),
    ] = None
    markdown_path: Annotated[
        str | None,
        Option(
            flag="--markdown",
            env="EVALWARD_MARKDOWN",
            path="file",
            help="Write the markdown report (the PR comment body)",
            input_help="Also write the markdown report (the PR comment body) to this file.",
        ),
    ] = None


class RecordingValues(BaseModel):
    """Where a run is recorded, and as what."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    db_url: Annotated[
        str | None,
        Option(
            flag="--db",
            env="EVALWARD_DB",
            input="database-url",
            toml="db",
            metavar="URL",
            section="history and the gate",
            help="History database URL (default: sqlite:///.evalward/history.db; PostgreSQL for teams: "
            "postgresql+psycopg://user@host/db)",
            default_text="`.evalward/history.db`",
        ),
    ] = None
    base_branch: Annotated[
        str | None,
        Option(
            flag="--base-branch",
            env="EVALWARD_BASE_BRANCH",
            section="history and the gate",
            help="The branch pull requests merge into (default: from the event or the run, else base_branch in "
            "evalward.toml, else the checkout's default branch: origin/HEAD, init.defaultBranch, main, master)",
            default_text="from the event",
        ),
    ] = None
    run_id: Annotated[
        str | None,
        Option(
            flag="--run-id",
            env="EVALWARD_RUN_ID",
            input=None,
            toml=None,
            no_input="a fixed id would collide across workflow runs; the flag and EVALWARD_RUN_ID stay for laptops",
            help="Id for the new run (default: time + random)",
        ),
    ] = None
    group_id: Annotated[
        str | None,
        Option(
            flag="--group-id",
            env="EVALWARD_GROUP_ID",
            input=None,
            toml=None,
            no_input="evalward ci derives the shard group from the workflow run; the flag and EVALWARD_GROUP_ID "
            "stay for laptops",
            help="Tag shards of one logical run for `evalward merge`",
        ),
    ] = None


class LocalRunValues(BaseModel):
    """`evalward run`'s own options: a CI job takes these from its event, or has no use for them."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    detailed: Annotated[
        bool,
        Option(
            flag="--detailed",
            env="EVALWARD_DETAILED",
            input=None,
            toml=None,
            no_input="prints every turn to a terminal; in CI the job summary, the check run and the HTML report "
            "hold every case",
            help="Print every turn: query, expected and actual response and tool calls",
        ),
    ] = False
    no_history: Annotated[
        bool,
        Option(
            flag="--no-history",
            env="EVALWARD_NO_HISTORY",
            input=None,
            toml=None,
            no_input="evalward ci always stores the run: it is the baseline of later pull requests",
            help="Do not write the run to the history database",
        ),
    ] = False
    resume_run_id: Annotated[
        str | None,
        Option(
            flag="--resume",
            env="EVALWARD_RESUME",
            input=None,
            toml=None,
            no_input="a CI job starts afresh; a cancelled job is re-run whole",
            metavar="RUN_ID",
            help="Run only what the stored run RUN_ID is missing",
        ),
    ] = None
    repository: Annotated[
        str | None,
        Option(
            flag="--repo",
            env="EVALWARD_REPO",
            input=None,
            toml=None,
            no_input="taken from the event (GITHUB_REPOSITORY)",
            help="owner/name (default: from GITHUB_REPOSITORY or git)",
        ),
    ] = None
    commit: Annotated[
        str | None,
        Option(
            flag="--commit",
            env="EVALWARD_COMMIT",
            input=None,
            toml=None,
            no_input="taken from the event: the PR head SHA or the pushed commit",
            help="Commit evaluated (default: PR head SHA, GITHUB_SHA or git HEAD)",
        ),
    ] = None
    branch: Annotated[
        str | None,
        Option(
            flag="--branch",
            env="EVALWARD_BRANCH",
            input=None,
            toml=None,
            no_input="taken from the event: the PR head branch or the pushed branch",
            help="Branch evaluated (default: from the Actions environment or git)",
        ),
    ] = None
    base_sha: Annotated[
        str | None,
        Option(
            flag="--base-sha",
            env="EVALWARD_BASE_SHA",
            input=None,
            toml=None,
            no_input="taken from the event: the PR base, whose merge-base with the head git computes",
            help="Base commit of the PR (for the merge-base)",
        ),
    ] = None
    pr_number: Annotated[
        int | None,
        Option(
            flag="--pr",
            env="EVALWARD_PR",
            input=None,
            toml=None,
            no_input="taken from the event: the pull request number",
            help="Pull request number",
        ),
    ] = None
    quiet: Annotated[
        bool,
        Option(
            flag="--quiet",
            short="-q",
            env=None,
            input=None,
            toml=None,
            no_input="shortens the terminal report; the Action's log is fixed and the full report is in the job "
            "summary",
            help="Print only the verdict line and the run id",
        ),
    ] = False


class SettingsFileValues(BaseModel):
    """The settings file (`evalward.toml`, `[tool.evalward]` in pyproject.toml): an option of the `evalward` group."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    config_file: Annotated[str | None, SETTINGS_FILE] = None
