"""pydantic-evals Dataset files (what `Dataset.to_file` writes, YAML or JSON) → `EvalSet`.

```yaml
# yaml-language-server: $schema=capitals_schema.json     (a comment; JSON files have a `$schema` key instead)
name: capitals                      # the eval set's id and name; default: the file name without its suffixes
cases:
- name: france                      # the case id; an unnamed case is `Case <n>` (1-based), as in pydantic-evals
  inputs: What is the capital of France?
  metadata: {difficulty: easy, tags: [geo]}
  expected_output: Paris
  evaluators:                       # this case's own, in addition to the dataset's
  - Contains: Par                   # {Name: argument}: one positional argument
  - Contains: {value: paris, case_sensitive: false}   # {Name: {keyword: value, …}}: keyword arguments
evaluators:                         # every case's
- EqualsExpected                    # a bare name: created without arguments
- MyEvaluator                       # a class of your own, listed in `custom_evaluator_types`
report_evaluators: []               # whole-report analyses: not run (a warning says so when there are any)
```

Each case is one turn:
- `inputs`: a string is the query (`Invocation.inputs` stays empty); an object is `Invocation.inputs`, and the query
  comes from it by the native format's rule (`native.turn_query`: `question`, `query`, … else its only string
  value, else its JSON); anything else (a number, a list, null) is the query as JSON text, with a warning, since
  an evaluator then sees that text as `ctx.inputs`.
- `expected_output`: a string is the expected response; an object is the expected outputs (`expected_outputs`,
  what evaluators see as `ctx.expected_output`); anything else is the expected response as its JSON text.
- `metadata`: an object is kept as the case's `metadata` (evaluators' `ctx.metadata`); in it, a string
  `description` is also the case's description, a list of strings `tags` its tags and a non-empty string (or
  integer) `cluster` its cluster label. Metadata that is not an object is dropped, with a warning.

Evaluators (`EvaluatorSpec`: a bare name, `{Name: argument}`, `{Name: {keyword: value}}`, or the long form
`{name: Name, arguments: null | [argument] | {keyword: value}}`) become criteria
(`metrics.custom.evaluator_spec`), threshold None: a bool result passes or fails the case, as pydantic-evals
counts assertions; a number is a score and a string a label, both informational.
- Names resolve as `Dataset.from_file` resolves them: the classes of `custom_evaluator_types` first (their
  class name; a class with another `get_serialization_name()` is not matched), then pydantic-evals' built-ins
  (`pydantic_evals.dataset.DEFAULT_EVALUATORS` when the package is installed, else `BUILTIN_EVALUATORS`), each
  at `pydantic_evals.evaluators:<Class>`. An unknown name is a problem at its line.
- Arguments are checked against the built-in's parameters (by creating it when pydantic-evals is installed, so
  its own checks apply too); a custom class is checked when the run creates it.
- Criterion names are what pydantic-evals names the results: the evaluator's `evaluation_name` when a built-in
  is given one, else its name; repeated names get `_2`, `_3`, … in the order pydantic-evals runs them, the
  case's evaluators before the dataset's. The dataset's evaluators are the set's criteria; a case's own
  evaluators (and the dataset's that its own push to another name) are its `metrics`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalward.errors import UsageError
from evalward.loaders.detect import PYDANTIC_EVALS_CASE_KEYS, PYDANTIC_EVALS_DATASET_KEYS
from evalward.loaders.langsmith import reference_text
from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems, describe_value
from evalward.metrics.custom import EvaluatorArgs, evaluator_spec, split_path
from evalward.model import Criteria, EvalCase, EvalSet, Invocation, MetricSpec

EVALUATORS_MODULE = "pydantic_evals.evaluators"
"""Where pydantic-evals exports its evaluators: a built-in runs as `pydantic_evals.evaluators:<Class>`."""

BUILTIN_EVALUATORS: dict[str, tuple[tuple[str, ...], int]] = {
    "Equals": (("value", "evaluation_name"), 1),
    "EqualsExpected": (("evaluation_name",), 0),
    "Contains": (("value", "case_sensitive", "as_strings", "evaluation_name"), 1),
    "IsInstance": (("type_name", "evaluation_name"), 1),
    "MaxDuration": (("seconds",), 1),
    "LLMJudge": (
        ("rubric", "model", "include_input", "include_expected_output", "model_settings", "score", "assertion"),
        1,
    ),
    "HasMatchingSpan": (("query", "evaluation_name"), 1),
    "ToolCorrectness": (("expected_tools", "allow_extra", "include_failed", "evaluation_name"), 1),
    "TrajectoryMatch": (("expected_trajectory", "order", "include_failed", "evaluation_name"), 1),
    "ArgumentCorrectness": (
        ("tool_name", "expected_arguments", "match_mode", "occurrence", "include_failed", "evaluation_name"),
        2,
    ),
    "MaxToolCalls": (("max_calls", "include_failed", "evaluation_name"), 1),
    "MaxModelRequests": (("max_requests", "evaluation_name"), 1),
    "GEval": (
        ("criteria", "evaluation_steps", "score_range", "include_input", "model", "model_settings", "evaluation_name"),
        2,
    ),
}
"""pydantic-evals 2.62's default evaluators: {name: (parameters in order, how many are required)}. Used when the
package is not installed (the run then says it is missing); `tests/loaders/test_pydantic_evals_dataset.py` holds
it equal to the installed package's."""

