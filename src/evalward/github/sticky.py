"""One PR comment per eval suite, updated in place on every run (docs/github.md §14 "Sticky comment").

The comment is found by two things together: an invisible marker `<!-- evalward:{marker_id} -->` at the
very start of its body, and an author that is our bot. The marker alone would let anyone (or the agent's
own output quoted in a comment) hijack the comment, so a marked comment by a non-bot author is ignored.

Upsert: list every page of comments (ascending id); if ours exists, PATCH it (nothing when the body is
already identical); else POST. Two runs may POST at the same time, so after a POST the list is read again:
when several of ours exist, the oldest is kept, given the body just posted (the newest) and the others
deleted. Both racing runs converge on the same survivor (the oldest id), so exactly one comment remains.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalward.github.client import GitHubClient, GitHubError, send_once

COMMENT_BODY_MAX = 65_536
"""GitHub answers 422 "Body is too long (maximum is 65536 characters)" beyond this (not in the spec)."""
DEFAULT_BOT_LOGINS = ("github-actions[bot]",)
_MARKER_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]")


@dataclass(frozen=True)
class CommentResult:
    """The sticky comment after an upsert and what was done to it."""

    url: str
    id: int
    action: Literal["created", "updated", "unchanged"]


def marker_for(marker_id: str) -> str:
    """`<!-- evalward:{marker_id} -->` with every character outside `[A-Za-z0-9._/-]` replaced by `-`."""
    safe = _MARKER_UNSAFE.sub("-", marker_id)
    if not safe.strip("-"):
        raise ValueError(f"marker_id must contain a letter or digit, found {marker_id!r}")
    return f"<!-- evalward:{safe} -->"


def sticky_body(body: str, marker_id: str) -> str:
    """The full comment body: the marker line, then `body`."""
    return f"{marker_for(marker_id)}\n{body}"


def is_bot_author(comment: Mapping[str, Any], bot_logins: Collection[str]) -> bool:
    """The author is one of `bot_logins` (and a Bot when GitHub says the type); any Bot when the list is empty."""
    user = comment.get("user") or {}
    login, kind = user.get("login"), user.get("type")
    if kind is not None and kind != "Bot":
        return False
    if bot_logins:
        return login in bot_logins
    return kind == "Bot"


def find_ours(comments: list[dict[str, Any]], marker: str, bot_logins: Collection[str]) -> list[dict[str, Any]]:
    """Comments carrying `marker` at the start of the body and written by our bot, oldest first."""
    ours = [
        c for c in comments if str(c.get("body") or "").lstrip().startswith(marker) and is_bot_author(c, bot_logins)
    ]
    return sorted(ours, key=lambda c: int(c["id"]))


def _delete_quietly(client: GitHubClient, repo: str, comment_id: int) -> None:
    """Delete a duplicate; 404 means the other racing run deleted it first, which is the same outcome."""
    try:
        client.delete_issue_comment(repo, comment_id)
    except GitHubError as exc:
        if exc.status != 404:
            raise


def _create_once(
    client: GitHubClient, repo: str, pr_number: int, full: str, marker: str, bot_logins: Collection[str]
) -> dict[str, Any]:
    """POST the comment without blind re-sends: after an answer that leaves it unknown whether GitHub applied
    the POST (a 5xx, a connection lost after sending), back off and look for our comment first; a second
    POST would notify every subscriber twice before the duplicate could be deleted. At most
    `client.max_retries` re-sends, then the last `GitHubUncertainError` is raised."""

    def landed() -> dict[str, Any] | None:
        ours = [c for c in find_ours(client.list_issue_comments(repo, pr_number), marker, bot_logins)
                if c.get("body") == full]  # fmt: skip
        return ours[-1] if ours else None

    return send_once(client, lambda: client.create_issue_comment(repo, pr_number, full, replay_safe=False), landed)


def upsert_sticky_comment(
    client: GitHubClient,
    repo: str,
    pr_number: int,
    body: str,
    *,
    marker_id: str,
    bot_logins: Collection[str] = DEFAULT_BOT_LOGINS,
) -> CommentResult:
    """Create or update the one comment for `marker_id` on PR `pr_number`, as described in the module docstring.

    Raises ValueError when the body with its marker exceeds 65,536 characters: the renderer must cut
    whole sections first (report/), since cutting here could break markdown or drop the verdict.
    """
    marker = marker_for(marker_id)
    full = f"{marker}\n{body}"
    if len(full) > COMMENT_BODY_MAX:
        raise ValueError(
            f"comment body is {len(full):,} characters with its marker; GitHub accepts at most "
            f"{COMMENT_BODY_MAX:,} — cut the report before posting"
        )

    ours = find_ours(client.list_issue_comments(repo, pr_number), marker, bot_logins)
    if ours:
        keep, duplicates = ours[0], ours[1:]
        action: Literal["created", "updated", "unchanged"] = "unchanged"
        if keep.get("body") != full:
            keep = client.update_issue_comment(repo, int(keep["id"]), full)
            action = "updated"
        for duplicate in duplicates:
            _delete_quietly(client, repo, int(duplicate["id"]))
        return CommentResult(url=str(keep.get("html_url", "")), id=int(keep["id"]), action=action)

    created = _create_once(client, repo, pr_number, full, marker, bot_logins)
    ours = find_ours(client.list_issue_comments(repo, pr_number), marker, bot_logins)
    if not ours or int(ours[0]["id"]) == int(created["id"]):
        # Ours is the oldest (or alone): any later duplicate from a racing run goes.
        for duplicate in ours[1:]:
            _delete_quietly(client, repo, int(duplicate["id"]))
        return CommentResult(url=str(created.get("html_url", "")), id=int(created["id"]), action="created")

    # A race that another run won (its comment is older, and it may have deleted ours already): put our
    # body, the newest, into the survivor and remove the rest.
    keep = ours[0]
    if keep.get("body") != full:
        keep = client.update_issue_comment(repo, int(keep["id"]), full)
    for duplicate in ours[1:]:
        _delete_quietly(client, repo, int(duplicate["id"]))
    return CommentResult(url=str(keep.get("html_url", "")), id=int(keep["id"]), action="updated")
