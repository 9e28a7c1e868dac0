"""One definition per option: every option of the families reaches every entry point it should, and the
generated files (both action.yml files, the composite step, the docs table) are what the families generate.

An option is a field of a family (`evalward._options.families`, `evalward._ci.ci_values`); `evalward run`'s
options that are no Action input say why in their `Option.no_input`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import click
import pytest
import yaml
from click.testing import CliRunner
from pydantic import Field

from evalward._ci import ACTION_INPUTS
from evalward._ci.action_files import generated, main, stale_files
from evalward._ci.ci_values import CiValues
from evalward._ci.inputs import ACTION_FAMILIES, action_inputs, apply_action_inputs
from evalward._cli.ci_cmd import ci_command
from evalward._cli.click_options import options_from
from evalward._cli.run_cmd import run_command
from evalward._options.families import LocalRunValues, RecordingValues
from evalward._options.option import Option, command_line, option_fields
from evalward._options.run_values import RunValues
from evalward.config import load_config
from evalward.errors import EvalFileError, UsageError
from evalward.testing import evaluate

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "evalward"


def options_of(command: click.Command) -> dict[str, click.Parameter]:
    """`--long-flag` (or PATHS) → the parameter."""
    found: dict[str, click.Parameter] = {}
    for param in command.params:
        if isinstance(param, click.Argument):
            found[param.name.upper() if param.name else "?"] = param
            continue
        longs = [o for o in param.opts if o.startswith("--")]
        found[longs[0]] = param
    return found


def envvar(param: click.Parameter) -> str:
    assert isinstance(param.envvar, str), f"{param.name} has no EVALWARD_* variable"
    return param.envvar


def unset_as_none(value: Any) -> Any:
    """click ≥ 8.3 reports "no default" as its own sentinel; older versions as None."""
    return None if type(value).__name__ == "Sentinel" else value


def action(path: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))
    return data


def test_every_run_option_reaches_ci_and_both_action_files() -> None:
    run_options = options_of(run_command)
    ci_options = options_of(ci_command)
    ci_by_env = {envvar(p): flag for flag, p in ci_options.items() if p.envvar}
    input_by_env = {variable: name for name, variable in ACTION_INPUTS.items()}
    docker_inputs = set(action("action.yml")["inputs"])
    composite_inputs = set(action("run/action.yml")["inputs"])
    missing: list[str] = []
    no_input = {item.option.flag: item.option.no_input for item in option_fields(LocalRunValues, RecordingValues)}
    for flag, param in run_options.items():
        if no_input.get(flag) and flag not in ci_options:
            continue  # an `evalward run` option a CI job does not need (its `no_input` says why)
        variable = envvar(param)
        if variable not in ci_by_env:
            missing.append(f"{flag} ({variable}): no evalward ci option reads it")
            continue
        if no_input.get(flag):
            assert variable not in input_by_env, f"{flag} has an input after all: drop its no_input"
            continue
        name = input_by_env.get(variable)
        if name is None:
            missing.append(f"{flag} ({variable}): no action input maps onto it")
        elif name not in docker_inputs or name not in composite_inputs:
            missing.append(f"{flag}: input `{name}` is not declared in action.yml and run/action.yml")
    assert not missing, "\n".join(missing)


def test_every_ci_option_is_an_input_unless_listed() -> None:
    input_by_env = {variable: name for name, variable in ACTION_INPUTS.items()}
    reasons = {item.option.flag: item.option.no_input for item in option_fields(*ACTION_FAMILIES)}
    unmapped = [
        flag
        for flag, param in options_of(ci_command).items()
        if param.envvar and envvar(param) not in input_by_env and not reasons.get(flag)
    ]
    assert unmapped == []


def test_every_option_without_an_input_says_why() -> None:
    families = (*ACTION_FAMILIES, LocalRunValues)
    silent = [item.name for item in option_fields(*families) if item.input_name is None and not item.option.no_input]
    assert silent == []


def test_the_inputs_are_the_mapped_ones_and_identical_in_both_action_files() -> None:
    docker, composite = action("action.yml"), action("run/action.yml")
    assert set(docker["inputs"]) == set(ACTION_INPUTS) | {"github-token"}
    assert composite["inputs"] == docker["inputs"], "run/action.yml must declare exactly action.yml's inputs"
    assert set(composite["outputs"]) == set(docker["outputs"])
    for name, spec in composite["outputs"].items():
        assert spec["value"] == f"${{{{ steps.evalward.outputs.{name} }}}}"
        assert spec["description"] == docker["outputs"][name]["description"]


def test_the_composite_step_passes_every_input_without_a_shell() -> None:
    steps = action("run/action.yml")["runs"]["steps"]
    [step] = [s for s in steps if s.get("id") == "evalward"]
    # No sh in between: Debian's sh drops variables whose names contain dashes (INPUT_EVAL-PATHS).
    assert step["shell"] == "python {0}"
    assert step["env"] == {
        "INPUT_" + name.replace(" ", "_").upper(): f"${{{{ inputs.{name} }}}}"
        for name in action("action.yml")["inputs"]
    }
    assert 'main(["ci"])' in step["run"]


def test_the_run_values_are_exactly_the_shared_option_bundle() -> None:
    shared = {p.name for p in run_command.params} & {p.name for p in ci_command.params}
    assert set(RunValues.model_fields) <= shared
    # Defaults agree: the CLI's are RunValues'.
    context = click.Context(run_command)
    run_defaults = {
        p.name: unset_as_none(p.get_default(context)) for p in run_command.params if isinstance(p, click.Option)
    }
    assert RunValues.model_fields["paths"].default == ()  # the PATHS argument: nothing given
    for name, field in RunValues.model_fields.items():
        if name == "paths":
            continue
        default, expected = run_defaults[name], field.default
        assert default == expected or (default in (None, ()) and expected == ()), name


def test_the_pytest_api_takes_every_run_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run value not among evaluate()'s own ADK-style arguments is a keyword argument of its own name."""
    from evalward.testing._evaluate import _OWN_ARGUMENTS

    prices = tmp_path / "prices.json"
    prices.write_text('{"judge-model": {"input_per_million": 1, "output_per_million": 2}}')
    session = tmp_path / "session.json"
    session.write_text('{"state": {"tz": "UTC"}}')
    given: dict[str, Any] = {
        "agent_processes": 2,
        "rate_limit": "100/s",
        "retries": 0,
        "shard": "1/1",
        "judge_model": "judge-model",
        "judge_base_url": "http://127.0.0.1:9/v1",
        "judge_api_key_env": "JUDGE_KEY",
        "judge_concurrency": 2,
        "judge_prices": str(prices),
        "no_judge_cache": True,
        "user_model": "user-model",
        "user_base_url": "http://127.0.0.1:9/v2",
        "user_max_turns": 7,
        "step": False,
        "stepwise": False,
        "system_prompt": "prompt.md",
        "tools_file": "tools.json",
        "max_steps": 3,
        "cases": ("a*",),
        "sample": 1,
        "initial_session_file": str(session),
        "custom_evaluator_types": ("evals.checks:MyEvaluator",),
    }
    assert set(given) == set(RunValues.model_fields) - _OWN_ARGUMENTS, "a run value is missing from this test"
    evals = tmp_path / "cases.eval.json"
    evals.write_text(
        '{"evalward": 1, "eval_set_id": "s", "cases": [{"id": "a", "query": "hi", "expect": {"response": "hi"}}]}'
    )
    seen: list[Any] = []

    def agent(request: Any) -> str:
        return "hi"

    import evalward.testing._evaluate as api

    original = api.run_options_from

    def spy(values: RunValues, **kwargs: Any) -> Any:
        options = original(values, **kwargs)
        seen.append(options)
        return options

    monkeypatch.setattr(api, "run_options_from", spy)
    run = evaluate(agent, str(evals), num_runs=1, raise_on_failure=False, **given)
    assert run.status == "complete"
    [options] = seen
    assert (options.agent_processes, options.rate_limit_per_s, options.max_retries, options.shard) == (
        2,
        100.0,
        0,
        (1, 1),
    )
    assert (options.user_model, options.user_base_url, options.user_max_turns) == (
        "user-model",
        "http://127.0.0.1:9/v2",
        7,
    )
    assert (options.case_patterns, options.sample, options.initial_session_file) == (["a*"], 1, str(session))
    assert options.custom_evaluator_types == ["evals.checks:MyEvaluator"]
    assert run.case_selection == "--case 'a*' --sample 1 (1 of 1 cases)"
    assert options.judge is not None
    assert (options.judge.model, options.judge.base_url, options.judge.api_key_env) == (
        "judge-model",
        "http://127.0.0.1:9/v1",
        "JUDGE_KEY",
    )
    assert (options.judge.concurrency, options.judge.cache, list(options.judge.prices)) == (2, False, ["judge-model"])
    assert (options.step, options.stepwise) == (False, "off")
    assert options.agent_options == {
        "system_prompt": "prompt.md",
        "tools": "tools.json",
        "max_steps": 3,
        "max_retries": options.max_retries,
    }


