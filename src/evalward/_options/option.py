"""`Option`: everything about one option that its pydantic field does not already say.

An option is one field of a family model (`_options.run_values`, `_options.families`, `_ci.ci_values`): the
field gives its Python name, type, default and validation; the `Option` in its `Annotated` metadata gives the
names it is read by outside Python — the command-line flag, the `EVALWARD_*` variable, the `evalward.toml` key
and the GitHub Action input — and its help. Everything else is generated from the two: the click options
(`_cli.click_options`), the `INPUT_*` mapping and its checks (`_ci.inputs`), the settings-file schema
(`config`), both `action.yml` files' `inputs:` and the docs table (`_ci.action_files`), the flags the daemon
hands the base side (`command_line`). Adding an option is adding a field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import UnionType
from typing import TYPE_CHECKING, Any, Final, Literal, Union, get_args, get_origin

if TYPE_CHECKING:  # start-up: `evalward --help` builds the group's options without importing pydantic
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

FROM_FLAG: Final = "<the flag without its dashes>"
"""`Option.input`'s default: the Action input is named as the flag (`--judge-model` → `judge-model`)."""
FROM_FIELD: Final = "<the field's name>"
"""`Option.toml`'s default: the settings-file key is the field's name (`judge_model`)."""

Section = Literal["what runs", "where it runs", "history and the gate", "reporting"]
SECTIONS: tuple[Section, ...] = ("what runs", "where it runs", "history and the gate", "reporting")
"""The groups of the Action's inputs, in the order `action.yml` lists them."""

PathKind = Literal["existing_file", "file", "folder", "any"]


@dataclass(frozen=True, kw_only=True)
class Option:
    """How one option is named and described outside Python (module docstring)."""

    help: str
    """One sentence for `--help`, without the variable (added) or the default (shown by click)."""
    flag: str | None
    """`--long-flag`, or `PATHS` for the positional argument; None: no command-line flag (variable and input only)."""
    env: str | None
    """The `EVALWARD_*` variable; None: none."""
    short: str | None = None
    off_flag: str | None = None
    """`--no-…`: a boolean given as a flag pair (`--stepwise/--no-stepwise`)."""
    metavar: str | None = None
    path: PathKind | None = None
    """A file or folder: `existing_file` must exist; `file`/`folder` say which kind is expected."""
    input: str | None = FROM_FLAG
    """The Action input; None: no input (then `no_input` says why)."""
    no_input: str | None = None
    toml: str | None = FROM_FIELD
    """The `evalward.toml` key; None: not settable there."""
    input_help: str | None = None
    """The Action input's description where it must say more than `help` (how lists are separated, what
    `true` means); the default is appended when the input has none of its own."""
    default_text: str | None = None
    """How the docs table states the default when the field's default does not tell (`from the event`)."""
    list_separators: str = r"\s+"
    """A list input's item separators (a regular expression)."""
    input_check: Callable[[str], str | None] | None = None
    """A check of an input's text beyond its type: why the value is unusable, or None."""
    section: Section = "what runs"


@dataclass(frozen=True)
class OptionField:
    """An option with its field: what every generator iterates over."""

    name: str
    field: FieldInfo
    option: Option
    model: type[BaseModel]

    @property
    def input_name(self) -> str | None:
        if self.option.input == FROM_FLAG:
            flag = self.option.flag
            return None if flag is None else flag.removeprefix("--").lower()
        return self.option.input

    @property
    def toml_key(self) -> str | None:
        return self.name if self.option.toml == FROM_FIELD else self.option.toml

    @property
    def default(self) -> Any:
        return self.field.get_default(call_default_factory=True)

    def lower_bound(self) -> float | None:
        """The field's `ge` constraint, if any."""
        for item in self.field.metadata:
            bound = getattr(item, "ge", None)
            if bound is not None:
                return float(bound)
        return None


def option_fields(*models: type[BaseModel]) -> Iterator[OptionField]:
    """Every field of `models` that is an option, in declaration order (fields without an `Option` are not)."""
    for model in models:
        for name, field in model.model_fields.items():
            option = next((item for item in field.metadata if isinstance(item, Option)), None)
            if option is not None:
                yield OptionField(name, field, option, model)


def option_field(model: type[BaseModel], name: str) -> OptionField:
    """The option `name` of `model` (KeyError when it is no option there)."""
    for found in option_fields(model):
        if found.name == name:
            return found
    raise KeyError(f"{model.__name__} has no option {name!r}")


@dataclass(frozen=True)
class ValueKind:
    """What an option's field holds, as the generators need it: the base type, the choices of a `Literal`,
    whether it is a list (a tuple field: a repeatable flag, a list input) and whether None is allowed."""

    base: Literal["int", "float", "bool", "text", "choice"]
    choices: tuple[str, ...] = ()
    many: bool = False
    optional: bool = False


def value_kind(field: FieldInfo) -> ValueKind:
    """The `ValueKind` of `field`'s annotation (`int | None`, `tuple[str, ...]`, `Literal["a", "b"]`, …)."""
    annotation = field.annotation
    optional = False
    args = get_args(annotation)
    if isinstance(annotation, UnionType) or get_origin(annotation) is Union:
        kept = [arg for arg in args if arg is not type(None)]
        optional = len(kept) < len(args)
        annotation = kept[0] if len(kept) == 1 else str
        args = get_args(annotation)
    many = get_origin(annotation) is tuple
    if many:
        annotation = args[0]
        if isinstance(annotation, UnionType) or get_origin(annotation) is Union:
            annotation = str  # `str | MetricSpec`: given as text
    if get_origin(annotation) is Literal:
        return ValueKind("choice", tuple(str(arg) for arg in get_args(annotation)), many, optional)
    base: Literal["int", "float", "bool", "text"] = (
        "bool" if annotation is bool else "int" if annotation is int else "float" if annotation is float else "text"
    )
    return ValueKind(base, (), many, optional)


def command_line(values: dict[str, Any], *models: type[BaseModel]) -> list[str]:
    """`evalward` arguments that give the options of `models` named in `values` (field name → value) those
    values: a flag and its value, a repeated flag for a list, a boolean as its flag (or its `--no-…` flag).
    Options without a flag, and None values, are left out; PATHS too (the caller places it)."""
    arguments: list[str] = []
    for found in option_fields(*models):
        flag = found.option.flag
        value = values.get(found.name)
        if value is None or flag is None or found.name not in values or not flag.startswith("--"):
            continue
        if isinstance(value, bool):
            off = found.option.off_flag
            if value or off is not None:
                arguments.append(flag if value else str(off))
        elif isinstance(value, tuple | list | frozenset):
            for item in sorted(value) if isinstance(value, frozenset) else value:
                arguments += [flag, str(item)]
        else:
            arguments += [flag, str(value)]
    return arguments
