"""`evalward run`: load eval sets, run the agent on every case, score, store and report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from evalward.cli.common import db_option, stderr_is_terminal
from evalward.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, UsageError


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """`I/N` with 1 ≤ I ≤ N → (I, N)."""
    if not text:
        return None
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: expected I/N with 1 <= I <= N, e.g. 2/4")
    return i, n


def parse_rate(text: str | None) -> float | None:
    """`N`, `N/s` or `N/min` → requests per second."""
    if not text:
        return None
    value, _, unit = text.partition("/")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"--rate-limit {text!r}: expected N/s or N/min") from None
    per = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0}.get(unit.strip())
    if per is None or number <= 0:
        raise UsageError(f"--rate-limit {text!r}: expected a positive N/s or N/min")
    return number / per


@click.command("run")
@click.argument("paths", nargs=-1, envvar="EVALWARD_PATHS", type=click.Path())
@click.option(
    "--agent",
    "-a",
    envvar="EVALWARD_AGENT",
    required=True,
    metavar="TARGET",
    help="module:function | path/to/file.py:function | 'cmd:COMMAND ARGS' | http(s)://URL | openai:MODEL "
    "[env: EVALWARD_AGENT]",
)
@click.option(
    "--test-config",
    "test_config",
    envvar="EVALWARD_TEST_CONFIG",
    type=click.Path(exists=True, dir_okay=False),
    help="A test_config.json used for every eval file instead of the one beside it [env: EVALWARD_TEST_CONFIG]",
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    envvar="EVALWARD_METRICS",
    metavar="NAME[=THRESHOLD]",
    help="Add a metric (repeatable); with --metrics-mode replace, use only these [env: EVALWARD_METRICS]",
)
@click.option(
    "--metrics-mode",
    type=click.Choice(["add", "replace"]),
    default="add",
    envvar="EVALWARD_METRICS_MODE",
    show_default=True,
    help="How --metric combines with each format's criteria [env: EVALWARD_METRICS_MODE]",
)
@click.option(
    "--repeat",
    "-k",
    type=int,
    default=1,
    envvar="EVALWARD_REPEAT",
    show_default=True,
    help="Repetitions per case (ADK num_runs) [env: EVALWARD_REPEAT]",
)
@click.option(
    "--concurrency",
    "-j",
    type=int,
    default=4,
    envvar="EVALWARD_CONCURRENCY",
    show_default=True,
    help="Cases running at once [env: EVALWARD_CONCURRENCY]",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=120.0,
    envvar="EVALWARD_TIMEOUT",
    show_default=True,
    help="Seconds per turn before it counts as a timeout (0 = none) [env: EVALWARD_TIMEOUT]",
)
@click.option(
    "--rate-limit",
    envvar="EVALWARD_RATE_LIMIT",
    metavar="N/s",
    help="Maximum agent requests per second (or N/min) [env: EVALWARD_RATE_LIMIT]",
)
@click.option(
    "--retries",
    type=int,
    default=2,
    envvar="EVALWARD_RETRIES",
    show_default=True,
    help="Retries of a turn the agent marks retryable [env: EVALWARD_RETRIES]",
)
@click.option(
    "--shard",
    envvar="EVALWARD_SHARD",
    metavar="I/N",
    help="Run only shard I of N (a stable split by case id) [env: EVALWARD_SHARD]",
)
@click.option(
    "--pass-rule",
    type=click.Choice(["per-run", "mean-over-runs"]),
    default="per-run",
    envvar="EVALWARD_PASS_RULE",
    show_default=True,
    help="per-run: every repetition must pass (adk eval); mean-over-runs: the mean over repetitions "
    "must meet each threshold (ADK AgentEvaluator) [env: EVALWARD_PASS_RULE]",
)
@click.option(
    "--agent-processes",
    type=int,
    default=1,
    envvar="EVALWARD_AGENT_PROCESSES",
    show_default=True,
    help="Processes to start for a cmd: agent [env: EVALWARD_AGENT_PROCESSES]",
)
@click.option(
    "--judge-model",
    envvar="EVALWARD_JUDGE_MODEL",
    metavar="MODEL",
    help="Judge model for judged criteria that name none (e.g. gpt-4o-mini) [env: EVALWARD_JUDGE_MODEL]",
)
@click.option(
    "--judge-base-url",
    envvar="EVALWARD_JUDGE_BASE_URL",
    metavar="URL",
    help="OpenAI-compatible endpoint of the judge (default: $OPENAI_BASE_URL) [env: EVALWARD_JUDGE_BASE_URL]",
)
@click.option(
    "--judge-api-key-env",
    envvar="EVALWARD_JUDGE_API_KEY_ENV",
    default="OPENAI_API_KEY",
    show_default=True,
    metavar="VAR",
    help="Name of the variable holding the judge's API key [env: EVALWARD_JUDGE_API_KEY_ENV]",
)
@click.option(
    "--judge-concurrency",
    type=int,
    default=4,
    envvar="EVALWARD_JUDGE_CONCURRENCY",
    show_default=True,
    help="Judge requests in flight at once [env: EVALWARD_JUDGE_CONCURRENCY]",
)
@click.option(
    "--judge-prices",
    envvar="EVALWARD_JUDGE_PRICES",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help='Price table JSON {"MODEL": {"input_per_million": USD, "output_per_million": USD}} [env: EVALWARD_JUDGE_PRICES]',
)
@click.option(
    "--no-judge-cache",
    is_flag=True,
    envvar="EVALWARD_NO_JUDGE_CACHE",
    help="Ask the judge again instead of reusing cached verdicts [env: EVALWARD_NO_JUDGE_CACHE]",
)
@click.option(
    "--step",
    is_flag=True,
    envvar="EVALWARD_STEP",
    help="Single-step evaluation: score the agent's expected outputs (e.g. route) exactly and print a "
    "confusion table [env: EVALWARD_STEP]",
)
@click.option(
    "--stepwise/--no-stepwise",
    default=None,
    envvar="EVALWARD_STEPWISE",
    help="Teacher-forced step-by-step scores for every case / never (default: for turns with "
    "reference_messages) [env: EVALWARD_STEPWISE]",
)
@click.option(
    "--system-prompt",
    envvar="EVALWARD_SYSTEM_PROMPT",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="System prompt of an openai:MODEL agent [env: EVALWARD_SYSTEM_PROMPT]",
)
@click.option(
    "--tools",
    "tools_file",
    envvar="EVALWARD_TOOLS",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Tools (name, description, JSON Schema parameters, mocked results) of an openai:MODEL agent "
    "[env: EVALWARD_TOOLS]",
)
@click.option(
    "--max-steps",
    type=int,
    default=10,
    envvar="EVALWARD_MAX_STEPS",
    show_default=True,
    help="Model steps per turn of an openai:MODEL agent [env: EVALWARD_MAX_STEPS]",
)
@click.option(
    "--json",
    "json_path",
    envvar="EVALWARD_JSON",
    type=click.Path(dir_okay=False),
    help="Write the run as JSON [env: EVALWARD_JSON]",
)
@click.option(
    "--junit",
    "junit_path",
    envvar="EVALWARD_JUNIT",
    type=click.Path(dir_okay=False),
    help="Write JUnit XML [env: EVALWARD_JUNIT]",
)
@click.option(
    "--markdown",
    "markdown_path",
    envvar="EVALWARD_MARKDOWN",
    type=click.Path(dir_okay=False),
    help="Write the markdown report (the PR comment body) [env: EVALWARD_MARKDOWN]",
)
@click.option(
    "--detailed",
    is_flag=True,
    envvar="EVALWARD_DETAILED",
    help="Print every turn: query, expected and actual response and tool calls [env: EVALWARD_DETAILED]",
)
@db_option
@click.option(
    "--no-history",
    is_flag=True,
    envvar="EVALWARD_NO_HISTORY",
    help="Do not write the run to the history database [env: EVALWARD_NO_HISTORY]",
)
@click.option(
    "--resume",
    "resume_run_id",
    envvar="EVALWARD_RESUME",
    metavar="RUN_ID",
    help="Run only what the stored run RUN_ID is missing [env: EVALWARD_RESUME]",
)
@click.option(
    "--run-id", envvar="EVALWARD_RUN_ID", help="Id for the new run (default: time + random) [env: EVALWARD_RUN_ID]"
)
@click.option(
    "--repo", "repository", envvar="EVALWARD_REPO", help="owner/name (default: from GITHUB_REPOSITORY or git)"
)
@click.option(
    "--commit", envvar="EVALWARD_COMMIT", help="Commit evaluated (default: PR head SHA, GITHUB_SHA or git HEAD)"
)
@click.option(
    "--branch", envvar="EVALWARD_BRANCH", help="Branch evaluated (default: from the Actions environment or git)"
)
@click.option("--base-branch", envvar="EVALWARD_BASE_BRANCH", help="The branch a PR merges into")
@click.option("--base-sha", envvar="EVALWARD_BASE_SHA", help="Base commit of the PR (for the merge-base)")
@click.option("--pr", "pr_number", type=int, envvar="EVALWARD_PR", help="Pull request number")
@click.option("--group-id", envvar="EVALWARD_GROUP_ID", help="Tag shards of one logical run for `evalward merge`")
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line and the run id")
def run_command(**kwargs: Any) -> None:
    """Run the agent on every case of the eval files in PATHS (files or directories), score it and report.

    Exit codes: 0 every criterion met, 1 not met, 2 bad input or usage, 3 infrastructure failure
    (the agent could not start, a judge or the database is unreachable), 130 interrupted.
    """
    sys.exit(execute_run(**kwargs))


def execute_run(
    *,
    paths: tuple[str, ...],
    agent: str,
    test_config: str | None,
    metrics: tuple[str, ...],
    metrics_mode: str,
    repeat: int,
    concurrency: int,
    timeout_s: float,
    rate_limit: str | None,
    retries: int,
    shard: str | None,
    pass_rule: str,
    agent_processes: int,
    json_path: str | None,
    junit_path: str | None,
    markdown_path: str | None,
    detailed: bool,
    db_url: str | None,
    no_history: bool,
    resume_run_id: str | None,
    run_id: str | None,
    repository: str | None,
    commit: str | None,
    branch: str | None,
    base_branch: str | None,
    base_sha: str | None,
    pr_number: int | None,
    group_id: str | None,
    quiet: bool,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_env: str = "OPENAI_API_KEY",
    judge_concurrency: int = 4,
    judge_prices: str | None = None,
    no_judge_cache: bool = False,
    step: bool = False,
    stepwise: bool | None = None,
    system_prompt: str | None = None,
    tools_file: str | None = None,
    max_steps: int = 10,
) -> int:
    from evalward.context import detect_context
    from evalward.judging.config import JudgeConfig, load_prices
    from evalward.pipeline import RunOptions, parse_metric_option, prepare

    if not paths:
        raise UsageError("no eval files given: pass files or directories (or set EVALWARD_PATHS)")
    overrides = [parse_metric_option(text) for item in metrics for text in item.split()]
    if judge_concurrency < 1:
        raise UsageError(f"--judge-concurrency must be at least 1, got {judge_concurrency}")
    if max_steps < 1:
        raise UsageError(f"--max-steps must be at least 1, got {max_steps}")
    judge = JudgeConfig(
        model=judge_model or None,
        base_url=judge_base_url or None,
        api_key_env=judge_api_key_env,
        concurrency=judge_concurrency,
        prices=load_prices(judge_prices) if judge_prices else {},
        cache=not no_judge_cache,
    )
    options = RunOptions(
        paths=list(paths),
        agent=agent,
        metric_overrides=overrides,
        metrics_mode="replace" if metrics_mode == "replace" else "add",
        config_path=test_config,
        repeat=repeat,
        concurrency=concurrency,
        timeout_s=timeout_s if timeout_s and timeout_s > 0 else None,
        rate_limit_per_s=parse_rate(rate_limit),
        max_retries=retries,
        shard=parse_shard(shard),
        pass_rule="mean_over_runs" if pass_rule == "mean-over-runs" else "per_run",
        run_id=run_id,
        agent_processes=agent_processes,
        judge=judge,
        step=step,
        stepwise="auto" if stepwise is None else ("on" if stepwise else "off"),
        agent_options={"system_prompt": system_prompt, "tools": tools_file, "max_steps": max_steps},
        context=detect_context(
            repository=repository,
            commit=commit,
            branch=branch,
            base_branch=base_branch,
            base_sha=base_sha,
            pr_number=pr_number,
            group_id=group_id,
        ),
    )
    prepared = prepare(options)
    for warning in prepared.warnings:
        click.echo(f"warning: {warning}", err=True)
    return run_and_report(
        prepared,
        db_url=None if no_history else db_url,
        use_history=not no_history,
        resume_run_id=resume_run_id,
        json_path=json_path,
        junit_path=junit_path,
        markdown_path=markdown_path,
        detailed=detailed,
        quiet=quiet,
    )


def run_and_report(
    prepared: Any,
    *,
    db_url: str | None,
    use_history: bool,
    resume_run_id: str | None,
    json_path: str | None,
    junit_path: str | None,
    markdown_path: str | None,
    detailed: bool,
    quiet: bool,
) -> int:
    """Run a prepared evaluation with a progress bar, write the report files, and return the exit code."""
    from rich.console import Console

    from evalward.pipeline import fingerprint_for, run_blocking
    from evalward.report.terminal import print_run
    from evalward.runners import make_agent

    options = prepared.options
    agent = make_agent(
        options.agent,
        cwd=options.agent_cwd,
        processes=options.agent_processes,
        openai_options=getattr(options, "agent_options", None),
    )
    store = open_history(db_url) if use_history else None
    if store is not None and resume_run_id is None:
        resumable = store.find_resumable(options.context.commit, fingerprint_for(prepared, agent), shard=options.shard)
        if resumable is not None:
            if sys.stdin.isatty() and click.confirm(
                f"run {resumable} for this commit and these eval files was not finished; resume it?", default=True
            ):
                resume_run_id = resumable
            else:
                click.echo(
                    f"note: unfinished run {resumable} matches this commit and eval files; "
                    f"`--resume {resumable}` runs only what it is missing",
                    err=True,
                )

    progress_bar, progress_callback = _progress(quiet)
    try:
        if progress_bar is not None:
            progress_bar.start()
        run = run_blocking(prepared, store=store, resume_run_id=resume_run_id, progress=progress_callback, agent=agent)
    finally:
        if progress_bar is not None:
            progress_bar.stop()

    step_tables = ""
    if getattr(options, "step", False):
        from evalward.report.confusion import confusions, render_confusion_markdown, render_confusion_text

        tables = confusions(run)
        step_tables = render_confusion_markdown(tables)
    write_reports(
        run, json_path=json_path, junit_path=junit_path, markdown_path=markdown_path, extra_markdown=step_tables
    )
    # Logs (not a terminal) get a wide fixed width, so tables are not squeezed to 80 columns in CI.
    console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 120)
    if quiet:
        counts = run.counts()
        verdict = "PASSED" if run.passed else "FAILED"
        console.print(
            f"{verdict}: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors", markup=False
        )
    else:
        print_run(run, console, detailed=detailed)
        if step_tables:
            click.echo("\n" + render_confusion_text(tables), nl=False)
        if prepared.judge_usage is not None:
            click.echo(prepared.judge_usage.describe())
    if store is not None:
        click.echo(f"run id: {run.run_id}")
    if run.status == "cancelled":
        click.echo(f"interrupted: kept {len(run.cases)} finished case results", err=True)
        return EXIT_INTERRUPTED
    return EXIT_OK if run.passed else EXIT_FAILED


def open_history(db_url: str | None) -> Any:
    """Open (and migrate) the history database; unreachable databases are infrastructure errors."""
    from evalward.errors import InfrastructureError
    from evalward.store import open_store

    try:
        return open_store(db_url)
    except Exception as exc:  # a driver's connection error: report it, don't show a traceback
        from evalward.errors import EvalwardError

        if isinstance(exc, EvalwardError):
            raise
        raise InfrastructureError(f"cannot open the history database: {exc}") from exc


def write_reports(
    run: Any, *, json_path: str | None, junit_path: str | None, markdown_path: str | None, extra_markdown: str = ""
) -> None:
    """Write the report files asked for; `extra_markdown` (e.g. a confusion table) ends the markdown report."""
    from evalward.report.json_report import render_json
    from evalward.report.junit import render_junit
    from evalward.report.markdown import render_run_markdown

    def markdown(value: Any) -> str:
        text = render_run_markdown(value)
        return f"{text.rstrip()}\n\n{extra_markdown}" if extra_markdown else text

    for path, render in ((json_path, render_json), (junit_path, render_junit), (markdown_path, markdown)):
        if path:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render(run), encoding="utf-8")


def _progress(quiet: bool) -> tuple[Any, Any]:
    """A rich progress bar on an interactive stderr; nothing otherwise (CI logs stay clean)."""
    if quiet or not stderr_is_terminal():
        return None, None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("running cases"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task("cases", total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update
