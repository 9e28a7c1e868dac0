"""Hostile agent output stays inert everywhere `evalward ci` writes it: log, comment, summary, check run.

The agent answers every case with text built to run workflow commands (`::add-mask::`, `::set-output`,
`##[error]`, indented `::error::`), ping people (`@octocat`), cross-reference (`#1`, `owner/repo#2`),
break out of markup (`</details>`, `<img onerror>`, a long backtick fence) and forge our markers.
"""

from __future__ import annotations

import re

from .conftest import PR_HEAD, PR_NUMBER, REPO, Workspace, pull_request_payload, summary

ZWSP = "\u200b"


def outside_code(markdown: str) -> str:
    """`markdown` without fenced code blocks and code spans, where mentions, references and HTML are inert."""
    kept: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines():
        if fence is None:
            opening = re.match(r"^(`{3,})[A-Za-z0-9_+.-]*$", line)
            if opening:
                fence = opening.group(1)
                continue
            kept.append(re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", line))
        elif line == fence:
            fence = None
    assert fence is None, "a code block was never closed"
    return "\n".join(kept)


def test_hostile_agent_output_is_inert(workspace: Workspace) -> None:
    workspace.push()
    workspace.agent("hostile")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)
    assert result.exit_code == 1

    # The log: agent text only between ::stop-commands::TOKEN and ::TOKEN::, where the runner runs nothing;
    # every command outside such a block is one of ours.
    outside: list[str] = []
    token = None
    for line in log.splitlines():
        stripped = line.lstrip()
        if token is None and stripped.startswith("::stop-commands::"):
            token = stripped.removeprefix("::stop-commands::")
            assert re.fullmatch(r"[0-9a-f]{32}", token)
            continue
        if token is not None:
            if stripped == f"::{token}::":
                token = None
            continue
        outside.append(line)
    assert token is None, "an untrusted block was never closed"
    commands = [line.lstrip() for line in outside if line.lstrip().startswith("::") or "##[" in line]
    assert commands, "expected our own annotations"
    assert all(re.match(r"::(error|warning|notice)[ :]", c) for c in commands), commands
    assert not any("add-mask" in c or "set-output" in c for c in commands)
    # Inside our annotations the hostile text is one percent-encoded line with every `::` broken.
    assert all("::" not in c.split("::", 2)[2] for c in commands)

    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    body = comment["body"]
    for text in (body, summary(env)):
        # Exactly our two marker lines; no forged marker, no raw HTML from the agent.
        assert text.count("<!--") == (2 if text is body else 0)
        prose = outside_code(text)
        assert "hunter2" in text and "@octocat" not in prose and "<img" not in prose and "#1 " not in prose
        assert prose.count("<details>") == prose.count("</details>")
    assert body.splitlines()[:2] == ["<!-- evalward:CI/evals -->", "<!-- evalward-verdict: fail -->"]

    [check] = [r for r in workspace.fake.check_runs.values() if r["head_sha"] == PR_HEAD]
    output = check["output"]
    for key in ("summary", "text"):
        prose = outside_code(output[key])
        assert "<img" not in prose and "@octocat" not in prose and "<!--" not in output[key]
    for annotation in workspace.fake.annotations_of(int(check["id"])):
        assert "@octocat" not in annotation["message"] and "::" not in annotation["message"]
