"""Hostile text for HTML pages (the static report and the dashboard), and the check that a page shows it only
escaped: a script, an attribute break-out, template syntax (which must print, never run) and a `</textarea>`."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import quote

PAYLOADS = {
    "script": "<script>alert(1)</script>",
    "attribute break-out": '"><img src=x onerror=alert(1)>',
    "template injection": "{{ 7*7 }}{% if true %}evaluated{% endif %}",
    "textarea close": "</textarea><u>underlined</u>",
}
ESCAPED = {
    "script": "&lt;script&gt;alert(1)&lt;/script&gt;",
    "attribute break-out": "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;",
    "template injection": "{{ 7*7 }}{% if true %}evaluated{% endif %}",
    "textarea close": "&lt;/textarea&gt;&lt;u&gt;underlined&lt;/u&gt;",
}
"""Each payload as the page must carry it (quotes as `&quot;`, the entity Python's html.escape writes)."""
HOSTILE = " ".join(PAYLOADS.values())
"""All payloads in one string, for fields that take any text."""
INJECTED_TAGS = {"script", "img", "textarea", "u"}


class _Page(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_neutralised(text: str) -> None:
    """Every payload is in the page only escaped, no tag or event handler came from it, and each reads back
    (once parsed) as the very text it was."""
    for name in PAYLOADS:
        assert ESCAPED[name] in text, name
    for raw in ("<script", "<img", "</textarea", "<u>"):
        assert raw not in text, raw
    # template syntax in a value is printed, never run: each trace of it sits inside the literal payload, or
    # inside a link's percent-encoded path (a case page's address carries the case id)
    payload = PAYLOADS["template injection"]
    assert text.count("evaluated") == text.count(payload) + text.count(quote(payload, safe="")) > 0
    page = _Page(text)
    assert not INJECTED_TAGS & {tag for tag, _ in page.starts}
    for _, attrs in page.starts:
        assert not any(name.startswith("on") for name in attrs), attrs
    for name, payload in PAYLOADS.items():
        assert any(payload in chunk for chunk in page.text), name
