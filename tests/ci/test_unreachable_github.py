"""An unreachable GitHub costs `evalward ci` at most its retry budget (20 s), whatever it has to post.

The client `evalward ci` builds (`default_client`) is used with its real settings; only its `sleep` is recorded
instead of slept, its jitter fixed at 1 (back-off 2^k s) and its clock stopped (a failed attempt costs no time),
so the assertions are on what it waited, never on the clock.
"""

from __future__ import annotations

import socket

from evalward._ci import GITHUB_RETRY_BUDGET_S, default_client
from evalward.github.actions import ActionsEnv
from evalward.github.client import GitHubClient

from .conftest import PR_HEAD, Workspace, outputs, pull_request_payload, summary


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def recording_client(waits: list[float]) -> object:
    def factory(actions: ActionsEnv) -> GitHubClient | None:
        # A clock that stands still: failed attempts cost no time, so only the recorded back-off counts.
        return default_client(actions, sleep=waits.append, jitter=lambda: 1.0, monotonic=lambda: 0.0)

    return factory


def test_a_github_that_never_answers_costs_at_most_the_retry_budget(workspace: Workspace) -> None:
    waits: list[float] = []
    env = workspace.env("pull_request", pull_request_payload(), GITHUB_API_URL=f"http://127.0.0.1:{closed_port()}")
    result, log = workspace.run(env, client_factory=recording_client(waits))

    assert GITHUB_RETRY_BUDGET_S == 20.0
    # The check run (first post): 1 + 2 + 4 + 8 = 15 s of back-off; a 16 s wait would pass 20 s, so it gives up
    # after 5 attempts, and the status and the comment are not tried at all.
    assert waits == [1.0, 2.0, 4.0, 8.0]
    assert "waiting 16 s more would exceed the 20 s retry budget" in log
    assert "skipped the commit status: GitHub did not answer the previous request" in log
    assert "skipped the PR comment: GitHub did not answer the previous request" in log
    # Reporting never decides the outcome: the verdict is the gate's.
    assert result.exit_code == 0 and outputs(env)["verdict"] == "pass"
    assert "could not post the check run" in summary(env)


def test_a_github_answering_5xx_shares_one_budget_across_every_post(workspace: Workspace) -> None:
    waits: list[float] = []
    workspace.fake.inject("502", 1000)
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env, client_factory=recording_client(waits))

    # Answers arrive, so every post is tried, but all of them together wait at most the budget: back-off
    # 2^k s per request until the next wait would pass 20 s; later requests are tried once.
    # check run 1 + (1 + 2 + 4 + 8) = 16 s (its create looks for its run first), status 1 + 2, comment 1: 20 s.
    assert waits == [1.0, 1.0, 2.0, 4.0, 8.0, 1.0, 2.0, 1.0]
    assert sum(waits) <= GITHUB_RETRY_BUDGET_S
    tried = {(r.method, r.path.split("/")[4]) for r in workspace.fake.requests}
    assert {("POST", "check-runs"), ("POST", "statuses"), ("GET", "issues")} <= tried
    assert result.exit_code == 0
    assert [s for s in workspace.fake.statuses if s["sha"] == PR_HEAD] == []
    for label in ("check run", "commit status", "PR comment"):
        assert f"could not post the {label}" in log


def test_rate_limits_keep_githubs_rules_outside_the_budget(workspace: Workspace) -> None:
    """A secondary rate limit with `retry-after` is waited out as GitHub asks (docs/github.md §9), not cut short."""
    waits: list[float] = []
    workspace.fake.inject("secondary", 2, path_contains="/statuses/", retry_after=30)
    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env, client_factory=recording_client(waits))
    assert waits == [30.0, 60.0]  # retry-after, then doubled: over the 20 s budget, and still waited
    assert [s["state"] for s in workspace.fake.statuses if s["sha"] == PR_HEAD] == ["success"]
    assert result.exit_code == 0
