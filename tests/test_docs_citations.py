"""Every document a comment cites is in the repository: `docs/<page>.md §N` names a section that exists, and
no comment cites the reference documents the team worked from (they are not in the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CITATION = re.compile(r"docs/([\w-]+)\.md((?:\s*(?:§\s*[\d.]*\d|,|–|and|-)\s*)*)")
OUTSIDE = re.compile(r"(?<![\w/.-])(GATE|METRICS|GITHUB|ADK-FORMATS|ARCHITECTURE|STYLE)\.md|\bseeds?[ /]0\d\d")


def sources() -> list[Path]:
    files = [p for d in ("src", "tests", "benchmarks", "scripts", "examples") for p in (ROOT / d).rglob("*.py")]
    files += [ROOT / "README.md", ROOT / "action.yml", *DOCS.glob("*.md")]
    return [p for p in files if "__pycache__" not in p.parts and p.name != Path(__file__).name]


def sections(page: Path) -> set[str]:
    """The section numbers of a page: "3" for `## 3. …`, "3.2" for `### 3.2 …`."""
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,4} (\d+(?:\.\d+)*)\.? ", line)
        if heading:
            found.add(heading.group(1))
    return found


def test_every_cited_page_and_section_exists() -> None:
    wrong: list[str] = []
    cited = 0
    for path in sources():
        text = path.read_text(encoding="utf-8")
        for match in CITATION.finditer(text):
            page = DOCS / f"{match.group(1)}.md"
            where = f"{path.relative_to(ROOT)}: {match.group(0).strip()}"
            if not page.is_file():
                wrong.append(f"{where}: no such page")
                continue
            numbers = re.findall(r"§\s*([\d.]*\d)", match.group(2))
            cited += 1
            wrong += [f"{where}: no section {n}" for n in numbers if n not in sections(page)]
    assert wrong == []
    assert cited > 50  # the comments do cite the pages (the pattern still finds them)


def test_nothing_cites_documents_outside_the_repository() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path in sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OUTSIDE.search(line)
    ]
    assert wrong == []


def test_every_guide_cited_is_described() -> None:
    described = set(re.findall(r"^\| (0\d\d) \|", (DOCS / "sources.md").read_text(encoding="utf-8"), re.MULTILINE))
    cited = {m for path in sources() for m in re.findall(r"\bguide (0\d\d)\b", path.read_text(encoding="utf-8"))}
    assert cited and cited <= described


def test_relative_links_between_pages_resolve() -> None:
    wrong = [
        f"{page.name}: {target}"
        for page in DOCS.glob("*.md")
        for target in re.findall(r"\]\(([\w-]+\.md)(?:#[\w-]+)?\)", page.read_text(encoding="utf-8"))
        if not (DOCS / target).is_file()
    ]
    assert wrong == []
