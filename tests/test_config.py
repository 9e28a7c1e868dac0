"""The settings file: `evalward.toml`, else `[tool.evalward]` in `pyproject.toml`, found without parsing a
pyproject.toml that cannot hold it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalward.config import find_config, load_config, may_hold_evalward_settings

# Every way TOML can spell a `tool.evalward` table, each setting the same value.
EVALWARD_SECTIONS = {
    "table": "[tool.evalward]\nrepeat = 3\n",
    "spaced, quoted, commented": "[ \"tool\" . 'evalward' ]  # ours\nrepeat = 3\n",
    "sub-table only": "[tool.evalward.gate]\nalpha = 0.1\n[tool.evalward]\nrepeat = 3\n",
    "tool table": "[tool]\nevalward = { repeat = 3 }\n",
    "top-level dotted key": "tool.evalward.repeat = 3\n",
    "top-level inline table": "tool = { evalward = { repeat = 3 } }\n",
    "after other tables": '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n\n[tool.evalward]\nrepeat = 3\n',
}

# Files that cannot define `tool.evalward`, though some mention evalward.
WITHOUT_EVALWARD = {
    "other tools": '[project]\nname = "shop"\ndependencies = ["evalward>=0.1"]\n\n[tool.ruff]\nline-length = 100\n',
    "evalward as a script": '[project]\nname = "evalward"\n\n[project.scripts]\nevalward = "evalward._cli.main:main"\n',
    "a sub-table of another tool": "[tool.pytest.evalward]\nx = 1\n",
    "empty": "",
}


@pytest.mark.parametrize("text", EVALWARD_SECTIONS.values(), ids=EVALWARD_SECTIONS.keys())
def test_every_spelling_of_the_section_is_found_and_read(tmp_path: Path, text: str) -> None:
    assert may_hold_evalward_settings(text)
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    found = find_config(tmp_path)
    assert found == tmp_path / "pyproject.toml"
    assert load_config(found).settings.run.repeat == 3


@pytest.mark.parametrize("text", WITHOUT_EVALWARD.values(), ids=WITHOUT_EVALWARD.keys())
def test_a_pyproject_without_the_section_is_not_a_settings_file(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    assert not may_hold_evalward_settings(text)
    assert find_config(tmp_path) is None


def test_the_check_never_hides_a_section_the_parser_would_find() -> None:
    """The text check only skips parsing: wherever the parser finds `tool.evalward`, the check said maybe."""
    import tomllib

    for text in (*EVALWARD_SECTIONS.values(), *WITHOUT_EVALWARD.values()):
        data = tomllib.loads(text)
        if "evalward" in data.get("tool", {}):
            assert may_hold_evalward_settings(text), text


def test_evalward_toml_comes_first(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.evalward]\nrepeat = 3\n", encoding="utf-8")
    (tmp_path / "evalward.toml").write_text("repeat = 5\n", encoding="utf-8")
    found = find_config(tmp_path)
    assert found == tmp_path / "evalward.toml"
    assert load_config(found).settings.run.repeat == 5


def test_a_pyproject_without_the_section_is_never_parsed(tmp_path: Path) -> None:
    """Start-up: most projects' pyproject.toml holds no evalward settings, and the TOML parser stays unloaded."""
    (tmp_path / "pyproject.toml").write_text(WITHOUT_EVALWARD["evalward as a script"], encoding="utf-8")
    probe = (
        "import sys\nfrom pathlib import Path\nfrom evalward.config import load_config\n"
        "print(load_config(None).path, 'tomllib' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path
    )
    assert completed.stdout.split() == ["None", "False"], completed.stderr[-2000:]


@pytest.mark.parametrize("command", [["runs"], ["history"], ["compare", "a", "b"]])
def test_every_command_takes_the_settings_files_values_as_its_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """`db = …` in evalward.toml is the history of every command with `--db`, not only of run and ci."""
    from click.testing import CliRunner

    from evalward._cli.main import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVALWARD_DB", raising=False)
    (tmp_path / "evalward.toml").write_text('db = "sqlite:///team.db"\n', encoding="utf-8")
    CliRunner().invoke(cli, command)
    assert (tmp_path / "team.db").is_file()
    assert not (tmp_path / ".evalward" / "history.db").exists()
