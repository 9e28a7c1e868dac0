"""ADK `test_config.json` → `Criteria`, with ADK's value rules and stricter checks.

Shape: `{"criteria": {name: value}, "custom_metrics": {...}, "user_simulator_config": {...},
"live_model_config": {...}}`; camelCase top-level keys are accepted too. Unknown top-level keys are ignored by
ADK (so `"criterias"` silently means "no criteria"); here they are ignored with a warning.

A criterion value is
- a number: the threshold (ints become floats);
- an object: `threshold` is required; `match_type` is normalised like ADK (strip, upper-case, `-` and space
  → `_`, or the enum ints 0/1/2 → EXACT/IN_ORDER/ANY_ORDER); `ignore_args` must be a boolean;
  `judge_model_options` is checked like ADK's; camelCase keys (`matchType`, `ignoreArgs`, …) become
  snake_case options; any other key is kept as given.
The result is `MetricSpec(name, threshold, options)` with exactly the option keys written in the file.

Names must be ADK criteria, names the caller knows (`known_metrics`), or names declared under
`custom_metrics`; anything else is a problem listing the known names. The efficiency metrics
(`tool_call_count_v1`, `inference_call_count_v1`, `token_usage_v1`, `invocation_duration_v1`) are
informational, reported for every ADK eval set without being named, and take no threshold: a threshold is
an error (ADK's evaluators raise on one); `null` or `{}` is accepted. Judge and Vertex criteria are kept
with their options; the pipeline refuses them later when no judge model is configured.

`user_simulator_config` (ADK's `LlmBackedUserSimulatorConfig`, camelCase accepted) → `Criteria.user_simulator`:
`model`, `max_allowed_invocations` (default 20, -1 = no limit), `custom_instructions` (must contain
`{{ stop_signal }}`, `{{ conversation_plan }}` and `{{ conversation_history }}`), `include_function_calls`,
and `model_configuration.temperature`; other `model_configuration` keys are Gemini settings and are ignored
with a warning, and so is `type` other than `llm_backed` (evalward simulates users in text).

`custom_metrics`: `{name: {"code_config": {"name": "pkg.module.function", "args"?: [{"name"?, "value"}]},
"description"?, "metric_info"?}}` (ADK's shape, camelCase accepted; `code_config.name` must be a dotted path, or
`pkg.module:attr`), or evalward's `{name: {"evaluator": "pkg.module:Class", "args": {...} | [...]}}` for an
evaluator class created with arguments (keywords for an object, positional for a list; ADK's `args` list is
keywords when every item is named). A criterion of that name gets the option `custom_metric` =
`metrics.custom.evaluator_spec`'s shape (`code_config.name`, `args`) with the entry's `description` and
`metric_info`; `metrics.custom` runs it, in whichever idiom it is written (ADK, LangSmith/openevals or
pydantic-evals: `metrics.evaluators`). Such a criterion may have no threshold (`null`, `{}`): informational.
An entry no criterion names is not run, as in ADK (a warning says so); an entry named like a built-in metric
is run instead of the built-in (a warning says so).

`replace_defaults` (evalward's own, boolean, default false): for a config beside a non-ADK eval file, its
criteria replace the format's default criteria instead of being added to them (`loaders.load`).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator
from pydantic.alias_generators import to_camel, to_snake

from evalward.errors import EvalFileError
from evalward.loaders.criterion_checks import record_spec_problems
from evalward.loaders.documents import Document, DocumentError, read_document
from evalward.loaders.positions import PathKey, PositionIndex
from evalward.loaders.problems import Problems, describe_value
from evalward.metrics.custom import CUSTOM_OPTION, evaluator_spec, split_path
from evalward.metrics.registry import is_plugin_metric
from evalward.model import Criteria, MetricSpec, UserSimulatorConfig
from evalward.model.text import template_problem

TRAJECTORY_CRITERION = "tool_trajectory_avg_score"
RESPONSE_MATCH_CRITERION = "response_match_score"

EFFICIENCY_CRITERIA: tuple[str, ...] = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""ADK's always-on, lower-is-better efficiency metrics: informational, no threshold allowed."""

JUDGE_CRITERIA: tuple[str, ...] = (
    "response_evaluation_score",
    "safety_v1",
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
    "hallucinations_v1",
    "per_turn_user_simulator_quality_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
)
"""ADK criteria that need an LLM judge or Vertex AI."""

