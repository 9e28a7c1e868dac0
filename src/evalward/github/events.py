"""Lenient readers of the webhook / Actions event payloads evalward acts on (docs/github.md §4, §10).

Each reader picks only the fields we use and ignores everything else, so a payload is never rejected
because GitHub added, renamed or dropped a field we do not read. Only a field we cannot act without
(e.g. `pull_request.head.sha`) raises `EventPayloadError`, naming its JSON path and what was found.
Results are frozen pydantic models (the boundary between GitHub's JSON and our code).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalward.errors import UsageError
from evalward.identifiers import is_pr_number, is_ref, is_repo_full_name, is_sha


class EventPayloadError(UsageError):
    """A field evalward needs is missing or has the wrong type in an event payload."""

    def __init__(self, event: str, json_path: str, expected: str, found: Any) -> None:
        self.event, self.json_path = event, json_path
        super().__init__(f"{event} event payload: at {json_path}: expected {expected}, found {found!r}")


class _Frozen(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)


class RepoRef(_Frozen):
    """A repository as events name it."""

    full_name: str
    id: int | None = None
    private: bool | None = None
    default_branch: str | None = None


class PullRequestEvent(_Frozen):
    """`pull_request` (and `pull_request_target`): enough to run, gate and post on a PR."""

    action: str
    number: int
    head_sha: str
    head_ref: str | None = None
    head_repo: str | None = None
    """`head.repo.full_name`; None when the fork was deleted."""
    base_sha: str | None = None
    base_ref: str | None = None
    base_repo: str | None = None
    merge_commit_sha: str | None = None
    draft: bool = False
    state: str | None = None
    labels: tuple[str, ...] = ()
    author_login: str | None = None
    author_association: str | None = None
    repository: str | None = None
    installation_id: int | None = None
    sender_login: str | None = None

    @property
    def is_fork(self) -> bool:
        """Head and base live in different repositories, or the head repository is gone (deleted fork)."""
        return self.head_repo is None or self.head_repo != (self.base_repo or self.repository)


class PushEvent(_Frozen):
    """`push`: the ref and the commit it now points at."""

    ref: str
    after: str
    before: str | None = None
    deleted: bool = False
    repository: str | None = None
    installation_id: int | None = None

    @property
    def branch(self) -> str | None:
        return self.ref.removeprefix("refs/heads/") if self.ref.startswith("refs/heads/") else None


class MergeGroupEvent(_Frozen):
    """`merge_group` (`checks_requested`): a merge queue's temporary commit `head_sha` on `head_ref`
    (`gh-readonly-queue/<base>/pr-<n>-<sha>`), built on `base_sha`, the queue's base on `base_ref`."""

    action: str
    head_sha: str
    head_ref: str
    base_sha: str
    base_ref: str
    repository: str | None = None
    installation_id: int | None = None

    @property
    def head_branch(self) -> str:
        return self.head_ref.removeprefix("refs/heads/")

    @property
    def base_branch(self) -> str:
        return self.base_ref.removeprefix("refs/heads/")


class CheckRerequestEvent(_Frozen):
    """`check_run` / `check_suite` (`rerequested`, `requested`, `requested_action`)."""

    kind: Literal["check_run", "check_suite"]
    action: str
    head_sha: str
    head_branch: str | None = None
    check_id: int | None = None
    external_id: str | None = None
    pull_requests: tuple[int, ...] = ()
    """PR numbers; empty for fork heads (§7)."""
    requested_action: str | None = None
    repository: str | None = None
    installation_id: int | None = None


class InstallationEvent(_Frozen):
    """`installation` / `installation_repositories`: which repositories the App may act on."""

    kind: Literal["installation", "installation_repositories"]
    action: str
    installation_id: int
    account_login: str | None = None
    repositories: tuple[str, ...] = ()
    repositories_added: tuple[str, ...] = ()
    repositories_removed: tuple[str, ...] = ()


Event = PullRequestEvent | PushEvent | MergeGroupEvent | CheckRerequestEvent | InstallationEvent


# -- field access ----------------------------------------------------------------------------------


