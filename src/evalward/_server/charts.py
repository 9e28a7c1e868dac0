"""The dashboard's charts: Vega-Lite specifications rendered to SVG on the server by `vl-convert-python` (a declared
dependency of the `server` extra), so pages stay script-free under a `'self'` Content-Security-Policy.

A metric's trend over a branch's complete runs, oldest left: the x axis names each run's short commit, the line is
the run's mean with a point per run linking to its page (Vega-Lite's `href` encoding becomes an SVG link), the band
its 95% interval, and a dashed rule the metric's threshold. Scores of a gated metric are drawn on [0, 1] so charts
compare at a glance; anything else (seconds, counts, dollars) on its own zero-based scale. The SVG carries no
tooltips, so each chart is followed by its values as a table (`dashboard/repo.html`).

Rendering costs 0.1–0.25 s a chart (50 runs), 0.6 s for the first in a process; charts are kept by their
specification (`render_svg`'s cache), so a page is drawn anew only when a run was added.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from evalward.store.history import TrendPoint

WIDTH, HEIGHT = 380, 150
LINE, BAND, THRESHOLD = "#0969da", "#0969da", "#cf222e"
GATE_COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "inconclusive": "#9a6700",
    "error": "#8250df",
    "not gated": "#8c959f",
}
"""A point's colour on the pass-share chart: the gate's verdict on its run (the dashboard's verdict colours)."""
CACHED_CHARTS = 64
"""Charts kept drawn (~25–170 KB of SVG each)."""
VEGA_BASE_URL = "https://vega.github.io/vega-datasets/"
"""The base URL vl-convert resolves relative links against (its default data loader's)."""


@dataclass(frozen=True)
class TrendChart:
    """One metric's trend: its SVG (empty when no run gave it a value) and the rows of its value table."""

    metric: str
    gated: bool
    runs: int
    """Runs on the branch, with a value or not."""
    svg: Markup = field(default_factory=Markup)
    rows: list[dict[str, Any]] = field(default_factory=list)
    """{commit, run_id, mean, ci_low, ci_high, threshold, href, gate, date} per run with a value, oldest first."""

    @property
    def count(self) -> int:
        """Runs with a value (drawn)."""
        return len(self.rows)


def trend_chart(
    metric: str,
    points: Sequence[TrendPoint],
    *,
    unit_scale: bool = False,
    verdicts: Mapping[str, str] | None = None,
) -> TrendChart:
    """`metric`'s chart over `points` (oldest first); `unit_scale` draws it on [0, 1] whatever its threshold;
    `verdicts` ({run id: gate outcome}) colours each point by the gate's verdict on its run."""
    scored = [p for p in points if p.mean is not None]
    gated = bool(points) and points[-1].threshold is not None
    if not scored:
        return TrendChart(metric, gated, len(points))
    rows = [
        {
            "commit": (p.commit or p.run_id)[:7],
            "run_id": p.run_id,
            "mean": p.mean,
            "ci_low": p.ci_low if p.ci_low is not None else p.mean,
            "ci_high": p.ci_high if p.ci_high is not None else p.mean,
            "threshold": p.threshold,
            "href": "runs/" + quote(p.run_id, safe=""),  # relative: see `render_svg`
            "gate": (verdicts or {}).get(p.run_id, "not gated"),
            "date": p.started_at.strftime("%Y-%m-%d %H:%M") if p.started_at else "",
        }
        for p in scored
    ]
    values = [float(v) for p in scored for v in (p.mean, p.ci_low, p.ci_high) if v is not None]
    unit_scale = unit_scale or (gated and min(values) >= 0.0 and max(values) <= 1.0)
    spec = trend_spec(metric, rows, unit_scale, by_verdict=verdicts is not None)
    return TrendChart(metric, gated, len(points), render_svg(json.dumps(spec)), rows)


def share_chart(title: str, runs: Sequence[Any], verdicts: Mapping[str, str]) -> TrendChart:
    """The share of case results that passed in each run of `runs` (`RunRow`s, oldest first), on [0, 1], each
    point coloured by the gate's verdict on its run (`verdicts`: {run id: outcome})."""
    points = _points(runs, lambda r: r.passes / r.recorded if r.recorded else None, size=lambda r: r.recorded)
    return trend_chart(title, points, unit_scale=True, verdicts=verdicts)


def case_chart(title: str, points: Sequence[Any]) -> TrendChart:
    """One case's share of passing repetitions in each run of `points` (`CaseRunPoint`s, oldest first), on [0, 1]."""
    shares = _points(points, lambda p: p.share if p.results else None, size=lambda p: p.results)
    return trend_chart(title, shares, unit_scale=True)


def cost_chart(title: str, runs: Sequence[Any], costs: Mapping[str, float]) -> TrendChart:
    """Each run's mean cost per case result in US dollars (`costs`: {run id: cost}, from the case rows), on its
    own zero-based scale; runs whose agent reported no cost are left out."""
    return trend_chart(title, _points(runs, lambda r: costs.get(r.run_id), size=lambda r: r.recorded))


def _points(
    runs: Sequence[Any], value: Callable[[Any], float | None], *, size: Callable[[Any], int]
) -> list[TrendPoint]:
    """A point per item of `runs` (anything with run_id, commit and started_at, oldest first) that `value` gives a
    number, with no interval; `size` is the number of results behind it."""
    points = []
    for run in runs:
        mean = value(run)
        if mean is not None:
            points.append(TrendPoint(run_id=run.run_id, commit=run.commit, started_at=run.started_at, mean=mean,
                                     ci_low=None, ci_high=None, n=size(run)))  # fmt: skip
    return points


def trend_spec(
    metric: str, rows: list[dict[str, Any]], unit_scale: bool, *, by_verdict: bool = False
) -> dict[str, Any]:
    """The Vega-Lite specification of one metric's trend (see the module docstring); `by_verdict` colours the
    points by the rows' `gate` field, with a legend."""
    # Two runs of one commit are two points: the x field is the run's position, labelled with its commit.
    data = [{**row, "position": index} for index, row in enumerate(rows)]
    labels = {str(index): row["commit"] for index, row in enumerate(rows)}
    x = {
        "field": "position",
        "type": "ordinal",
        "title": "commit (oldest left)",
        "axis": {"labelExpr": f"{json.dumps(labels)}[datum.value] || ''", "labelAngle": -45, "labelOverlap": True},
    }
    verdict_colour = {
        "field": "gate",
        "type": "nominal",
        "title": "gate",
        "scale": {"domain": list(GATE_COLOURS), "range": list(GATE_COLOURS.values())},
        "legend": {"orient": "bottom", "direction": "horizontal"},
    }
    scale: dict[str, Any] = {"domain": [0, 1]} if unit_scale else {"zero": True, "nice": True}
    y = {"type": "quantitative", "scale": scale, "title": metric}
    layers: list[dict[str, Any]] = [
        {
            "mark": {"type": "area", "color": BAND, "opacity": 0.15},
            "encoding": {"x": x, "y": {**y, "field": "ci_low"}, "y2": {"field": "ci_high"}},
        },
        {"mark": {"type": "line", "color": LINE}, "encoding": {"x": x, "y": {**y, "field": "mean"}}},
        {
            # The points are the links (on the line itself a link would go to the first run's page).
            "mark": {"type": "point", "filled": True, "color": LINE, "size": 40, "cursor": "pointer"},
            "encoding": {
                "x": x,
                "y": {**y, "field": "mean"},
                "href": {"field": "href", "type": "nominal"},
                **({"color": verdict_colour} if by_verdict else {}),
            },
        },
    ]
    threshold = rows[-1]["threshold"]
    if threshold is not None:
        layers.append(
            {
                "mark": {"type": "rule", "color": THRESHOLD, "strokeDash": [4, 4]},
                "encoding": {"y": {"datum": threshold}},
            }
        )
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "width": WIDTH,
        "height": HEIGHT,
        "background": "transparent",
        "description": f"{metric} over {len(rows)} runs",
        "data": {"values": data},
        "layer": layers,
        "config": {"axis": {"labelFontSize": 10, "titleFontSize": 11}},
    }


@functools.lru_cache(maxsize=CACHED_CHARTS)
def render_svg(spec_json: str) -> Markup:
    """The SVG of a Vega-Lite specification (JSON text: the cache's key). vl-convert writes the SVG, escaping the
    data's text itself; the markup is inserted as it is."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(json.loads(spec_json))
    # vl-convert resolves a link against its data loader's base URL; the points' links are written relative to it
    # (`runs/ID`) and made this server's own (`/runs/ID`) here.
    svg = svg.replace(f'xlink:href="{VEGA_BASE_URL}', 'xlink:href="/')
    return Markup(svg.replace("<svg ", "<svg class=chart role=img ", 1))
