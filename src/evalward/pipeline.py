"""Where the stages meet: load → run → score → (store) → summarise.

Everything here is orchestration; each stage's logic lives in its own package. The CLI, the pytest
plugin and the daemon all call `prepare` + `run_prepared` so a run behaves the same everywhere.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalward import __version__
from evalward.errors import EvalFileError, FileProblem, InfrastructureError, UsageError
from evalward.model import (
    AgentOutput,
    CaseError,
    CaseResult,
    CaseSummary,
    EvalCase,
    EvalSet,
    EvalSetInfo,
    InvocationResult,
    MetricResult,
    MetricSpec,
    RunContext,
    RunResult,
    canonical_hash,
)
from evalward.model.cases import (
    HAS_EXPECTED_OUTPUTS,
    HAS_OWN_METRICS,
    HAS_REFERENCE_MESSAGES,
    HAS_SCENARIO,
    cases_with,
    content_hash_of,
    edit_cases,
)
from evalward.model.records import iter_record_keys
from evalward.redact import redact_encoded_model
from evalward.spill import RankedKeys, RecordLog, encode_record

if TYPE_CHECKING:
    from evalward.judging.config import JudgeConfig
    from evalward.judging.scoring import Judging, ResolvedJudge
    from evalward.runners.base import Agent
    from evalward.runners.executor import CaseRun, RateLimiter, WorkItem
    from evalward.runners.user_simulator import SimulatorSettings, UserSimulator
    from evalward.store import Store

PassRule = Literal["per_run", "mean_over_runs"]
MetricsMode = Literal["add", "replace"]
StepwiseMode = Literal["auto", "on", "off"]


@dataclass
class RunOptions:
    """Everything `evalward run` can be told, independent of where it was told (flags, env, config)."""

    paths: list[str]
    agent: str
    metric_overrides: list[MetricSpec] = field(default_factory=list)
    metrics_mode: MetricsMode = "add"
    config_path: str | None = None
    repeat: int = 1
    concurrency: int = 4
    timeout_s: float | None = 120.0
    rate_limit_per_s: float | None = None
    max_retries: int = 2
    shard: tuple[int, int] | None = None
    case_patterns: list[str] = field(default_factory=list)
    """`--case`: run only cases whose id matches one of these globs (`fnmatch`, case-sensitive)."""
    sample: int | None = None
    """`--sample N`: run N cases chosen by `runners.executor.sample_cases` (the same N every time)."""
    initial_session_file: str | None = None
    """ADK `initial_session_file`: its state is every case's initial state unless the case sets its own."""
    pass_rule: PassRule = "per_run"
    run_id: str | None = None
    context: RunContext = field(default_factory=RunContext)
    agent_processes: int = 1
    agent_cwd: Path | None = None
    judge: JudgeConfig | None = None
    """Judge model, endpoint, concurrency, prices and cache (None: defaults; criteria may name a model)."""
    step: bool = False
    """Single-step evaluation: score only the expected outputs (`output_match`) and report a confusion table."""
    stepwise: StepwiseMode = "auto"
    """Teacher forcing: `auto` for turns with reference_messages, `on` reports it for every case, `off` never."""
    agent_options: dict[str, Any] = field(default_factory=dict)
    """Runner settings for `openai:` targets: system_prompt, tools, max_steps (paths relative to agent_cwd)."""
    user_model: str | None = None
    """Model of the simulated user of conversation_scenario cases (`--user-model`; beats the test_config's)."""
    user_base_url: str | None = None
    """Its OpenAI-compatible endpoint (`--user-base-url`); None = the judge's (`--judge-base-url`, $OPENAI_BASE_URL)."""
    user_max_turns: int | None = None
    """User messages per simulated conversation (`--user-max-turns`, -1 = no limit); None = the test_config's
    `max_allowed_invocations`, else ADK's 20."""


@dataclass
class PreparedRun:
    """Eval sets loaded, criteria resolved and validated: nothing has run yet."""

    options: RunOptions
    sets: list[EvalSet]
    warnings: list[str]
    judges: list[ResolvedJudge] | None = None
    """Every judged criterion bound to its model and endpoint (None: not resolved yet)."""
    case_selection: str | None = None
    """How the cases were chosen when not every case of the eval files runs (recorded on the run)."""
    judge_usage: Any = None
    """The judges' `JudgeUsage` once the run finished (None when nothing was judged)."""
    simulator: Any = None
    """The `UserSimulator` that played the scenario cases, with its usage, once the run finished (None: no
    scenario case ran)."""
    _infos: list[EvalSetInfo] | None = field(default=None, repr=False)

    def set_infos(self) -> list[EvalSetInfo]:
        """What the run records about each eval set (content hashes included), computed once: hashing a
        thousand cases takes milliseconds, and both the resume check and the run need it."""
        if self._infos is None:
            self._infos = [eval_set_info(s) for s in self.sets]
        return self._infos


