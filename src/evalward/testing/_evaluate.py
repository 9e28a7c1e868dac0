"""`evaluate` / `evaluate_async`: run an agent on eval sets inside a test and assert on the verdict.

Parity with ADK's `AgentEvaluator.evaluate(agent_module, eval_dataset_file_path_or_dir, num_runs=2)`
(docs/formats.md §5, §7): `num_runs` defaults to 2, the pass rule defaults to ADK's "mean over runs"
(per case and metric, the mean of the scores over all runs must meet the threshold), criteria come from
the `test_config.json` beside each eval file (else ADK's defaults), and every failure of the call is
raised in one `AssertionError` — each failing case with each failing metric (expected vs got), and
each errored run with its error — rather than only the first.

The verdict is the pipeline's (`RunResult.passed`), so the assertion, the run JSON and the gate agree.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from evalward._options.run_options import run_options_from
from evalward._options.run_values import RunValues
from evalward._pipeline import (
    PreparedRun,
    apply_metric_overrides,
    apply_step_mode,
    prepare,
    run_prepared,
    select_run_cases,
    validate_criteria,
)
from evalward.errors import EvalFileError, FileProblem
from evalward.loaders.load import apply_initial_session, read_initial_session
from evalward.model import CaseResult, EvalSet, MetricSpec, RunResult
from evalward.runners import make_agent
from evalward.runners.agent_contract import Agent
from evalward.runners.event_loop import run_on_time
from evalward.runners.python import PythonAgent
from evalward.testing import _session

AgentLike = str | Agent | Callable[..., Any]
"""A target string (any `evalward run --agent` form), an `Agent`, or a Python callable (the agent itself)."""

EvalSetLike = str | os.PathLike[str] | EvalSet | Sequence[str | os.PathLike[str] | EvalSet]
"""A file or directory, an already-loaded `EvalSet`, or a list of them."""

PassRuleName = Literal["mean_over_runs", "per_run"]


def _as_agent(agent: AgentLike, cwd: Path | None, values: RunValues) -> Agent:
    if isinstance(agent, str):
        return make_agent(
            agent, cwd=cwd, processes=values.agent_processes, openai_options=values.openai_agent_options()
        )
    if hasattr(agent, "run_turn") and hasattr(agent, "start") and hasattr(agent, "target"):
        return agent  # type: ignore[return-value]  # an object speaking the Agent protocol
    if callable(agent):
        return PythonAgent.from_callable(agent)
    raise TypeError(f"agent must be a target string, an Agent or a callable; found {type(agent).__name__}: {agent!r}")


def run_values(
    *,
    num_runs: int,
    test_config: str | os.PathLike[str] | None,
    metrics: Sequence[str | MetricSpec],
    metrics_mode: Literal["add", "replace"],
    pass_rule: PassRuleName,
    concurrency: int,
    timeout_s: float | None,
    options: dict[str, Any],
) -> RunValues:
    """The `RunValues` of an `evaluate` call: its ADK-style arguments plus `options`, any other `evalward run`
    option by its Python name (`judge_model`, `stepwise`, `max_steps`, …). Unknown names raise TypeError."""
    unknown = sorted(set(options) - set(RunValues.model_fields) | set(options) & _OWN_ARGUMENTS)
    if unknown:
        allowed = ", ".join(sorted(set(RunValues.model_fields) - _OWN_ARGUMENTS))
        raise TypeError(f"evaluate() got unexpected keyword argument(s) {', '.join(unknown)}; run options: {allowed}")
    return RunValues.from_values(
        {
            **options,
            "repeat": num_runs,
            "test_config": os.fspath(test_config) if test_config is not None else None,
            "metrics": tuple(metrics),
            "metrics_mode": metrics_mode,
            "pass_rule": pass_rule,
            "concurrency": concurrency,
            "timeout_s": timeout_s if timeout_s is not None else 0,
        }
    )


_OWN_ARGUMENTS = frozenset({"paths", "agent", "repeat", "test_config", "metrics", "metrics_mode", "pass_rule",
                            "concurrency", "timeout_s"})  # fmt: skip
"""Run values `evaluate` takes under its own names (`eval_set`, `agent`, `num_runs`, …)."""


def _prepared(eval_set: EvalSetLike, *, agent_label: str, values: RunValues, agent_cwd: Path | None) -> PreparedRun:
    items: list[Any] = [eval_set] if isinstance(eval_set, str | os.PathLike | EvalSet) else list(eval_set)
    objects = [i for i in items if isinstance(i, EvalSet)]
    paths = [os.fspath(i) for i in items if not isinstance(i, EvalSet)]
    options = run_options_from(
        values.model_copy(update={"paths": tuple(paths)}), agent_label=agent_label, agent_cwd=agent_cwd
    )
    sets: list[EvalSet] = []
    warnings: list[str] = []
    chosen: str | None = None
    if paths:
        # Cases are selected once, below, over the files and the objects together.
        loaded = prepare(replace(options, case_patterns=[], sample=None))
        sets.extend(loaded.sets)
        warnings.extend(loaded.warnings)
        chosen = loaded.case_selection
    if objects:
        own = [s.model_copy(deep=True) for s in objects]
        if options.initial_session_file is not None:
            _apply_session_file(own, options.initial_session_file, warnings)
        if options.step:
            apply_step_mode(own, options.metric_overrides)
        else:
            apply_metric_overrides(own, options.metric_overrides, options.metrics_mode)
        validate_criteria(own, options.judge)
        sets.extend(own)
    if not sets:
        raise ValueError("eval_set names no eval file and holds no EvalSet")
    sets, selection = select_run_cases(sets, options, chosen)
    return PreparedRun(options=options, sets=sets, warnings=warnings, case_selection=selection)


def _apply_session_file(sets: list[EvalSet], path: str, warnings: list[str]) -> None:
    """`initial_session_file` for EvalSet objects, as the loader applies it to files."""
    problems: list[FileProblem] = []
    session = read_initial_session(Path(path), path, problems, warnings)
    if problems:
        raise EvalFileError(problems)
    if session is not None:
        for eval_set in sets:
            apply_initial_session(eval_set, session)


async def evaluate_async(
    agent: AgentLike,
    eval_set: EvalSetLike,
    *,
    num_runs: int = 2,
    test_config: str | os.PathLike[str] | None = None,
    metrics: Sequence[str | MetricSpec] = (),
    metrics_mode: Literal["add", "replace"] = "add",
    pass_rule: PassRuleName = "mean_over_runs",
    concurrency: int = 4,
    timeout_s: float | None = 120.0,
    agent_cwd: str | os.PathLike[str] | None = None,
    raise_on_failure: bool = True,
    **options: Any,
) -> RunResult:
    """Run `agent` on every case of `eval_set` `num_runs` times, score it, and assert that it passed.

    `metrics` adds (or with `metrics_mode="replace"` replaces) criteria, as `NAME` or `NAME=THRESHOLD`
    strings (a user evaluator: `module:function[=THRESHOLD]`) or `MetricSpec`s. `pass_rule="per_run"` asks every run to pass (`adk eval`'s rule). Every other
    `evalward run` option is a keyword argument by its Python name (`evalward._options.run_values.RunValues`), e.g.
    `judge_model="gpt-4o-mini"`, `judge_base_url=…`, `no_judge_cache=True`, `step=True`, `stepwise=True`,
    `system_prompt="prompt.md"`, `tools_file="tools.json"`, `max_steps=5`, `rate_limit="10/s"`, `retries=0`.
    The run is returned (and recorded for the plugin's `--evalward-json`); with `raise_on_failure=False`
    nothing is asserted. Raises `AssertionError` listing every failing case and metric; bad eval files raise
    `evalward.errors.EvalFileError`.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the assertion, not evalward's frames
    cwd = Path(agent_cwd) if agent_cwd is not None else None
    values = run_values(
        num_runs=num_runs,
        test_config=test_config,
        metrics=metrics,
        metrics_mode=metrics_mode,
        pass_rule=pass_rule,
        concurrency=concurrency,
        timeout_s=timeout_s,
        options=options,
    )
    runner = _as_agent(agent, cwd, values)
    prepared = _prepared(eval_set, agent_label=runner.target.target, values=values, agent_cwd=cwd)
    run = await run_prepared(prepared, agent=runner)
    _session.record(run)
    if raise_on_failure and not run.passed:
        raise AssertionError(failure_message(run))
    return run


def evaluate(
    agent: AgentLike,
    eval_set: EvalSetLike,
    *,
    num_runs: int = 2,
    test_config: str | os.PathLike[str] | None = None,
    metrics: Sequence[str | MetricSpec] = (),
    metrics_mode: Literal["add", "replace"] = "add",
    pass_rule: PassRuleName = "mean_over_runs",
    concurrency: int = 4,
    timeout_s: float | None = 120.0,
    agent_cwd: str | os.PathLike[str] | None = None,
    raise_on_failure: bool = True,
    **options: Any,
) -> RunResult:
    """The sync form of `evaluate_async` (same arguments); inside a running event loop use `evaluate_async`."""
    __tracebackhide__ = True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "evaluate() was called inside a running event loop (an async test): use "
            "`await evalward.testing.evaluate_async(...)` there"
        )
    return run_on_time(
        evaluate_async(
            agent,
            eval_set,
            num_runs=num_runs,
            test_config=test_config,
            metrics=metrics,
            metrics_mode=metrics_mode,
            pass_rule=pass_rule,
            concurrency=concurrency,
            timeout_s=timeout_s,
            agent_cwd=agent_cwd,
            raise_on_failure=raise_on_failure,
            **options,
        )
    )


def failure_message(run: RunResult) -> str:
    """Every failing case of `run`: its failing metrics (expected vs got) and errored runs, one per line.

    Under `mean_over_runs` a metric fails when the mean of its scores over the case's runs misses the
    threshold (`got 0.5 = mean of 2 runs`); under `per_run` when any run misses it (`failed in run 2 of 2`).
    """
    rule = "mean over runs" if run.pass_rule == "mean_over_runs" else "every run must pass"
    failing = [s for s in run.case_summaries if not s.passed]
    lines = [
        f"evalward: {len(failing)} of {len(run.case_summaries)} case(s) failed "
        f"(agent {run.agent.target if run.agent else '?'}, {run.repetitions} run(s) per case, {rule}):"
    ]
    by_case: dict[tuple[str, str], list[CaseResult]] = {}
    for case in run.cases:
        by_case.setdefault((case.eval_set_id, case.case_id), []).append(case)
    for summary in failing:
        runs = sorted(by_case.get((summary.eval_set_id, summary.case_id), []), key=lambda c: c.repetition)
        lines.append(f"- case {summary.case_id!r} (eval set {summary.eval_set_id!r}):")
        details = _metric_failures(runs, run.pass_rule) + _errors(runs)
        lines.extend(f"    {detail}" for detail in details or ["no gating metric passed"])
    if run.status != "complete":
        lines.append(f"the run ended {run.status}: not every case ran")
    return "\n".join(lines)


def _metric_failures(runs: Sequence[CaseResult], pass_rule: str) -> list[str]:
    names: list[str] = []
    for case in runs:
        names.extend(m.name for m in case.metric_results if m.name not in names)
    lines: list[str] = []
    for name in names:
        results = [m for case in runs if (m := case.metric(name)) is not None]
        threshold = next((m.threshold for m in results if m.threshold is not None), None)
        if threshold is None:
            continue
        higher = results[0].higher_is_better
        relation = ">=" if higher else "<="
        scores = [m.score for m in results if m.score is not None and m.status in ("passed", "failed")]
        errored = [m for m in results if m.status == "error"]
        for m in errored:
            lines.append(f"{name}: error: {m.explanation or 'the metric raised'}")
        if not scores:
            continue
        if pass_rule == "mean_over_runs":
            mean = sum(scores) / len(scores)
            if (mean >= threshold) if higher else (mean <= threshold):
                continue
            got = f"{mean:.4g}" + (f" = mean of {len(scores)} runs" if len(scores) > 1 else "")
            lines.append(f"{name} failed: expected {relation} {threshold:g}, got {got}")
        else:
            failed = [(i, m) for i, m in enumerate(results, start=1) if m.status == "failed"]
            for index, m in failed:
                lines.append(
                    f"{name} failed in run {index} of {len(results)}: expected {relation} {threshold:g}, "
                    f"got {m.score:.4g}"
                    if m.score is not None
                    else f"{name} failed in run {index} of {len(results)}"
                )
        explanation = next((m.explanation for m in results if m.status == "failed" and m.explanation), "")
        if explanation and lines and lines[-1].startswith(name):
            lines.append(f"  ({explanation})")
    return lines


def _errors(runs: Sequence[CaseResult]) -> list[str]:
    return [
        f"run {case.repetition + 1}: {case.error.kind}: {case.error.message}"
        + (f" (turn {case.error.turn})" if case.error.turn is not None else "")
        for case in runs
        if case.error is not None
    ]