ADK_CRITERIA: tuple[str, ...] = (TRAJECTORY_CRITERION, RESPONSE_MATCH_CRITERION, *JUDGE_CRITERIA, *EFFICIENCY_CRITERIA)
"""Every criterion name ADK 2.13 registers by default (`PrebuiltMetrics`)."""

MATCH_TYPES: tuple[str, ...] = ("EXACT", "IN_ORDER", "ANY_ORDER")
"""ADK `ToolTrajectoryCriterion.MatchType`, in enum order (0, 1, 2)."""

TOP_LEVEL_KEYS: tuple[str, ...] = (
    "criteria",
    "custom_metrics",
    "user_simulator_config",
    "live_model_config",
    "replace_defaults",
)


def adk_default_criteria() -> Criteria:
    """What ADK uses when no `test_config.json` is found: trajectory 1.0 and ROUGE-1 0.8."""
    return Criteria(
        metrics=[
            MetricSpec(name=TRAJECTORY_CRITERION, threshold=1.0),
            MetricSpec(name=RESPONSE_MATCH_CRITERION, threshold=0.8),
        ],
        origin="adk_defaults",
    )


def normalise_match_type(value: Any) -> str | None:
    """ADK's rule: `" in-order "` → `IN_ORDER`, `1` → `IN_ORDER`; None when the value is not valid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return MATCH_TYPES[value] if 0 <= value < len(MATCH_TYPES) else None
    if isinstance(value, str):
        text = value.strip().upper().replace("-", "_").replace(" ", "_")
        return text if text in MATCH_TYPES else None
    return None


class _JudgeModelOptions(BaseModel):
    model_config = ConfigDict(
        defer_build=True, extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False
    )

    judge_model: str | None = None
    judge_model_config: dict[str, Any] | None = None
    num_samples: int | None = Field(default=None, ge=1)
    parallelism_limit: int | None = Field(default=None, ge=1)


class _ArgumentConfig(BaseModel):
    """ADK's `ArgumentConfig`: one argument of a `CodeConfig`, by keyword (`name`) or by position."""

    model_config = ConfigDict(defer_build=True, extra="forbid", loc_by_alias=False)

    name: str | None = None
    value: Any


class _CodeConfig(BaseModel):
    model_config = ConfigDict(
        defer_build=True, extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False
    )

    name: str
    args: list[_ArgumentConfig] | None = None


class _CustomMetricConfig(BaseModel):
    """ADK's `CustomMetricConfig` — where the function is, and what it measures — or evalward's shorter
    `{"evaluator": PATH, "args": {...} | [...]}` for an evaluator class created with arguments."""

    model_config = ConfigDict(
        defer_build=True, extra="forbid", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False
    )

    code_config: _CodeConfig | None = None
    evaluator: str | None = None
    args: dict[str, Any] | list[Any] | None = None
    metric_info: dict[str, Any] | None = None
    description: str = ""

    @model_validator(mode="after")
    def _one_path(self) -> _CustomMetricConfig:
        if (self.code_config is None) == (self.evaluator is None):
            raise ValueError("give the code's path once: either code_config.name or evaluator")
        if self.args is not None and self.code_config is not None and self.code_config.args is not None:
            raise ValueError("give the arguments once: either args or code_config.args")
        return self

    def path(self) -> str:
        return self.code_config.name if self.code_config is not None else self.evaluator or ""

    def arguments(self) -> dict[str, Any] | list[Any] | None:
        """The evaluator's arguments: `args`, or ADK's `code_config.args` (all named → keywords, else positional)."""
        if self.args is not None:
            return self.args
        listed = self.code_config.args if self.code_config is not None else None
        if listed is None:
            return None
        if listed and all(item.name for item in listed):
            return {str(item.name): item.value for item in listed}
        if any(item.name for item in listed):
            raise ValueError("code_config.args must be all named (keywords) or all unnamed (positional)")
        return [item.value for item in listed]


class _CriterionOptions(BaseModel):
    """The option keys ADK knows the type of; others pass through as given."""

    model_config = ConfigDict(
        defer_build=True, extra="allow", alias_generator=to_camel, populate_by_name=True, loc_by_alias=False
    )

    ignore_args: StrictBool | None = None
    include_intermediate_responses_in_final: StrictBool | None = None
    evaluate_intermediate_nl_responses: StrictBool | None = None
    stop_signal: str | None = None
    judge_model_options: _JudgeModelOptions | None = None


