"""`evalward run`: load eval sets, run the agent on every case, score, store and report."""

from __future__ import annotations

import sys
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from evalward._cli.click_options import options_from, report_file_options
from evalward._cli.common import echo_warnings, mark_resources_closed, stderr_is_terminal
from evalward._options.families import LocalRunValues, RecordingValues
from evalward._options.run_options import run_options_from
from evalward._options.run_values import RunValues
from evalward._pipeline import fingerprint_for, prepare, run_blocking
from evalward.context import detect_context
from evalward.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EvalwardError, InfrastructureError, UsageError
from evalward.runners import make_agent
from evalward.store import writer_process

if TYPE_CHECKING:
    from evalward.store.writer_process import HistoryProcess


@click.command("run")
@options_from(RunValues, required=("agent",))
@report_file_options
@options_from(RecordingValues)
@options_from(LocalRunValues)
def run_command(**kwargs: Any) -> None:
    """Run the agent on every case of the eval files in PATHS (files or directories), score it and report.

    Exit codes: 0 every criterion met, 1 not met, 2 bad input or usage, 3 infrastructure failure
    (the agent could not start, a judge or the database is unreachable), 130 interrupted.
    """
    code = execute_run(**kwargs)
    mark_resources_closed()  # the run closed its history database (`run_and_report`)
    sys.exit(code)


def execute_run(
    *,
    json_path: str | None,
    junit_path: str | None,
    markdown_path: str | None,
    detailed: bool,
    db_url: str | None,
    no_history: bool,
    resume_run_id: str | None,
    run_id: str | None,
    repository: str | None,
    commit: str | None,
    branch: str | None,
    base_branch: str | None,
    base_sha: str | None,
    pr_number: int | None,
    group_id: str | None,
    quiet: bool,
    **run_values: Any,
) -> int:
    """`evalward run`: `run_values` are the options of `RunValues` (`_options.families`)."""

    values = RunValues.from_values(run_values)
    if not values.paths:
        raise UsageError("no eval files given: pass files or directories (or set EVALWARD_PATHS)")
    # The history writer process (started by `_cli.entry` for a console run, else now) imports and opens the
    # database while the eval files load (`store.writer_process`).
    if no_history:
        writer_process.discard_prestarted()
    history = None if no_history else writer_process.take()
    try:
        context = detect_context(
            repository=repository,
            commit=commit,
            branch=branch,
            base_branch=base_branch,
            base_sha=base_sha,
            pr_number=pr_number,
            group_id=group_id,
        )
        prepared = prepare(run_options_from(values, run_id=run_id, context=context))
        echo_warnings(prepared.warnings)
    except BaseException:
        if history is not None:
            history.close()
        raise
    return run_and_report(
        prepared,
        history=None if history is None else history.open(db_url),
        resume_run_id=resume_run_id,
        json_path=json_path,
        junit_path=junit_path,
        markdown_path=markdown_path,
        detailed=detailed,
        quiet=quiet,
    )


