"""Which files a list of paths names: explicit files as given, directories searched recursively.

In directories only eval-file names are taken: `*.test.json`, `*.evalset.json`, `*.eval.json`,
`*.eval.jsonl`, `*.eval.yaml`, `*.eval.yml` (never `test_config.json`); hidden directories,
`node_modules`, `.venv`/`venv` and `__pycache__` are skipped. A file named explicitly is read whatever its
name (the reader refuses what is not a regular file, saying what it is). Order is stable: paths as given, and within a directory sorted by relative path. A file reached
twice is read once.
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
SKIPPED_DIRECTORIES = frozenset({"node_modules", ".venv", "venv", "__pycache__"})


@dataclass
class Discovered:
    """Files to read (`(path on disk, path as shown to the user)`), and paths that do not exist."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


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

    def take(path: Path, shown: str) -> None:
        try:
            key = path.resolve()
        except (OSError, RuntimeError):  # a symbolic-link loop: the reader reports it
            key = path.absolute()
        if key not in seen:
            seen.add(key)
            found.files.append((path, shown))

    for given in paths:
        path = Path(given)
        if path.is_dir():
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
