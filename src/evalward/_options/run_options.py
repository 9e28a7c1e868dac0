"""The one way run values become `_pipeline.RunOptions`, for `evalward run`, `evalward ci` and the pytest API."""

from __future__ import annotations

from pathlib import Path

from evalward._options.run_values import RunValues, parse_rate, parse_shard
from evalward._pipeline import RunOptions, parse_metric_option, split_metric_options
from evalward.errors import UsageError
from evalward.judging.judge_config import JudgeConfig, load_prices
from evalward.model import MetricSpec, RunContext


def run_options_from(
    values: RunValues,
    *,
    context: RunContext | None = None,
    run_id: str | None = None,
    agent_cwd: Path | None = None,
    agent_label: str | None = None,
) -> RunOptions:
    """The one constructor of `RunOptions` from run values, for `evalward run`, `evalward ci` and the pytest API.

    `agent_label` names an agent given as an object (the pytest API) instead of `values.agent`."""
    agent = agent_label or values.agent
    if not agent:
        raise UsageError("no agent: pass --agent TARGET (or set EVALWARD_AGENT, or `agent` in evalward.toml)")
    overrides: list[MetricSpec] = []
    for item in values.metrics:
        if isinstance(item, MetricSpec):
            overrides.append(item)
        else:
            overrides.extend(parse_metric_option(text) for text in split_metric_options(item))
    judge = JudgeConfig(
        model=values.judge_model or None,
        base_url=values.judge_base_url or None,
        api_key_env=values.judge_api_key_env,
        concurrency=values.judge_concurrency,
        prices=load_prices(values.judge_prices) if values.judge_prices else {},
        cache=not values.no_judge_cache,
    )
    return RunOptions(
        paths=list(values.paths),
        agent=agent,
        metric_overrides=overrides,
        metrics_mode=values.metrics_mode,
        config_path=values.test_config,
        repeat=values.repeat,
        concurrency=values.concurrency,
        timeout_s=values.timeout_s if values.timeout_s else None,
        rate_limit_per_s=parse_rate(values.rate_limit),
        max_retries=values.retries,
        shard=parse_shard(values.shard),
        case_patterns=list(values.cases),
        sample=values.sample,
        initial_session_file=values.initial_session_file,
        custom_evaluator_types=list(values.custom_evaluator_types),
        pass_rule="mean_over_runs" if values.pass_rule == "mean-over-runs" else "per_run",
        run_id=run_id,
        context=context or RunContext(),
        agent_processes=values.agent_processes,
        agent_cwd=agent_cwd,
        judge=judge,
        step=values.step,
        stepwise="auto" if values.stepwise is None else ("on" if values.stepwise else "off"),
        agent_options=values.openai_agent_options(),
        user_model=values.user_model or None,
        user_base_url=values.user_base_url or None,
        user_max_turns=values.user_max_turns,
    )
