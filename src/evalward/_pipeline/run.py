"""Running a prepared run: the agent on every planned case, each result scored, stored and folded as it
completes.

`run_prepared` is the one way a run is made (the CLI, the pytest API, the daemon and `evalward ci` all call
it); `run_blocking` and `run_pair` call it from synchronous code, `run_pair` with the base side of a pull
request interleaved. Finished results reach the history database through one writer thread
(`_hand_to_writer`, `_write_results`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalward import __version__
from evalward._pipeline.case_result import EmptyAnswers, finalize, score_finished_case, warm_up_metrics
from evalward._pipeline.options import (
    fingerprint_for,
    scenario_sets,
    simulator_settings,
    validate_criteria,
    with_judge_identities,
)
from evalward.errors import InfrastructureError, UsageError
from evalward.gc_tuning import end_start_up
from evalward.judging.judge_config import FALLBACK_CACHE_URL, JudgeConfig
from evalward.metrics.run_fold import RunFold
from evalward.model import CaseResult, CaseSummary, EvalSet, RunResult
from evalward.model.records import iter_record_keys
from evalward.redact import redact_encoded_model
from evalward.runners import make_agent
from evalward.runners.agent_contract import AgentStartError
from evalward.runners.event_loop import run_on_time
from evalward.runners.executor import ExecutorOptions, RateLimiter, execute, plan_work
from evalward.spill import RankedKeys, RecordLog, encode_record
from evalward.store.writer_process import HistoryProcess

if TYPE_CHECKING:
    from evalward._pipeline.options import PreparedRun
    from evalward.judging.judged_case import Judging
    from evalward.runners.agent_contract import Agent
    from evalward.runners.executor import CaseRun
    from evalward.runners.user_simulator import UserSimulator
    from evalward.store import Store
    from evalward.store.writer_process import HistoryProcess

ProgressCallback = Callable[[int, int], None]


WRITE_BATCH_MAX = 200
"""Most case results one history transaction takes."""
WRITE_WINDOW_S = 0.02
"""Longest a finished result waits for others to share its history transaction: what a kill -9 may lose (and
`--resume` reruns). 0.1 s made the last batch a run's whole last 100 ms of results, written after its last case
while the run waited: 20 ms keeps batches of tens of results at a fast agent's pace and that tail short
(benchmarks/overhead.py, with history: 1.063 → 1.056)."""
WRITE_POLL_S = 0.01
BEGIN_AFTER_TURNS = 2
"""Turns of the event loop a run's first history row waits for, so that the agents' first calls go out first."""
WRITE_QUEUE_MAX = 4 * WRITE_BATCH_MAX
"""Most finished case results waiting for the history writer. Past it, finishing cases wait for the database:
agents that outrun it (a replay, a model-free agent) would otherwise pile up every result in memory (2 GB
at 100,000 cases before the bound)."""


_Written = tuple[CaseResult, bytes]
"""A finished result for the history writer: the redacted case and its JSON (`redact_encoded_model`)."""


async def _hand_to_writer(
    queue: asyncio.Queue[_Written | None], item: _Written | None, writer: asyncio.Task[None]
) -> None:
    """Put `item` on the writer's queue, waiting while it is full; raise the writer's error once it has stopped
    (the database failed: the run stops, and a full queue nobody drains would hang it)."""
    if not writer.done():
        if not queue.full():
            queue.put_nowait(item)
            return
        put = asyncio.ensure_future(queue.put(item))
        await asyncio.wait({put, writer}, return_when=asyncio.FIRST_COMPLETED)
        if put.done():
            return
        put.cancel()
    error = writer.exception() if not writer.cancelled() else None
    raise error or InfrastructureError("the history writer stopped before the run's results were stored")


async def _write_results(
    store: Store | HistoryProcess,
    run_id: str,
    queue: asyncio.Queue[_Written | None],
    writer: ThreadPoolExecutor,
    ending: asyncio.Event,
    begin: Callable[[], None] | None = None,
) -> None:
    """Drain `queue` into the store in batches until a None arrives (see run_prepared). `ending` is set once every
    case left is running (its last wave): from then on each batch is what has finished when the previous one is
    stored, without waiting for its window, so the run's last results are stored as they come rather than after
    its last case, while it waits. `begin`, the run's first row, is written first."""
    loop = asyncio.get_running_loop()
    if begin is not None:
        # After the agents' first calls have gone out: this task and the executor's workers start in one turn of
        # the loop, this one first, and the row (one long serialisation, which holds the GIL throughout) made
        # before them held back every first call by its length (~6 ms for 1,000 cases).
        for _ in range(BEGIN_AFTER_TURNS):
            await asyncio.sleep(0)
        await loop.run_in_executor(writer, begin)
    finished = False
    while not finished:
        first = await queue.get()
        batch: list[_Written] = []
        if first is None:
            finished = True
        else:
            batch.append(first)
        # A batch is what finishes within WRITE_WINDOW_S of its first result: a transaction per handful of
        # results (a fast agent's pace) cost more than the rows it wrote.
        deadline = loop.time() + WRITE_WINDOW_S
        while not finished and len(batch) < WRITE_BATCH_MAX:
            if queue.empty():
                remaining = deadline - loop.time()
                if remaining <= 0 or ending.is_set():
                    break
                # Woken early by the run's last wave.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ending.wait(), min(remaining, WRITE_POLL_S))
                continue
            item = queue.get_nowait()
            if item is None:
                finished = True
            else:
                batch.append(item)
        if batch:
            cases, encoded = [case for case, _ in batch], [json for _, json in batch]
            # Fresh: results this run just finished, never stored (a resumed run skips the stored ones).
            write = functools.partial(store.record_cases, run_id, cases, encoded, fresh=True)
            await loop.run_in_executor(writer, write)


