"""The run as JSON: the persisted, re-renderable form of `RunResult`, written by reports and the store's
export and read back by everything that takes a run from a file (`evalward import`, traces, the server).

`render_json` writes the whole model, including the computed `metrics` maps ({name: score}) on every
case and turn, so other tools can read scores without walking `metric_results`. `load_run_json` reads
it back; the computed maps are ignored on the way in (the models ignore unknown keys), and a file
written by a newer evalward (`schema_version` above ours) is refused with a message saying so.
No escaping here: JSON is data, and whoever renders it later escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TextIO

from pydantic import ValidationError

from evalward.errors import EvalFileError, FileProblem
from evalward.model import SCHEMA_VERSION, RunResult
from evalward.model.records import iter_model_json
from evalward.model.results import PER_CASE_FIELDS
from evalward.redact import redact_model


def render_json(run: RunResult) -> str:
    """Pretty JSON (two-space indent, non-ASCII kept) of the run, ending with a newline; secrets redacted
    in the data, so the file stays valid JSON."""
    return "".join(iter_json(run))


def write_json(run: RunResult, target: TextIO) -> None:
    """`render_json(run)` written to `target` piece by piece: a run of any size without its whole text."""
    for piece in iter_json(run):
        target.write(piece)


def iter_json(run: RunResult) -> Iterator[str]:
    """The pieces of `render_json(run)`: the run's cases and case summaries dumped one at a time (they may live
    in a temporary file, `evalward.spill`) and redacted one at a time."""
    yield from iter_model_json(run, PER_CASE_FIELDS, indent=2, each=redact_model)
    yield "\n"


def load_run_json(text: str, *, source: str = "<json>") -> RunResult:
    """Parse a run written by `render_json`.

    Raises `EvalFileError` naming `source` and the JSON path for: invalid JSON (with line and column),
    a top level that is not an object, a missing or non-integer `schema_version`, a `schema_version`
    newer than `SCHEMA_VERSION`, and every field that does not fit the model (all reported together).
    """
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvalFileError(
            [FileProblem(source, f"not valid JSON: {exc.msg}", line=exc.lineno, column=exc.colno)]
        ) from None
    if not isinstance(data, dict):
        raise EvalFileError(
            [
                FileProblem(
                    source, "not a run result", json_path="$", expected="a JSON object", found=type(data).__name__
                )
            ]
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise EvalFileError(
            [
                FileProblem(
                    source,
                    "not a run result written by evalward",
                    json_path="$.schema_version",
                    expected=f"an integer schema_version (this evalward writes {SCHEMA_VERSION})",
                    found="nothing" if version is None else json.dumps(version),
                )
            ]
        )
    if version > SCHEMA_VERSION:
        raise EvalFileError(
            [
                FileProblem(
                    source,
                    f"written by a newer evalward (schema_version {version}); this evalward reads up to "
                    f"schema_version {SCHEMA_VERSION} — upgrade evalward to read it",
                    json_path="$.schema_version",
                    expected=f"<= {SCHEMA_VERSION}",
                    found=str(version),
                )
            ]
        )
    if version < 1:
        raise EvalFileError(
            [
                FileProblem(
                    source, "unknown schema_version", json_path="$.schema_version", expected=">= 1", found=str(version)
                )
            ]
        )
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        raise EvalFileError([_problem(source, error) for error in exc.errors()]) from None


def _problem(source: str, error: Any) -> FileProblem:
    path = "$"
    for part in error["loc"]:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    found = error.get("input")
    return FileProblem(
        source,
        error["msg"],
        json_path=path,
        found=None if error["type"] == "missing" else _short(found),
    )


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
