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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

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

_COMMON_OPTIONS = (
    "judge_model_options",
    "judge_model",
    "num_samples",
    "aggregate",
    "temperature",
    "base_url",
    "api_key_env",
    "include_intermediate_responses_in_final",
    "judge",
)
COMMON_JUDGE_OPTIONS: tuple[str, ...] = _COMMON_OPTIONS
"""Options every judged criterion takes (judged teacher-forced steps too, `metrics.step_judge`)."""
_KIND_OPTIONS: dict[JudgeKind, tuple[str, ...]] = {
    "correctness": (),
    "rubric": ("rubrics",),
    "hallucinations": ("evaluate_intermediate_nl_responses",),
    "safety": (),
    "scale": ("rubric", "scale", "include_input", "include_reference"),
    "user_simulation": ("stop_signal",),
    "step": ("match",),
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


# --- reading a MetricSpec -------------------------------------------------------------------------------------


def is_judged(name: str) -> bool:
    return name in JUDGED_METRICS


def is_conversation_metric(name: str) -> bool:
    return name in CONVERSATION_METRICS


def check_judge_options(spec: MetricSpec) -> list[str]:
    """Problems with a judged metric's options and threshold, as messages; empty when valid."""
    kind = JUDGED_METRICS.get(spec.name)
    if kind is None:
        return [
            f"{spec.name}: evalward has no judge for this metric (it needs Vertex AI); "
            f"judged metrics: {', '.join(sorted(JUDGED_METRICS))}"
        ]
    problems = [
        f"{spec.name}: unknown option {key!r}; known: {', '.join(sorted((*_COMMON_OPTIONS, *_KIND_OPTIONS[kind])))}"
        for key in spec.options
        if key not in _COMMON_OPTIONS and key not in _KIND_OPTIONS[kind]
    ]
    if problems:
        return problems
    try:
        judge_spec(spec)
    except ValueError as exc:
        problems.append(f"{spec.name}: {exc}")
    if spec.threshold is not None and not 0.0 <= spec.threshold <= 1.0:
        problems.append(f"{spec.name}: threshold must be between 0 and 1, found {spec.threshold:g}")
    return problems


def judge_spec(spec: MetricSpec) -> JudgeSpec:
    """The JudgeSpec for a judged MetricSpec (or a step criterion with `match: judge`, kind `step`);
    ValueError names the first bad option."""
    from evalward.metrics.step_judge import judges_steps

    kind = JUDGED_METRICS.get(spec.name) or ("step" if judges_steps(spec) else None)
    if kind is None:
        raise ValueError(f"{spec.name} is not a judged metric")
    options = spec.options
    model_options = options.get("judge_model_options") or {}
    if not isinstance(model_options, Mapping):
        raise ValueError(f"judge_model_options must be an object, found {model_options!r}")
    model_config = model_options.get("judge_model_config") or {}
    model = options.get("judge_model", model_options.get("judge_model"))
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError(f"judge_model must be a non-empty string, found {model!r}")
    # ADK's hallucinations evaluator segments and labels once, whatever num_samples says.
    default_samples = ADK_DEFAULT_SAMPLES if spec.name in ADK_JUDGED and kind != "hallucinations" else 1
    samples = options.get("num_samples", model_options.get("num_samples", default_samples))
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"num_samples must be an integer >= 1, found {samples!r}")
    default_aggregate: Aggregate = "mean" if kind == "hallucinations" or kind == "scale" else "majority"
    aggregate = options.get("aggregate", default_aggregate)
    if aggregate not in ("majority", "mean"):
        raise ValueError(f"aggregate must be 'majority' or 'mean', found {aggregate!r}")
    temperature = options.get(
        "temperature", model_config.get("temperature") if isinstance(model_config, Mapping) else None
    )
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)):
        raise ValueError(f"temperature must be a number, found {temperature!r}")
    for key in ("base_url", "api_key_env"):
        value = options.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{key} must be a non-empty string, found {value!r}")
    rubrics: tuple[Rubric, ...] = ()
    rubric_text: str | None = None
    scale = Scale("bool")
    if kind == "rubric":
        rubrics = parse_rubrics(options.get("rubrics"))
    if kind == "scale":
        rubric_text = options.get("rubric")
        if not isinstance(rubric_text, str) or not rubric_text.strip():
            raise ValueError("llm_judge needs a 'rubric': the criteria the judge applies, as text")
        scale = parse_scale(options.get("scale", "bool"))
    stop_signal = options.get("stop_signal", STOP_SIGNAL)
    if not isinstance(stop_signal, str) or not stop_signal.strip():
        raise ValueError(f"stop_signal must be a non-empty string, found {stop_signal!r}")
    for key in ("include_input", "include_reference", "evaluate_intermediate_nl_responses"):
        if key in options and not isinstance(options[key], bool):
            raise ValueError(f"{key} must be true or false, found {options[key]!r}")
    return JudgeSpec(
        metric=spec.name,
        kind=kind,
        model=model.strip() if isinstance(model, str) else None,
        num_samples=samples,
        aggregate=aggregate,
        rubrics=rubrics,
        rubric=rubric_text,
        scale=scale,
        include_input=bool(options.get("include_input", True)),
        include_reference=bool(options.get("include_reference", False)),
        temperature=float(temperature) if temperature is not None else None,
        base_url=options.get("base_url"),
        api_key_env=options.get("api_key_env"),
        evaluate_intermediate=bool(options.get("evaluate_intermediate_nl_responses", False)),
        stop_signal=stop_signal,
    )


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
        raise ValueError(f"rubric ids must be unique, found {ids}")
    return tuple(rubrics)


def parse_scale(value: Any) -> Scale:
    """`"bool"`, `[lo, hi]` (numbers, lo < hi) or `[label, label, …]` (strings, worst first)."""
    if value == "bool" or value is True:
        return Scale("bool")
    if isinstance(value, list) and len(value) == 2 and all(is_number(v) for v in value):
        low, high = float(value[0]), float(value[1])
        if not low < high:
            raise ValueError(f"scale [lo, hi] needs lo < hi, found {value}")
        return Scale("range", low=low, high=high)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        if len(set(value)) != len(value):
            raise ValueError(f"scale choices must be distinct, found {value}")
        return Scale("choices", choices=tuple(value))
    raise ValueError(f"scale must be 'bool', [lo, hi] or a list of choice labels (worst first), found {value!r}")


def is_number(value: Any) -> bool:
    """A JSON number (a bool is not one)."""
    return isinstance(value, int | float) and not isinstance(value, bool)
