"""Which files a list of paths names: explicit files as given, directories searched recursively.

In directories only eval-file names are taken: `*.test.json`, `*.evalset.json`, `*.eval.json`,
`*.eval.jsonl`, `*.eval.yaml`, `*.eval.yml` (never `test_config.json`); hidden directories,
`node_modules`, `.venv`/`venv` and `__pycache__` are skipped. A file named explicitly is read whatever its
name (the reader refuses what is not a regular file, saying what it is). Order is stable: paths as given, and within a directory sorted by relative path. A file reached
twice is read once.

ADK's case selection: `FILE:ID1,ID2` names the file FILE and only those case ids in it (`adk eval`'s syntax).
A path that exists is always a path, colon or not; only a path that does not exist is split at its last
colon, and only when what precedes it is a file. The same file given whole and with ids runs whole; given
with ids twice, it runs the ids of both.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import FileProblem

EVAL_FILE_SUFFIXES: tuple[str, ...] = (
    ".test.json",
    ".evalset.json",
    ".eval.json",
    ".eval.jsonl",
    ".eval.yaml",
    ".eval.yml",
)
CONFIG_FILE_NAME = "test_config.json"
INITIAL_SESSION_FILE_NAME = "initial.session.json"
"""Beside an ADK legacy test file: the session its case starts from (ADK's `initial_session_file`)."""
SKIPPED_DIRECTORIES = frozenset({"node_modules", ".venv", "venv", "__pycache__"})


@dataclass
class Discovered:
    """Files to read (`(path on disk, path as shown to the user)`), and paths that do not exist."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    selected: dict[Path, list[str] | None] = field(default_factory=dict)
    """Per file (by `file_key`): the case ids `FILE:IDS` named, None when the file was also named whole."""

    def case_ids(self, path: Path) -> list[str] | None:
        """The case ids selected in `path`, or None for all of them."""
        return self.selected.get(file_key(path))


def file_key(path: Path) -> Path:
    """The identity of a file for de-duplication: its resolved path (the absolute one inside a link loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symbolic-link loop: the reader reports it
        return path.absolute()


def split_case_selection(given: str) -> tuple[str, list[str]] | None:
    """`FILE:ID1,ID2` → (FILE, [ID1, ID2]) when FILE is a file and `given` itself does not exist; else None."""
    if os.path.lexists(given) or ":" not in given:
        return None
    location, _, ids = given.rpartition(":")
    names = [name.strip() for name in ids.split(",") if name.strip()]
    if not location or not names or not Path(location).is_file():
        return None
    return location, names


def is_eval_file_name(name: str) -> bool:
    return name != CONFIG_FILE_NAME and name.lower().endswith(EVAL_FILE_SUFFIXES)


def eval_set_stem(name: str) -> str:
    """`roll_die.test.json` → `roll_die`, `music.eval.yaml` → `music`, `data.jsonl` → `data`."""
    lowered = name.lower()
    for suffix in EVAL_FILE_SUFFIXES:
        if lowered.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return Path(name).stem or name


def discover(paths: Sequence[str | Path]) -> Discovered:
    found = Discovered()
    seen: set[Path] = set()

    def take(path: Path, shown: str, ids: list[str] | None = None) -> None:
        key = file_key(path)
        if key not in seen:
            seen.add(key)
            found.files.append((path, shown))
            found.selected[key] = ids
        elif ids is None:
            found.selected[key] = None
        elif (before := found.selected.get(key)) is not None:
            found.selected[key] = list(dict.fromkeys([*before, *ids]))

    for given in paths:
        path = Path(given)
        selection = split_case_selection(str(given))
        if selection is not None:
            take(Path(selection[0]), selection[0], selection[1])
        elif path.is_dir():
            before = len(found.files)
            for file in _walk(path):
                take(file, str(file))
            if len(found.files) == before:
                found.warnings.append(
                    f"{given}: no eval files found (looked for {', '.join('*' + s for s in EVAL_FILE_SUFFIXES)})"
                )
        elif os.path.lexists(path):
            # Named explicitly and present: a FIFO, a device or a broken link too, which the reader refuses
            # with the reason (`evalward.reading`).
            take(path, str(given))
        else:
            found.problems.append(
                FileProblem(
                    path=str(given), message="no such file or directory", expected="an eval file or a directory"
                )
            )
    return found


def _walk(root: Path) -> list[Path]:
    files: list[Path] = []
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in SKIPPED_DIRECTORIES)
        files.extend(Path(directory) / name for name in sorted(names) if is_eval_file_name(name))
    return sorted(files, key=lambda p: p.relative_to(root).parts)
