"""Every escape for untrusted text (agent output, case ids, queries, file contents), in one place.

Each function names the context its result is safe in; use the one for the place the text lands:

| context                                        | function                          |
| ---------------------------------------------- | --------------------------------- |
| markdown outside code (table cell, paragraph)  | `md_inline`                       |
| raw HTML inside markdown (`<summary>`)         | `html_inline`                     |
| markdown fenced code block / code span         | `md_code_block` / `md_code_span`  |
| an HTML page (report, dashboard)               | `templating.py`'s environment (automatic)|
| a CI log (terminal output)                     | `workflow_command_safe`           |
| a workflow-command annotation                  | `annotation_message` / `_property`|
| JUnit XML text and attributes                  | `xml_text`                        |

HTML pages are Jinja templates: the shared environment (`templating.py`) escapes every value it prints, after
`strip_unsafe_chars`, so no template or caller escapes by hand.

Facts these rely on (see docs/github.md §5, §6, §14):
- GitHub links `@user` and `#123`/`owner/repo#123`/`GH-123` in rendered text outside code; backslash
  and `&#64;` do not stop a mention, a zero-width space after `@` (or `#`) does.
- The sticky comment is found by an HTML-comment marker (`<!-- evalward:… -->`), so untrusted text must
  never contain `<!--` verbatim — not even inside a code block, where the raw body still carries it.
- The Actions runner runs a line as a command when, after leading whitespace, it starts with `::`
  (`TryParseV2`), and also when `##[` appears *anywhere* in the line (legacy `TryParse`).
"""

from __future__ import annotations

import re

from evalward.redact import redact

ZWSP = "\u200b"
"""Zero-width space: breaks mentions, references, markers and workflow commands without visible change."""

ELLIPSIS = "…"

_LINE_BREAKS = re.compile(r"\r\n|[\r\u2028\u2029\x85]")
# C0 controls except tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates and marks,
# lone surrogates and the two non-characters XML 1.0 forbids.
_UNSAFE_CHARS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)
_WHITESPACE_RUN = re.compile(r"\s+")
_MENTION = re.compile(r"@(?!\u200b)")
_ISSUE_REF = re.compile(r"#(?=\d)")
_GH_REF = re.compile(r"\b(GH-)(?=\d)", re.IGNORECASE)
# GitHub turns a full issue or pull request URL into a cross-reference on the target as well; a
# zero-width space inside the host keeps the text readable but no longer a github.com link.
_GITHUB_HOST = re.compile(r"(github)(\.com)", re.IGNORECASE)
_HTML_COMMENT_OPEN = "<!--"
_BROKEN_COMMENT_OPEN = "<" + ZWSP + "!--"
_BACKTICK_RUN = re.compile(r"`+")
_LANG_UNSAFE = re.compile(r"[^A-Za-z0-9_+.-]")
_COLON_PAIR = re.compile(r":(?=:)")
_LEGACY_COMMAND = "##["

# Characters with a markdown meaning outside code; `&`, `<` and `>` become entities, the rest a
# backslash escape (GFM honours `\|` inside table cells).
_MD_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "!": "\\!",
    "|": "\\|",
    "~": "\\~",
}
_MD_TABLE = str.maketrans(_MD_ESCAPES)


def strip_unsafe_chars(text: str) -> str:
    """Secrets redacted (`evalward.redact`), line breaks normalised to `\\n`, and control characters, bidi
    controls and XML-illegal code points dropped.

    Every escape below starts here, so no renderer can show a secret: redaction comes before any
    escaping could split one (`github_pat_…` becomes `github\\_pat\\_…` in markdown). Tab and newline survive. Bidi overrides (U+202A–202E, U+2066–2069, U+200E/F, U+061C) are removed
    because they make a reviewer read text in a different order than it is stored ("Trojan Source").
    """
    return _UNSAFE_CHARS.sub("", _LINE_BREAKS.sub("\n", redact(text)))


def truncate(text: str, max_len: int) -> str:
    """`text` cut to at most `max_len` characters, the last being `…` when anything was cut."""
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if len(text) <= max_len:
        return text
    return text[: max_len - 1].rstrip() + ELLIPSIS


def _one_line(text: str, max_len: int | None) -> str:
    flat = _WHITESPACE_RUN.sub(" ", strip_unsafe_chars(text)).strip()
    return flat if max_len is None else truncate(flat, max_len)


def _break_commands(text: str) -> str:
    text = _COLON_PAIR.sub(":" + ZWSP, text)
    return text.replace(_LEGACY_COMMAND, "##" + ZWSP + "[")


