"""`evalward report --from-artifact DIR`: post a results artifact from a `workflow_run` job. Logic: `evalward._ci`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from evalward._ci import report_from_artifact
from evalward._ci.ci_values import CiValues
from evalward._cli.click_builder import click_parameter
from evalward._options.option import option_field


@click.command("report")
@click.option(
    "--from-artifact",
    "artifact_dir",
    required=True,
    envvar="EVALWARD_FROM_ARTIFACT",
    type=click.Path(file_okay=False),
    help="The downloaded results artifact of `evalward ci` [env: EVALWARD_FROM_ARTIFACT]",
)
@click_parameter(option_field(CiValues, "comment"), default=None)
@click_parameter(option_field(CiValues, "commit_status"), default=None)
@click_parameter(option_field(CiValues, "check_run"), default=None)
@click_parameter(option_field(CiValues, "comment_authors"), default=None)
def report_command(
    artifact_dir: str,
    comment: str | None,
    commit_status: bool | None,
    check_run: bool | None,
    comment_authors: tuple[str, ...],
) -> None:
    """Post the comment, commit status and check run of a results artifact, without running any PR code.

    For fork pull requests: the `pull_request` workflow runs `evalward ci` with a read-only token and
    uploads its results artifact; a `workflow_run` workflow downloads it and runs this. The artifact is
    validated and its head SHA cross-checked with `workflow_run.head_sha` and the PR's head.
    --comment, --commit-status and --check-run default to what the evals workflow used (the artifact says).
    Exit codes: 0 posted, 2 the artifact is invalid or does not match, 3 GitHub refused or failed.
    """

    result = report_from_artifact(
        Path(artifact_dir),
        env=os.environ,
        comment=comment,  # type: ignore[arg-type]
        commit_status=commit_status,
        check_run=check_run,
        bot_logins=comment_authors or CiValues.model_fields["comment_authors"].default,
    )
    sys.exit(result.exit_code)
