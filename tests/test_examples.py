"""Every `evalward run` command in the README runs as written and meets its criteria.

The commands are read from README.md's fenced bash blocks, so the README cannot drift from what works.
The history database and the music store's database go to a temporary folder.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    # The README and the docs pages it links: a command moved to the docs is still run as written.
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
    commands = []
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            # The quick start installs first; the test environment already has evalward installed.
            line = line.split("&&")[-1].strip()
            if line.startswith("evalward run "):
                commands.append(line)
    return commands


def test_readme_lists_every_example() -> None:
    commands = readme_commands()
    # examples/workflows/ holds GitHub workflow files (tested in tests/ci/test_workflows.py), not an agent.
    examples = {
        p.name
        for p in (ROOT / "examples").iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name != "workflows"
    }
    mentioned = {name for name in examples if any(f"examples/{name}" in c for c in commands)}
    assert mentioned == examples


@pytest.mark.parametrize("command", readme_commands())
def test_readme_example_command_passes(command: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "evalward", *shlex.split(command)[1:]]
    env = {
        **os.environ,
        "EVALWARD_DB": f"sqlite:///{tmp_path}/history.db",
        "MUSIC_STORE_DB": str(tmp_path / "music.db"),
    }
    completed = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "run id: " in completed.stdout
    assert "error" not in completed.stderr.lower(), completed.stderr