_SPEC_SHAPES = "a name, {Name: argument}, {Name: {keyword: value, …}} or {name: Name, arguments: …}"


@dataclass(frozen=True)
class _Known:
    """An evaluator name the file may use: where its class is, and that class when it could be imported."""

    path: str
    cls: Any = None
    builtin: bool = False


@dataclass(frozen=True)
class _Evaluator:
    """One evaluator of the file, resolved: the name pydantic-evals gives its results, and what runs it."""

    result_name: str
    path: str
    args: EvaluatorArgs | None

    def spec(self, name: str) -> MetricSpec:
        return evaluator_spec(name, self.path, args=self.args)


class _Case(BaseModel):
    """pydantic-evals' `_CaseModel`: every value is the dataset's own type (`Any` here)."""

    model_config = ConfigDict(extra="forbid", loc_by_alias=False)

    name: str | None = None
    inputs: Any
    metadata: Any = None
    expected_output: Any = None
    evaluators: list[Any] = []


@functools.cache
def _builtins() -> dict[str, _Known]:
    """pydantic-evals' registry of default evaluators when the package is installed, else `BUILTIN_EVALUATORS`."""
    try:
        import pydantic_evals.evaluators as exported
        from pydantic_evals.evaluators.common import DEFAULT_EVALUATORS
    except ImportError:
        return {name: _Known(f"{EVALUATORS_MODULE}:{name}", builtin=True) for name in BUILTIN_EVALUATORS}
    found: dict[str, _Known] = {}
    for cls in DEFAULT_EVALUATORS:
        name = cls.get_serialization_name()
        public = getattr(exported, cls.__name__, None) is cls
        path = f"{EVALUATORS_MODULE}:{cls.__name__}" if public else f"{cls.__module__}:{cls.__qualname__}"
        found.setdefault(name, _Known(path, cls, builtin=True))
    return found


def custom_evaluator_names(paths: Sequence[str]) -> dict[str, str]:
    """`custom_evaluator_types` (`pkg.module:Class` or `pkg.module.Class`) → {name in files: path}; UsageError
    for an entry that is not such a path, or two classes of the same name (pydantic-evals refuses those too)."""
    names: dict[str, str] = {}
    for path in paths:
        module, attribute = split_path(path)
        if not module or not attribute:
            raise UsageError(
                f"custom_evaluator_types: {path!r} is not the path of an evaluator class "
                "('package.module:Class' or 'package.module.Class')"
            )
        name = attribute.rpartition(".")[2]
        if name in names and names[name] != path:
            raise UsageError(f"custom_evaluator_types: two classes are named {name!r} ({names[name]}, {path})")
        names[name] = path
    return names