def parse_metric_option(text: str) -> MetricSpec:
    """`NAME`, `NAME=THRESHOLD` → MetricSpec (a bare name is informational: no threshold).

    A user evaluator (`metrics.evaluators`, any idiom) is named by a `module:attr` path: `pkg.mod:attr`
    (named `attr`), `pkg.mod:attr=THRESHOLD`, or `NAME=pkg.mod:attr`."""
    from evalward.metrics.custom import CUSTOM_OPTION

    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not name:
        raise UsageError(f"--metric {text!r}: expected NAME, NAME=THRESHOLD, module:evaluator or NAME=module:evaluator")
    path: str | None = None
    if ":" in name:
        path, name = name, name.rpartition(":")[2].rpartition(".")[2]
    elif sep and ":" in value:
        path, sep = value, ""
    threshold: float | None = None
    if sep:
        try:
            threshold = float(value)
        except ValueError:
            raise UsageError(f"--metric {text!r}: threshold {value!r} is not a number") from None
    if path is None:
        return MetricSpec(name=name, threshold=threshold)
    return MetricSpec(name=name, threshold=threshold, options={CUSTOM_OPTION: {"code_config": {"name": path}}})


def apply_metric_overrides(sets: list[EvalSet], overrides: Sequence[MetricSpec], mode: MetricsMode) -> None:
    """`add` keeps each set's criteria and adds/replaces same-named ones; `replace` uses only the overrides."""
    if not overrides:
        return
    for eval_set in sets:
        if mode == "replace":
            eval_set.criteria = eval_set.criteria.model_copy(
                update={"metrics": list(overrides), "origin": "cli", "config_path": None}
            )
            eval_set.cases = edit_cases(eval_set.cases, _without_own_metrics)
            continue
        by_name = {m.name: m for m in overrides}
        merged = [by_name.pop(m.name, m) for m in eval_set.criteria.metrics]
        merged.extend(by_name.values())
        eval_set.criteria = eval_set.criteria.model_copy(update={"metrics": merged})


def _without_own_metrics(case: EvalCase) -> None:
    case.metrics = []


def validate_criteria(sets: Sequence[EvalSet], judge: JudgeConfig | None = None) -> list[ResolvedJudge]:
    """Unknown metrics, bad options and unreadable reference trajectories are bad input (2); judge metrics
    with no judge model configured are infrastructure (3). Returns the judged criteria, resolved."""
    from evalward.metrics.registry import check_specs, needs_judge
    from evalward.metrics.stepwise import ReferenceError, parse_reference

    problems: list[FileProblem] = []
    for eval_set in sets:
        where = eval_set.criteria.config_path or eval_set.path or eval_set.eval_set_id
        for message in check_specs(eval_set.criteria.metrics):
            problems.append(FileProblem(path=where, message=message))
        # Only cases with metrics or reference messages of their own have anything to check here: a large
        # set's other cases are not read back.
        for case in cases_with(eval_set.cases, HAS_OWN_METRICS | HAS_REFERENCE_MESSAGES):
            for message in check_specs(case.metrics):
                loc = case.source
                problems.append(
                    FileProblem(
                        path=loc.path if loc else where,
                        line=loc.line if loc else None,
                        json_path=loc.json_path if loc else None,
                        case_id=case.case_id,
                        message=message,
                    )
                )
            for turn in case.turns:
                if turn.reference_messages is None:
                    continue
                try:
                    parse_reference(turn.reference_messages)
                except ReferenceError as exc:
                    loc = turn.source or case.source
                    problems.append(
                        FileProblem(
                            path=loc.path if loc else where,
                            line=loc.line if loc else None,
                            json_path=loc.json_path if loc else None,
                            case_id=case.case_id,
                            message=str(exc),
                        )
                    )
    if problems:
        raise EvalFileError(problems)
    specs_per_case = _specs_per_case(sets)
    if not any(needs_judge(spec) for specs in specs_per_case for spec in specs):
        return []  # no judge involved: the judging machinery (and its openai client) is never imported
    from evalward.judging.config import JudgeConfig
    from evalward.judging.scoring import Judging, judged_specs

    return Judging(judge or JudgeConfig()).resolve_all(judged_specs(specs_per_case))