def neutralise_references(text: str) -> str:
    """Break @-mentions, `#123`/`owner/repo#123`/`GH-123` references, github.com URLs (cross-reference
    backlinks) and `<!--` with a zero-width space."""
    text = _MENTION.sub("@" + ZWSP, text)
    text = _GITHUB_HOST.sub(lambda m: m.group(1) + ZWSP + m.group(2), text)
    text = _ISSUE_REF.sub("#" + ZWSP, text)
    text = _GH_REF.sub(lambda m: m.group(1) + ZWSP, text)
    return text.replace(_HTML_COMMENT_OPEN, _BROKEN_COMMENT_OPEN)


def md_inline(text: str, *, max_len: int = 200) -> str:
    """Untrusted text for markdown outside code: one line, no markup, no mentions or references.

    Steps: strip unsafe characters, collapse whitespace (newlines included) to single spaces, cut to
    `max_len` visible characters (before escaping, so an entity is never cut in half), escape every
    character with a markdown or HTML meaning, then neutralise mentions, references and workflow
    commands (reports get printed to CI logs). `<` becomes
    `&lt;`, so neither tags nor a `<!--` marker can survive.
    """
    return neutralise_references(_break_commands(_one_line(text, max_len).translate(_MD_TABLE)))


def html_inline(text: str, *, max_len: int = 200) -> str:
    """Untrusted text for raw HTML inside markdown (e.g. a `<summary>` line, where markdown is not parsed).

    One line, cut to `max_len`, HTML-escaped (quotes too), mentions and references neutralised: GitHub
    links mentions in rendered HTML text as well.
    """
    import html  # here: its entity tables cost every terminal report ~1 ms to import

    return neutralise_references(_break_commands(html.escape(_one_line(text, max_len), quote=True)))


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)


def md_code_block(text: str, lang: str = "", *, max_len: int | None = None) -> str:
    """A fenced code block showing `text` literally.

    The fence is max(3, n+1) backticks where n is the longest backtick run in `text`, so no line of the
    content can close it; inside the block `</details>`, `<img>`, `@user` and `#1` are inert. `<!--` is
    still broken with a zero-width space, because the marker search reads the raw body, and so are
    workflow commands, because markdown reports are often `cat` to a CI log. `lang` keeps
    only `[A-Za-z0-9_+.-]`. With `max_len`, longer text is cut and a last line says how long it was.
    """
    body = _break_commands(strip_unsafe_chars(text).replace(_HTML_COMMENT_OPEN, _BROKEN_COMMENT_OPEN))
    if max_len is not None and len(body) > max_len:
        body = f"{body[:max_len].rstrip()}\n{ELLIPSIS} (cut at {max_len:,} of {len(body):,} characters)"
    if body.endswith("\n"):
        body = body[:-1]
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    return f"{fence}{_LANG_UNSAFE.sub('', lang)}\n{body}\n{fence}"


def md_code_span(text: str, *, max_len: int = 200, in_table: bool = False) -> str:
    """An inline code span showing `text` literally (one line, cut to `max_len`).

    The delimiter is one backtick longer than the longest run inside; a space pads content that starts
    or ends with a backtick (CommonMark strips exactly one such space each side). In a GFM table cell
    `|` must still be written `\\|` even inside code, hence `in_table`.
    """
    body = _break_commands(_one_line(text, max_len).replace(_HTML_COMMENT_OPEN, _BROKEN_COMMENT_OPEN))
    if in_table:
        body = body.replace("|", "\\|")
    if not body:
        return "` `"
    delimiter = "`" * (_longest_backtick_run(body) + 1)
    if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ")):
        body = f" {body} "
    return f"{delimiter}{body}{delimiter}"


def workflow_command_safe(text: str) -> str:
    """Text that cannot run a GitHub Actions workflow command when printed to a CI log.

    Every `::` gets a zero-width space between its colons (not only at line starts: a terminal may wrap
    or fold a long line anywhere, putting a `::` first), and every `##[` becomes `##\\u200b[` (the legacy
    parser matches it anywhere in a line). Unsafe characters are stripped; newlines are kept.
    """
    return _break_commands(strip_unsafe_chars(text))


def annotation_message(text: str) -> str:
    """The message part of `::error …::MESSAGE`: secrets redacted, then `%`→`%25`, `\\r`→`%0D`, `\\n`→`%0A`
    (actions/toolkit)."""
    text = redact(text)
    return _UNSAFE_CHARS.sub("", text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def annotation_property(text: str) -> str:
    """A property value of a workflow command (`file=`, `title=`): as a message, plus `:`→`%3A`, `,`→`%2C`."""
    return annotation_message(text).replace(":", "%3A").replace(",", "%2C")


def xml_text(text: str, *, max_len: int | None = None) -> str:
    """Untrusted text for JUnit XML: legal XML 1.0 characters only, no workflow commands, no mentions.

    JUnit files are re-published by CI reporters into logs and PR comments, so the log and mention rules
    apply too. XML escaping itself (`&`, `<`) is left to the serializer.
    """
    text = workflow_command_safe(text)
    if max_len is not None:
        text = truncate(text, max_len)
    return neutralise_references(text)
