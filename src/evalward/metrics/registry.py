"""The metric registry: every name usable in test_config.json, native files and `--metric`.

- A built-in metric registers itself: `@register_metric` on its class, under the class's `name`. The families
  (`adk`, `response`, `trajectory`, `tools`, …) are imported when one of their metrics is first looked up, so a
  run imports only the families its criteria name: `builtin_names.BUILT_IN_METRICS`, generated from the
  decorated classes (`python -m evalward.metrics.registry`; a test fails when it is stale), says which module
  registers each name;
- `get_metric(name)` returns a fresh metric instance (KeyError listing the known names otherwise);
- `known_metric_names()` lists the names evalward can score (sorted); `plugin_metric_names()` the names installed
  packages register under the `evalward.metrics` entry-point group (`PLUGIN_GROUP`), read only when a criterion
  names a metric that is not built in;
- `criterion_problems(spec)`: the one check of a criterion — its metric exists, its options validate as the
  metric's `Options` (`metrics.metric_options.validate_options`), its threshold is in the metric's range — returning
  structured `OptionProblem`s; `options_of(spec)` is the criterion's validated options, validated once and kept;
  `check_specs(specs)` words the problems of many specs;
- `JUDGE_METRICS` / `requires_judge(name)`: LLM-judge metrics (ADK's and evalward's `answer_correctness`,
  `llm_judge`) and ADK's Vertex metrics; scored by `evalward.judging` after the agent ran, never by
  `get_metric` (a run with one and no reachable judge stops before running, never a silent skip);
- `STEPWISE_METRICS` / `is_stepwise(name)`: the teacher-forcing metrics (`metrics.stepwise`), computed by the
  pipeline for turns with `reference_messages`; with `match: judge` their steps are judged, so
  `needs_judge(spec)` is true for them too (`metrics.step_judge`);
- `is_custom(spec)`: ADK custom metrics (`custom_metrics` in test_config.json, `metrics.custom`), run by the
  pipeline after the agent ran (they may be async); `criterion_problems` imports their functions up front.

Every criterion goes to one `Metric` (`metric_for`); criteria of a batch are scored by one `evaluate` call
(`metrics.base`, `metrics.evaluation`). `batch_of(spec)` says which: custom first (a `custom_metrics` entry may
reuse any name), then judged, then step metrics; everything else is scored from the outputs alone. The batch
metrics check their criteria through the same function: each picks the `Options` model of the criterion's name
(`Metric.options_model`).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from evalward.metrics.base import Metric
from evalward.metrics.builtin_names import BUILT_IN_METRICS
from evalward.metrics.metric_options import OptionProblem, OptionsError, validate_options
from evalward.model import MetricSpec

JUDGE_METRICS: frozenset[str] = frozenset(
    {
        "final_response_match_v2",
        "rubric_based_final_response_quality_v1",
        "rubric_based_tool_use_quality_v1",
        "rubric_based_multi_turn_trajectory_quality_v1",
        "hallucinations_v1",
        "safety_v1",
        "response_evaluation_score",
        "per_turn_user_simulator_quality_v1",
        "multi_turn_task_success_v1",
        "multi_turn_trajectory_quality_v1",
        "multi_turn_tool_use_quality_v1",
        "answer_correctness",
        "llm_judge",
    }
)
"""Metrics that need an LLM judge (or Vertex AI); `metrics.judge.spec.JUDGED_METRICS` lists those evalward judges."""

STEP_METRIC_NAMES: tuple[str, ...] = (
    "stepwise_score",
    "first_error_step",
    "survived_until",
    "free_running_survival",
    "divergence_index",
)
"""Metric names produced by step-by-step evaluation (`metrics.stepwise`; informational unless given a threshold).
Listed here, not imported from there: a run without step criteria never loads the step scorers."""

STEPWISE_ALIASES: dict[str, str] = {"teacher_forced_survival": "survived_until"}
"""Other names a criterion may use for a step metric (same number): alias → metric."""

STEPWISE_METRICS: frozenset[str] = frozenset({*STEP_METRIC_NAMES, *STEPWISE_ALIASES})
"""Teacher-forcing metrics (and their aliases), computed outside `score_case` from extra agent calls."""

MetricT = TypeVar("MetricT", bound=type[Metric])

_REGISTRY: dict[str, type[Metric]] = {}
"""The metric classes registered so far (`register_metric`), by name: a family's once its module is imported."""

