from collections.abc import Callable
from pathlib import Path

import pytest

from evalward.errors import EvalFileError, FileProblem
from evalward.loaders import load_paths
from evalward.model import EvalSet

FIXTURES = Path(__file__).parent / "fixtures"

LoadText = Callable[..., EvalSet]
ProblemsOf = Callable[..., list[FileProblem]]


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def load_text(tmp_path: Path) -> LoadText:
    """Write `text` to `tmp_path/name` and load that one file."""

    def load(name: str, text: str, **kwargs: object) -> EvalSet:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return load_paths([path], **kwargs).sets[0]  # type: ignore[arg-type]

    return load


@pytest.fixture
def problems_of(tmp_path: Path) -> ProblemsOf:
    """Write `text` to `tmp_path/name`, load it, and return the problems the loader raised."""

    def problems(name: str, text: str, **kwargs: object) -> list[FileProblem]:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(EvalFileError) as caught:
            load_paths([path], **kwargs)  # type: ignore[arg-type]
        return caught.value.problems

    return problems