def _specs_per_case(sets: Sequence[EvalSet]) -> list[list[MetricSpec]]:
    """The metrics of every case, in order — except that a run of cases without metrics of their own (every
    case of most sets) counts once, as the set's criteria: the judged specs come out the same, and a large
    set's cases are not read back."""
    found: list[list[MetricSpec]] = []
    for eval_set in sets:
        if not len(eval_set.cases):
            continue
        criteria = list(eval_set.criteria.metrics)
        if not any(case.metrics for case in cases_with(eval_set.cases, HAS_OWN_METRICS)):
            found.append(criteria)
            continue
        found.extend(eval_set.metrics_for(case) for case in eval_set.cases)
    return found


def apply_step_mode(sets: list[EvalSet], overrides: Sequence[MetricSpec]) -> None:
    """Single-step evaluation: each set is scored by `output_match {key: K}` >= 1.0 for every expected output
    key K of its cases (plus the --metric overrides); cases' own metrics still apply."""
    keys_found = False
    for eval_set in sets:
        with_outputs = cases_with(eval_set.cases, HAS_EXPECTED_OUTPUTS)
        keys = sorted({key for case in with_outputs for turn in case.turns for key in turn.expected_outputs})
        keys_found = keys_found or bool(keys)
        metrics = [MetricSpec(name="output_match", threshold=1.0, options={"key": key}) for key in keys]
        eval_set.criteria = eval_set.criteria.model_copy(
            update={"metrics": [*metrics, *overrides], "origin": "cli", "config_path": None}
        )
    if not keys_found:
        raise UsageError(
            "--step evaluates one component against expected outputs, and no case has any "
            '(e.g. LangSmith `"outputs": {"route": "refund_agent"}` or native `expect: {outputs: {...}}`)'
        )


def prepare(options: RunOptions) -> PreparedRun:
    """Load and validate everything a run needs, so bad input fails before the agent starts."""
    from evalward.loaders import load_paths
    from evalward.metrics.registry import known_metric_names

    if options.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {options.repeat}")
    if options.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {options.concurrency}")
    from evalward.metrics.registry import JUDGE_METRICS, STEPWISE_METRICS

    known = [*known_metric_names(), *JUDGE_METRICS, *STEPWISE_METRICS]
    loaded = load_paths(
        options.paths,
        known_metrics=known,
        config_path=options.config_path,
        initial_session_path=options.initial_session_file,
    )
    if not loaded.sets:
        raise UsageError(f"no eval files found in {', '.join(options.paths)}")
    sets, selection = select_run_cases(loaded.sets, options, loaded.selection)
    if options.step:
        apply_step_mode(sets, options.metric_overrides)
    else:
        apply_metric_overrides(sets, options.metric_overrides, options.metrics_mode)
    judges = validate_criteria(sets, options.judge)
    prepared = PreparedRun(
        options=options, sets=sets, warnings=list(loaded.warnings), judges=judges, case_selection=selection
    )
    prepared.set_infos()  # content hashes are part of loading: the fingerprint of what was read
    return prepared


def select_run_cases(
    sets: list[EvalSet], options: RunOptions, chosen: str | None = None
) -> tuple[list[EvalSet], str | None]:
    """The sets holding only the cases `--case` and then `--sample` pick (sets left empty are dropped), and how
    they were chosen — `chosen` (the `FILE:IDS` paths) first — for `RunResult.case_selection`; None when every
    case runs. UsageError (exit 2) when a pattern matches no case."""
    from evalward.runners.executor import filter_cases, sample_cases

    described = [chosen] if chosen else []
    total = sum(len(s.cases) for s in sets)
    if options.case_patterns:
        sets = filter_cases(sets, options.case_patterns)
        described.append(" ".join(f"--case {pattern!r}" for pattern in options.case_patterns))
    if options.sample is not None:
        sets = sample_cases(sets, options.sample)
        described.append(f"--sample {options.sample}")
    if not described:
        return sets, None
    if len(described) == 1 and chosen:
        return sets, chosen
    kept = sum(len(s.cases) for s in sets)
    return sets, f"{' '.join(described)} ({kept} of {total} cases)"


def eval_set_info(eval_set: EvalSet) -> EvalSetInfo:
    return EvalSetInfo(
        eval_set_id=eval_set.eval_set_id,
        format=eval_set.format,
        path=eval_set.path,
        content_hash=eval_set.content_hash,
        criteria=list(eval_set.criteria.metrics),
        criteria_origin=eval_set.criteria.origin,
        case_hashes=eval_set.case_hashes(),
        case_input_hashes=eval_set.case_input_hashes(),
        case_sources=eval_set.case_sources(),
    )


