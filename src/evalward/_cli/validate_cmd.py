"""`evalward validate`: check eval files and criteria without running anything."""

from __future__ import annotations

import click

from evalward.errors import UsageError


@click.command("validate")
@click.argument("paths", nargs=-1, envvar="EVALWARD_PATHS", type=click.Path())
@click.option(
    "--test-config",
    "test_config",
    envvar="EVALWARD_TEST_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="A test_config.json used for every eval file instead of the one beside it",
)
def validate_command(paths: tuple[str, ...], test_config: str | None) -> None:
    """Check that every eval file in PATHS parses and its criteria are known; report every problem at once.

    Exit 0 when valid, 2 with the list of problems otherwise.
    """
    from evalward._cli.common import echo_warnings
    from evalward._pipeline import RunOptions, prepare
    from evalward.errors import printable
    from evalward.report.escape import workflow_command_safe

    if not paths:
        raise UsageError("no eval files given: pass files or directories")
    prepared = prepare(RunOptions(paths=list(paths), agent="-", config_path=test_config))
    echo_warnings(prepared.warnings)
    for eval_set in prepared.sets:
        # Counted from the set's per-case facts: a large file's cases are not read back to be counted.
        criteria = ", ".join(m.describe() for m in eval_set.criteria.metrics) or "none"
        # File names come from outside: one line each, and no workflow command (`::error …`) in a CI log.
        click.echo(
            workflow_command_safe(
                f"ok  {printable(eval_set.path or '')}  [{eval_set.format}]  set {eval_set.eval_set_id!r}: "
                f"{len(eval_set.cases)} cases, {eval_set.turn_count()} turns; "
                f"criteria ({eval_set.criteria.origin}): {criteria}"
            )
        )
