"""A metric's options as a pydantic model, and the problems of a criterion as data.

Every metric declares `Options`, a pydantic model that forbids unknown keys (`NoOptions` when it takes none).
`validate_options` is the one check every metric's options go through, built-in or from a package, and the
judged, step and custom batches too (`registry.criterion_problems` calls it once per criterion and keeps what it
returns): a valid `spec.options` becomes an instance of the model, which the metric reads (`TurnContext.options`);
an invalid one becomes `OptionProblem`s, which say where they are (the option's path within the options, the
option names taken there, the value found) so that a reader of files can point at the option itself
(`loaders.criterion_checks`) and the rest can word them (`OptionProblem.render`).

How a pydantic error becomes a problem:
- an unknown key → `unknown_option` at that key, with the names the (sub)model takes;
- a validator's own `ValueError` → its words as they are (the validators of this package name the option and
  what they expect, without the value: the value is the problem's `found`);
- any other error (a missing key, a value pydantic itself refuses) → `option <path>: <pydantic's words>`.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo

ProblemKind = Literal["unknown_metric", "metric", "unknown_option", "option", "threshold"]
"""What an `OptionProblem` is about: a name no metric has; a metric that cannot score the criterion (a package
that does not load, a judge metric evalward cannot judge, user code that does not import); one unknown option;
one option's value (or the options as a whole); the threshold."""


class _Absent:
    """No value was found (a missing option, a problem of the criterion as a whole)."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


class OptionProblem(NamedTuple):
    """One problem of one criterion, as data. (A named tuple, not a dataclass: every run imports this module,
    and building a dataclass costs it four times as much.)"""

    metric: str
    """The criterion's metric name."""
    kind: ProblemKind
    message: str
    """The problem in words, without the metric's name or the value found."""
    option: tuple[str | int, ...] = ()
    """Where within the options (`("tool_args", "search", "keys")`); `()` for the criterion as a whole."""
    allowed: tuple[str, ...] = ()
    """For an unknown option: the option names taken where it is written."""
    expected: str | None = None
    """What would be valid, when it can be said shortly (`a number between 0 and 1`)."""
    found: Any = ABSENT
    """The value found at `option` (the threshold for a threshold problem; the key for an unknown option)."""
    worded: bool = False
    """True when `message` is a sentence of its own, naming the metric and the value: `render` shows it as it is."""

    def render(self) -> str:
        """The problem as one line naming the metric (what `registry.check_specs` lists)."""
        if self.kind in ("unknown_metric", "metric") or self.worded:
            return self.message  # these name the metric themselves
        text = f"{self.metric}: {self.message}"
        if self.kind == "unknown_option":
            if self.message.startswith("unknown option"):  # a model's own wording already says what is taken
                text += f"; known: {', '.join(self.allowed)}" if self.allowed else "; it takes no options"
        elif self.found is not ABSENT:
            text += f", found {show_value(self.found)}"
        return text


def show_value(value: Any) -> str:
    """A value as messages quote it: a float as `1.5` or `2`, anything else by its repr."""
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value)