def _at(payload: Any, path: str) -> Any:
    """The value at dotted `path`, or None when any step is missing or not an object."""
    node = payload
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _str(payload: Any, path: str) -> str | None:
    value = _at(payload, path)
    return value if isinstance(value, str) and value else None


def _int(payload: Any, path: str) -> int | None:
    value = _at(payload, path)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _need_str(event: str, payload: Any, path: str) -> str:
    value = _str(payload, path)
    if value is None:
        raise EventPayloadError(event, path, "a non-empty string", _at(payload, path))
    return value


def _checked(event: str, payload: Any, path: str, ok: Callable[[object], bool], expected: str) -> str | None:
    """The string at `path` when absent (None) or of the right shape; anything else is refused where it enters."""
    value = _str(payload, path)
    if value is not None and not ok(value):
        raise EventPayloadError(event, path, expected, value)
    return value


def _sha(event: str, payload: Any, path: str) -> str | None:
    return _checked(event, payload, path, is_sha, "a commit SHA (40 or 64 lower-case hex digits)")


def _need_sha(event: str, payload: Any, path: str) -> str:
    value = _sha(event, payload, path)
    if value is None:
        raise EventPayloadError(event, path, "a commit SHA (40 or 64 lower-case hex digits)", _at(payload, path))
    return value


def _ref(event: str, payload: Any, path: str) -> str | None:
    return _checked(event, payload, path, is_ref, "a git ref name")


def _need_ref(event: str, payload: Any, path: str) -> str:
    value = _ref(event, payload, path)
    if value is None:
        raise EventPayloadError(event, path, "a git ref name", _at(payload, path))
    return value


def _repo(event: str, payload: Any, path: str) -> str | None:
    return _checked(event, payload, path, is_repo_full_name, "a repository name owner/name")


_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
"""A GitHub login: letters, digits and '-', at most 39; an App's bot user ends in `[bot]`."""


def _login(event: str, payload: Any, path: str) -> str | None:
    """A user's login: it becomes a path segment of the permission API and a line of a check run."""
    return _checked(event, payload, path, lambda value: isinstance(value, str) and bool(_LOGIN.fullmatch(value)),
                    "a GitHub login")  # fmt: skip


def _need_int(event: str, payload: Any, path: str) -> int:
    value = _int(payload, path)
    if value is None:
        raise EventPayloadError(event, path, "an integer", _at(payload, path))
    return value