def _registry(custom_types: Sequence[str]) -> dict[str, _Known]:
    """Custom classes first, then the built-ins they do not replace (pydantic-evals' `build_registry`)."""
    registry = {name: _Known(path) for name, path in custom_evaluator_names(custom_types).items()}
    for name, known in _builtins().items():
        registry.setdefault(name, known)
    return registry


def parse_evaluator(value: Any) -> tuple[str, EvaluatorArgs | None] | None:
    """An `EvaluatorSpec` as pydantic-evals reads it (`pydantic_ai._spec.NamedSpec`) → (name, arguments: None, a
    one-item list of positional arguments or a dict of keywords); None when it is none of the shapes."""
    if isinstance(value, str):
        return value, None
    if not isinstance(value, dict):
        return None
    if "name" in value and "arguments" in value:  # the long form, tried first as pydantic-evals does
        name, arguments = value["name"], value["arguments"]
        if isinstance(name, str):
            if arguments is None:
                return name, None
            if isinstance(arguments, list) and len(arguments) == 1:
                return name, list(arguments)
            if isinstance(arguments, dict) and all(isinstance(k, str) for k in arguments):
                return name, dict(arguments)
    if len(value) != 1:
        return None
    ((name, argument),) = value.items()
    if not isinstance(name, str):
        return None
    if isinstance(argument, dict) and all(isinstance(k, str) for k in argument):
        return name, dict(argument)
    return name, [argument]


def _signature(name: str, known: _Known) -> str:
    if name in BUILTIN_EVALUATORS:
        parameters, required = BUILTIN_EVALUATORS[name]
        shown = [p if i < required else f"{p}=…" for i, p in enumerate(parameters)]
        return f"{name}({', '.join(shown)})"
    if known.cls is not None:
        import inspect

        try:
            return f"{name}{inspect.signature(known.cls)}"
        except (TypeError, ValueError):
            pass
    return f"{name}(…)"


def _binding_problem(name: str, args: EvaluatorArgs | None) -> str | None:
    """What Python would say creating built-in `name` with `args`, from `BUILTIN_EVALUATORS` (no package)."""
    parameters, required = BUILTIN_EVALUATORS[name]
    positional = args if isinstance(args, list) else []
    keywords = args if isinstance(args, dict) else {}
    if len(positional) > len(parameters):
        return f"{name} takes at most {len(parameters)} argument(s), {len(positional)} given"
    for keyword in keywords:
        if keyword not in parameters:
            return f"{name} got an unexpected keyword argument {keyword!r}"
        if parameters.index(keyword) < len(positional):
            return f"{name} got multiple values for argument {keyword!r}"
    missing = [p for i, p in enumerate(parameters[:required]) if i >= len(positional) and p not in keywords]
    if missing:
        return f"{name} is missing required argument(s) {', '.join(repr(p) for p in missing)}"
    return None


def _result_name(name: str, known: _Known, args: EvaluatorArgs | None) -> tuple[str, str | None]:
    """(the name pydantic-evals gives the evaluator's results, the problem creating it) for a built-in; a custom
    class keeps its name (it is created when the run starts)."""
    if not known.builtin:
        return name, None
    if known.cls is None:
        problem = _binding_problem(name, args) if name in BUILTIN_EVALUATORS else None
        given = args.get("evaluation_name") if isinstance(args, dict) else None
        takes_a_name = "evaluation_name" in BUILTIN_EVALUATORS.get(name, ((), 0))[0]
        return (given if takes_a_name and isinstance(given, str) else name), problem
    try:
        instance = known.cls(*args) if isinstance(args, list) else known.cls(**(args or {}))
    except Exception as exc:  # what `Dataset.from_file` reports as "Failed to instantiate evaluator"
        return name, f"{type(exc).__name__}: {exc}"
    try:
        result_name = instance.get_default_evaluation_name()
    except Exception:  # a name it cannot give is its serialization name
        return name, None
    return (result_name if isinstance(result_name, str) else name), None


