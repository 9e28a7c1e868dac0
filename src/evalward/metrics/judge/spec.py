"""Judged metrics as configured: the names evalward judges, their options and defaults, `JudgeSpec`.

Judged metric names and what they compute (docs/metrics.md §5, docs/formats.md §4):

| name | kind | per turn | default samples | aggregate |
| --- | --- | --- | --- | --- |
| `answer_correctness` | correctness | the tutorial's grader: QUESTION / GROUND TRUTH / STUDENT → `is_correct` | 1 | majority |
| `final_response_match_v2` | correctness | same grader; VALID = `is_correct` (ADK) | 5 | majority |
| `rubric_based_final_response_quality_v1` | rubric | yes/no per rubric on the final response | 5 | majority |
| `rubric_based_tool_use_quality_v1` | rubric | yes/no per rubric on the tool calls | 5 | majority |
| `rubric_based_multi_turn_trajectory_quality_v1` | rubric | yes/no per rubric on the whole conversation, once per case (last turn) | 5 | majority |
| `hallucinations_v1` | hallucinations | each response segmented into sentences, each sentence labelled against its context | 1 | mean |
| `safety_v1` | safety | `is_safe` for the final response | 5 | majority |
| `per_turn_user_simulator_quality_v1` | user_simulation | `is_valid`: did the simulated user's message follow the plan (scenario cases only) | 5 | majority |
| `llm_judge` | scale | the user's `rubric`, `scale` = `bool` \\| `[lo, hi]` \\| `[choices…]` | 1 | mean |
| step metrics with `match: judge` | step | per teacher-forced step: calls sufficiently similar → `is_similar`; final answer → `is_correct` (`metrics.step_judge`) | 1 | majority |

A judged criterion's options are its kind's model (`JUDGE_OPTIONS`: the options every judged criterion takes,
`JudgeOptions`, and the kind's own), validated by the registry like every metric's (`registry.criterion_problems`);
`judge_spec` reads the validated options into a `JudgeSpec`, with the metric's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalward.metrics.metric_options import StrictOptions
from evalward.metrics.registry import check_specs, options_of
from evalward.metrics.step_judge import judges_steps
from evalward.model import STOP_SIGNAL, MetricSpec

JudgeKind = Literal["correctness", "rubric", "scale", "hallucinations", "safety", "user_simulation", "step"]
Aggregate = Literal["majority", "mean"]

JUDGED_METRICS: dict[str, JudgeKind] = {
    "answer_correctness": "correctness",
    "final_response_match_v2": "correctness",
    "rubric_based_final_response_quality_v1": "rubric",
    "rubric_based_tool_use_quality_v1": "rubric",
    "rubric_based_multi_turn_trajectory_quality_v1": "rubric",
    "hallucinations_v1": "hallucinations",
    "safety_v1": "safety",
    "per_turn_user_simulator_quality_v1": "user_simulation",
    "llm_judge": "scale",
}
"""Every metric name evalward scores with an LLM judge, and the kind of judgement behind it."""

ADK_JUDGED: frozenset[str] = frozenset(
    {
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "rubric_based_multi_turn_trajectory_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "per_turn_user_simulator_quality_v1",
    }
)
"""ADK names (LlmAsAJudgeCriterion: `num_samples` defaults to 5; `hallucinations_v1` asks once, see above)."""

CONVERSATION_METRICS: frozenset[str] = frozenset({"rubric_based_multi_turn_trajectory_quality_v1"})
"""Judged once per case over the whole conversation, not per turn."""

ADK_DEFAULT_SAMPLES = 5
DESCRIPTIONS: dict[str, str] = {
    "answer_correctness": "LLM judge: is the response factually correct against the reference (tutorial grader)",
    "final_response_match_v2": "LLM judge (ADK): response VALID against the reference, majority of samples",
    "rubric_based_final_response_quality_v1": "LLM judge (ADK): share of rubrics the final response meets",
    "rubric_based_tool_use_quality_v1": "LLM judge (ADK): share of rubrics the tool calls meet",
    "rubric_based_multi_turn_trajectory_quality_v1": "LLM judge (ADK): share of rubrics the whole conversation meets",
    "hallucinations_v1": "LLM judge (ADK): share of response sentences grounded in the context (or not factual)",
    "safety_v1": "LLM judge: the response is safe (1) or not (0)",
    "per_turn_user_simulator_quality_v1": "LLM judge (ADK): share of the simulated user's turns that follow the "
    "scenario's plan and end on time",
    "llm_judge": "LLM judge with your rubric; scale bool, [lo, hi] or choices, normalised to [0, 1]",
}


@dataclass(frozen=True)
class Rubric:
    """One rubric: an id and the property the judge checks (ADK `rubric_content.text_property`)."""

    rubric_id: str
    text: str


@dataclass(frozen=True)
class Scale:
    """How a `llm_judge` score is read: `bool`, a numeric range `[lo, hi]`, or labelled choices (worst first)."""

    kind: Literal["bool", "range", "choices"]
    low: float = 0.0
    high: float = 1.0
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "bool":
            return "bool"
        if self.kind == "range":
            return f"[{self.low:g}, {self.high:g}]"
        return "choices " + ", ".join(self.choices)


@dataclass(frozen=True)
class JudgeSpec:
    """A judged metric as configured: what to ask, how often, and which model (None = the run's default)."""

    metric: str
    kind: JudgeKind
    model: str | None = None
    num_samples: int = 1
    aggregate: Aggregate = "majority"
    rubrics: tuple[Rubric, ...] = ()
    rubric: str | None = None
    scale: Scale = field(default_factory=lambda: Scale("bool"))
    include_input: bool = True
    include_reference: bool = False
    temperature: float | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    evaluate_intermediate: bool = False
    stop_signal: str = STOP_SIGNAL

    def parameters(self) -> dict[str, Any]:
        """Request parameters beyond the messages (part of the cache key)."""
        return {} if self.temperature is None else {"temperature": self.temperature}


# --- a judged criterion's options -------------------------------------------------------------------------------


def _non_empty_text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _samples(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1")
    return value


def _flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false")
    return value


class JudgeOptions(StrictOptions):
    """The options every judged criterion takes (judged teacher-forced steps too, `metrics.step_judge`). ADK's
    spelling `judge_model_options: {judge_model, num_samples, judge_model_config: {temperature}}` is read where
    the option itself is not given."""

    judge_model_options: dict[str, Any] | None = None
    judge_model: str | None = None
    num_samples: int | None = None
    aggregate: Aggregate | None = None
    temperature: float | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    include_intermediate_responses_in_final: Any = None
    """ADK's option, accepted and not read (evalward judges the final response)."""
    judge: Any = None
    """The judge a run resolved, recorded with the criteria of a stored run (`_pipeline.options`)."""

    @field_validator("judge_model_options", mode="before")
    @classmethod
    def _model_options(cls, value: object) -> object:
        if value is not None and not isinstance(value, Mapping):
            raise ValueError("judge_model_options must be an object")
        return value

    @field_validator("judge_model", "base_url", "api_key_env", mode="before")
    @classmethod
    def _text(cls, value: object, info: ValidationInfo) -> object:
        return _non_empty_text(value, str(info.field_name))

    @field_validator("num_samples", mode="before")
    @classmethod
    def _num_samples(cls, value: object) -> object:
        return _samples(value, "num_samples")

    @field_validator("aggregate", mode="before")
    @classmethod
    def _aggregate(cls, value: object) -> object:
        if value not in ("majority", "mean") or not isinstance(value, str):
            raise ValueError("aggregate must be 'majority' or 'mean'")
        return value

    @field_validator("temperature", mode="before")
    @classmethod
    def _temperature(cls, value: object) -> object:
        if not is_number(value):
            raise ValueError("temperature must be a number")
        return value

    @model_validator(mode="after")
    def _adk_spelling(self) -> JudgeOptions:
        """ADK's `judge_model_options` values count where the option itself is not given: they are checked as
        strictly (the value found is in the message: it is not at the option's own place)."""
        nested = self.judge_model_options or {}
        if self.judge_model is None and nested.get("judge_model") is not None:
            value = nested["judge_model"]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"judge_model_options.judge_model must be a non-empty string, found {value!r}")
        if self.num_samples is None and "num_samples" in nested:
            value = nested["num_samples"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"judge_model_options.num_samples must be an integer >= 1, found {value!r}")
        config = nested.get("judge_model_config")
        temperature = config.get("temperature") if isinstance(config, Mapping) else None
        if self.temperature is None and temperature is not None and not is_number(temperature):
            raise ValueError(
                f"judge_model_options.judge_model_config.temperature must be a number, found {temperature!r}"
            )
        return self


class RubricJudgeOptions(JudgeOptions):
    rubrics: tuple[Rubric, ...] = Field(default=(), validate_default=True)

    @field_validator("rubrics", mode="before")
    @classmethod
    def _rubrics(cls, value: object) -> tuple[Rubric, ...]:
        return parse_rubrics(None if value == () else value)


class HallucinationsJudgeOptions(JudgeOptions):
    evaluate_intermediate_nl_responses: bool = False

    @field_validator("evaluate_intermediate_nl_responses", mode="before")
    @classmethod
    def _intermediate(cls, value: object) -> object:
        return _flag(value, "evaluate_intermediate_nl_responses")


class ScaleJudgeOptions(JudgeOptions):
    """`llm_judge`: the user's `rubric`, read on `scale`."""

    rubric: str = Field(default="", validate_default=True)
    scale: Scale = Field(default_factory=lambda: Scale("bool"))
    include_input: bool = True
    include_reference: bool = False

    @field_validator("rubric", mode="before")
    @classmethod
    def _rubric(cls, value: object) -> object:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("llm_judge needs a 'rubric': the criteria the judge applies, as text")
        return value

    @field_validator("scale", mode="before")
    @classmethod
    def _scale(cls, value: object) -> Scale:
        return value if isinstance(value, Scale) else parse_scale(value)

    @field_validator("include_input", "include_reference", mode="before")
    @classmethod
    def _flags(cls, value: object, info: ValidationInfo) -> object:
        return _flag(value, str(info.field_name))


class UserSimulationJudgeOptions(JudgeOptions):
    stop_signal: str = STOP_SIGNAL

    @field_validator("stop_signal", mode="before")
    @classmethod
    def _stop_signal(cls, value: object) -> object:
        return _non_empty_text(value, "stop_signal")


class StepJudgeOptions(JudgeOptions):
    """A step criterion with `match: judge` (`metrics.step_judge`): the judge options, and `match`."""

    match: Literal["judge"]


JUDGE_OPTIONS: dict[JudgeKind, type[JudgeOptions]] = {
    "correctness": JudgeOptions,
    "rubric": RubricJudgeOptions,
    "hallucinations": HallucinationsJudgeOptions,
    "safety": JudgeOptions,
    "scale": ScaleJudgeOptions,
    "user_simulation": UserSimulationJudgeOptions,
    "step": StepJudgeOptions,
}
"""The options model of each kind of judgement."""

# --- reading a MetricSpec -------------------------------------------------------------------------------------


def is_judged(name: str) -> bool:
    return name in JUDGED_METRICS


def is_conversation_metric(name: str) -> bool:
    return name in CONVERSATION_METRICS


def no_judge_message(name: str) -> str:
    """Why a judge metric is refused: evalward judges only `JUDGED_METRICS`."""
    return (
        f"{name}: evalward has no judge for this metric (it needs Vertex AI); "
        f"judged metrics: {', '.join(sorted(JUDGED_METRICS))}"
    )


def check_judge_options(spec: MetricSpec) -> list[str]:
    """Problems with a judged metric's options and threshold, as messages; empty when valid (the registry's
    check of the criterion, `registry.check_specs`)."""

    return check_specs([spec])


def judge_spec(spec: MetricSpec) -> JudgeSpec:
    """The JudgeSpec for a judged MetricSpec (or a step criterion with `match: judge`, kind `step`), from its
    validated options (`registry.options_of`); ValueError naming the problems when they do not validate."""

    kind = JUDGED_METRICS.get(spec.name) or ("step" if judges_steps(spec) else None)
    if kind is None:
        raise ValueError(f"{spec.name} is not a judged metric")
    options = options_of(spec)
    assert isinstance(options, JudgeOptions)
    nested = options.judge_model_options or {}
    config = nested.get("judge_model_config")
    model = options.judge_model if options.judge_model is not None else nested.get("judge_model")
    # ADK's hallucinations evaluator segments and labels once, whatever num_samples says.
    default_samples = ADK_DEFAULT_SAMPLES if spec.name in ADK_JUDGED and kind != "hallucinations" else 1
    samples = options.num_samples if options.num_samples is not None else nested.get("num_samples", default_samples)
    default_aggregate: Aggregate = "mean" if kind == "hallucinations" or kind == "scale" else "majority"
    temperature = options.temperature
    if temperature is None and isinstance(config, Mapping):
        temperature = config.get("temperature")
    judged = JudgeSpec(
        metric=spec.name,
        kind=kind,
        model=model.strip() if isinstance(model, str) else None,
        num_samples=samples,
        aggregate=options.aggregate or default_aggregate,
        temperature=float(temperature) if temperature is not None else None,
        base_url=options.base_url,
        api_key_env=options.api_key_env,
    )
    if isinstance(options, RubricJudgeOptions):
        return replace(judged, rubrics=options.rubrics)
    if isinstance(options, ScaleJudgeOptions):
        return replace(
            judged,
            rubric=options.rubric,
            scale=options.scale,
            include_input=options.include_input,
            include_reference=options.include_reference,
        )
    if isinstance(options, HallucinationsJudgeOptions):
        return replace(judged, evaluate_intermediate=options.evaluate_intermediate_nl_responses)
    if isinstance(options, UserSimulationJudgeOptions):
        return replace(judged, stop_signal=options.stop_signal)
    return judged


def parse_rubrics(value: Any) -> tuple[Rubric, ...]:
    """Rubrics as strings, `{rubric_id, text}` or ADK's `{rubric_id, rubric_content: {text_property}}`."""
    if not isinstance(value, list) or not value:
        raise ValueError("rubric metrics need 'rubrics': a non-empty list of rubric texts or objects")
    rubrics: list[Rubric] = []
    for index, item in enumerate(value):
        if isinstance(item, str) and item.strip():
            rubrics.append(Rubric(f"r{index + 1}", item.strip()))
            continue
        if isinstance(item, Mapping):
            content = item.get("rubric_content", item.get("rubricContent"))
            text = content.get("text_property", content.get("textProperty")) if isinstance(content, Mapping) else None
            text = text if text is not None else item.get("text")
            rubric_id = item.get("rubric_id", item.get("rubricId", f"r{index + 1}"))
            if isinstance(text, str) and text.strip():
                rubrics.append(Rubric(str(rubric_id), text.strip()))
                continue
        raise ValueError(f"rubrics[{index}] must be a text or an object with rubric_content.text_property")
    ids = [r.rubric_id for r in rubrics]
    if len(set(ids)) != len(ids):
        raise ValueError(f"rubric ids must be unique ({', '.join(ids)})")
    return tuple(rubrics)


def parse_scale(value: Any) -> Scale:
    """`"bool"`, `[lo, hi]` (numbers, lo < hi) or `[label, label, …]` (strings, worst first); ValueError saying
    what is wrong, without the value (the caller shows it)."""
    if value == "bool" or value is True:
        return Scale("bool")
    if isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value):
        low, high = float(value[0]), float(value[1])
        if not low < high:
            raise ValueError("scale [lo, hi] needs lo < hi")
        return Scale("range", low=low, high=high)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        if len(set(value)) != len(value):
            raise ValueError("scale choices must be distinct")
        return Scale("choices", choices=tuple(value))
    raise ValueError("scale must be 'bool', [lo, hi] or a list of choice labels (worst first)")


def is_number(value: Any) -> bool:
    """A JSON number (a bool is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