_PLUGIN_CLASSES: dict[str, type[Metric]] = {}
"""The packages' metric classes loaded so far, by name."""


def register_metric(cls: MetricT) -> MetricT:
    """Class decorator registering a built-in metric under its `name`. (A package's metric registers through the
    `PLUGIN_GROUP` entry points instead: evalward imports a package only when a criterion names its metric.)"""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__qualname__}: a registered metric sets `name`")
    problem = _class_problem(cls)
    if problem is not None:
        raise TypeError(f"{name}: {problem}")
    existing = _REGISTRY.setdefault(name, cls)
    if existing is not cls:
        raise ValueError(f"metric {name!r} is registered twice: {_qualified(existing)} and {_qualified(cls)}")
    return cls


def _class_problem(cls: type[Metric]) -> str | None:
    """Why `cls` cannot be registered as a metric scored from the outputs, or None."""
    if not (isinstance(cls.Options, type) and issubclass(cls.Options, BaseModel)):
        return "`Options` must be a pydantic model (a subclass of pydantic.BaseModel)"
    if cls.Options.model_config.get("extra") != "forbid":
        # Otherwise a misspelt option would be dropped without a word, and its default scored instead.
        return "`Options` must refuse unknown keys: model_config = ConfigDict(extra='forbid')"
    if cls.batch != "outputs":
        return "it scores from the agent's outputs (`score_turn` or `score_case`); it cannot set `batch`"
    if cls.scope not in ("turn", "case"):
        return f"`scope` is 'turn' or 'case', found {cls.scope!r}"
    return None


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _metric_class(name: str) -> type[Metric] | None:
    cls = _REGISTRY.get(name)
    if cls is None and name in BUILT_IN_METRICS:
        import_module(BUILT_IN_METRICS[name])  # the family registers its metrics as it is imported
        cls = _REGISTRY.get(name)
        if cls is None:
            raise RuntimeError(
                f"{BUILT_IN_METRICS[name]} registers no metric {name!r}: the index is stale, regenerate it "
                "(python -m evalward.metrics.registry)"
            )
    if cls is None and not is_stepwise(name) and not requires_judge(name):
        cls = _PLUGIN_CLASSES.get(name) or _plugin_class(name)
        if cls is not None:
            _PLUGIN_CLASSES[name] = cls
    return cls


PLUGIN_GROUP = "evalward.metrics"
"""The entry-point group a package registers its metrics under: `name = "package.module:MetricClass"`, the name
being the one criteria use. A built-in name cannot be taken."""


def plugin_metric_names() -> list[str]:
    """The names installed packages register under `PLUGIN_GROUP`, sorted (built-in names left out)."""
    return sorted(name for name in _plugin_entry_points() if not _is_built_in(name))


def is_plugin_metric(name: str) -> bool:
    """True when an installed package registers a metric `name` (`PLUGIN_GROUP`)."""
    return not _is_built_in(name) and name in _plugin_entry_points()


def _is_built_in(name: str) -> bool:
    return name in BUILT_IN_METRICS or name in _REGISTRY


def _plugin_entry_points() -> dict[str, str]:
    """{name: "module:attribute"} of `PLUGIN_GROUP`, read from the installed packages once, when a criterion
    first names a metric that is not built in (reading them costs ~25 ms, which a run of built-in metrics never
    pays)."""
    global _PLUGINS
    if _PLUGINS is None:
        from importlib.metadata import entry_points

        _PLUGINS = {point.name: point.value for point in entry_points(group=PLUGIN_GROUP)}
    return _PLUGINS


_PLUGINS: dict[str, str] | None = None


