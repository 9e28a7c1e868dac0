"""`RunValues`: every option that decides what runs and how it is scored, each defined once (`_options.option`).

`evalward run`, `evalward ci` (and so the Action), the pytest API (`evalward.testing.evaluate`, by field name),
`evalward validate` (PATHS, `--test-config`) and `evalward record` take them; `_options.run_options` makes them
into a run. Bad values raise `UsageError` (exit 2) naming the option (`RunValues.from_values`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalward._options.option import Option, option_fields
from evalward.errors import UsageError
from evalward.model import MetricSpec

_CLASS_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*|\.[A-Za-z_]\w*)")
PassRuleName = Literal["per-run", "mean-over-runs"]
_PASS_RULES: dict[str, PassRuleName] = {
    "per-run": "per-run",
    "per_run": "per-run",
    "mean-over-runs": "mean-over-runs",
    "mean_over_runs": "mean-over-runs",
}


def _shard_problem(value: str) -> str | None:
    index, sep, count = value.partition("/")
    if sep and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return None
    return f"expected I/N with 1 <= I <= N (e.g. ${{{{ matrix.shard }}}}/4), found {value!r}"


def _rate_problem(value: str) -> str | None:
    try:
        parse_rate(value)
    except UsageError:
        return f"expected N/s or N/min with N > 0, found {value!r}"
    return None


class RunValues(BaseModel):
    """Every option that decides what runs and how it is scored, by its Python name (module docstring)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    paths: Annotated[
        tuple[str, ...],
        Option(
            flag="PATHS",
            env="EVALWARD_PATHS",
            input="eval-paths",
            path="any",
            help="Eval files or directories",
            input_help="Eval files or directories, separated by spaces or newlines.",
            default_text="`paths` in evalward.toml",
        ),
    ] = ()
    agent: Annotated[
        str | None,
        Option(
            flag="--agent",
            short="-a",
            env="EVALWARD_AGENT",
            metavar="TARGET",
            help="module:function | path/to/file.py:function | 'cmd:COMMAND ARGS' | http(s)://URL | openai:MODEL",
            input_help="Agent target: module:function, path/to/file.py:function, 'cmd:COMMAND ARGS', an http(s) URL "
            "or openai:MODEL.",
            default_text="`agent` in evalward.toml",
        ),
    ] = None
    test_config: Annotated[
        str | None,
        Option(
            flag="--test-config",
            env="EVALWARD_TEST_CONFIG",
            path="existing_file",
            metavar="FILE",
            help="A test_config.json used for every eval file instead of the one beside it",
        ),
    ] = None
    initial_session_file: Annotated[
        str | None,
        Option(
            flag="--initial-session-file",
            env="EVALWARD_INITIAL_SESSION_FILE",
            path="existing_file",
            metavar="FILE",
            help='ADK initial_session_file {"state": {...}, "app_name", "user_id"}: the state every case starts '
            "with unless it sets its own",
        ),
    ] = None
    metrics: Annotated[
        tuple[str | MetricSpec, ...],
        Option(
            flag="--metric",
            env="EVALWARD_METRICS",
            input="metrics",
            metavar="NAME[=THRESHOLD]",
            help="Add a metric (repeatable), or a user evaluator: module:function[=THRESHOLD] or "
            "NAME=module:function; with --metrics-mode replace, use only these",
            input_help="Extra metrics, NAME or NAME=THRESHOLD (your own evaluator: module:function[=THRESHOLD]), "
            "separated by spaces or newlines.",
        ),
    ] = ()
    custom_evaluator_types: Annotated[
        tuple[str, ...],
        Option(
            flag="--evaluator-type",
            env="EVALWARD_EVALUATOR_TYPES",
            input="evaluator-types",
            metavar="MODULE:CLASS",
            help="Your evaluator class that pydantic-evals Dataset files name by class name (repeatable), as "
            "Dataset.from_file's custom_evaluator_types",
            input_help="Your evaluator classes that pydantic-evals Dataset files name by class name, module:Class, "
            "separated by spaces or newlines.",
        ),
    ] = ()
    metrics_mode: Annotated[
        Literal["add", "replace"],
        Option(
            flag="--metrics-mode",
            env="EVALWARD_METRICS_MODE",
            help="How --metric combines with each format's criteria: add (they join them) or replace (only these)",
        ),
    ] = "add"
    repeat: Annotated[
        int,
        Field(ge=1),
        Option(
            flag="--repeat",
            short="-k",
            env="EVALWARD_REPEAT",
            help="Repetitions per case (ADK num_runs; 3 or more for a statistically sound gate)",
        ),
    ] = 1
    concurrency: Annotated[
        int,
        Field(ge=1),
        Option(flag="--concurrency", short="-j", env="EVALWARD_CONCURRENCY", help="Cases running at once"),
    ] = 4
    timeout_s: Annotated[
        float | None,
        Field(ge=0),
        Option(
            flag="--timeout",
            env="EVALWARD_TIMEOUT",
            toml="timeout",
            help="Seconds per turn before it counts as a timeout (0 = none)",
        ),
    ] = 120.0
    rate_limit: Annotated[
        str | None,
        Option(
            flag="--rate-limit",
            env="EVALWARD_RATE_LIMIT",
            metavar="N/s",
            help="Maximum agent requests per second: N, N/s or N/min",
            input_check=_rate_problem,
        ),
    ] = None
    retries: Annotated[
        int,
        Field(ge=0),
        Option(
            flag="--retries",
            env="EVALWARD_RETRIES",
            help="Retries of a turn the agent marks retryable (of a model step, for openai: agents)",
        ),
    ] = 2
    shard: Annotated[
        str | None,
        Option(
            flag="--shard",
            env="EVALWARD_SHARD",
            metavar="I/N",
            toml=None,
            help="Run only shard I of N (a stable split by case id; stored, not gated)",
            input_help="Run only shard I/N of the cases, e.g. ${{ matrix.shard }}/4 (stored, not gated).",
            input_check=_shard_problem,
        ),
    ] = None
    cases: Annotated[
        tuple[str, ...],
        Option(
            flag="--case",
            env="EVALWARD_CASE",
            metavar="PATTERN",
            help="Run only cases whose id matches this glob, e.g. 'refund_*' (repeatable; or FILE:ID1,ID2 as a path)",
            input_help="Run only cases whose id matches one of these globs (e.g. refund_*), separated by spaces or "
            "newlines.",
        ),
    ] = ()
    sample: Annotated[
        int | None,
        Field(ge=1),
        Option(
            flag="--sample",
            env="EVALWARD_SAMPLE",
            metavar="N",
            help="Run a fixed sample of N cases, the same every time and on the base side (seeded by case ids)",
        ),
    ] = None
    pass_rule: Annotated[
        PassRuleName,
        Option(
            flag="--pass-rule",
            env="EVALWARD_PASS_RULE",
            help="per-run: every repetition must pass (adk eval); mean-over-runs: the mean over repetitions must "
            "meet each threshold (ADK AgentEvaluator)",
        ),
    ] = "per-run"
    agent_processes: Annotated[
        int,
        Field(ge=1),
        Option(flag="--agent-processes", env="EVALWARD_AGENT_PROCESSES", help="Processes to start for a cmd: agent"),
    ] = 1
    judge_model: Annotated[
        str | None,
        Option(
            flag="--judge-model",
            env="EVALWARD_JUDGE_MODEL",
            metavar="MODEL",
            help="Judge model for judged criteria that name none (e.g. gpt-4o-mini)",
        ),
    ] = None
    judge_base_url: Annotated[
        str | None,
        Option(
            flag="--judge-base-url",
            env="EVALWARD_JUDGE_BASE_URL",
            metavar="URL",
            help="OpenAI-compatible endpoint of the judge (default: $OPENAI_BASE_URL, else api.openai.com)",
            default_text="`$OPENAI_BASE_URL`",
        ),
    ] = None
    judge_api_key_env: Annotated[
        str,
        Field(min_length=1),
        Option(
            flag="--judge-api-key-env",
            env="EVALWARD_JUDGE_API_KEY_ENV",
            metavar="VAR",
            help="Name of the variable holding the judge's API key (the key itself is never an option; set it "
            "from a secret)",
        ),
    ] = "OPENAI_API_KEY"
    judge_concurrency: Annotated[
        int,
        Field(ge=1),
        Option(flag="--judge-concurrency", env="EVALWARD_JUDGE_CONCURRENCY", help="Judge requests in flight at once"),
    ] = 4
    judge_prices: Annotated[
        str | None,
        Option(
            flag="--judge-prices",
            env="EVALWARD_JUDGE_PRICES",
            path="existing_file",
            metavar="FILE",
            help='Price table JSON of the judge models {"MODEL": {"input_per_million": USD, "output_per_million": '
            "USD}}, for cost accounting",
        ),
    ] = None
    no_judge_cache: Annotated[
        bool,
        Option(
            flag="--no-judge-cache",
            env="EVALWARD_NO_JUDGE_CACHE",
            help="Ask the judge again instead of reusing cached verdicts",
            input_help="true: ask the judge again instead of reusing cached verdicts.",
        ),
    ] = False
    user_model: Annotated[
        str | None,
        Option(
            flag="--user-model",
            env="EVALWARD_USER_MODEL",
            metavar="MODEL",
            help="Model playing the user of conversation_scenario cases (default: the test_config's "
            "user_simulator_config.model; without one those cases error)",
            default_text="the test_config's",
        ),
    ] = None
    user_base_url: Annotated[
        str | None,
        Option(
            flag="--user-base-url",
            env="EVALWARD_USER_BASE_URL",
            metavar="URL",
            help="OpenAI-compatible endpoint of the user model (default: the judge's)",
            default_text="the judge's",
        ),
    ] = None
    user_max_turns: Annotated[
        int | None,
        Field(ge=-1),
        Option(
            flag="--user-max-turns",
            env="EVALWARD_USER_MAX_TURNS",
            metavar="N",
            help="User messages per simulated conversation, the starting prompt included; -1 = no limit "
            "(default: the test_config's max_allowed_invocations, else 20)",
            default_text="the test_config's, else 20",
        ),
    ] = None
    step: Annotated[
        bool,
        Option(
            flag="--step",
            env="EVALWARD_STEP",
            help="Single-step evaluation: score the agent's expected outputs (e.g. route) exactly and print a "
            "confusion table",
            input_help="true: single-step evaluation of the agent's expected outputs (e.g. a router), with a "
            "confusion table.",
        ),
    ] = False
    stepwise: Annotated[
        bool | None,
        Option(
            flag="--stepwise",
            off_flag="--no-stepwise",
            env="EVALWARD_STEPWISE",
            help="Teacher-forced step-by-step scores for every case / never (default: for turns with "
            "reference_messages)",
            input_help="true: teacher-forced step-by-step scores for every case; false: never (default: where "
            "cases carry reference_messages).",
            default_text="auto",
        ),
    ] = None
    system_prompt: Annotated[
        str | None,
        Option(
            flag="--system-prompt",
            env="EVALWARD_SYSTEM_PROMPT",
            path="existing_file",
            metavar="FILE",
            help="System prompt file of an openai:MODEL agent",
        ),
    ] = None
    tools_file: Annotated[
        str | None,
        Option(
            flag="--tools",
            env="EVALWARD_TOOLS",
            toml="tools",
            path="existing_file",
            metavar="FILE",
            help="Tools file (name, description, JSON Schema parameters, mocked results) of an openai:MODEL agent",
        ),
    ] = None
    max_steps: Annotated[
        int,
        Field(ge=1),
        Option(flag="--max-steps", env="EVALWARD_MAX_STEPS", help="Model steps per turn of an openai:MODEL agent"),
    ] = 10

    @field_validator("pass_rule", mode="before")
    @classmethod
    def _pass_rule_spelling(cls, value: Any) -> Any:
        return _PASS_RULES.get(value, value) if isinstance(value, str) else value

    @field_validator("paths", "metrics", "cases", "custom_evaluator_types", mode="before")
    @classmethod
    def _sequence(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str | MetricSpec):
            return (value,)
        return tuple(value)

    @field_validator("custom_evaluator_types")
    @classmethod
    def _class_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        wrong = [path for path in paths if not _CLASS_PATH.fullmatch(path)]
        if wrong:
            raise ValueError(f"expected class paths 'package.module:Class', found {', '.join(map(repr, wrong))}")
        return paths

    def openai_agent_options(self) -> dict[str, Any]:
        """Runner settings of an `openai:MODEL` target (paths relative to the agent's working directory)."""
        return {
            "system_prompt": self.system_prompt,
            "tools": self.tools_file,
            "max_steps": self.max_steps,
            # The client retries a rate-limited model step itself; the turn is not re-run (openai_agent).
            "max_retries": self.retries,
        }

    @classmethod
    def from_values(cls, values: dict[str, Any]) -> RunValues:
        """The run values among `values` (e.g. a click command's keyword arguments; other keys are ignored,
        None means "not given"), validated; UsageError lists every bad option at once."""
        given = {name: value for name, value in values.items() if name in cls.model_fields and value is not None}
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            problems = [
                f"  {option_label(str(error['loc'][0]) if error['loc'] else '?')}: {error['msg']}, "
                f"found {error.get('input')!r}"
                for error in exc.errors()
            ]
            raise UsageError("invalid run options:\n" + "\n".join(problems)) from None


def option_label(field_name: str) -> str:
    """The command-line flag of a run value (`judge_model` → `--judge-model`; `paths` → `PATHS`)."""
    for found in option_fields(RunValues):
        if found.name == field_name and found.option.flag is not None:
            return found.option.flag
    return "--" + field_name.replace("_", "-")


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
