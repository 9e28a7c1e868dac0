"""Hostile eval files (issue #12): each is refused by the real CLI with exit 2, in one clean line naming the file.

Every file is generated here, at test time. Each runs through `python -m evalward validate FILE` and
`python -m evalward run FILE --agent …` as a subprocess, which must end within 15 s with exit 2, name the
file in stderr, print no traceback and peak below 600 MB of resident memory (`ru_maxrss` from `os.wait4`,
taken by a small launcher; see LAUNCHER). Before the hardening: a FIFO hung, a link to /dev/zero or an alias bomb grew until the
machine ran out of memory, and a huge integer, a NUL or a link loop printed a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TIME_LIMIT_S = 15.0
MEMORY_LIMIT_MB = 600
AGENT = "def agent(query: str) -> str:\n    return 'fine'\n"


def _alias_bomb() -> str:
    """Nine anchors, each a list of nine aliases of the one before: 9**9 (387 million) strings when expanded."""
    lines = ["evalward: 1", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]" for level in range(1, 9)]
    return "\n".join([*lines, "cases: []", ""])


def _native(case: str) -> str:
    return '{"evalward": 1, "cases": [' + case + "]}"


def _write(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        return path

    return make


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.eval.json"
    os.mkfifo(path)
    return path


def _link(name: str, target: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.symlink_to(target if target.startswith("/") else folder / target)
        return path

    return make


@dataclass(frozen=True)
class Hostile:
    """A hostile file: how to make it, and what stderr must say about it."""

    make: Callable[[Path], Path]
    says: str


HOSTILE: dict[str, Hostile] = {
    "fifo": Hostile(_fifo, "it is a FIFO (named pipe), not a regular file"),
    "link to /dev/zero": Hostile(_link("zero.eval.json", "/dev/zero"), "it is a device, not a regular file"),
    "looping link": Hostile(_link("loop.eval.json", "loop.eval.json"), "its symbolic links form a loop"),
    "60 MB string": Hostile(
        _write("big.eval.json", _native('{"id": "a", "query": "' + "a" * (60 * 1024 * 1024) + '"}')),
        "the file is larger than the 50 MiB limit",
    ),
    "alias bomb": Hostile(_write("bomb.eval.yaml", _alias_bomb()), "values through its aliases"),
    "5,000-digit integer": Hostile(
        _write("int.eval.json", _native('{"id": "a", "query": "q", "n": ' + "9" * 5000 + "}")),
        ":1:58: an integer with 5,000 digits",
    ),
    "YAML with NUL": Hostile(
        _write("nul.eval.yaml", "evalward: 1\ncases:\n  - id: a\x00b\n    query: q\n"),
        ":3:10: the file contains a NUL character",
    ),
    "duplicate JSON key": Hostile(
        _write("dup.eval.json", '{"evalward": 1,\n "cases": [],\n "cases": []}'),
        ":3:2: duplicate key 'cases' (first at line 2, column 2)",
    ),
    "duplicate YAML key": Hostile(
        _write("dup.eval.yaml", "evalward: 1\ncases: []\ncases: []\n"),
        ":3:1: duplicate key 'cases' (first at line 2, column 1)",
    ),
    "UTF-16": Hostile(
        _write("utf16.eval.json", _native('{"id": "a", "query": "q"}').encode("utf-16")),
        "byte order mark; save it as UTF-8",
    ),
    "deep nesting": Hostile(
        _write("deep.eval.json", _native('{"id": "a", "query": ' + "[" * 5000 + "]" * 5000 + "}")),
        "values are nested more than 100 levels deep",
    ),
    "NUL in a case id": Hostile(
        _write("nulid.eval.json", _native('{"id": "a\\u0000b", "query": "q"}')),
        ":1:27: the case id contains a control character",
    ),
    "newline in the file name": Hostile(
        _write("x\n::error title=owned::pwned.eval.json", _native('{"id": "a", "query": "q"}')),
        "pwned.eval.json:1:1: the eval set id, taken from the file name, contains a control character",
    ),
}


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    seconds: float
    peak_mb: float
    stderr: str


# Linux counts the memory a process had before `exec` in its peak, so a CLI started straight from a pytest
# worker of several hundred MB would "peak" at the worker's size. A small launcher starts it instead and
# prints the peak `os.wait4` reports for it (in KiB; the launcher's own ~10 MB is all that is added).
LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.waitstatus_to_exitcode(status)
print(usage.ru_maxrss)
sys.exit(child.returncode)
"""


