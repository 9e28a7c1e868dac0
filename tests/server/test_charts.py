"""The dashboard's charts (vl-convert SVG): a point per run linking to it on this server, the threshold drawn,
scores on [0, 1] and other quantities on their own scale, and untrusted names inert inside the SVG."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from tests.fakes.hostile_html import PAYLOADS

from evalward._server.charts import trend_chart
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
