"""ADK custom metrics: `custom_metrics.<name>.code_config.name` in `test_config.json` (docs/formats.md §4.3).

A criterion whose name is declared under `custom_metrics` carries the option `custom_metric` =
`{"code_config": {"name": "pkg.module.function"}, ...}` (the loader checks its shape; `pkg.module:function`
is accepted too). `score_evaluator` runs it in the idiom it is written in: LangSmith/openevals functions and
pydantic-evals-style classes are `metrics.evaluators`; anything else is an ADK custom metric. The function is
called as ADK 2.13's `_CustomMetricEvaluator` calls it:

    function(eval_metric, actual_invocations, expected_invocations, conversation_scenario)
        -> EvaluationResult          (sync, or async: an awaitable is awaited)

with google-adk objects, so a metric written for ADK runs unchanged (it usually imports them itself):
- `eval_metric`: `EvalMetric(metric_name, threshold=None, criterion=BaseCriterion(threshold, **options),
  custom_function_path)` — ADK hides the threshold from the function (it sets `threshold` to None) and keeps
  it in `criterion`;
- `actual_invocations`: one `Invocation` per answered turn: the query as `user_content`, the response as
  `final_response`, `intermediate_data = IntermediateData(tool_uses=[FunctionCall(id, name, args)],
  tool_responses=[FunctionResponse(id, name, response)], intermediate_responses=[(author, [Part(text)])])`,
  `duration` = the turn's wall-clock seconds;
- `expected_invocations`: the case's turns (as many as were answered), expected response and tool uses
  in the same shape; `conversation_scenario`: None.

The result is read by attribute or key: `overall_score` (a number or None), `overall_eval_status`
(`EvalStatus`, its value 1–4 or its name) and optionally `per_invocation_results[i].score / .eval_status`.
Status, as ADK takes it: the function's verdict — PASSED → passed, FAILED → failed, NOT_EVALUATED →
not_applicable, INFORMATIONAL → informational. The direction is inferred as ADK's `AgentEvaluator` does:
lower is better when the verdict disagrees with `score ≥ threshold` and agrees with `score ≤ threshold`.

Errors name the metric and the dotted path: a path that does not import or is not callable is a
configuration error before anything runs (`check_custom_spec`); a function that raises or returns something
else than an EvaluationResult makes the case `error` with the reason.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from evalward.metrics.base import Metric
from evalward.metrics.evaluation import metric_error, replace_or_append
from evalward.metrics.metric_options import OptionProblem
from evalward.metrics.scoring_context import CaseScores, ScoringContext
from evalward.model import AgentOutput, CaseError, EvalCase, MetricResult, MetricSpec, MetricStatus

if TYPE_CHECKING:
    from evalward.metrics.evaluators import Played  # start-up: user evaluators' machinery, only for user code

CUSTOM_OPTION = "custom_metric"
"""The option key holding a custom metric's `custom_metrics` entry."""

_STATUS_BY_VALUE: dict[int, str] = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED", 4: "INFORMATIONAL"}
_STATUS_MAP: dict[str, MetricStatus] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "NOT_EVALUATED": "not_applicable",
    "INFORMATIONAL": "informational",
}


class CustomMetricError(Exception):
    """A custom metric cannot be loaded or returned something unusable; the message names metric and path."""


EvaluatorArgs = dict[str, Any] | list[Any]
"""The arguments an evaluator class is created with: keywords (`{"value": "Paris"}`) or positional (`["str"]`)."""


def is_custom(spec: MetricSpec) -> bool:
    """True for a criterion declared under `custom_metrics`."""
    return CUSTOM_OPTION in spec.options


def evaluator_spec(
    name: str, path: str, *, threshold: float | None = None, args: EvaluatorArgs | None = None
) -> MetricSpec:
    """The criterion that runs the user code at `path` (`pkg.module:attr`), an evaluator class being created
    with `args` — the one spelling every source (test_config.json, evalward.toml, `--metric`, native YAML,
    pydantic-evals Dataset files) produces."""
    config: dict[str, Any] = {"code_config": {"name": path}}
    if args is not None:
        config["args"] = args
    return MetricSpec(name=name, threshold=threshold, options={CUSTOM_OPTION: config})


