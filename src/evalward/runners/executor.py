"""Run every planned case × repetition against one agent: concurrency, timeouts, retries, rate limit, shards.

Per case (one `WorkItem`):
- turns run in order; turn k's request carries the history of turns 0..k-1 in OpenAI message shape
  (user message; assistant message with its tool calls; one tool message per call with its result;
  assistant message with the final response), the case's initial `session_state` and a `session_id`
  unique to this run, case and repetition;
- each attempt of a turn takes a token from the shared rate limiter and runs under the per-turn timeout; a
  retryable failure is retried with backoff (`turn_attempts.run_turn`, which has the rules);
- the first failing turn ends the case: the remaining turns are not run and the case records
  `CaseError(kind, message, turn, attempts)` next to the outputs of the turns that completed.

A `conversation_scenario` case has no scripted turns after the first: before each turn the user simulator
(`runners.user_simulator`) gives the next user message (the starting prompt first), until it sends the stop
signal or the turn limit is reached. Each message is run as a turn like any other (same history, retries
and timeout), recorded in `CaseRun.queries`, and how the conversation ended in `CaseRun.simulation`. A
simulator that is not configured or fails is a `simulator_error` for that case alone.

Concurrency is a pool of `concurrency` workers, each running one case at a time (a limit over cases, not
turns). `on_case_done` is awaited as soon as each case finishes (the pipeline stores it there).

Cancellation: when the task running `execute` is cancelled (Ctrl-C), no new case starts, cases in flight
are cancelled and reported in `not_run` (never as results), callbacks already under way are allowed to
finish, and `execute` returns normally with `cancelled=True`. The agent is always closed (`aclose`).

Case selection (`--case`, `--sample`) happens when the run is prepared, before sharding (`loaders.selection`).

Sharding (`--shard k/n`) splits cases, not repetitions: `plan_work` keeps the cases `sharding.shard_cases`
deals to shard k (the rule is there).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from array import array
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from evalward.case_keys import CaseKeys
from evalward.errors import UsageError
from evalward.model import (
    AgentOutput,
    AgentRequest,
    CaseError,
    EvalCase,
    EvalSet,
    SimulationEnd,
    SimulationResult,
    Usage,
)
from evalward.runners.agent_contract import Agent, SimulatorError
from evalward.runners.conversation import Conversation
from evalward.runners.deliveries import Deliveries
from evalward.runners.sharding import shard_cases
from evalward.runners.turn_attempts import run_turn

if TYPE_CHECKING:
    from evalward.runners.user_simulator import UserSimulator


@dataclass(frozen=True)
class ExecutorOptions:
    """How cases are run (every field has an `evalward run` flag)."""

    concurrency: int = 4
    """Cases run at the same time."""
    repeat: int = 1
    """Repetitions of every case (planned by `plan_work`)."""
    timeout_s: float | None = 60
    """Limit per turn attempt; None = no limit."""
    rate_limit_per_s: float | None = None
    """Turn requests started per second over all cases (retries included); None = unlimited."""
    max_retries: int = 2
    """Retries of a retryable turn failure (so at most 1 + max_retries attempts)."""
    retry_backoff_s: float = 0.5
    """Base of the exponential backoff between retries."""


@dataclass(frozen=True)
class WorkItem:
    """One case × repetition to run."""

    eval_set: EvalSet
    case: EvalCase
    repetition: int
    place: tuple[int, int] | None = None
    """(index of the eval set in the plan, the case's row in it), for an item taken from a `WorkPlan`: where
    the run's case numbering finds it (`evalward.case_keys`)."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.eval_set.eval_set_id, self.case.case_id, self.repetition)


@dataclass
class CaseRun:
    """What running one WorkItem produced: outputs per completed turn, or the error that stopped it."""

    item: WorkItem
    outputs: list[AgentOutput] = field(default_factory=list)
    """One per completed turn, in order (fewer than the case's turns when `error` stopped it)."""
    turn_latencies_s: list[float] = field(default_factory=list)
    """Duration of the successful attempt of each completed turn."""
    error: CaseError | None = None
    latency_s: float = 0.0
    """Wall-clock time of the whole case, retries and backoff included."""
    usage: Usage | None = None
    """Usage summed over the completed turns; None when no turn reported any."""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    final_state: Any = None
    """`state` of the last output (None if it reported none)."""
    attempts: int = 0
    """Turn attempts made over the whole case (retries included)."""
    queries: list[str] = field(default_factory=list)
    """Scenario cases: the user message of every turn run, in order (the last one's output is missing when
    the agent failed on it). Empty for scripted cases, whose messages are their turns'."""
    simulation: SimulationResult | None = None
    """Scenario cases: how the simulated conversation ended."""


@dataclass
class ExecutionSummary:
    """The outcome of `execute`."""

    completed: list[CaseRun] = field(default_factory=list)
    """Finished cases (successful or with an error), in completion order — kept only when `execute` has no
    `on_case_done` to hand them to (a large run must not hold every case's outputs)."""
    finished: int = 0
    """How many cases finished (successful or with an error)."""
    failed: int = 0
    """How many of them ended with an error."""
    not_run: list[WorkItem] = field(default_factory=list)
    """Items not finished because the run was cancelled (in flight or never started)."""
    cancelled: bool = False
    total: int = 0

    @property
    def errors(self) -> int:
        return self.failed


# --- planning ---------------------------------------------------------------------------------------------


class WorkPlan(Sequence[WorkItem]):
    """Case × repetition items in plan order, made when they are taken: an item holds its case, and a large
    eval set's cases are read back one at a time (`EvalSet.cases` may be lazy), so the plan keeps only
    (set, case position, repetition) numbers and never every case at once."""

    def __init__(self, sets: Sequence[EvalSet], slots: Iterable[tuple[int, int, int]]) -> None:
        self.sets = list(sets)
        self._ids = [s.case_ids() for s in self.sets]
        # Three parallel arrays: 12 bytes per item where tuples would take ~70 (under 4 billion of anything).
        self._set_index, self._case_index, self._repetition = array("I"), array("I"), array("I")
        for set_index, case_index, repetition in slots:
            self._set_index.append(set_index)
            self._case_index.append(case_index)
            self._repetition.append(repetition)

    def __len__(self) -> int:
        return len(self._set_index)

    def __getitem__(self, index: int) -> WorkItem:  # type: ignore[override]  # slices are not needed
        set_index, row = self._set_index[index], self._case_index[index]
        eval_set = self.sets[set_index]
        return WorkItem(eval_set, eval_set.cases[row], self._repetition[index], (set_index, row))

    def __iter__(self) -> Iterator[WorkItem]:
        for index in range(len(self)):
            yield self[index]

    def key(self, index: int) -> tuple[str, str, int]:
        """Item `index`'s (eval set id, case id, repetition), without reading its case."""
        set_index = self._set_index[index]
        return (
            self.sets[set_index].eval_set_id,
            self._ids[set_index][self._case_index[index]],
            self._repetition[index],
        )

    def keys(self) -> Iterator[tuple[str, str, int]]:
        return (self.key(index) for index in range(len(self)))

    def case_keys(self, extra: Iterable[tuple[str, str]] = ()) -> CaseKeys:
        """The numbering of every case of the plan's sets (and of `extra` keys), for `WorkItem.place`."""
        return CaseKeys(list(zip((s.eval_set_id for s in self.sets), self._ids, strict=True)), extra)

    def only(self, wanted: Collection[tuple[str, str, int]]) -> WorkPlan:
        """The items whose key is in `wanted`, in plan order (resuming a run)."""
        wanted = set(wanted)
        kept = (
            (self._set_index[i], self._case_index[i], self._repetition[i])
            for i in range(len(self))
            if self.key(i) in wanted
        )
        return WorkPlan(self.sets, kept)


def plan_work(
    sets: Sequence[EvalSet], repeat: int, shard: tuple[int, int] | None = None, *, first_repetition: int = 0
) -> WorkPlan:
    """Every case of every set × `repeat` repetitions (set, case, repetition order), narrowed to `shard`;
    repetitions numbered from `first_repetition`."""
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1; found {repeat}")
    ids = [s.case_ids() for s in sets]
    mine = None
    if shard is not None:
        mine = shard_cases({(s.eval_set_id, i) for s, set_ids in zip(sets, ids, strict=True) for i in set_ids}, shard)
    slots = (
        (set_index, case_index, repetition)
        for set_index, eval_set in enumerate(sets)
        for case_index, case_id in enumerate(ids[set_index])
        if mine is None or (eval_set.eval_set_id, case_id) in mine
        for repetition in range(first_repetition, first_repetition + repeat)
    )
    return WorkPlan(sets, slots)


# --- rate limiting ----------------------------------------------------------------------------------------


class RateLimiter:
    """Spaces request starts at least `1/rate` seconds apart, over everything that shares it.

    Each caller reserves the next free slot and sleeps until it (no burst: the first request goes at once,
    request k no earlier than k/rate seconds after it). `clock` and `sleep` are injectable for tests.
    """

    def __init__(
        self,
        rate_per_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if rate_per_s <= 0:
            raise UsageError(f"--rate-limit must be positive; found {rate_per_s}")
        self.interval_s = 1.0 / rate_per_s
        self._clock = clock
        self._sleep = sleep
        self._next_free: float | None = None
        self.acquired = 0

    async def acquire(self) -> None:
        now = self._clock()
        start = now if self._next_free is None or self._next_free <= now else self._next_free
        self._next_free = start + self.interval_s
        self.acquired += 1
        if start > now:
            await self._sleep(start - now)


# --- running ----------------------------------------------------------------------------------------------


class _CaseRunner:
    """Runs the turns of one case; shared state (limiter, options) comes from `execute`."""

    def __init__(
        self,
        agent: Agent,
        options: ExecutorOptions,
        limiter: RateLimiter | None,
        run_nonce: str,
        rng: random.Random,
        simulator: UserSimulator | None = None,
    ) -> None:
        self.agent = agent
        self.options = options
        self.limiter = limiter
        self.run_nonce = run_nonce
        self.rng = rng
        self.simulator = simulator

    async def run(self, item: WorkItem) -> CaseRun:
        case = item.case
        record = CaseRun(item=item, started_at=datetime.now(UTC))
        began = time.monotonic()
        conversation = Conversation.of(item.eval_set.eval_set_id, case, item.repetition, self.run_nonce)
        if case.scenario is not None:
            await self._run_scenario(record, conversation)
        else:
            for turn, invocation in enumerate(case.turns):
                request = conversation.request(turn, invocation.query, invocation.inputs)
                # The history is the next turn's: the last turn's would be built for nobody.
                if not await self._play(record, request, conversation, keep_history=turn + 1 < len(case.turns)):
                    break
        record.final_state = record.outputs[-1].state if record.outputs else None
        record.latency_s = time.monotonic() - began
        record.finished_at = datetime.now(UTC)
        return record

    async def _play(
        self, record: CaseRun, request: AgentRequest, conversation: Conversation, *, keep_history: bool = True
    ) -> bool:
        """Run one turn and record it, adding it to the conversation's history when `keep_history`; False when
        it failed (the error is recorded and the case ends)."""
        outcome = await run_turn(self.agent, request, self.options, self.limiter, self.rng)
        record.attempts += outcome.attempts
        if outcome.output is None:
            assert outcome.failure is not None
            record.error = CaseError(
                kind=outcome.failure.kind, message=outcome.failure.message, turn=request.turn, attempts=outcome.attempts
            )
            return False
        output = outcome.output
        record.outputs.append(output)
        record.turn_latencies_s.append(outcome.latency_s)
        if output.usage is not None:
            record.usage = output.usage if record.usage is None else record.usage.plus(output.usage)
        if keep_history:
            conversation.answered(request, output)
        return True

    async def _run_scenario(self, record: CaseRun, conversation: Conversation) -> None:
        """A simulated conversation (module docstring): ask the simulator, run its message, until it ends."""
        item = record.item
        scenario = item.case.scenario
        assert scenario is not None
        settings = self.simulator.settings_for(item.eval_set) if self.simulator is not None else None
        if self.simulator is None or settings is None or settings.model is None:
            record.error = CaseError(kind="simulator_error", message=NO_USER_MODEL, turn=0, attempts=0)
            record.simulation = SimulationResult(
                ended_by="simulator_error", user_turns=0, max_turns=None if settings is None else settings.limit
            )
            return
        played: list[tuple[str, AgentOutput]] = []
        usage: Usage | None = None
        ended: SimulationEnd
        last_reply: str | None = None
        while True:
            try:
                message = await self.simulator.next_message(settings, scenario, played)
            except SimulatorError as exc:
                record.error = CaseError(kind="simulator_error", message=str(exc), turn=len(played))
                ended = "simulator_error"
                break
            if message.usage is not None:
                usage = message.usage if usage is None else usage.plus(message.usage)
            if message.ending != "message" or message.text is None:
                ended = "turn_limit" if message.ending == "turn_limit" else "stop_signal"
                last_reply = message.text
                break
            record.queries.append(message.text)
            request = conversation.request(len(played), message.text)
            if not await self._play(record, request, conversation):
                ended = "agent_error"
                break
            played.append((message.text, record.outputs[-1]))
        record.simulation = SimulationResult(
            ended_by=ended,
            user_turns=len(record.queries),
            max_turns=settings.limit,
            model=settings.model,
            last_reply=last_reply,
            usage=usage,
        )


NO_USER_MODEL = (
    "this conversation_scenario case needs a simulated user, and no user simulator model is configured: pass "
    "--user-model (EVALWARD_USER_MODEL) with --user-base-url (or --judge-base-url / OPENAI_BASE_URL) pointing at an "
    "OpenAI-compatible endpoint, or set user_simulator_config.model in test_config.json"
)


async def execute(
    items: Sequence[WorkItem],
    agent: Agent,
    options: ExecutorOptions,
    *,
    on_case_done: Callable[[CaseRun], Awaitable[None]] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    rate_limiter: RateLimiter | None = None,
    slots: asyncio.Semaphore | None = None,
    simulator: UserSimulator | None = None,
) -> ExecutionSummary:
    """Run `items` on a started `agent` (rules in the module docstring); always closes the agent.

    `rate_limiter` replaces the one built from `options.rate_limit_per_s` (tests inject a fake clock).
    `slots` is shared with another `execute` running at the same time (the base side of a pull request run in
    the same job): each case holds one slot while it runs, so both together keep to one concurrency limit,
    and since waiting cases are woken in arrival order the two runs interleave case by case.
    An exception raised by `on_case_done` stops the run and propagates after in-flight cases are cancelled.
    `simulator` plays the user of conversation_scenario cases (without one they end in a `simulator_error`).
    """
    if options.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1; found {options.concurrency}")
    limiter = rate_limiter
    if limiter is None and options.rate_limit_per_s is not None:
        limiter = RateLimiter(options.rate_limit_per_s)
    runner = _CaseRunner(agent, options, limiter, uuid.uuid4().hex[:8], random.Random(), simulator)
    summary = ExecutionSummary(total=len(items))
    # Items are taken one at a time (a `WorkPlan` reads each case as it is taken).
    queue: Iterator[WorkItem] = iter(items)
    remaining = len(items)
    in_flight: dict[int, WorkItem] = {}

    if on_progress is not None:
        on_progress(0, summary.total)

    # Results are delivered (scored, stored) in the background so a worker starts its next case at once:
    # awaiting the delivery serialised scoring and database writes into every agent call's critical path.
    # Deliveries start one per turn of the event loop (`runners.deliveries`). At most `pending_limit`
    # delivered-but-unfinished results exist at a time (back-pressure).
    pending = asyncio.Semaphore(max(8, 2 * options.concurrency))
    failures: list[BaseException] = []
    workers: list[asyncio.Task[None]] = []

    async def deliver(case_run: CaseRun) -> None:
        try:
            if on_case_done is not None:
                await on_case_done(case_run)
            if on_case_done is None:
                summary.completed.append(case_run)
            summary.finished += 1
            summary.failed += case_run.error is not None
            if on_progress is not None:
                on_progress(summary.finished, summary.total)
        finally:
            pending.release()

    def delivered(task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        if not failures:
            failures.append(task.exception())  # type: ignore[arg-type]
            for other in workers:
                other.cancel()

    deliveries: Deliveries[CaseRun] = Deliveries(deliver, delivered)

    async def worker(worker_id: int) -> None:
        nonlocal remaining
        while remaining and not failures:
            remaining -= 1
            item = next(queue)
            in_flight[worker_id] = item
            if slots is None:
                case_run = await runner.run(item)
            else:
                async with slots:
                    case_run = await runner.run(item)
            del in_flight[worker_id]
            await pending.acquire()
            deliveries.add(case_run)

    workers.extend(asyncio.create_task(worker(i)) for i in range(min(options.concurrency, len(items))))
    try:
        try:
            await asyncio.gather(*workers)
            await deliveries.drain()
        except asyncio.CancelledError:
            if failures:
                await _stop(workers, deliveries)
                raise failures[0] from None
            summary.cancelled = True
            task = asyncio.current_task()
            if task is not None:
                # The cancellation is handled here (the run ends with what finished), not propagated.
                task.uncancel()
        except BaseException:
            await _stop(workers, deliveries)
            raise
        if failures:
            await _stop(workers, deliveries)
            raise failures[0]
        if summary.cancelled:
            await _stop(workers, deliveries)
            summary.not_run = [*in_flight.values(), *queue]  # read only when a run is cancelled
    finally:
        await agent.aclose()
    return summary


async def _stop(workers: list[asyncio.Task[None]], deliveries: Deliveries[CaseRun]) -> None:
    """Cancel the workers (and the cases they run), then let the deliveries of finished cases finish."""
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    await deliveries.stop()
