"""A criterion's metric checks (its options, its threshold's range) recorded where the criterion is written.

The registry checks a criterion (`metrics.registry.criterion_problems`) and says, for each problem, what it is
about and where within the options: an unknown option (with the option names the metric takes there), an
option's value, the threshold, or the metric itself. A criterion read from a file is checked here as soon as it
is read, and each problem is recorded at its place in the file: an unknown option at its key, a bad value at the
value, a threshold at `threshold` (or at the criterion written as a bare number), anything else at the criterion;
the metric's name leads the message. A run stops on these before any agent starts, as on every other problem of
its files (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic.alias_generators import to_snake

from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems, describe_value
from evalward.metrics.custom import CUSTOM_OPTION
from evalward.metrics.metric_options import ABSENT, OptionProblem
from evalward.metrics.registry import criterion_problems
from evalward.model import MetricSpec


def record_spec_problems(
    problems: Problems, spec: MetricSpec, at: PathKey, written: Any, *, case_id: str | None = None
) -> None:
    """Check `spec` (read from `written`, the criterion's value at `at`) and record each problem found there.
    An unknown metric is the reader's own problem (reported with its suggestions), not repeated here; a custom
    metric (user code) is checked when the run resolves it."""
    if CUSTOM_OPTION in spec.options:
        return  # the user's own metric: checked when the run resolves it (importing user code), as before
    for problem in criterion_problems(spec):
        if problem.kind != "unknown_metric":
            _record(problems, problem, at, written, case_id)


def _record(problems: Problems, problem: OptionProblem, at: PathKey, written: Any, case_id: str | None) -> None:
    message = problem.message if problem.worded else _named(problem.metric, problem.message)
    found = None if problem.found is ABSENT else describe_value(problem.found)
    if problem.kind == "threshold":
        where = (*at, "threshold") if isinstance(written, Mapping) and "threshold" in written else at
        problems.add(message, where, case_id=case_id, expected=problem.expected, found=found)
        return
    option = _written_path(written, problem.option) if problem.option else None
    if option is None:
        problems.add(message, at, case_id=case_id, expected=problem.expected, found=found)
    elif problem.kind == "unknown_option":
        problems.add(
            message, (*at, *option), on_key=True, case_id=case_id, expected=problem.expected, found=repr(option[-1])
        )
    else:
        problems.add(message, (*at, *option), case_id=case_id, expected=problem.expected, found=found)


def _written_path(written: Any, option: Sequence[str | int]) -> PathKey | None:
    """The path in the file of the option at `option` within the criterion's options: keys as written (a
    reader turns ADK's camelCase `matchType` into the option `match_type`), or None when the file does not
    have it (a missing option, an option set by a default)."""
    path: list[str | int] = []
    current = written
    for part in option:
        if isinstance(current, Mapping) and isinstance(part, str):
            key = next((k for k in current if k == part), None) or next(
                (k for k in current if isinstance(k, str) and to_snake(k) == part), None
            )
            if key is None:
                return None
            path.append(key)
            current = current[key]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            path.append(part)
            current = current[part]
        else:
            return None
    return tuple(path)


def _named(metric: str, message: str) -> str:
    return message if message.startswith(f"{metric}:") else f"{metric}: {message}"
