"""`evalward ci`: the GitHub Action's entrypoint (and a laptop's, with the same variables). Logic: `evalward._ci`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from evalward._ci import CiOptions, run_ci
from evalward._ci.ci_values import CiValues
from evalward._cli.click_options import (
    options_from,
    report_file_options,
)
from evalward._options.families import RecordingValues
from evalward._options.run_values import RunValues
from evalward.store.gitinfo import repository_root, safe_directory_env


@click.command("ci", epilog="The working directory is EVALWARD_WORKING_DIRECTORY (input `working-directory`).")
@options_from(RunValues)
@report_file_options
@options_from(RecordingValues)
@options_from(CiValues)
@click.pass_context
def ci_command(ctx: click.Context, /, **kwargs: Any) -> None:
    """Run, store, gate and report for the GitHub Actions event in the environment (GITHUB_EVENT_NAME, …).

    pull_request: gate against the baseline at the PR's merge-base (computed with git: check out with
    fetch-depth 0), sticky comment + status + check run on the head SHA. push: store the baseline, status +
    check run on the pushed commit. Other events: job summary.
    Exit codes: 0 passed (or failed only on what --fail-on leaves out), 1 failed, 2 bad input, 3 infrastructure.
    Reporting problems (read-only token on forks, GitHub outages) are warnings and never change the code.
    """

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