def test_the_pytest_api_names_unknown_options() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) judge_modle; run options: .*judge_model"):
        evaluate(lambda request: "hi", "missing.json", judge_modle="x")


def test_baseline_run_is_one_option_of_ci_and_gate_carried_to_ci_options() -> None:
    from evalward._ci import CiOptions
    from evalward._cli.gate_cmd import gate_command

    for command in (ci_command, gate_command):
        param = options_of(command)["--baseline-run"]
        assert isinstance(param.type, click.Choice)
        assert (param.envvar, list(param.type.choices), param.default) == (
            "EVALWARD_BASELINE_RUN",
            ["missing", "always", "never"],
            "missing",
        )
    assert ACTION_INPUTS["baseline-run"] == "EVALWARD_BASELINE_RUN"
    assert CiOptions.from_values({"baseline_run": "always"}).baseline_run == "always"
    assert CiOptions().baseline_run == "missing"


# ------------------------------------------------------------------------------------------ one definition


class WithThrowaway(RunValues):
    """`RunValues` with one more option, defined as every option is: a field and its `Option`."""

    throwaway_knob: Annotated[
        int,
        Field(ge=2),
        Option(flag="--throwaway-knob", env="EVALWARD_THROWAWAY_KNOB", help="A knob no release has"),
    ] = 3


