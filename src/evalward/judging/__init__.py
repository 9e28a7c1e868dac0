"""LLM judges: the I/O around `evalward.metrics.judge` — the OpenAI-compatible client, the reply cache and
the per-case orchestration the pipeline calls.

- `judge_config`: `JudgeConfig` (model, base URL, key variable, concurrency, prices, cache) and price tables;
- `judge_client`: `JudgeClient`, one endpoint: structured output with a plain-JSON fallback, a concurrency limit,
  retries with backoff on 429/5xx honouring `retry-after`, token and cost accounting;
- `cache`: replies by sha256 of (model, prompt messages, parameters) in the history database or a file;
- `inflight`: identical requests in flight at once are sent once (single flight on the cache key);
- `judged_case`: `Judging` (clients, cache, usage of one run): the `metrics.scoring_context.Judge` a run's judged metrics
  call for each finished case;
- `steps`: judged teacher-forced steps (`match: judge`);
- `judged_results`: judged metrics' results: a failed judge's, the threshold verdict, a case's from its turns';

Importing this package is cheap; sqlalchemy is imported on first use, and `openai` with the first judge
request (the start-up probe speaks `httpx`), so a run served from the cache never imports it.
"""

from evalward.judging.judge_config import JudgeConfig, ModelPrice, load_prices

__all__ = ["JudgeConfig", "ModelPrice", "load_prices"]
