"""A run's options, and what `prepare` makes of them before anything runs.

`RunOptions` is everything a run can be told; `prepare` loads the eval sets, picks the cases (`--case`,
`--sample`), applies the metric overrides or single-step mode and validates the criteria, so bad input fails
before the agent starts. The fingerprint that says which runs are comparable (eval content, criteria, agent,
judges, user simulators) is computed here from the prepared sets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalward.errors import EvalFileError, FileProblem, UsageError
from evalward.judging.judge_config import JudgeConfig
from evalward.loaders import load_paths
from evalward.loaders.selection import filter_cases, sample_cases
from evalward.metrics.custom import evaluator_spec
from evalward.metrics.registry import JUDGE_METRICS, STEPWISE_METRICS, check_specs, known_metric_names, needs_judge
from evalward.metrics.scoring_context import StepwiseMode
from evalward.model import (
    DEFAULT_MAX_TURNS,
    EvalCase,
    EvalSet,
    EvalSetInfo,
    MetricSpec,
    RunContext,
    SourceLocation,
    canonical_hash,
)
from evalward.model.cases import (
    HAS_EXPECTED_OUTPUTS,
    HAS_OWN_METRICS,
    HAS_REFERENCE_MESSAGES,
    HAS_SCENARIO,
    case_ids,
    case_source,
    cases_with,
    edit_cases,
)
from evalward.redact import redact, secrets_in

if TYPE_CHECKING:
    from evalward.judging.judged_case import ResolvedJudge
    from evalward.runners.agent_contract import Agent
    from evalward.runners.user_simulator import SimulatorSettings

PassRule = Literal["per_run", "mean_over_runs"]
MetricsMode = Literal["add", "replace"]


@dataclass
class RunOptions:
    """Everything `evalward run` can be told, independent of where it was told (flags, env, config)."""

    paths: list[str]
    agent: str
    metric_overrides: list[MetricSpec] = field(default_factory=list)
    metrics_mode: MetricsMode = "add"
    config_path: str | None = None
    custom_evaluator_types: list[str] = field(default_factory=list)
    """`pkg.module:Class` paths of the evaluator classes pydantic-evals Dataset files name by class name."""
    repeat: int = 1
    first_repetition: int = 0
    """Repetitions are numbered from here: the gate's top-up continues a run's numbering, so an agent seeded by the
    repetition (`AgentRequest.repetition`) draws new samples instead of replaying the run's."""
    concurrency: int = 4
    timeout_s: float | None = 120.0
    rate_limit_per_s: float | None = None
    max_retries: int = 2
    shard: tuple[int, int] | None = None
    case_patterns: list[str] = field(default_factory=list)
    """`--case`: run only cases whose id matches one of these globs (`fnmatch`, case-sensitive)."""
    sample: int | None = None
    """`--sample N`: run N cases chosen by `loaders.selection.sample_cases` (the same N every time)."""
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


_EVALUATOR_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def parse_metric_option(text: str) -> MetricSpec:
    """`NAME`, `NAME=THRESHOLD` → MetricSpec (a bare name is informational: no threshold).

    A user evaluator (`metrics.evaluators`, any idiom) is named by a `module:attr` path: `pkg.mod:attr`
    (named `attr`), `pkg.mod:attr=THRESHOLD`, `NAME=pkg.mod:attr` or `NAME=pkg.mod:attr=THRESHOLD`. An evaluator
    class created with arguments is written as a call with literal arguments, all by keyword or all by position:
    `paris=pydantic_evals.evaluators:Contains(value="Paris")`, `pydantic_evals.evaluators:IsInstance("str")`."""
    found = _EVALUATOR_PATH.search(text)
    if found is None:
        name, sep, value = text.partition("=")
        name, value = name.strip(), value.strip()
        if not name:
            raise UsageError(
                f"--metric {text!r}: expected NAME, NAME=THRESHOLD, module:evaluator or NAME=module:evaluator"
            )
        return MetricSpec(name=name, threshold=_threshold(text, value) if sep else None)
    path = found.group()
    before, rest = text[: found.start()].strip(), text[found.end() :]
    args: dict[str, Any] | list[Any] | None = None
    if rest.startswith("("):
        closing = rest.rfind(")")
        if closing < 0:
            raise UsageError(f"--metric {text!r}: the arguments of {path} are not closed with ')'")
        args, rest = _call_arguments(text, path, rest[: closing + 1]), rest[closing + 1 :]
    rest = rest.strip()
    if before and not before.endswith("="):
        raise UsageError(f"--metric {text!r}: expected NAME=module:evaluator, found {before!r} before the path")
    if rest and not rest.startswith("="):
        raise UsageError(f"--metric {text!r}: expected =THRESHOLD after the evaluator, found {rest!r}")
    name = before[:-1].strip() or path.rpartition(":")[2].rpartition(".")[2]
    threshold = _threshold(text, rest[1:].strip()) if rest else None
    return evaluator_spec(name, path, threshold=threshold, args=args)