def with_judge_identities(infos: Sequence[EvalSetInfo], judges: Sequence[ResolvedJudge] | None) -> list[EvalSetInfo]:
    """`infos` with each judged criterion's options carrying `judge: {metric, model, prompt}`, so the recorded
    criteria (and with them the comparability key the gate uses) differ whenever the judge does."""
    if not judges:
        return list(infos)
    by_spec = {j.source.model_dump_json(): j.identity() for j in judges if j.source is not None}
    out: list[EvalSetInfo] = []
    for info in infos:
        criteria = [
            spec.model_copy(update={"options": {**spec.options, "judge": by_spec[spec.model_dump_json()]}})
            if spec.model_dump_json() in by_spec
            else spec
            for spec in info.criteria
        ]
        out.append(info.model_copy(update={"criteria": criteria}))
    return out


def run_fingerprint(
    infos: Sequence[EvalSetInfo],
    agent_kind: str,
    agent_target: str,
    config_hash: str,
    judge: Sequence[dict[str, Any]] | None = None,
    simulator: Mapping[str, dict[str, Any]] | None = None,
) -> str:
    """What must match for two runs to be comparable: eval content, criteria, the agent target, the judges
    (model and prompt identity of every judged criterion) and, when scenario cases ran, the user simulator of
    each set that has them (model, prompt, turn limit)."""
    extra: dict[str, Any] = {"user_simulator": dict(sorted(simulator.items()))} if simulator else {}
    return canonical_hash(
        {
            **extra,
            "eval_sets": [
                {
                    "id": i.eval_set_id,
                    "hash": i.content_hash,
                    "criteria": [c.model_dump(mode="json") for c in i.criteria],
                }
                for i in infos
            ],
            "agent": {"kind": agent_kind, "target": agent_target, "config": config_hash},
            "judge": sorted((dict(j) for j in judge), key=lambda j: sorted(j.items())) if judge else None,
        }
    )


WRITE_BATCH_MAX = 200
"""Most case results one history transaction takes."""
WRITE_QUEUE_MAX = 4 * WRITE_BATCH_MAX
"""Most finished case results waiting for the history writer. Past it, finishing cases wait for the database:
agents that outrun it (a replay, a model-free agent) would otherwise pile up every result in memory (2 GB
at 100,000 cases before the bound)."""


async def _hand_to_writer(
    queue: asyncio.Queue[CaseResult | None], item: CaseResult | None, writer: asyncio.Task[None]
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
    store: Store, run_id: str, queue: asyncio.Queue[CaseResult | None], writer: ThreadPoolExecutor
) -> None:
    """Drain `queue` into the store in batches until a None arrives (see run_prepared)."""
    loop = asyncio.get_running_loop()
    finished = False
    while not finished:
        first = await queue.get()
        batch: list[CaseResult] = []
        if first is None:
            finished = True
        else:
            batch.append(first)
        while not finished and not queue.empty() and len(batch) < WRITE_BATCH_MAX:
            item = queue.get_nowait()
            if item is None:
                finished = True
            else:
                batch.append(item)
        if batch:
            await loop.run_in_executor(writer, store.record_cases, run_id, batch)


def fingerprint_for(prepared: PreparedRun, agent: Agent) -> str:
    """The comparability fingerprint of running `agent` on the prepared eval sets."""
    target = agent.target
    infos = prepared.set_infos()
    judges = [j.identity() for j in prepared.judges or []]
    simulators = {
        s.eval_set_id: simulator_settings(prepared.options, s).identity() for s in scenario_sets(prepared.sets)
    }
    return run_fingerprint(infos, target.kind, target.target, target.config_hash, judges, simulators)


def scenario_sets(sets: Sequence[EvalSet]) -> list[EvalSet]:
    """The eval sets with conversation_scenario cases (they need the user simulator)."""
    return [s for s in sets if any(c.scenario is not None for c in cases_with(s.cases, HAS_SCENARIO))]


def simulator_settings(options: RunOptions, eval_set: EvalSet) -> SimulatorSettings:
    """The user simulator of `eval_set`: the run's `--user-*` options beat its test_config's
    `user_simulator_config`; the endpoint, key variable, timeout and retries default to the judge's."""
    from evalward.judging.config import JudgeConfig
    from evalward.model import DEFAULT_MAX_TURNS
    from evalward.runners.user_simulator import SimulatorSettings

    judge = options.judge or JudgeConfig()
    configured = eval_set.criteria.user_simulator
    max_turns = options.user_max_turns
    if max_turns is None:
        max_turns = configured.max_allowed_invocations if configured is not None else DEFAULT_MAX_TURNS
    return SimulatorSettings(
        model=options.user_model or (configured.model if configured is not None else None),
        base_url=options.user_base_url or judge.resolved_base_url(),
        api_key_env=judge.api_key_env,
        max_turns=max_turns,
        custom_instructions=configured.custom_instructions if configured is not None else None,
        include_function_calls=configured.include_function_calls if configured is not None else False,
        temperature=configured.temperature if configured is not None else None,
        timeout_s=judge.timeout_s,
        max_retries=judge.max_retries,
    )


