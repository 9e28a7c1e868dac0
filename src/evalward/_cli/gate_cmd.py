"""`evalward gate` and `evalward compare`: a stored run against its baseline (or any two runs)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from evalward._ci.ci_values import CiValues
from evalward._ci.exit_code import ALL_FAIL_CLASSES, decide_exit
from evalward._cli.click_options import db_option, options_from
from evalward._cli.run_cmd import open_history
from evalward._gating import gate_run, load_current_run, load_policy
from evalward._gating.base_branch import find_base_branch
from evalward._gating.instrument import load_instrument
from evalward._options.families import RecordingValues
from evalward.gate import compare
from evalward.report.html import render_html
from evalward.report.verdict_markdown import render_verdict_markdown
from evalward.report.verdict_terminal import print_verdict
from evalward.report.verdict_view import COMPARED_RUN_LABEL


def _outputs(func: Any) -> Any:
    func = click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the verdict as JSON")(func)
    func = click.option(
        "--markdown",
        "markdown_path",
        type=click.Path(dir_okay=False),
        help="Write the comparison markdown (PR comment)",
    )(func)
    return click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write an HTML report")(func)


@click.command("gate")
@click.option(
    "--run",
    "run_ref",
    default="latest",
    show_default=True,
    envvar="EVALWARD_GATE_RUN",
    help="The run to gate: a run id or `latest` [env: EVALWARD_GATE_RUN]",
)
@options_from(CiValues, only=("baseline", "baseline_run"))
@options_from(RecordingValues, only=("base_branch",))
@click.option(
    "--strict",
    is_flag=True,
    envvar="EVALWARD_STRICT",
    help="An inconclusive verdict fails (exit 2: undecided, told apart from a regression)",
)
@click.option(
    "--on-missing-baseline",
    type=click.Choice(["error", "absolute", "neutral", "fail"]),
    envvar="EVALWARD_ON_MISSING_BASELINE",
    help="A base side exists but no baseline could be stored or run: error (exit 3), absolute (thresholds "
    "alone), neutral (inconclusive) or fail [default: from the policy, error] [env: EVALWARD_ON_MISSING_BASELINE]",
)
@click.option(
    "--top-up-runs",
    type=click.IntRange(min=0),
    envvar="EVALWARD_TOP_UP_RUNS",
    help="Agent runs the second look's top-up may spend, both sides (0: one look, without running the agent) "
    "[default: from the policy's gate.top_up.max_runs, else what the design needs] [env: EVALWARD_TOP_UP_RUNS]",
)
@click.option("--allow-mismatch", is_flag=True, help="Compare with an explicit baseline that shares no case")
@_outputs
@db_option
@click.pass_context
def gate_command(
    ctx: click.Context,
    run_ref: str,
    baseline: str,
    baseline_run: str,
    base_branch: str | None,
    strict: bool,
    on_missing_baseline: str | None,
    top_up_runs: int | None,
    allow_mismatch: bool,
    json_path: str | None,
    markdown_path: str | None,
    html_path: str | None,
    db_url: str | None,
) -> None:
    """Gate a stored run against its baseline: pass, fail or inconclusive, with every finding explained.

    The baseline is a stored run at the merge-base (re-scored under this run's criteria when they differ),
    completed by running the base side on demand for the cases no stored run covers (--baseline-run). A run
    that records no base, gated without --base-branch, is compared with the checkout's default branch
    (origin/HEAD, else git config init.defaultBranch, else a local main or master), named in the output. When
    the run's eval files are at hand, a verdict the first look leaves open (or a case that looks newly broken)
    gets more repetitions and a second look; the two looks share α, so the second may pass or block
    (docs/gate.md §6).

    Exit codes: 0 pass or inconclusive, 1 fail, 2 inconclusive with --strict, or bad input (unknown run,
    mismatched baseline), 3 no verdict (no baseline could be made, or no case was comparable with it), or the
    database is unreachable.
    """

    loaded = ctx.obj
    settings = loaded.settings if loaded is not None else None
    gate_settings = settings.gate if settings else {}
    top_up = {**gate_settings.get("top_up", {}), "max_runs": top_up_runs} if top_up_runs is not None else None
    policy = load_policy(
        gate_settings,
        config_path=loaded.path if loaded is not None else None,
        overrides={"strict": True if strict else None, "on_missing_baseline": on_missing_baseline, "top_up": top_up},
    )
    store = open_history(db_url)
    current = load_current_run(store, run_ref)
    instrument = load_instrument(current)
    if instrument.problem is not None:
        click.echo(
            f"note: the baseline is used as recorded, not re-scored or run on demand: {instrument.problem}", err=True
        )
    found = None
    if base_branch is None and baseline.strip() == "auto":
        found = find_base_branch(current.context, Path.cwd())
        if found is not None:
            base_branch = found.name
            click.echo(f"note: {found.describe()}; --base-branch names another", err=True)
    outcome = gate_run(
        store,
        current,
        policy,
        baseline_spec=baseline,
        base_branch=base_branch,
        allow_mismatch=allow_mismatch,
        repo_dir=Path.cwd(),
        record="gate",
        instrument=instrument.prepared,
        baseline_run=baseline_run,  # type: ignore[arg-type]
        base_branch_note=found.describe() if found is not None else None,
    )
    render_outcome(outcome.current, outcome.verdict, outcome.baseline, json_path, markdown_path, html_path)
    sys.exit(decide_exit(outcome.verdict, ALL_FAIL_CLASSES).exit_code)


@click.command("compare")
@click.argument("baseline_run")
@click.argument("current_run")
@_outputs
@db_option
@click.pass_context
def compare_command(
    ctx: click.Context,
    baseline_run: str,
    current_run: str,
    json_path: str | None,
    markdown_path: str | None,
    html_path: str | None,
    db_url: str | None,
) -> None:
    """Compare two stored runs case by case (BASELINE_RUN first), with the gate's paired statistics.

    Exit codes as for `gate`: 1 when the comparison fails (a metric regressed beyond noise), 3 when no case is
    comparable, else 0.
    """

    loaded = ctx.obj
    policy = load_policy(
        loaded.settings.gate if loaded is not None else {}, config_path=loaded.path if loaded else None
    )
    store = open_history(db_url)
    baseline = store.load_run(baseline_run)
    current = store.load_run(current_run)
    verdict = compare(baseline, current, policy)
    render_outcome(current, verdict, baseline, json_path, markdown_path, html_path, subject=COMPARED_RUN_LABEL)
    sys.exit(decide_exit(verdict, ALL_FAIL_CLASSES).exit_code)


def render_outcome(
    current: Any,
    verdict: Any,
    baseline: Any,
    json_path: str | None,
    markdown_path: str | None,
    html_path: str | None,
    *,
    subject: str | None = None,
) -> None:
    """The verdict on the terminal and in the files asked for; `subject` names the judged run in every one of them
    (by default from its context: "this PR", "this commit")."""
    from rich.console import Console

    print_verdict(current, verdict, Console(highlight=False), baseline=baseline, subject=subject)
    if json_path:
        _write(json_path, verdict.model_dump_json(indent=2))
    if markdown_path:
        _write(markdown_path, render_verdict_markdown(current, verdict, baseline=baseline, subject=subject))
    if html_path:
        _write(html_path, render_html(current, verdict=verdict, baseline=baseline, subject=subject))


def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