async def run_prepared(
    prepared: PreparedRun,
    *,
    store: Store | HistoryProcess | None = None,
    resume_run_id: str | None = None,
    progress: ProgressCallback | None = None,
    agent: Agent | None = None,
    slots: asyncio.Semaphore | None = None,
    rate_limiter: RateLimiter | None = None,
) -> RunResult:
    """Run the agent on every planned case, scoring and storing each result as it completes.

    `slots` and `rate_limiter` are shared with a run going on at the same time (the base side of a pull
    request, `run_pair`): one concurrency limit and one request rate for both.

    With `resume_run_id`, only the case × repetitions the stored run lacks are run, and the result is the
    whole run (stored plus new). A KeyboardInterrupt/cancel ends the run as `cancelled`, keeping what finished.
    """
    options = prepared.options
    if prepared.judges is None:
        prepared.judges = validate_criteria(prepared.sets, options.judge)
    if agent is None:
        agent = make_agent(
            options.agent,
            cwd=options.agent_cwd,
            processes=options.agent_processes,
            openai_options=options.agent_options,
        )
    infos = with_judge_identities(prepared.set_infos(), prepared.judges)
    target = agent.target
    fingerprint = fingerprint_for(prepared, agent)
    items = plan_work(prepared.sets, options.repeat, options.shard, first_repetition=options.first_repetition)

    existing: Sequence[CaseResult] = []  # a resumed run's stored results (a view: read once, when recorded)
    if resume_run_id is not None:
        if store is None:
            raise UsageError("--resume needs the history database")
        stored = store.load_run(resume_run_id)
        if stored.fingerprint != fingerprint:
            raise UsageError(
                f"run {resume_run_id} was made with other eval files, criteria or agent "
                "(its fingerprint differs), so it cannot be resumed with these"
            )
        missing = set(store.missing_items(resume_run_id))
        existing = stored.cases
        items = items.only(missing)
        run = stored.model_copy(update={"status": "running", "warnings": list(prepared.warnings)})
    else:
        run = RunResult(
            run_id=options.run_id or new_run_id(),
            status="running",
            passed=False,
            pass_rule=options.pass_rule,
            repetitions=options.repeat,
            started_at=datetime.now(UTC),
            agent=target,
            eval_sets=infos,
            context=options.context.model_copy(
                update={
                    "shard_index": options.shard[0] if options.shard else None,
                    "shard_count": options.shard[1] if options.shard else None,
                }
            ),
            evalward_version=__version__,
            fingerprint=fingerprint,
            warnings=list(prepared.warnings),
            case_selection=prepared.case_selection,
        )
    # Judged criteria: the judge must answer before anything runs or is stored (never a silent pass).
    judging = await start_judging(prepared, store)
    if judging is not None:
        run.warnings.extend(w for w in judging.warnings if w not in run.warnings)
    simulator = start_simulator(prepared)
    if simulator is not None and any(simulator.settings_for(s).model is None for s in scenario_sets(prepared.sets)):
        note = "conversation_scenario cases need a user simulator model (--user-model); without one they end in error"
        if note not in run.warnings:
            run.warnings.append(note)
    begin: Callable[[], None] | None = None
    if resume_run_id is None and store is not None:
        if isinstance(store, HistoryProcess):
            # Not waited for in any case (a refusal fails the next write): made in the writer's thread, the run's
            # first row (its eval sets, ~15 ms for 2,000 cases) is written while the first agents answer. The run
            # as it is now: its warnings may grow while it goes.
            begin = functools.partial(
                store.begin_run, run.model_copy(update={"warnings": list(run.warnings)}), list(items.keys())
            )
        else:
            store.begin_run(run, items.keys())

    # Results and case summaries go to logs that move to a temporary file once they are many, and the run's
    # metric summaries are folded in case by case: memory stays flat however many cases run (evalward.spill).
    # Both logs and the fold know a case by its rank in key order (evalward.case_keys): a few bytes a case.
    cases = items.case_keys(extra=((key[0], key[1]) for key in iter_record_keys(existing)))
    total = len(items) + len(existing)
    results = RecordLog(CaseResult, keys=RankedKeys(cases, repetitions=True), expected=total)
    case_summaries = RecordLog(
        CaseSummary, keys=RankedKeys(cases, repetitions=False), expected=total // max(run.repetitions, 1)
    )
    fold = RunFold(repetitions=run.repetitions, pass_rule=run.pass_rule)
    # A case is folded as soon as its last repetition is in, while other agents are still running, instead
    # of all of them after the last case (that tail is pure waiting for the user).
    by_case: dict[int, list[CaseResult]] = {}

    def record(result: CaseResult, place: tuple[int, int] | None, encoded: bytes | None = None) -> None:
        if place is None:
            rank = cases.rank_of_key((result.eval_set_id, result.case_id))
        else:
            rank = cases.rank(cases.number(*place))
        results.append(result, (rank, result.repetition), result.status, encoded=encoded)
        group = by_case.setdefault(rank, [])
        group.append(result)
        if len(group) == run.repetitions:
            fold_case(rank, by_case.pop(rank))

    def fold_case(rank: int, group: list[CaseResult]) -> None:
        group.sort(key=lambda c: c.key)
        summary = fold.add(group, rank)
        case_summaries.append(summary, rank, "passed" if summary.passed else "failed")

    for done in existing:
        record(done, None)
    # History writes: one writer thread takes whatever results have finished since its last write and stores
    # them in one transaction. Agents never wait for the database, writes from one process never contend for
    # its lock, and a batch is milliseconds of results (a kill -9 loses at most that; --resume reruns it).
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalward-store")
    to_write: asyncio.Queue[_Written | None] = asyncio.Queue(maxsize=WRITE_QUEUE_MAX)
    ending = asyncio.Event()
    write_task = (
        asyncio.create_task(_write_results(store, run.run_id, to_write, writer, ending, begin)) if store else None
    )

    async def stop_writing() -> None:
        """Have the writer store what it was handed and end (raising its error if it failed)."""
        if write_task is not None:
            ending.set()
            await _hand_to_writer(to_write, None, write_task)
            await write_task

    empty_answers = EmptyAnswers()

    delivered = 0
    last_wave = len(items) - options.concurrency  # delivered cases after which every case left is running

    async def on_case_done(case_run: CaseRun) -> None:
        nonlocal delivered
        delivered += 1
        if delivered >= last_wave:
            ending.set()
        item = case_run.item
        empty_answers.see(item, case_run.outputs)
        result = await score_finished_case(item, case_run, agent, judging, options)
        # Once, as it is recorded: the database, every report and the gate then see only redacted output.
        # The JSON the redaction reads is the one the result log writes (encoded once).
        result, encoded = redact_encoded_model(result, encode_record)
        if write_task is not None:
            await _hand_to_writer(to_write, (result, encoded), write_task)
        record(result, item.place, encoded)

    try:
        await agent.start()
    except AgentStartError as exc:
        if judging is not None:
            await judging.aclose()
        if store is not None:
            await stop_writing()  # its beginning first
            store.finish_run(finalize(run, results, status="failed"))
        raise InfrastructureError(f"the agent could not start: {exc}") from exc

    warm_up_metrics(prepared.sets)
    executor_options = ExecutorOptions(
        concurrency=options.concurrency,
        repeat=options.repeat,
        timeout_s=options.timeout_s,
        rate_limit_per_s=options.rate_limit_per_s,
        max_retries=options.max_retries,
    )
    status = "complete"
    try:
        summary = await execute(
            items,
            agent,
            executor_options,
            on_case_done=on_case_done,
            on_progress=progress,
            rate_limiter=rate_limiter,
            slots=slots,
            simulator=simulator,
        )
        if summary.cancelled:
            status = "cancelled"
    except asyncio.CancelledError:
        # Ctrl-C: what finished is kept (and already stored); the caller sees status "cancelled".
        status = "cancelled"
    except BaseException:
        status = "failed"
        raise
    finally:
        if judging is not None:
            prepared.judge_usage = judging.usage
            await judging.aclose()
        if simulator is not None:
            prepared.simulator = simulator
            await simulator.aclose()
        await stop_writing()
        writer.shutdown(wait=True)
        empty_warning = empty_answers.warning()
        if empty_warning is not None:
            run.warnings.append(empty_warning)
        for rank, group in list(by_case.items()):  # cases with repetitions missing (cancelled, resumed)
            fold_case(rank, group)
        run = run.model_copy(
            update={
                "cases": results.ordered(),
                "summary": fold.metric_summaries(),
                "case_summaries": case_summaries.ordered(),
                "passed": fold.passed and status == "complete" and bool(len(results)),
                "status": status,
                "finished_at": datetime.now(UTC),
            }
        )
        if store is not None:
            store.finish_run(run)
    return run


