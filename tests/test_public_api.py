"""`import evalward` gives the documented API, cheaply; nothing outside it is documented as API."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import evalward
import evalward.testing

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {"evalward": set(evalward.__all__), "evalward.testing": set(evalward.testing.__all__)}


def documented_names() -> set[str]:
    """The names of the "Public API" table in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def test_all_is_the_documented_table_and_every_name_resolves() -> None:
    assert set(evalward.__all__) == documented_names()
    for name in evalward.__all__:
        assert getattr(evalward, name) is not None, name
    assert evalward.evaluate is evalward.testing.evaluate
    assert evalward.trace.__name__ == "evalward.trace"
    assert "EvalSet" in dir(evalward)


def test_names_come_from_their_homes() -> None:
    from evalward.gate.policy import GatePolicy
    from evalward.model import AgentOutput, RunResult

    assert evalward.GatePolicy is GatePolicy
    assert evalward.AgentOutput is AgentOutput and evalward.RunResult is RunResult


def test_importing_evalward_imports_nothing_else() -> None:
    probe = "import sys, evalward\nprint(sorted(m for m in sys.modules if m.startswith(('evalward.', 'pydantic'))))"
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout.strip() == "[]"


def test_the_readme_and_the_examples_import_only_the_public_api() -> None:
    sources = [ROOT / "README.md", *sorted((ROOT / "examples").rglob("*.py")), *sorted((ROOT / "docs").glob("*.md"))]
    wrong: list[str] = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"from (evalward(?:\.\w+)*) import ([\w, ]+)", text):
            module, names = match.group(1), {n.strip() for n in match.group(2).split(",")}
            if path.is_relative_to(ROOT / "examples") and path.name.startswith("test_"):
                continue  # an example's own tests may look inside
            public = PUBLIC_MODULES.get(module)
            if public is None or not names <= public:
                wrong.append(f"{path.relative_to(ROOT)}: from {module} import {', '.join(sorted(names))}")
        for match in re.finditer(r"\bevalward\.(\w+)\.(\w+)\(", text):
            if f"evalward.{match.group(1)}" not in PUBLIC_MODULES:
                wrong.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert wrong == []


def test_the_machinery_is_marked_private() -> None:
    """The glue that may import everything (the "everything" rows of the import table) is the machinery behind
    the commands, the Action and the daemon: its packages are private (`_cli`, `_ci`, `_server`, …), like
    inspect_ai's; the public pytest API (`testing`) is the one exception."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    glue = [
        row.split("|")[1].strip().strip("`")
        for row in text.splitlines()
        if row.startswith("| `") and row.rstrip().endswith("| everything |")
    ]
    assert glue and all(name.startswith("_") for name in glue if name != "testing"), glue
    assert {path.name for path in (ROOT / "src" / "evalward").iterdir()} >= {"_cli", "_ci", "_server", "_pipeline"}
