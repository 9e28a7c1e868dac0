"""Click options made from the option families (`evalward._options`): no option is declared here.

`options_from(Model)` turns every option field of a family into a click option (or the PATHS argument) whose
Python name is the field's, so a command turns its keyword arguments back into the family with
`Model.model_validate` / `RunValues.from_values`. The flag, variable, type, default, choices, range, metavar
and help all come from the field and its `Option`; the Action's inputs and the settings file are generated from
the same fields (`_ci.action_files`, `config`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
from pydantic import BaseModel

from evalward._options.families import RecordingValues, ReportFileValues, SettingsFileValues
from evalward._options.option import OptionField, option_field, option_fields, value_kind
from evalward._options.run_values import RunValues

F = TypeVar("F", bound=Callable[..., Any])


def _apply(func: F, decorators: Sequence[Callable[[Any], Any]]) -> F:
    """Apply `decorators` so that `--help` lists them in the order given."""
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def file_size_value(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A `--max-file-size` style value as bytes: `52428800`, `50MB`, `512KB`, `1GB` (powers of 1024)."""
    if value is None:
        return None
    from evalward.reading import parse_size  # start-up: `evalward --help` never needs it

    try:
        size = parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    if size < 1:
        raise click.BadParameter("the size must be at least 1 byte", ctx, param)
    return size


def _click_type(found: OptionField) -> click.ParamType[Any] | None:
    kind = value_kind(found.field)
    path = found.option.path
    if path == "existing_file":
        return click.Path(exists=True, dir_okay=False)
    if path == "file":
        return click.Path(dir_okay=False)
    if path == "folder":
        return click.Path(file_okay=False)
    if path == "any":
        return click.Path()
    bound = found.lower_bound()
    if kind.base == "choice":
        return click.Choice(list(kind.choices))
    if kind.base == "int":
        return click.IntRange(min=None if bound is None else int(bound))
    if kind.base == "float":
        return click.FloatRange(min=bound)
    return None


_FIELD_DEFAULT: Any = object()


def click_parameter(found: OptionField, *, required: bool = False, default: Any = _FIELD_DEFAULT) -> Callable[[F], F]:
    """The click option (or argument) of one option field; `default` replaces the field's (None: a command that
    takes the value from elsewhere when the option is not given)."""
    option, kind = found.option, value_kind(found.field)
    if option.flag is None:
        raise ValueError(f"{found.model.__name__}.{found.name} has no command-line flag")
    if not option.flag.startswith("--"):  # the positional argument (PATHS)
        return click.argument(found.name, nargs=-1, envvar=option.env, type=_click_type(found))
    default = found.default if default is _FIELD_DEFAULT else default
    if isinstance(default, frozenset):  # a set option is given as a comma-separated list (`--fail-on`)
        default = ",".join(sorted(default))
    help_text = option.help + (f" [env: {option.env}]" if option.env else "")
    declarations = [option.flag if option.off_flag is None else f"{option.flag}/{option.off_flag}"]
    if option.short:
        declarations.append(option.short)
    settings: dict[str, Any] = {
        "envvar": option.env,
        "help": help_text,
        "required": required,
    }
    if option.metavar:
        settings["metavar"] = option.metavar
    if kind.base == "bool" and option.off_flag is None:
        settings["is_flag"] = True
    else:
        settings["default"] = default if default != () else None
        settings["show_default"] = default not in (None, (), False)
        click_type = _click_type(found)
        if click_type is not None:
            settings["type"] = click_type
    if kind.many:
        settings["multiple"] = True
        settings.pop("default", None)
    return click.option(*declarations, found.name, **settings)


def options_from(*models: type[BaseModel], only: Sequence[str] | None = None) -> Callable[[F], F]:
    """Every option of `models` (or the named ones, in that order) as click parameters, in declaration order."""
    fields = list(option_fields(*models))
    if only is not None:
        by_name = {found.name: found for found in fields}
        fields = [by_name[name] for name in only]

    def decorate(func: F) -> F:
        return _apply(func, [click_parameter(found) for found in fields if found.option.flag is not None])

    return decorate


def run_value_options(*, agent_required: bool) -> Callable[[F], F]:
    """PATHS, --agent and every other option of `RunValues`: what runs and how it is scored. `evalward ci`
    checks the agent itself, to name the Action input."""

    def decorate(func: F) -> F:
        return _apply(
            func,
            [
                click_parameter(found, required=agent_required and found.name == "agent")
                for found in option_fields(RunValues)
            ],
        )

    return decorate


report_file_options = options_from(ReportFileValues)
"""--json, --junit and --markdown: the report files."""
db_option = options_from(RecordingValues, only=("db_url",))
"""--db (EVALWARD_DB): the history database."""
config_option = click_parameter(option_field(SettingsFileValues, "config_file"))
"""--config (EVALWARD_CONFIG): the settings file, an option of the `evalward` group."""
