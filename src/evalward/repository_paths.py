"""A file named the same way on every machine: by its path inside the repository that holds it.

Some ids are made from a path (an ADK legacy test file's case id is its file's path, docs/formats.md §2), and
ids are compared across runs made in different places: a laptop in a subfolder, CI in `/home/runner/work/…`, a
container in `/github/workspace`, `evalward gate` reading a run's eval files back by their absolute paths. The
path as typed (`x`, `./x`, `/abs/x`, through a symbolic link) differs between them; the path from the top-level
folder of the git repository does not. So `repository_path` names a file by that path, `/`-separated; a file
outside every repository by its path from the working directory (`..` where needed). Never an absolute path,
which would name the machine rather than the file.
"""

from __future__ import annotations

import os
from pathlib import Path


def repository_root(start: str | Path) -> Path | None:
    """The nearest folder at or above `start` holding `.git` (a folder, or a file for worktrees), or None."""
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def repository_path(path: str | Path, *, cwd: Path | None = None) -> str:
    """`path` (relative to `cwd`, default the working directory, or absolute) as a `/`-separated path from the
    top-level folder of the git repository holding it; outside any repository, from the working directory.

    The folder is resolved (a symbolic link to it, or the working directory reached through one, names the same
    file), the file's own name is not: a linked eval file is named where it is linked, like any file there."""
    working = (cwd or Path.cwd()).resolve()
    given = Path(path)
    absolute = given if given.is_absolute() else working / given
    try:
        folder = absolute.parent.resolve()
        base = repository_root(folder) or working
    except (OSError, RuntimeError):  # a symbolic-link loop: named as written, the reader reports the loop
        folder, base = Path(os.path.normpath(absolute.parent)), working
    located = folder / absolute.name
    if located.is_relative_to(base):
        return located.relative_to(base).as_posix()
    try:
        return Path(os.path.relpath(located, base)).as_posix()
    except ValueError:  # on another drive than the working directory (Windows): no relative path exists
        return located.name