class _UserSimulatorConfig(BaseModel):
    """ADK's `LlmBackedUserSimulatorConfig` (extra keys allowed, as ADK's base config allows them)."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        loc_by_alias=False,
        protected_namespaces=(),
        defer_build=True,
    )

    type: str | None = None
    model: str | None = None
    model_configuration: dict[str, Any] | None = None
    max_allowed_invocations: int = Field(default=20, ge=-1)
    custom_instructions: str | None = None
    include_function_calls: StrictBool = False


SIMULATOR_PLACEHOLDERS = ("stop_signal", "conversation_plan", "conversation_history")
"""What ADK requires `custom_instructions` to contain."""


def _user_simulator(value: Any, key: str, problems: Problems) -> UserSimulatorConfig | None:
    """The simulator settings of `user_simulator_config` (module docstring); problems for bad values."""
    if value is None:
        return None
    parsed = problems.validate(_UserSimulatorConfig, value, (key,))
    if parsed is None:
        return None
    raw = value if isinstance(value, dict) else {}

    def key_of(field: str) -> str:
        return next((k for k in raw if to_snake(k) == field), field)

    if parsed.type not in (None, "llm_backed"):
        problems.warn(
            f"user_simulator_config type {parsed.type!r}: evalward simulates users in text, as 'llm_backed'",
            (key, key_of("type")),
        )
    if parsed.custom_instructions is not None:
        problem = template_problem(parsed.custom_instructions, SIMULATOR_PLACEHOLDERS)
        if problem is not None:
            problems.add(
                f"custom_instructions: {problem}",
                (key, key_of("custom_instructions")),
                expected="a template with " + ", ".join("{{ " + n + " }}" for n in SIMULATOR_PLACEHOLDERS),
                found=describe_value(parsed.custom_instructions),
            )
            return None
    temperature: float | None = None
    settings = dict(parsed.model_configuration or {})
    raw_temperature = settings.pop("temperature", None)
    if raw_temperature is not None:
        if not _is_number(raw_temperature):
            problems.add(
                "model_configuration.temperature must be a number",
                (key, key_of("model_configuration"), "temperature"),
                expected="a number",
                found=describe_value(raw_temperature),
            )
            return None
        temperature = float(raw_temperature)
    if settings:
        problems.warn(
            "user_simulator_config.model_configuration: only temperature is used by evalward's simulator; "
            f"ignored: {', '.join(sorted(settings))}",
            (key, key_of("model_configuration")),
        )
    return UserSimulatorConfig(
        model=parsed.model.strip() if parsed.model and parsed.model.strip() else None,
        max_allowed_invocations=parsed.max_allowed_invocations,
        custom_instructions=parsed.custom_instructions,
        include_function_calls=parsed.include_function_calls,
        temperature=temperature,
    )


def _efficiency_threshold_message(name: str) -> str:
    """ADK 2.13's refusal (its evaluators raise it, recording the metric NOT_EVALUATED), as a config error."""
    return (
        f"{name} does not support a threshold: it reports a value and never passes or fails; remove it from "
        "'criteria' (it is reported automatically for every ADK eval set)"
    )


