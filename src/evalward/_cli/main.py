"""The `evalward` command: a thin, lazily-loaded click group.

Subcommands live one per module and are imported only when invoked, so `evalward --help` starts fast.
User errors (`EvalwardError`) print their message without a traceback and exit with their code; any
other exception is a crash: one line and exit 3 (the traceback with `--debug`); Ctrl-C exits 130.
Every line printed for an error is redacted (`evalward.redact`).
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any

import click

from evalward import __version__
from evalward._cli.click_builder import click_option_for, file_size_value
from evalward._cli.common import resources_closed
from evalward._options.group_options import SETTINGS_FILE
from evalward._options.option import ValueKind
from evalward.errors import EXIT_INTERRUPTED, EvalwardError, InternalError, debug_enabled
from evalward.gc_tuning import pause_during_start_up

# name -> (module, attribute, one-line help). The help is here so `--help` needs no imports.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("evalward._cli.run_cmd", "run_command", "Run the agent on eval sets, score it, store and report the run."),
    "validate": ("evalward._cli.validate_cmd", "validate_command", "Check eval files and criteria without running."),
    "schema": ("evalward._cli.schema_cmd", "schema_command", "Print the JSON Schema of the native eval format."),
    "metrics": ("evalward._cli.metrics_cmd", "metrics_command", "List the metrics evalward can score."),
    "gate": ("evalward._cli.gate_cmd", "gate_command", "Gate a stored run against its baseline."),
    "compare": ("evalward._cli.gate_cmd", "compare_command", "Compare any two stored runs case by case."),
    "runs": ("evalward._cli.history_cmd", "runs_command", "List stored runs."),
    "history": ("evalward._cli.history_cmd", "history_command", "Show a metric's history per case or branch."),
    "export": ("evalward._cli.history_cmd", "export_command", "Export stored runs as JSON."),
    "import": ("evalward._cli.history_cmd", "import_command", "Import runs from JSON files."),
    "merge": ("evalward._cli.history_cmd", "merge_command", "Merge shard runs into one run (fails closed)."),
    "db": ("evalward._cli.db_cmd", "db_group", "Manage the history database (upgrade, current)."),
    "record": (
        "evalward._cli.record_cmd",
        "record_command",
        "Run the agent on inputs and write an eval set to review.",
    ),
    "convert": ("evalward._cli.convert_cmd", "convert_command", "Convert eval files between ADK and native formats."),
    "import-traces": (
        "evalward._cli.import_traces_cmd",
        "import_traces_command",
        "Store OpenTelemetry traces as a run scored with an eval set.",
    ),
    "serve": (
        "evalward._cli.serve_cmd",
        "serve_command",
        "Run the GitHub App daemon: webhooks, job queue, API, dashboard.",
    ),
    "ci": ("evalward._cli.ci_cmd", "ci_command", "Run, gate and report for a GitHub Actions event (the Action)."),
    "report": ("evalward._cli.report_cmd", "report_command", "Post a results artifact's comment, status and checks."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = getattr(module, entry[1])
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """`evalward ci` answers every failure with `verdict=error` (the step's outputs, the job summary and an
        `::error` annotation), including those before it could start: bad inputs, a bad settings file, a
        bad option value. `run_ci` reports the rest itself."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if ctx.invoked_subcommand == "ci" and not isinstance(exc, click.exceptions.Exit | click.exceptions.Abort):
                import os

                from evalward._ci import report_startup_error  # start-up: only `evalward ci` loads the Action's modules

                report_startup_error(exc, os.environ)
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="evalward")
@click_option_for(SETTINGS_FILE, "config_file", kind=ValueKind("text"))
@click.option(
    "--debug",
    is_flag=True,
    envvar="EVALWARD_DEBUG",
    help="Print the full traceback when evalward crashes [env: EVALWARD_DEBUG]",
)
@click.option(
    "--max-file-size",
    envvar="EVALWARD_MAX_FILE_SIZE",
    callback=file_size_value,
    default=None,
    metavar="SIZE",
    help="Refuse eval, config, session and recording files larger than this (e.g. 200MB) [default: 50MB; "
    "env: EVALWARD_MAX_FILE_SIZE]",
)
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, debug: bool, max_file_size: int | None) -> None:
    """evalward: run agent eval sets, score trajectories and responses, gate pull requests on regressions.

    Every option can also be set through an EVALWARD_* environment variable (shown in each command's help)
    or in the settings file; precedence is flag > variable > file > default.
    """
    if ctx.resilient_parsing:
        return
    from evalward.reading import (  # start-up: `evalward --help` ends before this
        DEFAULT_MAX_FILE_SIZE,
        set_max_file_size,
    )

    # Set on every invocation, so an in-process caller's earlier value never leaks into the next command.
    set_max_file_size(max_file_size or DEFAULT_MAX_FILE_SIZE)
    from evalward.redact import (  # start-up: `evalward --help` ends before this
        configure_secret_names,
        refresh_from_environment,
    )

    # Each invocation reads the environment's secrets afresh (the process may have changed it since).
    refresh_from_environment()
    if ctx.invoked_subcommand == "ci":
        import os

        from evalward._ci import (  # start-up: only `evalward ci` loads the Action's modules
            apply_action_inputs,
            enter_working_directory,
        )

        # The Action's inputs (INPUT_*) become EVALWARD_* variables before anything reads them, the
        # settings file (the `config` input) included, which is found in the working directory.
        apply_action_inputs(os.environ)
        enter_working_directory(os.environ)
        config_file = config_file or os.environ.get("EVALWARD_CONFIG") or None
    from evalward.config import command_defaults, load_config  # start-up: pydantic, after `--help`

    loaded = load_config(config_file)
    configure_secret_names(loaded.settings.secret_names)  # secret variables the settings name, masked too
    # Every command takes the file's values as its options' defaults, by the options' Python names: a command
    # without an option simply has no use for that value (`db`, a group, keeps its own `--db`).
    defaults = command_defaults(loaded.settings)
    ctx.default_map = {name: defaults for name in COMMANDS if name != "db"}
    ctx.obj = loaded


