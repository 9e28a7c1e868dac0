"""escape.py: each context's escaper, asserted on exact outputs."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from evalward.report.escape import (
    ZWSP,
    annotation_message,
    annotation_property,
    html_inline,
    md_code_block,
    md_code_span,
    md_inline,
    strip_unsafe_chars,
    truncate,
    workflow_command_safe,
    xml_text,
)

GFM = MarkdownIt("commonmark").enable("table")


def test_strip_unsafe_chars_drops_controls_and_bidi_keeps_tab_newline():
    text = "a\x00b\x1b[0m\tc\r\nd\re\u202ef\u2066g\u200eh\x85i\ud800j\ufffe"
    assert strip_unsafe_chars(text) == "ab[0m\tc\nd\nefgh\nij"


def test_md_inline_escapes_markdown_and_html():
    assert md_inline("a & b <i>x</i> *y* _z_ `c` [l](u) ![i](p) | \\ ~s~") == (
        "a &amp; b &lt;i&gt;x&lt;/i&gt; \\*y\\* \\_z\\_ \\`c\\` \\[l\\](u) \\!\\[i\\](p) \\| \\\\ \\~s\\~"
    )


def test_md_inline_neutralises_mentions_refs_and_markers():
    out = md_inline("@octocat @org/team #12 owner/repo#3 GH-4 gh-5 <!-- evalward:x -->")
    assert out == (
        f"@{ZWSP}octocat @{ZWSP}org/team #{ZWSP}12 owner/repo#{ZWSP}3 GH-{ZWSP}4 gh-{ZWSP}5 &lt;\\!-- evalward:x --&gt;"
    )
    # "#" not followed by a digit (a heading-like hash, `#tag`) is left alone
    assert md_inline("#tag # 1") == "#tag # 1"


def test_md_inline_collapses_newlines_and_truncates_visible_text():
    assert md_inline("a\n\n b\tc  ") == "a b c"
    # 10 visible characters allowed: 9 kept + "…"; the cut happens before escaping, so "&" stays whole
    assert md_inline("abcdefgh&ijklmn", max_len=10) == "abcdefgh&amp;…"
    assert md_inline("short", max_len=10) == "short"


def test_md_inline_breaks_workflow_commands():
    # `[` is backslash-escaped first, so `##\[` can no longer match the legacy `##[` prefix either
    assert md_inline("::set-output name=x::y ##[error]") == f":{ZWSP}:set-output name=x:{ZWSP}:y ##\\[error\\]"


def test_md_inline_renders_as_plain_text():
    html = GFM.render("x " + md_inline("<img src=x> **b** [a](http://e) <!-- m -->") + "\n")
    assert html == "<p>x &lt;img src=x&gt; **b** [a](http://e) &lt;!-- m --&gt;</p>\n"


def test_truncate_rejects_nonpositive_length():
    with pytest.raises(ValueError, match="at least 1"):
        truncate("abc", 0)
    assert truncate("abcdef", 3) == "ab…"


def test_md_code_block_fence_outgrows_backtick_runs():
    assert md_code_block("plain") == "```\nplain\n```"
    # longest run is 5 backticks → fence of 6
    assert md_code_block("a ````` b\n```", "diff") == "``````diff\na ````` b\n```\n``````"
    assert md_code_block("x\n", "py;rm -rf") == "```pyrm-rf\nx\n```"


def test_md_code_block_is_inert_inside_details():
    hostile = "</details>\n```\n# Heading\n@octocat <img src=x>"
    doc = f"<details><summary>s</summary>\n\n{md_code_block(hostile, 'text')}\n\n</details>\n"
    html = GFM.render(doc)
    # the block keeps everything literal: one real </details> (ours), the hostile one escaped inside <pre>
    assert html.count("</details>") == 1
    assert (
        '<pre><code class="language-text">&lt;/details&gt;\n```\n# Heading\n@octocat &lt;img src=x&gt;\n</code></pre>'
        in html
    )


def test_md_code_block_breaks_marker_and_cuts():
    assert md_code_block("<!-- evalward:x -->") == f"```\n<{ZWSP}!-- evalward:x -->\n```"
    assert md_code_block("abcdefghij", max_len=4) == "```\nabcd\n… (cut at 4 of 10 characters)\n```"


def test_md_code_span():
    assert md_code_span("a|b") == "`a|b`"
    assert md_code_span("a|b", in_table=True) == "`a\\|b`"
    # longest run 2 → delimiter 3; content starting with a backtick is padded
    assert md_code_span("``x") == "``` ``x ```"
    assert md_code_span("") == "` `"
    assert GFM.render(md_code_span("``x") + "\n") == "<p><code>``x</code></p>\n"


def test_html_inline():
    assert html_inline("@bob <b>\nhi</b> #7") == f"@{ZWSP}bob &lt;b&gt; hi&lt;/b&gt; #{ZWSP}7"


def test_workflow_command_safe():
    text = "ok\n::add-mask::secret\n   ::error file=a::b\nstd::vector x ##[set-output name=a;]b :::"
    assert workflow_command_safe(text) == (
        f"ok\n:{ZWSP}:add-mask:{ZWSP}:secret\n   :{ZWSP}:error file=a:{ZWSP}:b\n"
        f"std:{ZWSP}:vector x ##{ZWSP}[set-output name=a;]b :{ZWSP}:{ZWSP}:"
    )
    # no line of the result can start a command, whatever its indentation
    for line in workflow_command_safe(text).split("\n"):
        assert not line.lstrip().startswith("::")
        assert "##[" not in line


def test_annotation_escaping_follows_actions_toolkit():
    assert annotation_message("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"
    assert annotation_property("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext%3A a%2Cb"


def test_xml_text_is_xml_legal_and_neutralised():
    assert xml_text("a\x00\x0bb @x #1 ::y") == f"ab @{ZWSP}x #{ZWSP}1 :{ZWSP}:y"


def test_github_urls_outside_code_make_no_cross_reference():
    shown = md_inline("see https://github.com/octo/agent/issues/12 and GitHub.com/o/r/pull/3")
    assert "github.com" not in shown.lower()
    assert f"github{ZWSP}.com/octo/agent/issues/12" in shown
