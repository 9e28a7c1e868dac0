"""History commands: `runs`, `history`, `export`, `import`, `merge`."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import click

from evalward._cli.click_options import db_option, options_from
from evalward._cli.run_cmd import open_history
from evalward._options.families import RecordingValues
from evalward._pipeline import finalize
from evalward._pipeline import new_run_id as make_id
from evalward.errors import EXIT_FAILED, EXIT_OK, UsageError
from evalward.reading import read_text_file
from evalward.report.terminal import print_run
from evalward.run_json import load_run_json, render_json

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """One block per value, scaled between the series' min and max (a flat series sits mid-height); gaps for None."""
    present = [v for v in values if v is not None]
    if not present:
        return ""
    low, high = min(present), max(present)
    span = high - low
    out = []
    for value in values:
        if value is None:
            out.append(" ")
        elif span == 0:
            out.append(SPARK[len(SPARK) // 2])
        else:
            out.append(SPARK[min(len(SPARK) - 1, int((value - low) / span * (len(SPARK) - 1) + 0.5))])
    return "".join(out)


def _console() -> Any:
    from rich.console import Console

    # Logs and pipes get a fixed wide layout so ids are never wrapped mid-way.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


@click.command("runs")
@click.option("--repo", "repository", help="Only runs of owner/name")
@click.option("--branch", help="Only runs on this branch")
@click.option("--commit", help="Only runs of this commit (a SHA prefix)")
@click.option("--status", type=click.Choice(["running", "complete", "cancelled", "failed"]))
@click.option("--limit", type=int, default=20, show_default=True)
@db_option
def runs_command(
    repository: str | None, branch: str | None, commit: str | None, status: str | None, limit: int, db_url: str | None
) -> None:
    """List stored runs, newest first."""
    from rich.table import Column, Table

    store = open_history(db_url)
    rows = store.list_runs(repository=repository, branch=branch, commit=commit, status=status, limit=limit)
    table = Table("status", "verdict", "commit", "branch", "PR", "shard", "cases ✓/✗/!", "started")
    table.columns.insert(0, Column("run id", no_wrap=True))
    for row in rows:
        table.add_row(
            row.run_id,
            row.status,
            "passed" if row.passed else "failed",
            (row.commit or "")[:10],
            row.branch or "",
            str(row.pr_number or ""),
            f"{row.shard_index}/{row.shard_count}" if row.shard_count else "",
            f"{row.passes}/{row.failures}/{row.errors} of {row.planned}",
            row.started_at.strftime("%Y-%m-%d %H:%M") if row.started_at else "",
        )
    _console().print(table)


@click.command("history")
@click.option("--case", "case_id", help="One case's history (mean over its repetitions per run)")
@click.option("--metric", help="Only this metric")
@click.option("--branch", help="Only runs on this branch")
@click.option("--limit", type=int, default=30, show_default=True, help="How many runs back")
@db_option
def history_command(
    case_id: str | None, metric: str | None, branch: str | None, limit: int, db_url: str | None
) -> None:
    """A table with one row per metric (and case): a sparkline over the runs, oldest to newest."""
    from rich.table import Table

    store = open_history(db_url)
    points = store.case_history(case_id=case_id, metric=metric, branch=branch, limit=limit)
    if not points:
        click.echo("no complete runs match")
        return
    runs = list(dict.fromkeys(p.run_id for p in points))
    series: dict[tuple[str, str], dict[str, float | None]] = defaultdict(dict)
    for point in points:
        label = point.metric if case_id is None else f"{point.metric}  [{point.eval_set_id}]"
        series[(label, point.metric)][point.run_id] = point.score
    table = Table("metric", "runs", "trend (oldest → newest)", "first", "last", "mean")
    for (label, _), by_run in sorted(series.items()):
        values = [by_run.get(run_id) for run_id in runs]
        present = [v for v in values if v is not None]
        table.add_row(
            label,
            str(len(present)),
            sparkline(values),
            f"{present[0]:.3f}" if present else "—",
            f"{present[-1]:.3f}" if present else "—",
            f"{sum(present) / len(present):.3f}" if present else "—",
        )
    console = _console()
    title = f"case {case_id}" if case_id else "all cases"
    console.print(f"history of {title} over {len(runs)} runs" + (f" on {branch}" if branch else ""), markup=False)
    console.print(table)


@click.command("export")
@click.argument("run_ids", nargs=-1)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="File to write (default: stdout)")
@db_option
def export_command(run_ids: tuple[str, ...], out_path: str | None, db_url: str | None) -> None:
    """Export runs as JSON (the schema of `run --json`): one run → an object, several (or all) → a list."""

    store = open_history(db_url)
    runs = store.export_runs(list(run_ids) or None)
    payload: Any = runs[0].model_dump(mode="json") if len(run_ids) == 1 else [r.model_dump(mode="json") for r in runs]
    text = json.dumps(payload, indent=2, ensure_ascii=False)
    if out_path:
        Path(out_path).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@db_option
def import_command(files: tuple[str, ...], db_url: str | None) -> None:
    """Import runs from JSON files written by `run --json` or `export` (importing twice changes nothing)."""

    store = open_history(db_url)
    for file in files:
        text = read_text_file(file)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{file}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc
        items = data if isinstance(data, list) else [data]
        for index, item in enumerate(items):
            run = load_run_json(json.dumps(item), source=f"{file}[{index}]" if isinstance(data, list) else file)
            click.echo(f"imported {store.import_run(run)}")


@click.command("merge")
@click.argument("run_ids", nargs=-1)
@options_from(RecordingValues, only=("group_id",))
@click.option("--run-id", "new_run_id", help="Id of the merged run (default: time + random)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the merged run as JSON")
@db_option
def merge_command(
    run_ids: tuple[str, ...], group_id: str | None, new_run_id: str | None, json_path: str | None, db_url: str | None
) -> None:
    """Combine shard runs into one run; fails closed when a declared shard or a planned case is missing."""

    store = open_history(db_url)
    merged = store.merge_runs(
        list(run_ids) or None,
        group_id=group_id,
        new_run_id=new_run_id or make_id(),
        finalize=lambda run: finalize(run, run.cases, status="complete"),
    )
    if json_path:
        Path(json_path).write_text(render_json(merged), encoding="utf-8")
    print_run(merged, _console())
    click.echo(f"run id: {merged.run_id}")
    sys.exit(EXIT_OK if merged.passed else EXIT_FAILED)
