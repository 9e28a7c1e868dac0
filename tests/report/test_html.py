"""html.py: the self-contained page, rendered whole against a snapshot, plus structure, plot geometry and
injection checks (the page is parsed with html.parser)."""

from __future__ import annotations

from collections.abc import Callable
from html.parser import HTMLParser

from test_comparison import (
    HOSTILE,
    build_baseline_run,
    build_current_run,
    build_fail_verdict,
    build_no_baseline_verdict,
    hostile_pair,
)

from evalward.model import MetricComparison, MetricSummary
from evalward.report.html import delta_plot, render_html, summary_plot

Snapshot = Callable[[str, str], None]

# Everything the page may contain; anything else (script, img, iframe, link, a, object, …) is a failure.
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "section", "h1", "h2", "h3", "p", "dl", "dt",
    "dd", "ul", "li", "table", "tr", "th", "td", "code", "pre", "span", "strong", "details", "summary",
    "svg", "rect", "line", "circle", "div", "a",
}  # fmt: skip
VOID_TAGS = {"meta"}


class Page(HTMLParser):
    """Every start tag with its attributes, end tags, comments and text of a parsed page."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.ends: list[str] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))
        self.ends.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def tags(self) -> list[str]:
        return [tag for tag, _ in self.starts]


def fail_page() -> str:
    current = build_current_run()
    # hand calculation: book_flight 0/3 and greeting 3/3 → mean over 6 results (0·3 + 1·3)/6 = 0.5
    current.summary = {
        "tool_trajectory_avg_score": MetricSummary(
            mean=0.5, threshold=1.0, passed=False, n=6, ci_low=0.25, ci_high=0.75, pass_rate=0.5
        )
    }
    return render_html(current, verdict=build_fail_verdict(), baseline=build_baseline_run())


def test_fail_page_snapshot(snapshot: Snapshot):
    snapshot("verdict_fail.html", fail_page())


def test_page_is_self_contained_and_locked_down():
    text = fail_page()
    page = Page(text)
    assert text.startswith("<!DOCTYPE html>\n")
    metas = [attrs for tag, attrs in page.starts if tag == "meta"]
    assert {"name": "robots", "content": "noindex"} in metas
    assert {
        "http-equiv": "Content-Security-Policy",
        "content": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
    } in metas
    assert set(page.tags()) <= ALLOWED_TAGS
    # no external reference of any kind: links only within the page, and only the SVG namespace URI mentions a scheme
    for _, attrs in page.starts:
        assert not {"src", "action", "srcset"} & set(attrs)
        assert attrs.get("href", "#").startswith("#")
        assert not any(name.startswith("on") for name in attrs)
    assert text.count("://") == text.count('xmlns="http://www.w3.org/2000/svg"')
    # every element closed (meta is void)
    for tag in ALLOWED_TAGS - VOID_TAGS:
        assert page.tags().count(tag) == page.ends.count(tag), tag


def test_page_sections():
    text = fail_page()
    assert "<h2>Metrics</h2>" in text and "<h2>Gate verdict</h2>" in text and "<h2>Cases</h2>" in text
    assert '<p class="badge fail">❌ gate failed</p>' in text
    # the column is labelled from α = 0.05: a 90% two-sided interval
    assert "<th>90% interval</th>" in text
    # 6 case results in the table, 3 failing ones with details
    assert text.count("<details><summary><span class=failed>") == 3
    assert '<span class="del">- book_flight(flight_id=&quot;AF123&quot;, seat=&quot;aisle&quot;)</span>' in text
    assert "<code>seat: expected &quot;aisle&quot;, found &quot;window&quot;</code>" in text
    assert "Resources: calls 2 → 2 · tokens 150 → 270 (+120)" in text


def test_run_without_verdict_has_no_verdict_section():
    text = render_html(build_current_run())
    assert "Gate verdict" not in text
    assert "<h2>Cases</h2>" in text


def test_no_baseline_verdict_says_so():
    text = render_html(build_current_run(), verdict=build_no_baseline_verdict())
    assert "<strong>Baseline</strong>: no baseline: there was no run to compare with" in text


def test_summary_plot_geometry():
    # axis [0, 1] over 188 px starting at x = 6: mean 0.5 → 6 + 0.5·188 = 100.0; threshold 1.0 → 194.0;
    # interval 0.25 → 53.0, 0.75 → 147.0
    svg = summary_plot(MetricSummary(mean=0.5, threshold=1.0, passed=False, n=6, ci_low=0.25, ci_high=0.75))
    assert '<rect x="6.0" y="6.0" width="94.0" height="8" fill="#54aeff"/>' in svg
    assert '<line x1="53.0" y1="10.0" x2="147.0" y2="10.0"' in svg
    assert '<line x1="194.0" y1="1" x2="194.0" y2="19" stroke="#cf222e"' in svg
    assert "<title>mean 0.500, 95% interval [0.250, 0.750], threshold ≥ 1.000</title>" in svg
    # latency-like units: the axis grows to the largest value, 4.0 → 194.0, mean 2.0 → 100.0
    wide = summary_plot(MetricSummary(mean=2.0, threshold=4.0, passed=True, n=3, higher_is_better=False))
    assert 'width="94.0"' in wide and 'x1="194.0"' in wide


def test_delta_plot_geometry():
    # reach = max(|Δ̂|=0.1, |L|=0.2, |U|=0.0, δ_ni=0.05, δ_block=0.02) · 1.15 = 0.23, axis [−0.23, 0.23]:
    # Δ̂ = −0.1 → 6 + (0.13/0.46)·188 = 59.1; 0 → 100.0; −δ_block = −0.02 → 6 + 0.21/0.46·188 = 91.8;
    # −δ_ni = −0.05 → 6 + 0.18/0.46·188 = 79.6
    metric = MetricComparison(
        metric="m", gated=True, baseline_mean=0.9, current_mean=0.8, delta=-0.1, ci_low=-0.2, ci_high=0.0,
        n_cases=20, k_baseline=1, k_current=1, delta_block=0.02, delta_ni=0.05, verdict="inconclusive",
    )  # fmt: skip
    svg = delta_plot(metric, 0.05)
    assert '<circle cx="59.1"' in svg
    assert '<line x1="100.0" y1="1"' in svg
    assert '<line x1="91.8" y1="1"' in svg
    assert '<line x1="79.6" y1="1"' in svg
    # lower is better: the margins move to the right of 0 (+0.02 → 108.2)
    assert '<line x1="108.2" y1="1"' in delta_plot(metric.model_copy(update={"higher_is_better": False}), 0.05)


def test_html_injection_is_neutralised():
    cur, base, verdict = hostile_pair()
    cur.warnings = [HOSTILE]
    cur.summary = {f"metric {HOSTILE}": MetricSummary(mean=0.1, threshold=0.5, passed=False, n=1)}
    cur.run_id = f"run {HOSTILE}"
    text = render_html(cur, verdict=verdict, baseline=base, title=HOSTILE)
    page = Page(text)
    assert set(page.tags()) <= ALLOWED_TAGS
    assert "script" not in page.tags() and "img" not in page.tags()
    for _, attrs in page.starts:
        assert not any(name.startswith("on") for name in attrs)
        assert "src" not in attrs
    # the hostile </details> closes nothing: 3 failing repetitions + the arithmetic + the case labels + the
    # unchanged cases of the case-by-case view
    assert page.tags().count("details") == page.ends.count("details") == 6
    assert page.comments == []
    # payloads appear only escaped, and the text survives as text
    for payload in ("<script", "<img", "<!--", "onerror=alert(1)>"):
        assert payload not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert any("<script>alert(1)</script>" in chunk for chunk in page.text)
    assert "\u202e" not in text and "\u2066" not in text


def test_large_runs_cap_the_case_sections(monkeypatch):
    import evalward.report.html as html_module

    monkeypatch.setattr(html_module, "MAX_CASE_SECTIONS", 2)
    text = render_html(build_current_run())
    assert text.count("<details><summary><span class=failed>") == 2
    assert "1 more case results that did not pass are not shown here" in text