def start_simulator(prepared: PreparedRun) -> UserSimulator | None:
    """The run's user simulator when some case needs one (None otherwise)."""
    import os

    if not scenario_sets(prepared.sets):
        return None
    from evalward.judging.config import JudgeConfig
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


def played_case(item: WorkItem, case_run: CaseRun) -> EvalCase:
    """The case as it was played: a scenario case's turns are the user messages its simulator sent."""
    return item.case.played(case_run.queries) if item.case.scenario is not None else item.case


def build_case_result(item: WorkItem, case_run: CaseRun) -> CaseResult:
    """Score one finished case × repetition and assemble its result (pure apart from the metrics).

    ADK-format sets are also scored by ADK's informational efficiency metrics, as ADK appends them to
    every eval (`metrics.usage.with_adk_efficiency`)."""
    from evalward.loaders.load import ADK_FORMATS
    from evalward.metrics.registry import is_custom, is_stepwise, requires_judge
    from evalward.metrics.scoring import score_case
    from evalward.metrics.usage import with_adk_efficiency

    eval_set, case = item.eval_set, played_case(item, case_run)
    # Judged, stepwise and custom metrics need more calls (or may be async); `score_outside` adds them.
    specs = [
        s
        for s in eval_set.metrics_for(case)
        if not requires_judge(s.name) and not is_stepwise(s.name) and not is_custom(s)
    ]
    if eval_set.format in ADK_FORMATS:
        specs = with_adk_efficiency(specs)
    outputs: list[AgentOutput] = list(case_run.outputs)
    initial_state = case.session_input.state if case.session_input else {}
    scored = score_case(
        case,
        specs,
        outputs,
        initial_state=initial_state,
        final_state=case_run.final_state,
        latency_s=case_run.latency_s,
        usage=case_run.usage,
        turn_latencies_s=list(case_run.turn_latencies_s),
    )
    invocations: list[InvocationResult] = []
    for index, turn in enumerate(case.turns):
        output = outputs[index] if index < len(outputs) else None
        invocations.append(
            InvocationResult(
                turn=index,
                invocation_id=turn.invocation_id,
                query=turn.query,
                expected_response=turn.expected_response,
                actual_response=output.response if output else None,
                expected_tool_calls=turn.expected_tool_calls,
                actual_tool_calls=list(output.tool_calls) if output else [],
                expected_trajectory=turn.expected_trajectory,
                actual_trajectory=output.steps() if output else [],
                output=output,
                metric_results=scored.turn_results[index] if index < len(scored.turn_results) else [],
                latency_s=case_run.turn_latencies_s[index] if index < len(case_run.turn_latencies_s) else None,
            )
        )
    error: CaseError | None = case_run.error or scored.error
    status = "error" if error is not None else scored.status
    case_metrics = scored.metric_results
    if case_run.error is not None and not outputs:
        # Nothing ran, so there is nothing to score: no "not applicable" rows that would hide the error.
        case_metrics = []
    return CaseResult(
        eval_set_id=eval_set.eval_set_id,
        case_id=case.case_id,
        repetition=item.repetition,
        status=status,
        metric_results=case_metrics,
        invocations=invocations,
        error=error,
        latency_s=case_run.latency_s,
        usage=case_run.usage,
        final_state=case_run.final_state,
        simulation=case_run.simulation,
        content_hash=item.case.content_hash if item.place is None else content_hash_of(eval_set.cases, item.place[1]),
        must_pass=case.must_pass,
        cluster=case.cluster,
        started_at=case_run.started_at,
        finished_at=case_run.finished_at,
    )


def finalize(
    run: RunResult,
    cases: Sequence[CaseResult],
    *,
    status: str,
) -> RunResult:
    """The run with `cases` (in key order) folded into its summary and verdict under its pass rule, as
    `run_prepared` folds a run being made. `cases` may be a `RecordSequence` (a stored run read back, a
    re-scored baseline): it is read once, case by case, and its case summaries go to a `RecordLog`, so a large
    run is finalized without holding its results."""
    from evalward.metrics.aggregate import RunFold
    from evalward.model.records import in_key_order

    ordered = in_key_order(cases)
    fold = RunFold(repetitions=run.repetitions, pass_rule=run.pass_rule)
    summaries: RecordLog[CaseSummary] = RecordLog(CaseSummary)
    for summary in fold.add_in_key_order(ordered):
        summaries.append(summary, (summary.eval_set_id, summary.case_id), "passed" if summary.passed else "failed")
    return run.model_copy(
        update={
            "cases": ordered,
            "summary": fold.metric_summaries(),
            "case_summaries": summaries,
            "passed": fold.passed and status == "complete" and bool(len(ordered)),
            "status": status,
            "finished_at": datetime.now(UTC),
        }
    )


