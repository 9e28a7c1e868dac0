"""The Action's inputs: `INPUT_<NAME>` → the `EVALWARD_*` variable of the matching `evalward ci` option.

The runner exports each input as `INPUT_<NAME>` (upper-cased, dashes kept, docs/github.md §2) and enforces
neither `required` nor types. `apply_action_inputs` validates every given input at once and copies it onto
its variable, so the Action, a laptop and the daemon share one code path; an empty input means "not given",
and a given input wins over the same `EVALWARD_*` variable. `CiOptions` is everything `evalward ci` can be
told, whichever way it was told.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalward._ci.ci_values import (
    DEFAULT_ARTIFACT_DIR,
    DEFAULT_FAIL_ON,
    DEFAULT_NAME,
    FAIL_CLASSES,
    NAME_OK,
    PULL_REQUEST_TARGET_CONSENT,
    CiValues,
    parse_fail_on,
)
from evalward._options.families import RecordingValues, ReportFileValues, SettingsFileValues
from evalward._options.option import SECTIONS, OptionField, option_fields, value_kind
from evalward._options.run_values import RunValues
from evalward.errors import UsageError
from evalward.github.actions import read_inputs

__all__ = [
    "ACTION_INPUTS",
    "DEFAULT_ARTIFACT_DIR",
    "DEFAULT_FAIL_ON",
    "DEFAULT_NAME",
    "FAIL_CLASSES",
    "NAME_OK",
    "PULL_REQUEST_TARGET_CONSENT",
    "CiOptions",
    "action_inputs",
    "action_options",
    "apply_action_inputs",
    "enter_working_directory",
    "parse_fail_on",
]

ACTION_FAMILIES = (RunValues, ReportFileValues, SettingsFileValues, RecordingValues, CiValues)
"""The option families `evalward ci` reads, in the order their inputs are listed within a section."""


Families = Sequence[type[BaseModel]]


def action_options(families: Families = ACTION_FAMILIES) -> Iterator[OptionField]:
    """Every option that is an Action input, in `action.yml`'s order: by section, then family, then field."""
    found = [item for item in option_fields(*families) if item.input_name is not None]
    for section in SECTIONS:
        yield from (item for item in found if item.option.section == section)


def action_inputs(families: Families = ACTION_FAMILIES) -> dict[str, str]:
    """Action input → its option's `EVALWARD_*` variable."""
    return {str(item.input_name): str(item.option.env) for item in action_options(families) if item.option.env}


ACTION_INPUTS: dict[str, str] = action_inputs()
"""Action input → the `EVALWARD_*` variable of the matching `evalward ci` option, generated from the option
families (`github-token` is read as `INPUT_GITHUB-TOKEN` directly and never copied anywhere)."""
_BOOLEANS = {"true": "true", "false": "false", "yes": "true", "no": "false", "1": "true", "0": "false"}


def _whole(minimum: int) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        if re.fullmatch(r"-?[0-9]+", value) is None or int(value) < minimum:
            return f"expected a whole number of at least {minimum}, found {value!r}"
        return None

    return check


def _number(minimum: float) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        try:
            number = float(value)
        except ValueError:
            number = minimum - 1
        return None if number >= minimum else f"expected a number of at least {minimum:g}, found {value!r}"

    return check


