"""A criterion's metric checks (its options, its threshold's range) recorded where the criterion is written.

The metrics check their own options (`metrics.registry.check_specs`), as messages that name no place in a file.
A criterion read from a file is checked here as soon as it is read, and each message becomes a problem at the
criterion: at the option it names when it names one (`unknown option 'match_typo'` points at that key), at
the threshold for a threshold out of range, else at the criterion itself; the metric's name leads the message.
A run stops on these before any agent starts, as on every other problem of its files (exit 2).
"""

from __future__ import annotations

import re
from typing import Any

from evalward.loaders.positions import PathKey
from evalward.loaders.problems import Problems
from evalward.metrics.custom import CUSTOM_OPTION
from evalward.metrics.registry import check_specs
from evalward.model import MetricSpec

_NAMED_OPTION = re.compile(r"unknown option '([^']+)'")
_KNOWN = re.compile(r"(?:\(known: |; known: )([^)]*)\)?$")


def record_spec_problems(
    problems: Problems, spec: MetricSpec, at: PathKey, written: Any, *, case_id: str | None = None
) -> None:
    """Check `spec` (read from `written`, the criterion's value at `at`) and record each problem found there.
    An unknown metric is the reader's own problem (reported with its suggestions), not repeated here; a custom
    metric (user code) is checked when the run resolves it."""
    if CUSTOM_OPTION in spec.options:
        return  # the user's own metric: checked when the run resolves it (importing user code), as before
    for message in check_specs([spec]):
        if message.startswith("unknown metric"):
            continue
        found_option = _NAMED_OPTION.search(message)
        if found_option is not None and isinstance(written, dict) and found_option.group(1) in written:
            option = found_option.group(1)
            known = _KNOWN.search(message)
            problems.add(
                _named(spec.name, _KNOWN.sub("", message).rstrip(" ;") if known else message),
                (*at, option),
                on_key=True,
                case_id=case_id,
                expected=f"one of {known.group(1)}" if known else None,
                found=repr(option),
            )
        elif "threshold" in message and isinstance(written, dict) and "threshold" in written:
            problems.add(
                _named(spec.name, message), (*at, "threshold"), case_id=case_id, expected="a threshold between 0 and 1"
            )
        elif "threshold" in message:
            problems.add(_named(spec.name, message), at, case_id=case_id, expected="a threshold between 0 and 1")
        else:
            problems.add(_named(spec.name, message), at, case_id=case_id)


def _named(metric: str, message: str) -> str:
    return message if message.startswith(f"{metric}:") else f"{metric}: {message}"
