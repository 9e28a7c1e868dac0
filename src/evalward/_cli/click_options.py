"""The option bundles `evalward run` and `evalward ci` share: each option is declared once, here.

`run_value_options` declares every option that shapes a run; its Python names are the fields of
`evalward._run_values.RunValues`, so a command turns its keyword arguments into a run with
`RunValues.from_values(kwargs)` and `run_options_from(...)`. `report_file_options` declares the report
files. The GitHub Action's inputs map onto the same `EVALWARD_*` variables (`evalward._ci.inputs`), and a
test checks that every option of `evalward run` reaches `evalward ci` and both action files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def _apply(func: F, decorators: Sequence[Callable[[Any], Any]]) -> F:
    """Apply `decorators` so that `--help` lists them in the order given."""
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def file_size_value(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """A `--max-file-size` style value as bytes: `52428800`, `50MB`, `512KB`, `1GB` (powers of 1024)."""
    if value is None:
        return None
    from evalward.reading import parse_size

    try:
        size = parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None
    if size < 1:
        raise click.BadParameter("the size must be at least 1 byte", ctx, param)
    return size


def paths_argument(func: F) -> F:
    """`PATHS…` (EVALWARD_PATHS): eval files or directories."""
    return click.argument("paths", nargs=-1, envvar="EVALWARD_PATHS", type=click.Path())(func)


def agent_option(*, required: bool) -> Callable[[F], F]:
    """`--agent TARGET` (EVALWARD_AGENT); `evalward ci` checks it itself, to name the Action input."""

    def decorate(func: F) -> F:
        return click.option(
            "--agent",
            "-a",
            envvar="EVALWARD_AGENT",
            required=required,
            metavar="TARGET",
            help="module:function | path/to/file.py:function | 'cmd:COMMAND ARGS' | http(s)://URL | openai:MODEL "
            "[env: EVALWARD_AGENT]",
        )(func)

    return decorate


def _existing_file(envvar: str, metavar: str, text: str, name: str, *flags: str) -> Callable[[Any], Any]:
    return click.option(
        *flags,
        name,
        envvar=envvar,
        type=click.Path(exists=True, dir_okay=False),
        metavar=metavar,
        help=f"{text} [env: {envvar}]",
    )


EVAL_OPTIONS: list[Callable[[Any], Any]] = [
    _existing_file(
        "EVALWARD_TEST_CONFIG",
        "FILE",
        "A test_config.json used for every eval file instead of the one beside it",
        "test_config",
        "--test-config",
    ),
    _existing_file(
        "EVALWARD_INITIAL_SESSION_FILE",
        "FILE",
        'ADK initial_session_file {"state": {...}, "app_name", "user_id"}: the state every case starts with '
        "unless it sets its own",
        "initial_session_file",
        "--initial-session-file",
    ),
    click.option(
        "--metric",
        "metrics",
        multiple=True,
        envvar="EVALWARD_METRICS",
        metavar="NAME[=THRESHOLD]",
        help="Add a metric (repeatable), or a user evaluator: module:function[=THRESHOLD] or NAME=module:function; "
        "with --metrics-mode replace, use only these [env: EVALWARD_METRICS]",
    ),
    click.option(
        "--evaluator-type",
        "custom_evaluator_types",
        multiple=True,
        envvar="EVALWARD_EVALUATOR_TYPES",
        metavar="MODULE:CLASS",
        help="Your evaluator class that pydantic-evals Dataset files name by class name (repeatable), as "
        "Dataset.from_file's custom_evaluator_types [env: EVALWARD_EVALUATOR_TYPES]",
    ),
    click.option(
        "--metrics-mode",
        type=click.Choice(["add", "replace"]),
        default="add",
        envvar="EVALWARD_METRICS_MODE",
        show_default=True,
        help="How --metric combines with each format's criteria [env: EVALWARD_METRICS_MODE]",
    ),
]

EXECUTION_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--repeat",
        "-k",
        type=click.IntRange(min=1),
        default=1,
        envvar="EVALWARD_REPEAT",
        show_default=True,
        help="Repetitions per case (ADK num_runs) [env: EVALWARD_REPEAT]",
    ),
    click.option(
        "--concurrency",
        "-j",
        type=click.IntRange(min=1),
        default=4,
        envvar="EVALWARD_CONCURRENCY",
        show_default=True,
        help="Cases running at once [env: EVALWARD_CONCURRENCY]",
    ),
    click.option(
        "--timeout",
        "timeout_s",
        type=click.FloatRange(min=0),
        default=120.0,
        envvar="EVALWARD_TIMEOUT",
        show_default=True,
        help="Seconds per turn before it counts as a timeout (0 = none) [env: EVALWARD_TIMEOUT]",
    ),
    click.option(
        "--rate-limit",
        envvar="EVALWARD_RATE_LIMIT",
        metavar="N/s",
        help="Maximum agent requests per second (or N/min) [env: EVALWARD_RATE_LIMIT]",
    ),
    click.option(
        "--retries",
        type=click.IntRange(min=0),
        default=2,
        envvar="EVALWARD_RETRIES",
        show_default=True,
        help="Retries of a turn the agent marks retryable (of a model step, for openai: agents) [env: EVALWARD_RETRIES]",
    ),
    click.option(
        "--shard",
        envvar="EVALWARD_SHARD",
        metavar="I/N",
        help="Run only shard I of N (a stable split by case id) [env: EVALWARD_SHARD]",
    ),
    click.option(
        "--case",
        "cases",
        multiple=True,
        envvar="EVALWARD_CASE",
        metavar="PATTERN",
        help="Run only cases whose id matches this glob, e.g. 'refund_*' (repeatable; or FILE:ID1,ID2 as a path) "
        "[env: EVALWARD_CASE]",
    ),
    click.option(
        "--sample",
        type=click.IntRange(min=1),
        envvar="EVALWARD_SAMPLE",
        metavar="N",
        help="Run a fixed sample of N cases, the same every time (seeded by case ids) [env: EVALWARD_SAMPLE]",
    ),
    click.option(
        "--pass-rule",
        type=click.Choice(["per-run", "mean-over-runs"]),
        default="per-run",
        envvar="EVALWARD_PASS_RULE",
        show_default=True,
        help="per-run: every repetition must pass (adk eval); mean-over-runs: the mean over repetitions "
        "must meet each threshold (ADK AgentEvaluator) [env: EVALWARD_PASS_RULE]",
    ),
    click.option(
        "--agent-processes",
        type=click.IntRange(min=1),
        default=1,
        envvar="EVALWARD_AGENT_PROCESSES",
        show_default=True,
        help="Processes to start for a cmd: agent [env: EVALWARD_AGENT_PROCESSES]",
    ),
]

JUDGE_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--judge-model",
        envvar="EVALWARD_JUDGE_MODEL",
        metavar="MODEL",
        help="Judge model for judged criteria that name none (e.g. gpt-4o-mini) [env: EVALWARD_JUDGE_MODEL]",
    ),
    click.option(
        "--judge-base-url",
        envvar="EVALWARD_JUDGE_BASE_URL",
        metavar="URL",
        help="OpenAI-compatible endpoint of the judge (default: $OPENAI_BASE_URL) [env: EVALWARD_JUDGE_BASE_URL]",
    ),
    click.option(
        "--judge-api-key-env",
        envvar="EVALWARD_JUDGE_API_KEY_ENV",
        default="OPENAI_API_KEY",
        show_default=True,
        metavar="VAR",
        help="Name of the variable holding the judge's API key (the key itself is never an option) "
        "[env: EVALWARD_JUDGE_API_KEY_ENV]",
    ),
    click.option(
        "--judge-concurrency",
        type=click.IntRange(min=1),
        default=4,
        envvar="EVALWARD_JUDGE_CONCURRENCY",
        show_default=True,
        help="Judge requests in flight at once [env: EVALWARD_JUDGE_CONCURRENCY]",
    ),
    _existing_file(
        "EVALWARD_JUDGE_PRICES",
        "FILE",
        'Price table JSON {"MODEL": {"input_per_million": USD, "output_per_million": USD}}',
        "judge_prices",
        "--judge-prices",
    ),
    click.option(
        "--no-judge-cache",
        is_flag=True,
        envvar="EVALWARD_NO_JUDGE_CACHE",
        help="Ask the judge again instead of reusing cached verdicts [env: EVALWARD_NO_JUDGE_CACHE]",
    ),
]

USER_SIMULATION_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--user-model",
        envvar="EVALWARD_USER_MODEL",
        metavar="MODEL",
        help="Model playing the user of conversation_scenario cases (default: the test_config's "
        "user_simulator_config.model; none: those cases error) [env: EVALWARD_USER_MODEL]",
    ),
    click.option(
        "--user-base-url",
        envvar="EVALWARD_USER_BASE_URL",
        metavar="URL",
        help="OpenAI-compatible endpoint of the user model (default: the judge's) [env: EVALWARD_USER_BASE_URL]",
    ),
    click.option(
        "--user-max-turns",
        type=click.IntRange(min=-1),
        envvar="EVALWARD_USER_MAX_TURNS",
        metavar="N",
        help="User messages per simulated conversation, the starting prompt included; -1 = no limit "
        "(default: the test_config's max_allowed_invocations, else 20) [env: EVALWARD_USER_MAX_TURNS]",
    ),
]

STEP_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--step",
        is_flag=True,
        envvar="EVALWARD_STEP",
        help="Single-step evaluation: score the agent's expected outputs (e.g. route) exactly and print a "
        "confusion table [env: EVALWARD_STEP]",
    ),
    click.option(
        "--stepwise/--no-stepwise",
        default=None,
        envvar="EVALWARD_STEPWISE",
        help="Teacher-forced step-by-step scores for every case / never (default: for turns with "
        "reference_messages) [env: EVALWARD_STEPWISE]",
    ),
]

OPENAI_AGENT_OPTIONS: list[Callable[[Any], Any]] = [
    _existing_file(
        "EVALWARD_SYSTEM_PROMPT", "FILE", "System prompt of an openai:MODEL agent", "system_prompt", "--system-prompt"
    ),
    _existing_file(
        "EVALWARD_TOOLS",
        "FILE",
        "Tools (name, description, JSON Schema parameters, mocked results) of an openai:MODEL agent",
        "tools_file",
        "--tools",
    ),
    click.option(
        "--max-steps",
        type=click.IntRange(min=1),
        default=10,
        envvar="EVALWARD_MAX_STEPS",
        show_default=True,
        help="Model steps per turn of an openai:MODEL agent [env: EVALWARD_MAX_STEPS]",
    ),
]


def run_value_options(*, agent_required: bool) -> Callable[[F], F]:
    """PATHS, --agent and every option of `RunValues`: what runs and how it is scored."""

    def decorate(func: F) -> F:
        return _apply(
            func,
            [
                paths_argument,
                agent_option(required=agent_required),
                *EVAL_OPTIONS,
                *EXECUTION_OPTIONS,
                *JUDGE_OPTIONS,
                *USER_SIMULATION_OPTIONS,
                *STEP_OPTIONS,
                *OPENAI_AGENT_OPTIONS,
            ],
        )

    return decorate


def report_file_options(func: F) -> F:
    """--json, --junit and --markdown: the report files."""
    return _apply(
        func,
        [
            click.option(
                "--json",
                "json_path",
                envvar="EVALWARD_JSON",
                type=click.Path(dir_okay=False),
                help="Write the run as JSON [env: EVALWARD_JSON]",
            ),
            click.option(
                "--junit",
                "junit_path",
                envvar="EVALWARD_JUNIT",
                type=click.Path(dir_okay=False),
                help="Write JUnit XML [env: EVALWARD_JUNIT]",
            ),
            click.option(
                "--markdown",
                "markdown_path",
                envvar="EVALWARD_MARKDOWN",
                type=click.Path(dir_okay=False),
                help="Write the markdown report (the PR comment body) [env: EVALWARD_MARKDOWN]",
            ),
        ],
    )


def run_id_option(func: F) -> F:
    """--run-id (EVALWARD_RUN_ID)."""
    return click.option(
        "--run-id", envvar="EVALWARD_RUN_ID", help="Id for the new run (default: time + random) [env: EVALWARD_RUN_ID]"
    )(func)


def group_id_option(func: F) -> F:
    """--group-id (EVALWARD_GROUP_ID)."""
    return click.option(
        "--group-id",
        envvar="EVALWARD_GROUP_ID",
        help="Tag shards of one logical run for `evalward merge` [env: EVALWARD_GROUP_ID]",
    )(func)


def base_branch_option(func: F) -> F:
    """--base-branch (EVALWARD_BASE_BRANCH)."""
    return click.option(
        "--base-branch",
        envvar="EVALWARD_BASE_BRANCH",
        help="The branch pull requests merge into (default: from the event, else evalward.toml) "
        "[env: EVALWARD_BASE_BRANCH]",
    )(func)


BASELINE_RUN_MODES = ("missing", "always", "never")


def baseline_run_option(func: F) -> F:
    """--baseline-run (EVALWARD_BASELINE_RUN): when the gate runs the base side on demand."""
    return click.option(
        "--baseline-run",
        type=click.Choice(BASELINE_RUN_MODES),
        default="missing",
        show_default=True,
        envvar="EVALWARD_BASELINE_RUN",
        help="Run the base side on demand: missing = only for cases the stored baseline lacks, always, never "
        "[env: EVALWARD_BASELINE_RUN]",
    )(func)
