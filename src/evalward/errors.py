"""The exceptions evalward raises on purpose, and the exit code each maps to.

EvalwardError                 any error meant for the user (message printed without a traceback)
├── UsageError        (2)     bad flags or configuration
├── EvalFileError     (2)     one or more problems in eval/config files, all reported together
├── InfrastructureError (3)   the agent could not start, a judge or the database is unreachable
├── GateInputError    (2)     a run or baseline to compare does not exist or is not comparable
└── InternalError     (3)     anything else: a bug in evalward, reported in one line (`crash_line`)

Exit 1 means one thing only: the run finished and did not meet its criteria. A crash must never look like
that, so every unexpected exception becomes exit 3 with one line saying what failed, where, and where to
report it; the traceback is printed only with `--debug` / `EVALWARD_DEBUG=1`.
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3
EXIT_UNDECIDED = 2
"""The gate could not decide and `strict` fails that (docs/gate.md §6): the same code as bad input, as the
gate's reference gives it — neither is a judgment of the change, and a script can tell both from a regression (1)."""
EXIT_INTERRUPTED = 130


class EvalwardError(Exception):
    """An error for the user: its message says what went wrong and how to fix it."""

    exit_code = EXIT_BAD_INPUT


class UsageError(EvalwardError):
    exit_code = EXIT_BAD_INPUT


class InfrastructureError(EvalwardError):
    exit_code = EXIT_INFRASTRUCTURE


class GateInputError(EvalwardError):
    exit_code = EXIT_BAD_INPUT


ISSUES_URL = "https://github.com/evalward/evalward/issues"
"""Where a crash is reported (also `[project.urls] Issues` in pyproject.toml)."""

DEBUG_VARIABLE = "EVALWARD_DEBUG"
_CRASH_MESSAGE_CHARS = 300
_PACKAGE_DIR = Path(__file__).resolve().parent


class InternalError(EvalwardError):
    """An unexpected exception, turned into the one-line report of `crash_line` (exit 3)."""

    exit_code = EXIT_INFRASTRUCTURE

    @classmethod
    def from_exception(cls, exc: BaseException) -> InternalError:
        error = cls(crash_line(exc))
        error.__cause__ = exc
        return error


def debug_enabled(argv: list[str] | None = None) -> bool:
    """True when the user asked for tracebacks: `--debug` on the command line or `EVALWARD_DEBUG` set."""
    if argv is not None and "--debug" in argv:
        return True
    return os.environ.get(DEBUG_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def crash_location(exc: BaseException) -> str:
    """`module/file.py:LINE` of the innermost evalward frame of `exc` (else the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown location"
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(_PACKAGE_DIR)]
    frame = (ours or frames)[-1]
    path = Path(frame.filename).resolve()
    shown = path.relative_to(_PACKAGE_DIR.parent) if path.is_relative_to(_PACKAGE_DIR.parent) else Path(path.name)
    return f"{shown.as_posix()}:{frame.lineno}"


def crash_line(exc: BaseException) -> str:
    """One line for an unexpected exception: its type and message, where it was raised, where to report it."""
    message = re.sub(r"\s+", " ", str(exc)).strip()
    if len(message) > _CRASH_MESSAGE_CHARS:
        message = message[: _CRASH_MESSAGE_CHARS - 1] + "…"
    what = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return (
        f"internal error: {what} (at {crash_location(exc)}). This is a bug in evalward: please report it at "
        f"{ISSUES_URL} with the output of the same command run with {DEBUG_VARIABLE}=1"
    )


CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
"""C0 controls and DEL: never valid in a file name, an id or a request value that evalward prints or stores."""


def printable(text: str) -> str:
    """`text` with each control character written as its escape (`\\n`, `\\x00`): a file name or id from
    outside stays on one line when printed, so it can neither forge a log line nor a workflow command."""
    return CONTROL_CHARACTER.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


@dataclass(frozen=True)
class FileProblem:
    """One problem in one file: where it is, what was expected and what was found."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    json_path: str | None = None
    case_id: str | None = None
    expected: str | None = None
    found: str | None = None

    def render(self) -> str:
        where = printable(self.path)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        parts = [f"{where}: {self.message}"]
        if self.json_path:
            parts.append(f"at {self.json_path}")
        if self.case_id:
            parts.append(f"case {self.case_id!r}")
        if self.expected is not None:
            parts.append(f"expected {self.expected}")
        if self.found is not None:
            parts.append(f"found {self.found}")
        return "; ".join(parts)


@dataclass
class EvalFileError(EvalwardError):
    """Every problem found in the files read, reported at once."""

    problems: list[FileProblem] = field(default_factory=list)

    def __str__(self) -> str:
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in eval files:"
        return "\n".join([head, *("  " + p.render() for p in self.problems)])