FAMILIES_WITH_THROWAWAY = tuple(WithThrowaway if family is RunValues else family for family in ACTION_FAMILIES)


def test_a_new_field_is_a_flag_a_variable_a_settings_key_and_an_input_of_both_actions(tmp_path: Path) -> None:
    seen: list[Any] = []

    @click.command()
    @options_from(WithThrowaway, only=("throwaway_knob",))
    def command(**kwargs: Any) -> None:
        seen.append(WithThrowaway.from_values(kwargs).throwaway_knob)

    runner = CliRunner()
    assert runner.invoke(command, ["--throwaway-knob", "5"]).exit_code == 0
    assert runner.invoke(command, [], env={"EVALWARD_THROWAWAY_KNOB": "7"}).exit_code == 0
    assert runner.invoke(command, []).exit_code == 0
    assert seen == [5, 7, 3]
    refused = runner.invoke(command, ["--throwaway-knob", "1"])
    assert refused.exit_code == 2 and "1 is not in the range x>=2" in refused.output
    assert "EVALWARD_THROWAWAY_KNOB" in runner.invoke(command, ["--help"]).output

    # the settings file: a key of its own, validated with its line and key path
    settings = tmp_path / "evalward.toml"
    settings.write_text('agent = "a:b"\nthrowaway_knob = 9\n', encoding="utf-8")
    loaded = load_config(settings, families=(WithThrowaway, RecordingValues))
    assert loaded.settings.given == {"agent": "a:b", "throwaway_knob": 9}
    settings.write_text("throwaway_knob = 1\n", encoding="utf-8")
    with pytest.raises(EvalFileError) as bad:
        load_config(settings, families=(WithThrowaway, RecordingValues))
    assert f"{settings}:1" in str(bad.value) and "throwaway_knob" in str(bad.value)
    with pytest.raises(EvalFileError, match="unknown key"):
        load_config(settings)  # without the field, the key is unknown

    # the Action: an input mapped onto the variable, checked like every input, in both generated action files
    assert action_inputs(FAMILIES_WITH_THROWAWAY)["throwaway-knob"] == "EVALWARD_THROWAWAY_KNOB"
    assert "throwaway-knob" not in ACTION_INPUTS
    env = {"INPUT_THROWAWAY-KNOB": "4"}
    apply_action_inputs(env, FAMILIES_WITH_THROWAWAY)
    assert env["EVALWARD_THROWAWAY_KNOB"] == "4"
    with pytest.raises(
        UsageError, match=r"input `throwaway-knob` \(INPUT_THROWAWAY-KNOB\): expected a whole number of at least 2"
    ):
        apply_action_inputs({"INPUT_THROWAWAY-KNOB": "1"}, FAMILIES_WITH_THROWAWAY)
    for path in ("action.yml", "run/action.yml"):
        text = generated(path, (ROOT / path).read_text(encoding="utf-8"), FAMILIES_WITH_THROWAWAY)
        declared = yaml.safe_load(text)["inputs"]
        assert declared["throwaway-knob"] == {"description": "A knob no release has (default 3).", "required": False}
    composite = yaml.safe_load(
        generated("run/action.yml", (ROOT / "run/action.yml").read_text(), FAMILIES_WITH_THROWAWAY)
    )
    [step] = [s for s in composite["runs"]["steps"] if s.get("id") == "evalward"]
    assert step["env"]["INPUT_THROWAWAY-KNOB"] == "${{ inputs.throwaway-knob }}"
    page = generated("docs/action.md", (ROOT / "docs/action.md").read_text(), FAMILIES_WITH_THROWAWAY)
    assert "| `throwaway-knob` | `EVALWARD_THROWAWAY_KNOB` | `throwaway_knob` | `3` | A knob no release has |" in page


