"""`_gating.base_branch`: the base branch of a run that records none, found in a real git checkout.

Each repository: `m1 ── m2` on the default branch, and `feature` off `m1` with one commit `f1`, checked out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward._gating.base_branch import FoundBaseBranch, find_base_branch
from evalward.model import RunContext
from gating.test_scenarios import git


@pytest.fixture(autouse=True)
def _no_user_git_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    # the user's own init.defaultBranch would otherwise take part in every answer
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def commit(repo: Path, name: str) -> str:
    (repo / f"{name}.txt").write_text(name)
    git(repo, "add", f"{name}.txt")
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


def make_repo(root: Path, default: str = "main") -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", default)
    commit(root, "m1")
    git(root, "checkout", "-q", "-b", "feature")
    commit(root, "f1")
    git(root, "checkout", "-q", default)
    commit(root, "m2")
    git(root, "checkout", "-q", "feature")
    return root


def on_feature(repo: Path) -> RunContext:
    """The context `evalward run` records on `feature` without --base-branch: commit and branch, no base."""
    return RunContext(commit=git(repo, "rev-parse", "HEAD"), branch="feature")


def test_a_repository_without_a_remote_is_gated_against_its_local_main(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    found = find_base_branch(on_feature(repo), repo)
    assert found == FoundBaseBranch(name="main", how="the local default branch: no remote")
    assert found.describe() == "base branch main (the local default branch: no remote)"


def test_master_is_taken_when_there_is_no_main(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", default="master")
    found = find_base_branch(on_feature(repo), repo)
    assert found == FoundBaseBranch(name="master", how="the local default branch: no remote")


def test_git_config_init_default_branch_comes_before_main_when_that_branch_exists(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    git(repo, "branch", "trunk", "main")
    git(repo, "config", "init.defaultBranch", "trunk")
    found = find_base_branch(on_feature(repo), repo)
    assert found == FoundBaseBranch(name="trunk", how="git config init.defaultBranch: no remote")
    git(repo, "config", "init.defaultBranch", "release")  # no such branch here: not taken
    assert find_base_branch(on_feature(repo), repo) == FoundBaseBranch(
        name="main", how="the local default branch: no remote"
    )


def test_a_branch_name_from_git_that_could_be_read_as_an_option_is_not_taken(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    # `git update-ref` writes a branch `git branch` would refuse, and git config stores any text: a name that
    # starts with '-' must not come back as the base branch (it would reach git commands and SQL)
    git(repo, "update-ref", "refs/heads/--output=x", "main")
    git(repo, "config", "init.defaultBranch", "--output=x")
    found = find_base_branch(on_feature(repo), repo)
    assert found == FoundBaseBranch(name="main", how="the local default branch: no remote")


def test_a_clone_takes_the_remote_default_branch_from_origin_head(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream", default="trunk")
    git(upstream, "checkout", "-q", "trunk")  # a clone's origin/HEAD follows the HEAD of what it clones
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    git(clone, "checkout", "-q", "-b", "feature", "origin/feature")
    assert find_base_branch(on_feature(clone), clone) == FoundBaseBranch(
        name="trunk", how="origin/HEAD: the remote's default branch"
    )
    # without origin/HEAD the local default branch is taken, and the message says that a remote exists
    git(clone, "remote", "set-head", "origin", "--delete")
    git(clone, "config", "init.defaultBranch", "trunk")
    assert find_base_branch(on_feature(clone), clone) == FoundBaseBranch(
        name="trunk", how="git config init.defaultBranch: no origin/HEAD"
    )


def test_no_guess_for_a_run_on_the_base_branch_or_at_its_own_merge_base(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    main_tip, m1 = git(repo, "rev-parse", "main"), git(repo, "rev-parse", "main~1")
    assert find_base_branch(RunContext(commit=main_tip, branch="main"), repo) is None
    # detached at main's tip, or at an older commit of main: the commit is its own merge-base with main
    assert find_base_branch(RunContext(commit=main_tip), repo) is None
    assert find_base_branch(RunContext(commit=m1, branch="old-work"), repo) is None


def test_no_guess_when_the_run_knows_its_base_or_nothing_fits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    head = git(repo, "rev-parse", "HEAD")
    for context in (
        RunContext(commit=head, branch="feature", base_branch="release"),
        RunContext(commit=head, branch="feature", base_sha="a" * 40),
        RunContext(commit=head, branch="feature", merge_base="a" * 40),
        RunContext(branch="feature"),  # no commit: nothing to compute a merge-base from
    ):
        assert find_base_branch(context, repo) is None, context
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    git(orphan, "init", "-q", "-b", "work")
    commit(orphan, "o1")
    assert find_base_branch(RunContext(commit=git(orphan, "rev-parse", "HEAD"), branch="work"), orphan) is None
    git(orphan, "checkout", "-q", "--orphan", "main")  # a main that shares no history with the run
    commit(orphan, "o2")
    git(orphan, "checkout", "-q", "work")
    assert find_base_branch(RunContext(commit=git(orphan, "rev-parse", "HEAD"), branch="work"), orphan) is None
