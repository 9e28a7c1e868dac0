"""The GitHub Actions event `evalward ci` runs for: its mode, the run's context (the PR head SHA, not the
test merge commit; a push's before/after), the merge-base computed before anything runs, the refusal of
`pull_request_target` without consent, and the job's GitHub client."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalward._ci.ci_values import PULL_REQUEST_TARGET_CONSENT
from evalward._ci.inputs import CiOptions
from evalward.context import detect_context
from evalward.errors import UsageError
from evalward.github.actions import ActionsEnv
from evalward.github.client import GitHubClient
from evalward.model import RunContext
from evalward.store.gitinfo import resolve_merge_base

if TYPE_CHECKING:
    from evalward.github.client import GitHubClient

ZERO_SHA = "0" * 40
GITHUB_MAX_RETRIES = 5
GITHUB_RETRY_BUDGET_S = 20.0
"""At most this long lost to an unanswering GitHub over the whole job (`GitHubClient` rule 4a)."""
GITHUB_CONNECT_TIMEOUT_S = 5.0

Mode = Literal["pull_request", "push", "merge_group", "other"]
ClientFactory = Callable[[ActionsEnv], "GitHubClient | None"]


def event_mode(actions: ActionsEnv) -> Mode:
    """`pull_request` (also `pull_request_target`), `push` (not a branch deletion), `merge_group` (a merge
    queue), else `other`."""
    if actions.pull_request is not None:
        return "pull_request"
    if actions.merge_group is not None:
        return "merge_group"
    push = actions.push
    if push is not None and not push.deleted:
        return "push"
    return "other"


def default_client(actions: ActionsEnv, **overrides: Any) -> GitHubClient | None:
    """A client for `GITHUB_API_URL` with the job's token (None without one): 5 retries, but at most 20 s lost
    to GitHub not answering over the whole job; rate limits follow docs/github.md §9. `overrides` go to
    `GitHubClient` (tests: `sleep`, `jitter`, `monotonic`)."""

    if not actions.token or not actions.repository:
        return None
    options: dict[str, Any] = {
        "max_retries": GITHUB_MAX_RETRIES,
        "retry_budget_s": GITHUB_RETRY_BUDGET_S,
        "connect_timeout_s": GITHUB_CONNECT_TIMEOUT_S,
        **overrides,
    }
    return GitHubClient(actions.token, api_url=actions.api_url, **options)


def ci_context(
    options: CiOptions, actions: ActionsEnv, env: Mapping[str, str], *, merge_base: str | None
) -> RunContext:
    """The RunContext: PR head SHA and base from the payload, push `after`/`before`, a merge group's head and the
    queue's base, else env and git."""

    pr = actions.pull_request
    push = actions.push if pr is None else None
    group = actions.merge_group if pr is None else None
    commit = branch = base_sha = None
    base_branch = options.base_branch
    pr_number = None
    if pr is not None:
        commit, branch, base_sha, pr_number = pr.head_sha, pr.head_ref, pr.base_sha, pr.number
        base_branch = base_branch or pr.base_ref
    elif group is not None:
        # The queue's commit is its base plus the PRs ahead of it: the base is where it branched off, so it is
        # the merge-base, known without git (docs/gate.md §9: a merge group is gated against the queue's base).
        commit, branch, base_sha = group.head_sha, group.head_branch, group.base_sha
        base_branch = base_branch or group.base_branch
        merge_base = merge_base or group.base_sha
    elif push is not None and not push.deleted:
        commit, branch = push.after, push.branch
        base_sha = push.before if push.before and push.before != ZERO_SHA else None
        base_branch = base_branch or push.branch
    group_id = options.group_id
    if options.shard and not group_id and actions.run_id:
        group_id = f"gha-{actions.run_id}-{actions.run_attempt or '1'}-{options.name}"
    return detect_context(
        repository=actions.repository or None,
        commit=commit,
        branch=branch,
        base_branch=base_branch,
        base_sha=base_sha,
        pr_number=pr_number,
        group_id=group_id,
        merge_base=merge_base,
        env=env,
    )


def refuse_pull_request_target(actions: ActionsEnv, options: CiOptions) -> None:
    """`pull_request_target` runs with a write token and the repository's secrets while evalward runs the
    checked-out code: refused unless the workflow opted in (module docstring)."""
    if actions.event_name != "pull_request_target" or options.allow_pull_request_target:
        return

    raise UsageError(
        "refusing to run on `pull_request_target`: that event gives the job a write token and the repository's "
        "secrets, and evalward runs the agent from the checkout — if the checkout is the pull request's code, "
        'anyone who opens a pull request can run code with them (a "pwn request"). Use `on: pull_request` '
        "(fork pull requests then post through examples/workflows/evals-report.yml), or, if this job never "
        "checks out untrusted code, opt in with the input "
        f"`allow-pull-request-target: {PULL_REQUEST_TARGET_CONSENT}`"
    )


def pull_request_merge_base(actions: ActionsEnv, options: CiOptions, repo_dir: Path) -> str | None:
    """The merge-base a pull request is gated at, computed by git before anything runs (None for other
    events); `MergeBaseError` (exit 3) when the checkout cannot give it."""

    pr = actions.pull_request
    if pr is None:
        return None
    base_branch = options.base_branch or pr.base_ref
    context = RunContext(commit=pr.head_sha, base_sha=pr.base_sha, base_branch=base_branch)
    return resolve_merge_base(context, base_branch=base_branch, repo_dir=repo_dir, required=True)
