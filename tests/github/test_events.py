"""Lenient event readers, fed GitHub's own example payloads (npm @octokit/webhooks-examples, vendored subset)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalward.github import (
    CheckRerequestEvent,
    EventPayloadError,
    InstallationEvent,
    PullRequestEvent,
    PushEvent,
    parse_event,
    parse_pull_request,
)

EXAMPLES = json.loads(
    (Path(__file__).resolve().parents[1] / "fakes" / "data" / "webhook-examples-subset.json").read_text("utf-8")
)["examples"]
ALL = [(event, index, payload) for event, payloads in EXAMPLES.items() for index, payload in enumerate(payloads)]
TYPES = {
    "pull_request": PullRequestEvent,
    "push": PushEvent,
    "check_run": CheckRerequestEvent,
    "check_suite": CheckRerequestEvent,
    "installation": InstallationEvent,
    "installation_repositories": InstallationEvent,
}


@pytest.mark.parametrize(("event", "index", "payload"), ALL, ids=[f"{e}-{i}" for e, i, _ in ALL])
def test_every_github_example_is_read(event: str, index: int, payload: dict[str, Any]) -> None:
    parsed = parse_event(event, payload)
    assert isinstance(parsed, TYPES[event])


def test_pull_request_opened_example_fields() -> None:
    payload = next(p for p in EXAMPLES["pull_request"] if p["action"] == "opened")
    pr = parse_pull_request(payload)
    assert pr.number == payload["number"]
    assert pr.head_sha == payload["pull_request"]["head"]["sha"]
    assert pr.base_repo == payload["pull_request"]["base"]["repo"]["full_name"]
    assert pr.is_fork is False  # the examples are same-repository PRs


def _pr(**overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "action": "synchronize",
        "number": 7,
        "pull_request": {
            "draft": True,
            "head": {"sha": "a1" * 20, "ref": "fix", "repo": {"full_name": "mallory/agent"}},
            "base": {"sha": "b" * 40, "ref": "main", "repo": {"full_name": "octo/agent"}},
            "labels": [{"name": "evals"}, {"name": "wip"}, "not-an-object"],
            "author_association": "FIRST_TIME_CONTRIBUTOR",
            "user": {"login": "mallory"},
        },
        "repository": {"full_name": "octo/agent"},
        "installation": {"id": 99},
        "brand_new_field": [1, 2, 3],
    }
    payload.update(overrides)
    return payload


def test_pull_request_from_fork_with_extras() -> None:
    pr = parse_pull_request(_pr())
    assert (pr.action, pr.number, pr.head_sha, pr.head_ref) == ("synchronize", 7, "a1" * 20, "fix")
    assert pr.is_fork and pr.draft and pr.labels == ("evals", "wip")
    assert (pr.author_association, pr.installation_id, pr.author_login) == ("FIRST_TIME_CONTRIBUTOR", 99, "mallory")


def test_deleted_fork_is_a_fork() -> None:
    payload = _pr()
    payload["pull_request"]["head"]["repo"] = None
    assert parse_pull_request(payload).is_fork


def test_missing_head_sha_names_the_json_path() -> None:
    payload = _pr()
    del payload["pull_request"]["head"]["sha"]
    with pytest.raises(EventPayloadError) as info:
        parse_pull_request(payload)
    assert (
        str(info.value)
        == "pull_request event payload: at pull_request.head.sha: expected a commit SHA (40 or 64 lower-case hex digits), found None"
    )


def test_number_falls_back_to_pull_request_number() -> None:
    payload = _pr()
    del payload["number"]
    payload["pull_request"]["number"] = 8
    assert parse_pull_request(payload).number == 8


def test_check_suite_rerequested_from_fork_has_no_pull_requests() -> None:
    payload = {
        "action": "rerequested",
        "check_suite": {"id": 5, "head_sha": "c" * 40, "head_branch": None, "pull_requests": []},
        "installation": {"id": 3},
    }
    event = parse_event("check_suite", payload)
    assert isinstance(event, CheckRerequestEvent)
    assert (event.kind, event.head_sha, event.head_branch, event.pull_requests) == ("check_suite", "c" * 40, None, ())


def test_check_run_pull_request_numbers() -> None:
    payload = {"action": "rerequested", "check_run": {"id": 1, "head_sha": "d" * 40, "pull_requests": [{"number": 4}]}}
    event = parse_event("check_run", payload)
    assert isinstance(event, CheckRerequestEvent) and event.pull_requests == (4,) and event.check_id == 1


def test_installation_repositories() -> None:
    payload = {
        "action": "added",
        "installation": {"id": 11, "account": {"login": "octo"}},
        "repositories_added": [{"full_name": "octo/a"}, {"full_name": "octo/b"}],
        "repositories_removed": [],
    }
    event = parse_event("installation_repositories", payload)
    assert isinstance(event, InstallationEvent)
    assert event.repositories_added == ("octo/a", "octo/b") and event.account_login == "octo"


def test_unknown_events_are_ignored() -> None:
    assert parse_event("ping", {"zen": "Keep it logically awesome."}) is None
    assert parse_event("workflow_run", {}) is None


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("pull_request", "head", "sha"), "--upload-pack=touch PWNED;git-upload-pack"),
        (("pull_request", "head", "sha"), "A" * 40),
        (("pull_request", "base", "sha"), "b" * 39),
        (("pull_request", "head", "ref"), "-oProxyCommand=x"),
        (("pull_request", "base", "ref"), "main..evil"),
        (("pull_request", "head", "repo", "full_name"), "../../etc"),
        (("repository", "full_name"), "octo/agent\nx"),
    ],
)
def test_identifiers_from_a_payload_are_checked_where_they_enter(path: tuple[str, ...], value: str) -> None:
    payload = _pr()
    node = payload
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    with pytest.raises(EventPayloadError) as info:
        parse_pull_request(payload)
    assert info.value.json_path == ".".join(path)


def test_a_push_with_an_option_for_a_ref_is_refused() -> None:
    with pytest.raises(EventPayloadError, match="at ref: expected a git ref name"):
        parse_event("push", {"ref": "--output=/tmp/x", "after": "c" * 40})
