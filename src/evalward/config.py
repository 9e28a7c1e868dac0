"""The repository's evalward settings: `evalward.toml`, or `[tool.evalward]` in `pyproject.toml`.

The file holds what a team versions with its code: eval paths, the agent, repetitions, concurrency and
the gate policy (gated metrics, margins, quarantine). Unknown keys are rejected with the file, the line
and the key path. Values become the defaults of the matching command-line options, so precedence is:
flag > EVALWARD_* variable > config file > built-in default.

```toml
# evalward.toml
paths = ["evals/"]
agent = "my_agent.agent:run"
repeat = 3
concurrency = 8
custom_evaluator_types = ["evals.checks:MyEvaluator"]  # classes pydantic-evals Dataset files name
secret_names = ["MYCORP_*", "LEGACY_SIGNING_MATERIAL"]  # masked like `…_TOKEN`, `…_KEY`

[gate]
alpha = 0.05
delta_block = 0.02
metrics = ["tool_trajectory_avg_score"]
quarantine = [{case_id = "flaky-case", until = 2026-12-31, reason = "upstream API flaps"}]
```
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward._options.families import RecordingValues
from evalward._options.option import OptionField, option_fields
from evalward._options.run_values import RunValues
from evalward.errors import EvalFileError, FileProblem

CONFIG_FILE_NAMES = ("evalward.toml", ".evalward.toml")

SETTINGS_FAMILIES: tuple[type[BaseModel], ...] = (RunValues, RecordingValues)
"""The option families whose options may be set in the file: each option with a settings key (`Option.toml`)."""


def settings_keys(families: Sequence[type[BaseModel]] = SETTINGS_FAMILIES) -> dict[str, OptionField]:
    """Settings key → its option, for every option the file may set."""
    return {str(item.toml_key): item for item in option_fields(*families) if item.toml_key is not None}


class _FileOnlySettings(BaseModel):
    """The keys that are settings of the file alone, not options."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    gate: dict[str, Any] = Field(
        default_factory=dict, description="The gate policy (see `evalward.gate.GatePolicy`); validated by the gate."
    )
    secret_names: list[str] = Field(
        default_factory=list,
        description="More names of environment variables whose values are secrets (globs such as `MYCORP_*`, any "
        "case), besides the ones evalward recognises (`evalward.redact.is_secret_name`); `EVALWARD_SECRET_NAMES` adds "
        "more (comma or space separated). Their values are masked in every output and refused in ids.",
    )


class RunSettings(_FileOnlySettings):
    """The repository's settings: the file's own keys, and the options it sets, by family."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    run: RunValues = Field(default_factory=RunValues)
    recording: RecordingValues = Field(default_factory=RecordingValues)
    given: dict[str, Any] = Field(default_factory=dict)
    """Option field name → value, for every option the file sets: the defaults of the commands' options."""


class LoadedConfig(BaseModel):
    settings: RunSettings
    path: str | None = None


def find_config(start: Path | None = None) -> Path | None:
    """`evalward.toml` in the working directory, else a `pyproject.toml` there with `[tool.evalward]`."""
    folder = (start or Path.cwd()).resolve()
    for name in CONFIG_FILE_NAMES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            text = pyproject.read_text(encoding="utf-8")
        except OSError:
            return None
        if not may_hold_evalward_settings(text):
            return None  # most projects: their pyproject.toml is not even parsed
        import tomllib  # here, not at the top: see may_hold_evalward_settings

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return None
        if isinstance(data.get("tool"), dict) and "evalward" in data["tool"]:
            return pyproject
    return None


_MAY_HOLD_EVALWARD = re.compile(
    r"""^[ \t]*(?:
        \[\[?[ \t]*["']?tool["']?[ \t]*\.[ \t]*["']?evalward["']?[ \t]*[\].]   # [tool.evalward], [tool.evalward.gate]
      | \[[ \t]*["']?tool["']?[ \t]*\]                                    # [tool], whose keys may name evalward
      | ["']?tool["']?[ \t]*[.=]                                         # tool.evalward.x = …, tool = { … }
    )""",
    re.MULTILINE | re.VERBOSE,
)


