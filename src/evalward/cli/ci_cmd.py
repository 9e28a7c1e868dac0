"""`evalward ci`: the GitHub Action's entrypoint (and a laptop's, with the same variables). Logic: `evalward.ci`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from evalward.cli.common import db_option


@click.command("ci")
@click.argument("paths", nargs=-1, envvar="EVALWARD_PATHS", type=click.Path())
@click.option("--agent", "-a", envvar="EVALWARD_AGENT", metavar="TARGET", help="The agent target [env: EVALWARD_AGENT]")
@click.option(
    "--test-config",
    "test_config",
    envvar="EVALWARD_TEST_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="A test_config.json for every eval file [env: EVALWARD_TEST_CONFIG]",
)
@click.option("--metric", "metrics", multiple=True, envvar="EVALWARD_METRICS", metavar="NAME[=THRESHOLD]")
@click.option("--metrics-mode", type=click.Choice(["add", "replace"]), default="add", envvar="EVALWARD_METRICS_MODE")
@click.option("--repeat", "-k", type=click.IntRange(min=1), default=1, envvar="EVALWARD_REPEAT", show_default=True)
@click.option(
    "--concurrency", "-j", type=click.IntRange(min=1), default=4, envvar="EVALWARD_CONCURRENCY", show_default=True
)
@click.option("--timeout", "timeout_s", type=float, default=120.0, envvar="EVALWARD_TIMEOUT", show_default=True)
@click.option("--rate-limit", envvar="EVALWARD_RATE_LIMIT", metavar="N/s")
@click.option("--retries", type=int, default=2, envvar="EVALWARD_RETRIES", show_default=True)
@click.option(
    "--pass-rule", type=click.Choice(["per-run", "mean-over-runs"]), default="per-run", envvar="EVALWARD_PASS_RULE"
)
@click.option("--agent-processes", type=int, default=1, envvar="EVALWARD_AGENT_PROCESSES")
@db_option
@click.option(
    "--baseline",
    default="auto",
    show_default=True,
    envvar="EVALWARD_BASELINE",
    help="auto | RUN_ID | commit:SHA | branch:NAME | none [env: EVALWARD_BASELINE]",
)
@click.option(
    "--base-branch", envvar="EVALWARD_BASE_BRANCH", help="The branch PRs merge into (default: from the event)"
)
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
@click.option("--shard", envvar="EVALWARD_SHARD", metavar="I/N", help="Run shard I of N only [env: EVALWARD_SHARD]")
@click.option(
    "--results-artifact",
    default="evalward-results",
    show_default=True,
    envvar="EVALWARD_RESULTS_ARTIFACT",
    type=click.Path(file_okay=False),
    help="Folder for run/verdict JSON + PR number + head SHA [env: EVALWARD_RESULTS_ARTIFACT]",
)
@click.option(
    "--merge-shards",
    envvar="EVALWARD_MERGE_SHARDS",
    type=click.Path(file_okay=False),
    help="Merge the shard artifacts under DIR (fails closed), then gate and report [env: EVALWARD_MERGE_SHARDS]",
)
@click.option("--json", "json_path", envvar="EVALWARD_JSON", type=click.Path(dir_okay=False))
@click.option("--junit", "junit_path", envvar="EVALWARD_JUNIT", type=click.Path(dir_okay=False))
@click.option("--markdown", "markdown_path", envvar="EVALWARD_MARKDOWN", type=click.Path(dir_okay=False))
@click.option(
    "--comment-author",
    "comment_authors",
    multiple=True,
    envvar="EVALWARD_COMMENT_AUTHOR",
    help="Login(s) that write the sticky comment (default github-actions[bot]) [env: EVALWARD_COMMENT_AUTHOR]",
)
@click.option("--server-url", envvar="EVALWARD_SERVER_URL", help="Upload the run to an evalward server [env]")
@click.option("--run-id", envvar="EVALWARD_RUN_ID", help="Id for the new run [env: EVALWARD_RUN_ID]")
@click.option("--group-id", envvar="EVALWARD_GROUP_ID", help="Tag shards of one logical run [env: EVALWARD_GROUP_ID]")
@click.pass_context
def ci_command(ctx: click.Context, /, **kwargs: Any) -> None:
    """Run, store, gate and report for the GitHub Actions event in the environment (GITHUB_EVENT_NAME, …).

    pull_request: gate against the PR base's baseline, sticky comment + status + check run on the head SHA.
    push: store the baseline, status + check run on the pushed commit. Other events: job summary.
    Exit codes: 0 passed (or failed only on what --fail-on leaves out), 1 failed, 2 bad input, 3 infrastructure.
    Reporting problems (read-only token on forks, GitHub outages) are warnings and never change the code.
    """
    from evalward.ci import CiOptions, parse_fail_on, run_ci

    loaded = ctx.obj
    settings = loaded.settings if loaded is not None else None
    options = CiOptions(
        paths=list(kwargs["paths"]),
        agent=kwargs["agent"],
        test_config=kwargs["test_config"],
        metrics=list(kwargs["metrics"]),
        metrics_mode=kwargs["metrics_mode"],
        repeat=kwargs["repeat"],
        concurrency=kwargs["concurrency"],
        timeout_s=kwargs["timeout_s"],
        rate_limit=kwargs["rate_limit"],
        retries=kwargs["retries"],
        pass_rule=kwargs["pass_rule"],
        agent_processes=kwargs["agent_processes"],
        db_url=kwargs["db_url"],
        baseline=kwargs["baseline"] or "auto",
        base_branch=kwargs["base_branch"],
        fail_on=parse_fail_on(kwargs["fail_on"]),
        comment=kwargs["comment"],
        commit_status=kwargs["commit_status"],
        check_run=kwargs["check_run"],
        name=kwargs["name"] or "evals",
        shard=kwargs["shard"] or None,
        results_artifact=kwargs["results_artifact"] or None,
        merge_shards=kwargs["merge_shards"] or None,
        json_path=kwargs["json_path"],
        junit_path=kwargs["junit_path"],
        markdown_path=kwargs["markdown_path"],
        comment_authors=tuple(kwargs["comment_authors"]) or ("github-actions[bot]",),
        server_url=kwargs["server_url"],
        run_id=kwargs["run_id"],
        group_id=kwargs["group_id"],
        gate_settings=dict(settings.gate) if settings is not None else {},
        config_path=loaded.path if loaded is not None else None,
    )
    result = run_ci(options, env=os.environ)
    sys.exit(result.exit_code)
