"""`evalward record`: run the agent on inputs and write what it did as an eval set for a human to review."""

from __future__ import annotations

from pathlib import Path

import click

from evalward._cli.click_builder import click_parameter
from evalward._cli.click_options import options_from
from evalward._options.option import option_field
from evalward._options.run_values import RunValues
from evalward._pipeline import PreparedRun, RunOptions, run_blocking
from evalward.convert import convert_eval_set
from evalward.convert.record import read_inputs, recorded_set
from evalward.errors import EXIT_FAILED
from evalward.loaders.discovery import eval_set_stem
from evalward.runners import make_agent


@click.command("record")
@click_parameter(option_field(RunValues, "agent"), required=True)
@click.option(
    "--inputs",
    "inputs_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="An eval file (its queries are used), JSON lines of {id, query, inputs, turns, session_state}, "
    "or a text file with one query per line",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The eval set to write, e.g. tests/evals/shop.evalset.json (ADK) or shop.eval.yaml (native)",
)
@click.option(
    "--format",
    "target",
    type=click.Choice(["adk", "native"]),
    default=None,
    help="adk (current ADK eval set) or native; default: native for .yaml/.yml, else adk",
)
@click.option("--eval-set-id", help="Id of the recorded set (default: --out's file name without suffixes)")
@options_from(RunValues, only=("concurrency", "timeout_s"))
def record_command(
    agent: str,
    inputs_path: str,
    out: str,
    target: str | None,
    eval_set_id: str | None,
    concurrency: int,
    timeout_s: float | None,
) -> None:
    """Run the agent once on every input and write the observed responses and tool calls as expectations.

    The file is a starting point: review every expectation (a wrong answer recorded is a wrong answer
    expected). Cases whose run failed are left out and listed. Exit 0 when every case was recorded, 1 when
    some failed (the rest is still written), 2 for bad input, 3 when the agent cannot start.
    """
    import sys

    fmt = target or ("native" if out.endswith((".yaml", ".yml")) else "adk")
    set_id = eval_set_id or eval_set_stem(Path(out).name)
    inputs = read_inputs(inputs_path, eval_set_id=set_id)
    options = RunOptions(
        paths=[inputs_path], agent=agent, concurrency=concurrency, timeout_s=timeout_s or None, max_retries=2
    )
    runner = make_agent(agent)
    run = run_blocking(PreparedRun(options=options, sets=[inputs], warnings=[]), agent=runner)
    recorded = recorded_set(inputs, run, target="adk" if fmt == "adk" else "native", agent_label=runner.target.target)
    conversion = convert_eval_set(
        recorded.eval_set, "adk" if fmt == "adk" else "native", syntax="json" if out.endswith(".json") else "yaml"
    )
    for line in conversion.unexpressed:
        click.echo(f"not expressible in {fmt}: {line}", err=True)
    for failure in recorded.failures:
        click.echo(f"not recorded: {failure}", err=True)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(conversion.text, encoding="utf-8")
    click.echo(
        f"recorded {len(recorded.eval_set.cases)} of {len(inputs.cases)} case(s) to {path}; "
        "review the expectations before committing them"
    )
    if recorded.failures:
        sys.exit(EXIT_FAILED)