def split_metric_options(text: str) -> list[str]:
    """Several `--metric` values in one string (an environment variable, the Action's `metrics` input), split
    on whitespace outside an evaluator's parenthesised arguments and quotes: `a=0.5 m:C(value="x y")`."""
    items: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char.isspace() and depth == 0:
            if current:
                items.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        items.append("".join(current))
    return items


def _threshold(text: str, value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--metric {text!r}: threshold {value!r} is not a number") from None


def _call_arguments(text: str, path: str, call: str) -> dict[str, Any] | list[Any]:
    """`(value="Paris", case_sensitive=False)` → keywords; `("str",)` → positional; literals only."""
    import ast

    try:
        parsed = ast.parse(f"_{call}", mode="eval").body
    except SyntaxError as exc:
        raise UsageError(f"--metric {text!r}: the arguments of {path} are not valid: {exc.msg}") from None
    if not isinstance(parsed, ast.Call):
        raise UsageError(f"--metric {text!r}: expected {path}(ARGUMENTS), found {call!r}")
    if parsed.args and parsed.keywords:
        raise UsageError(f"--metric {text!r}: give {path}'s arguments all by keyword or all by position")
    try:
        if parsed.keywords:
            if any(keyword.arg is None for keyword in parsed.keywords):
                raise ValueError("**")
            return {str(keyword.arg): ast.literal_eval(keyword.value) for keyword in parsed.keywords}
        return [ast.literal_eval(argument) for argument in parsed.args]
    except ValueError:
        raise UsageError(
            f"--metric {text!r}: {path}'s arguments must be literals (strings, numbers, booleans, None, lists, dicts)"
        ) from None


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
    problems: list[FileProblem] = []
    for eval_set in sets:
        where = eval_set.criteria.config_path or eval_set.path or eval_set.eval_set_id
        for message in check_specs(eval_set.criteria.metrics):
            problems.append(FileProblem(path=where, message=message))
        # Only cases with metrics or reference messages of their own have anything to check here: a large
        # set's other cases are not read back.
        for case in cases_with(eval_set.cases, HAS_OWN_METRICS | HAS_REFERENCE_MESSAGES):
            for message in check_specs(case.metrics):
                problems.append(_problem_at(case.source, where, case.case_id, message))
            problems.extend(_reference_problems(case, where))
    if problems:
        raise EvalFileError(problems)
    specs_per_case = _specs_per_case(sets)
    if not any(needs_judge(spec) for specs in specs_per_case for spec in specs):
        return []  # no judge involved: the judging machinery (and its openai client) is never imported
    # start-up: the judge's modules (~15 ms: prompts, client, cache) load only when a criterion is judged.
    from evalward.judging.judged_case import Judging, judged_specs

    return Judging(judge or JudgeConfig()).resolve_all(judged_specs(specs_per_case))


def _reference_problems(case: EvalCase, where: str) -> list[FileProblem]:
    """Each unreadable reference trajectory (`reference_messages`) of `case`, as a problem at its turn."""
    if all(turn.reference_messages is None for turn in case.turns):
        return []  # most cases: the step scorers (`metrics.stepwise`) are never loaded
    # start-up: the step scorers (~4 ms with their matching) load only for a case with a reference trajectory.
    from evalward.metrics.stepwise import ReferenceError, parse_reference

    problems: list[FileProblem] = []
    for turn in case.turns:
        if turn.reference_messages is None:
            continue
        try:
            parse_reference(turn.reference_messages)
        except ReferenceError as exc:
            problems.append(_problem_at(turn.source or case.source, where, case.case_id, str(exc)))
    return problems


def _problem_at(loc: SourceLocation | None, where: str, case_id: str, message: str) -> FileProblem:
    """A problem of case `case_id` at `loc`, or in the file `where` when the case's position is unknown."""
    return FileProblem(
        path=loc.path if loc else where,
        line=loc.line if loc else None,
        json_path=loc.json_path if loc else None,
        case_id=case_id,
        message=message,
    )


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
    if options.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {options.repeat}")
    if options.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, got {options.concurrency}")

    known = [*known_metric_names(), *JUDGE_METRICS, *STEPWISE_METRICS]
    loaded = load_paths(
        options.paths,
        known_metrics=known,
        config_path=options.config_path,
        initial_session_path=options.initial_session_file,
        custom_evaluator_types=options.custom_evaluator_types,
    )
    if not loaded.sets:
        raise UsageError(f"no eval files found in {', '.join(options.paths)}")
    sets, selection = select_run_cases(loaded.sets, options, loaded.selection)
    refuse_secret_identifiers(sets, options)
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


def refuse_secret_identifiers(sets: Sequence[EvalSet], options: RunOptions) -> None:
    """Bad input (exit 2) when an id the run is stored under holds a secret (`redact.secrets_in`): an eval set
    or case id of the cases that run, the run id, the branch, the base branch or the group id.

    Ids are keys: they are stored and shown as they are, so one cannot be masked — two case ids masked alike
    would collide in the history database, and an unmasked one would print the secret. Every such id is
    named, with its place and the secret's name (never its value), before anything is stored."""
    problems: list[FileProblem] = []
    for eval_set in sets:
        where = eval_set.path or eval_set.eval_set_id
        ids = case_ids(eval_set.cases)
        # One look at all of a set's ids (a NUL between two: neither a space nor part of a token shape) tells
        # whether any needs a look of its own: a large set's ids are not redacted one by one.
        joined = "\0".join([eval_set.eval_set_id, *ids])
        if redact(joined) == joined:
            continue
        located = [
            (eval_set.eval_set_id, None, "eval set id"),
            *((case_id, at, "case id") for at, case_id in enumerate(ids)),
        ]
        for identifier, index, what in located:
            if found := secrets_in(identifier):
                message = f"{what} {redact(identifier)!r} contains {' and '.join(found)}: ids are stored and shown "
                message += "as they are, so a secret in one cannot be masked; rename it"
                source = None if index is None else case_source(eval_set.cases, index)
                problems.append(_problem_at(source, where, "", message))
    if problems:
        raise EvalFileError(problems)
    context = options.context
    for what, value in (
        ("run id (--run-id)", options.run_id),
        ("branch (--branch)", context.branch),
        ("base branch (--base-branch)", context.base_branch),
        ("group id (--group-id)", context.group_id),
    ):
        if value and (found := secrets_in(value)):
            raise UsageError(
                f"the {what} {redact(value)!r} contains {' and '.join(found)}: it would be stored and shown as it "
                "is, so a secret in it cannot be masked; use another"
            )


def select_run_cases(
    sets: list[EvalSet], options: RunOptions, chosen: str | None = None
) -> tuple[list[EvalSet], str | None]:
    """The sets holding only the cases `--case` and then `--sample` pick (sets left empty are dropped), and how
    they were chosen — `chosen` (the `FILE:IDS` paths) first — for `RunResult.case_selection`; None when every
    case runs. UsageError (exit 2) when a pattern matches no case."""
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
    # start-up: the user simulator (and its OpenAI requests) loads only for a run with conversation scenarios.
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
