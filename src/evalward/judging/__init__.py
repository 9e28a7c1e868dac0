"""LLM judges: the I/O around `evalward.metrics.judge` — the OpenAI-compatible client, the reply cache and
the per-case orchestration the pipeline calls.

- `config`: `JudgeConfig` (model, base URL, key variable, concurrency, prices, cache) and price tables;
- `client`: `JudgeClient`, one endpoint: structured output with a plain-JSON fallback, a concurrency limit,
  retries with backoff on 429/5xx honouring `retry-after`, token and cost accounting;
- `cache`: replies by sha256 of (model, prompt messages, parameters) in the history database or a file;
- `scoring`: `Judging` (clients, cache, usage of one run): the `metrics.scoring_context.Judge` a run's judged metrics
  call for each finished case;
- `steps`: judged teacher-forced steps (`match: judge`);
- `results`: judged metrics' results: a failed judge's, the threshold verdict, a case's from its turns';

Importing this package is cheap; `openai` and sqlalchemy are imported on first use.
"""

from evalward.judging.config import JudgeConfig, ModelPrice, load_prices

__all__ = ["JudgeConfig", "ModelPrice", "load_prices"]
