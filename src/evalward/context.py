"""Where a run happens: repository, commit, branch and pull request, from flags, the Actions environment or git.

Precedence for each field: an explicit value (flag / EVALWARD_* variable) > the GitHub Actions
environment (and its event payload) > the local git checkout. On `pull_request` events the commit is the
PR's head SHA, not the test merge commit GitHub checks out (docs/github.md §4).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalward.model import RunContext
from evalward.store.gitinfo import git_output


def _git(args: list[str], cwd: Path | None) -> str | None:
    return git_output(cwd or Path.cwd(), *args)


def _event_payload(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def detect_context(
    *,
    repository: str | None = None,
    commit: str | None = None,
    branch: str | None = None,
    base_branch: str | None = None,
    base_sha: str | None = None,
    pr_number: int | None = None,
    group_id: str | None = None,
    merge_base: str | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> RunContext:
    """Fill a RunContext from explicit values, then the Actions environment, then git.

    The merge-base is `merge_base` when given, else git's merge-base of the base SHA and the commit. When git
    cannot tell, an explicitly given `base_sha` (`--base-sha`: the caller vouches for it) is taken as the
    merge-base; a base SHA read from the event payload never is (it is the base branch's tip, not where the PR
    branched off), so the gate computes the merge-base itself or reports that it could not (`store.gitinfo`)."""
    env = os.environ if env is None else env
    explicit_base_sha = base_sha
    event = _event_payload(env)
    pull = event.get("pull_request") if isinstance(event.get("pull_request"), dict) else None

    repository = repository or env.get("GITHUB_REPOSITORY")
    if pull is not None:
        head, base = pull.get("head") or {}, pull.get("base") or {}
        commit = commit or head.get("sha")
        branch = branch or head.get("ref")
        base_branch = base_branch or base.get("ref")
        base_sha = base_sha or base.get("sha")
        if pr_number is None and isinstance(pull.get("number"), int):
            pr_number = pull["number"]
    if env.get("GITHUB_ACTIONS") == "true":
        commit = commit or env.get("GITHUB_SHA")
        branch = branch or env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME")
        base_branch = base_branch or env.get("GITHUB_BASE_REF") or None

    if commit is None and branch is None:
        # One git process for both (each one costs a 1-case run milliseconds): the SHA, then the branch name
        # ("HEAD" when detached). Where it fails (no repository, no commit yet) asking separately fails too.
        both = (_git(["rev-parse", "HEAD", "--abbrev-ref", "HEAD"], cwd) or "").splitlines()
        if len(both) == 2:
            commit, branch = both[0], both[1] if both[1] != "HEAD" else None
    else:
        commit = commit or _git(["rev-parse", "HEAD"], cwd)
        if branch is None:
            name = _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd)
            branch = name if name and name != "HEAD" else None
    if repository is None:
        url = _git(["config", "--get", "remote.origin.url"], cwd)
        repository = _repository_from_url(url) if url else None

    if merge_base is None and base_sha and commit:
        merge_base = _git(["merge-base", "--end-of-options", base_sha, commit], cwd) or explicit_base_sha
    return RunContext(
        repository=repository,
        commit=commit,
        branch=branch,
        base_branch=base_branch,
        base_sha=base_sha,
        pr_number=pr_number,
        merge_base=merge_base,
        group_id=group_id,
    )


def _repository_from_url(url: str) -> str | None:
    """`git@github.com:o/r.git` or `https://host/o/r(.git)` → `o/r`."""
    tail = url.rstrip("/").removesuffix(".git")
    tail = tail.split(":", 1)[1] if "://" not in tail and ":" in tail else tail
    parts = [p for p in tail.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) >= 2 else None