ProgressCallback = Callable[[int, int], None]


MAX_SHOWN_KEYS = 5
"""How many of an unreadable answer's keys the empty-answer warning names."""


@dataclass
class EmptyAnswers:
    """Counts the case runs in which the agent answered a turn with nothing evalward can score, for one warning
    per run (`warning`) instead of one line per case.

    A turn's answer is empty when it has no response, no tool calls and no step names, and nothing else the
    case expects (none of its `outputs` keys among the turn's expected outputs; no `state` where the case
    expects one): typically an object in a shape evalward does not know, whose keys all landed in `outputs`."""

    runs: int = 0
    empty: int = 0
    first: str | None = None
    """The first empty answer by (eval set, case id, repetition, turn), whatever order cases finished in."""
    _first_key: tuple[str, str, int, int] | None = None

    def see(self, item: WorkItem, outputs: Sequence[AgentOutput]) -> None:
        self.runs += 1
        for index, output in enumerate(outputs):
            turn = item.case.turns[index] if index < len(item.case.turns) else None
            if not _is_empty_answer(output, turn.expected_outputs if turn else {}, item.case.expected_state):
                continue
            self.empty += 1
            key = (*item.key, index)
            if self._first_key is None or key < self._first_key:
                names = [repr(name) for name in output.outputs]
                shown = ", ".join(names[:MAX_SHOWN_KEYS]) + (", …" if len(names) > MAX_SHOWN_KEYS else "")
                found = f"keys {shown}" if names else "an empty object"
                self.first = f"case {item.case.case_id!r} turn {index}, {found}"
                self._first_key = key
            return

    def warning(self) -> str | None:
        """One line (short enough for the reports' 300-character warning lines): how many, what evalward reads,
        then the first such answer and the keys it had."""
        if not self.empty:
            return None
        return (
            f"agent output: {self.empty} of {self.runs} case runs had an answer with no response, tool calls or steps "
            "(scored as empty); evalward reads `response`/`tool_calls`, a string, or `output`/`intermediate_steps` "
            f"(langchain); first: {self.first}"
        )


def _is_empty_answer(output: AgentOutput, expected_outputs: Mapping[str, Any], expected_state: Any) -> bool:
    if output.response is not None or output.tool_calls or output.trajectory:
        return False
    if any(key in expected_outputs for key in output.outputs):
        return False
    return output.state is None or expected_state is None


