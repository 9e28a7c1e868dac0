"""Declared dependencies are the imported ones (pyproject.toml against the source's imports).

- every third-party module evalward imports (at the top of a module or inside a function, or by name through
  `importlib.import_module("…")`) belongs to a distribution declared in `dependencies` or in an extra other
  than `test` — an optional feature's package declared only for the tests is missing for users;
- every runtime dependency is imported somewhere (nothing declared for nothing);
- every third-party module the tests import is declared too (runtime, or an extra `test` pulls in);
- runtime requirements and the feature extras have a lower bound and no exact pin (`==` belongs in the test
  extra's oracles and in constraints/action.txt), and an upper bound on the major unless the project uses
  calendar versions.

The lowest allowed versions are installed and tested by `.ci/lowest` (the `lowest-versions` CI job).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "evalward"
TESTS = ROOT / "tests"

# Top-level module -> distribution, where the names differ.
DISTRIBUTION = {
    "yaml": "pyyaml",
    "jwt": "pyjwt",
    "vl_convert": "vl-convert-python",
    "google": "google-adk",  # google.adk and google.genai (a dependency of google-adk)
    "markdown_it": "markdown-it-py",
    "rouge_score": "rouge-score",
    # The LangGraph test graph builds its messages and tools from langchain-core, which langgraph depends on.
    "langchain_core": "langgraph",
    "cryptography": "pyjwt",  # pyjwt[crypto]
    "pydantic_core": "pydantic",  # pydantic's own core, at pydantic's version
    "anyio": "starlette",  # the server's thread offloading; starlette is built on it
    # The span-tree oracle runs real pydantic-ai agents; pydantic-ai-slim comes with pydantic-evals.
    "pydantic_ai": "pydantic-evals",
    "opentelemetry": "opentelemetry-sdk",  # the API and the SDK the trace tests export through
    "openinference": "openinference-instrumentation-openai",
    "wrapt": "opentelemetry-instrumentation-openai",  # the instrumentations wrap the openai client with it
}
# Imported although no extra declares it, and why that is right.
UNDECLARED = {
    "pytest": "evalward.testing.plugin is loaded by pytest itself (the pytest11 entry point)",
}
# Runtime dependencies evalward needs without importing them.
NOT_IMPORTED: dict[str, str] = {}
# Calendar-versioned: a new year is not a new major.
CALVER = {"regex"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project() -> dict[str, object]:
    data: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return data


def runtime() -> list[Requirement]:
    return [Requirement(text) for text in project()["dependencies"]]  # type: ignore[attr-defined]


def extras() -> dict[str, list[Requirement]]:
    table = project()["optional-dependencies"]
    return {name: [Requirement(text) for text in texts] for name, texts in table.items()}  # type: ignore[attr-defined]


def names(requirements: list[Requirement]) -> set[str]:
    return {canonical(r.name) for r in requirements} - {"evalward"}


def imported(root: Path, local: set[str]) -> Iterator[tuple[str, str]]:
    """(top-level module, where) for every absolute import under `root`, stdlib and `local` left out."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
                in ("import_module", "importorskip")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                modules = [node.args[0].value]
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in local and top != "__future__":
                    yield top, f"{path.relative_to(ROOT)}:{node.lineno}"


def test_every_import_of_evalward_is_declared_outside_the_test_extra() -> None:
    declared = names(runtime())
    for extra, requirements in extras().items():
        if extra != "test":
            declared |= names(requirements)
    problems = [
        f"{where}: imports {module}, from {canonical(DISTRIBUTION.get(module, module))}, which is not declared"
        for module, where in imported(SRC, {"evalward"})
        if module not in UNDECLARED and canonical(DISTRIBUTION.get(module, module)) not in declared
    ]
    assert not problems, "\n".join(problems)


def test_every_runtime_dependency_is_imported() -> None:
    used = {canonical(DISTRIBUTION.get(module, module)) for module, _ in imported(SRC, {"evalward"})}
    unused = names(runtime()) - used - set(NOT_IMPORTED)
    assert not unused, f"declared in dependencies but never imported: {sorted(unused)}"


def test_every_import_of_the_tests_is_declared() -> None:
    declared = names(runtime())
    for requirements in extras().values():
        declared |= names(requirements)
    # The tests' own helper modules and packages (`fakes`, `store_factories`, `tests.…`).
    local = {"evalward", "tests"} | {p.stem for p in TESTS.rglob("*.py")} | {p.name for p in TESTS.rglob("*/")}
    problems = [
        f"{where}: imports {module}, from {canonical(DISTRIBUTION.get(module, module))}, which is not declared"
        for module, where in imported(TESTS, local)
        if module not in UNDECLARED and canonical(DISTRIBUTION.get(module, module)) not in declared
    ]
    assert not problems, "\n".join(problems)


def test_runtime_requirements_are_ranges_not_pins() -> None:
    problems = []
    feature_extras = [r for name, rs in extras().items() if name != "test" for r in rs]
    for requirement in runtime() + feature_extras:
        if canonical(requirement.name) == "evalward":
            continue
        operators = {spec.operator for spec in requirement.specifier}
        if operators & {"==", "===", "~="}:
            problems.append(f"{requirement}: pinned (a range lets users' other packages resolve)")
            continue
        if ">=" not in operators:
            problems.append(f"{requirement}: no lower bound (the oldest version .ci/lowest tests)")
        if "<" not in operators and canonical(requirement.name) not in CALVER:
            problems.append(f"{requirement}: no upper bound on the next, untested major")
    assert not problems, "\n".join(problems)
