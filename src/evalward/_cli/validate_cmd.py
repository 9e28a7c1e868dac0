"""`evalward validate`: check eval files and criteria without running anything.

Validating needs no model: a judged criterion (`hallucinations_v1`, `final_response_match_v2`, …) that names no
judge model is a warning that `evalward run` will need one, not the run's "no judge is configured" error (exit 3).
Nothing here builds a judge client or reaches an endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from evalward._cli.click_options import options_from
from evalward._cli.common import echo_warnings
from evalward._options.run_values import RunValues
from evalward._pipeline import RunOptions, prepare
from evalward._pipeline.options import _specs_per_case
from evalward.config import LoadedConfig
from evalward.errors import UsageError, printable
from evalward.judging.judge_config import JudgeConfig
from evalward.judging.judged_case import HOW_TO_CONFIGURE_A_JUDGE, Judging, judged_specs
from evalward.metrics.registry import needs_judge
from evalward.report.escape import workflow_command_safe

if TYPE_CHECKING:
    from evalward.judging.judge_config import JudgeConfig
    from evalward.model import EvalSet


@click.command("validate")
@options_from(RunValues, only=("paths", "test_config"))
def validate_command(paths: tuple[str, ...], test_config: str | None) -> None:
    """Check that every eval file in PATHS parses and its criteria are known; report every problem at once.

    Exit 0 when valid (warnings, such as judged criteria the run will need a judge model for, go to stderr),
    2 with the list of problems otherwise.
    """

    if not paths:
        raise UsageError("no eval files given: pass files or directories")
    # No judge model is a matter for the run: here judged criteria without one are left unresolved.
    judge = JudgeConfig(require_model=False)
    root = click.get_current_context().find_root().obj
    custom_types = list(root.settings.run.custom_evaluator_types) if isinstance(root, LoadedConfig) else []
    prepared = prepare(
        RunOptions(
            paths=list(paths), agent="-", config_path=test_config, judge=judge, custom_evaluator_types=custom_types
        )
    )
    echo_warnings([*prepared.warnings, *_judge_warnings(prepared.sets, judge)])
    for eval_set in prepared.sets:
        # Counted from the set's per-case facts: a large file's cases are not read back to be counted.
        criteria = ", ".join(m.describe() for m in eval_set.criteria.metrics) or "none"
        # File names come from outside: one line each, and no workflow command (`::error …`) in a CI log.
        click.echo(
            workflow_command_safe(
                f"ok  {printable(eval_set.path or '')}  [{eval_set.format}]  set {eval_set.eval_set_id!r}: "
                f"{len(eval_set.cases)} cases, {eval_set.turn_count()} turns; "
                f"criteria ({eval_set.criteria.origin}): {criteria}"
            )
        )


def _judge_warnings(sets: list[EvalSet], judge: JudgeConfig) -> list[str]:
    """One warning per eval set whose judged criteria name no judge model, at the file that asks for them."""

    warnings: list[str] = []
    for eval_set in sets:
        specs = _specs_per_case([eval_set])  # the run's own view: set criteria, or each case's own metrics
        if not any(needs_judge(spec) for case_specs in specs for spec in case_specs):
            continue  # most sets: the judging machinery is never imported

        missing = Judging(judge, environ={}).unresolved(judged_specs(specs))
        if missing:
            where = eval_set.criteria.config_path or eval_set.path or eval_set.eval_set_id
            warnings.append(
                f"{where}: criteria {', '.join(missing)} are scored by an LLM judge and name no judge model; "
                f"`evalward run` will need one: {HOW_TO_CONFIGURE_A_JUDGE}"
            )
    return warnings
