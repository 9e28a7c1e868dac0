"""`evalward ci`: the GitHub Action's entrypoint (and a laptop's, with the same variables). Logic: `evalward._ci`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from evalward._cli.click_options import (
    base_branch_option,
    baseline_run_option,
    group_id_option,
    report_file_options,
    run_id_option,
    run_value_options,
)
from evalward._cli.common import db_option


@click.command("ci", epilog="The working directory is EVALWARD_WORKING_DIRECTORY (input `working-directory`).")
@run_value_options(agent_required=False)
@report_file_options
@db_option
@click.option(
    "--baseline",
    default="auto",
    show_default=True,
    envvar="EVALWARD_BASELINE",
    help="auto | RUN_ID | commit:SHA | branch:NAME | none [env: EVALWARD_BASELINE]",
)
@baseline_run_option
@base_branch_option
@click.option(
    "--fail-on",
    envvar="EVALWARD_FAIL_ON",
    default="regression,threshold",
    show_default=True,
    help="What fails the step: regression, threshold, inconclusive (comma-separated), or none [env: EVALWARD_FAIL_ON]",
)
@click.option(
    "--comment",
    type=click.Choice(["always", "on-change", "on-failure", "never"]),
    default="always",
    show_default=True,
    envvar="EVALWARD_COMMENT",
    help="Sticky PR comment mode [env: EVALWARD_COMMENT]",
)
@click.option(
    "--comment-author",
    "comment_authors",
    multiple=True,
    envvar="EVALWARD_COMMENT_AUTHOR",
    help="Login(s) that write the sticky comment: github-actions[bot] with the job's token, the App's "
    "`<slug>[bot]` with an App token, your login with a PAT [env: EVALWARD_COMMENT_AUTHOR]",
)
@click.option(
    "--commit-status/--no-commit-status",
    default=True,
    envvar="EVALWARD_COMMIT_STATUS",
    help="Post the commit status evalward/NAME [env: EVALWARD_COMMIT_STATUS]",
)
@click.option(
    "--check-run/--no-check-run",
    default=True,
    envvar="EVALWARD_CHECK_RUN",
    help="Post a check run with annotations [env: EVALWARD_CHECK_RUN]",
)
@click.option(
    "--name", default="evals", show_default=True, envvar="EVALWARD_NAME", help="Suite name [env: EVALWARD_NAME]"
)
@click.option(
    "--results-artifact",
    default="evalward-results",
    show_default=True,
    envvar="EVALWARD_RESULTS_ARTIFACT",
    type=click.Path(file_okay=False),
    help="Folder for run/verdict JSON, the HTML report, PR number and head SHA [env: EVALWARD_RESULTS_ARTIFACT]",
)
@click.option(
    "--merge-shards",
    envvar="EVALWARD_MERGE_SHARDS",
    type=click.Path(file_okay=False),
    help="Merge the shard artifacts under DIR (fails closed), then gate and report [env: EVALWARD_MERGE_SHARDS]",
)
@click.option(
    "--server-url",
    envvar="EVALWARD_SERVER_URL",
    help="Upload the run to an evalward server; its token is EVALWARD_SERVER_TOKEN [env: EVALWARD_SERVER_URL]",
)
@click.option(
    "--setup",
    envvar="EVALWARD_SETUP",
    metavar="COMMANDS",
    help="Shell commands (bash, one per line) run before the evals, e.g. `pip install -r requirements.txt`; "
    "a failure exits 3 [env: EVALWARD_SETUP]",
)
@click.option(
    "--allow-pull-request-target",
    envvar="EVALWARD_ALLOW_PULL_REQUEST_TARGET",
    metavar="CONSENT",
    help="Run on pull_request_target, which gives PR code a write token and secrets: only with the value "
    "i-understand-this-runs-untrusted-code [env: EVALWARD_ALLOW_PULL_REQUEST_TARGET]",
)
@run_id_option
@group_id_option
@click.pass_context
def ci_command(ctx: click.Context, /, **kwargs: Any) -> None:
    """Run, store, gate and report for the GitHub Actions event in the environment (GITHUB_EVENT_NAME, …).

    pull_request: gate against the baseline at the PR's merge-base (computed with git: check out with
    fetch-depth 0), sticky comment + status + check run on the head SHA. push: store the baseline, status +
    check run on the pushed commit. Other events: job summary.
    Exit codes: 0 passed (or failed only on what --fail-on leaves out), 1 failed, 2 bad input, 3 infrastructure.
    Reporting problems (read-only token on forks, GitHub outages) are warnings and never change the code.
    """
    from evalward._ci import CiOptions, run_ci
    from evalward.store.gitinfo import repository_root, safe_directory_env

    loaded = ctx.obj
    settings = loaded.settings if loaded is not None else None
    options = CiOptions.from_values(
        {
            **kwargs,
            "gate_settings": dict(settings.gate) if settings is not None else {},
            "config_path": loaded.path if loaded is not None else None,
        }
    )
    # In the container the checkout belongs to the runner's user, not root: let every git evalward, the setup
    # commands and the agent start in this process trust it (store.gitinfo).
    repository = repository_root(Path.cwd())
    if repository is not None:
        os.environ.update(safe_directory_env(repository, os.environ))
    result = run_ci(options, env=os.environ, err=sys.stderr)
    sys.exit(result.exit_code)
