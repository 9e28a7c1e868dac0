"""`evalward ci` when it reaches no verdict: the log line, the `::error` annotation, the job summary and
`verdict=error`, and (best effort) an error status on the commit; the exit code is kept (2 bad input,
3 infrastructure or a crash, reported in one line)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from evalward._ci.event import ClientFactory, event_mode
from evalward._ci.exit_code import passed_output
from evalward._ci.inputs import CiOptions
from evalward._ci.render import log_safe, md
from evalward._ci.result import CiResult, write_step_outputs
from evalward.errors import EvalwardError, InternalError
from evalward.github.actions import ActionsEnv, append_step_summary, format_annotation_command
from evalward.github.publish import Target, post_error_status
from evalward.report.check_run import STATUS_DESCRIPTION_MAX


def announce_error(
    message: str,
    exit_code: int,
    *,
    name: str,
    summary_path: Path | None,
    output_path: Path | None,
    out: TextIO,
    err: TextIO,
) -> None:
    """The log line, the `::error` annotation, the job summary and `verdict=error` for a run that reached no
    verdict."""
    kind = {2: "bad input", 3: "infrastructure"}.get(exit_code, "internal error")
    err.write(f"error: {log_safe(message)}\n")
    out.write(format_annotation_command("error", message, title="evalward could not run") + "\n")
    if summary_path is not None:
        append_step_summary(
            summary_path,
            f"### 💥 evalward: {md(name)} could not run\n\n{md(message)}\n\n"
            f"Exit code {exit_code} ({kind}); no verdict was reached.\n",
        )
    write_step_outputs(output_path, {"verdict": "error", "passed": passed_output(None), "regressions": "0"})


def report_startup_error(
    exc: BaseException,
    env: Mapping[str, str],
    *,
    name: str = "evals",
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> CiResult:
    """An error before the event could be read (the inputs, the settings file, the event payload, an option
    value) or an internal one: the log, the summary and `verdict=error`, from the file paths in `env` alone."""
    import click

    if isinstance(exc, EvalwardError | click.ClickException):
        exit_code, message = (
            exc.exit_code,
            (exc.format_message() if isinstance(exc, click.ClickException) else str(exc)),
        )
    else:
        crash = InternalError.from_exception(exc)
        exit_code, message = crash.exit_code, str(crash)
    summary, output = env.get("GITHUB_STEP_SUMMARY"), env.get("GITHUB_OUTPUT")
    announce_error(
        message,
        exit_code,
        name=name,
        summary_path=Path(summary) if summary else None,
        output_path=Path(output) if output else None,
        out=out or sys.stdout,
        err=err or sys.stderr,
    )
    return CiResult(exit_code=exit_code)


def as_reportable(exc: Exception) -> EvalwardError:
    """`exc` itself when it is meant for the user, else the one-line crash report (exit 3)."""
    return exc if isinstance(exc, EvalwardError) else InternalError.from_exception(exc)


def report_error(
    exc: EvalwardError,
    actions: ActionsEnv,
    options: CiOptions,
    target: Target,
    factory: ClientFactory,
    out: TextIO,
    err: TextIO,
) -> CiResult:
    """The run could not finish: say so on the log, the summary and (best effort) the commit; keep the code."""

    message = str(exc)
    announce_error(
        message,
        exc.exit_code,
        name=options.name,
        summary_path=actions.step_summary_path,
        output_path=actions.output_path,
        out=out,
        err=err,
    )
    notes: list[str] = []
    if options.commit_status and target.repository and target.head_sha and event_mode(actions) != "other":
        client = factory(actions)
        if client is not None:
            try:
                description = f"Could not run (exit {exc.exit_code}); see the job summary"
                notes = post_error_status(client, target, description[:STATUS_DESCRIPTION_MAX]).notes
            finally:
                client.close()
    for note in notes:
        out.write(format_annotation_command("warning", note, title="evalward reporting") + "\n")
    return CiResult(exit_code=exc.exit_code, notes=notes)