def _is_number(value: Any) -> bool:
    """A finite JSON number (NaN and Infinity, which Python's JSON reader accepts, are not thresholds)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def metric_spec_from_criterion(
    name: str, value: Any, at: PathKey, problems: Problems, *, optional_threshold: bool = False
) -> MetricSpec | None:
    """One `criteria` entry → MetricSpec; records problems (and returns None) when it is invalid.

    `optional_threshold` (user evaluators): `null`, `{}` or an object without `threshold` is informational."""
    informational = name in EFFICIENCY_CRITERIA
    if _is_number(value):
        if informational:
            problems.add(
                _efficiency_threshold_message(name),
                at,
                expected="null or {}",
                found=describe_value(value),
            )
            return None
        return MetricSpec(name=name, threshold=float(value))
    if value is None or value == {}:
        if informational or optional_threshold:
            return MetricSpec(name=name)
        problems.add(
            f"criterion {name!r} needs a threshold",
            at,
            expected="a number or an object with 'threshold'",
            found=describe_value(value),
        )
        return None
    if not isinstance(value, dict):
        problems.add(
            f"criterion {name!r} must be a number or an object",
            at,
            expected="a number or an object with 'threshold'",
            found=describe_value(value),
        )
        return None
    threshold_key = next((k for k in value if k == "threshold"), None)
    threshold: float | None = None
    ok = True
    if threshold_key is None:
        if not informational and not optional_threshold:
            problems.add(
                f"criterion {name!r} has no 'threshold'",
                at,
                expected="an object with a numeric 'threshold'",
                found="keys " + ", ".join(repr(k) for k in value) if value else "an empty object",
            )
            ok = False
    elif informational:
        problems.add(
            _efficiency_threshold_message(name),
            (*at, "threshold"),
            on_key=True,
            expected="no 'threshold' key",
        )
        ok = False
    elif not _is_number(value["threshold"]):
        problems.add(
            "the threshold must be a number",
            (*at, "threshold"),
            expected="a number",
            found=describe_value(value["threshold"]),
        )
        ok = False
    else:
        threshold = float(value["threshold"])
    rest = {k: v for k, v in value.items() if k != "threshold"}
    options = criterion_options(name, rest, at, problems)
    if options is None or not ok:
        return None
    return MetricSpec(name=name, threshold=threshold, options=options)


def criterion_options(name: str, given: dict[str, Any], at: PathKey, problems: Problems) -> dict[str, Any] | None:
    match_key = next((k for k in given if k in ("match_type", "matchType")), None)
    match_type: str | None = None
    ok = True
    if match_key is not None:
        match_type = normalise_match_type(given[match_key])
        if match_type is None:
            problems.add(
                f"invalid match_type for {name}",
                (*at, match_key),
                expected="one of " + ", ".join(MATCH_TYPES) + " (or 0, 1, 2)",
                found=describe_value(given[match_key]),
            )
            ok = False
    checked = problems.validate(_CriterionOptions, {k: v for k, v in given.items() if k != match_key}, at)
    if checked is None or not ok:
        return None
    options: dict[str, Any] = {}
    for key in given:
        if key == match_key:
            options["match_type"] = match_type
            continue
        field = to_snake(key)
        if field in _CriterionOptions.model_fields:
            if field == "judge_model_options" and checked.judge_model_options is not None:
                options[field] = checked.judge_model_options.model_dump(exclude_unset=True)
            else:
                options[field] = getattr(checked, field)
        else:
            options[key] = given[key]
    return options


def parse_test_config(problems: Problems, known_metrics: Collection[str] = ()) -> Criteria:
    """The criteria of a parsed `test_config.json`; problems and warnings go to `problems`."""
    document = problems.document
    data = document.data
    if not isinstance(data, dict):
        problems.add(
            "test_config.json must be a JSON object", expected="an object with 'criteria'", found=describe_value(data)
        )
        return Criteria(origin="test_config", config_path=document.path)
    keys: dict[str, str] = {}
    for key in data:
        field = to_snake(key) if isinstance(key, str) else key
        if field in TOP_LEVEL_KEYS:
            keys[field] = key
        else:
            import difflib  # only for a misspelt key

            close = difflib.get_close_matches(str(key), TOP_LEVEL_KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.warn(f"unknown key {key!r} in test_config.json is ignored, as ADK ignores it{hint}", (key,))
    custom = data.get(keys["custom_metrics"]) if "custom_metrics" in keys else None
    custom_names: dict[str, Any] = {}
    custom_configs: dict[str, dict[str, Any]] = {}
    if custom is not None:
        if isinstance(custom, dict):
            custom_names = dict(custom)
            custom_configs = _custom_metrics(custom, keys["custom_metrics"], problems)
        else:
            problems.add(
                "custom_metrics must be an object",
                (keys["custom_metrics"],),
                expected="an object",
                found=describe_value(custom),
            )
    criteria = data.get(keys["criteria"]) if "criteria" in keys else None
    metrics: list[MetricSpec] = []
    if criteria is None:
        if "criteria" not in keys:
            problems.warn("test_config.json has no 'criteria': nothing will be scored")
    elif not isinstance(criteria, dict):
        problems.add(
            "criteria must be an object",
            (keys["criteria"],),
            expected="an object {name: threshold}",
            found=describe_value(criteria),
        )
    else:
        known = sorted({*ADK_CRITERIA, *known_metrics, *custom_names})
        for name, value in criteria.items():
            at: PathKey = (keys["criteria"], name)
            if name not in known and not is_plugin_metric(name):
                import difflib

                close = difflib.get_close_matches(name, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.add(
                    f"unknown criterion {name!r}{hint}",
                    at,
                    on_key=True,
                    expected="one of " + ", ".join(known),
                    found=repr(name),
                )
                continue
            spec = metric_spec_from_criterion(name, value, at, problems, optional_threshold=name in custom_names)
            if spec is not None and name in custom_configs:
                spec = spec.model_copy(update={"options": {**spec.options, "custom_metric": custom_configs[name]}})
            if spec is not None:
                record_spec_problems(problems, spec, at, value)
                metrics.append(spec)
    named = criteria if isinstance(criteria, dict) else {}
    for name in custom_configs:
        if name in ADK_CRITERIA or name in known_metrics:
            problems.warn(
                f"custom metric {name!r} shares its name with a built-in metric: yours is scored, not the built-in",
                (keys["custom_metrics"], name),
            )
        if name not in named:
            problems.warn(
                f"custom metric {name!r} is declared but not named in 'criteria', so it does not run (as in ADK)",
                (keys["custom_metrics"], name),
            )
    simulator = (
        _user_simulator(data.get(keys["user_simulator_config"]), keys["user_simulator_config"], problems)
        if ("user_simulator_config" in keys)
        else None
    )
    replace = data.get(keys["replace_defaults"], False) if "replace_defaults" in keys else False
    if not isinstance(replace, bool):
        problems.add(
            "replace_defaults must be true or false",
            (keys["replace_defaults"],),
            expected="a boolean",
            found=describe_value(replace),
        )
        replace = False
    return Criteria(
        metrics=metrics,
        origin="test_config",
        config_path=document.path,
        user_simulator=simulator,
        replace_defaults=replace,
    )


def _custom_metrics(custom: dict[str, Any], key: str, problems: Problems) -> dict[str, dict[str, Any]]:
    """The valid `custom_metrics` entries, normalised to snake_case without defaults; problems for the rest."""
    configs: dict[str, dict[str, Any]] = {}
    for name, entry in custom.items():
        at: PathKey = (key, name)
        parsed = problems.validate(_CustomMetricConfig, entry, at)
        if parsed is None:
            continue
        path = parsed.path()
        module, function = split_path(path)
        if not module or not function:
            where = (
                (*at, next((k for k in entry if to_snake(k) == "code_config"), "code_config"), "name")
                if parsed.code_config is not None
                else (*at, "evaluator")
            )
            problems.add(
                f"custom metric {name!r}: the path of a function or evaluator class is expected",
                where,
                expected="'package.module.function' or 'package.module:function'",
                found=repr(path),
            )
            continue
        try:
            args = parsed.arguments()
        except ValueError as exc:
            problems.add(f"custom metric {name!r}: {exc}", (*at, "code_config", "args"))
            continue
        config = evaluator_spec(name, path, args=args).options[CUSTOM_OPTION]
        configs[name] = {**config, **parsed.model_dump(include={"metric_info", "description"}, exclude_defaults=True)}
    return configs


def load_test_config(path: str | Path, *, known_metrics: Collection[str] = ()) -> Criteria:
    """Read one `test_config.json`; raise EvalFileError listing every problem in it."""
    criteria, problems = read_test_config(path, known_metrics=known_metrics)
    if problems.items:
        raise EvalFileError(problems.items)
    return criteria


def read_test_config(path: str | Path, *, known_metrics: Collection[str] = ()) -> tuple[Criteria, Problems]:
    """Read one `test_config.json`, returning its criteria with the problems and warnings found."""

    shown = str(path)
    try:
        document = read_document(Path(path), shown)
    except DocumentError as exc:
        problems = Problems(Document(path=shown, data=None, index=PositionIndex(), kind="json"))
        problems.items.extend(exc.problems)
        return Criteria(origin="test_config", config_path=shown), problems
    problems = Problems(document)
    return parse_test_config(problems, known_metrics), problems