def test_the_checked_in_action_files_and_docs_table_are_generated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stale_files(ROOT) == [], "run: python -m evalward._ci.action_files --write"
    # the check fails on a hand edit, naming the file
    for path in ("action.yml", "run/action.yml", "docs/action.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
    edited = (tmp_path / "run/action.yml").read_text().replace("Cases running at once", "Cases at once")
    (tmp_path / "run/action.yml").write_text(edited)
    assert main(["--check"], root=tmp_path) == 1
    assert "run/action.yml: its inputs differ" in capsys.readouterr().out
    assert main(["--write"], root=tmp_path) == 0 and main(["--check"], root=tmp_path) == 0


OTHER_MEANINGS: dict[tuple[str, str], str] = {
    ("runs", "--repo"): "a filter of the listed runs, not the repository a run records",
    ("runs", "--branch"): "a filter of the listed runs",
    ("runs", "--commit"): "a filter of the listed runs",
    ("history", "--case"): "one case's history, not a selection of cases to run",
    ("history", "--metric"): "one metric's history, not a metric to add",
    ("history", "--branch"): "a filter of the runs shown",
    ("merge", "--run-id"): "the id of the merged run, never taken from EVALWARD_RUN_ID (it would collide)",
    ("merge", "--json"): "the merged run's JSON, written by merge itself",
    ("gate", "--json"): "the verdict's JSON, not the run's",
    ("gate", "--markdown"): "the comparison's markdown",
    ("compare", "--json"): "the comparison's JSON",
    ("compare", "--markdown"): "the comparison's markdown",
    ("serve", "--db"): "the daemon's database and job queue, from the daemon's own settings",
}
"""Flags of other commands that share an option's spelling with another meaning, and why."""


def test_every_command_takes_a_shared_flag_from_its_one_definition() -> None:
    """A flag that names an option of a family is made from that option wherever a command takes it: `grep`
    finds the flag in one definition, not in commands declaring it again."""
    from evalward._cli.main import COMMANDS, cli

    families = (*ACTION_FAMILIES, LocalRunValues)
    defined = {item.option.flag: item for item in option_fields(*families) if item.option.flag}
    context = click.Context(cli)
    redeclared = []
    seen_other_meanings = set()
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert command is not None
        subcommands = command.commands.values() if isinstance(command, click.Group) else [command]
        for sub in subcommands:
            for param in sub.params:
                for flag in param.opts:
                    item = defined.get(flag)
                    if (name, flag) in OTHER_MEANINGS:
                        seen_other_meanings.add((name, flag))
                    if item is None or (name, flag) in OTHER_MEANINGS:
                        continue
                    help_text = getattr(param, "help", "") or ""
                    if param.envvar != item.option.env or not help_text.startswith(item.option.help):
                        redeclared.append(f"evalward {name} {flag}")
    assert redeclared == []
    assert set(OTHER_MEANINGS) - seen_other_meanings == set(), "OTHER_MEANINGS names flags no command has"


def test_each_flag_is_declared_once_in_the_source() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in SOURCE.rglob("*.py"))
    declared = {
        flag: len(re.findall(rf"(?:flag|off_flag)=[\"']{re.escape(flag)}[\"']", text))
        for item in option_fields(*ACTION_FAMILIES, LocalRunValues)
        for flag in filter(None, (item.option.flag, item.option.off_flag))
    }
    assert {flag: n for flag, n in declared.items() if n != 1} == {}
    assert CiValues.model_fields["fail_on"].default == {"regression", "threshold"}


def test_command_line_gives_run_the_values_it_was_made_from(tmp_path: Path) -> None:
    """The daemon hands a repository's settings to the base side as flags (`command_line`): `evalward run`
    parses them back to the same values, lists, booleans and flag pairs included."""
    config = tmp_path / "cfg.json"
    config.write_text("{}")
    values: dict[str, Any] = {
        "test_config": str(config),
        "metrics": ("response_match_score=0.5", "tool_trajectory_avg_score"),
        "metrics_mode": "replace",
        "repeat": 5,
        "timeout_s": 30.0,
        "no_judge_cache": True,
        "step": False,
        "stepwise": False,
        "judge_model": "judge",
    }
    arguments = command_line(values, RunValues)
    assert arguments[:2] == ["--test-config", str(config)]
    assert "--no-stepwise" in arguments and "--step" not in arguments
    context = run_command.make_context("run", [*arguments, "--agent", "a:b"])
    parsed = RunValues.from_values(context.params)
    for name, value in values.items():
        assert getattr(parsed, name) == value, name