def _choice(*choices: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value.lower() in choices else f"expected one of {', '.join(choices)}, found {value!r}"

    return check


def _boolean(value: str) -> str | None:
    return None if value.lower() in _BOOLEANS else f"expected true or false, found {value!r}"


def _input_check(item: OptionField) -> Callable[[str], str | None] | None:
    """Why an input's text is unusable for its option: its own check, else one from the field's type."""
    if item.option.input_check is not None:
        return item.option.input_check
    kind = value_kind(item.field)
    bound = item.lower_bound()
    if kind.base == "bool":
        return _boolean
    if kind.base == "choice":
        return _choice(*kind.choices)
    if kind.base == "int":
        return _whole(int(bound) if bound is not None else -(2**63))
    if kind.base == "float":
        return _number(bound if bound is not None else float("-inf"))
    return None


def apply_action_inputs(env: MutableMapping[str, str], families: Families = ACTION_FAMILIES) -> dict[str, str]:
    """Validate every given `INPUT_*` at once, then copy each onto its `EVALWARD_*` variable; return them.

    Lists (`eval-paths`, `metrics`, `case`, `comment-author`) may be separated by spaces or newlines; booleans accept
    true/false/yes/no/1/0; `setup` keeps its lines. Raises UsageError (exit 2) naming each bad input, its
    variable, what was expected and what was found, before anything is applied.
    """
    options = {str(item.input_name): item for item in action_options(families) if item.option.env}
    given = read_inputs(env, {name: str(item.option.env) for name, item in options.items()})
    problems = [
        f"input `{name}` (INPUT_{name.upper()}): {problem}"
        for name, value in given.items()
        if (check := _input_check(options[name])) is not None and (problem := check(value)) is not None
    ]
    if problems:
        raise UsageError("invalid action inputs:\n" + "\n".join("  " + p for p in problems))
    for name, value in given.items():
        item = options[name]
        kind = value_kind(item.field)
        if kind.many:
            value = " ".join(re.split(item.option.list_separators, value)).strip()
        elif kind.base == "bool":
            value = _BOOLEANS[value.lower()]
        elif kind.base == "choice":
            value = value.lower()
        env[str(item.option.env)] = value
    return given


def enter_working_directory(env: MutableMapping[str, str]) -> Path | None:
    """`working-directory` (EVALWARD_WORKING_DIRECTORY): make it the working directory of this process, before
    the settings file is read, so paths, evalward.toml and the setup commands are relative to it."""
    value = env.get("EVALWARD_WORKING_DIRECTORY", "").strip()
    if not value:
        return None
    folder = Path(value)
    if not folder.is_dir():
        raise UsageError(
            f"input `working-directory` (INPUT_WORKING-DIRECTORY, EVALWARD_WORKING_DIRECTORY): expected a folder "
            f"relative to {Path.cwd()}, found {value!r}, which is not one"
        )
    os.chdir(folder)
    return folder.resolve()


class CiOptions(CiValues, RecordingValues, ReportFileValues):
    """Everything `evalward ci` can be told (flags, `EVALWARD_*` variables, action inputs, evalward.toml): its own
    options, the recording and report-file options it shares with `evalward run`, and the run values."""

    model_config = ConfigDict(defer_build=True, extra="forbid", arbitrary_types_allowed=True)

    run: RunValues = Field(default_factory=RunValues)
    """What runs and how it is scored: the same values as `evalward run`."""
    gate_settings: dict[str, Any] = Field(default_factory=dict)
    """The settings file's gate policy (`[gate]`), validated by the gate."""
    config_path: str | None = None
    """The settings file that was read, if any."""

    @property
    def shard(self) -> str | None:
        return self.run.shard

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> CiOptions:
        """From `evalward ci`'s keyword arguments (or a test's): run values go to `run`, the rest by name; None and
        empty values mean "not given". Bad values raise UsageError naming the option (checked as the Action's
        inputs are, so a flag and an input get the same message)."""
        own = set(cls.model_fields) - {"run"}
        given = {k: v for k, v in values.items() if k in own and v is not None and v != ""}
        problems = []
        for item in option_fields(CiValues):
            text = given.get(item.name)
            check = item.option.input_check
            if isinstance(text, str) and check is not None and (problem := check(text)) is not None:
                problems.append(f"{item.option.flag or item.name} ({item.option.env}): {problem}")
        if problems:
            raise UsageError("invalid ci options:\n" + "\n".join("  " + p for p in problems))
        run = values.get("run")
        return cls(run=run if isinstance(run, RunValues) else RunValues.from_values(values), **given)
