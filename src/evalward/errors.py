"""The exceptions evalward raises on purpose, and the exit code each maps to.

EvalwardError                 any error meant for the user (message printed without a traceback)
├── UsageError        (2)     bad flags or configuration
├── EvalFileError     (2)     one or more problems in eval/config files, all reported together
├── InfrastructureError (3)   the agent could not start, a judge or the database is unreachable
└── GateInputError    (2)     a run or baseline to compare does not exist or is not comparable
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INFRASTRUCTURE = 3
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
        where = self.path
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
