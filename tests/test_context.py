"""Where a run happens, read from git when nothing says otherwise (`evalward.context.detect_context`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evalward.context import detect_context


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def repository(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "feature")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "remote", "add", "origin", "git@github.com:octo/shop.git")
    return repo, git(repo, "rev-parse", "HEAD")


def test_commit_branch_and_repository_come_from_git(tmp_path: Path) -> None:
    repo, sha = repository(tmp_path)
    ctx = detect_context(cwd=repo, env={})
    assert (ctx.commit, ctx.branch, ctx.repository) == (sha, "feature", "octo/shop")


def test_a_detached_head_has_a_commit_and_no_branch(tmp_path: Path) -> None:
    repo, sha = repository(tmp_path)
    git(repo, "checkout", "-q", "--detach")
    ctx = detect_context(cwd=repo, env={})
    assert (ctx.commit, ctx.branch) == (sha, None)


def test_an_explicit_commit_keeps_the_branch_from_git(tmp_path: Path) -> None:
    repo, _ = repository(tmp_path)
    ctx = detect_context(cwd=repo, env={}, commit="a" * 40)
    assert (ctx.commit, ctx.branch) == ("a" * 40, "feature")


def test_outside_a_repository_nothing_is_made_up(tmp_path: Path) -> None:
    ctx = detect_context(cwd=tmp_path, env={})
    assert (ctx.commit, ctx.branch, ctx.repository) == (None, None, None)


def test_a_repository_without_commits_has_no_commit_and_no_branch(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    ctx = detect_context(cwd=tmp_path, env={})
    assert (ctx.commit, ctx.branch) == (None, None)
