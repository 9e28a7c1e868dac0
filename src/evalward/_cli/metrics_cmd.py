"""`evalward metrics`: the metrics evalward can score, with what each computes."""

from __future__ import annotations

import click

from evalward.metrics.judge.spec import JUDGED_METRICS
from evalward.metrics.registry import (
    JUDGE_METRICS,
    STEPWISE_METRICS,
    PluginMetricError,
    get_metric,
    known_metric_names,
    plugin_metric_names,
)
from evalward.metrics.stepwise import DESCRIPTIONS as STEP_DESCRIPTIONS


@click.command("metrics")
def metrics_command() -> None:
    """List every metric name usable in test_config.json, native files and --metric."""

    for name in known_metric_names():
        metric = get_metric(name)
        summary = (metric.description or (type(metric).__doc__ or "")).strip().splitlines()
        direction = "" if metric.higher_is_better else " (lower is better)"
        click.echo(f"{name:32} [{metric.scope}]{direction} {summary[0] if summary else ''}")

    for name in sorted(JUDGE_METRICS):
        what = (
            "scored by a judge model (--judge-model)"
            if name in JUDGED_METRICS
            else "not supported (needs Vertex AI; see docs/scoring.md for stand-ins)"
        )
        click.echo(f"{name:32} [judge] {what}")

    for name in sorted(STEPWISE_METRICS - set(known_metric_names())):
        click.echo(f"{name:32} [stepwise] {STEP_DESCRIPTIONS[name]}")

    for name in plugin_metric_names():
        try:
            metric = get_metric(name)
        except PluginMetricError as exc:
            click.echo(f"{name:32} [package] cannot be loaded: {exc}")
            continue
        summary = (metric.description or (type(metric).__doc__ or "")).strip().splitlines()
        click.echo(f"{name:32} [package, {metric.scope}] {summary[0] if summary else ''}")
