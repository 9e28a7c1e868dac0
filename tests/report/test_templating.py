"""templating.py: the one environment both kinds of HTML page use, the value rule it applies to everything it
prints, hostile text through the whole report, and a check that no template opts out of escaping."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import jinja2
import pytest
from jinja2 import nodes
from markupsafe import Markup
from test_comparison import build_baseline_run, build_current_run, build_fail_verdict, build_result, build_run
from test_html import ALLOWED_TAGS, Page
from tests.fakes.hostile_html import ESCAPED, HOSTILE, assert_neutralised

from evalward.report.html import render_html
from evalward.report.templating import environment, html_text, render

TEMPLATES = Path(str(files("evalward.report") / "templates"))
GITHUB_TOKEN = "ghp_" + "a" * 36

MARKUP_FILTERS = {"safe", "e", "escape", "forceescape", "tojson", "urlize", "xmlattr"}
"""Filters whose result is Markup: it would skip the environment's finalize (redaction and character
stripping) or, for `safe`, the escaping itself."""
ALLOWED_MARKUP_FILTERS: set[tuple[str, str]] = set()
"""(template, filter) pairs allowed to use one of `MARKUP_FILTERS`: none."""


# ------------------------------------------------------------------------------------------ the value rule


def test_html_text_escapes_quotes_as_before_and_strips_unsafe_characters() -> None:
    assert html_text("<a href=\"x\">'&'</a>\n\u202e") == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt;\n"
    assert isinstance(html_text("x"), Markup)


def test_html_text_redacts_secrets() -> None:
    assert GITHUB_TOKEN not in html_text(f"token {GITHUB_TOKEN}")
    assert "[redacted" in html_text(f"token {GITHUB_TOKEN}")


def test_html_text_keeps_markup_and_prints_other_values_as_text() -> None:
    built = Markup("<b>ours</b>")
    assert html_text(built) is built
    assert html_text(3) == "3" and html_text(None) == "None"


# ------------------------------------------------------------------------------------------ the environment


def test_one_environment_autoescapes_and_refuses_undefined_names() -> None:
    env = environment()
    assert environment() is env
    assert env.autoescape("report.html") is True  # type: ignore[operator]
    assert env.autoescape(None) is True  # type: ignore[operator]  # string templates too
    assert env.from_string("{{ x }}").render(x="<i>") == "&lt;i&gt;"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ missing }}").render()
    with pytest.raises(jinja2.UndefinedError):
        render("dashboard/error.html", status=404)  # no `message`


def test_the_dashboard_renders_with_the_same_environment() -> None:
    pytest.importorskip("starlette")
    from evalward._server.dashboard import templates

    assert templates().env is environment()


def test_a_value_is_never_evaluated_as_a_template() -> None:
    assert environment().from_string("<p>{{ x }}</p>").render(x="{{ 7*7 }}") == "<p>{{ 7*7 }}</p>"


# ------------------------------------------------------------------------------------------ no opt-outs


def template_sources() -> dict[str, str]:
    found = {str(p.relative_to(TEMPLATES)): p.read_text(encoding="utf-8") for p in TEMPLATES.rglob("*.html")}
    assert {"report.html", "macros.html", "dashboard/base.html", "dashboard/run.html"} <= set(found)
    return found


def test_no_template_marks_values_safe_or_turns_autoescape_off() -> None:
    used: set[tuple[str, str]] = set()
    for name, source in template_sources().items():
        tree = environment().parse(source)
        used |= {(name, f.name) for f in tree.find_all(nodes.Filter) if f.name in MARKUP_FILTERS}
        assert not list(tree.find_all(nodes.ScopedEvalContextModifier)), f"{name}: an {{% autoescape %}} block"
        assert "Markup" not in source, name
        # the same checks by text, in case a filter is spelt in a way the parser accepts but find_all misses
        assert not re.search(r"\|\s*safe\b", source), name
    assert used == ALLOWED_MARKUP_FILTERS


# ------------------------------------------------------------------------------------------ hostile report


def hostile_report() -> str:
    """A failing case whose id, query, tool-call argument and responses carry every payload."""
    current = build_current_run()
    case = build_result(HOSTILE, 0, seat=HOSTILE, response=HOSTILE, must_pass=True)
    turn = case.invocations[0].model_copy(update={"query": HOSTILE, "expected_response": HOSTILE})
    current = build_run(
        "run-pr-7", [case.model_copy(update={"invocations": [turn]}), *current.cases], commit="c" * 40, branch="b"
    )
    current.warnings = [HOSTILE, f"leaked {GITHUB_TOKEN}"]
    return render_html(current, verdict=build_fail_verdict(), baseline=build_baseline_run(), title=HOSTILE)


def test_hostile_text_in_the_report_is_escaped_everywhere() -> None:
    text = hostile_report()
    assert_neutralised(text)
    assert set(Page(text).tags()) <= ALLOWED_TAGS
    # in the title, the case table, the summary line, the tool-call diff, the argument diff and the responses
    assert text.count(ESCAPED["script"]) >= 7
    assert f"seat=&quot;{ESCAPED['script']}" in text
    assert GITHUB_TOKEN not in text
