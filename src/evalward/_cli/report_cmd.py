"""`evalward report --from-artifact DIR`: post a results artifact from a `workflow_run` job. Logic: `evalward._ci`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click


@click.command("report")
@click.option(
    "--from-artifact",
    "artifact_dir",
    required=True,
    envvar="EVALWARD_FROM_ARTIFACT",
    type=click.Path(file_okay=False),
    help="The downloaded results artifact of `evalward ci` [env: EVALWARD_FROM_ARTIFACT]",
)
@click.option(
    "--comment",
    type=click.Choice(["always", "on-change", "on-failure", "never"]),
    envvar="EVALWARD_COMMENT",
    help="Sticky comment mode (default: the one the evals workflow used) [env: EVALWARD_COMMENT]",
)
@click.option("--commit-status/--no-commit-status", default=None, envvar="EVALWARD_COMMIT_STATUS")
@click.option("--check-run/--no-check-run", default=None, envvar="EVALWARD_CHECK_RUN")
@click.option(
    "--comment-author",
    "comment_authors",
    multiple=True,
    envvar="EVALWARD_COMMENT_AUTHOR",
    help="Login(s) that write the sticky comment (default github-actions[bot]) [env: EVALWARD_COMMENT_AUTHOR]",
)
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
    Exit codes: 0 posted, 2 the artifact is invalid or does not match, 3 GitHub refused or failed.
    """
    from evalward._ci import report_from_artifact

    result = report_from_artifact(
        Path(artifact_dir),
        env=os.environ,
        comment=comment,  # type: ignore[arg-type]
        commit_status=commit_status,
        check_run=check_run,
        bot_logins=comment_authors or ("github-actions[bot]",),
    )
    sys.exit(result.exit_code)
