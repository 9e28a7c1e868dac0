"""What an `evalward ci` run leaves behind for the workflow: its result, the step outputs (every output the
Action declares, missing ones empty) and the log's annotations with the reporting problems in the summary."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from evalward._ci.render import Rendered, log_annotations, md
from evalward.github.actions import ActionsEnv, append_step_summary, emit_annotations, write_outputs

if TYPE_CHECKING:
    from evalward.model import RunResult
    from evalward.model.verdict import Verdict

OUTPUT_NAMES = ("verdict", "passed", "run-id", "regressions", "results-json", "comment-url")


@dataclass
class CiResult:
    """What `run_ci` did, for callers and tests."""

    exit_code: int
    run: RunResult | None = None
    verdict: Verdict | None = None
    comment_url: str | None = None
    notes: list[str] = field(default_factory=list)
    artifact: Path | None = None


def finish_log(actions: ActionsEnv, rendered: Rendered | None, notes: Sequence[str], out: TextIO) -> None:
    where = "the job summary" + (f" ({actions.run_url})" if actions.run_url else "")
    emit_annotations(log_annotations(rendered, notes), out.write, more_at=where)
    if actions.step_summary_path is not None and notes:
        lines = "\n".join(f"- {md(note)}" for note in notes)
        append_step_summary(actions.step_summary_path, f"\n\n#### ⚠️ evalward reporting problems\n\n{lines}\n")


def write_step_outputs(path: Path | None, values: Mapping[str, str]) -> None:
    """Every output of the action (OUTPUT_NAMES), missing ones empty."""
    if path is not None:
        write_outputs(path, {name: values.get(name, "") for name in OUTPUT_NAMES})
