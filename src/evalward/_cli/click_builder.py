"""One option (`_options.option.Option`) as a click option: the builder every command's options go through.

This module imports neither pydantic nor a family: the `evalward` group's own options are built here for
`evalward --help`, which stays at interpreter speed. `_cli.click_options` builds the families' options with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from evalward._options.option import Option, OptionField, ValueKind, value_kind

F = TypeVar("F", bound=Callable[..., Any])
_NO_DEFAULT: Any = object()


def apply_in_order(func: F, decorators: Sequence[Callable[[Any], Any]]) -> F:
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


def _click_type(option: Option, kind: ValueKind, bound: float | None) -> click.ParamType[Any] | None:
    path = option.path
    if path == "existing_file":
        return click.Path(exists=True, dir_okay=False)
    if path == "file":
        return click.Path(dir_okay=False)
    if path == "folder":
        return click.Path(file_okay=False)
    if path == "any":
        return click.Path()
    if kind.base == "choice":
        return click.Choice(list(kind.choices))
    if kind.base == "int":
        return click.IntRange(min=None if bound is None else int(bound))
    if kind.base == "float":
        return click.FloatRange(min=bound)
    return None


def click_option_for(
    option: Option,
    name: str,
    *,
    kind: ValueKind,
    default: Any = None,
    bound: float | None = None,
    required: bool = False,
) -> Callable[[F], F]:
    """The click option (or the positional argument, for a flag such as `PATHS`) of `option`, whose Python
    name is `name`; `kind`, `default` and `bound` (a lower bound) are what its field says."""
    if option.flag is None:
        raise ValueError(f"option {name!r} has no command-line flag")
    if not option.flag.startswith("--"):  # the positional argument (PATHS)
        return click.argument(name, nargs=-1, envvar=option.env, type=_click_type(option, kind, bound))
    if isinstance(default, frozenset):  # a set option is given as a comma-separated list (`--fail-on`)
        default = ",".join(sorted(default))
    declarations = [option.flag if option.off_flag is None else f"{option.flag}/{option.off_flag}"]
    if option.short:
        declarations.append(option.short)
    settings: dict[str, Any] = {
        "envvar": option.env,
        "help": option.help + (f" [env: {option.env}]" if option.env else ""),
        "required": required,
    }
    if option.metavar:
        settings["metavar"] = option.metavar
    if kind.base == "bool" and option.off_flag is None:
        settings["is_flag"] = True
    else:
        settings["default"] = None if default == () else default
        settings["show_default"] = default not in (None, (), False)
        click_type = _click_type(option, kind, bound)
        if click_type is not None:
            settings["type"] = click_type
    if kind.many:
        settings["multiple"] = True
        settings.pop("default", None)
    return click.option(*declarations, name, **settings)


def click_parameter(found: OptionField, *, required: bool = False, default: Any = _NO_DEFAULT) -> Callable[[F], F]:
    """The click option of one option field; `default` replaces the field's (None: a command that takes the
    value from elsewhere when the option is not given)."""
    return click_option_for(
        found.option,
        found.name,
        kind=value_kind(found.field),
        default=found.default if default is _NO_DEFAULT else default,
        bound=found.lower_bound(),
        required=required,
    )