def _evaluator(
    problems: Problems, raw: Any, at: PathKey, registry: Mapping[str, _Known], case_id: str | None
) -> _Evaluator | None:
    """One evaluator entry (found at `at`) resolved; None after recording its problem."""
    parsed = parse_evaluator(raw)
    if parsed is None:
        problems.add(
            "not an evaluator",
            at,
            case_id=case_id,
            expected=_SPEC_SHAPES + " (one key: the evaluator's name)",
            found=describe_value(raw),
        )
        return None
    name, args = parsed
    known = registry.get(name)
    if known is None:
        import difflib

        close = difflib.get_close_matches(name, list(registry), n=1)
        problems.add(
            f"unknown evaluator {name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
            at,
            case_id=case_id,
            expected="one of pydantic-evals' evaluators ("
            + ", ".join(sorted(registry))
            + "), or a class of your own listed in custom_evaluator_types (evalward.toml)",
            found=repr(name),
        )
        return None
    result_name, problem = _result_name(name, known, args)
    if problem is not None:
        problems.add(
            f"evaluator {name!r} cannot be created with these arguments: {problem}",
            at,
            case_id=case_id,
            expected=_signature(name, known),
            found=describe_value(raw),
        )
        return None
    return _Evaluator(result_name, known.path, args)


def _evaluators(
    problems: Problems, entries: Any, at: PathKey, registry: Mapping[str, _Known], case_id: str | None
) -> list[_Evaluator] | None:
    if not isinstance(entries, list):
        problems.add("evaluators must be a list", at, case_id=case_id, found=describe_value(entries))
        return None
    resolved = [_evaluator(problems, raw, (*at, index), registry, case_id) for index, raw in enumerate(entries)]
    found = [e for e in resolved if e is not None]
    return found if len(found) == len(resolved) else None


def result_names(names: Sequence[str]) -> list[str]:
    """pydantic-evals' names for results in this order: a repeated name gets `_2`, `_3`, … (the first free)."""
    seen: set[str] = set()
    named: list[str] = []
    for name in names:
        if name in seen:
            suffix = 2
            while f"{name}_{suffix}" in seen:
                suffix += 1
            name = f"{name}_{suffix}"
        seen.add(name)
        named.append(name)
    return named


def named_specs(evaluators: Sequence[_Evaluator]) -> list[MetricSpec]:
    names = result_names([e.result_name for e in evaluators])
    return [e.spec(name) for e, name in zip(evaluators, names, strict=True)]


def _turn(problems: Problems, inputs: Any, expected: Any, at: PathKey, case_id: str, odd: list[str]) -> Invocation:
    from evalward.loaders.native import turn_query  # start-up: the native format's models build on import

    query: str
    given: dict[str, Any] = {}
    if isinstance(inputs, str):
        query = inputs
    elif isinstance(inputs, dict):
        given = inputs
        query = turn_query(None, inputs)
    else:
        query = reference_text(inputs) or ""
        odd.append(case_id)
    response: str | None = None
    outputs: dict[str, Any] = {}
    if isinstance(expected, dict):
        outputs = expected
    else:
        response = reference_text(expected)
    return Invocation(
        query=query,
        inputs=given,
        expected_response=response,
        expected_outputs=outputs,
        source=problems.source(at),
    )


def _cluster(metadata: dict[str, Any]) -> str | None:
    value = metadata.get("cluster")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and value else None