async def start_judging(prepared: PreparedRun, store: Store | HistoryProcess | None) -> Judging | None:
    """The run's judges, probed (InfrastructureError when unreachable); None when nothing is judged.

    Replies are cached in the history database's judge_cache table, or without one in a SQLite file
    (`JudgeConfig.cache_url`, default `.evalward/judge_cache.db`).
    """
    if not prepared.judges:
        return None
    # start-up: a run that judges nothing never loads the judge (~15 ms) nor, for its cache, SQLAlchemy (~100 ms).
    from evalward.judging.cache import StoredJudgeCache
    from evalward.judging.judged_case import Judging  # start-up: as above
    from evalward.store.judge_replies import JudgeReplies  # start-up: as above

    config = prepared.options.judge or JudgeConfig()
    replies = store.judge_replies() if store is not None else JudgeReplies.open(config.cache_url or FALLBACK_CACHE_URL)
    cache = StoredJudgeCache(replies)
    judging = Judging(config, cache=cache)
    try:
        judging.warnings = await judging.probe(prepared.judges)
    except BaseException:
        await judging.aclose()
        raise
    return judging


def start_simulator(prepared: PreparedRun) -> UserSimulator | None:
    """The run's user simulator when some case needs one (None otherwise)."""
    import os

    if not scenario_sets(prepared.sets):
        return None
    # start-up: the user simulator (and its OpenAI requests) loads only for a run with conversation scenarios.
    from evalward.runners.user_simulator import UserSimulator

    options = prepared.options
    prices = (options.judge or JudgeConfig()).prices

    def price(model: str, input_tokens: int, output_tokens: int) -> float | None:
        table = prices.get(model)
        return None if table is None else table.cost(input_tokens, output_tokens)

    settings = {s.eval_set_id: simulator_settings(options, s) for s in scenario_sets(prepared.sets)}
    return UserSimulator(
        lambda eval_set: settings.get(eval_set.eval_set_id) or simulator_settings(options, eval_set),
        environ=os.environ,
        price=price,
    )


