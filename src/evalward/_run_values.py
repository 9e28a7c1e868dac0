"""The values of `evalward run`'s options that shape a run, and the one way they become `_pipeline.RunOptions`.

`evalward run`, `evalward ci` (and so the GitHub Action's inputs) and `evalward.testing.evaluate` all take
these values — the CLI through the option bundles of `evalward._cli.click_options`, whose Python names are the
field names here, the pytest API as keyword arguments — and all build their `RunOptions` with
`run_options_from`. A new run option is added once, here and in `_cli/click_options.py`, and reaches all three.

Options that say where results go or how the run is recorded (`--json`, `--db`, `--resume`, `--repo`, …)
are not run values: each command handles them itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalward.errors import UsageError
from evalward.model import MetricSpec, RunContext

if TYPE_CHECKING:
    from evalward._pipeline import RunOptions

PassRuleName = Literal["per-run", "mean-over-runs"]
_PASS_RULES: dict[str, PassRuleName] = {
    "per-run": "per-run",
    "per_run": "per-run",
    "mean-over-runs": "mean-over-runs",
    "mean_over_runs": "mean-over-runs",
}


class RunValues(BaseModel):
    """Every `evalward run` option that decides what runs and how it is scored, by its Python name.

    Defaults are the CLI's. Bad values raise `UsageError` (exit 2) naming the option (`from_values`)."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    paths: tuple[str, ...] = Field(default=(), description="Eval files or directories (`PATHS`).")
    agent: str | None = Field(default=None, description="The agent target (`--agent`).")
    test_config: str | None = Field(default=None, description="A test_config.json for every eval file.")
    metrics: tuple[str | MetricSpec, ...] = Field(
        default=(),
        description="Extra metrics (`--metric NAME[=THRESHOLD]` or `module:function[=THRESHOLD]`, several per value "
        "separated by spaces).",
    )
    metrics_mode: Literal["add", "replace"] = "add"
    custom_evaluator_types: tuple[str, ...] = Field(
        default=(),
        description="`pkg.module:Class` paths of your evaluator classes that pydantic-evals Dataset files name "
        "(`--evaluator-type`, the `custom_evaluator_types` setting).",
    )
    repeat: int = Field(default=1, ge=1, description="Repetitions per case (`--repeat`).")
    concurrency: int = Field(default=4, ge=1, description="Cases running at once.")
    timeout_s: float | None = Field(default=120.0, ge=0, description="Seconds per turn; 0 or None: no limit.")
    rate_limit: str | None = Field(default=None, description="Agent requests per second: `N`, `N/s` or `N/min`.")
    retries: int = Field(
        default=2, ge=0, description="Retries of a turn the agent marks retryable (of a model step, for `openai:`)."
    )
    shard: str | None = Field(default=None, description="`I/N`: run only shard I of N.")
    cases: tuple[str, ...] = Field(
        default=(), description="Run only cases whose id matches one of these glob patterns (`--case`)."
    )
    sample: int | None = Field(default=None, ge=1, description="Run a fixed, seeded sample of N cases (`--sample`).")
    initial_session_file: str | None = Field(
        default=None,
        description="ADK `initial_session_file`: a session whose state every case starts with unless it sets its own.",
    )
    pass_rule: PassRuleName = "per-run"
    agent_processes: int = Field(default=1, ge=1, description="Processes for a `cmd:` agent.")
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str = Field(
        default="OPENAI_API_KEY", min_length=1, description="Name of the variable holding the judge's API key."
    )
    judge_concurrency: int = Field(default=4, ge=1)
    judge_prices: str | None = Field(default=None, description="Price table JSON file of the judge models.")
    no_judge_cache: bool = False
    user_model: str | None = Field(default=None, description="Model playing the user of scenario cases.")
    user_base_url: str | None = Field(default=None, description="Endpoint of the user model (default: the judge's).")
    user_max_turns: int | None = Field(
        default=None, ge=-1, description="User messages per simulated conversation; -1 = no limit."
    )
    step: bool = Field(default=False, description="Single-step evaluation of expected outputs.")
    stepwise: bool | None = Field(default=None, description="Teacher-forced scores: True every case, False never.")
    system_prompt: str | None = Field(default=None, description="System prompt file of an `openai:` agent.")
    tools_file: str | None = Field(default=None, description="Tools file of an `openai:` agent (`--tools`).")
    max_steps: int = Field(default=10, ge=1, description="Model steps per turn of an `openai:` agent.")

    @field_validator("pass_rule", mode="before")
    @classmethod
    def _pass_rule_spelling(cls, value: Any) -> Any:
        return _PASS_RULES.get(value, value) if isinstance(value, str) else value

    @field_validator("paths", "metrics", "cases", mode="before")
    @classmethod
    def _sequence(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str | MetricSpec):
            return (value,)
        return tuple(value)

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
    special = {
        "paths": "PATHS",
        "timeout_s": "--timeout",
        "tools_file": "--tools",
        "metrics": "--metric",
        "cases": "--case",
    }
    return special.get(field_name, "--" + field_name.replace("_", "-"))


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
    from evalward._pipeline import RunOptions, parse_metric_option, split_metric_options
    from evalward.judging.judge_config import JudgeConfig, load_prices

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
