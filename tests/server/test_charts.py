"""The dashboard's charts (vl-convert SVG): a point per run linking to it on this server, the threshold drawn,
scores on [0, 1] and other quantities on their own scale, and untrusted names inert inside the SVG."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from tests.fakes.hostile_html import PAYLOADS

from evalward._server.charts import GATE_COLOURS, cost_chart, share_chart, trend_chart
from evalward.store.history import TrendPoint


def points(
    means: list[float], *, threshold: float | None, run_id: str = "run", commit: str = "abcdef0"
) -> list[TrendPoint]:
    return [
        TrendPoint(
            run_id=f"{run_id}-{i}",
            commit=f"{commit}{i}",
            started_at=datetime(2026, 1, 1, tzinfo=UTC),
            mean=m,
            ci_low=m * 0.9,
            ci_high=m * 1.1,
            n=10,
            threshold=threshold,
        )
        for i, m in enumerate(means)
    ]


def test_each_run_is_a_point_linking_to_its_page_with_the_threshold_drawn() -> None:
    chart = trend_chart("tool_trajectory_avg_score", points([0.9, 0.8, 0.95], threshold=0.8))
    svg = str(chart.svg)
    assert svg.startswith("<svg class=chart role=img ")
    assert [svg.count(f'<a xlink:href="/runs/run-{i}"') for i in range(3)] == [1, 1, 1]
    assert "vega.github.io" not in svg
    assert 'stroke-dasharray="4,4"' in svg  # the threshold's rule
    assert chart.count == 3 and chart.gated and chart.rows[-1]["threshold"] == 0.8


def test_a_gated_score_is_drawn_on_zero_to_one_and_seconds_on_their_own_scale() -> None:
    score = str(trend_chart("response_match_score", points([0.5, 0.6], threshold=0.4)).svg)
    seconds = str(trend_chart("invocation_duration_v1", points([0.002, 0.003], threshold=None)).svg)
    assert max(float(tick) for tick in re.findall(r">(\d+\.\d+)<", score)) == 1.0  # the y axis ends at 1
    assert max(float(tick) for tick in re.findall(r">(\d+\.\d+)<", seconds)) < 0.01  # milliseconds fill the chart


def test_a_metric_no_run_valued_has_no_svg() -> None:
    chart = trend_chart("token_usage_v1", [p.model_copy(update={"mean": None}) for p in points([1.0], threshold=None)])
    assert chart.count == 0 and str(chart.svg) == ""


def test_untrusted_names_stay_text_inside_the_svg() -> None:
    hostile = PAYLOADS["script"] + PAYLOADS["attribute break-out"]
    svg = str(trend_chart(hostile, points([0.5], threshold=None, run_id=hostile, commit=hostile)).svg)
    assert "<script" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg  # the metric's name in the axis title, escaped by vl-convert


def run_rows(count: int) -> list[Any]:
    return [
        SimpleNamespace(
            run_id=f"run-{i}",
            commit=f"c{i:06d}",
            started_at=datetime(2026, 1, 1 + i, tzinfo=UTC),
            passes=8,
            recorded=10,
        )
        for i in range(count)
    ]


def test_the_pass_share_colours_each_point_by_the_gates_verdict() -> None:
    chart = share_chart("share passed", run_rows(3), {"run-0": "pass", "run-1": "fail"})
    svg = str(chart.svg)
    assert [row["gate"] for row in chart.rows] == ["pass", "fail", "not gated"]
    for outcome in ("pass", "fail", "not gated"):
        assert f'fill="{GATE_COLOURS[outcome]}"' in svg
    assert ">gate</text>" in svg  # the legend's title
    assert chart.rows[0]["date"] == "2026-01-01 00:00"


def test_cost_is_drawn_for_the_runs_that_reported_one_on_its_own_scale() -> None:
    chart = cost_chart("cost per case result (USD)", run_rows(3), {"run-0": 0.0012, "run-2": 0.0031})
    assert [row["run_id"] for row in chart.rows] == ["run-0", "run-2"] and chart.runs == 2
    assert not chart.gated
    assert "for a linear scale with values from 0.0000 to 0.0035" in str(chart.svg)  # dollars from zero, not 0–1
    assert cost_chart("cost", run_rows(2), {}).count == 0