def evaluator_args(spec: MetricSpec) -> EvaluatorArgs | None:
    """The arguments the criterion's evaluator class is created with; None when it is created without any."""
    config = spec.options.get(CUSTOM_OPTION)
    args = config.get("args") if isinstance(config, Mapping) else None
    return args if isinstance(args, dict | list) else None


def function_path(spec: MetricSpec) -> str:
    """The dotted path of the metric's function (`code_config.name`), or "" when missing."""
    config = spec.options.get(CUSTOM_OPTION)
    code = config.get("code_config") if isinstance(config, Mapping) else None
    name = code.get("name") if isinstance(code, Mapping) else None
    return name if isinstance(name, str) else ""


def _where(spec: MetricSpec, kind: str = "custom metric") -> str:
    return f"{kind} {spec.name!r} ({function_path(spec) or 'no code_config.name'})"


def split_path(path: str) -> tuple[str, str]:
    """`pkg.module:attr` or `pkg.module.attr` → (module, attribute); ("", "") when neither shape."""
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    if not all(part.isidentifier() for part in [*module_name.split("."), *attribute.split(".")]):
        return "", ""
    return module_name, attribute


def resolve(spec: MetricSpec) -> Any:
    """Import the metric's function (or evaluator class/instance); CustomMetricError saying what is missing.

    The working directory is put on `sys.path` first (as `python -m` does), so a path relative to the
    project root imports as it does under `adk eval` or pytest.
    """
    path = function_path(spec)
    module_name, attribute = split_path(path)
    if not module_name or not attribute:
        raise CustomMetricError(
            f"{_where(spec)}: code_config.name must be a path 'package.module.function' or "
            f"'package.module:function', found {path!r}"
        )
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import-time failure of user code is a configuration error
        raise CustomMetricError(
            f"{_where(spec)}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    function: Any = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise CustomMetricError(f"{_where(spec)}: module {module_name!r} has no attribute {attribute!r}")
    if not callable(function) and not callable(getattr(function, "evaluate", None)):
        raise CustomMetricError(f"{_where(spec)}: {path!r} is a {type(function).__name__}, not a function")
    return function


def _adk() -> Any:
    """google-adk's evaluation models and genai types, imported on first use (slow: seconds)."""
    try:
        from google.adk.evaluation import eval_case, eval_metrics
        from google.genai import types
    except ImportError as exc:
        raise CustomMetricError(
            "ADK custom metrics receive google-adk objects; install google-adk (pip install 'evalward[adk]')"
        ) from exc
    return eval_case, eval_metrics, types


def check_custom_spec(spec: MetricSpec) -> list[str]:
    """Problems with a custom criterion: its path must import to a callable (an evaluator class must be
    instantiable without arguments), and google-adk must be present for an ADK-style metric."""
    from evalward.metrics.evaluators import (  # start-up: user evaluators' machinery, only for user code
        idiom,
        instantiate,
    )

    try:
        target = resolve(spec)
        kind = idiom(target)
        if kind == "adk":
            _adk()
        elif kind == "pydantic_evals":
            args = evaluator_args(spec)
            try:
                instantiate(target, args)
            except Exception as exc:
                given = "without arguments" if args is None else f"with args {json.dumps(args, default=str)}"
                raise CustomMetricError(
                    f"{_where(spec)}: cannot create the evaluator {given}: {type(exc).__name__}: {exc}"
                ) from exc
        elif evaluator_args(spec) is not None:
            raise CustomMetricError(f"{_where(spec)}: args are given, but {kind} evaluators are functions, not classes")
    except CustomMetricError as exc:
        return [str(exc)]
    return []


def adk_invocations(
    case: EvalCase, outputs: Sequence[AgentOutput], latencies: Sequence[float | None] = ()
) -> tuple[list[Any], list[Any]]:
    """(actual, expected) ADK `Invocation`s for the answered turns (shapes in the module docstring)."""
    eval_case, _, types = _adk()

    def content(role: str, text: str | None) -> Any:
        return types.Content(role=role, parts=[types.Part(text=text)]) if text is not None else None

    actual: list[Any] = []
    expected: list[Any] = []
    for index, output in enumerate(outputs[: len(case.turns)]):
        turn = case.turns[index]
        user = content("user", turn.query)
        expected.append(
            eval_case.Invocation(
                invocation_id=turn.invocation_id,
                user_content=user,
                final_response=content("model", turn.expected_response),
                intermediate_data=eval_case.IntermediateData(
                    tool_uses=[
                        types.FunctionCall(id=c.id, name=c.name, args=c.args) for c in turn.expected_tool_calls or []
                    ],
                    intermediate_responses=[
                        (r.author, [types.Part(text=r.text)]) for r in turn.expected_intermediate_responses or []
                    ],
                ),
            )
        )
        actual.append(
            eval_case.Invocation(
                invocation_id=turn.invocation_id,
                user_content=user,
                final_response=content("model", output.response),
                intermediate_data=eval_case.IntermediateData(
                    tool_uses=[types.FunctionCall(id=c.id, name=c.name, args=c.args) for c in output.tool_calls],
                    tool_responses=[
                        types.FunctionResponse(
                            id=c.id,
                            name=c.name,
                            response=c.result if isinstance(c.result, dict) else {"result": c.result},
                        )
                        for c in output.tool_calls
                        if c.result is not None
                    ],
                    intermediate_responses=[
                        (r.author, [types.Part(text=r.text)]) for r in output.intermediate_responses
                    ],
                ),
                duration=latencies[index] if index < len(latencies) else None,
            )
        )
    return actual, expected


def _eval_metric(spec: MetricSpec) -> Any:
    _, eval_metrics, _ = _adk()
    options = {k: v for k, v in spec.options.items() if k != CUSTOM_OPTION}
    criterion = eval_metrics.BaseCriterion(threshold=spec.threshold, **options) if spec.threshold is not None else None
    return eval_metrics.EvalMetric(
        metric_name=spec.name, threshold=None, criterion=criterion, custom_function_path=function_path(spec)
    )


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _has(value: Any, name: str) -> bool:
    return name in value if isinstance(value, Mapping) else hasattr(value, name)


def _status_name(value: Any) -> str | None:
    """`EvalStatus.PASSED`, 1 or "PASSED" → "PASSED"; None when not a status."""
    if isinstance(value, str):
        return value.upper() if value.upper() in _STATUS_MAP else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _STATUS_BY_VALUE.get(value)
    name = getattr(value, "name", None)
    return name if isinstance(name, str) and name in _STATUS_MAP else None


def _score(value: Any) -> float | str | None:
    """A usable score, None, or the reason it is not one."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"overall_score must be a number or None, found {type(value).__name__} {value!r}"
    if not math.isfinite(value):
        return f"overall_score must be finite, found {value!r}"
    return float(value)


def _error(spec: MetricSpec, message: str, kind: str = "custom metric") -> MetricResult:
    return MetricResult(
        name=spec.name,
        score=None,
        threshold=spec.threshold,
        status="error",
        explanation=f"{_where(spec, kind)}: {message}",
        details={"function": function_path(spec)},
    )


def _direction(status: MetricStatus, score: float | None, threshold: float | None) -> bool:
    """Higher is better, unless the verdict contradicts ≥ and agrees with ≤ (ADK AgentEvaluator's inference)."""
    if status not in ("passed", "failed") or score is None or threshold is None:
        return True
    passed = status == "passed"
    return not (passed != (score >= threshold) and passed == (score <= threshold))


def read_result(spec: MetricSpec, result: Any, n_turns: int) -> tuple[MetricResult, dict[int, MetricResult]]:
    """The case-level result and per-turn results of one custom metric's return value."""
    path = function_path(spec)
    if not (_has(result, "overall_score") and _has(result, "overall_eval_status")):
        return (
            _error(
                spec,
                f"returned {type(result).__name__}, expected an EvaluationResult "
                "(overall_score, overall_eval_status, per_invocation_results)",
            ),
            {},
        )
    score = _score(_field(result, "overall_score"))
    if isinstance(score, str):
        return _error(spec, score), {}
    raw_status = _field(result, "overall_eval_status")
    status_name = _status_name(raw_status)
    if status_name is None:
        return _error(
            spec,
            f"overall_eval_status must be an EvalStatus (PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL), found {raw_status!r}",
        ), {}
    status = _STATUS_MAP[status_name]
    higher = _direction(status, score, spec.threshold)
    shown = "None" if score is None else f"{score:.3f}"
    explanation = f"{path}: overall_score={shown}, the function's verdict {status_name}"
    if status in ("passed", "failed") and score is not None and spec.threshold is not None:
        op = ">=" if higher else "<="
        holds = score >= spec.threshold if higher else score <= spec.threshold
        explanation += f" ({shown} {op if holds else 'not ' + op} {spec.threshold:g}"
        explanation += ", lower is better as the verdict implies)" if not higher else ")"
    details: dict[str, Any] = {"function": path, "adk_status": status_name}
    per_turn: dict[int, MetricResult] = {}
    raw_turns = _field(result, "per_invocation_results") or []
    if isinstance(raw_turns, Sequence) and len(raw_turns) == n_turns:
        for index, item in enumerate(raw_turns):
            turn_score = _score(_field(item, "score"))
            turn_status_name = _status_name(_field(item, "eval_status")) or "NOT_EVALUATED"
            if isinstance(turn_score, str):
                return _error(
                    spec, f"per_invocation_results[{index}]: {turn_score.replace('overall_score', 'score')}"
                ), {}
            per_turn[index] = MetricResult(
                name=spec.name,
                score=turn_score,
                threshold=spec.threshold,
                status=_STATUS_MAP[turn_status_name],
                higher_is_better=higher,
                explanation=f"{path}: score={'None' if turn_score is None else f'{turn_score:.3f}'}, {turn_status_name}",
            )
    elif raw_turns:
        details["notes"] = [
            f"{len(raw_turns)} per-invocation result(s) for {n_turns} turn(s): they cannot be aligned and are not shown"
        ]
    return (
        MetricResult(
            name=spec.name,
            score=score,
            threshold=spec.threshold,
            status=status,
            higher_is_better=higher,
            explanation=explanation,
            details=details,
        ),
        per_turn,
    )


async def score_custom(
    spec: MetricSpec,
    case: EvalCase,
    outputs: Sequence[AgentOutput],
    latencies: Sequence[float | None] = (),
) -> tuple[MetricResult, dict[int, MetricResult]]:
    """Run one custom metric on a case's answered turns; failures become an `error` result (never a crash)."""
    try:
        function = resolve(spec)
        actual, expected = adk_invocations(case, outputs, latencies)
        eval_metric = _eval_metric(spec)
    except CustomMetricError as exc:
        return _error(spec, str(exc).removeprefix(f"{_where(spec)}: ")), {}
    except Exception as exc:  # building ADK objects from odd data must not crash the run
        return _error(spec, f"could not build its arguments: {type(exc).__name__}: {exc}"), {}
    try:
        if inspect.iscoroutinefunction(function):
            result = await function(eval_metric, actual, expected, None)
        else:
            # A synchronous metric runs in a worker thread so the agents' turns in flight keep going.
            result = await asyncio.to_thread(function, eval_metric, actual, expected, None)
            if inspect.isawaitable(result):
                result = await result
    except Exception as exc:  # the user's metric failing is data, never a crash of the run
        return _error(spec, f"raised {type(exc).__name__}: {exc}"), {}
    return read_result(spec, result, len(actual))


async def score_evaluator(
    spec: MetricSpec,
    case: EvalCase,
    outputs: Sequence[AgentOutput],
    latencies: Sequence[float | None] = (),
    *,
    played: Played | None = None,
) -> tuple[list[MetricResult], dict[int, list[MetricResult]]]:
    """Run one user evaluator in whichever idiom it is written (`metrics.evaluators`): case-level results
    and per-turn ones; failures become an `error` result (never a crash). `played` says where the case ran (its
    eval set, format, repetition and times) when the caller knows."""
    from evalward.metrics import evaluators  # start-up: user evaluators' machinery, only for user code

    try:
        target = resolve(spec)
    except CustomMetricError as exc:
        return [_error(spec, str(exc).removeprefix(f"{_where(spec)}: "))], {}
    kind = evaluators.idiom(target)
    if kind == "adk":
        case_level, turn_level = await score_custom(spec, case, outputs, latencies)
        return [case_level], {turn: [result] for turn, result in turn_level.items()}
    path = function_path(spec)
    played = played or evaluators.Played(case=case, outputs=outputs, latencies=latencies)
    try:
        if kind == "langsmith":
            if callable(getattr(target, "aevaluate_run", None)):  # a LangSmith RunEvaluator (`@run_evaluator`)
                run, example = evaluators.langsmith_records(played)
                returned = await target.aevaluate_run(run, example)
            else:
                parameters = inspect.signature(target).parameters
                wanted = [name for name in evaluators.LANGSMITH_PARAMETERS if name in parameters]
                arguments = evaluators.langsmith_arguments(played, wanted, agentevals=evaluators._is_agentevals(target))
                returned = await evaluators.call(target, **arguments)
            return evaluators.read_langsmith(spec, returned, path), {}
        instance = evaluators.instantiate(target, evaluator_args(spec))
        context = evaluators.pydantic_context(played)
        returned = await evaluators.call(instance.evaluate, context)
        return evaluators.read_pydantic(spec, returned, path), {}
    except evaluators.EvaluatorError as exc:
        return [_error(spec, str(exc), "evaluator")], {}
    except Exception as exc:  # the user's evaluator failing is data, never a crash of the run
        return [_error(spec, f"raised {type(exc).__name__}: {exc}", "evaluator")], {}


class CodeConfig(BaseModel):
    """Where the user's code is: `name`, a dotted path (`metrics.custom.split_path`)."""

    model_config = ConfigDict(defer_build=True, extra="allow", frozen=True)

    name: str


class CustomMetricConfig(BaseModel):
    """A `custom_metrics` entry as the readers normalise it (`evaluator_spec`): the code's path, the arguments of
    an evaluator class, and ADK's `description` / `metric_info`."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    code_config: CodeConfig
    args: dict[str, Any] | list[Any] | None = None
    description: str = ""
    metric_info: dict[str, Any] | None = None


class CustomMetricOptions(BaseModel):
    """A custom criterion's options: its `custom_metric` entry, and any other key, which ADK hands the function
    as a criterion option (`BaseCriterion(**options)`): those are the user's own."""

    model_config = ConfigDict(defer_build=True, extra="allow", frozen=True)

    custom_metric: CustomMetricConfig


class UserCodeMetric(Metric):
    """Every criterion declared under `custom_metrics` (ADK custom metrics and user evaluators) as a `Metric`:
    each is run on the case's answered turns (`score_evaluator`), in criterion order, when the agent answered
    at least one turn. The first criterion with an `error` result stops the case as a `metric_error` naming
    that criterion's errored results (a later one's error stays on its own result)."""

    name = "custom_metric"
    batch: ClassVar[str] = "user_code"
    description = "ADK custom metrics and user evaluators (`custom_metrics` in test_config.json, `evaluator`)."

    Options = CustomMetricOptions

    @classmethod
    def threshold_problem(cls, spec: MetricSpec) -> OptionProblem | None:
        """Any threshold: the function's verdict decides, and says which direction is better (`_direction`)."""
        return None

    async def evaluate(self, specs: Sequence[MetricSpec], ctx: ScoringContext) -> CaseScores:
        if not ctx.outputs:
            return CaseScores()
        from evalward.metrics.evaluators import Played  # start-up: user evaluators' machinery, only for user code

        case_level: list[MetricResult] = []
        per_turn: dict[int, list[MetricResult]] = {}
        error: CaseError | None = None
        played = Played(  # the same for every criterion of the case
            case=ctx.case,
            outputs=ctx.outputs,
            latencies=list(ctx.turn_latencies_s),
            eval_set_id=ctx.eval_set_id,
            eval_format=ctx.eval_format,
            repetition=ctx.repetition,
            started_at=ctx.started_at,
            finished_at=ctx.finished_at,
        )
        for spec in specs:
            results, turns = await score_evaluator(spec, ctx.case, ctx.outputs, played.latencies, played=played)
            case_level = replace_or_append(case_level, results)
            for turn, turn_results in turns.items():
                per_turn[turn] = replace_or_append(per_turn.get(turn, []), turn_results)
            error = error or metric_error(case_level)
        return CaseScores(case_level, per_turn, error)
