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
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalward.errors import EvalFileError, FileProblem

CONFIG_FILE_NAMES = ("evalward.toml", ".evalward.toml")
_CLASS_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|\.[A-Za-z_]\w*)")


class RunSettings(BaseModel):
    """Defaults for `evalward run` (and `evalward ci`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    paths: list[str] = Field(default_factory=list, description="Eval files or directories.")
    agent: str | None = Field(default=None, description="The agent target, as for --agent.")
    test_config: str | None = Field(default=None, description="A test_config.json for every eval file.")
    metrics: list[str] = Field(
        default_factory=list,
        description="Extra metrics, NAME or NAME=THRESHOLD; evaluators as module:function[=THRESHOLD].",
    )
    metrics_mode: str | None = Field(default=None, description="`add` or `replace`.")
    repeat: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, ge=0)
    rate_limit: str | None = None
    retries: int | None = Field(default=None, ge=0)
    pass_rule: str | None = None
    agent_processes: int | None = Field(default=None, ge=1)
    db: str | None = Field(default=None, description="History database URL.")
    base_branch: str | None = Field(default=None, description="The branch pull requests merge into.")
    gate: dict[str, Any] = Field(
        default_factory=dict, description="The gate policy (see `evalward.gate.GatePolicy`); validated by the gate."
    )
    custom_evaluator_types: list[str] = Field(
        default_factory=list,
        description="Your pydantic-evals evaluator classes, `pkg.module:Class`: the names pydantic-evals Dataset "
        "files give them (the class name) resolve to these, as `Dataset.from_file(custom_evaluator_types=...)`.",
    )
    secret_names: list[str] = Field(
        default_factory=list,
        description="More names of environment variables whose values are secrets (globs such as `MYCORP_*`, any "
        "case), besides the ones evalward recognises (`evalward.redact.is_secret_name`); `EVALWARD_SECRET_NAMES` adds "
        "more (comma or space separated). Their values are masked in every output and refused in ids.",
    )

    @field_validator("custom_evaluator_types")
    @classmethod
    def _class_paths(cls, paths: list[str]) -> list[str]:
        wrong = [path for path in paths if not _CLASS_PATH.fullmatch(path)]
        if wrong:
            raise ValueError(f"expected class paths 'package.module:Class', found {', '.join(map(repr, wrong))}")
        return paths


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


def load_config(path: str | Path | None = None) -> LoadedConfig:
    """Read and validate the settings file; no file → all defaults."""
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
    try:
        settings = RunSettings.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            keys = [str(part) for part in error["loc"]]
            problems.append(
                FileProblem(
                    path=str(file),
                    line=_line_of(text, keys[-1] if keys else ""),
                    json_path=".".join((*prefix, *keys)),
                    message="unknown key" if error["type"] == "extra_forbidden" else error["msg"],
                    expected="one of: " + ", ".join(sorted(RunSettings.model_fields))
                    if len(keys) == 1 and error["type"] == "extra_forbidden"
                    else None,
                    found=repr(error.get("input"))[:80] if error["type"] != "extra_forbidden" else None,
                )
            )
        raise EvalFileError(problems) from exc
    return LoadedConfig(settings=settings, path=str(file))


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
    """The settings as click `default_map` entries for `run` and `ci` (only the keys that are set)."""
    mapping = {
        "paths": settings.paths or None,
        "agent": settings.agent,
        "test_config": settings.test_config,
        "metrics": settings.metrics or None,
        "metrics_mode": settings.metrics_mode,
        "custom_evaluator_types": settings.custom_evaluator_types or None,
        "repeat": settings.repeat,
        "concurrency": settings.concurrency,
        "timeout_s": settings.timeout,
        "rate_limit": settings.rate_limit,
        "retries": settings.retries,
        "pass_rule": settings.pass_rule,
        "agent_processes": settings.agent_processes,
        "db_url": settings.db,
        "base_branch": settings.base_branch,
    }
    return {key: value for key, value in mapping.items() if value is not None}