def main(argv: list[str] | None = None) -> Any:
    """The command line (`argv`, else `sys.argv`, as the console script `_cli.entry` calls it): maps evalward errors
    to exit codes without tracebacks, and any other exception to exit 3 with one line (`errors.crash_line`)."""
    # The report and redaction modules are imported only when there is an error to print: `--help` stays fast.
    if argv is None:
        pause_during_start_up()  # the console script: see evalward.gc_tuning (already paused by `_cli.entry`)

    args = sys.argv[1:] if argv is None else argv
    resources_closed(reset=True)
    try:
        return cli.main(args=argv, prog_name="evalward", standalone_mode=False)
    except EvalwardError as exc:
        from evalward.report.escape import workflow_command_safe  # start-up: only when there is an error to print

        # A message may quote a file name or id from outside: no workflow command may survive in it (redacted too).
        click.echo(workflow_command_safe(f"error: {exc}"), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        from evalward.redact import redact  # start-up: only when there is a crash to print

        if debug_enabled(args):
            import traceback

            click.echo(redact("".join(traceback.format_exception(exc))), err=True)
        crash = InternalError.from_exception(exc)
        click.echo(redact(f"error: {crash}"), err=True)
        sys.exit(crash.exit_code)
    finally:
        if argv is None and resources_closed():
            # The process (the `evalward` command) ends now. The interpreter's shutdown would run full garbage
            # collections over everything still alive: the ~50,000 objects of sqlalchemy, pydantic, rich and
            # evalward cost a 1-case run ~30 ms, for memory the OS takes back anyway. Frozen objects are left to
            # it. Nothing is lost: the command closed what it opened, atexit callbacks and `weakref.finalize`
            # still run, objects freed by reference counting are still finalized, and Python never promised
            # `__del__` for objects alive at exit. In-process callers (`main([...])`) are never affected.
            gc.freeze()


if __name__ == "__main__":
    main()
