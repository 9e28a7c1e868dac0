"""Judge configuration: base URL resolution and the price table file."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalward.errors import EvalFileError
from evalward.judging.judge_config import JudgeConfig, ModelPrice, load_prices


def test_base_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    assert JudgeConfig().resolved_base_url() == "http://env/v1"
    assert JudgeConfig(base_url="http://flag/v1").resolved_base_url() == "http://flag/v1"
    assert JudgeConfig(base_url="http://flag/v1").resolved_base_url("http://criterion/v1") == "http://criterion/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert JudgeConfig().resolved_base_url() is None


def test_price_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"gpt-4o-mini": {"input_per_million": 0.15, "output_per_million": 0.6}}')
    assert load_prices(path) == {"gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.6)}


def test_price_table_problems_carry_json_paths(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"a": {"input_per_million": -1, "output_per_million": 1}, "b": {"input_per_million": 1}}')
    with pytest.raises(EvalFileError) as caught:
        load_prices(path)
    rendered = str(caught.value)
    assert '$["a"].input_per_million' in rendered
    assert '$["b"].output_per_million' in rendered