RUN_GC_THRESHOLD = 10_000
"""Allocations between young-generation collections while a run is going (CPython's default is 700)."""


def run_blocking(prepared: PreparedRun, **kwargs: Any) -> RunResult:
    """`run_prepared` from synchronous code.

    The coroutine hands its result back through a holder instead of returning it: on Python 3.11,
    `asyncio.run` formats the main task's repr (result included) while restoring the SIGINT handler, which
    for a large RunResult costs a noticeable fraction of a second.
    """
    holder: list[RunResult] = []

    async def main() -> None:
        holder.append(await run_prepared(prepared, **kwargs))

    _run_frozen(main)
    return holder[0]


@dataclass
class PairedRuns:
    """The current run and, when one was asked for, the base side's run made at the same time."""

    current: RunResult
    base: RunResult | None
    base_error: str | None = None
    """Why the base side produced no run (its agent could not start, its database writes failed)."""


def run_pair(
    prepared: PreparedRun,
    base: tuple[PreparedRun, Agent] | None,
    *,
    store: Store | None,
    progress: ProgressCallback | None = None,
) -> PairedRuns:
    """Run `prepared` and, interleaved with it, the base side (docs/gate.md §9): one concurrency limit and one rate
    limit shared case by case, so both sides meet the same provider conditions and its drift cancels out.

    A failure of the current run propagates; a failure of the base side is returned as `base_error`."""
    holder: list[PairedRuns] = []

    async def main() -> None:
        options = prepared.options
        slots = asyncio.Semaphore(options.concurrency)
        limiter = None
        if options.rate_limit_per_s is not None:
            limiter = RateLimiter(options.rate_limit_per_s)
        head = run_prepared(prepared, store=store, progress=progress, slots=slots, rate_limiter=limiter)
        if base is None:
            holder.append(PairedRuns(current=await head, base=None))
            return
        base_prepared, base_agent = base
        other = run_prepared(base_prepared, store=store, agent=base_agent, slots=slots, rate_limiter=limiter)
        current, base_run = await asyncio.gather(head, other, return_exceptions=True)
        if isinstance(current, BaseException):
            raise current
        if isinstance(base_run, BaseException):
            if not isinstance(base_run, Exception):
                raise base_run
            holder.append(PairedRuns(current=current, base=None, base_error=f"{type(base_run).__name__}: {base_run}"))
            return
        holder.append(PairedRuns(current=current, base=base_run))

    _run_frozen(main)
    return holder[0]


