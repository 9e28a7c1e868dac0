"""`repository_paths`: a file named by its path inside its repository, never by an absolute path."""

from __future__ import annotations

from pathlib import Path

from evalward.repository_paths import repository_path, repository_root


def test_a_file_is_named_from_the_top_level_folder_of_its_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "evals" / "deep").mkdir(parents=True)
    assert repository_root(repo / "evals" / "deep") == repo
    # typed from a subfolder, with `.` and `..`, or absolute: one name
    assert repository_path("x.test.json", cwd=repo / "evals") == "evals/x.test.json"
    assert repository_path("./deep/../x.test.json", cwd=repo / "evals") == "evals/x.test.json"
    assert repository_path(repo / "evals" / "x.test.json", cwd=tmp_path) == "evals/x.test.json"


def test_a_worktree_marks_its_top_level_folder_with_a_git_file(tmp_path: Path) -> None:
    worktree = tmp_path / "evalward-base-1"
    (worktree / "evals").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/evalward-base-1\n")
    assert repository_path(worktree / "evals" / "x.test.json", cwd=tmp_path) == "evals/x.test.json"


def test_a_linked_file_is_named_where_it_is_linked_a_linked_folder_where_it_leads(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "evals").mkdir()
    shared = tmp_path / "shared.test.json"
    shared.write_text("[]")
    (repo / "evals" / "linked.test.json").symlink_to(shared)
    assert repository_path(repo / "evals" / "linked.test.json") == "evals/linked.test.json"
    (tmp_path / "shortcut").symlink_to(repo / "evals", target_is_directory=True)
    assert repository_path(tmp_path / "shortcut" / "linked.test.json") == "evals/linked.test.json"


def test_outside_any_repository_a_file_is_named_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "work" / "evals").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    assert repository_path(tmp_path / "work" / "evals" / "x.test.json", cwd=tmp_path / "work") == "evals/x.test.json"
    assert repository_path(tmp_path / "work" / "x.test.json", cwd=tmp_path / "other") == "../work/x.test.json"
