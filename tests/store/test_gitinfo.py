"""`store.gitinfo`: the one merge-base resolution, its explanations when git cannot tell, and trusting a checkout.

History (first parent on the left):

    main:     m1 ── m2 ── m3
                     \\
    feature:          f1          (PR head f1; merge-base with main = m2)
    orphan:   o1                  (no common history)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalward.model import RunContext, RunResult
from evalward.store.gitinfo import (
    MergeBaseError,
    git_output,
    repository_root,
    resolve_merge_base,
    safe_directory_env,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("repo")
    _git(root, "init", "-q", "-b", "main")
    shas: dict[str, str] = {}

    def commit(name: str) -> None:
        (root / f"{name}.txt").write_text(name)
        _git(root, "add", f"{name}.txt")
        _git(root, "commit", "-q", "-m", name)
        shas[name] = _git(root, "rev-parse", "HEAD")

    commit("m1")
    commit("m2")
    _git(root, "checkout", "-q", "-b", "feature")
    commit("f1")
    _git(root, "checkout", "-q", "main")
    commit("m3")
    _git(root, "checkout", "-q", "--orphan", "orphan")
    commit("o1")
    _git(root, "checkout", "-q", "feature")
    return root, shas


def test_the_merge_base_comes_from_the_base_sha_else_the_branch(repo: tuple[Path, dict[str, str]]) -> None:
    root, shas = repo
    by_sha = RunContext(commit=shas["f1"], base_sha=shas["m3"])
    assert resolve_merge_base(by_sha, base_branch=None, repo_dir=root, required=True) == shas["m2"]
    by_branch = RunContext(commit=shas["f1"])
    assert resolve_merge_base(by_branch, base_branch="main", repo_dir=root, required=True) == shas["m2"]
    recorded = RunContext(commit=shas["f1"], merge_base="c" * 40)  # what the run recorded wins
    assert resolve_merge_base(recorded, base_branch="main", repo_dir=root) == "c" * 40
    run = RunResult(run_id="r", status="complete", passed=True, context=by_sha)
    assert resolve_merge_base(run, base_branch=None, repo_dir=root) == shas["m2"]  # gating.gate_run's signature


@pytest.mark.parametrize(
    ("context", "base_branch", "why"),
    [
        (
            lambda s: RunContext(commit="e" * 40, base_sha=s["m3"]),
            None,
            "the head commit eeeeeeeeeeee is not in the checkout",
        ),
        (
            lambda s: RunContext(commit=s["f1"], base_sha="d" * 40),
            None,
            "the base commit dddddddddddd is not in the checkout",
        ),
        (lambda s: RunContext(commit=s["f1"]), "release", "the base branch release is not in the checkout"),
        (lambda s: RunContext(commit=s["f1"], base_sha=s["o1"]), None, "the head and the base share no history"),
        (lambda s: RunContext(commit=s["f1"]), None, "neither the base commit nor the base branch is known"),
    ],
    ids=["head missing", "base missing", "branch missing", "unrelated", "no base"],
)
def test_a_required_merge_base_that_git_cannot_give_says_why(
    repo: tuple[Path, dict[str, str]], context: object, base_branch: str | None, why: str
) -> None:
    root, shas = repo
    ctx = context(shas)  # type: ignore[operator]
    assert resolve_merge_base(ctx, base_branch=base_branch, repo_dir=root) is None  # not required: None
    with pytest.raises(MergeBaseError) as caught:
        resolve_merge_base(ctx, base_branch=base_branch, repo_dir=root, required=True)
    assert why in str(caught.value)
    assert caught.value.exit_code == 3 and "does not fall back to the base commit" in str(caught.value)


def test_a_shallow_clone_and_a_folder_without_git_are_explained(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, shas = repo
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{root}", str(shallow))
    with pytest.raises(MergeBaseError, match=r"the checkout is shallow; fix: .*`fetch-depth: 0`"):
        resolve_merge_base(
            RunContext(commit=shas["f1"], base_sha=shas["m3"]), base_branch=None, repo_dir=shallow, required=True
        )
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(MergeBaseError, match="the folder is not a git checkout; fix: run `actions/checkout`"):
        resolve_merge_base(
            RunContext(commit=shas["f1"], base_sha=shas["m3"]), base_branch=None, repo_dir=plain, required=True
        )


def test_the_repository_root_is_found_from_a_subfolder(repo: tuple[Path, dict[str, str]]) -> None:
    root, shas = repo
    sub = root / "deep" / "er"
    sub.mkdir(parents=True, exist_ok=True)
    assert repository_root(sub) == root
    assert git_output(sub, "rev-parse", "HEAD") == shas["f1"]


def test_safe_directory_env_appends_to_the_configuration_already_given() -> None:
    top = Path("/github/workspace")
    assert safe_directory_env(top, {}) == {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "/github/workspace",
    }
    given = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader", "GIT_CONFIG_VALUE_0": "x"}
    assert safe_directory_env(top, given) == {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_1": "safe.directory",
        "GIT_CONFIG_VALUE_1": "/github/workspace",
    }
    trusted = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": str(top)}
    assert safe_directory_env(top, trusted) == {}  # already there: nothing added twice