async def run_prepared(
    prepared: PreparedRun,
    *,
    store: Store | None = None,
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
    from evalward.metrics.aggregate import RunFold
    from evalward.runners import make_agent
    from evalward.runners.base import AgentStartError
    from evalward.runners.executor import ExecutorOptions, execute, plan_work

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
    items = plan_work(prepared.sets, options.repeat, options.shard)

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
    if resume_run_id is None and store is not None:
        store.begin_run(run, items.keys())

    # Results and case summaries go to logs that move to a temporary file once they are many, and the run's
    # metric summaries are folded in case by case: memory stays flat however many cases run (evalward.spill).
    # Both logs and the fold know a case by its rank in key order (evalward.case_keys): a few bytes a case.
    cases = items.case_keys(extra=((key[0], key[1]) for key in iter_record_keys(existing)))
    results = RecordLog(CaseResult, keys=RankedKeys(cases, repetitions=True))
    case_summaries = RecordLog(CaseSummary, keys=RankedKeys(cases, repetitions=False))
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
    to_write: asyncio.Queue[CaseResult | None] = asyncio.Queue(maxsize=WRITE_QUEUE_MAX)
    write_task = asyncio.create_task(_write_results(store, run.run_id, to_write, writer)) if store else None

    empty_answers = EmptyAnswers()

    async def on_case_done(case_run: CaseRun) -> None:
        item = case_run.item
        empty_answers.see(item, case_run.outputs)
        result = build_case_result(item, case_run)
        result = await score_outside(result, item, case_run, agent, judging, options)
        # Once, as it is recorded: the database, every report and the gate then see only redacted output.
        # The JSON the redaction reads is the one the result log writes (encoded once).
        result, encoded = redact_encoded_model(result, encode_record)
        if write_task is not None:
            await _hand_to_writer(to_write, result, write_task)
        record(result, item.place, encoded)

    try:
        await agent.start()
    except AgentStartError as exc:
        if judging is not None:
            await judging.aclose()
        if store is not None:
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
        if write_task is not None:
            await _hand_to_writer(to_write, None, write_task)  # raises the writer's error if it failed
            await write_task
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


async def start_judging(prepared: PreparedRun, store: Store | None) -> Judging | None:
    """The run's judges, probed (InfrastructureError when unreachable); None when nothing is judged.

    Replies are cached in the history database's judge_cache table, or without one in a SQLite file
    (`JudgeConfig.cache_url`, default `.evalward/judge_cache.db`).
    """
    if not prepared.judges:
        return None
    from evalward.judging.cache import JudgeCache, SqlJudgeCache
    from evalward.judging.config import FALLBACK_CACHE_URL, JudgeConfig
    from evalward.judging.scoring import Judging

    config = prepared.options.judge or JudgeConfig()
    cache: JudgeCache = (
        SqlJudgeCache(store.judge_replies())
        if store is not None
        else SqlJudgeCache.open(config.cache_url or FALLBACK_CACHE_URL)
    )
    judging = Judging(config, cache=cache)
    try:
        judging.warnings = await judging.probe(prepared.judges)
    except BaseException:
        await judging.aclose()
        raise
    return judging


async def score_outside(
    result: CaseResult,
    item: WorkItem,
    case_run: CaseRun,
    agent: Agent | None,
    judging: Judging | None,
    options: RunOptions,
    *,
    recorded: CaseResult | None = None,
) -> CaseResult:
    """Add what `score_case` cannot compute from the outputs alone: teacher-forced step metrics (more agent
    calls), user evaluators and ADK custom metrics (user code, possibly async) and judged metrics (judge calls), then
    recompute the case status (`judging.merge`).

    Without an `agent` (re-scoring a baseline's recorded outputs), step metrics cannot be recomputed; those of
    `recorded`, the original result, are kept."""
    from evalward.judging.merge import merge_metric_results
    from evalward.metrics.custom import is_custom, score_evaluator

    case = played_case(item, case_run)
    if case is not item.case:
        from evalward.runners.executor import WorkItem as _WorkItem

        item = _WorkItem(item.eval_set, case, item.repetition)
    if agent is not None:
        stepwise = await score_stepwise(item, case_run, agent, options, judging)
        if stepwise is not None:
            result = merge_metric_results(result, *stepwise)
    elif recorded is not None:
        result = _keep_stepwise(result, recorded)
    custom = [s for s in item.eval_set.metrics_for(item.case) if is_custom(s)]
    if custom and case_run.outputs:
        for spec in custom:
            case_level, turn_level = await score_evaluator(
                spec, item.case, case_run.outputs, list(case_run.turn_latencies_s)
            )
            result = merge_metric_results(result, case_level, turn_level)
    if judging is not None:
        from evalward.judging.scoring import apply_judges

        specs = item.eval_set.metrics_for(item.case)
        result = await apply_judges(result, item.case, specs, case_run.outputs, judging)
    return result


def _keep_stepwise(result: CaseResult, recorded: CaseResult) -> CaseResult:
    """`result` with the teacher-forced step metrics of `recorded` (they need the agent to recompute)."""
    from evalward.judging.merge import merge_metric_results
    from evalward.metrics.registry import is_stepwise

    case_level = [m for m in recorded.metric_results if is_stepwise(m.name)]
    turn_level = {
        turn.turn: [m for m in turn.metric_results if is_stepwise(m.name)]
        for turn in recorded.invocations
        if any(is_stepwise(m.name) for m in turn.metric_results)
    }
    if not case_level and not turn_level:
        return result
    return merge_metric_results(result, case_level, turn_level)


async def score_stepwise(
    item: WorkItem, case_run: CaseRun, agent: Agent, options: RunOptions, judging: Judging | None = None
) -> tuple[list[MetricResult], dict[int, list[MetricResult]], CaseError | None] | None:
    """Teacher forcing for every answered turn with `reference_messages` (docs/metrics.md §6, `metrics.stepwise`).

    Each such turn's steps go to the agent with `next_action_only` (runners/stepwise.py), the earlier turns
    in its history as the normal run had them; the normal run's output gives the free-running survival.
    Steps are compared exactly, or by `judging` when a step criterion says `match: judge`
    (`metrics.step_judge`); a judge that fails makes the step metrics a judge error.
    None when step-by-step evaluation does not apply to the case (mode `auto` without references, or `off`).
    """
    from evalward.metrics import stepwise as sw
    from evalward.metrics.registry import is_stepwise
    from evalward.metrics.step_judge import step_judge_spec
    from evalward.model import AgentRequest, Message
    from evalward.runners.executor import history_messages
    from evalward.runners.stepwise import teacher_forced_steps

    case = item.case
    specs = item.eval_set.metrics_for(case)
    named = {s.name: s for s in specs if is_stepwise(s.name)}
    answered = list(zip(case.turns, case_run.outputs, strict=False))
    has_reference = any(turn.reference_messages is not None for turn, _ in answered)
    if options.stepwise == "off" or (options.stepwise == "auto" and not has_reference and not named):
        return (*sw.metric_results({}, named), None) if named else None
    judged = step_judge_spec(specs)
    judge = judging.resolve(judged) if judging is not None and judged is not None else None
    if judged is not None and judge is None:
        message = f"{judged.name}: match: judge needs a judge model, and none is configured (--judge-model)"
        return sw.error_results(named, message), {}, CaseError(kind="judge_error", message=message)
    session_id = f"{item.eval_set.eval_set_id}/{case.case_id}/r{item.repetition}/teacher-forcing"
    session_state = dict(case.session_input.state) if case.session_input is not None else {}
    history: list[Message] = []
    per_turn: dict[int, dict[str, Any]] = {}
    for index, (turn, output) in enumerate(answered):
        request = AgentRequest(
            case_id=case.case_id,
            turn=index,
            query=turn.query,
            inputs=turn.inputs,
            history=list(history),
            session_id=session_id,
            session_state=session_state,
            repetition=item.repetition,
        )
        if turn.reference_messages is not None:
            reference = sw.parse_reference(turn.reference_messages)
            lead = list(reference.lead) or [Message(role="user", content=turn.query)]
            prefixes = [reference.prefix(j) for j in range(1, reference.m + 2)]
            attempts = await teacher_forced_steps(
                agent, request, lead, prefixes, timeout_s=options.timeout_s, max_retries=options.max_retries
            )
            final_check = sw.final_check_for(case, index, specs, reference)
            credits: list[float] = []
            notes: list[str] = []
            actions: list[sw.NextAction] = []
            for attempt in attempts:
                size = len(reference.steps[attempt.step - 1].calls) if attempt.step <= reference.m else 1
                action = (
                    sw.NextAction(error=attempt.error)
                    if attempt.output is None
                    else sw.first_step(attempt.output, size)
                )
                actions.append(action)
                if judge is None:
                    credit, note = sw.step_credit(attempt.step, reference, action, final_check)
                    credits.append(credit)
                    notes.append(note)
            step_details = None
            if judge is not None and judging is not None:
                from evalward.judging.steps import judged_credits

                steps = await judged_credits(
                    reference,
                    actions,
                    request=next((m.content for m in reversed(lead) if m.role == "user" and m.content), turn.query),
                    reference_answer=reference.final_response or turn.expected_response,
                    final_check=final_check,
                    judging=judging,
                    judge=judge,
                )
                if steps.error is not None:
                    message = f"{judge.spec.metric} (match: judge): {steps.error}"
                    return sw.error_results(named, message), {}, CaseError(kind="judge_error", message=message)
                credits, notes, step_details = steps.credits, steps.notes, steps.details
            per_turn[index] = sw.stepwise_scores(credits, notes, sw.free_run(output, reference), step_details)
        history.extend(history_messages(request, output))
    return (*sw.metric_results(per_turn, named), None)


ROUGE_METRICS = frozenset({"response_match_score", "response_rouge1"})


def warm_up_metrics(sets: Sequence[EvalSet]) -> None:
    """Import what scoring needs before agents start, so that no first-use import on the event loop stalls
    running turns and inflates their measured latency (the ROUGE modules are small since evalward stems
    with its own Porter stemmer instead of nltk's)."""
    names = {spec.name for s in sets for spec in s.criteria.metrics}
    names |= {spec.name for s in sets for case in cases_with(s.cases, HAS_OWN_METRICS) for spec in case.metrics}
    if names & ROUGE_METRICS:
        from evalward.metrics.rouge import stem

        stem("warming")


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
            from evalward.runners.executor import RateLimiter

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
    """`asyncio.run(main())` with the run's garbage-collection settings.

    Everything loaded so far (modules, eval sets, the agent) lives for the whole run: freezing it keeps the
    cyclic GC from re-scanning it on every full collection, which otherwise stalls the event loop for tens
    of milliseconds at a time once a run holds thousands of results. The results themselves live until the
    end too, so young-generation collections are made rarer (every 10,000 allocations instead of 700);
    collection still happens, so cyclic garbage stays bounded (measured by benchmarks/overhead.py)."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(RUN_GC_THRESHOLD, *thresholds[1:])
    try:
        asyncio.run(main())
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
