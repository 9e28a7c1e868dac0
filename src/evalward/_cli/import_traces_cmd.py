"""`evalward import-traces`: turn recorded traces into a stored run, scored with an eval set's criteria.

Each replayed turn is checked against the case that scores it (`traces.query_check`): a recorded query that
is not the case's, and what the turn's spans did not record (the query, the answer, any content), are
warnings naming the case, printed before the verdict; a changed query also makes the turn an error unless
`--query-mismatch warn`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from evalward._cli.click_options import options_from
from evalward._cli.common import echo_warnings
from evalward._cli.run_cmd import open_history, write_reports
from evalward._options.families import LocalRunValues, RecordingValues, ReportFileValues
from evalward._options.run_values import RunValues
from evalward._pipeline import RunOptions, prepare, run_blocking
from evalward.context import detect_context
from evalward.errors import EvalwardError, UsageError, printable
from evalward.model.cases import keep_ids
from evalward.report.escape import workflow_command_safe
from evalward.runners.agent_contract import AgentFailure
from evalward.runners.replay import ReplayAgent, eval_set_of, trace_options_from_env
from evalward.traces.query_check import check_turn
from evalward.traces.recordings import load_recordings

if TYPE_CHECKING:
    from evalward.model import AgentOutput, AgentRequest, AgentTarget
    from evalward.runners.replay import ReplayAgent
    from evalward.traces.recordings import Key, RecordingSet

MAX_WARNINGS = 100
"""Per-case warnings shown; the rest are counted in one last line (an eval set can have thousands of cases)."""


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
@options_from(RunValues, only=("test_config",))
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
@click.option(
    "--query-mismatch",
    type=click.Choice(["error", "warn"]),
    default="error",
    show_default=True,
    envvar="EVALWARD_QUERY_MISMATCH",
    help="A turn recorded with another query than its eval case's: an error (its answer is to another "
    "question), or scored anyway; a warning names the case either way [env: EVALWARD_QUERY_MISMATCH]",
)
@options_from(RecordingValues, only=("db_url", "run_id"))
@options_from(LocalRunValues, only=("repository", "commit", "branch"))
@options_from(ReportFileValues, only=("json_path",))
def import_traces_command(**kwargs: Any) -> None:
    """Score the agent outputs recorded in TRACES (OpenTelemetry OTLP/Jaeger JSON, responses JSONL or an
    evalward run JSON) against the cases of --eval-set, and store the result as a run in the history.

    Every case of the eval sets without a recording becomes an error ("no recorded output") unless
    --only-recorded is given. A turn recorded with another query than its case's is an error unless
    --query-mismatch warn; it, and turns whose spans lack content, are warnings naming the case. Exit 0 once
    the run is stored (gate it with `evalward gate`), 2 for bad input, 3 when the database is unreachable.
    """
    execute_import(**kwargs)


def execute_import(
    *,
    traces: str,
    eval_sets: tuple[str, ...],
    test_config: str | None,
    case_attribute: str,
    only_recorded: bool,
    query_mismatch: str,
    db_url: str | None,
    run_id: str | None,
    repository: str | None,
    commit: str | None,
    branch: str | None,
    json_path: str | None,
) -> None:
    options = trace_options_from_env({"EVALWARD_TRACE_CASE_ATTRIBUTE": case_attribute})
    recordings = load_recordings(traces, options=options)
    try:
        echo_warnings(recordings.warnings)  # before a file without turns is refused: they may say why
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
            echo_note(note)
        unmatched, first = first_sorted(c for c in recordings.case_ids() if c not in known)
        if unmatched:
            echo_note(
                f"{unmatched} recorded case id(s) match no eval case and are ignored: "
                + ", ".join(first)
                + (" …" if unmatched > len(first) else "")
            )
        replay = ReplayAgent(f"replay:{traces}", options=options, recordings=recordings)
        agent = CheckedReplay(replay, recordings, fail_on_mismatch=query_mismatch == "error")
        store = open_history(db_url)
        try:
            run = run_blocking(prepared, store=store, agent=agent)
        finally:
            store.close()
    finally:
        recordings.close()
    echo_warnings(agent.warnings())
    write_reports(run, json_path=json_path, junit_path=None, markdown_path=None)
    counts = run.counts()
    verdict = "PASSED" if run.passed else "FAILED"
    click.echo(f"{verdict}: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors")
    click.echo(f"run id: {run.run_id}")


def echo_note(note: str) -> None:
    """Print `note: …` to stderr; a note quotes case ids and trace ids from the file, so it is printed as
    warnings are (one line, no workflow command)."""

    click.echo(workflow_command_safe(f"note: {printable(note)}"), err=True)


class CheckedReplay:
    """The replay agent, each replayed turn checked against its case (`traces.query_check`): the warnings it
    gives are kept, once per recorded turn and query, for `warnings()`; a recorded query that is not the
    case's fails the turn as an `agent_error` when `fail_on_mismatch`."""

    def __init__(self, agent: ReplayAgent, recordings: RecordingSet, *, fail_on_mismatch: bool) -> None:
        self._agent = agent
        self._recordings = recordings
        self._fail_on_mismatch = fail_on_mismatch
        self._found: dict[tuple[Key, str], tuple[str, ...]] = {}

    @property
    def target(self) -> AgentTarget:
        return self._agent.target

    async def start(self) -> None:
        await self._agent.start()

    async def aclose(self) -> None:
        await self._agent.aclose()

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        output = await self._agent.run_turn(request)  # fails as the replay does: no recording, recorded error
        try:
            row = self._recordings.locate(request.case_id, request.turn, request.repetition, eval_set_of(request))
        except EvalwardError as exc:  # the file changed under the run, as in `ReplayAgent.run_turn`
            raise AgentFailure("agent_error", str(exc)) from exc
        if row is None:
            return output
        check = check_turn(row, request.query, fail_on_mismatch=self._fail_on_mismatch)
        self._found[(row.key, request.query)] = check.warnings
        if check.mismatch is not None and self._fail_on_mismatch:
            raise AgentFailure("agent_error", check.mismatch)
        return output

    def warnings(self) -> list[str]:
        """The warnings of every turn replayed so far, by (eval set, case, turn, repetition); past
        `MAX_WARNINGS` counted in a last one."""

        def order(item: tuple[tuple[Key, str], tuple[str, ...]]) -> tuple[str, str, int, int, str]:
            (set_id, case_id, turn, repetition), query = item[0]
            return (set_id or "", case_id, turn, repetition, query)

        warnings = [warning for _, found in sorted(self._found.items(), key=order) for warning in found]
        if len(warnings) > MAX_WARNINGS:
            hidden = len(warnings) - MAX_WARNINGS
            warnings = [*warnings[:MAX_WARNINGS], f"{hidden} more warning(s) like these are not shown"]
        return warnings


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