def _names(items: Any, key: str = "full_name") -> tuple[str, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(str(item[key]) for item in items if isinstance(item, Mapping) and isinstance(item.get(key), str))


def _repo_names(event: str, payload: Any, path: str) -> tuple[str, ...]:
    """`full_name` of each repository listed at `path`; a name of another shape is refused like any other."""
    items = _at(payload, path)
    if not isinstance(items, list):
        return ()
    names: list[str] = []
    for index, item in enumerate(items):
        name = item.get("full_name") if isinstance(item, Mapping) else None
        if name is None:
            continue
        if not is_repo_full_name(name):
            raise EventPayloadError(event, f"{path}[{index}].full_name", "a repository name owner/name", name)
        names.append(name)
    return tuple(names)


# -- readers ---------------------------------------------------------------------------------------


def parse_pull_request(payload: Mapping[str, Any], event: str = "pull_request") -> PullRequestEvent:
    if not isinstance(_at(payload, "pull_request"), Mapping):
        raise EventPayloadError(event, "pull_request", "an object", _at(payload, "pull_request"))
    number = _int(payload, "number")
    if number is None:
        number = _need_int(event, payload, "pull_request.number")
    if not is_pr_number(number):
        raise EventPayloadError(event, "number", "a positive pull request number", number)
    labels = _at(payload, "pull_request.labels")
    return PullRequestEvent(
        action=_str(payload, "action") or "",
        number=number,
        head_sha=_need_sha(event, payload, "pull_request.head.sha"),
        head_ref=_ref(event, payload, "pull_request.head.ref"),
        head_repo=_repo(event, payload, "pull_request.head.repo.full_name"),
        base_sha=_sha(event, payload, "pull_request.base.sha"),
        base_ref=_ref(event, payload, "pull_request.base.ref"),
        base_repo=_repo(event, payload, "pull_request.base.repo.full_name"),
        merge_commit_sha=_sha(event, payload, "pull_request.merge_commit_sha"),
        draft=_at(payload, "pull_request.draft") is True,
        state=_str(payload, "pull_request.state"),
        labels=_names(labels, "name"),
        author_login=_login(event, payload, "pull_request.user.login"),
        author_association=_str(payload, "pull_request.author_association"),
        repository=_repo(event, payload, "repository.full_name"),
        installation_id=_int(payload, "installation.id"),
        sender_login=_login(event, payload, "sender.login"),
    )


def parse_push(payload: Mapping[str, Any], event: str = "push") -> PushEvent:
    return PushEvent(
        ref=_need_ref(event, payload, "ref"),
        after=_need_sha(event, payload, "after"),
        before=_sha(event, payload, "before"),
        deleted=_at(payload, "deleted") is True,
        repository=_repo(event, payload, "repository.full_name"),
        installation_id=_int(payload, "installation.id"),
    )


def parse_merge_group(payload: Mapping[str, Any]) -> MergeGroupEvent:
    event = "merge_group"
    return MergeGroupEvent(
        action=_str(payload, "action") or "",
        head_sha=_need_sha(event, payload, "merge_group.head_sha"),
        head_ref=_need_ref(event, payload, "merge_group.head_ref"),
        base_sha=_need_sha(event, payload, "merge_group.base_sha"),
        base_ref=_need_ref(event, payload, "merge_group.base_ref"),
        repository=_repo(event, payload, "repository.full_name"),
        installation_id=_int(payload, "installation.id"),
    )


def parse_check_event(payload: Mapping[str, Any], event: Literal["check_run", "check_suite"]) -> CheckRerequestEvent:
    prs = _at(payload, f"{event}.pull_requests")
    numbers = tuple(n for n in (_int(pr, "number") for pr in (prs if isinstance(prs, list) else [])) if is_pr_number(n))
    head_branch = _ref(event, payload, f"{event}.head_branch") or _ref(
        event, payload, f"{event}.check_suite.head_branch"
    )
    return CheckRerequestEvent(
        kind=event,
        action=_str(payload, "action") or "",
        head_sha=_need_sha(event, payload, f"{event}.head_sha"),
        head_branch=head_branch,
        check_id=_int(payload, f"{event}.id"),
        external_id=_str(payload, f"{event}.external_id"),
        pull_requests=numbers,
        requested_action=_str(payload, "requested_action.identifier"),
        repository=_repo(event, payload, "repository.full_name"),
        installation_id=_int(payload, "installation.id"),
    )


def parse_installation(
    payload: Mapping[str, Any], event: Literal["installation", "installation_repositories"]
) -> InstallationEvent:
    return InstallationEvent(
        kind=event,
        action=_str(payload, "action") or "",
        installation_id=_need_int(event, payload, "installation.id"),
        account_login=_login(event, payload, "installation.account.login"),
        repositories=_repo_names(event, payload, "repositories"),
        repositories_added=_repo_names(event, payload, "repositories_added"),
        repositories_removed=_repo_names(event, payload, "repositories_removed"),
    )


HANDLED_EVENTS = frozenset(
    {
        "pull_request",
        "pull_request_target",
        "push",
        "merge_group",
        "check_run",
        "check_suite",
        "installation",
        "installation_repositories",
    }
)
"""The `X-GitHub-Event` values `parse_event` reads; every other event is ignored."""


def parse_event(event: str, payload: Mapping[str, Any]) -> Event | None:
    """The typed view of a payload for an event evalward handles (`HANDLED_EVENTS`); None for any other."""
    if event not in HANDLED_EVENTS:
        return None
    if event in ("pull_request", "pull_request_target"):
        return parse_pull_request(payload, event)
    if event == "push":
        return parse_push(payload)
    if event == "merge_group":
        return parse_merge_group(payload)
    if event == "check_run":
        return parse_check_event(payload, "check_run")
    if event == "check_suite":
        return parse_check_event(payload, "check_suite")
    if event == "installation":
        return parse_installation(payload, "installation")
    if event == "installation_repositories":
        return parse_installation(payload, "installation_repositories")
    return None
