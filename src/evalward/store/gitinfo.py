"""The two git facts baseline selection needs, read with the `git` command (no library)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evalward.errors import InfrastructureError


def _git(repo_dir: str | Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=repo_dir, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InfrastructureError(f"cannot run git in {repo_dir}: {exc}") from exc


def git_merge_base(repo_dir: str | Path, a: str, b: str) -> str | None:
    """`git merge-base a b`: the best common ancestor's full SHA; None when there is none or a ref is unknown
    (e.g. a shallow clone that lacks the base branch's history)."""
    completed = _git(repo_dir, "merge-base", a, b)
    sha = completed.stdout.strip()
    return sha if completed.returncode == 0 and sha else None


def git_first_parent_ancestors(repo_dir: str | Path, commit: str, limit: int = 50) -> list[str]:
    """Full SHAs of `commit`'s first-parent ancestors, nearest first, `commit` itself excluded, at most
    `limit`. Following first parents walks the base branch's own history and skips merged-in branches.
    Empty when `commit` is unknown (shallow clone) or a root commit."""
    if limit <= 0:
        return []
    completed = _git(repo_dir, "rev-list", "--first-parent", f"--max-count={limit + 1}", commit, "--")
    if completed.returncode != 0:
        return []
    shas = completed.stdout.split()
    return shas[1:]