def _plugin_class(name: str) -> type[Metric] | None:
    target = _plugin_entry_points().get(name)
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    try:
        found: object = import_module(module_name)
        for part in attribute.split(".") if attribute else ():
            found = getattr(found, part)
    except Exception as exc:  # a broken package is the user's bad input, named with its entry point
        raise PluginMetricError(
            f"metric {name!r} (entry point {target!r} of {PLUGIN_GROUP!r}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not (isinstance(found, type) and issubclass(found, Metric)):
        raise PluginMetricError(
            f"metric {name!r} (entry point {target!r} of {PLUGIN_GROUP!r}) is not a subclass of evalward.Metric"
        )
    problem = _class_problem(found)
    if problem is not None:
        raise PluginMetricError(f"metric {name!r} (entry point {target!r}): {problem}")
    return found


class PluginMetricError(Exception):
    """A package registers a metric under `PLUGIN_GROUP` that cannot be loaded or is not a `Metric`."""


def known_metric_names() -> list[str]:
    """Every metric name evalward can score, sorted (judge metrics are not included; see JUDGE_METRICS)."""
    return sorted({*BUILT_IN_METRICS, *_REGISTRY})


def requires_judge(name: str) -> bool:
    """True for LLM-judge / Vertex metric names."""
    return name in JUDGE_METRICS


def needs_judge(spec: MetricSpec) -> bool:
    """True for a criterion scored with a judge: a judge metric, or a step metric with `match: judge` — never a
    user's metric that shares a built-in's name (`custom_metrics` shadow the built-ins)."""
    from evalward.metrics.step_judge import judges_steps  # cycle: metrics.step_judge imports this module

    return not is_custom(spec) and (requires_judge(spec.name) or judges_steps(spec))


def is_stepwise(name: str) -> bool:
    """True for the teacher-forcing metric names."""
    return name in STEPWISE_METRICS


def is_custom(spec: MetricSpec) -> bool:
    """True for an ADK custom metric (a criterion declared under `custom_metrics`)."""
    from evalward.metrics.custom import (
        is_custom as _is_custom,  # start-up: user code's machinery, only for custom criteria
    )

    return _is_custom(spec)


# batch -> (module, class) of the metric that scores that batch's criteria (the `outputs` batch: any registered
# metric can, `Metric.evaluate` dispatching each criterion to its own metric).
_BATCH_HOMES: dict[str, tuple[str, str]] = {
    "outputs": ("evalward.metrics.scoring", "OutputMetrics"),
    "teacher_forcing": ("evalward.metrics.teacher_forcing", "StepMetric"),
    "user_code": ("evalward.metrics.custom", "UserCodeMetric"),
    "judge": ("evalward.metrics.judged", "JudgedMetric"),
}

_BATCH_METRICS: dict[str, Metric] = {}


def batch_of(spec: MetricSpec) -> str:
    """The batch of `spec`'s metric (module docstring)."""
    if is_custom(spec):
        return "user_code"
    if requires_judge(spec.name):
        return "judge"
    if is_stepwise(spec.name):
        return "teacher_forcing"
    return "outputs"


def batch_metric(batch: str) -> Metric:
    """The metric whose `evaluate` scores `batch`'s criteria (one instance per process: they keep no state)."""
    metric = _BATCH_METRICS.get(batch)
    if metric is None:
        module, attribute = _BATCH_HOMES[batch]
        metric = _BATCH_METRICS[batch] = getattr(import_module(module), attribute)()
    return metric


def metric_for(spec: MetricSpec) -> Metric:
    """The metric that scores `spec`: its own for the `outputs` batch (KeyError for an unknown name), else its
    batch's."""
    batch = batch_of(spec)
    return get_metric(spec.name) if batch == "outputs" else batch_metric(batch)


def get_metric(name: str) -> Metric:
    """A new instance of the `outputs` metric registered as `name` (`metric_for` gives any criterion's metric)."""
    cls = _metric_class(name)
    if cls is None:
        if batch_of(MetricSpec(name=name)) != "outputs":
            raise KeyError(f"metric {name!r} is scored by its batch's metric: use metric_for")
        raise KeyError(f"unknown metric {name!r}; known metrics: {', '.join(known_metric_names())}")
    return cls()


class MetricUnavailable(Exception):
    """A batch's metric cannot score a criterion it is given (a judge metric evalward has no judge for); raised by
    `Metric.options_model`, reported as the criterion's problem."""


_VALIDATED: dict[int, tuple[weakref.ref[MetricSpec], BaseModel]] = {}
"""The valid criteria's options, by `id(spec)`. A run checks each criterion while it loads it and reads the same
options for every case and turn. An entry goes when its spec does (the weak reference's callback), so an id is
never read for another spec, and a long-lived process (the server) keeps no spec it no longer has."""


def _keep(spec: MetricSpec, options: BaseModel) -> None:
    key = id(spec)
    _VALIDATED[key] = (weakref.ref(spec, lambda _: _VALIDATED.pop(key, None)), options)


def _kept(spec: MetricSpec) -> BaseModel | None:
    entry = _VALIDATED.get(id(spec))
    return entry[1] if entry is not None and entry[0]() is spec else None


def criterion_problems(spec: MetricSpec) -> list[OptionProblem]:
    """Every problem of one criterion: an unknown metric (with a suggestion), a package's metric that does not
    load, options that do not validate as the metric's `Options`, a threshold out of the metric's range, user
    code that does not import. Valid options are kept for `options_of`. Judge metrics have their options checked
    here; whether a judge is available is the caller's question."""
    if _kept(spec) is not None:
        return []  # checked already (a run checks its criteria while loading, and again before it starts)
    batch = batch_of(spec)
    if batch == "outputs":
        try:
            cls = _metric_class(spec.name)
        except PluginMetricError as exc:
            return [OptionProblem(spec.name, "metric", str(exc))]
        if cls is None:
            return [OptionProblem(spec.name, "unknown_metric", _unknown(spec.name))]
    else:
        cls = type(batch_metric(batch))
    try:
        model = cls.options_model(spec)
    except MetricUnavailable as exc:
        return [OptionProblem(spec.name, "metric", str(exc))]
    options, problems = validate_options(model, spec.name, spec.options)
    threshold = cls.threshold_problem(spec)
    if threshold is not None:
        problems.append(threshold)
    if batch == "user_code" and options is not None:
        from evalward.metrics.custom import (
            check_custom_spec,  # start-up: user code's machinery, only for custom criteria
        )

        problems.extend(OptionProblem(spec.name, "metric", message) for message in check_custom_spec(spec))
    if options is not None and not problems:
        _keep(spec, options)
    return problems


def options_of(spec: MetricSpec) -> BaseModel:
    """`spec.options` validated as its metric's `Options`: kept from the criterion's check (`criterion_problems`),
    or checked now; OptionsError listing the problems when they do not validate."""
    kept = _kept(spec)
    if kept is None:
        problems = criterion_problems(spec)
        kept = _kept(spec)
        if kept is None:
            raise OptionsError(problems)
    return kept


def check_specs(specs: Sequence[MetricSpec]) -> list[str]:
    """The problems of the given specs, worded (`criterion_problems`, `OptionProblem.render`)."""
    return [problem.render() for spec in specs for problem in criterion_problems(spec)]


def _unknown(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, [*known_metric_names(), *JUDGE_METRICS, *STEPWISE_METRICS], n=3, cutoff=0.8)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known metrics: {', '.join(known_metric_names())}"
    return f"unknown metric {name!r}{hint}"


def built_in_index() -> dict[str, str]:
    """{name: module} of every metric the modules of `evalward.metrics` register, by importing them all: what
    `builtin_names.BUILT_IN_METRICS` must say."""
    import pkgutil  # only to write or check the index, never in a run

    package = import_module("evalward.metrics")
    for module in pkgutil.walk_packages(package.__path__, "evalward.metrics."):
        import_module(module.name)
    return {name: cls.__module__ for name, cls in sorted(_REGISTRY.items()) if cls.__module__.startswith("evalward.")}


def _write_index() -> Path:
    """Rewrite `builtin_names.py` from `built_in_index()`; the path written."""
    import evalward.metrics.builtin_names as index  # start-up: only the index's generator

    path = Path(index.__file__)
    text = path.read_text(encoding="utf-8")
    head = text[: text.index("BUILT_IN_METRICS")]
    entries = "".join(f"    {name!r}: {module!r},\n".replace("'", '"') for name, module in built_in_index().items())
    path.write_text(f"{head}BUILT_IN_METRICS: dict[str, str] = {{\n{entries}}}\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    # Run as a script this module is a copy of its own: the families register into the module they import.
    from evalward.metrics import registry

    print(f"wrote {registry._write_index()}", file=sys.stderr)
