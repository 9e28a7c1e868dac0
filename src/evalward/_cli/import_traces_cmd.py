"""`evalward import-traces`: turn recorded traces into a stored run, scored with an eval set's criteria."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterable
from typing import Any

import click

from evalward._cli.common import db_option, echo_warnings
from evalward.errors import UsageError


@click.command("import-traces")
@click.argument("traces", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--eval-set",
    "eval_sets",
    multiple=True,
    required=True,
    envvar="EVALWARD_PATHS",
    type=click.Path(exists=True),
    help="Eval file or directory whose cases and criteria score the traces (repeatable) [env: EVALWARD_PATHS]",
)
@click.option(
    "--test-config",
    "test_config",
    envvar="EVALWARD_TEST_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="A test_config.json used for every eval file [env: EVALWARD_TEST_CONFIG]",
)
@click.option(
    "--case-attribute",
    envvar="EVALWARD_TRACE_CASE_ATTRIBUTE",
    default="evalward.case_id",
    show_default=True,
    help="Span attribute naming the eval case; else the conversation id is the case id "
    "[env: EVALWARD_TRACE_CASE_ATTRIBUTE]",
)
@click.option(
    "--only-recorded",
    is_flag=True,
    envvar="EVALWARD_ONLY_RECORDED",
    help="Score only the cases the traces recorded (others are left out instead of counted as errors) "
    "[env: EVALWARD_ONLY_RECORDED]",
)
@db_option
@click.option("--run-id", envvar="EVALWARD_RUN_ID", help="Id for the new run (default: time + random)")
@click.option("--repo", "repository", envvar="EVALWARD_REPO", help="owner/name (default: from the environment or git)")
@click.option("--commit", envvar="EVALWARD_COMMIT", help="Commit the traces belong to (default: git HEAD)")
@click.option("--branch", envvar="EVALWARD_BRANCH", help="Branch the traces belong to (default: from git)")
@click.option("--json", "json_path", envvar="EVALWARD_JSON", type=click.Path(dir_okay=False), help="Also write JSON")
def import_traces_command(**kwargs: Any) -> None:
    """Score the agent outputs recorded in TRACES (OpenTelemetry OTLP/Jaeger JSON, responses JSONL or an
    evalward run JSON) against the cases of --eval-set, and store the result as a run in the history.

    Every case of the eval sets without a recording becomes an error ("no recorded output") unless
    --only-recorded is given. Exit 0 once the run is stored (gate it with `evalward gate`), 2 for bad input,
    3 when the database is unreachable.
    """
    execute_import(**kwargs)


def execute_import(
    *,
    traces: str,
    eval_sets: tuple[str, ...],
    test_config: str | None,
    case_attribute: str,
    only_recorded: bool,
    db_url: str | None,
    run_id: str | None,
    repository: str | None,
    commit: str | None,
    branch: str | None,
    json_path: str | None,
) -> None:
    from evalward._cli.run_cmd import open_history, write_reports
    from evalward._pipeline import RunOptions, prepare, run_prepared
    from evalward.context import detect_context
    from evalward.model.cases import keep_ids
    from evalward.runners.replay import ReplayAgent, trace_options_from_env
    from evalward.traces.recordings import load_recordings

    options = trace_options_from_env({"EVALWARD_TRACE_CASE_ATTRIBUTE": case_attribute})
    recordings = load_recordings(traces, options=options)
    try:
        if not len(recordings):
            raise UsageError(f"{traces}: no agent turns found (no invoke_agent, execute_tool or chat spans)")
        run_options = RunOptions(
            paths=list(eval_sets),
            agent=f"replay:{traces}",
            config_path=test_config,
            run_id=run_id,
            timeout_s=None,
            max_retries=0,
            context=detect_context(repository=repository, commit=commit, branch=branch),
        )
        prepared = prepare(run_options)
        if only_recorded:
            for eval_set in prepared.sets:
                eval_set.cases = keep_ids(eval_set.cases, recordings.has_case)
            prepared.sets = [s for s in prepared.sets if s.cases]
            if not prepared.sets:
                recorded, first = first_sorted(recordings.case_ids())
                raise UsageError(
                    f"none of the {recorded} recorded case id(s) is a case of the eval sets: "
                    + ", ".join(first)
                    + (" …" if recorded > len(first) else "")
                    + f"; set --case-attribute to the span attribute that names the case (now {case_attribute!r})"
                )
        known = {case_id for eval_set in prepared.sets for case_id in eval_set.case_ids()}
        echo_warnings(prepared.warnings)
        for note in recordings.notes:
            click.echo(f"note: {note}", err=True)
        unmatched, first = first_sorted(c for c in recordings.case_ids() if c not in known)
        if unmatched:
            click.echo(
                f"note: {unmatched} recorded case id(s) match no eval case and are ignored: "
                + ", ".join(first)
                + (" …" if unmatched > len(first) else ""),
                err=True,
            )
        agent = ReplayAgent(f"replay:{traces}", options=options, recordings=recordings)
        store = open_history(db_url)
        try:
            run = asyncio.run(run_prepared(prepared, store=store, agent=agent))
        finally:
            store.close()
    finally:
        recordings.close()
    write_reports(run, json_path=json_path, junit_path=None, markdown_path=None)
    counts = run.counts()
    verdict = "PASSED" if run.passed else "FAILED"
    click.echo(f"{verdict}: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors")
    click.echo(f"run id: {run.run_id}")


def first_sorted(case_ids: Iterable[str], shown: int = 5) -> tuple[int, list[str]]:
    """How many `case_ids` there are and the first `shown` in sorted order, without holding them all (a
    recording can name a million cases)."""
    count = 0
    first: list[str] = []
    for case_id in case_ids:
        count += 1
        if len(first) < shown or case_id < first[-1]:
            bisect.insort(first, case_id)
            del first[shown:]
    return count, first