def run_cli(args: list[str], cwd: Path, variables: dict[str, str] | None = None) -> Outcome:
    """Run `python -m evalward ARGS` through LAUNCHER; killed (with the launcher) after TIME_LIMIT_S."""
    env = {**os.environ, "EVALWARD_NO_HISTORY": "1"}
    env.pop("EVALWARD_MAX_FILE_SIZE", None)
    env.update(variables or {})
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, sys.executable, "-m", "evalward", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    peak_kib = int(stdout.strip().splitlines()[-1]) if stdout.strip() else 0
    return Outcome(process.returncode, seconds, peak_kib / 1024, stderr)


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "agent.py").write_text(AGENT)
    return {name: hostile.make(folder) for name, hostile in HOSTILE.items()}


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_file_is_exit_2_naming_the_file(name: str, command: str, hostile_folder: dict[str, Path]) -> None:
    path = hostile_folder[name]
    args = [command, path.name] if command == "validate" else [command, path.name, "--agent", "agent.py:agent"]
    outcome = run_cli(args, path.parent)
    assert outcome.seconds < TIME_LIMIT_S, f"{name}: still running after {TIME_LIMIT_S} s"
    assert outcome.exit_code == 2, outcome.stderr
    assert "Traceback" not in outcome.stderr
    assert outcome.peak_mb < MEMORY_LIMIT_MB, f"{name}: {outcome.peak_mb:.0f} MB"
    assert HOSTILE[name].says in outcome.stderr
    # The file is named: as given, with control characters escaped and `::` broken, all on one line.
    [problem] = [line for line in outcome.stderr.splitlines() if HOSTILE[name].says in line]
    shown = path.name.replace("\n", "\\n").replace("::", ":\u200b:")
    assert problem.strip().startswith(shown), problem
    assert not any(line.lstrip().startswith("::") for line in outcome.stderr.splitlines())


def test_a_20_mb_string_within_the_cap_is_read_in_bounded_memory(tmp_path: Path) -> None:
    # 2.5 GB before the position scanner replaced a regular expression.
    path = tmp_path / "long.eval.json"
    path.write_text(_native('{"id": "a", "query": "' + "\\n" * (10 * 1024 * 1024) + '"}'))
    outcome = run_cli(["validate", path.name], tmp_path)
    assert (outcome.exit_code, outcome.stderr) == (0, "")
    assert outcome.peak_mb < 300, f"{outcome.peak_mb:.0f} MB"


def test_the_size_cap_is_an_option_and_a_variable(tmp_path: Path) -> None:
    path = tmp_path / "small.eval.json"
    path.write_text(_native('{"id": "a", "query": "' + "q" * 2000 + '"}'))
    assert run_cli(["validate", path.name], tmp_path).exit_code == 0
    refused = run_cli(["--max-file-size", "1KB", "validate", path.name], tmp_path)
    assert refused.exit_code == 2
    assert "small.eval.json: the file is larger than the 1 KiB limit" in refused.stderr
    by_variable = run_cli(["validate", path.name], tmp_path, {"EVALWARD_MAX_FILE_SIZE": "1k"})
    assert by_variable.exit_code == 2 and "larger than the 1 KiB limit" in by_variable.stderr
    bad = run_cli(["--max-file-size", "lots", "validate", path.name], tmp_path)
    assert bad.exit_code == 2 and "'lots' is not a size" in bad.stderr
