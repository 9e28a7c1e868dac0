"""What baseline selection needs from git, read with the `git` command (no library).

**Ownership.** Git refuses a repository owned by another user ("detected dubious ownership", git ≥ 2.35.2)
unless it is listed in `safe.directory`. That is the normal case in a container action: the runner checks the
repository out as uid 1001 and the container runs as root. Every git call evalward makes goes through `git`
here, which trusts the repository it runs in with `-c safe.directory=<its top-level folder>` (command-line
configuration counts as protected configuration, git-config(1) "safe.directory"); the commands are
read-only (rev-parse, merge-base, rev-list, cat-file) and run no hooks. `safe_directory_env` gives the
same trust to child processes (the Action's setup commands, `cmd:` agents) through `GIT_CONFIG_*` variables.

**Merge-base.** `resolve_merge_base` is the one place that finds the commit a run is compared at. For a pull
request it must be found: when git cannot compute it (a shallow clone, a missing base commit, a checkout git
refuses), `required=True` raises `MergeBaseError` saying why and how to fix it — never a silent fallback to
the base branch's tip, which would compare the PR with a baseline from another point of history.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from evalward.errors import InfrastructureError
from evalward.model import RunContext, RunResult
from evalward.repository_paths import repository_root as repository_root  # callers find it beside `git`

GIT_TIMEOUT_S = 30
FETCH_DEPTH_FIX = (
    "check the repository out with its history: `actions/checkout` with `fetch-depth: 0` "
    "(the default fetches only the one commit)"
)


class MergeBaseError(InfrastructureError):
    """The merge-base a pull request must be gated at cannot be computed (exit 3)."""


def safe_directory_env(top: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` entries adding `safe.directory=<top>` after
    the ones `env` already holds, for child processes that run git in the repository."""
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0") or "0")
    except ValueError:
        count = 0
    for index in range(count):
        if env.get(f"GIT_CONFIG_KEY_{index}") == "safe.directory" and env.get(f"GIT_CONFIG_VALUE_{index}") == str(top):
            return {}
    return {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "safe.directory",
        f"GIT_CONFIG_VALUE_{count}": str(top),
    }


def git(repo_dir: str | Path, *args: str, timeout_s: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in `repo_dir`, trusting the repository it belongs to (module docstring); captured text."""
    top = repository_root(repo_dir)
    trust = ["-c", f"safe.directory={top}"] if top is not None else []
    try:
        return subprocess.run(
            ["git", *trust, *args], cwd=repo_dir, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfrastructureError(f"cannot run git in {repo_dir}: {exc}") from exc


def git_output(repo_dir: str | Path, *args: str) -> str | None:
    """The stripped output of a git command that succeeded with output, else None (no exception)."""
    try:
        completed = git(repo_dir, *args, timeout_s=10)
    except InfrastructureError:
        return None
    out = completed.stdout.strip()
    return out if completed.returncode == 0 and out else None


def git_merge_base(repo_dir: str | Path, a: str, b: str) -> str | None:
    """`git merge-base a b`: the best common ancestor's full SHA; None when there is none or a ref is unknown
    (e.g. a shallow clone that lacks the base branch's history)."""
    completed = git(repo_dir, "merge-base", "--end-of-options", a, b)
    sha = completed.stdout.strip()
    return sha if completed.returncode == 0 and sha else None


def git_first_parent_ancestors(repo_dir: str | Path, commit: str, limit: int = 50) -> list[str]:
    """Full SHAs of `commit`'s first-parent ancestors, nearest first, `commit` itself excluded, at most
    `limit`. Following first parents walks the base branch's own history and skips merged-in branches.
    Empty when `commit` is unknown (shallow clone) or a root commit."""
    if limit <= 0:
        return []
    completed = git(
        repo_dir, "rev-list", "--first-parent", f"--max-count={limit + 1}", "--end-of-options", commit, "--"
    )
    if completed.returncode != 0:
        return []
    shas = completed.stdout.split()
    return shas[1:]


def resolve_merge_base(
    current: RunResult | RunContext, *, base_branch: str | None, repo_dir: Path | None, required: bool = False
) -> str | None:
    """The merge-base of the run's commit with its base: the one recorded with the run, else computed with git
    in `repo_dir` (none: only the recorded one) from the base SHA, then `origin/<base_branch>`, then
    `<base_branch>`.

    Without a result: None, or with `required` (a pull request) `MergeBaseError` naming the cause —
    see `explain_missing_merge_base`."""
    ctx = current.context if isinstance(current, RunResult) else current
    if ctx.merge_base:
        return ctx.merge_base
    if ctx.commit and repo_dir is not None:
        for ref in (ctx.base_sha, f"origin/{base_branch}" if base_branch else None, base_branch):
            if ref:
                found = git_merge_base(repo_dir, ref, ctx.commit)
                if found:
                    return found
    if required:
        if repo_dir is None:
            raise MergeBaseError("the run recorded no merge-base, and there is no checkout here to compute it")
        raise MergeBaseError(explain_missing_merge_base(repo_dir, ctx.commit, ctx.base_sha, base_branch))
    return None


def _has_commit(repo_dir: Path, sha: str) -> bool:
    return git(repo_dir, "cat-file", "-e", "--end-of-options", f"{sha}^{{commit}}").returncode == 0


def explain_missing_merge_base(repo_dir: Path, head: str | None, base_sha: str | None, base_branch: str | None) -> str:
    """Why git found no merge-base of `head` and the base in `repo_dir`, and how to fix it (one message)."""
    base = " at ".join(part for part in (base_branch, base_sha[:12] if base_sha else None) if part) or "unknown"
    lead = (
        f"cannot compute the merge-base of the pull request (head {head[:12] if head else 'unknown'}, base {base}) "
        f"in {repo_dir}, so there is no baseline commit to gate against"
    )
    probe = git(repo_dir, "rev-parse", "--is-shallow-repository")
    problem = probe.stderr.strip()
    if probe.returncode != 0:
        if "dubious ownership" in problem:
            why = (
                "git refuses the checkout because another user owns it (detected dubious ownership); "
                f"fix: `git config --global --add safe.directory {repo_dir}`"
            )
        elif "not a git repository" in problem:
            why = "the folder is not a git checkout; fix: run `actions/checkout` (with `fetch-depth: 0`) first"
        else:
            why = f"git failed: {problem[:300] or f'exit {probe.returncode}'}"
    elif probe.stdout.strip() == "true":
        why = f"the checkout is shallow; fix: {FETCH_DEPTH_FIX}"
    elif not head:
        why = "the run has no commit; fix: run in a git checkout or pass --commit"
    elif not _has_commit(repo_dir, head):
        why = f"the head commit {head[:12]} is not in the checkout; fix: {FETCH_DEPTH_FIX}"
    elif not base_sha and not base_branch:
        why = "neither the base commit nor the base branch is known; fix: set `base-branch` (--base-branch)"
    elif base_sha and not _has_commit(repo_dir, base_sha):
        why = f"the base commit {base_sha[:12]} is not in the checkout; fix: {FETCH_DEPTH_FIX}"
    elif (
        not base_sha
        and base_branch
        and not any(_has_commit(repo_dir, r) for r in (f"origin/{base_branch}", base_branch))
    ):
        why = f"the base branch {base_branch} is not in the checkout; fix: {FETCH_DEPTH_FIX}"
    else:
        why = "the head and the base share no history (unrelated histories)"
    return (
        f"{lead}: {why}. evalward does not fall back to the base commit, which would compare the pull request with "
        "a baseline from another point of history."
    )
