"""How judges are reached and paid for: `JudgeConfig`, and the user's price table.

Resolution of each setting, first match wins:
- model: the criterion's `judge_model_options.judge_model` (or `judge_model`) > `--judge-model` /
  `EVALWARD_JUDGE_MODEL`;
- base URL: the criterion's `base_url` > `--judge-base-url` / `EVALWARD_JUDGE_BASE_URL` > `OPENAI_BASE_URL` >
  the `openai` client's default (api.openai.com);
- API key: the environment variable named by the criterion's `api_key_env` > `JudgeConfig.api_key_env`
  (default `OPENAI_API_KEY`). Only the variable's *name* is stored anywhere; the key itself never reaches
  logs, reports, fingerprints or the database.

Price table (`--judge-prices FILE`): JSON `{"MODEL": {"input_per_million": USD, "output_per_million": USD}}`;
cost of a call = input_tokens × input/10⁶ + output_tokens × output/10⁶; a model without a price has no cost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.errors import EvalFileError, FileProblem

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
FALLBACK_CACHE_URL = "sqlite:///.evalward/judge_cache.db"
"""The judge cache when the run keeps no history database."""


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    input_per_million: float = Field(ge=0)
    output_per_million: float = Field(ge=0)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return input_tokens * self.input_per_million / 1e6 + output_tokens * self.output_per_million / 1e6


class JudgeConfig(BaseModel):
    """Run-wide judge settings (every field has an `evalward run` flag and an `EVALWARD_*` variable)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    model: str | None = Field(default=None, description="Default judge model (criteria may name their own).")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint; None = $OPENAI_BASE_URL.")
    api_key_env: str = Field(default=DEFAULT_KEY_ENV, description="Name of the variable holding the API key.")
    concurrency: int = Field(default=4, ge=1, description="Judge requests in flight at once, per endpoint.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="{model: price per million tokens}.")
    cache: bool = Field(default=True, description="Reuse cached replies; False = always ask (and refresh).")
    cache_url: str | None = Field(
        default=None, description="Database for the cache when no history database is in use (default: a file)."
    )
    timeout_s: float = Field(default=120.0, gt=0, description="Seconds per judge request.")
    max_retries: int = Field(
        default=4,
        ge=0,
        description="Retries per request (408, 409, 429, 5xx, connection errors), done by the openai client.",
    )
    probe_timeout_s: float = Field(default=10.0, gt=0, description="Seconds for the reachability check.")
    require_model: bool = Field(
        default=True,
        description="A judged criterion with no model anywhere stops the run (InfrastructureError). False for "
        "`evalward validate`, which checks files without any model: such criteria are left unresolved and "
        "reported as a warning (`scoring.Judging.unresolved`).",
    )

    def resolved_base_url(self, override: str | None = None) -> str | None:
        """`override` (a criterion's) > `base_url` > $OPENAI_BASE_URL > None (the client's default)."""
        return override or self.base_url or os.environ.get(BASE_URL_ENV) or None


def load_prices(path: str | Path) -> dict[str, ModelPrice]:
    """Read a price table file (module docstring); every problem is reported with its JSON path."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalFileError([FileProblem(path=source, message=f"cannot read the price table: {exc.strerror}")]) from exc
    except ValueError as exc:
        raise EvalFileError([FileProblem(path=source, message=f"the price table is not JSON: {exc}")]) from exc
    if not isinstance(data, dict):
        raise EvalFileError(
            [FileProblem(path=source, message="the price table must be an object", expected="{MODEL: {...}}")]
        )
    prices: dict[str, ModelPrice] = {}
    problems: list[FileProblem] = []
    for model, value in data.items():
        try:
            prices[model] = ModelPrice.model_validate(value)
        except ValidationError as exc:
            for error in exc.errors():
                where = ".".join(str(p) for p in error["loc"])
                json_path = f"$[{json.dumps(model)}]" + (f".{where}" if where else "")
                problems.append(
                    FileProblem(
                        path=source,
                        json_path=json_path,
                        message=error["msg"],
                        expected="{input_per_million: number >= 0, output_per_million: number >= 0}",
                    )
                )
    if problems:
        raise EvalFileError(problems)
    return prices