def run_and_report(
    prepared: Any,
    *,
    history: HistoryProcess | None,
    resume_run_id: str | None,
    json_path: str | None,
    junit_path: str | None,
    markdown_path: str | None,
    detailed: bool,
    quiet: bool,
) -> int:
    """Run a prepared evaluation with a progress bar, write the report files, and return the exit code."""

    options = prepared.options
    resumable: Future[str | None] | None = None
    try:
        agent = make_agent(
            options.agent,
            cwd=options.agent_cwd,
            processes=options.agent_processes,
            openai_options=getattr(options, "agent_options", None),
        )
        if history is not None and resume_run_id is None:
            resumable = history.find_resumable(
                options.context.commit, fingerprint_for(prepared, agent), shard=options.shard
            )
            # At a terminal the user is asked before the run; in CI the note is printed when the answer is in,
            # after the run, which then need not wait for the database.
            found = resumable.result() if sys.stdin.isatty() else None
            if found is not None:
                resumable = None
                if click.confirm(
                    f"run {found} for this commit and these eval files was not finished; resume it?", default=True
                ):
                    resume_run_id = found
                else:
                    _note_resumable(found)

        progress_bar, progress_callback = _progress(quiet)
        try:
            if progress_bar is not None:
                progress_bar.start()
            run = run_blocking(
                prepared, store=history, resume_run_id=resume_run_id, progress=progress_callback, agent=agent
            )
        finally:
            if progress_bar is not None:
                progress_bar.stop()

        step_tables = ""
        if getattr(options, "step", False):
            from evalward.report.confusion import (  # start-up: only with --step
                confusions,
                render_confusion_markdown,
                render_confusion_text,
            )

            tables = confusions(run)
            step_tables = render_confusion_markdown(tables)
        write_reports(
            run, json_path=json_path, junit_path=junit_path, markdown_path=markdown_path, extra_markdown=step_tables
        )
        if quiet:  # one plain line: rich (and its import) only for the tables
            counts = run.counts()
            verdict = "PASSED" if run.passed else "FAILED"
            click.echo(f"{verdict}: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors")
        else:
            from rich.console import Console

            from evalward.report.terminal import print_run  # start-up: rich, not for --quiet

            # Logs (not a terminal) get a wide fixed width, so tables are not squeezed to 80 columns in CI.
            console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 120)
            print_run(run, console, detailed=detailed)
            if step_tables:
                click.echo("\n" + render_confusion_text(tables), nl=False)
            if prepared.judge_usage is not None:
                click.echo(prepared.judge_usage.describe())
            if prepared.simulator is not None:
                click.echo(prepared.simulator.describe())
        if history is not None:
            click.echo(f"run id: {run.run_id}")
        if resumable is not None and (found := resumable.result()) is not None:
            _note_resumable(found)
        if run.status == "cancelled":
            click.echo(f"interrupted: kept {len(run.cases)} finished case results", err=True)
            return EXIT_INTERRUPTED
        return EXIT_OK if run.passed else EXIT_FAILED

    finally:
        # Closed here, not left to the interpreter's exit: the writer process stores what it was sent and ends,
        # and SQLite checkpoints and removes its WAL file when the last connection closes.
        if history is not None:
            history.close()


def _note_resumable(run_id: str) -> None:
    click.echo(
        f"note: unfinished run {run_id} matches this commit and eval files; "
        f"`--resume {run_id}` runs only what it is missing",
        err=True,
    )


def open_history(db_url: str | None) -> Any:
    """Open (and migrate) the history database; unreachable databases are infrastructure errors."""
    from evalward.store import open_store  # start-up: a run's process never loads SQLAlchemy (its writer does)

    try:
        return open_store(db_url)
    except Exception as exc:  # a driver's connection error: report it, don't show a traceback
        if isinstance(exc, EvalwardError):
            raise
        raise InfrastructureError(f"cannot open the history database: {exc}") from exc


def write_reports(
    run: Any, *, json_path: str | None, junit_path: str | None, markdown_path: str | None, extra_markdown: str = ""
) -> None:
    """Write the report files asked for; `extra_markdown` (e.g. a confusion table) ends the markdown report."""

    def json_report(value: Any, target: TextIO) -> None:
        from evalward.run_json import write_json  # start-up: only with --json

        write_json(value, target)

    def junit_report(value: Any, target: TextIO) -> None:
        from evalward.report.junit import write_junit  # start-up: only with --junit

        write_junit(value, target)

    def markdown(value: Any, target: TextIO) -> None:
        from evalward.report.markdown import render_run_markdown  # start-up: only with --markdown

        text = render_run_markdown(value)
        target.write(f"{text.rstrip()}\n\n{extra_markdown}" if extra_markdown else text)

    # Each renderer is imported only when its file is asked for; the JSON and JUnit files are written case
    # by case (a run's cases may live in a temporary file, evalward.spill).
    for path, write in ((json_path, json_report), (junit_path, junit_report), (markdown_path, markdown)):
        if path:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.partial")  # a failure leaves no half-written report
            with partial.open("w", encoding="utf-8") as out:
                write(run, out)
            partial.replace(target)


def _progress(quiet: bool) -> tuple[Any, Any]:
    """A rich progress bar on an interactive stderr; nothing otherwise (CI logs stay clean)."""
    if quiet or not stderr_is_terminal():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("running cases"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("cases", total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update