def _run_frozen(main: Callable[[], Any]) -> None:
    """`asyncio.run(main())` on the agents' event loop (`runners.event_loop`), with the run's garbage-collection
    settings.

    Everything loaded so far (modules, eval sets, the agent) lives for the whole run: freezing it keeps the
    cyclic GC from re-scanning it on every full collection, which otherwise stalls the event loop for tens
    of milliseconds at a time once a run holds thousands of results. The results themselves live until the
    end too, so young-generation collections are made rarer (every 10,000 allocations instead of 700);
    collection still happens, so cyclic garbage stays bounded (measured by benchmarks/overhead.py)."""
    end_start_up()  # the command's start-up is over: its objects are frozen below instead of never scanned
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(RUN_GC_THRESHOLD, *thresholds[1:])
    try:
        run_on_time(main())
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def new_run_id() -> str:
    """Sortable, unique: UTC timestamp plus random suffix, e.g. `20261122T061500-3fa9c1`."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def describe_sets(sets: Sequence[EvalSet]) -> list[dict[str, Any]]:
    """One line per set for `validate` and logs: id, format, file, cases, criteria."""
    return [
        {
            "eval_set_id": s.eval_set_id,
            "format": s.format,
            "path": s.path,
            "cases": len(s.cases),
            "turns": sum(len(c.turns) for c in s.cases),
            "criteria": [m.describe() for m in s.criteria.metrics],
            "criteria_origin": s.criteria.origin,
        }
        for s in sets
    ]
