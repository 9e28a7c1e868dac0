"""`constraints/action.txt`, the lock the Action's image and the composite action install from, agrees with
pyproject.toml: every dependency of `.[action]` is pinned, within pyproject's range, once.

(That the lock is complete — nothing installed unpinned — is checked by tests/ci/test_container.py, which
installs the image's environment from it.) Regenerate it with `python scripts/lock_action.py`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "constraints" / "action.txt"


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for number, line in enumerate(LOCK.read_text(encoding="utf-8").splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+)", line)
        assert match, f"{LOCK.name}:{number}: expected NAME==VERSION, found {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"{LOCK.name}:{number}: {name} is pinned twice"
        pins[name] = match.group(2)
    return pins


def action_requirements() -> list[Requirement]:
    """The direct requirements of `.[action]`: the dependencies plus the extras it pulls in."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted, seen, found = ["action"], set(), [Requirement(r) for r in project["dependencies"]]
    while wanted:
        extra = wanted.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "evalward":
                wanted.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


def test_every_direct_dependency_is_pinned_within_its_range() -> None:
    pins = locked()
    problems = []
    for requirement in action_requirements():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} is not pinned")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{requirement}: pinned {pins[name]}, outside the range")
        for extra in requirement.extras:  # e.g. psycopg[binary] brings psycopg-binary
            if extra == "binary" and canonicalize_name(f"{requirement.name}-binary") not in pins:
                problems.append(f"{requirement}: its {extra} extra is not pinned")
    stale = "constraints/action.txt is out of date (python scripts/lock_action.py):\n"
    assert not problems, stale + "\n".join(problems)


def test_the_image_and_the_composite_action_install_from_the_lock() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert '--constraint /opt/evalward/constraints/action.txt "/opt/evalward[action]"' in dockerfile
    composite = (ROOT / "run" / "action.yml").read_text(encoding="utf-8")
    assert '--constraint "$root/constraints/action.txt" "$root[postgres]"' in composite
    assert "evalward" not in locked()  # the project itself comes from the checkout, at the pinned ref
