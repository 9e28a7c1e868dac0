"""The import rules of docs/architecture.md hold: every import of every module, read from its source."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "evalward"
SQL_LIBRARIES = ("sqlalchemy", "alembic", "psycopg", "psycopg2", "sqlite3")


def allowed_imports() -> dict[str, set[str] | None]:
    """{package: the packages it may import, None for "everything"} from the table in docs/architecture.md."""
    rules: dict[str, set[str] | None] = {}
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        row = re.fullmatch(r"\| `(\w+)` \|[^|]*\| ([^|]+) \|", line.strip())
        if row is None:
            continue
        name, may = row.group(1), row.group(2).strip()
        if may == "everything":
            rules[name] = None
        elif may == "nothing of ours":
            rules[name] = set()
        else:
            rules[name] = set(re.findall(r"`(\w+)`", may))
    return rules


def unit_of(path: Path) -> str:
    """The package (or top-level module) of `src/evalward` that `path` belongs to."""
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def imports_in(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import in the file, wherever it stands."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            module = node.module or ""
            yield node.lineno, module
            if module == "evalward":  # `from evalward import x` imports the module evalward.x when x is one
                for alias in node.names:
                    yield node.lineno, f"evalward.{alias.name}"


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_table_parses_and_names_every_package() -> None:
    rules = allowed_imports()
    assert rules["model"] == set() and rules["metrics"] == {"model"} and rules["_cli"] is None
    units = {unit_of(p) for p in modules()} - {"__init__", "__main__"}
    assert sorted(units - set(rules)) == [], "add these to the table in docs/architecture.md"
    assert sorted(set(rules) - units) == [], "the table names packages that do not exist"
    for name, allowed in rules.items():
        assert allowed is None or allowed <= set(rules), f"{name} may import an unknown package"


def test_every_import_between_packages_is_allowed_by_the_table() -> None:
    rules = allowed_imports()
    wrong: list[str] = []
    for path in modules():
        unit = unit_of(path)
        allowed = rules.get(unit)
        if unit in ("__init__", "__main__") or allowed is None:
            continue
        for line, module in imports_in(path):
            parts = module.split(".")
            if parts[0] != "evalward" or len(parts) == 1 or parts[1] == unit:
                continue
            target = parts[1]
            if target not in allowed and target != "__version__":
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({unit} may import: {allowed})")
    assert wrong == []


def test_sql_only_in_the_store() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in modules()
        if unit_of(path) != "store"
        for line, module in imports_in(path)
        if module.split(".")[0] in SQL_LIBRARIES
    ]
    assert wrong == []


def test_the_stage_rules_the_issue_names_are_in_the_table() -> None:
    """The rules are the table's, but these must never be loosened there without a redesign."""
    rules = allowed_imports()
    assert rules["model"] == set()
    assert rules["metrics"] == {"model"}
    assert rules["gate"] == {"model"}
    report = rules["report"]
    assert report is not None and not report & {"github", "store"}


def test_the_checker_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from evalward.store import Store\n"
        "def f():\n"
        "    import sqlalchemy.orm\n"
        "    from evalward import report\n",
        encoding="utf-8",
    )
    found = [module for _, module in imports_in(sample)]
    assert "evalward.store" in found and "sqlalchemy.orm" in found and "evalward.report" in found


MAX_MODULE_LINES = 600
LONG_MODULE_REASON = "longer than 600 lines because"


def test_no_module_is_over_600_lines_unless_its_first_lines_say_why() -> None:
    """A module a reader can hold: past 600 lines its docstring's first lines must give the reason."""
    long_ones = []
    for path in modules():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > MAX_MODULE_LINES and LONG_MODULE_REASON not in text[:600].lower():
            long_ones.append(f"{path.relative_to(ROOT)}: {text.count(chr(10))} lines")
    assert long_ones == []


MAX_LOCAL_IMPORTS = 100
LOCAL_IMPORT_REASONS = ("# start-up:", "# cycle:")


def local_imports_of_ours(path: Path) -> list[tuple[int, bool]]:
    """(line, whether it says why) of every import of an evalward module inside a function of `path`; a reason
    is a `# start-up: …` or `# cycle: …` comment on the import's lines or the line just above it."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: dict[int, bool] = {}
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            modules = (
                [inner.module or ""]
                if isinstance(inner, ast.ImportFrom)
                else [alias.name for alias in inner.names]
                if isinstance(inner, ast.Import)
                else []
            )
            if not any(module == "evalward" or module.startswith("evalward.") for module in modules):
                continue
            around = lines[max(inner.lineno - 2, 0) : inner.end_lineno or inner.lineno]
            found[inner.lineno] = any(reason in line for line in around for reason in LOCAL_IMPORT_REASONS)
    return sorted(found.items())


def test_imports_of_our_modules_sit_at_the_top_unless_they_say_why() -> None:
    """docs/architecture.md ("Heavy imports wait"): a module imports evalward's own modules at its top; one
    inside a function says why (`# start-up:` measured, or `# cycle:`), and there are at most 100 of them."""
    silent: list[str] = []
    total = 0
    for path in modules():
        for line, reasoned in local_imports_of_ours(path):
            total += 1
            if not reasoned:
                silent.append(f"{path.relative_to(ROOT)}:{line}")
    assert silent == [], "say why (# start-up: … / # cycle: …) or move these to the top"
    assert total <= MAX_LOCAL_IMPORTS


def test_the_local_import_check_sees_nested_functions_and_reasons(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "def outer():\n"
        "    from evalward import report  # start-up: only for reports\n"
        "    def inner():\n"
        "        # cycle: evalward.store imports this module\n"
        "        from evalward.store import Store\n"
        "        import evalward.gate\n"
        "        import json\n",
        encoding="utf-8",
    )
    assert local_imports_of_ours(sample) == [(3, True), (6, True), (7, False)]


def test_no_two_modules_share_a_name() -> None:
    """A module's name says its role without its package: no reader has to ask which `options.py` is meant."""
    seen: dict[str, list[str]] = {}
    for path in modules():
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
