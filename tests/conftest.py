"""Shared fixtures: the fake agents of `tests/fakes/` (see its package docstring).

The repository root is put on `sys.path` so every test imports fakes as `tests.fakes.<module>`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.fakes import jsonl_agent  # noqa: E402
from tests.fakes.http_agent import FakeHttpAgent  # noqa: E402


@pytest.fixture
def http_agent() -> Iterator[FakeHttpAgent]:
    """A started `FakeHttpAgent` on 127.0.0.1 (stopped after the test); its URL is `http_agent.url`."""
    with FakeHttpAgent() as server:
        yield server


@pytest.fixture
def jsonl_agent_target() -> Callable[..., str]:
    """`jsonl_agent_target("--garbage", ...)` → the `cmd:` target running the JSON-lines fake with those flags."""
    return jsonl_agent.target