def _check_top(problems: Problems, data: dict[str, Any]) -> bool:
    """The dataset's own keys; False after recording a problem."""
    ok = True
    for key in data:
        if key not in PYDANTIC_EVALS_DATASET_KEYS:
            problems.add(
                f"unknown key {key!r}",
                (key,),
                on_key=True,
                expected="one of " + ", ".join(PYDANTIC_EVALS_DATASET_KEYS),
                found=repr(key),
            )
            ok = False
    if "cases" not in data:
        problems.add(
            "missing required key 'cases'", expected="key 'cases': a list of {name, inputs, expected_output, …}"
        )
        ok = False
    elif not isinstance(data["cases"], list):
        problems.add(
            "'cases' must be a list", ("cases",), expected="a list of cases", found=describe_value(data["cases"])
        )
        ok = False
    for key in ("name", "$schema"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            problems.add(f"{key!r} must be a string", (key,), expected="a string", found=describe_value(value))
            ok = False
    return ok


def load_pydantic_evals(
    problems: Problems, default_id: str, custom_evaluator_types: Sequence[str] = ()
) -> EvalSet | None:
    """The Dataset file of `problems.document` as an `EvalSet` (module docstring); None after recording its
    problems. `custom_evaluator_types`: the paths of the user's evaluator classes (`pkg.module:Class`)."""
    data = problems.document.data
    registry = _registry(custom_evaluator_types)
    usable = _check_top(problems, data)
    dataset = _evaluators(problems, data.get("evaluators", []), ("evaluators",), registry, None)
    reports = data.get("report_evaluators", [])
    if not isinstance(reports, list):
        problems.add("report_evaluators must be a list", ("report_evaluators",), found=describe_value(reports))
        usable = False
    elif reports:
        problems.warn(
            f"{len(reports)} report evaluator(s) not run: they analyse a whole pydantic-evals report "
            "(confusion matrices, precision/recall), not a case",
            ("report_evaluators",),
        )
    if not isinstance(data.get("cases"), list):
        return None
    set_specs = named_specs(dataset) if dataset is not None else []
    by_name = {spec.name: spec for spec in set_specs}
    cases: list[EvalCase] = []
    odd_inputs: list[str] = []
    for position, raw in enumerate(data["cases"]):
        at: PathKey = ("cases", position)
        if not isinstance(raw, dict):
            problems.add(
                "a case must be an object",
                at,
                expected="{" + ", ".join(PYDANTIC_EVALS_CASE_KEYS) + "}",
                found=describe_value(raw),
            )
            continue
        given = raw.get("name")
        case_id = given if isinstance(given, str) and given else f"Case {position + 1}"
        parsed = problems.validate(_Case, raw, at, case_id=case_id)
        if parsed is None:
            continue
        own = _evaluators(problems, parsed.evaluators, (*at, "evaluators"), registry, case_id)
        if own is None or dataset is None:
            continue
        # The case's results are named over its evaluators then the dataset's; whatever differs from the set's
        # criterion of that name is the case's own (`EvalSet.metrics_for` puts it in place of the set's).
        metrics = [spec for spec in named_specs([*own, *dataset]) if by_name.get(spec.name) != spec] if own else []
        metadata = parsed.metadata if isinstance(parsed.metadata, dict) else {}
        if parsed.metadata is not None and not isinstance(parsed.metadata, dict):
            problems.warn(
                f"case {case_id!r}: metadata that is not an object is not kept ({describe_value(parsed.metadata)})",
                (*at, "metadata"),
            )
        description = metadata.get("description")
        tags = metadata.get("tags")
        cases.append(
            EvalCase(
                case_id=case_id,
                description=description if isinstance(description, str) else None,
                turns=[_turn(problems, parsed.inputs, parsed.expected_output, at, case_id, odd_inputs)],
                metrics=metrics,
                tags=list(tags) if isinstance(tags, list) and all(isinstance(t, str) for t in tags) else [],
                metadata=metadata,
                cluster=_cluster(metadata),
                source=problems.source(at),
            )
        )
    if problems.items or dataset is None or not usable:
        return None
    if odd_inputs:
        problems.warn(
            f"{len(odd_inputs)} case(s) have inputs that are neither text nor an object (first: {odd_inputs[0]!r}): "
            "the agent gets them as JSON text in 'query', and evaluators see that text as ctx.inputs"
        )
    name = data.get("name")
    return EvalSet(
        eval_set_id=name or default_id,
        name=name,
        format="pydantic_evals",
        cases=cases,
        criteria=Criteria(metrics=set_specs, origin="native"),
    )