def may_hold_evalward_settings(text: str) -> bool:
    """False only when the TOML `text` cannot define `tool.evalward`: no `[tool.evalward…]` table, no `[tool]`
    table and no top-level `tool` key (dotted or inline), however spaced or quoted. Parsing TOML costs more
    than the rest of reading the settings (the parser's import compiles its regexes), and most pyproject.toml
    files have no evalward section; a file this lets through is parsed and decided exactly."""
    return _MAY_HOLD_EVALWARD.search(text) is not None


def load_config(
    path: str | Path | None = None, families: Sequence[type[BaseModel]] = SETTINGS_FAMILIES
) -> LoadedConfig:
    """Read and validate the settings file; no file → all defaults. `families`: the option families whose
    options the file may set (a `RunValues` and a `RecordingValues`, or subclasses)."""
    file = Path(path) if path is not None else find_config()
    if file is None:
        return LoadedConfig(settings=RunSettings())
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalFileError([FileProblem(path=str(file), message=f"cannot read: {exc.strerror}")]) from exc
    import tomllib  # here, not at the top: see may_hold_evalward_settings

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise EvalFileError([FileProblem(path=str(file), line=line, message=f"invalid TOML: {exc}")]) from exc
    prefix: tuple[str, ...] = ()
    if file.name == "pyproject.toml":
        data = data.get("tool", {}).get("evalward", {})
        prefix = ("tool", "evalward")
    settings = _validated(data, text=text, file=str(file), prefix=prefix, families=families)
    return LoadedConfig(settings=settings, path=str(file))


def _validated(
    data: dict[str, Any], *, text: str, file: str, prefix: tuple[str, ...], families: Sequence[type[BaseModel]]
) -> RunSettings:
    """The file's keys validated by the fields they set: every problem at once, with its line and key path."""
    keys = settings_keys(families)
    problems: list[FileProblem] = []

    def problem(path: list[str], message: str, *, expected: str | None = None, found: str | None = None) -> None:
        problems.append(
            FileProblem(
                path=file,
                line=_line_of(text, path[-1] if path else ""),
                json_path=".".join((*prefix, *path)),
                message=message,
                expected=expected,
                found=found,
            )
        )

    known = sorted({*keys, *_FileOnlySettings.model_fields})
    for key in data:
        if key not in keys and key not in _FileOnlySettings.model_fields:
            problem([key], "unknown key", expected="one of: " + ", ".join(known))
    file_only: _FileOnlySettings | None = None
    try:
        file_only = _FileOnlySettings.model_validate(
            {k: v for k, v in data.items() if k in _FileOnlySettings.model_fields}
        )
    except ValidationError as exc:
        for error in exc.errors():
            problem([str(part) for part in error["loc"]], error["msg"], found=repr(error.get("input"))[:80])
    validated: list[BaseModel] = []
    given: dict[str, Any] = {}
    for family in families:
        by_field = {item.name: key for key, item in keys.items() if item.model is family}
        values = {item.name: data[key] for key, item in keys.items() if item.model is family and key in data}
        try:
            validated.append(family.model_validate(values))
        except ValidationError as exc:
            for error in exc.errors():
                loc = [str(part) for part in error["loc"]]
                if loc:
                    loc[0] = by_field.get(loc[0], loc[0])
                problem(loc, error["msg"], found=repr(error.get("input"))[:80])
            continue
        given.update({name: getattr(validated[-1], name) for name in values})
    if problems or file_only is None:
        raise EvalFileError(problems)
    run = next(item for item in validated if isinstance(item, RunValues))
    recording = next(item for item in validated if isinstance(item, RecordingValues))
    return RunSettings(
        gate=file_only.gate, secret_names=file_only.secret_names, run=run, recording=recording, given=given
    )


def _line_of(text: str, key: str) -> int | None:
    """The first line that assigns `key` (TOML parsers keep no positions, so look it up in the text)."""
    if not key:
        return None
    pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def command_defaults(settings: RunSettings) -> dict[str, Any]:
    """The options the settings file sets, as click `default_map` entries (by the options' Python names)."""
    return dict(settings.given)