class OptionsError(ValueError):
    """A criterion's options (or threshold) are not valid; raised where a metric needs its validated options."""

    def __init__(self, problems: Sequence[OptionProblem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(problem.render() for problem in problems))


class StrictOptions(BaseModel):
    """A base for an `Options` model: unknown keys are refused, values are frozen (one instance serves every
    case of a criterion), and the schema is built when first validated, not when the metric's module loads."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    unknown_option: ClassVar[str | None] = None
    """How this model words an unknown option (`{key}` is its repr), when it has more to say than
    `unknown option 'key'`; None for the default wording."""


class NoOptions(StrictOptions):
    """The options of a metric that takes none: any key is an unknown option."""


def _flag(value: Any, info: ValidationInfo) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{info.field_name}: expected true or false")
    return value


Flag = Annotated[bool, BeforeValidator(_flag)]
"""An option that is true or false, nothing else (`1` and `"yes"` are refused, as JSON has booleans)."""


def one_of(*allowed: str) -> BeforeValidator:
    """A validator refusing anything but `allowed`, in the words the options' messages use: `mode: expected
    'all' or 'any'`. Use as `Annotated[Literal["all", "any"], one_of("all", "any")]`."""
    shown = ", ".join(repr(value) for value in allowed[:-1]) + f" or {allowed[-1]!r}" if len(allowed) > 1 else ""

    def check(value: Any, info: ValidationInfo) -> Any:
        if value not in allowed or not isinstance(value, str):
            raise ValueError(f"{info.field_name}: expected {shown or repr(allowed[0])}")
        return value

    return BeforeValidator(check)


def validate_options(
    model: type[BaseModel], metric: str, options: Mapping[str, Any]
) -> tuple[BaseModel | None, list[OptionProblem]]:
    """`options` validated as `model`: (the options, no problems), or (None, every problem found)."""
    try:
        return model.model_validate(options), []
    except ValidationError as exc:
        return None, [_problem(model, metric, options, error) for error in exc.errors(include_url=False)]


def _problem(model: type[BaseModel], metric: str, options: Mapping[str, Any], error: Any) -> OptionProblem:
    loc = tuple(error["loc"])
    path, found = data_path(options, loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = tuple(allowed_keys(model, loc[:-1]))
        wording = getattr(model, "unknown_option", None) if len(loc) == 1 else None
        shown = ".".join(str(part) for part in path) or key
        message = wording.format(key=repr(shown)) if wording else f"unknown option {shown!r}"
        expected = f"one of {', '.join(allowed)}" if allowed else "no options: this metric takes none"
        return OptionProblem(metric, "unknown_option", message, path, allowed, expected, key)
    where = ".".join(str(part) for part in path) or "options"
    if kind in ("value_error", "assertion_error"):
        message = str(error["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    else:
        message = f"option {where}: {error['msg']}"
    choices = error.get("ctx", {}).get("expected") if kind == "literal_error" else None
    return OptionProblem(
        metric,
        "option",
        message,
        path,
        expected=f"one of {choices}" if choices else None,
        found=found if path and kind != "missing" else ABSENT,
    )


def data_path(data: Any, loc: Sequence[str | int]) -> tuple[tuple[str | int, ...], Any]:
    """The part of a pydantic `loc` that exists in `data`, and the value there. Elements that are not keys or
    indexes of the data (a union member's tag) are skipped; a last element naming an absent key is kept (a
    missing option, an unknown one)."""
    path: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        if isinstance(current, Mapping):
            if part in current:
                current = current[part]
            elif position == len(loc) - 1:
                current = ABSENT
            else:
                continue
        elif isinstance(current, list | tuple) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        else:
            continue
        path.append(part)
    return tuple(path), current


def allowed_keys(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The field names of the model that validated the object at pydantic's `loc` under `model` (through fields,
    `Model | None`, unions named by their member's tag, lists and dicts of models); [] when it is not a model."""
    current: Any = model
    for part in loc:
        current = _descend(current, part)
        if current is None:
            return []
    found = _model_in(current)
    return list(found.model_fields) if found is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation names, looking through `Annotated[...]` and `Model | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _model_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        models = [m for a in typing.get_args(annotation) if (m := _model_in(a)) is not None]
        return models[0] if len(models) == 1 else None
    return None


def _descend(annotation: Any, part: str | int) -> Any:
    """The annotation of the value at `part` inside a value annotated `annotation`; None when unknown."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        return _descend(args[0], part)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        for member in members:
            inner = typing.get_args(member)[0] if typing.get_origin(member) is Annotated else member
            if getattr(inner, "__name__", None) == part:
                return inner
        for member in members:
            found = _descend(member, part)
            if found is not None:
                return found
        return None
    model = _model_in(annotation)
    if model is not None:
        if isinstance(part, str) and part in model.model_fields:
            return model.model_fields[part].annotation
        return None
    if origin in (list, Sequence) and isinstance(part, int):
        return args[0] if args else None
    if origin is tuple and isinstance(part, int) and args:
        return args[part] if part < len(args) else args[-1]
    if origin is dict and isinstance(part, str):
        return args[1] if len(args) == 2 else None
    return None


def unit_threshold(metric: str, threshold: float) -> OptionProblem | None:
    """A score between 0 and 1: its threshold is too."""
    if 0.0 <= threshold <= 1.0:
        return None
    return OptionProblem(
        metric, "threshold", "threshold must be between 0 and 1", expected="a number between 0 and 1", found=threshold
    )


def maximum_threshold(metric: str, threshold: float) -> OptionProblem | None:
    """A count, a duration or a cost (lower is better): its threshold is a maximum, never below 0."""
    if threshold >= 0:
        return None
    return OptionProblem(
        metric, "threshold", "threshold is a maximum and must be ≥ 0", expected="a number ≥ 0", found=threshold
    )
