"""Fixtures for the judge tests: the fake OpenAI server and a sleep that records instead of waiting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


class RecordedSleep:
    """An injectable `sleep` that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleep() -> RecordedSleep:
    return RecordedSleep()
