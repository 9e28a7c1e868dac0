"""The one Jinja environment every HTML page is rendered with: the static report (`report.html`) and the
dashboard of `evalward serve` (through Starlette's `Jinja2Templates` over this same environment).

Templates live in `evalward/report/templates/` (package data): `report.html`, `dashboard/*.html`, and
`macros.html` with the trajectory diff both kinds of page draw and the report's SVG plots.

Escaping is the environment's, not a call site's:
- `autoescape` is on (`select_autoescape`: `.html` templates, and any other name or string template too), so
  every `{{ … }}` is escaped unless it is `Markup`; only macro output is `Markup`, and no template may mark
  untrusted data safe (`|safe` is refused by tests/report/test_templating.py).
- `finalize` is what an escaped value becomes: secrets redacted, line breaks normalised, control, bidi and
  XML-illegal characters dropped (`escape.strip_unsafe_chars`), then `& < > " '` escaped as Python's
  `html.escape` writes them (`&quot;`, `&#x27;`), so the report reads byte for byte as before the templates.
- `StrictUndefined`: a misspelt name fails the render instead of printing nothing.

jinja2 is imported on the first render, not with this module, so a run that writes no HTML never loads it.
"""

from __future__ import annotations

import functools
import html
from typing import TYPE_CHECKING, Any

from evalward.report.escape import strip_unsafe_chars

if TYPE_CHECKING:
    import jinja2

TEMPLATE_PACKAGE = "evalward.report"
TEMPLATE_FOLDER = "templates"


def html_text(value: Any) -> Any:
    """The environment's `finalize`: what one `{{ value }}` prints, as `Markup` (so autoescape leaves it).

    Markup (a macro's output) passes through; anything else is shown as `str(value)`, cleaned by
    `strip_unsafe_chars` (redaction included) and escaped with quotes.
    """
    from markupsafe import Markup

    if hasattr(value, "__html__"):
        return value
    if isinstance(value, int | float):  # a count or a number: nothing to redact, strip or escape
        return Markup(value)
    return Markup(html.escape(strip_unsafe_chars(str(value)), quote=True))


@functools.cache
def environment() -> jinja2.Environment:
    """The shared environment (built once per process)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader(TEMPLATE_PACKAGE, TEMPLATE_FOLDER),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined,
        finalize=html_text,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render(name: str, /, **context: Any) -> str:
    """Template `name` rendered with `context`."""
    return environment().get_template(name).render(**context)
