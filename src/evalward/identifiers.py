"""Checks for identifiers that come from outside (webhooks, event files, flags, the API).

A SHA, ref, repository name or PR number from a payload reaches `git`, SQL and file paths; each is
checked against the shape GitHub and git give it before it is used, so a value such as
`--upload-pack=…` (an option, not a commit) is refused where it enters, with the place it came from.
The patterns are deliberately narrower than git allows where git's full syntax is never needed.
"""

from __future__ import annotations

import re

from evalward.errors import UsageError

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A full commit id: SHA-1 (40 hex) or SHA-256 (64 hex) object format, lower case as GitHub sends it."""

_ABBREV_SHA = re.compile(r"[0-9a-fA-F]{7,64}")

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_REPO_NAME = r"[A-Za-z0-9._-]{1,100}"
_REPO = re.compile(rf"{_OWNER}/{_REPO_NAME}")

# git check-ref-format, narrowed: no leading '-', no '..', no '@{', no control characters, no space
# or any of ~^:?*[\ , no component starting with '.' or ending with '.lock', no trailing '/' or '.'.
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")
_MAX_REF = 255

MAX_PR_NUMBER = 2**31 - 1


class InvalidIdentifier(UsageError):
    """An identifier from outside does not have the shape it must have; nothing was run with it."""

    def __init__(self, what: str, where: str, expected: str, found: object) -> None:
        self.what, self.where = what, where
        shown = found if not isinstance(found, str) else found[:80] + ("…" if len(found) > 80 else "")
        super().__init__(f"{where}: expected {what} ({expected}), found {shown!r}")


def is_sha(value: object) -> bool:
    """True for a full commit id: 40 or 64 lower-case hex digits."""
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def check_sha(value: object, where: str) -> str:
    """`value` when it is a full commit id (40 or 64 lower-case hex digits), else `InvalidIdentifier`."""
    if not is_sha(value):
        raise InvalidIdentifier("a commit SHA", where, "40 or 64 lower-case hex digits", value)
    assert isinstance(value, str)
    return value


def check_commitish(value: object, where: str) -> str:
    """A commit a user names on the command line: an (abbreviated) SHA or a ref; never an option."""
    if isinstance(value, str) and _ABBREV_SHA.fullmatch(value):
        return value
    return check_ref(value, where)


def is_ref(value: object) -> bool:
    """True for a branch, tag or full ref name git would accept and that cannot be read as an option."""
    if not isinstance(value, str) or not value or len(value) > _MAX_REF:
        return False
    if value.startswith(("-", "/", ".")) or value.endswith(("/", ".", ".lock")) or value == "@":
        return False
    if _REF_FORBIDDEN.search(value):
        return False
    return not any(part.startswith(".") or part.endswith(".lock") for part in value.split("/"))


def check_ref(value: object, where: str) -> str:
    """`value` when it is a safe ref name (see `is_ref`), else `InvalidIdentifier`."""
    if not is_ref(value):
        raise InvalidIdentifier("a git ref", where, "a branch, tag or refs/… name that does not start with '-'", value)
    assert isinstance(value, str)
    return value


def is_repo_full_name(value: object) -> bool:
    """True for `owner/name` as GitHub allows them (owner: letters, digits, '-'; name: also '.' and '_')."""
    return isinstance(value, str) and _REPO.fullmatch(value) is not None and value.split("/")[1] not in (".", "..")


def check_repo_full_name(value: object, where: str) -> str:
    """`value` when it is an `owner/name` repository name, else `InvalidIdentifier`."""
    if not is_repo_full_name(value):
        raise InvalidIdentifier("a repository name", where, "owner/name", value)
    assert isinstance(value, str)
    return value


def is_pr_number(value: object) -> bool:
    """True for a positive pull request number that fits the database's integer column."""
    return not isinstance(value, bool) and isinstance(value, int) and 1 <= value <= MAX_PR_NUMBER


def check_pr_number(value: object, where: str) -> int:
    """`value` when it is a positive pull request number, else `InvalidIdentifier`."""
    if not is_pr_number(value):
        raise InvalidIdentifier("a pull request number", where, f"an integer from 1 to {MAX_PR_NUMBER}", value)
    assert isinstance(value, int)
    return value
