"""The base branch of a local run that names none, found in the checkout (docs/gate.md §9, step 1).

In CI the event names the branch a pull request merges into, and the run records it. A run made on a laptop
records none unless `--base-branch` or `base_branch` in `evalward.toml` gave it, and without one there is no
merge-base and the thresholds alone would judge. `evalward gate` therefore looks for the branch the way a reader
of the repository would, first found wins:

1. `origin/HEAD`, the remote's default branch (set by `git clone`);
2. the branch `git config init.defaultBranch` names, when it exists locally;
3. a local `main`, else a local `master`.

and says which one it took and why ("base branch main (the local default branch: no remote)"), in the terminal
and in the verdict. It does not look when the run knows its base (a base branch, base commit or merge-base, as
CI records them), nor take a branch that is the run's own or whose merge-base with the run is the run's commit:
such a run is on the base branch's history, so it is the base and has no base side, as before (a guess would
make it the baseline of itself, or of another run at its own commit). A branch name read from git is checked
(`identifiers.is_ref`) before it is given back to git or used in SQL.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evalward.identifiers import is_ref
from evalward.model import RunContext
from evalward.store.gitinfo import git_output, resolve_merge_base

LOCAL_DEFAULT_BRANCHES = ("main", "master")
"""Tried in this order when neither the remote nor git's configuration names the default branch."""

_REMOTE = "origin"


class FoundBaseBranch(BaseModel):
    """A base branch the run did not record, found in the checkout, and how."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    name: str
    how: str
    """Where it came from, e.g. `the local default branch: no remote`."""

    def describe(self) -> str:
        """`base branch main (the local default branch: no remote)`: what the terminal and the verdict say."""
        return f"base branch {self.name} ({self.how})"


def find_base_branch(context: RunContext, repo_dir: Path) -> FoundBaseBranch | None:
    """The base branch of a run that records no base, found in `repo_dir` (module docstring); None when the run
    knows its base, when no candidate exists, or when the candidate is the run's own branch or commit."""
    if context.base_branch or context.base_sha or context.merge_base or not context.commit:
        return None
    found = _default_branch(repo_dir)
    if found is None or found.name == context.branch:
        return None
    merge_base = resolve_merge_base(context, base_branch=found.name, repo_dir=repo_dir)
    if merge_base is None or merge_base == context.commit:
        return None
    return found


def _default_branch(repo_dir: Path) -> FoundBaseBranch | None:
    remote_head = git_output(repo_dir, "symbolic-ref", "--quiet", f"refs/remotes/{_REMOTE}/HEAD")
    prefix = f"refs/remotes/{_REMOTE}/"
    if remote_head is not None and remote_head.startswith(prefix):
        name = remote_head.removeprefix(prefix)
        if is_ref(name) and _is_commit(repo_dir, f"{prefix}{name}"):
            return FoundBaseBranch(name=name, how=f"{_REMOTE}/HEAD: the remote's default branch")
    # A clone made without `origin/HEAD` (a remote added by hand, or `git remote set-head -d`) has a remote all
    # the same: say which of the two is the case, so the user knows whether `git remote set-head` would help.
    missing = f"no {_REMOTE}/HEAD" if git_output(repo_dir, "remote") else "no remote"
    configured = git_output(repo_dir, "config", "--get", "init.defaultBranch")
    if configured is not None and is_ref(configured) and _is_commit(repo_dir, f"refs/heads/{configured}"):
        return FoundBaseBranch(name=configured, how=f"git config init.defaultBranch: {missing}")
    for name in LOCAL_DEFAULT_BRANCHES:
        if _is_commit(repo_dir, f"refs/heads/{name}"):
            return FoundBaseBranch(name=name, how=f"the local default branch: {missing}")
    return None


def _is_commit(repo_dir: Path, ref: str) -> bool:
    """Whether the full ref `ref` (checked by the caller) names a commit in `repo_dir`."""
    return git_output(repo_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}") is not None
