"""Fixtures for the judge tests: the fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server
